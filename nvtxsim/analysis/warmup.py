"""Warm-up: the first calls of a phase that stand out from that phase's steady state.

A training loop's first iterations pay one-off costs: CUDA loads its modules lazily on first use,
``torch.compile`` compiles, CUDA graphs are captured, the caching allocator grows. Measured with the
rest, they make a healthy phase look CPU-bound (one 1.6 s call beside a 0.3 ms median is most of
its time) and flatten every statistic. Per phase, with its calls in time order and each call's
*self* time (its child phases' time taken out, so a slow child is not charged again to its parent):

* the steady state is the calls after the first tenth (at least one call); its median ``m`` and
  its median absolute deviation ``mad`` say what a normal call costs;
* a call of the first tenth is warm-up when its self time is over
  ``max(m + 8 × 1.4826 × mad, 2 × m, m + 100 µs)``: eight robust standard deviations (jitter on a
  shared host stays well inside), twice the median (for phases whose calls never vary) and 100 µs
  (nothing shorter is worth leaving out); the warm-up calls are the unbroken run of such calls from
  the first or the second call (a branch first taken in the second call), and end at the first
  ordinary call: a later slow call is a stall (``phase_stalls``), not warm-up;
* phases with fewer than :data:`MIN_CALLS` calls have no steady state to tell warm-up from.

The steady state of the loop then leaves out the leading iterations that hold a warm-up call
(:attr:`WarmUp.skip_iterations`, at most half of them) and, individually, the warm-up calls that run
between iterations (a first ``policy_update``: :attr:`WarmUp.outside`). Reasoning for users:
docs/findings.md ("Warm-up and the steady state").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from nvtxsim.analysis.iterations import Iterations
from nvtxsim.analysis.tree import RangeTree
from nvtxsim.export.columns import Export
from nvtxsim.schema import PID_MASK

MIN_CALLS = 10  # fewer calls: no steady state to compare the first ones with
WINDOW = 0.10  # warm-up is looked for in the first tenth of a phase's calls
MAD_FACTOR = 8 * 1.4826  # eight robust standard deviations (1.4826 × MAD estimates σ)
MEDIAN_FACTOR = 2.0
MIN_EXCESS_NS = 100_000  # a call less than 100 µs over the median is never warm-up


@dataclass
class PhaseWarmUp:
    """One phase's warm-up calls (indices into ``Export.ranges``, time order) and what they cost."""

    phase: str
    ranges: np.ndarray
    self_ns: np.ndarray  # the warm-up calls' self times
    calls: int  # all calls of the phase
    median_ns: int  # steady-state self time per call
    threshold_ns: int
    excess_ns: int  # self time of the warm-up calls above the median
    max_ns: int
    iterations: list[int]  # iteration numbers they ran in ([] when between iterations)

    def kept_excess(self, keep: np.ndarray) -> int:
        """The excess of the warm-up calls among ``keep`` (those a report left in)."""
        m = np.isin(self.ranges, keep)
        return int((self.self_ns[m] - self.median_ns).sum())


@dataclass
class WarmUp:
    """The warm-up of a capture, and what the steady state leaves out."""

    phases: list[PhaseWarmUp] = field(default_factory=list)  # costliest first
    skip_iterations: int = 0  # leading iterations holding warm-up calls
    outside: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # warm-up calls between iterations

    @property
    def excess_ns(self) -> int:
        return sum(p.excess_ns for p in self.phases)

    def kept(self, keep: np.ndarray) -> WarmUp:
        """Only the warm-up calls among ``keep`` (those an explicit ``--skip-first`` left in)."""
        out = []
        for p in self.phases:
            m = np.isin(p.ranges, keep)
            if m.any():
                excess = int((p.self_ns[m] - p.median_ns).sum())
                out.append(
                    PhaseWarmUp(
                        p.phase,
                        p.ranges[m],
                        p.self_ns[m],
                        p.calls,
                        p.median_ns,
                        p.threshold_ns,
                        excess,
                        int(p.self_ns[m].max()),
                        p.iterations,
                    )
                )
        return WarmUp(sorted(out, key=lambda p: (-p.excess_ns, p.phase)), 0, self.outside[np.isin(self.outside, keep)])


def threshold(steady: np.ndarray) -> float:
    """Self time above which a call is out of line with the ``steady`` calls (module docstring)."""
    m = float(np.median(steady))
    mad = float(np.median(np.abs(steady - m)))
    return max(m + MAD_FACTOR * mad, MEDIAN_FACTOR * m, m + MIN_EXCESS_NS)


def leading_run(above: np.ndarray) -> np.ndarray:
    """Positions of the leading run of True in ``above``: from the first or second position, unbroken."""
    start = 0 if above[:1].all() else 1
    n = int(np.argmin(np.r_[above[start:], False]))  # length of the run of True from ``start``
    return np.arange(start, start + n, dtype=np.int64)


def _phase_warm_up(name: str, idx: np.ndarray, self_ns: np.ndarray) -> PhaseWarmUp | None:
    """``idx``/``self_ns``: the phase's calls in time order and their self times."""
    n = len(idx)
    if n < MIN_CALLS:
        return None
    w = max(1, math.ceil(n * WINDOW))
    steady = self_ns[w:].astype(np.float64)
    thr = threshold(steady)
    run = leading_run(self_ns[:w] > thr)
    if not len(run):
        return None
    m = float(np.median(steady))
    excess = int(round(float((self_ns[run] - m).sum())))
    return PhaseWarmUp(name, idx[run], self_ns[run], n, int(m), int(thr), excess, int(self_ns[run].max()), [])


def iteration_rows(export: Export, it: Iterations | None) -> np.ndarray:
    """Per range of the export: the iteration row it belongs to (its key instance's row for a key), -1 if none."""
    rows = np.full(len(export.ranges), -1, dtype=np.int64)
    if it is not None:
        rows[it.members] = it.member_row
        rows[it.key_range] = np.arange(len(it))
    return rows


def _holds_keys(export: Export, idx: np.ndarray, it: Iterations | None) -> np.ndarray:
    """Per range: an iteration starts inside it (a rollout around its steps: never left out whole)."""
    if it is None or not len(idx):
        return np.zeros(len(idx), dtype=bool)
    r = export.ranges
    ks = np.sort(r.start[it.key_range])
    lo, hi = np.searchsorted(ks, r.start[idx], side="left"), np.searchsorted(ks, r.end[idx], side="right")
    return hi > lo


def detect(export: Export, tree: RangeTree, ranges: np.ndarray, names: np.ndarray, it: Iterations | None) -> WarmUp:
    """The warm-up of the ``ranges`` (user phases) of ``tree``; ``it``: the iterations of the whole capture.

    ``names``: the display label per label index."""
    r = export.ranges
    pos_mask = np.isin(tree.nesting.ranges, ranges)
    pos = np.flatnonzero(pos_mask)
    idx = tree.nesting.ranges[pos]
    order = np.lexsort((r.start[idx], r.label[idx]))
    idx, self_ns = idx[order], tree.cpu_self[pos[order]].astype(np.int64)
    labels = r.label[idx]
    cut = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1], True]) if len(idx) else np.zeros(1, dtype=np.int64)
    found = []
    for a, b in zip(cut[:-1].tolist(), cut[1:].tolist()):
        p = _phase_warm_up(str(names[labels[a]]), idx[a:b], self_ns[a:b])
        if p is not None:
            found.append(p)
    rows = iteration_rows(export, it)
    skip = 0
    for p in found:
        its = rows[p.ranges]
        p.iterations = sorted({int(it.index[k]) for k in its[its >= 0]}) if it is not None else []
        if (its >= 0).any():
            skip = max(skip, int(its.max()) + 1)
    if it is not None:
        skip = min(skip, len(it) // 2)
    warm = np.concatenate([p.ranges for p in found]) if found else np.zeros(0, dtype=np.int64)
    between = warm[(rows[warm] < 0) & ~_holds_keys(export, warm, it)]
    found.sort(key=lambda p: (-p.excess_ns, p.phase))
    return WarmUp(found, skip, np.sort(between))


def inside(export: Export, idx: np.ndarray, containers: np.ndarray) -> np.ndarray:
    """Per range of ``idx``: it starts inside one of ``containers`` of its process (nested containers allowed)."""
    r = export.ranges
    out = np.zeros(len(idx), dtype=bool)
    if not len(containers) or not len(idx):
        return out
    pid, cpid = r.global_tid[idx] & PID_MASK, r.global_tid[containers] & PID_MASK
    for p in np.unique(cpid).tolist():
        cs = containers[cpid == p]
        cs = cs[np.argsort(r.start[cs], kind="stable")]
        reach = np.maximum.accumulate(r.end[cs])  # the furthest end of any container starting so far
        mine = np.flatnonzero(pid == p)
        j = np.searchsorted(r.start[cs], r.start[idx[mine]], side="right") - 1
        out[mine] = (j >= 0) & (r.start[idx[mine]] <= reach[np.maximum(j, 0)])
    return out
