#!/usr/bin/env python3
"""Report time against the number of distinct range names: 100k names vs 1k, measured in one run.

Why: ``phase(f"step_{i}")`` gives one name per iteration, so an export can hold 100,000 distinct
names. Every view and every format must stay linear in that (issue 13): the time for ``--large``
names over the time for ``--small`` names should be about their ratio (100×) or less, not its square.

Each export is a loop of ``iteration`` ranges on two threads; iteration i holds ``step_{i}`` and, on
the second thread, ``render_{i}`` (so names are distinct per iteration), each launching a kernel;
every 10th step also does a host→device copy and a synchronizing call. Reports run in this process
(``nvtxsim.cli.main.main``), output to a file, best of ``--repeat``.

    python3 scripts/bench_names.py                      # 1k vs 100k names, every view and format
    python3 scripts/bench_names.py --large 20000 --cases summary,tree
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout, for `import nvtxsim` without installing
sys.path.insert(1, str(HERE.parent / "tests"))

from synth import DDL, global_tid  # noqa: E402

VIEWS = ("summary", "tree", "iterations", "slowest", "kernels", "copies", "syncs", "gpu", "gpus", "threads", "processes", "memory")
#: case → report arguments (after the export path)
CASES = {**{f"view {v}": ["--view", v, "-f", "json"] for v in VIEWS}, "table (default)": [], "view all, table": ["--view", "all"],
         "json": ["-f", "json"], "csv": ["-f", "csv"], "markdown": ["-f", "markdown"], "html": ["-f", "html"], "perfetto": ["-f", "perfetto"]}
API = {"launch": "cudaLaunchKernel_v7000", "copy": "cudaMemcpyAsync_v3020", "sync": "cudaStreamSynchronize_v3020"}


def make_names_export(path: Path, names: int) -> None:
    """An export with ``2 × names`` distinct range names (``step_i``, ``render_i``) plus ``iteration``."""
    con = sqlite3.connect(path)
    con.executescript(DDL)
    pid = 777
    gpid = global_tid(pid, 0)
    tids = (global_tid(pid, pid), global_tid(pid, pid + 1))
    strings = {"nvtxsim": 1, "iteration": 2, "kernel": 3, **{name: 4 + k for k, name in enumerate(API.values())}}
    nvtx = [(0, None, 75, None, "nvtxsim", tids[0], None, 1)]
    calls, kernels, copies = [], [], []
    t, corr = 1_000, 1
    for i in range(names):
        it0 = t
        for tid, label in zip(tids, ("step", "render")):
            name = f"{label}_{i}"
            strings[name] = len(strings) + 1
            s = it0 + 100
            nvtx.append((s, s + 5_000, 59, None, None, tid, strings[name], 1))
            calls.append((s + 100, s + 600, 0, tid, corr, strings[API["launch"]], 0))
            kernels.append((s + 700, s + 2_700, 0, 1, 7, corr, gpid, 3, 3, None, 0, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 0))
            corr += 1
            if i % 10 == 0 and label == "step":
                calls.append((s + 1_000, s + 1_500, 0, tid, corr, strings[API["copy"]], 0))
                copies.append((s + 2_800, s + 3_300, 0, 1, 7, corr, gpid, 4096, 1, None, 0, 2, 0, 1, 0, 1, None, None, None))
                corr += 1
                calls.append((s + 1_600, s + 3_400, 0, tid, corr, strings[API["sync"]], 0))
                corr += 1
        t = it0 + 6_000
        nvtx.append((it0, t, 59, None, None, tids[0], strings["iteration"], 1))
        t += 500
    con.executemany("INSERT INTO NVTX_EVENTS (start,end,eventType,rangeId,text,globalTid,textId,domainId) VALUES (?,?,?,?,?,?,?,?)", nvtx)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start,end,eventClass,globalTid,correlationId,nameId,returnValue) VALUES (?,?,?,?,?,?,?)", calls)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,NULL,NULL)", kernels)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", copies)
    con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in strings.items()])
    con.executemany("INSERT INTO EXPORT_META_DATA VALUES (?,?)", [("EXPORT_PRODUCT_VERSION", "synthetic"), ("EXPORT_SCHEMA_VERSION", "3.0.0")])
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (t + 1_000, t + 1_000))
    con.commit()
    con.close()


def time_report(export: Path, args: list[str], out: Path, repeat: int) -> float:
    """Best wall time of ``nvtxsim report EXPORT ARGS -o OUT --force`` in this process."""
    from nvtxsim.cli.main import main

    best = float("inf")
    for _ in range(repeat):
        sink = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            code = main(["report", str(export), *args, "--no-cache", "-o", str(out), "--force"])
        best = min(best, time.perf_counter() - t0)
        if code not in (0, None):
            raise SystemExit(f"report {' '.join(args)} failed ({code}): {sink.getvalue()[-500:]}")
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=1_000, help="names of the small export (default 1000)")
    ap.add_argument("--large", type=int, default=100_000, help="names of the large export (default 100000)")
    ap.add_argument("--cases", default="all", help=f"comma-separated cases (default all): {', '.join(CASES)}")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case on the small export, best kept (the large: 1)")
    ap.add_argument("--max-ratio", type=float, default=None, help="exit 1 when a ratio exceeds this (default: large/small × 1.5)")
    args = ap.parse_args()
    if not 0 < args.small < args.large:
        ap.error("need 0 < --small < --large")
    cases = CASES if args.cases == "all" else {c: CASES[c] for c in args.cases.split(",")}
    limit = args.max_ratio if args.max_ratio is not None else 1.5 * args.large / args.small
    with tempfile.TemporaryDirectory(prefix="nvtxsim-names-") as tmp:
        exports = {}
        for n in (args.small, args.large):
            exports[n] = Path(tmp) / f"names_{n}.sqlite"
            make_names_export(exports[n], n)
        out = Path(tmp) / "out"
        print(f"distinct names: {2 * args.small + 1} vs {2 * args.large + 1} (ratio {args.large / args.small:.0f}×); limit {limit:.0f}×")
        print(f"| case | {args.small} iterations s | {args.large} iterations s | ratio |")
        print("| --- | ---: | ---: | ---: |")
        worst = 0.0
        for case, extra in cases.items():
            small = time_report(exports[args.small], extra, out, args.repeat)
            large = time_report(exports[args.large], extra, out, 1)
            ratio = large / small
            worst = max(worst, ratio)
            print(f"| {case} | {small:.3f} | {large:.3f} | {ratio:.0f}× |", flush=True)
    print(f"worst ratio {worst:.0f}× ({'linear' if worst <= limit else 'NOT linear'}; limit {limit:.0f}×)")
    return 0 if worst <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
