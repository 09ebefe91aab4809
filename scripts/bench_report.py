#!/usr/bin/env python3
"""Report speed and memory: ``nvtxsim report`` against ``nsys stats`` on the same exports, ×1 … ×1000.

A real export is scaled with scripts/scale_export.py; on each size both tools run as child
processes on the same file (its pages warmed in the OS cache first), and the script prints
wall time, CPU time and peak RSS of each, the ratio nsys/nvtxsim measured in this run, and
whether both give the same numbers (per-name projected GPU time and GPU op counts, from
nsys's ``nvtx_gpu_proj_sum`` on 2023+ or the per-range ``nvtxgpuproj`` rows of 2022.4).
It ends with the n log n check (time per row as the export grows) and the goals:
≥ 3× faster than nsys at every size, peak RSS ≤ 1.5 GB at the largest, growth ≤ n log n.

    python scripts/bench_report.py                       # demo export, ×1 ×10 ×100 ×1000
    python scripts/bench_report.py --sizes 1,10 --nsys-timeout 600 --json out.json
    python scripts/bench_report.py --ranks 4 --rank-size 100   # adds the many-ranks benchmark

Peak RSS is the largest resident set of the child or any of its descendants (wait4).
Small sizes are start-up bound and noisy: up to ``--repeat-max`` both tools get one untimed
warm-up run and then ``--repeat`` timed runs each, interleaved; the median run is kept.
Bytecode: every child runs with Python's bytecode cache on, in a private
``PYTHONPYCACHEPREFIX`` under the work folder, filled before timing - as on a machine where
packages were installed by pip. Some images set ``PYTHONDONTWRITEBYTECODE=1`` and ship numpy
without ``.pyc`` files; there every ``import numpy`` compiles numpy from source (0.3 s on the
H200 host). ``--as-is`` times the environment unchanged instead.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BASE = REPO / "tests" / "data" / "gpu" / "demo_h200.sqlite.gz"
GOAL_RATIO, GOAL_RSS_MB = 3.0, 1536


# --------------------------------------------------------------------------- running children


def run(cmd: list[str], *, timeout: float, env: dict | None = None) -> dict:
    """Run ``cmd``; wall/CPU seconds, peak RSS (MB) of the process tree's largest process, output."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
    timed_out = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > timeout:
            timed_out = True
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            pid, status, ru = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,
        "rc": proc.returncode,
        "timed_out": timed_out,
        "stdout": out.read().decode("utf-8", "replace"),
        "stderr": err.read().decode("utf-8", "replace")[-2000:],
    }


FLOORS = {
    "python3 -c pass": "pass",
    "python3 -c 'import numpy' (BLAS threads 1, as nvtxsim report)": "import numpy",
    "python3 -c 'import nvtxsim.cli.commands.report'": "import nvtxsim.cli.commands.report",
}


def start_up_floors(repeat: int) -> dict[str, float]:
    """Wall time of what any Python + numpy report pays before reading a byte, in this run."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = {}
    for label, code in FLOORS.items():
        runs = [run([sys.executable, "-c", code], timeout=60, env=env) for _ in range(max(repeat, 1) + 1)][1:]
        out[label] = median_run(runs)["wall_s"]
    return out


def numpy_bytecode_shipped() -> bool | None:
    """Whether numpy's own ``__pycache__`` holds bytecode for this Python (None: no numpy)."""
    code = "import importlib.util, os, numpy; print(os.path.exists(importlib.util.cache_from_source(numpy.__file__)))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return {"True": True, "False": False}.get(out.stdout.strip())


def _portable(value: object) -> str:
    """An argument as recorded in the JSON: paths inside the checkout relative to it."""
    if isinstance(value, Path):
        try:
            return str(value.resolve().relative_to(REPO))
        except ValueError:
            return str(value)
    return str(value)


def median_run(runs: list[dict]) -> dict:
    """The run with the median wall time (the upper one of an even count)."""
    return sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]


def warm(path: Path) -> None:
    """Read the file once so both tools find it in the page cache."""
    with open(path, "rb") as fh:
        while fh.read(8 << 20):
            pass


# --------------------------------------------------------------------------- nsys


def find_nsys() -> str | None:
    return os.environ.get("NSYS") or shutil.which("nsys")


def nsys_report_name(nsys: str) -> str:
    text = subprocess.run([nsys, "stats", "--help-reports"], capture_output=True, text=True, timeout=120).stdout
    return "nvtx_gpu_proj_sum" if "nvtx_gpu_proj_sum" in text else "nvtxgpuproj"


def parse_csv(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if "," in line and not line.startswith(("Processing", "Generating", " "))),
        None,
    )
    if start is None:
        return []
    return list(csv.DictReader(io.StringIO("\n".join(line for line in lines[start:] if line.strip()))))


def nsys_numbers(rows: list[dict[str, str]], report: str) -> dict[str, tuple[int, int]]:
    """name -> (projected GPU time ns, GPU ops), summed over styles / ranges."""
    out: dict[str, list[int]] = {}
    if not rows:
        return {}
    cols = list(rows[0])
    if report == "nvtx_gpu_proj_sum":
        name = "Range" if "Range" in cols else "Name"
        tot = next(c for c in cols if c.startswith("Total Proj Time"))
        ops = next(c for c in cols if c.startswith("Total GPU Ops"))
    else:
        name, tot, ops = "Name", next(c for c in cols if c.startswith("Projected Duration")), "NumGPUOps"
    for r in rows:
        acc = out.setdefault(r[name], [0, 0])
        acc[0] += int(float(r[tot]))
        acc[1] += int(float(r[ops]))
    return {k: (v[0], v[1]) for k, v in out.items()}


def ours_numbers(doc: dict) -> dict[str, tuple[int, int]]:
    out = {}
    for p in doc["phases"]:
        label = f"{p['domain']}:{p['name']}" if p["domain"] else p["name"]
        if p["gpu_ops"]:
            out[label] = (p["gpu_proj_total_ns"], p["gpu_ops"])
    return out


def compare(ours: dict, theirs: dict) -> str:
    """'same' or a short description of the first differences (nsys 2025 prints default-domain names as ':name')."""
    theirs = {k[1:] if k.startswith(":") else k: v for k, v in theirs.items()}
    if ours == theirs:
        return "same"
    diff = (
        sorted(set(ours) ^ set(theirs))[:3] + [k for k in sorted(set(ours) & set(theirs)) if ours[k] != theirs[k]][:3]
    )
    return "DIFFERENT: " + ", ".join(diff)


# --------------------------------------------------------------------------- sizes


def export_rows(path: Path) -> dict[str, int]:
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    n = {}
    for key, t, where in (
        ("ranges", "NVTX_EVENTS", "WHERE eventType IN (59,60,70,71)"),
        ("calls", "CUPTI_ACTIVITY_KIND_RUNTIME", ""),
        ("kernels", "CUPTI_ACTIVITY_KIND_KERNEL", ""),
        ("memcpys", "CUPTI_ACTIVITY_KIND_MEMCPY", ""),
        ("memsets", "CUPTI_ACTIVITY_KIND_MEMSET", ""),
    ):
        n[key] = con.execute(f"SELECT count(*) FROM {t} {where}").fetchone()[0] if t in tables else 0
    con.close()
    return n


def bench_size(
    args, base: Path, work: Path, times: int, nsys: str | None, report: str, cmd_ours: list[str], log
) -> dict:
    path = work / f"x{times}.sqlite"
    t0 = time.perf_counter()
    if not path.exists():
        subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "scale_export.py"),
                str(base),
                str(path),
                "--times",
                str(times),
                "--force",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    row = {
        "times": times,
        "scale_s": round(time.perf_counter() - t0, 1),
        "bytes": path.stat().st_size,
        **export_rows(path),
    }
    warm(path)
    env = {**os.environ, "NVTXSIM_CACHE": "0"}
    repeat = args.repeat if times <= args.repeat_max else 1
    nsys_cmd = (
        [nsys, "stats", "-r", report, "--format", "csv", "-o", "-", str(path)]
        if nsys and times <= args.nsys_max
        else None
    )
    if repeat > 1:  # untimed warm-ups, then interleaved timed runs; the medians are kept
        run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=env)
        if nsys_cmd:
            run(nsys_cmd, timeout=args.nsys_timeout)
        ours_runs, nsys_runs = [], []
        for _ in range(repeat):
            ours_runs.append(run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=env))
            if nsys_cmd:
                nsys_runs.append(run(nsys_cmd, timeout=args.nsys_timeout))
        ours = median_run(ours_runs)
        row.update(repeat=repeat, ours_walls=[round(r["wall_s"], 4) for r in ours_runs])
        if nsys_runs:
            row["nsys_walls"] = [round(r["wall_s"], 4) for r in nsys_runs]
    else:
        ours = run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=env)
        nsys_runs = []
    row.update(ours_wall_s=ours["wall_s"], ours_cpu_s=ours["cpu_s"], ours_rss_mb=ours["rss_mb"], ours_rc=ours["rc"])
    ours_doc = json.loads(ours["stdout"]) if ours["rc"] == 0 else None
    if ours["rc"] != 0:
        log(f"  nvtxsim failed (rc={ours['rc']}): {ours['stderr'][-500:]}")
    if args.cache and times <= args.cache_max:
        cenv = {**os.environ, "NVTXSIM_CACHE": "1"}
        run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=cenv)  # builds the entry
        hit = run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=cenv)
        row.update(cached_wall_s=hit["wall_s"], cached_rss_mb=hit["rss_mb"])
        if ours_doc is not None and hit["rc"] == 0 and json.loads(hit["stdout"])["phases"] != ours_doc["phases"]:
            row["cached_numbers"] = "DIFFERENT"
        shutil.rmtree(work / ".nvtxsim-cache", ignore_errors=True)
    if nsys_cmd:
        if nsys_runs:
            theirs = median_run(nsys_runs)
        else:
            warm(path)
            theirs = run(nsys_cmd, timeout=args.nsys_timeout)
        row.update(
            nsys_wall_s=theirs["wall_s"],
            nsys_cpu_s=theirs["cpu_s"],
            nsys_rss_mb=theirs["rss_mb"],
            nsys_timed_out=theirs["timed_out"],
        )
        if theirs["timed_out"]:
            row["numbers"] = f"nsys killed after {args.nsys_timeout:.0f} s"
        elif ours_doc is not None:
            row["numbers"] = compare(ours_numbers(ours_doc), nsys_numbers(parse_csv(theirs["stdout"]), report))
        if not theirs["timed_out"] and theirs["rc"] != 0:
            log(f"  nsys failed (rc={theirs['rc']}): {theirs['stderr'][-500:]}")
        row["ratio_wall"] = theirs["wall_s"] / ours["wall_s"]
        row["ratio_cpu"] = theirs["cpu_s"] / max(ours["cpu_s"], 1e-9)
    else:
        row["numbers"] = "nsys not run" if nsys else "no nsys"
    if args.findings_ab:
        row.update(bench_findings(args, path, cmd_ours, env))
    if not args.keep and times != 1:
        path.unlink()
    return row


def bench_findings(args, path: Path, cmd_ours: list[str], env: dict) -> dict:
    """The report with its findings (the default: warm-up detection and the steady state) against --no-findings
    and against the findings with --keep-warm-up (no steady state): interleaved triples, medians, in one run."""
    on, off, keep = [], [], []
    run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=env)  # untimed warm-up
    for _ in range(args.findings_ab):
        off.append(run(cmd_ours + ["--no-findings", str(path)], timeout=args.ours_timeout, env=env))
        on.append(run(cmd_ours + [str(path)], timeout=args.ours_timeout, env=env))
        keep.append(run(cmd_ours + ["--keep-warm-up", str(path)], timeout=args.ours_timeout, env=env))
    med = lambda runs, key: sorted(r[key] for r in runs)[len(runs) // 2]  # noqa: E731
    out = {
        "findings_on_wall_s": med(on, "wall_s"),
        "findings_off_wall_s": med(off, "wall_s"),
        "findings_keep_wall_s": med(keep, "wall_s"),
        "findings_on_cpu_s": med(on, "cpu_s"),
        "findings_off_cpu_s": med(off, "cpu_s"),
    }
    out["findings_keep_ratio_wall"] = out["findings_keep_wall_s"] / out["findings_off_wall_s"]
    out["findings_ratio_wall"] = out["findings_on_wall_s"] / out["findings_off_wall_s"]
    out["findings_ratio_cpu"] = out["findings_on_cpu_s"] / max(out["findings_off_cpu_s"], 1e-9)
    return out


# --------------------------------------------------------------------------- many ranks


RANKS_SNIPPET = """
import json, sys, time
from nvtxsim.analysis.ranks import report_many
paths, mode = sys.argv[2:], sys.argv[1]
t = time.perf_counter()
if mode == "dask":
    from distributed import LocalCluster
    with LocalCluster(n_workers=min(len(paths), 4), threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as c:
        t = time.perf_counter()
        per, merged = report_many(paths, domain=None, dask=c.scheduler_address)
else:
    per, merged = report_many(paths, domain=None, workers=int(mode))
print(json.dumps({"seconds": time.perf_counter() - t, "merged": merged.as_dict()["phases"]}))
"""


def bench_ranks(args, base: Path, work: Path, log) -> list[dict]:
    paths = []
    for i in range(args.ranks):
        p = work / f"rank{i}.sqlite"
        # Different gaps between copies make the ranks differ a little, as real ranks do.
        subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "scale_export.py"),
                str(base),
                str(p),
                "--times",
                str(args.rank_size),
                "--gap-ns",
                str(1000 + 997 * i),
                "--force",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        warm(p)
        paths.append(str(p))
    env = {**os.environ, "NVTXSIM_CACHE": "0"}
    modes = ["1", str(args.ranks)]
    try:
        import distributed  # noqa: F401

        modes.append("dask")
    except ImportError:
        pass
    rows, first = [], None
    for mode in modes:
        res = run([sys.executable, "-c", RANKS_SNIPPET, mode, *paths], timeout=args.ours_timeout * args.ranks, env=env)
        if res["rc"] != 0:
            log(f"  ranks mode {mode} failed: {res['stderr'][-500:]}")
            continue
        doc = json.loads(res["stdout"].strip().splitlines()[-1])
        first = first or doc["merged"]
        rows.append(
            {
                "mode": {"1": "1 process", "dask": "Dask LocalCluster"}.get(mode, f"{mode} processes"),
                "wall_s": res["wall_s"],
                "report_many_s": doc["seconds"],
                "rss_mb": res["rss_mb"],
                "merged_equal": doc["merged"] == first,
            }
        )
    if not args.keep:
        for p in paths:
            Path(p).unlink()
    return rows


# --------------------------------------------------------------------------- main


def fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--base", type=Path, default=DEFAULT_BASE, help="export to scale (default: the shipped H200 demo export)"
    )
    ap.add_argument("--sizes", default="1,10,100,1000", help="scale factors (default 1,10,100,1000)")
    ap.add_argument("--work", type=Path, help="folder for the scaled exports (default: a temporary folder)")
    ap.add_argument(
        "--nsys-timeout", type=float, default=600, help="seconds before an nsys run is killed (default 600)"
    )
    ap.add_argument("--nsys-max", type=int, default=10**9, help="skip nsys above this scale factor")
    ap.add_argument("--ours-timeout", type=float, default=900)
    ap.add_argument("--cache", action="store_true", help="also time a second, cached nvtxsim report")
    ap.add_argument("--cache-max", type=int, default=10**9, help="time the cached report only up to this scale factor")
    ap.add_argument("--ranks", type=int, default=0, help="many-ranks benchmark with this many rank files")
    ap.add_argument("--rank-size", type=int, default=100, help="scale factor of each rank file (default 100)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per tool on small sizes, median kept (default 5)")
    ap.add_argument("--repeat-max", type=int, default=10, help="repeat only up to this scale factor (default 10)")
    ap.add_argument(
        "--as-is", action="store_true", help="leave the bytecode settings of the environment alone (see above)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the scaled exports")
    ap.add_argument("--json", type=Path, help="write all measurements here")
    ap.add_argument(
        "--findings-ab",
        type=int,
        default=0,
        metavar="N",
        help="also time N interleaved pairs of the report with and without --no-findings per size",
    )
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, flush=True)

    sizes = [int(s) for s in args.sizes.split(",") if s]
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    base = args.base
    if base.suffix == ".gz":
        import gzip

        plain = work / base.name[: -len(".gz")]
        with gzip.open(base) as a, open(plain, "wb") as b:
            shutil.copyfileobj(a, b, 1 << 20)
        base = plain
    nsys = find_nsys()
    report = nsys_report_name(nsys) if nsys else "-"
    nsys_version = (
        subprocess.run([nsys, "--version"], capture_output=True, text=True).stdout.strip() if nsys else "none"
    )
    machine = {
        "host": platform.node(),
        "cpu": next(
            (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
            platform.processor(),
        ),
        "cores": len(os.sched_getaffinity(0)),
        "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "nsys": nsys_version,
        "nsys_report": report,
        "load_avg_start": os.getloadavg(),
    }
    log(f"machine: {machine}")
    cmd_ours = [sys.executable, "-m", "nvtxsim", "report", "--domain", "all", "--format", "json"]
    machine["numpy_bytecode_shipped"] = numpy_bytecode_shipped()
    machine["PYTHONDONTWRITEBYTECODE"] = os.environ.get("PYTHONDONTWRITEBYTECODE")
    if not args.as_is:  # every child from here on inherits this
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import numpy, json, sqlite3, nvtxsim.cli.commands.report, nvtxsim.analysis.stream, nvtxsim.analysis.gpu, nvtxsim.export.cache",
            ],
            cwd=REPO,
            check=False,
        )
    machine["bytecode"] = "as is" if args.as_is else "cached (private PYTHONPYCACHEPREFIX)"
    log(
        f"numpy bytecode shipped: {machine['numpy_bytecode_shipped']}; PYTHONDONTWRITEBYTECODE={machine['PYTHONDONTWRITEBYTECODE']}; timing with bytecode {machine['bytecode']}"
    )
    rows = []
    for times in sizes:
        log(f"== x{times}")
        row = bench_size(args, base, work, times, nsys, report, cmd_ours, log)
        rows.append(row)
        log("  " + json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}))
    floors = start_up_floors(args.repeat)
    log(f"start-up floors (median of {args.repeat}): " + ", ".join(f"{k} {v:.3f} s" for k, v in floors.items()))
    rank_rows = bench_ranks(args, base, work, log) if args.ranks else []
    machine["load_avg_end"] = os.getloadavg()

    # ---------------------------------------------------------------- tables
    print()
    print(f"nvtxsim report vs nsys stats -r {report} ({nsys_version}); {machine['cpu']}, {machine['cores']} cores")
    print(
        "| size | ranges | CUDA calls | kernels | file MB | nvtxsim s | nvtxsim CPU s | nvtxsim RSS MB | nsys s | nsys CPU s | nsys RSS MB | nsys/nvtxsim (wall) | numbers |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ratio = r.get("ratio_wall")
        rtxt = "-" if ratio is None else (f"> {ratio:.1f}" if r.get("nsys_timed_out") else f"{ratio:.1f}")
        print(
            f"| x{r['times']} | {r['ranges']:,} | {r['calls']:,} | {r['kernels']:,} | {r['bytes'] / 2**20:.0f} | {fmt_s(r['ours_wall_s'])} | {fmt_s(r['ours_cpu_s'])} | "
            f"{r['ours_rss_mb']:.0f} | {fmt_s(r.get('nsys_wall_s'))}{'+' if r.get('nsys_timed_out') else ''} | {fmt_s(r.get('nsys_cpu_s'))} | "
            f"{r.get('nsys_rss_mb', 0):.0f} | {rtxt} | {r.get('numbers', '-')} |"
        )
    if args.findings_ab:
        print()
        print(
            f"Findings cost (median of {args.findings_ab} interleaved triples: default report = findings + warm-up "
            "detection + steady state, vs --no-findings, and findings with --keep-warm-up; goal with / without ≤ 1.10 at x100)"
        )
        print(
            "| size | without s | with s | with / without (wall) | --keep-warm-up / without (wall) | without CPU s | with CPU s | with / without (CPU) |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| x{r['times']} | {fmt_s(r['findings_off_wall_s'])} | {fmt_s(r['findings_on_wall_s'])} | {r['findings_ratio_wall']:.3f} | "
                f"{r['findings_keep_ratio_wall']:.3f} | "
                f"{fmt_s(r['findings_off_cpu_s'])} | {fmt_s(r['findings_on_cpu_s'])} | {r['findings_ratio_cpu']:.3f} |"
            )
    if args.cache:
        print()
        print("| size | nvtxsim s | cached nvtxsim s | cached RSS MB |")
        print("| --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| x{r['times']} | {fmt_s(r['ours_wall_s'])} | {fmt_s(r.get('cached_wall_s'))} | {r.get('cached_rss_mb', 0):.0f} |"
            )
    print()
    print(
        "n log n check (rows = ranges + CUDA calls + GPU ops; growth = time ratio / (n log n ratio), <= 1 is n log n or better)"
    )
    print("| size | rows | nvtxsim µs per row | growth vs previous size |")
    print("| --- | --- | --- | --- |")
    prev = None
    growth_ok = True
    for r in rows:
        n = r["ranges"] + r["calls"] + r["kernels"] + r["memcpys"] + r["memsets"]
        per = r["ours_wall_s"] / n * 1e6
        g = "-"
        if prev is not None:
            pn, pt = prev
            gr = (r["ours_wall_s"] / pt) / ((n * math.log(n)) / (pn * math.log(pn)))
            g = f"{gr:.2f}"
            # Small sizes are dominated by start-up: judge growth from x10 up.
            if pn >= 100_000 and gr > 1.2:
                growth_ok = False
        print(f"| x{r['times']} | {n:,} | {per:.2f} | {g} |")
        prev = (n, r["ours_wall_s"])
    if rank_rows:
        print()
        print(f"many ranks: {args.ranks} exports of x{args.rank_size} each, report_many(domain=None)")
        print("| mode | wall s (child) | report_many s | peak RSS MB (largest process) | merged equal |")
        print("| --- | --- | --- | --- | --- |")
        for r in rank_rows:
            print(
                f"| {r['mode']} | {fmt_s(r['wall_s'])} | {fmt_s(r['report_many_s'])} | {r['rss_mb']:.0f} | {r['merged_equal']} |"
            )
    print()
    print("start-up floors (median wall s) and what 3x nsys would allow at x1:")
    x1 = next((r for r in rows if r["times"] == 1 and r.get("nsys_wall_s")), None)
    for label, v in floors.items():
        print(f"  {label}: {v:.3f} s" + (f"  (nsys x1 / this = {x1['nsys_wall_s'] / v:.1f})" if x1 else ""))
    if x1:
        print(f"  3x faster than nsys at x1 means <= {x1['nsys_wall_s'] / GOAL_RATIO:.3f} s in all")
    print()
    measured = [r for r in rows if r.get("ratio_wall") is not None]
    speed_ok = bool(measured) and all(r["ratio_wall"] >= GOAL_RATIO for r in measured)
    rss_ok = rows[-1]["ours_rss_mb"] <= GOAL_RSS_MB
    same_ok = all(
        r.get("numbers") in ("same",) or "killed" in str(r.get("numbers")) or "not run" in str(r.get("numbers"))
        for r in rows
    )
    print(
        f"goal >= {GOAL_RATIO:.0f}x faster than nsys at every size measured: {'met' if speed_ok else 'NOT met'} "
        f"({', '.join('x{}: {}{:.1f}'.format(r['times'], '>' if r.get('nsys_timed_out') else '', r['ratio_wall']) for r in measured) or 'nsys not measured'})"
    )
    print(
        f"goal peak RSS <= {GOAL_RSS_MB} MB at x{rows[-1]['times']}: {'met' if rss_ok else 'NOT met'} ({rows[-1]['ours_rss_mb']:.0f} MB)"
    )
    print(f"goal growth no worse than n log n: {'met' if growth_ok else 'NOT met'}")
    print(f"same numbers as nsys: {'yes' if same_ok else 'NO'}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine,
                    "floors": floors,
                    "sizes": rows,
                    "ranks": rank_rows,
                    "args": {k: _portable(v) for k, v in vars(args).items()},
                },
                indent=1,
            )
        )
    if not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
