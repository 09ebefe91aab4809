#!/usr/bin/env python3
"""Live timing against ``nvtxsim report`` for the same run (issue 16): per phase, CPU and GPU time.

Why: live timing is only useful if it agrees with the profiler. Run the program under nsys with
``NVTXSIM_LIVE`` set (scripts/gpu/live_accuracy.sh), then::

    python scripts/live_vs_report.py live.jsonl run.sqlite.gz

Per phase: ranges counted by both; CPU mean per range (live ``perf_counter_ns`` vs the NVTX range
durations); GPU mean per range (live CUDA events, a span on the launching stream) vs the report's
projected GPU time (first op start to last op end, nsys's ``nvtx_gpu_proj``) and busy time. Targets:
CPU within 5 %; GPU within 10 % or 20 µs of the projected time. Exit code 0 when all phases meet
them, 1 otherwise, 2 when an input cannot be read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nvtxsim.analysis import live as live_log  # noqa: E402

CPU_TOL = 0.05
GPU_TOL, GPU_ABS_NS = 0.10, 20_000


def report_phases(export: str) -> dict[str, dict]:
    r = subprocess.run([sys.executable, "-m", "nvtxsim", "report", "--format", "json", "--domain", "all", export],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"live_vs_report: nvtxsim report failed ({r.returncode}): {r.stderr.strip()}")
    doc = json.loads(r.stdout)
    return {f"{p['domain']}:{p['name']}": p for p in doc.get("phases", [])}


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.1f}"


def _pct(a, b) -> str:
    return "-" if a is None or not b else f"{100 * (a - b) / b:+.1f}%"


def compare(live: dict[str, dict], rep: dict[str, dict]) -> tuple[list[list[str]], list[str]]:
    rows, failures = [], []
    for key in sorted(set(live) | set(rep), key=lambda k: -(rep.get(k, {}).get("cpu_total_ns") or 0)):
        lv, rp = live.get(key), rep.get(key)
        if lv is None or rp is None:
            rows.append([key, str(lv and lv["count"] or 0), str(rp and rp.get("instances") or 0)] + ["-"] * 9
                        + ["only in " + ("report" if lv is None else "live")])
            continue
        n_rep = rp.get("instances") or 0
        cpu_rep = rp["cpu_total_ns"] / n_rep if n_rep else None
        cpu_ok = cpu_rep is not None and abs(lv["cpu_mean_ns"] - cpu_rep) <= CPU_TOL * cpu_rep
        g_n = rp.get("gpu_instances") or 0
        proj = rp["gpu_proj_total_ns"] / g_n if g_n and rp.get("gpu_proj_total_ns") is not None else None
        busy = rp["gpu_busy_total_ns"] / g_n if g_n and rp.get("gpu_busy_total_ns") is not None else None
        gpu = lv.get("gpu_mean_ns")
        if proj is None:
            gpu_ok, gpu_verdict = True, "no GPU ops"
        elif gpu is None:
            gpu_ok, gpu_verdict = False, "no live GPU time"
        else:
            gpu_ok = abs(gpu - proj) <= max(GPU_TOL * proj, GPU_ABS_NS)
            gpu_verdict = "ok" if gpu_ok else "OFF"
        verdict = ("cpu ok" if cpu_ok else "CPU OFF") + ", gpu " + gpu_verdict
        if not (cpu_ok and gpu_ok) or lv["count"] != n_rep:
            failures.append(key)
        rows.append([key, str(lv["count"]), str(n_rep), _us(lv["cpu_mean_ns"]), _us(cpu_rep), _pct(lv["cpu_mean_ns"], cpu_rep),
                     _us(gpu), _us(proj), _pct(gpu, proj), f"{(gpu - proj) / 1e3:+,.1f}" if gpu is not None and proj is not None else "-",
                     _us(busy), "", verdict])
    return rows, failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("jsonl", help="the NVTXSIM_LIVE file")
    p.add_argument("export", help="the nsys SQLite export (.sqlite or .sqlite.gz) of the same run")
    args = p.parse_args(argv)
    try:
        log = live_log.load(args.jsonl)
    except Exception as exc:
        print(f"live_vs_report: {exc}", file=sys.stderr)
        return 2
    live = live_log.totals(log.windows)
    rows, failures = compare(live, report_phases(args.export))
    head = ["phase", "N live", "N report", "CPU live µs", "CPU report µs", "CPU diff", "GPU live µs", "GPU proj µs",
            "GPU diff", "GPU diff µs", "GPU busy µs", "", "verdict"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print(f"live {args.jsonl} ({len(log.windows)} windows) vs nvtxsim report {args.export}; means per range;"
          f" targets: CPU within {CPU_TOL:.0%}, GPU within {GPU_TOL:.0%} or {GPU_ABS_NS / 1e3:.0f} µs of projected")
    for r in [head] + rows:
        print("  ".join(c.ljust(w) if i in (0, 12) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    print(f"{len(rows) - len(failures)}/{len(rows)} phases meet the targets" + (f"; not: {', '.join(failures)}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
