#!/usr/bin/env python3
"""Live timing against ``nvtxsim report`` for the same run (issue 16): per phase, CPU and GPU time.

Why: live timing is only useful if it agrees with the profiler. Run the program under nsys with
``NVTXSIM_LIVE`` set (scripts/gpu/live_accuracy.sh), then::

    python scripts/live_vs_report.py live.jsonl run.sqlite.gz

Per phase: ranges counted by both; CPU mean per range (live ``perf_counter_ns`` vs the NVTX range
durations); GPU mean per range (live CUDA events, a span on the launching stream) vs the report's
projected GPU time (first op start to last op end, nsys's ``nvtx_gpu_proj``) and busy time, and vs the
span the two events should measure, rebuilt from the export (``event span``: where the GPU waits for
the CPU's launches, the span is longer than the projection). Targets: CPU within 5 %; GPU within 10 %
or 20 µs of the projected time. Exit code 0 when all phases meet
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


def event_spans(export: str) -> dict[str, float]:
    """Per phase, the mean stream span that live timing's two CUDA events should measure, rebuilt from the export.

    An event completes when the stream reaches it: at ``max(its cudaEventRecord call, end of every op the
    thread launched before)``. The first ``cudaEventRecord*`` call inside a range is live timing's opening
    event, the last one its closing event. Needs pandas (``nvtxsim.load_frames``); {} without it.
    """
    try:
        import nvtxsim

        f = nvtxsim.load_frames(export, domain="nvtxsim")
        if f.api_calls.empty or f.gpu_ops.empty:
            return {}
        return _spans(f)
    except Exception as exc:  # pandas missing, or an export this check does not understand
        print(f"live_vs_report: no event-span check ({type(exc).__name__}: {exc})", file=sys.stderr)
        return {}


def _spans(f) -> dict[str, float]:  # noqa: ANN001 - nvtxsim.analysis.frames.Frames
    import numpy as np

    api, ops, ranges = f.api_calls, f.gpu_ops, f.ranges
    launch = api.set_index("correlation_id")["start_ns"]
    ops = ops.assign(launch_ns=ops["correlation_id"].map(launch)).dropna(subset=["launch_ns"])
    recs_all = api[api["name"].str.startswith("cudaEventRecord")]
    sums: dict[str, list[float]] = {}
    for tid, rs in ranges.groupby("tid"):
        mine = ops[ops["launch_tid"] == tid].sort_values("launch_ns")
        lt = mine["launch_ns"].to_numpy(dtype=np.int64)
        done = np.maximum.accumulate(mine["end_ns"].to_numpy(dtype=np.int64)) if len(mine) else np.zeros(0, np.int64)
        recs = np.sort(recs_all[recs_all["tid"] == tid]["end_ns"].to_numpy(dtype=np.int64))

        def reached(t: int, lt: np.ndarray = lt, done: np.ndarray = done) -> int:  # this thread's arrays
            i = int(np.searchsorted(lt, t, side="left"))
            return max(t, int(done[i - 1])) if i else t

        for s, e, phase in zip(rs["start_ns"], rs["end_ns"], rs["phase"]):
            lo, hi = np.searchsorted(recs, s, side="left"), np.searchsorted(recs, e, side="right")
            if hi - lo < 2:
                continue
            sums.setdefault(phase, []).append(reached(int(recs[hi - 1])) - reached(int(recs[lo])))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def report_phases(export: str) -> dict[str, dict]:
    r = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", "--format", "json", "--domain", "nvtxsim", export],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise SystemExit(f"live_vs_report: nvtxsim report failed ({r.returncode}): {r.stderr.strip()}")
    doc = json.loads(r.stdout)
    return {f"{p['domain']}:{p['name']}": p for p in doc.get("phases", [])}


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.1f}"


def _pct(a, b) -> str:
    return "-" if a is None or not b else f"{100 * (a - b) / b:+.1f}%"


def compare(live: dict[str, dict], rep: dict[str, dict], spans: dict[str, float]) -> tuple[list[list[str]], list[str]]:
    rows, failures = [], []
    for key in sorted(set(live) | set(rep), key=lambda k: -(rep.get(k, {}).get("cpu_total_ns") or 0)):
        lv, rp = live.get(key), rep.get(key)
        if lv is None or rp is None:
            rows.append(
                [key, str(lv and lv["count"] or 0), str(rp and rp.get("instances") or 0)]
                + ["-"] * 10
                + ["only in " + ("report" if lv is None else "live")]
            )
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
        rows.append(
            [
                key,
                str(lv["count"]),
                str(n_rep),
                _us(lv["cpu_mean_ns"]),
                _us(cpu_rep),
                _pct(lv["cpu_mean_ns"], cpu_rep),
                _us(gpu),
                _us(proj),
                _pct(gpu, proj),
                f"{(gpu - proj) / 1e3:+,.1f}" if gpu is not None and proj is not None else "-",
                _us(busy),
                _us(spans.get(key)),
                _pct(gpu, spans.get(key)),
                verdict,
            ]
        )
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
    rows, failures = compare(live, report_phases(args.export), event_spans(args.export))
    head = [
        "phase",
        "N live",
        "N report",
        "CPU live µs",
        "CPU report µs",
        "CPU diff",
        "GPU live µs",
        "GPU proj µs",
        "GPU diff",
        "GPU diff µs",
        "GPU busy µs",
        "event span µs",
        "live vs span",
        "verdict",
    ]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print(
        f"live {args.jsonl} ({len(log.windows)} windows) vs nvtxsim report {args.export}; means per range;"
        f" targets: CPU within {CPU_TOL:.0%}, GPU within {GPU_TOL:.0%} or {GPU_ABS_NS / 1e3:.0f} µs of projected"
    )
    for r in [head] + rows:
        print("  ".join(c.ljust(w) if i in (0, 13) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    print(
        f"{len(rows) - len(failures)}/{len(rows)} phases meet the targets"
        + (f"; not: {', '.join(failures)}" if failures else "")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
