#!/usr/bin/env python3
"""Report speed of two nvtxsim trees in one run: interleaved A/B pairs on the same scaled exports.

Why: a refactor must not make reports slower, and machines here are noisy, so both versions are
timed in the same run, alternating (A B A B ...), and only their ratio is reported. Each tree is a
checkout (or just its ``nvtxsim/`` package) put first on PYTHONPATH of a child ``python -m nvtxsim``.

    python scripts/bench_ab.py --a /path/to/old/checkout --b . --sizes 1,10,100 --pairs 7 \\
        --a-args "--format json" --b-args "--format json --no-findings"

Prints, per size, the median wall time of each tree and B/A (below 1: B is faster), and the same for
CPU time (user + system of the child).
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "tests" / "data" / "gpu" / "demo_h200.sqlite.gz"


def scaled(base: Path, times: int, work: Path) -> Path:
    """The base export ×``times`` (×1: the base inflated), made once per run."""
    path = work / f"x{times}.sqlite"
    if times == 1:
        with gzip.open(base) as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        cmd = [
            sys.executable,
            str(REPO / "scripts" / "scale_export.py"),
            str(base),
            str(path),
            "--times",
            str(times),
            "--force",
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


def timed(tree: Path, export: Path, extra: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``nvtxsim report`` by the package in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "nvtxsim", "report", str(export), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # Run in the tree: ``python -m`` puts the working directory first on sys.path, so from any other
    # checkout that checkout's package would be timed instead.
    proc = subprocess.run(cmd, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench_ab: {tree}: report failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=Path, required=True, help="tree A (the anchor)")
    ap.add_argument("--b", type=Path, required=True, help="tree B")
    ap.add_argument("--a-args", default="--format json", help="report arguments for A")
    ap.add_argument("--b-args", default="--format json", help="report arguments for B")
    ap.add_argument("--base", type=Path, default=DEMO, help="export to scale (default: the shipped H200 demo)")
    ap.add_argument("--sizes", default="1,10", help="scale factors (default 1,10)")
    ap.add_argument(
        "--pairs", type=int, default=7, help="interleaved A/B pairs per size (one untimed warm-up pair first)"
    )
    args = ap.parse_args()
    a_args, b_args = shlex.split(args.a_args), shlex.split(args.b_args)
    print(f"A = {args.a} ({args.a_args}); B = {args.b} ({args.b_args}); {args.pairs} interleaved pairs per size")
    print("| size | A wall s | B wall s | B/A wall | A CPU s | B CPU s | B/A CPU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as work:
        for times in (int(s) for s in args.sizes.split(",")):
            export = scaled(args.base, times, Path(work))
            timed(args.a.resolve(), export, a_args), timed(args.b.resolve(), export, b_args)  # warm the page cache
            a, b = [], []
            for i in range(args.pairs):
                order = [(args.a, a_args, a), (args.b, b_args, b)]
                for tree, extra, sink in order if i % 2 == 0 else order[::-1]:
                    sink.append(timed(tree.resolve(), export, extra))
            aw, bw = statistics.median(x[0] for x in a), statistics.median(x[0] for x in b)
            ac, bc = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
            print(
                f"| x{times} | {aw:.3f} | {bw:.3f} | {bw / aw:.3f} | {ac:.3f} | {bc:.3f} | {bc / ac:.3f} |", flush=True
            )
            export.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
