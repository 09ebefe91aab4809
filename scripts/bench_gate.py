#!/usr/bin/env python3
"""Benchmark of compare's regression gate: its false-alarm rate on identical code and its detection rate,
at the right phase, of planted slowdowns.

Why: a CI gate that fails on identical code is switched off, and one that misses a real slowdown is
useless; both rates have to be measured on real captures of a noisy host, not assumed.

Two sources of runs, each a directory of ``base_*`` exports (identical code) and ``slow<MS>_*`` exports
(the same loop with ``MS`` ms more in one phase, ``--phase``; for the CPU captures ``slow<X>_*``, X is the
planted work as a fraction of the iteration's):

    # the H200 runs committed in reports/raw/gate-h200/ (scripts/gpu/gate_runs.sh made them)
    python scripts/bench_gate.py --runs reports/raw/gate-h200 --phase policy
    # real nsys 2022.4 captures of a small planted Python loop on this CPU (made first, into --capture DIR)
    python scripts/bench_gate.py --capture /tmp/gate-cpu --base-runs 16 --slow-runs 8 --slow-share 0.05,0.1,0.2

Per slowdown size it forms ``--pairs`` comparisons of one run per side (``compare A B``) and of
``--group`` runs per side (``compare A1..Ak --vs B1..Bk``), with distinct runs drawn with a fixed seed,
and gates them as ``compare --skip-first 2 --fail-above PCT`` would (``--fail-above``, default 5).
An identical pair is a *false alarm* when any row regresses; a planted pair is *caught* when the planted
phase regresses and nothing else does but its parents (the iteration). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nvtxsim.analysis.compare import CompareSettings, compare  # noqa: E402
from nvtxsim.analysis.selection import Selection  # noqa: E402
from nvtxsim.export.reader import load  # noqa: E402

LOOP = """
import sys
import nvtxsim

# Fixed work per phase (a host that is slower or shared makes all of it slower together); one phase gets
# SHARE x the iteration's work more of the same work per iteration. Units: calls of spin() per ms,
# calibrated once by the benchmark (argv[3]), so every run does the same work whatever the host's speed.
def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x

share, phase_slowed, per_ms = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
work = {"sim_step": 1.2, "render": 0.4, "policy": 0.6, "reward": 0.15, "reset": 0.3, "observation": 0.1}
units = {k: int(v * per_ms) for k, v in work.items()}
extra = int(share * sum(units.values()))
ph = {k: nvtxsim.phase(k) for k in ["iteration", *work]}
for i in range(82):
    with ph["iteration"]:
        for k in work:
            with ph[k]:
                spin(units[k] + (extra if k == phase_slowed else 0))
"""


def capture(out: Path, base_runs: int, slow_runs: int, sizes: list[str], phase: str) -> None:
    """Real nsys captures of the planted loop: base_NN and slow<SHARE>_NN (SHARE: the planted work as a
    fraction of the iteration's), one at a time."""
    nsys = shutil.which("nsys")
    if nsys is None:
        sys.exit("bench_gate: nsys is not installed")
    out.mkdir(parents=True, exist_ok=True)
    prog = out / "loop.py"
    prog.write_text(LOOP)
    jobs = [(f"base_{i:02d}", "0") for i in range(1, base_runs + 1)]
    jobs += [(f"slow{x}_{i:02d}", x) for x in sizes for i in range(1, slow_runs + 1)]
    (out / "SIZES_ARE_SHARES").write_text("slow<X>: X is the planted work as a fraction of the iteration's\n")
    random.Random(1).shuffle(jobs)  # interleaved: a slow spell of the host hits both kinds alike
    per_ms = _calibrate()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name, ms in jobs:
        if (out / f"{name}.sqlite").exists():
            continue
        for _attempt in range(3):  # nsys 2022.4 now and then exits without an export on a loaded host
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [nsys, "profile", "-t", "nvtx", "--sample=none", "--cpuctxsw=none", "--export=sqlite"]
                cmd += ["--force-overwrite=true", "-o", f"{tmp}/{name}", sys.executable, str(prog), ms, phase]
                subprocess.run([*cmd, f"{per_ms:.1f}"], env=env, capture_output=True, timeout=300, check=False)
                got = Path(tmp) / f"{name}.sqlite"
                if got.exists():
                    shutil.move(str(got), out / f"{name}.sqlite")
                    break
        print(f"{name}: {'captured' if (out / f'{name}.sqlite').exists() else 'no export'}", file=sys.stderr)


def _calibrate() -> float:
    """Calls of the loop's spin() per ms on this host (the fastest of 5 tries)."""
    import time

    def spin(n: int) -> int:
        x = 0
        for i in range(n):
            x += i
        return x

    rates = []
    for _ in range(5):
        t = time.perf_counter()
        spin(200_000)
        rates.append(200_000 / ((time.perf_counter() - t) * 1e3))
    return max(rates)  # the unloaded speed: a loaded moment would shrink every run's work


def runs(d: Path) -> dict[str, list[Path]]:
    """``base`` and each ``slow<MS>`` → its exports, by name."""
    groups: dict[str, list[Path]] = {}
    for p in sorted(d.iterdir()):
        m = re.match(r"(base|slow[0-9.]+)_\d+\.sqlite(\.gz|\.xz)?$", p.name)
        if m:
            groups.setdefault(m.group(1), []).append(p)
    return groups


def pairs(base: list[int], slow: list[int] | None, k: int, n: int, rng: random.Random) -> list[tuple[list, list]]:
    """``n`` comparisons of ``k`` runs per side, distinct runs within each comparison (identical pairs when
    ``slow`` is None: both sides drawn from the base runs)."""
    seen: set = set()
    out: list[tuple[list, list]] = []
    for _ in range(n * 200):
        if len(out) == n:
            break
        if slow is None:
            pick = rng.sample(base, 2 * k)
            a, b = sorted(pick[:k]), sorted(pick[k:])
        else:
            a, b = sorted(rng.sample(base, k)), sorted(rng.sample(slow, k))
        if (tuple(a), tuple(b)) not in seen:
            seen.add((tuple(a), tuple(b)))
            out.append((a, b))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, help="directory of base_* and slow<MS>_* exports")
    ap.add_argument("--capture", type=Path, help="capture the CPU loop into this directory first, then use it")
    ap.add_argument("--base-runs", type=int, default=16)
    ap.add_argument("--slow-runs", type=int, default=8)
    ap.add_argument(
        "--slow-share", default="0.05,0.1,0.2", help="planted sizes for --capture (fractions of the iteration's work)"
    )
    ap.add_argument("--phase", default="policy", help="the phase the slowdown is planted in")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--group", type=int, default=3, help="runs per side of the multi-run comparisons")
    ap.add_argument("--fail-above", type=float, default=5.0)
    ap.add_argument("--min-share", type=float, default=None)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--one-run-noise", type=float, default=None, help="compare's --assumed-noise")
    ap.add_argument("--identical-pairs", type=int, default=None, help="identical comparisons (default: --pairs)")
    ap.add_argument("--verbose", action="store_true", help="one comment line per missed or wrong comparison")
    a = ap.parse_args()
    if a.capture:
        capture(a.capture, a.base_runs, a.slow_runs, a.slow_share.split(","), a.phase)
    d = a.capture or a.runs
    if d is None:
        ap.error("give --runs DIR or --capture DIR")
    evaluate(runs(d), a)
    return 0


def evaluate(groups: dict[str, list[Path]], a: argparse.Namespace) -> None:
    """Gate every comparison, print the table of rates."""
    sel: dict[Path, Selection] = {}
    get = lambda p: sel.setdefault(p, Selection(load(p), domain="nvtxsim"))  # noqa: E731
    s = CompareSettings(skip_first=2, fail_above=a.fail_above, resamples=a.resamples)
    s.confidence = a.confidence
    if a.min_share is not None:
        s.min_share = a.min_share
    if a.one_run_noise is not None:
        s.one_run_noise = a.one_run_noise
    rng = random.Random(0)
    base = groups.get("base", [])
    ids = list(range(len(base)))
    print(
        f"| slowdown in {a.phase} | share of iteration | runs per side | comparisons | flagged | at the right phase | wrong phase flagged |"
    )
    print("|---|---|---|---|---|---|---|")
    it_ms = _iteration_ms(base, get)
    for kind in ["base", *sorted((g for g in groups if g != "base"), key=lambda g: float(g[4:]))]:
        for k in (1, a.group):
            slow = None if kind == "base" else list(range(len(groups[kind])))
            if len(base) < (2 * k if slow is None else k) or (slow is not None and len(slow) < k):
                continue
            flagged = right = wrong = 0
            todo = pairs(ids, slow, k, a.identical_pairs or a.pairs if slow is None else a.pairs, rng)
            for x, y in todo:
                new = [base[i] for i in y] if slow is None else [groups[kind][i] for i in y]
                c = compare([get(base[i]) for i in x], [get(p) for p in new], s)
                reg = {p.phase.split(":")[-1] for p in c.regressions}
                flagged += bool(reg)
                right += a.phase in reg and reg <= {a.phase, "iteration"}
                wrong += bool(reg - {a.phase, "iteration"})
                if a.verbose and (bool(reg) != bool(slow) or reg - {a.phase, "iteration"}):
                    print(f"<!-- {kind} k={k} {[p.name for p in new]}: {_why(c)} -->")
            shares = (Path(base[0]).parent / "SIZES_ARE_SHARES").exists()
            size = "none (identical)" if kind == "base" else f"+{kind[4:]}" + (" of the work" if shares else " ms")
            x = 0.0 if kind == "base" else float(kind[4:])
            share = "" if kind == "base" else f"{x * 100 if shares else x / it_ms * 100:.1f} %"
            print(f"| {size} | {share} | {k} | {len(todo)} | {flagged} | {right if slow else '—'} | {wrong} |")
    print(f"\nbaseline iteration (median over the {len(base)} base runs of each run's median): {it_ms:.3f} ms")


def _why(c) -> str:
    """The rows that regressed (or, when none did, every row's change and interval), for --verbose."""
    rows = c.regressions or [p for p in c.phases if p.shift_pct is not None]
    return "; ".join(
        f"{p.phase} {p.shift_pct:+.1f} [{p.shift_low_pct:+.1f}, {p.shift_high_pct:+.1f}] share {p.share_pct or 0:.1f}"
        for p in rows
    )


def _iteration_ms(paths: list[Path], get) -> float:
    import numpy as np

    from nvtxsim.analysis.iterations import per_iteration

    meds = [float(np.median(per_iteration(get(p), "iteration", skip_first=2).duration)) for p in paths]
    return float(np.median(meds)) / 1e6


if __name__ == "__main__":
    sys.exit(main())
