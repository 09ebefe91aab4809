#!/usr/bin/env python3
"""Report time against the number of distinct range names: 100k names vs 1k, measured in one run.

Why: ``phase(f"step_{i}")`` gives one name per iteration, so an export can hold 100,000 distinct
names. Every view and every format must stay linear in that (issue 13): the time for ``--large``
names over the time for ``--small`` names should be about their ratio (100×) or less, not its square.

The exports come from ``tests/synth.py`` (``make_names_export``): iteration i holds ``step_{i}`` and,
on a second thread, ``render_{i}``, each launching a kernel. Reports run in this process
(``nvtxsim.cli.main.main``), output to a file, best of ``--repeat``.

    python3 scripts/bench_names.py                      # 1k vs 100k names, every view and format
    python3 scripts/bench_names.py --large 20000 --cases summary,tree
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout, for `import nvtxsim` without installing
sys.path.insert(1, str(HERE.parent / "tests"))

from synth import make_names_export  # noqa: E402

VIEWS = ("summary", "tree", "iterations", "slowest", "kernels", "copies", "syncs", "gpu", "gpus", "threads", "processes", "memory")
#: case → report arguments (after the export path)
CASES = {**{f"view {v}": ["--view", v, "-f", "json"] for v in VIEWS}, "table (default)": [], "view all, table": ["--view", "all"],
         "json": ["-f", "json"], "csv": ["-f", "csv"], "markdown": ["-f", "markdown"], "html": ["-f", "html"], "perfetto": ["-f", "perfetto"]}


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
