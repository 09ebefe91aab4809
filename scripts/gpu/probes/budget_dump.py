#!/usr/bin/env python3
"""Probe (H200, issue 25): what CUPTI's cost budget decided at each step, and what each GPU-timed range got.

Why: a budgeted run of Isaac Lab 3.0 Cartpole read sim_step's busy time 10-15x nsys's while the full mode (CUPTI
on at every iteration) was within 5 %. This wraps ``python3 -m nvtxsim run ...`` in the same process and writes,
at exit, one JSON file:

- ``steps``: per step() the budget saw, ``[t_ns, state, spent_ns]`` (state 0 off, 1 quiet = CUPTI on without
  markers, 2 timed): the blocks as they ran, and the wall time of each step by state. The states are chosen at
  random, so the mean step with CUPTI on minus the mean step with it off is an unbiased in-process cost
  estimate (iterations of one kind compared: the wrapper prints it per kind of step duration);
- ``ranges``: per GPU-timed range as attributed, ``[window, name, ops, busy_ns, span_ns, longest_ns, kernels]``
  in call order: which ranges read high, and whether one long record or many make it.

    python3 scripts/gpu/probes/budget_dump.py OUT.json -- scripts/gpu/isaaclab3/train.py --task ... (nvtxsim run's args)
"""

from __future__ import annotations

import atexit
import json
import runpy
import sys
import time


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    out, args = sys.argv[1], sys.argv[3:]
    import numpy as np

    from nvtxsim.emit.live import budget as bm
    from nvtxsim.emit.live import cupti_records as recs

    steps: list[list[int]] = []
    ranges: list[list] = []
    windows = [0]
    decide, attribute = bm.GpuBudget.decide, recs.attribute

    def logged_decide(self: bm.GpuBudget, now_ns: int, spent_ns: int, allowed: bool = True) -> int:
        state = decide(self, now_ns, spent_ns, allowed)
        steps.append([now_ns, int(state), int(spent_ns)])
        return state

    def logged_attribute(spans: list, ops: recs.Ops) -> dict:
        result = attribute(spans, ops)
        try:
            corr, start, end, _nbytes, copy = ops.columns()
            order = np.argsort(corr, kind="stable")
            c = corr[order]
            for name, lo, hi in spans:
                idx = order[np.searchsorted(c, lo, side="right") : np.searchsorted(c, hi, side="left")]
                if idx.size == 0:
                    ranges.append([windows[0], name, 0, 0, 0, 0, 0])
                    continue
                s, e = start[idx], end[idx]
                busy = recs.union_ns(s, e)
                ranges.append(
                    [
                        windows[0],
                        name,
                        int(idx.size),
                        int(busy),
                        int(e.max() - s.min()),
                        int((e - s).max()),
                        int(idx.size - copy[idx].sum()),
                    ]
                )
        except Exception as exc:  # a probe must not change what it observes
            ranges.append([windows[0], f"error: {exc}", 0, 0, 0, 0, 0])
        windows[0] += 1
        return result

    bm.GpuBudget.decide = logged_decide  # type: ignore[method-assign]
    recs.attribute = logged_attribute

    def write() -> None:
        with open(out, "w") as fh:
            json.dump({"args": args, "written": time.time(), "steps": steps, "ranges": ranges}, fh)
        summarise(steps, ranges)

    atexit.register(write)  # registered before nvtxsim's own: runs after live timing's last window
    sys.argv = ["nvtxsim", "run", *args]
    runpy.run_module("nvtxsim", run_name="__main__", alter_sys=True)


def summarise(steps: list[list[int]], ranges: list[list]) -> None:
    """Per state, the steps' wall time (short steps and long ones apart: env steps vs an update's), and per phase the
    GPU-timed ranges' busy time by position in their block (first timed iteration after a switch or later)."""
    import statistics

    durs = [(b[0] - a[0], a[1]) for a, b in zip(steps, steps[1:])]
    if durs:
        med = statistics.median(d for d, _ in durs)
        for label, keep in (("short", lambda d: d <= 3 * med), ("long", lambda d: d > 3 * med)):
            by = {st: [d for d, s in durs if s == st and keep(d)] for st in (0, 1, 2)}
            parts = [
                f"{('off', 'quiet', 'timed')[st]} n={len(v)} mean={statistics.fmean(v) / 1e6:.3f} ms"
                for st, v in by.items()
                if v
            ]
            print(f"budget_dump: {label} steps: " + ", ".join(parts), file=sys.stderr)
    by_phase: dict[str, list[int]] = {}
    for _w, name, _n, busy, *_rest in ranges:
        by_phase.setdefault(name, []).append(busy)
    for name, v in sorted(by_phase.items()):
        print(
            f"budget_dump: {name}: {len(v)} ranges, busy median {statistics.median(v) / 1e3:.1f} us, "
            f"mean {statistics.fmean(v) / 1e3:.1f} us, max {max(v) / 1e3:.1f} us",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
