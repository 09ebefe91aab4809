#!/usr/bin/env python3
"""Overhead of live phase timing (issue 16) on the demo loop: off / on / sampled, measured in one run.

Why: live timing is meant to stay on for whole training runs, so it must cost at most 1 % of
an iteration when sampled. Every number is a ratio against "off" measured in the same process,
modes interleaved round-robin over several repeats (machine noise hits all modes alike).

    python scripts/bench_live.py                                        # CPU demo loop
    python scripts/bench_live.py --demo-args "--device cuda --num-envs 512" --sample 10

E2E: seconds per iteration of ``DemoEnv.run`` (GPU work finished) per mode; every repeat runs each
mode once, back to back, so the ratio to "off" is taken per repeat (paired) and its median reported,
besides the ratio of the medians and of the best repeats. ``on_cpu`` is live timing without CUDA events
(``gpu=False``): the difference to ``on`` is what the events cost. ``off_again`` runs "off" a second
time in every repeat: how far its ratio strays from 1.0 is the noise of the e2e ratios on that host. Micro: the net cost of one ``with phase`` per mode
(timeit, best of several, minus an empty ``with`` of the same phase with live off), times the
phases per iteration, over the iteration time: the expected overhead, which does not drown in noise.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))

import nvtxsim  # noqa: E402
from nvtxsim.emit import live  # noqa: E402

RESULT_TAG = "BENCH_RESULT "


#: on_cpu: live timing without CUDA events (gpu=False); off_again: "off" once more, the noise floor of the ratios
MODES = ("off", "off_again", "on_cpu", "on", "sampled")


def _mode(name: str, path: str, sample: int, every: int) -> None:
    live.stop()
    if name == "on":
        live.start(path, every=every)
    elif name == "on_cpu":
        live.start(path, every=every, gpu=False)
    elif name == "sampled":
        live.start(path, every=every, sample=sample)


def e2e(
    env, modes: list[str], iterations: int, repeats: int, path: str, sample: int, every: int
) -> dict[str, list[float]]:
    """Seconds per iteration, per mode, per repeat (modes rotated each repeat)."""
    times: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(repeats):
        order = modes[r % len(modes) :] + modes[: r % len(modes)]
        for m in order:
            _mode(m, path, sample, every)
            times[m].append(env.run(iterations) / iterations)
            live.stop()
    return times


def micro(path: str, sample: int, number: int = 5000, repeats: int = 5) -> dict[str, float]:
    """ns of one ``with phase`` block: off, on (measured, CUDA events from a warm pool as in steady state),
    and on an unmeasured iteration of sampled mode."""
    ph = nvtxsim.phase("sim_step")
    ns = {"ph": ph}

    def best(stmt: str) -> float:
        return timeit.timeit(stmt, globals=ns, number=number) / number * 1e9

    out = {}
    live.stop()
    out["off"] = min(best("with ph: pass") for _ in range(repeats))
    out["empty"] = min(best("pass") for _ in range(repeats))
    on = []
    for _ in range(repeats + 1):  # one window per repeat; stop() waits for its events, which refill the pool
        live.start(path, every=10**9)
        nvtxsim.step()
        on.append(best("with ph: pass"))
        live.stop()
    out["on"] = min(on[1:])  # the first repeat fills the pool
    live.start(path, every=10**9, gpu=False)
    nvtxsim.step()
    out["on_cpu"] = min(best("with ph: pass") for _ in range(repeats))
    live.stop()
    live.start(path, every=10**9, sample=sample)
    nvtxsim.step()  # iteration 0: measured
    nvtxsim.step()  # iteration 1: not measured
    out["sampled_unmeasured"] = min(best("with ph: pass") for _ in range(repeats))
    live.stop()
    return out


def phases_per_iteration(env, path: str) -> float:
    records: list[dict] = []
    live.start(path, every=10**9, callback=records.append)
    env.run(4)
    live.stop()
    if not records:
        return 0.0
    rec = records[-1]
    return sum(p["count"] for p in rec["phases"].values()) / max(rec["measured"], 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--demo-args", default="", help="arguments for scripts/demo_env.py (e.g. '--device cuda --num-envs 512')"
    )
    p.add_argument("--iterations", type=int, default=40, help="iterations per timed run")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--sample", type=int, default=10, help="K of the sampled mode (every K-th iteration measured)")
    p.add_argument(
        "--every",
        type=int,
        default=10,
        help="iterations per JSON line (small: windows recycle CUDA events within a run)",
    )
    args = p.parse_args(argv)

    import demo_env

    demo_args = demo_env.parse_args(shlex.split(args.demo_args) + ["--iterations", str(args.iterations)])
    env = demo_env.DemoEnv(demo_args)
    env.warmup(max(demo_args.warmup, 3))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "live.jsonl")
        env.run(args.iterations)  # settle caches and allocators
        modes = list(MODES)
        times = e2e(env, modes, args.iterations, args.repeats, path, args.sample, args.every)
        per_iter = phases_per_iteration(env, path)
        m = micro(path, args.sample)
    env.close()

    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    ratios = {k: [a / b for a, b in zip(times[k], times["off"])] for k in modes}
    paired = {k: statistics.median(v) for k, v in ratios.items()}
    # standard error of a median ~ 1.2533 sigma / sqrt(n): how far the paired ratio can stray by chance
    paired_se = {k: 1.2533 * statistics.stdev(v) / len(v) ** 0.5 if len(v) > 1 else 0.0 for k, v in ratios.items()}
    it_ns = med["off"] * 1e9
    expected = {k: per_iter * (m[k] - m["off"]) / it_ns for k in ("on", "on_cpu", "sampled_unmeasured")}
    expected["sampled"] = (expected["on"] + (args.sample - 1) * expected["sampled_unmeasured"]) / args.sample
    result = {
        "demo_args": args.demo_args,
        "iterations": args.iterations,
        "repeats": args.repeats,
        "sample": args.sample,
        "ms_per_iter_off": round(med["off"] * 1e3, 4),
        "phases_per_iter": round(per_iter, 2),
        "e2e_ratio_paired_median": {k: round(paired[k], 4) for k in modes[1:]},
        "e2e_ratio_paired_se": {k: round(paired_se[k], 4) for k in modes[1:]},
        "e2e_ratio_median": {k: round(med[k] / med["off"], 4) for k in modes[1:]},
        "e2e_ratio_best": {k: round(best[k] / best["off"], 4) for k in modes[1:]},
        "micro_ns_per_phase": {k: round(v, 1) for k, v in m.items()},
        "expected_overhead_pct": {k: round(100 * v, 3) for k, v in expected.items()},
    }
    print(
        f"demo loop {args.demo_args or '(cpu defaults)'}: {result['ms_per_iter_off']} ms/iteration off, "
        f"{per_iter:.1f} phases/iteration, {args.repeats} interleaved repeats of {args.iterations} iterations"
    )
    print(
        f"{'mode':<10}{'median ms/it':>14}{'ratio (paired ± s.e.)':>24}{'ratio (median)':>16}{'ratio (best)':>14}{'ns/phase':>10}{'expected':>10}"
    )
    for k in modes:
        ratio_med = med[k] / med["off"]
        ratio_best = best[k] / best["off"]
        ns = {"off": m["off"], "off_again": m["off"], "on": m["on"], "on_cpu": m["on_cpu"]}.get(
            k, m["sampled_unmeasured"]
        )
        exp = expected.get(k, 0.0)
        pair = f"{paired[k]:.4f} ± {paired_se[k]:.4f}"
        print(
            f"{k:<10}{med[k] * 1e3:>14.3f}{pair:>24}{ratio_med:>16.4f}{ratio_best:>14.4f}{ns:>10.0f}{100 * exp:>9.2f}%"
        )
    print(f"(sampled: every {args.sample}th iteration measured; ns/phase for 'sampled' is an unmeasured iteration's)")
    print(RESULT_TAG + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
