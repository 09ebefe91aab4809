#!/usr/bin/env python3
"""What ``--stacks`` (NVTXSIM_STACKS) costs a training loop: iteration time with the sampler on vs off, one run.

The loop is a CPU training step shaped like a small RL iteration: 8 phases (two nested), each a few hundred µs
of Python and list work, about 4 ms per iteration, stack depth ~12. Blocks of ``--block`` iterations run
alternately with the sampler off and on (``nvtxsim.emit.stacks.start``/``stop``), ``--rounds`` times, so drift of
a shared machine hits both alike; the ratio is the median on-block CPU time over the median off-block CPU time
(and the median of each on-block over the off-block before it). A
second measure is the cost per phase (enter + exit) of the tracking the sampler needs, on an empty phase.

    python3 scripts/bench_stacks.py                # default rate (200 Hz)
    python3 scripts/bench_stacks.py --hz 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import nvtxsim  # noqa: E402
from nvtxsim.emit import stacks  # noqa: E402

PHASES = [nvtxsim.phase(n) for n in ("policy", "sim_step", "physics", "contacts", "reward", "reset", "observation")]


def _work(n: int, depth: int = 6) -> int:
    if depth:
        return _work(n, depth - 1)
    s = 0
    for i in range(n):
        s += i * i % 13
    return s


def iteration() -> None:
    policy, sim, physics, contacts, reward, reset, obs = PHASES
    with nvtxsim.phase("iteration"):
        with policy:
            _work(4000)
        with sim:
            with physics:
                _work(8000)
            with contacts:
                _work(3000)
        with reward:
            _work(5000)
        with reset:
            _work(1000)
        with obs:
            _work(4000)


def block(n: int) -> float:
    """CPU time per iteration (``process_time``: the sampler's cost is CPU time of this process, and the other
    processes of a shared machine change it much less than wall time)."""
    t0 = time.process_time()
    for _ in range(n):
        iteration()
    return (time.process_time() - t0) / n


def per_phase_ns(n: int = 200_000) -> float:
    p = nvtxsim.phase("empty")
    t0 = time.perf_counter_ns()
    for _ in range(n):
        with p:
            pass
    return (time.perf_counter_ns() - t0) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hz", type=int, default=stacks.DEFAULT_HZ)
    ap.add_argument("--block", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    sidecar = Path(tempfile.mkdtemp()) / "bench.stacks.jsonl"
    block(args.block)  # warm-up
    off, on, ticks = [], [], 0
    for r in range(args.rounds):
        for sampled in (False, True) if r % 2 == 0 else (True, False):  # alternate the order: no first-block bias
            if not sampled:
                off.append(block(args.block))
                continue
            if not stacks.start(sidecar, hz=args.hz):
                print("the sampler did not start", file=sys.stderr)
                return 1
            on.append(block(args.block))
            s = stacks._sampler
            ticks += s.ticks if s is not None else 0
            stacks.stop(write=False)
    empty_off = per_phase_ns()
    stacks.start(sidecar, hz=args.hz)
    empty_on = per_phase_ns()
    stacks.stop(write=False)
    m_off, m_on = statistics.median(off), statistics.median(on)
    paired = statistics.median(b / a for a, b in zip(off, on))  # the two blocks of one round
    print(
        f"iteration CPU time: off {m_off * 1e3:.3f} ms, on {m_on * 1e3:.3f} ms ({args.rounds} rounds of {args.block})"
    )
    print(
        f"ratio on/off at {args.hz} Hz: {m_on / m_off:.4f} ({(m_on / m_off - 1) * 100:+.2f} %), "
        f"median of the rounds' ratios {paired:.4f}; {ticks} samples taken"
    )
    print(
        f"empty phase enter+exit: off {empty_off:.0f} ns, on {empty_on:.0f} ns (+{empty_on - empty_off:.0f} ns per phase)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
