"""GPU work launched outside every phase: how much, and from which threads.

nsys (and the summary) attribute an op to a range only when the CUDA call that launched it
lies inside the range *on the range's own thread*. Work launched anywhere else, most often
``backward()`` running on PyTorch's autograd thread while ``policy_update`` is open on the
main thread, is in no row of the summary. Saying so keeps a phase's small GPU number from
being misread. :mod:`nvtxsim.analysis.findings` goes further (which phase was open elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nvtxsim.analysis.launches import ops_of
from nvtxsim.analysis.projection import _union_length, select_ranges
from nvtxsim.analysis.selection import Selection

#: Below this share of all GPU busy time the outside work is not worth a line.
MIN_SHARE = 0.01


@dataclass
class OutsideGpu:
    """GPU work whose launching call lies in no reported range of its own thread."""

    launches: int  # CUDA calls that launched it
    ops: int
    gpu_busy_ns: int  # union of the ops' GPU intervals
    total_busy_ns: int  # union over every GPU op of the export, for scale
    threads: dict[str, int] = field(default_factory=dict)  # launching thread → launches, most first

    @property
    def share(self) -> float:
        return self.gpu_busy_ns / self.total_busy_ns if self.total_busy_ns else 0.0


def inside_own_ranges(
    tid: np.ndarray, start: np.ndarray, end: np.ndarray, r_tid: np.ndarray, r_start: np.ndarray, r_end: np.ndarray
) -> np.ndarray:
    """Per call: does a range of the same thread contain [start, end]? (the latest-ending range begun by ``start``)."""
    inside = np.zeros(len(tid), dtype=bool)
    for t in np.unique(tid):
        mine = r_tid == t
        if not mine.any():
            continue
        order = np.argsort(r_start[mine], kind="stable")
        starts, reach = r_start[mine][order], np.maximum.accumulate(r_end[mine][order])
        calls = np.flatnonzero(tid == t)
        k = np.searchsorted(starts, start[calls], side="right") - 1
        inside[calls] = (k >= 0) & (reach[np.maximum(k, 0)] >= end[calls])
    return inside


def outside_calls(detail: Selection) -> np.ndarray:
    """The CUDA calls (indices into Export.api) that launched GPU work and lie in no range of their own thread
    (computed once per selection: the summary's warning and the findings both ask)."""
    return detail.memo.get("outside_calls", _outside_calls, detail)


def _outside_calls(detail: Selection) -> np.ndarray:
    ex, api, link = detail.export, detail.export.api, detail.link
    assert api is not None
    calls = np.flatnonzero(link.count > 0)
    r = ex.ranges
    sel = select_ranges(ex, detail.domain)
    sel = sel[~r.cross_thread[sel]]  # like nsys: a range ended on another thread projects nothing
    inside = inside_own_ranges(
        api.global_tid[calls], api.start[calls], api.end[calls], r.global_tid[sel], r.start[sel], r.end[sel]
    )
    return calls[~inside]


def outside_phases(detail: Selection) -> OutsideGpu | None:
    """The GPU work no reported range of its launching thread contains; None when there is none.

    Computed on either backend (a streamed export reads the columns this needs): one answer whatever the size.
    """
    ex = detail.export
    if ex.api is None or not ex.has_cuda:
        return None
    ops, api = detail.ops, ex.api
    if len(ops) == 0:
        return None
    calls = outside_calls(detail)
    if len(calls) == 0:
        return None
    op = ops_of(detail.link, calls)
    one = lambda idx: int(_union_length(np.zeros(len(idx), dtype=np.int64), ops.start[idx], ops.end[idx], 1)[0])  # noqa: E731
    tids, n = np.unique(api.global_tid[calls], return_counts=True)
    threads = {detail.thread_name(int(t)): int(k) for t, k in sorted(zip(tids, n), key=lambda tn: -tn[1])}
    return OutsideGpu(len(calls), len(op), one(op), one(np.arange(len(ops))), threads)
