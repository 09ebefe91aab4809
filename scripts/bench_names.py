#!/usr/bin/env python3
"""Report time against the number of distinct range names: 100k names vs 1k, measured in one run.

Why: ``phase(f"step_{i}")`` gives one name per iteration, so an export can hold 100,000 distinct
names. Every view and every format must stay linear in that (issue 13): the time for ``--large``
iterations over the time for ``--small`` should be about their ratio (100×), not its square. Small
reports sit in the CPU's caches, so large/small runs somewhat above 100× on a linear report; the
exit status looks at large/``--mid`` (10×: linear; quadratic would be 100×).

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

from nvtxsim.reporting.views import VIEWS as ALL_VIEWS  # noqa: E402

VIEWS = tuple(v for v in ALL_VIEWS if v != "all")  # every view the report has
#: case → report arguments (after the export path)
CASES = {
    **{f"view {v}": ["--view", v, "-f", "json"] for v in VIEWS},
    "table (default)": [],
    "view all, table": ["--view", "all"],
    "json": ["-f", "json"],
    "csv": ["-f", "csv"],
    "markdown": ["-f", "markdown"],
    "html": ["-f", "html"],
    "perfetto": ["-f", "perfetto"],
}


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
    ap.add_argument("--small", type=int, default=1_000, help="iterations of the small export (default 1000)")
    ap.add_argument("--mid", type=int, default=10_000, help="iterations of the middle export (default 10000)")
    ap.add_argument("--large", type=int, default=100_000, help="iterations of the large export (default 100000)")
    ap.add_argument("--cases", default="all", help=f"comma-separated cases (default all): {', '.join(CASES)}")
    ap.add_argument(
        "--repeat", type=int, default=5, help="runs per case on the small and middle exports, best kept (the large: 1)"
    )
    args = ap.parse_args()
    if not 0 < args.small < args.mid < args.large:
        ap.error("need 0 < --small < --mid < --large")
    cases = CASES if args.cases == "all" else {c: CASES[c] for c in args.cases.split(",")}
    # Quadratic work would make large/mid ≈ (large/mid)²; linear ≈ large/mid, with some room for
    # caches (a 100k-name report no longer fits in them) and a shared machine.
    limit = 2 * args.large / args.mid
    sizes = (args.small, args.mid, args.large)
    with tempfile.TemporaryDirectory(prefix="nvtxsim-names-") as tmp:
        exports = {n: Path(tmp) / f"names_{n}.sqlite" for n in sizes}
        for n, path in exports.items():
            make_names_export(path, n)
        out = Path(tmp) / "out"
        print(
            f"distinct range names: {', '.join(str(2 * n + 1) for n in sizes)}; linear when {args.large}/{args.mid} ≤ {limit:.0f}×"
        )
        print(
            f"| case | {args.small} s | {args.mid} s | {args.large} s | {args.large}/{args.small} | {args.large}/{args.mid} |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        worst = 0.0
        for case, extra in cases.items():
            t = [time_report(exports[n], extra, out, args.repeat if n != args.large else 1) for n in sizes]
            worst = max(worst, t[2] / t[1])
            print(
                f"| {case} | {t[0]:.3f} | {t[1]:.2f} | {t[2]:.1f} | {t[2] / t[0]:.0f}× | {t[2] / t[1]:.1f}× |",
                flush=True,
            )
    print(
        f"worst {args.large}/{args.mid} ratio {worst:.1f}× ({'linear' if worst <= limit else 'NOT linear'}; limit {limit:.0f}×)"
    )
    return 0 if worst <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
