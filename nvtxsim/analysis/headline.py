"""The report's headline: how fast the loop ran and where its time went, before any table.

What a profiler user looks for first: how many iterations, how long a typical one took, how many
ran per second (env-steps per second when the number of environments is known) and which phase
holds the most time. The biggest phase is by CPU *self* time (the range's time outside its child
ranges): by inclusive time the outermost range (``iteration``) would always win and say nothing.

The rate is measured start to start of the loop's key range on each thread (``(n - 1) / (last start
- first start)``, summed over threads that run the loop side by side, such as ranks): it includes the
time between iterations, which the key range's own duration leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nvtxsim.analysis.projection import _union_length
from nvtxsim.errors import NvtxsimError

if TYPE_CHECKING:
    from nvtxsim.analysis.selection import Selection


@dataclass(frozen=True)
class Headline:
    key: str | None  # the phase whose ranges are the iterations (None: no iterations found)
    iterations: int
    median_ns: int  # median duration of the key range
    per_s: float | None  # iterations per second, start to start (None: fewer than two per thread)
    env_steps_per_s: float | None  # env steps per second (None: environments per step unknown)
    biggest: str | None  # the phase with the most CPU self time
    biggest_self_ns: int
    biggest_share: float  # of the CPU self time of every selected range


def cpu_self_by_label(detail: Selection) -> np.ndarray:
    """Per label: CPU self time summed over the selected ranges (inclusive time minus the union of its
    children's), from the nesting alone (no CUDA column is read)."""
    r, nesting = detail.export.ranges, detail.nesting
    idx, parent = nesting.ranges, nesting.parent
    start, end = r.start[idx], r.end[idx]
    kids = np.flatnonzero(parent >= 0)
    p = parent[kids]
    covered = _union_length(p, np.maximum(start[kids], start[p]), np.minimum(end[kids], end[p]), len(idx))
    self_ns = (end - start) - covered
    return np.bincount(r.label[idx], weights=self_ns, minlength=len(detail.export.labels))


def _rate(detail: Selection, key_range: np.ndarray, start: np.ndarray) -> float | None:
    tid = detail.export.ranges.global_tid[key_range]
    rate = 0.0
    for t in np.unique(tid).tolist():
        s = np.sort(start[tid == t])
        if len(s) >= 2 and s[-1] > s[0]:
            rate += (len(s) - 1) * 1e9 / float(s[-1] - s[0])
    return rate or None


def headline(
    detail: Selection, by: str | None = None, *, skip_first: int = 0, envs: float | None = None
) -> Headline | None:
    """The headline of the selected ranges (None when none is selected)."""
    from nvtxsim.analysis.iterations import loop_rates, per_iteration

    if not len(detail.selected):
        return None
    self_ns = cpu_self_by_label(detail)
    total = float(self_ns.sum())
    big = int(np.argmax(self_ns))
    biggest = str(detail.label_names[big]) if total > 0 else None
    share = float(self_ns[big]) / total if total > 0 else 0.0
    try:
        it = per_iteration(detail, by, skip_first=skip_first)
    except NvtxsimError:  # no iteration range: the headline still names the biggest phase
        it = None
    if it is None or len(it) == 0:
        return Headline(None, 0, 0, None, None, biggest, int(self_ns[big]), share)
    per_s = _rate(detail, it.key_range, it.start)
    rates = loop_rates(detail, it, envs)
    steps = rates.envs * float(np.mean(rates.steps)) * per_s if rates.envs and per_s else None
    return Headline(it.key, len(it), int(np.median(it.duration)), per_s, steps, biggest, int(self_ns[big]), share)
