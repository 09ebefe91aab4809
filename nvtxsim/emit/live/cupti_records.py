"""Emit stage, live timing: CUPTI activity records, from a completed buffer to per-phase GPU busy time.

Pure numpy, no CUPTI: :mod:`nvtxsim.emit.live.cupti` hands each completed buffer's bytes here. Reading
the fields of one record object at a time costs 1.7-3.4 µs (cupti-python 13.0.1, measured on the H200),
so 20k kernels per iteration would cost 100+ ms of Python per iteration: the buffer is instead cut into
columns with numpy, one structured view per run of records of one kind (:func:`parse_buffer`).

Attribution: a measured range places a *marker* at its enter and exit, a 4-byte-word memset of
:data:`MARK_BYTES` bytes whose value is the marker's *ticket* (:mod:`nvtxsim.emit.live.cupti_lib`), so
its MEMSET record tells the correlation id CUPTI gave that call. Correlation ids are assigned to API
calls in call order, process-wide, so a kernel or copy whose id lies between a range's opening and
closing marker was launched while the range was open, by any thread: the report's nsys-exact
attribution for the range's own thread plus the ``--view overlap`` attribution of other threads'
launches. A range's busy time is the union of its ops' intervals; a phase's, the sum over its ranges
(the report's ``gpu_busy_total_ns``). Markers are not ops: they count in no phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# CUpti_ActivityKind values (CUPTI 13; cupti.cupti.ActivityKind)
MEMCPY, MEMSET, DRIVER, RUNTIME, CONCURRENT_KERNEL, EXTERNAL_CORRELATION = 1, 2, 4, 5, 10, 39
MARK_WORDS = 13  # a marker memset sets this many 32-bit words: an odd size no framework's own memsets use
MARK_BYTES = 4 * MARK_WORDS
#: (record size, {column: (byte offset, numpy type)}) of the record structs this reads: CUpti_ActivityKernel10,
#: CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivityAPI, CUpti_ActivityExternalCorrelation, as
#: cupti-python 13.0.1's ``activity_*_dtype`` lays them out (:func:`layouts` reads them from the module when it
#: has them).
LAYOUTS: dict[int, tuple[int, dict[str, tuple[int, str]]]] = {
    CONCURRENT_KERNEL: (216, {"start": (16, "<u8"), "end": (24, "<u8"), "corr": (92, "<u4")}),
    MEMCPY: (96, {"bytes": (8, "<u8"), "start": (16, "<u8"), "end": (24, "<u8"), "corr": (44, "<u4")}),
    MEMSET: (
        88,
        {"value": (4, "<u4"), "bytes": (8, "<u8"), "start": (16, "<u8"), "end": (24, "<u8"), "corr": (44, "<u4")},
    ),
    DRIVER: (40, {"cbid": (4, "<u4"), "thread": (28, "<u4"), "corr": (32, "<u4")}),
    RUNTIME: (40, {"cbid": (4, "<u4"), "thread": (28, "<u4"), "corr": (32, "<u4")}),
    EXTERNAL_CORRELATION: (24, {"ext_kind": (4, "<i4"), "ext_id": (8, "<u8"), "corr": (16, "<u4")}),
}
_DTYPE_NAMES = {
    CONCURRENT_KERNEL: ("activity_kernel10_dtype", {"correlation_id": "corr"}),
    MEMCPY: ("activity_memcpy6_dtype", {"correlation_id": "corr"}),
    MEMSET: ("activity_memset4_dtype", {"correlation_id": "corr"}),
    DRIVER: ("activity_api_dtype", {"correlation_id": "corr", "thread_id": "thread"}),
    RUNTIME: ("activity_api_dtype", {"correlation_id": "corr", "thread_id": "thread"}),
    EXTERNAL_CORRELATION: (
        "activity_external_correlation_dtype",
        {"correlation_id": "corr", "external_kind": "ext_kind", "external_id": "ext_id"},
    ),
}


def layouts(cupti: Any = None) -> dict[int, tuple[int, dict[str, tuple[int, str]]]]:
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
    tickets: dict[int, int] = field(default_factory=dict)  # a marker's value (ticket) -> its correlation id
    marks: list[int] = field(default_factory=list)  # every marker's correlation id (pairing in call order)
    external: dict[int, int] = field(default_factory=dict)  # correlation id -> external id (EXTERNAL_CORRELATION)
    kinds: dict[int, int] = field(default_factory=dict)  # records per activity kind (what a buffer held)
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
        self.marks.extend(other.marks)
        self.external.update(other.external)
        for kind, n in other.kinds.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + n
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
        self.marks = [c for c in self.marks if c > corr_limit]
        self.external = {c: e for c, e in self.external.items() if c > corr_limit}

    @property
    def size(self) -> int:
        return sum(c.size for c in self.corr)

    @property
    def max_corr(self) -> int:
        top = max((int(c.max()) for c in self.corr if c.size), default=-1)
        return max(top, max(self.tickets.values(), default=-1))


def parse_buffer(raw: bytes, layout: dict | None = None, expected: int | None = None) -> Ops | None:
    """The ops and markers in one buffer's bytes; None when the bytes are not laid out as ``layout`` (default
    :data:`LAYOUTS`) says: a kind it does not know, a record cut at the end, or a count other than ``expected``."""
    layout = layout or LAYOUTS
    n = len(raw)
    kinds = np.frombuffer(raw, dtype="<i4", count=n // 4)
    runs: dict[int, list[np.ndarray]] = {}
    dtypes: dict[int, np.dtype] = {}
    last: dict[int, int] = {}
    off = count = 0
    while off < n:
        kind = int(kinds[off >> 2])
        spec = layout.get(kind)
        if spec is None or off + spec[0] > n:
            return None
        size = spec[0]
        run = _run_length(kinds, off, size, (n - off) // size, kind, last.get(kind, 0))
        last[kind] = run
        dtype = dtypes.get(kind)
        if dtype is None:
            dtype = dtypes[kind] = _dtype(spec)
        runs.setdefault(kind, []).append(np.ndarray((run,), dtype=dtype, buffer=raw, offset=off))
        off += run * size
        count += run
    if expected is not None and count != expected:
        return None
    return _ops(runs, count)


def _run_length(kinds: np.ndarray, off: int, size: int, fit: int, kind: int, hint: int) -> int:
    """How many records of ``kind`` lie back to back from byte ``off``: their kind fields, ``size`` bytes apart.
    Looks at twice ``hint`` (the last run of this kind: runs between markers repeat) then four times more each
    time: mostly one numpy call per run, and never the whole rest of the buffer per run."""
    base, stride = off >> 2, size >> 2
    run, step = 0, max(2 * hint, 16)
    while run < fit:
        upto = min(fit, run + step)
        other = np.flatnonzero(kinds[base + run * stride : base + upto * stride : stride] != kind)
        if other.size:
            return run + int(other[0])
        run, step = upto, step * 4
    return fit


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


def _ops(runs: dict[int, list[np.ndarray]], records: int) -> Ops:
    ops = Ops(records=records)
    for kind, views in runs.items():
        ops.kinds[kind] = sum(v.size for v in views)

        def col(name: str, views: list[np.ndarray] = views) -> np.ndarray:
            """One field of every run of this kind (never the whole records: a kernel record is 216 bytes)."""
            return np.concatenate([v[name] for v in views]) if len(views) > 1 else views[0][name]

        if kind == CONCURRENT_KERNEL:
            ops.add(col("corr"), col("start"), col("end"), None, False)
        elif kind == MEMCPY:
            ops.add(col("corr"), col("start"), col("end"), col("bytes"), True)
        elif kind == MEMSET:
            corr, nbytes = col("corr"), col("bytes")
            mark = nbytes == MARK_BYTES
            if mark.any():
                ops.tickets.update(zip(col("value")[mark].tolist(), corr[mark].tolist()))
                ops.marks.extend(corr[mark].tolist())
                keep = ~mark
                ops.add(corr[keep], col("start")[keep], col("end")[keep], nbytes[keep], True)
            else:
                ops.add(corr, col("start"), col("end"), nbytes, True)
        elif kind == EXTERNAL_CORRELATION:
            ops.external.update(zip(col("corr").tolist(), col("ext_id").tolist()))
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
