"""Emit stage, live timing: CUPTI activity records, from a completed buffer to per-phase GPU busy time.

Pure numpy, no CUPTI: :mod:`nvtxsim.emit.live.cupti` hands each completed buffer here. Reading a field
of a cupti-python record object costs 1.7-3.4 µs (measured on cupti-python 13.0.1: each access goes
through a numpy view), so 20k kernels per iteration would cost 100+ ms of Python per iteration. Instead
the buffer's bytes are copied once (from the first record's address to the end of the last) and cut
into columns with numpy: one structured view per run of records of one kind. Only when that layout is
not understood (a kind of unknown size, a count that does not match) are the objects read one by one.

Attribution: a measured range places a marker (an external correlation id, the range's *ticket*, pushed
around one cheap driver call) at its enter and exit, so CUPTI tells the correlation id of each marker.
Correlation ids are assigned to API calls in call order, process-wide, so a kernel or copy whose id lies
between a range's opening and closing marker was launched while the range was open, by any thread:
the report's nsys-exact attribution for the range's own thread plus the ``--view overlap`` attribution
of other threads' launches. A range's busy time is the union of its ops' intervals; a phase's, the sum over
its ranges (the report's ``gpu_busy_total_ns``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# CUpti_ActivityKind values (CUPTI 13; cupti.cupti.ActivityKind)
MEMCPY, MEMSET, DRIVER, CONCURRENT_KERNEL, EXTERNAL_CORRELATION = 1, 2, 4, 10, 39
#: (record size, {column: (byte offset, numpy type)}) of the record structs this reads: CUpti_ActivityKernel10,
#: CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivityAPI, CUpti_ActivityExternalCorrelation, as
#: cupti-python 13.0.1's ``activity_*_dtype`` lays them out (:func:`layouts` reads them from the module when it
#: has them).
LAYOUTS: dict[int, tuple[int, dict[str, tuple[int, str]]]] = {
    CONCURRENT_KERNEL: (216, {"start": (16, "<u8"), "end": (24, "<u8"), "corr": (92, "<u4")}),
    MEMCPY: (96, {"bytes": (8, "<u8"), "start": (16, "<u8"), "end": (24, "<u8"), "corr": (44, "<u4")}),
    MEMSET: (88, {"bytes": (8, "<u8"), "start": (16, "<u8"), "end": (24, "<u8"), "corr": (44, "<u4")}),
    DRIVER: (40, {"cbid": (4, "<u4"), "thread": (28, "<u4"), "corr": (32, "<u4")}),
    EXTERNAL_CORRELATION: (24, {"ext_kind": (4, "<i4"), "ext_id": (8, "<u8"), "corr": (16, "<u4")}),
}
_DTYPE_NAMES = {
    CONCURRENT_KERNEL: ("activity_kernel10_dtype", {"correlation_id": "corr"}),
    MEMCPY: ("activity_memcpy6_dtype", {"correlation_id": "corr"}),
    MEMSET: ("activity_memset4_dtype", {"correlation_id": "corr"}),
    DRIVER: ("activity_api_dtype", {"correlation_id": "corr", "thread_id": "thread"}),
    EXTERNAL_CORRELATION: (
        "activity_external_correlation_dtype",
        {"correlation_id": "corr", "external_kind": "ext_kind", "external_id": "ext_id"},
    ),
}
_RUN_PROBE = 4096  # records compared at once when looking for the end of a run of one kind


def layouts(cupti: Any) -> dict[int, tuple[int, dict[str, tuple[int, str]]]]:
    """:data:`LAYOUTS`, with the sizes and offsets of the installed cupti-python where it exposes its dtypes (a
    later struct version then still reads right); a dtype that lacks a column keeps the built-in layout."""
    out = dict(LAYOUTS)
    for kind, (attr, renames) in _DTYPE_NAMES.items():
        dt = getattr(cupti, attr, None)
        fields = getattr(dt, "fields", None)
        if dt is None or not fields:
            continue
        cols = {}
        for name, (_off, typ) in LAYOUTS[kind][1].items():
            src = next((k for k, v in renames.items() if v == name), name)
            got = fields.get(src)
            if got is None:
                break
            cols[name] = (int(got[1]), typ)
        else:
            out[kind] = (int(dt.itemsize), cols)
    return out


@dataclass
class Ops:
    """GPU ops (kernels, copies) and marker correlations cut from buffers: the columns attribution needs."""

    corr: list[np.ndarray] = field(default_factory=list)
    start: list[np.ndarray] = field(default_factory=list)
    end: list[np.ndarray] = field(default_factory=list)
    nbytes: list[np.ndarray] = field(default_factory=list)  # 0 for a kernel
    copy: list[np.ndarray] = field(default_factory=list)  # bool: a memcpy or memset
    tickets: dict[int, int] = field(default_factory=dict)  # our external id -> the marker call's correlation id
    #: (CUPTI thread id, correlation id) of each marker call's driver record: the fallback when no external-id
    #: record comes (:meth:`nvtxsim.emit.live.cupti.Collector.by_order`)
    markers: list[tuple[int, int]] = field(default_factory=list)
    records: int = 0

    def add(self, corr: Any, start: Any, end: Any, nbytes: Any, copy: bool) -> None:
        corr = np.asarray(corr, dtype=np.int64)
        if not corr.size:
            return
        self.corr.append(corr)
        self.start.append(np.asarray(start, dtype=np.int64))
        self.end.append(np.asarray(end, dtype=np.int64))
        self.nbytes.append(np.asarray(nbytes, dtype=np.int64) if copy else np.zeros(corr.size, np.int64))
        self.copy.append(np.full(corr.size, copy))

    def merge(self, other: Ops) -> None:
        for name in ("corr", "start", "end", "nbytes", "copy"):
            getattr(self, name).extend(getattr(other, name))
        self.tickets.update(other.tickets)
        self.markers.extend(other.markers)
        self.records += other.records

    def columns(self) -> tuple[np.ndarray, ...]:
        """(corr, start, end, bytes, copy) as single arrays, and kept that way (one concatenation per call)."""
        if not self.corr:
            z = np.zeros(0, np.int64)
            return z, z, z, z, np.zeros(0, bool)
        cols = tuple(np.concatenate(getattr(self, n)) for n in ("corr", "start", "end", "nbytes", "copy"))
        self.corr, self.start, self.end, self.nbytes, self.copy = ([c] for c in cols)
        return cols

    def keep_after(self, corr_limit: int) -> None:
        """Forget the ops and tickets at or below ``corr_limit`` (a resolved window's last closing marker)."""
        corr, start, end, nbytes, copy = self.columns()
        keep = corr > corr_limit
        if not keep.all():
            self.corr, self.start, self.end = [corr[keep]], [start[keep]], [end[keep]]
            self.nbytes, self.copy = [nbytes[keep]], [copy[keep]]
        self.tickets = {t: c for t, c in self.tickets.items() if c > corr_limit}

    @property
    def size(self) -> int:
        return sum(c.size for c in self.corr)

    @property
    def max_corr(self) -> int:
        return max((int(c.max()) for c in self.corr if c.size), default=-1)


def parse_buffer(raw: bytes, expected: int, ext_kind: int, layout: dict | None = None, marker: int = -1) -> Ops | None:
    """The ops and our markers in one buffer's bytes (``expected`` records); None when the bytes are not
    laid out as :data:`LAYOUTS` says (an unknown kind, or a record count other than ``expected``). ``marker``: the
    cbid of the marker function (its driver records are kept as :attr:`Ops.markers`)."""
    layout = layout or LAYOUTS
    n = len(raw)
    kinds = np.frombuffer(raw, dtype="<i4", count=n // 4)
    runs: dict[int, list[np.ndarray]] = {}
    dtypes: dict[int, np.dtype] = {}
    off = count = 0
    while off < n:
        kind = int(kinds[off >> 2])
        spec = layout.get(kind)
        if spec is None or off + spec[0] > n:
            return None
        size = spec[0]
        fit = (n - off) // size
        run, step = 0, 16
        while run < fit:  # the run of records of this kind from here: their kind fields, a stride of `size` apart
            probe = kinds[(off >> 2) + run * (size >> 2) : (off >> 2) + min(fit, run + step) * (size >> 2) : size >> 2]
            other = np.flatnonzero(probe != kind)
            run += int(other[0]) if other.size else probe.size
            if other.size:
                break
            step = min(step * 4, _RUN_PROBE)  # short runs cost little, long ones few probes
        dtype = dtypes.get(kind)
        if dtype is None:
            dtype = dtypes[kind] = _dtype(spec)
        view = np.ndarray((run,), dtype=dtype, buffer=raw, offset=off)
        runs.setdefault(kind, []).append(view)
        off += run * size
        count += run
    if count != expected:
        return None
    return _ops(runs, ext_kind, count, marker)


def _dtype(spec: tuple[int, dict[str, tuple[int, str]]]) -> np.dtype:
    size, cols = spec
    names = list(cols)
    return np.dtype(
        {
            "names": names,
            "formats": [cols[k][1] for k in names],
            "offsets": [cols[k][0] for k in names],
            "itemsize": size,
        }
    )


def _ops(runs: dict[int, list[np.ndarray]], ext_kind: int, records: int, marker: int) -> Ops:
    ops = Ops(records=records)
    for kind, views in runs.items():
        v = np.concatenate(views) if len(views) > 1 else views[0]
        if kind == CONCURRENT_KERNEL:
            ops.add(v["corr"], v["start"], v["end"], None, False)
        elif kind in (MEMCPY, MEMSET):
            ops.add(v["corr"], v["start"], v["end"], v["bytes"], True)
        elif kind == EXTERNAL_CORRELATION:
            mine = v[v["ext_kind"] == ext_kind]
            ops.tickets.update(zip(mine["ext_id"].tolist(), mine["corr"].tolist()))
        elif kind == DRIVER:
            mine = v[v["cbid"] == marker]
            ops.markers.extend(zip(mine["thread"].tolist(), mine["corr"].tolist()))
    return ops


def parse_objects(activities: list, ext_kind: int, marker: int = -1) -> Ops:
    """The slow way, one attribute at a time (cupti-python's record objects): when the bytes cannot be read."""
    kern: list[tuple[int, int, int]] = []
    copies: list[tuple[int, int, int, int]] = []
    ops = Ops(records=len(activities))
    for a in activities:
        kind = int(a.kind)
        if kind == CONCURRENT_KERNEL:
            kern.append((a.correlation_id, a.start, a.end))
        elif kind in (MEMCPY, MEMSET):
            copies.append((a.correlation_id, a.start, a.end, a.bytes))
        elif kind == EXTERNAL_CORRELATION and int(a.external_kind) == ext_kind:
            ops.tickets[int(a.external_id)] = int(a.correlation_id)
        elif kind == DRIVER and int(a.cbid) == marker:
            ops.markers.append((int(a.thread_id), int(a.correlation_id)))
    if kern:
        k = np.array(kern, dtype=np.int64)
        ops.add(k[:, 0], k[:, 1], k[:, 2], None, False)
    if copies:
        c = np.array(copies, dtype=np.int64)
        ops.add(c[:, 0], c[:, 1], c[:, 2], c[:, 3], True)
    return ops


@dataclass(frozen=True, slots=True)
class Busy:
    """One phase's GPU work in a window: busy ns (the union of its ops' intervals), kernels, copies, bytes."""

    ns: int
    kernels: int
    copies: int
    copy_bytes: int


def union_ns(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of the intervals [start, end)."""
    if not start.size:
        return 0
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum(end[order], start[order])
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, bool)
    new[1:] = s[1:] > reach[:-1]
    firsts = np.flatnonzero(new)
    lasts = np.append(firsts[1:] - 1, s.size - 1)
    return int((reach[lasts] - s[firsts]).sum())


def attribute(spans: list[tuple[str, int, int]], ops: Ops) -> dict[str, Busy]:
    """Per phase name, summed over its ranges: each range's ops (launched strictly between its opening and
    closing marker correlation ids), their busy time (the union within the range, as the report's per-range
    busy time) and counts. Ranges of one phase nested in each other count their common ops twice, as the
    report's totals do."""
    corr, start, end, nbytes, copy = ops.columns()
    order = np.argsort(corr, kind="stable")
    c = corr[order]
    bounds = np.array([(lo, hi) for _n, lo, hi in spans], dtype=np.int64).reshape(-1, 2)
    firsts = np.searchsorted(c, bounds[:, 0], side="right")
    pasts = np.searchsorted(c, bounds[:, 1], side="left")
    sums: dict[str, list[int]] = {}
    for (name, _lo, _hi), first, past in zip(spans, firsts.tolist(), pasts.tolist()):
        t = sums.setdefault(name, [0, 0, 0, 0])
        if past <= first:
            continue
        idx = order[first:past]
        cp = copy[idx]
        t[0] += union_ns(start[idx], end[idx])
        t[1] += int(idx.size - cp.sum())
        t[2] += int(cp.sum())
        t[3] += int(nbytes[idx][cp].sum())
    return {name: Busy(*t) for name, t in sums.items()}
