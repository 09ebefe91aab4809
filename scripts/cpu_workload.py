#!/usr/bin/env python3
"""Planted CPU-side problems: a training-loop-shaped program whose every slow phase has a known cause.

Per iteration (``iteration`` around them):

=============  ====================================================================  ======================
phase          what it does                                                          nvtxsim should say
=============  ====================================================================  ======================
policy         0.3 ms of Python, then takes a lock; from ``--lock-at`` another        os_wait (lock), at the
               thread holds that lock ``--lock-ms`` (a lock held by another thread)   iteration it waited
reward         a pure-Python loop, ``--reward-ms`` (about a quarter of the iteration)  cpu_bound
observation    ``observe()`` → ``_features()`` → ``_hot_norm()``: the hot helper two     cpu_bound; --view stacks:
               calls deep does the work (``--obs-ms``)                                 ``_hot_norm`` self
reset          ``time.sleep(--sleep-ms)`` in iterations ``--sleep-at``                 os_wait (sleep), those
                                                                                        iterations
save           writes ``--save-kib`` KiB and fsyncs them (file I/O)                  os_wait (file)
=============  ====================================================================  ======================

Run under nsys 2022.4 (CPU only, as in tests/data/cpu/README.md)::

    NVTXSIM_STACKS=cpu_planted.stacks.jsonl nsys profile -t nvtx,osrt --sample=none --cpuctxsw=none \\
        --export=sqlite -o cpu_planted python3 scripts/cpu_workload.py --truth cpu_planted.truth.txt

``--truth FILE`` writes what was planted (one ``truth: {json}`` line), measured where it can be (the
milliseconds each Python loop took, the iterations the lock was held in).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import nvtxsim  # noqa: E402


def _spin_python(ms: float) -> int:
    """A pure-Python loop of about ``ms`` milliseconds (the work is real, not a busy-wait on the clock)."""
    n, end = 0, time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        for i in range(200):
            n += i * i % 7
    return n


def _hot_norm(xs: list[float], ms: float) -> float:
    """The hot helper: squares and sums, repeated for about ``ms`` milliseconds."""
    s, end = 0.0, time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        for x in xs:
            s += x * x
    return s


def _features(xs: list[float], ms: float) -> float:
    return _hot_norm(xs, ms) + 1.0


def observe(xs: list[float], ms: float) -> float:
    return _features(xs, ms) * 0.5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--reward-ms", type=float, default=8.0)
    ap.add_argument("--obs-ms", type=float, default=6.0)
    ap.add_argument("--sleep-ms", type=float, default=50.0)
    ap.add_argument("--sleep-at", default="10,20,30")
    ap.add_argument("--lock-at", type=int, default=25)
    ap.add_argument("--lock-ms", type=float, default=120.0)
    ap.add_argument("--save-kib", type=int, default=512)
    ap.add_argument("--file", default="cpu_workload.bin")
    ap.add_argument("--truth", help="write the planted truth here")
    args = ap.parse_args()
    sleeps = {int(x) for x in args.sleep_at.split(",") if x.strip()}
    lock, held = threading.Lock(), threading.Event()

    def holder() -> None:  # another thread, outside every phase, holding the lock policy needs
        with lock:
            held.set()
            time.sleep(args.lock_ms / 1e3)

    other = threading.Thread(target=holder, name="lock_holder")
    xs = [float(i) for i in range(256)]
    blob = os.urandom(args.save_kib * 1024)
    spent: dict[str, float] = {"reward": 0.0, "observation": 0.0}
    for it in range(args.iterations):
        if it == args.lock_at:
            other.start()
            held.wait()
        with nvtxsim.phase("iteration"):
            with nvtxsim.phase("policy"):
                _spin_python(0.3)
                with lock:
                    pass
            with nvtxsim.phase("reward"):
                t0 = time.perf_counter()
                _spin_python(args.reward_ms)
                spent["reward"] += time.perf_counter() - t0
            with nvtxsim.phase("observation"):
                t0 = time.perf_counter()
                observe(xs, args.obs_ms)
                spent["observation"] += time.perf_counter() - t0
            with nvtxsim.phase("reset"):
                _spin_python(0.2)
                if it in sleeps:
                    time.sleep(args.sleep_ms / 1e3)
            with nvtxsim.phase("save"):
                with open(args.file, "wb") as fh:
                    fh.write(blob)
                    fh.flush()
                    os.fsync(fh.fileno())
    other.join()
    os.unlink(args.file)
    if args.truth:
        truth = {
            "iterations": args.iterations,
            "cpu_bound": {
                "reward": round(spent["reward"] * 1e3, 1),
                "observation": round(spent["observation"] * 1e3, 1),
            },
            "os_wait": {
                "reset": {"category": "sleep", "iterations": sorted(sleeps), "ms": args.sleep_ms},
                "save": {"category": "file", "kib_per_iteration": args.save_kib},
                "policy": {"category": "lock", "iterations": [args.lock_at], "ms": args.lock_ms},
            },
            "hot_function": {"phase": "observation", "function": "_hot_norm", "callers": ["_features", "observe"]},
        }
        Path(args.truth).write_text("truth: " + json.dumps(truth) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
