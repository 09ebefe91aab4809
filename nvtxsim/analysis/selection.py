"""One loaded export plus the range selection, with the derived data the views share.

Each view (tree, iterations, kernels, ...) asks for what it needs; everything is
computed at most once per report (projection, GPU activity, (range, op) pairs,
nesting, findings) and kept in the selection's :class:`Memo`, so asking for several views
costs little more than asking for one, and an analysis can ask what has been computed
already (:meth:`Memo.is_computed`) to choose the cheaper of two routes.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar, overload

import numpy as np

from nvtxsim.analysis.launches import Launches, OpPairs, Ops, gpu_activity, launches, op_owners, op_pairs
from nvtxsim.analysis.projection import PhaseSummary, RangeGpu, project, select_ranges, summarize
from nvtxsim.analysis.tree import Nesting, RangeTree, build, nest
from nvtxsim.errors import NvtxsimError, float_option
from nvtxsim.export.columns import Export
from nvtxsim.schema import PID_MASK, pid_of, tid_of

__all__ = ["Selection", "Memo", "compile_match", "pid_of", "tid_of"]

T = TypeVar("T")


def compile_match(pattern: str | None) -> re.Pattern | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise NvtxsimError(f"--match {pattern!r}: not a valid regular expression ({exc})") from None


MATCH_SECONDS = "NVTXSIM_MATCH_SECONDS"


def matching(pat: re.Pattern, names: Iterable[object]) -> np.ndarray:
    """Which ``names`` ``pat`` finds something in, within a time budget.

    A pattern that backtracks catastrophically (``(a+)+$``) on a name an export chose (``aaa…a!``)
    would run for years: the matching gets ``NVTXSIM_MATCH_SECONDS`` (default 10) and then ends with
    one error line. Python's regex engine checks for signals while it backtracks, so a timer signal
    stops it; off the main thread (no signals there) the matching is unbounded."""
    seconds = float_option(MATCH_SECONDS, low=0.0, low_open=True)(os.environ.get(MATCH_SECONDS) or "10")
    search = pat.search
    result = None
    previous = _handler()
    try:
        try:
            if previous is not _UNARMED:
                signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))
            result = np.array([search(str(n)) is not None for n in names], dtype=bool)
        finally:
            _disarm(previous)
    except _OutOfTime:  # the timer is one-shot: this happens at most once, possibly while disarming
        _disarm(previous)
    if result is not None:
        return result
    raise NvtxsimError(
        f"--match {pat.pattern!r}: still matching after {seconds:g} s (a pattern with nested repeats such as "
        f"(a+)+ backtracks without end on some names); simplify it, or raise {MATCH_SECONDS}"
    )


class _OutOfTime(Exception):
    pass


def _expire(signum: int, frame: object) -> None:
    raise _OutOfTime


_UNARMED = object()


def _handler() -> object:
    """Install the handler of a timer that raises ``_OutOfTime`` (main thread, no other timer
    running); returns the previous SIGALRM handler, or ``_UNARMED``."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        return _UNARMED
    return signal.signal(signal.SIGALRM, _expire)


def _disarm(previous: object) -> None:
    if previous is not _UNARMED:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)  # type: ignore[arg-type]


class Memo:
    """Values computed at most once, by key: the derived data of one :class:`Selection`.

    Explicit rather than ``functools.cached_property`` so that an analysis can ask whether a value
    is there (a streamed export's GPU ops cost a read of every op: a finding that can do without
    them does, unless another view has read them already) without looking inside another object."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def get(self, key: Hashable, compute: Callable[..., T], *args: Any) -> T:
        """The value of ``key``, computed by ``compute(*args)`` the first time it is asked for."""
        try:
            return self._values[key]
        except KeyError:
            value = self._values[key] = compute(*args)
            return value

    def is_computed(self, key: Hashable) -> bool:
        return key in self._values

    def seed(self, key: Hashable, value: Any) -> None:
        """Give ``key`` a value computed before the selection was made (a rank's projection, :mod:`.ranks`)."""
        self._values[key] = value


class memoised(Generic[T]):
    """A read-only property of a :class:`Selection` computed once, into its :class:`Memo` under the property's name."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.__doc__ = compute.__doc__
        self.name = compute.__name__

    @overload
    def __get__(self, obj: None, owner: type) -> memoised[T]: ...
    @overload
    def __get__(self, obj: Selection, owner: type) -> T: ...
    def __get__(self, obj: Selection | None, owner: type) -> memoised[T] | T:
        if obj is None:
            return self
        return obj.memo.get(self.name, self.compute, obj)

    def __set__(self, obj: Selection, value: T) -> None:
        raise AttributeError(f"Selection.{self.name} is computed once; give it a value with Selection.memo.seed")


class Selection:
    """An export, the ranges selected for the report (domain, name pattern) and its derived data (:attr:`memo`)."""

    def __init__(
        self, export: Export, *, domain: str | None = "nvtxsim", match: str | None = None, gpu: RangeGpu | None = None
    ) -> None:
        self.export = export
        self.domain = domain
        self.match = match
        idx = select_ranges(export, domain)
        pat = compile_match(match)
        if pat is not None and len(idx):
            ok = matching(pat, export.label_names())
            idx = idx[ok[export.ranges.label[idx]]]
        self.selected: np.ndarray = idx
        self.memo = Memo()
        if gpu is not None:
            self.memo.seed("gpu", gpu)

    # ------------------------------------------------------------------ shared analyses

    @memoised
    def gpu(self) -> RangeGpu:
        return project(self.export)

    @memoised
    def report(self) -> PhaseSummary:
        rep = summarize(self.export, self.gpu, domain=self.domain, select=self.selected if self.match else None)
        if self.match and not rep.phases and len(self.export.ranges):
            rep.warnings.append(f"no phase name matches --match {self.match!r}")
        return rep

    @memoised
    def ops(self) -> Ops:
        return gpu_activity(self.export)

    @memoised
    def link(self) -> Launches:
        return launches(self.export, self.ops)

    @memoised
    def pairs(self) -> OpPairs:
        """(range, op) pairs of the selected ranges under nsys's rule (cross-thread ranges left out)."""
        return op_pairs(self.export, self.ops, self.link, self.selected)

    @memoised
    def nesting(self) -> Nesting:
        """Parent and depth of the selected ranges."""
        return nest(self.export, self.selected)

    @memoised
    def tree(self) -> RangeTree:
        return build(self.export, self.selected, self.ops, self.link, nesting=self.nesting)

    @memoised
    def op_owner(self) -> np.ndarray:
        """Per GPU op (``ops``): the selected range that launched it (index into ``Export.ranges``), -1 if none."""
        pos = op_owners(self.export, self.nesting, self.link, len(self.ops))
        return (
            np.where(pos >= 0, self.nesting.ranges[np.maximum(pos, 0)], -1)
            if len(self.nesting.ranges)
            else np.full(len(pos), -1, dtype=np.int64)
        )

    @property
    def has_cuda(self) -> bool:
        return self.export.has_cuda or len(self.ops) > 0

    # ------------------------------------------------------------------ names

    @memoised
    def label_names(self) -> np.ndarray:
        return self.export.label_names()

    @memoised
    def label_index(self) -> dict[tuple[str, str], int]:
        """(domain, name) → label index: built once, so a phase lookup costs no pass over every label."""
        return {d_n: i for i, d_n in enumerate(self.export.labels)}

    def range_label(self, i: int) -> str:
        return str(self.label_names[self.export.ranges.label[i]])

    def thread_name(self, global_tid: int) -> str:
        """``name (tid)``, or just the tid when the export has no OS thread name.

        A process's main thread is called ``main``: nsys often records its name from before the
        ``exec`` (``bash`` for a Python program started from a shell)."""
        if tid_of(global_tid) == pid_of(global_tid):
            return f"main ({tid_of(global_tid)})"
        names = getattr(self.export.extras, "thread_names", {}) or {}
        n = names.get(int(global_tid), "")
        return f"{n} ({tid_of(global_tid)})" if n else f"tid {tid_of(global_tid)}"

    def process_name(self, global_id: int) -> str:
        gpid = int(global_id) & int(PID_MASK)
        names = getattr(self.export.extras, "process_names", {}) or {}
        n = names.get(gpid, "")
        return f"{n} ({pid_of(gpid)})" if n else f"pid {pid_of(gpid)}"

    def gpu_name(self, device_id: int) -> str:
        names = getattr(self.export.extras, "gpu_names", {}) or {}
        n = names.get(int(device_id), "")
        return f"GPU {int(device_id)}: {n}" if n else f"GPU {int(device_id)}"
