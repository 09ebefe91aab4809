#!/usr/bin/env python3
"""What CUPTI's budget cost a run, measured in the run itself, from scripts/gpu/probes/budget_dump.py's files.

Why: between runs (and hosts) the same training's ms per iteration spread 7-40 % on the H200, far more than the 2 %
to be checked. Within one run the budget switches CUPTI on for blocks started at random, so the steps with CUPTI
on and those with it off are a randomised comparison: (mean on - mean off) × steps on / the run's wall time is the
share GPU timing cost, with its standard error. Short steps (env steps) and long ones (a learning iteration's
update, over 3 × the median) are compared apart: their durations differ 20×.

    python3 scripts/gpu/probes/budget_cost.py DUMP.json [DUMP.json ...]
"""

from __future__ import annotations

import json
import math
import statistics as st
import sys


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path) as fh:
            steps = json.load(fh)["steps"]
        durs = [(b[0] - a[0], a[1]) for a, b in zip(steps, steps[1:])][8:]  # past the probe block
        if len(durs) < 10:
            print(f"{path}: {len(durs)} steps, too few")
            continue
        med = st.median(d for d, _ in durs)
        wall = sum(d for d, _ in durs)
        on_steps = sum(1 for _, s in durs if s)
        print(f"{path}: CUPTI on for {on_steps} of {len(durs)} steps ({100 * on_steps / len(durs):.0f} %)")
        for label, long_ in (("short", False), ("long", True)):
            off = [d for d, s in durs if s == 0 and (d > 3 * med) == long_]
            on = [d for d, s in durs if s != 0 and (d > 3 * med) == long_]
            if len(off) < 5 or len(on) < 5:
                print(f"  {label} steps: {len(on)} on, {len(off)} off: too few to compare")
                continue
            diff = st.fmean(on) - st.fmean(off)
            se = math.sqrt(st.variance(on) / len(on) + st.variance(off) / len(off))
            print(
                f"  {label} steps: {len(on)} on, {len(off)} off (mean {st.fmean(off) / 1e6:.3f} ms): on - off "
                f"{diff / 1e6:+.3f} ± {se / 1e6:.3f} ms, {100 * diff * len(on) / wall:+.2f} ± "
                f"{100 * se * len(on) / wall:.2f} % of the run's wall time"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else __doc__)
