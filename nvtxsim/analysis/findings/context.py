"""What every finding kind measures against: the report's nesting, iterations, reference time and owners.

Where time goes is decided per *innermost* phase, so a problem is reported once, at the
phase that contains it, not again at every enclosing phase (``iteration``): a CUDA call
belongs to the innermost kept range around it on its thread (:meth:`Context.owner`), and a
phase's *self* numbers are its ranges' numbers minus their child ranges'. Costs are ns over
the capture (after ``skip_first``), and per iteration when the loop's iterations are known
(the ``by`` range).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from nvtxsim.analysis import warmup
from nvtxsim.analysis.findings.calls import copy_calls, notable_calls
from nvtxsim.analysis.findings.model import MIN_SHARE, Finding, severity
from nvtxsim.analysis.iterations import Iterations, per_iteration
from nvtxsim.analysis.launches import innermost
from nvtxsim.analysis.projection import _union_length
from nvtxsim.analysis.selection import Selection
from nvtxsim.analysis.tree import RangeTree, build
from nvtxsim.analysis.warmup import WarmUp, inside
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import ApiCalls, Export
from nvtxsim.schema import PID_MASK

T = TypeVar("T")

#: NVTX domains of libraries (CUB/Thrust, NCCL, cuBLAS, cuDNN …) that annotate their own calls. Their
#: ranges are no phase of the program: under ``--domain all`` a finding there could not be acted on
#: (the user does not write CUB's radix sort), so the findings see through them, to the program's
#: phase that called the library.
LIBRARY_DOMAINS = frozenset(
    d.lower()
    for d in (
        "CCCL",
        "NCCL",
        "cuBLAS",
        "cuBLASLt",
        "cuDNN",
        "cuFFT",
        "cuSOLVER",
        "cuSPARSE",
        "NVSHMEM",
        "TensorRT",
        "nvJPEG",
        "NPP",
    )
)


def _has_iterations(detail: Selection, by: str | None) -> bool:
    try:
        return len(detail.selected) > 0 and len(per_iteration(detail, by)) > 0
    except NvtxsimError:
        return False


def steady_skip(detail: Selection, by: str | None) -> int:
    """The leading iterations the steady state leaves out as warm-up (the findings' default), once per selection."""
    return detail.memo.get(("steady_skip", by), lambda: Context(detail, by, None).skip_first)


def user_ranges(export: Export, ranges: np.ndarray) -> np.ndarray:
    """``ranges`` without those of library domains (LIBRARY_DOMAINS)."""
    dom = export.ranges.domain
    if not len(ranges) or not len(dom):
        return ranges
    names = set(dom[ranges].tolist())  # a few distinct domains: a set, not a sort of every range's name
    lib = [d for d in names if str(d).lower() in LIBRARY_DOMAINS]
    return ranges[~np.isin(dom[ranges], lib)] if lib else ranges


class Context:
    """Shared per-report data: nesting, iterations (keyed on ``by``, the first ``skip_first`` left out), the
    kept ranges, the reference time, the owner of a call.

    ``threads``: whether the kinds that join every CUDA call to its GPU work (other threads' work)
    run; None = yes (either backend), False = no."""

    def __init__(
        self, detail: Selection, by: str | None = None, skip_first: int | None = 0, threads: bool | None = None
    ) -> None:
        self.d = detail
        self.ex = detail.export
        self.r = detail.export.ranges
        self.threads = threads
        self._shared: dict[str, Any] = {}
        sel = self.phases = user_ranges(detail.export, detail.selected)
        self.by = by
        #: ``skip_first`` None: the steady state (the warm-up found left out); an int: that many iterations.
        self.auto = skip_first is None
        self.outside_warm_up = self.warm_up.outside if self.auto else np.zeros(0, dtype=np.int64)
        skip = self.warm_up.skip_iterations if skip_first is None else skip_first
        self.skip_first = skip
        try:
            self.it: Iterations | None = per_iteration(detail, by, skip_first=skip) if len(detail.selected) else None
        except NvtxsimError:
            self.it = None
        if self.it is not None and len(self.it) == 0:
            self.it = None
        #: ``skip_first`` left no iteration of the loop: the findings are empty, never the warm-up put back.
        self.skipped_everything = skip > 0 and self.it is None and _has_iterations(detail, by)
        # Ranges of skipped (warm-up) iterations are left out, and warm-up calls between iterations; other
        # ranges between iterations stay.
        drop = self._in_skipped(sel) if self.it is not None and self.it.skipped else np.zeros(len(sel), dtype=bool)
        if len(self.outside_warm_up):
            drop |= inside(self.ex, sel, self.outside_warm_up)
        self.ranges = sel[~drop]

    @cached_property
    def all_iterations(self) -> Iterations | None:
        """The iterations of the whole capture (none skipped), None when the loop has none."""
        try:
            it = per_iteration(self.d, self.by) if len(self.d.selected) else None
        except NvtxsimError:
            return None
        return it if it is not None and len(it) else None

    @cached_property
    def warm_up(self) -> WarmUp:
        """The capture's warm-up (over every call, whatever is skipped); computed once per selection and ``by``."""

        def compute() -> WarmUp:
            return warmup.detect(self.ex, self.tree, self.phases, self.d.label_names, self.all_iterations)

        return self.d.memo.get(("warm_up", self.by), compute)

    def _in_skipped(self, idx: np.ndarray) -> np.ndarray:
        """Per range: it starts inside a skipped instance of the key range of its process."""
        it, r = self.it, self.r
        assert it is not None
        keys = np.flatnonzero(r.label == r.label[it.key_range[0]])
        keys = keys[~np.isin(keys, it.key_range)]
        out = np.zeros(len(idx), dtype=bool)
        pid, kpid = r.global_tid[idx] & PID_MASK, r.global_tid[keys] & PID_MASK
        for p in np.unique(kpid).tolist():  # per process: the last skipped instance starting at or before the range
            ks = keys[kpid == p][np.argsort(r.start[keys[kpid == p]], kind="stable")]
            mine = np.flatnonzero(pid == p)
            j = np.searchsorted(r.start[ks], r.start[idx[mine]], side="right") - 1
            out[mine] = (j >= 0) & (r.start[idx[mine]] <= r.end[ks[np.maximum(j, 0)]])
        return out

    def shared(self, name: str, compute: Callable[[], T]) -> T:
        """A value several kinds use (the bound kinds' per-phase loads), computed once per report."""
        if name not in self._shared:
            self._shared[name] = compute()
        return self._shared[name]

    @cached_property
    def calls(self) -> ApiCalls:
        return notable_calls(self.d)

    @cached_property
    def copy_calls(self) -> np.ndarray:
        """Per host copy of the export: the position in :attr:`calls` of its launching call, -1 if none."""
        hc = self.host_copies
        return copy_calls(self.ex, self.calls, hc) if hc is not None else np.zeros(0, dtype=np.int64)

    @property
    def host_copies(self) -> Any:
        """H→D and D→H memcpys with their memory kinds (``export.extras.HostCopies``), None if not in the export."""
        return getattr(self.ex.extras, "host_copies", None)

    @cached_property
    def tree(self) -> RangeTree:
        """CPU self times over the report's shared nesting (the GPU columns of the tree are not needed here);
        without the library ranges, when the selection has some (their time is their caller's)."""
        if len(self.phases) == len(self.d.selected):
            return build(self.ex, self.d.selected, nesting=self.d.nesting)
        return build(self.ex, self.phases)

    @cached_property
    def reference_ns(self) -> int:
        """Wall time inside the kept ranges (union over threads): what the shares are of."""
        if len(self.ranges) == 0:
            return 0
        r = self.r
        return int(
            _union_length(np.zeros(len(self.ranges), dtype=np.int64), r.start[self.ranges], r.end[self.ranges], 1)[0]
        )

    @property
    def iterations(self) -> int | None:
        return len(self.it) if self.it is not None else None

    def share(self, cost: float) -> float:
        return float(cost) / self.reference_ns if self.reference_ns else 0.0

    def per_iter(self, cost: float) -> int | None:
        return int(round(cost / len(self.it))) if self.it is not None else None

    @cached_property
    def kept(self) -> np.ndarray:
        """Per tree position: the range is selected and inside the kept iterations."""
        mask = np.zeros(len(self.r), dtype=bool)
        mask[self.ranges] = True
        return mask[self.tree.nesting.ranges]

    def owner(self, start: np.ndarray, end: np.ndarray, tid: np.ndarray) -> np.ndarray:
        """Per call: the innermost kept range (index into Export.ranges) around it on its thread, -1 if none."""
        pos = innermost(self.ex, self.tree.nesting, start, end, tid)
        ok = pos >= 0
        ok[ok] = self.kept[pos[ok]]
        return np.where(ok, self.tree.nesting.ranges[np.maximum(pos, 0)], -1)

    def innermost_range(self, start: np.ndarray, end: np.ndarray, tid: np.ndarray) -> np.ndarray:
        """Per call: the innermost phase (index into Export.ranges) around it on its thread, kept or not, -1 if none."""
        pos = innermost(self.ex, self.tree.nesting, start, end, tid)
        return np.where(pos >= 0, self.tree.nesting.ranges[np.maximum(pos, 0)], -1)

    @cached_property
    def whole_reference_ns(self) -> int:
        """Wall time inside every phase of the capture, warm-up and skipped iterations included."""
        r = self.r
        if not len(self.phases):
            return 0
        return int(
            _union_length(np.zeros(len(self.phases), dtype=np.int64), r.start[self.phases], r.end[self.phases], 1)[0]
        )

    @cached_property
    def off_loop(self) -> set[str]:
        """Phases that never run on the thread of the loop's key range (a side thread's work runs alongside the
        loop, so its time is not the iteration's: its findings are low). Empty when the iterations are unknown."""
        if self.it is None:
            return set()
        r = self.r
        loop = np.isin(r.global_tid[self.ranges], r.global_tid[self.it.key_range])
        on, all_ = (set(np.unique(r.label[self.ranges[m]]).tolist()) for m in (loop, np.ones(len(loop), dtype=bool)))
        return {str(self.d.label_names[k]) for k in all_ - on}

    def label_of(self, phase: str) -> int:
        """The label index of a phase name (``domain:name``)."""
        return int(np.flatnonzero(self.d.label_names == phase)[0])

    def by_label(self, owners: np.ndarray) -> dict[str, np.ndarray]:
        """Group call positions by the label of their owning range (owners -1 dropped)."""
        pos = np.flatnonzero(owners >= 0)
        labels = self.r.label[owners[pos]]
        order = np.argsort(labels, kind="stable")
        uniq, first = np.unique(labels[order], return_index=True)
        groups = np.split(pos[order], first[1:])
        return {str(self.d.label_names[lab]): g for lab, g in zip(uniq.tolist(), groups)}

    def finding(
        self,
        phase: str,
        kind: str,
        cost: float,
        evidence: dict,
        advice: str,
        *,
        min_share: float = MIN_SHARE,
        sev: str | None = None,
    ) -> Finding | None:
        """A finding of ``kind`` at ``phase`` costing ``cost`` ns, None when that is under ``min_share`` of the reference time."""
        share = self.share(cost)
        if share < min_share:
            return None
        evidence = {"share_of_time": round(share, 4), **evidence}
        if phase in self.off_loop:
            evidence["off_loop_thread"] = True
            sev = "low"
        return Finding(phase, kind, sev or severity(share), int(round(cost)), self.per_iter(cost), evidence, advice)


def blocked(owner: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """Time inside the owning ranges covered by the calls (union per range: nested driver calls once)."""
    if len(owner) == 0:
        return 0
    codes, inv = np.unique(owner, return_inverse=True)
    return int(_union_length(inv.reshape(-1), start, end, len(codes)).sum())
