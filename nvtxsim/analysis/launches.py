"""The join of CUDA API calls to GPU ops, and of calls to the ranges around them: every attribution starts here.

* :func:`launches` joins calls to ops on (process, correlation id), once;
* :func:`call_windows` / :func:`contained` find the calls wholly inside each range on its thread;
* :func:`op_pairs` gives the explicit (range, op) pairs the detail views need (kernels,
  copies, queue delay, per-GPU splits); :func:`nvtxsim.analysis.projection.project` reduces
  the same join straight to per-range numbers;
* :func:`innermost` / :func:`op_owners` give the one range that launched each op (the
  innermost range around its call), for the tree's self time, the timeline and the frames.

The rule is nsys's: an op belongs to a range when the whole CUDA API call that launched it
lies inside the range on the range's thread. Graph-level CUDA graph executions
(``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``) are joined like kernels, so graph launches are
attributed however the graph was traced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from nvtxsim.export.columns import Export, distinct
from nvtxsim.schema import COPY_KINDS, GRAPH, MEMCPY, MEMSET, PID_MASK

_VERSION_SUFFIX = re.compile(r"_v\d+$")
_GRAPH_LAUNCH = re.compile(r"^(cudaGraphLaunch|cuGraphLaunch)$")


def api_name(raw: str) -> str:
    """CUDA API name without its ``_vNNNN`` version suffix, as nsys reports print it."""
    return _VERSION_SUFFIX.sub("", raw)


def is_graph_launch(name: str) -> bool:
    return bool(_GRAPH_LAUNCH.match(api_name(name)))


def unique_pairs(a: np.ndarray, b: np.ndarray, *, return_index: bool = False, return_inverse: bool = False):
    """``np.unique`` of the rows (a, b), sorted the same way, but through one int64 key (several times faster).

    Returns the (n, 2) array of unique pairs, then the index and/or inverse arrays when asked for.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if len(a) == 0:
        out: list[np.ndarray] = [np.zeros((0, 2), dtype=np.int64)]
        out += [np.zeros(0, dtype=np.int64)] * (int(return_index) + int(return_inverse))
        return tuple(out) if len(out) > 1 else out[0]
    a0, b0 = int(a.min()), int(b.min())
    span_b = int(b.max()) - b0 + 1
    span_a = int(a.max()) - a0 + 1
    if span_a * span_b < (1 << 62):
        key = (a - a0) * span_b + (b - b0)
        # Sort-based (np.unique's hash path is slow on millions of distinct keys).
        order = np.argsort(key, kind="stable")
        sk = key[order]
        flag = np.r_[True, sk[1:] != sk[:-1]]
        u = sk[flag]
        pairs = np.stack([u // span_b + a0, u % span_b + b0], axis=1)
        rest = []
        if return_index:
            rest.append(order[flag])  # stable sort: the first occurrence
        if return_inverse:
            inv = np.empty(len(key), dtype=np.int64)
            inv[order] = np.cumsum(flag) - 1
            rest.append(inv)
    else:
        # The stubs overload np.unique on Literal flags only; these are plain bools.
        res = np.unique(np.stack([a, b], axis=1), axis=0, return_index=return_index, return_inverse=return_inverse)  # type: ignore[call-overload]
        pairs = res[0] if isinstance(res, tuple) else res
        rest = list(res[1:]) if isinstance(res, tuple) else []
    rest = [x.reshape(-1) for x in rest]
    return (pairs, *rest) if rest else pairs


@dataclass
class Ops:
    """All GPU activity of an export: kernels, memcpys, memsets and graph-level executions."""

    start: np.ndarray
    end: np.ndarray
    global_pid: np.ndarray
    correlation_id: np.ndarray
    kind: np.ndarray  # int8: KERNEL, MEMCPY, MEMSET, GRAPH
    device_id: np.ndarray
    stream_id: np.ndarray
    bytes: np.ndarray
    copy_kind: np.ndarray
    name_id: np.ndarray  # kernel name StringIds id; graph id for GRAPH rows; -1 otherwise

    def __len__(self) -> int:
        return len(self.start)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start


def gpu_activity(export: Export) -> Ops:
    """Kernels, memcpys and memsets of the export plus its graph-level graph executions."""
    z = np.zeros(0, dtype=np.int64)
    parts = []
    g = export.gpu
    if g is not None and len(g):
        parts.append(
            (
                g.start,
                g.end,
                g.global_pid,
                g.correlation_id,
                g.kind.astype(np.int8),
                g.device_id,
                g.stream_id,
                g.bytes,
                g.copy_kind.astype(np.int64),
                g.name_id,
            )
        )
    gx = getattr(export.extras, "graph_execs", None)
    if gx is not None and len(gx):
        n = len(gx)
        parts.append(
            (
                gx.start,
                gx.end,
                gx.global_pid,
                gx.correlation_id,
                np.full(n, GRAPH, dtype=np.int8),
                gx.device_id,
                gx.stream_id,
                np.zeros(n, dtype=np.int64),
                np.full(n, -1, dtype=np.int64),
                gx.graph_id,
            )
        )
    if not parts:
        return Ops(z, z, z, z, np.zeros(0, dtype=np.int8), z, z, z, z, z)
    cols = [np.concatenate(c) for c in zip(*parts)]
    return Ops(*cols)


def contained(
    r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray, c_start: np.ndarray, c_end: np.ndarray, c_tid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """All (range, call) index pairs where the call lies wholly inside the range on the range's thread.

    Calls are sorted per thread by start; each range finds its candidates with two
    ``searchsorted`` and keeps those that also end inside. Pairs come sorted by range.
    """
    parts = list(contained_chunks(r_start, r_end, r_tid, c_start, c_end, c_tid))
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (
        parts[0] if len(parts) == 1 else (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    )


def contained_chunks(
    r_start: np.ndarray,
    r_end: np.ndarray,
    r_tid: np.ndarray,
    c_start: np.ndarray,
    c_end: np.ndarray,
    c_tid: np.ndarray,
    *,
    budget: int | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`contained`'s pairs in chunks of consecutive ranges holding about ``budget`` candidate
    calls each (None: one chunk), so that memory stays bounded on large exports."""
    if len(r_start) == 0 or len(c_start) == 0:
        return
    order = np.lexsort((c_start, c_tid))
    lo, hi = call_windows(r_start, r_end, r_tid, c_tid[order], c_start[order])
    lengths = np.maximum(hi - lo, 0)
    for chunk in chunks(lengths, budget) if budget else [slice(0, len(lengths))]:
        seg, pos = expand_segments(lo[chunk], lengths[chunk])
        rng = seg + chunk.start
        call = order[pos]
        keep = c_end[call] <= r_end[rng]
        yield rng[keep], call[keep]


def chunks(lengths: np.ndarray, budget: int) -> Iterator[slice]:
    """Slices of consecutive segments whose total length stays near ``budget``."""
    if len(lengths) == 0:
        return
    csum = np.cumsum(lengths)
    lo = 0
    while lo < len(lengths):
        base = csum[lo - 1] if lo else 0
        hi = int(np.searchsorted(csum, base + budget, side="right"))
        hi = max(hi, lo + 1)
        yield slice(lo, hi)
        lo = hi


def expand_segments(offsets_lo: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments [lo, lo+len): (segment index per element, element index)."""
    total = int(lengths.sum())
    seg = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    if total == 0:
        return seg, np.zeros(0, dtype=np.int64)
    firsts = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=np.int64) - np.repeat(firsts, lengths)
    return seg, np.repeat(offsets_lo, lengths) + within


def call_windows(
    r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray, c_tid: np.ndarray, c_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per range, the calls ``[lo, hi)`` of its thread that start inside it.

    ``c_tid``/``c_start`` are sorted by (thread, start); a range on a thread without calls
    gets an empty window. The caller keeps the candidates that also end inside the range.
    """
    lo = np.zeros(len(r_start), dtype=np.int64)
    hi = np.zeros(len(r_start), dtype=np.int64)
    if len(r_start) == 0 or len(c_tid) == 0:
        return lo, hi
    thread_bounds = np.searchsorted(c_tid, distinct(c_tid))
    thread_ids = c_tid[thread_bounds]
    thread_bounds = np.r_[thread_bounds, len(c_tid)]
    t = np.minimum(np.searchsorted(thread_ids, r_tid), len(thread_ids) - 1)
    on_thread = thread_ids[t] == r_tid
    for k in distinct(t[on_thread]):
        sel = np.flatnonzero(on_thread & (t == k))
        a, b = thread_bounds[k], thread_bounds[k + 1]
        cs = c_start[a:b]
        lo[sel] = a + np.searchsorted(cs, r_start[sel], side="left")
        hi[sel] = a + np.searchsorted(cs, r_end[sel], side="right")
    return lo, hi


def launch_key(pid_code: np.ndarray, corr: np.ndarray) -> np.ndarray:
    """One int64 per launch: a small code of the process above the correlation id (ids repeat across processes)."""
    return (pid_code.astype(np.int64) << 32) | (corr.astype(np.int64) & 0xFFFFFFFF)


@dataclass
class Launches:
    """GPU ops per CUDA API call: ``op_order[lo[c]:hi[c]]`` are the ops call ``c`` launched.

    The ops are grouped by launch (process, correlation id): group ``g`` is
    ``op_order[group_start[g]:group_start[g + 1]]``, and ``launch_id[c]`` is the group of call ``c``."""

    op_order: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    launch_id: np.ndarray  # per call: index of its (process, correlation id) group, -1 if it launched nothing
    group_start: np.ndarray  # per group, its first position in op_order; one extra entry: len(op_order)

    @property
    def count(self) -> np.ndarray:
        return self.hi - self.lo

    def op_call(self, n_ops: int) -> np.ndarray:
        """Per op, the call that launched it (-1: none); with repeated correlation ids, the last such call."""
        out = np.full(n_ops, -1, dtype=np.int64)
        calls = np.flatnonzero(self.hi > self.lo)
        _, pos = expand_segments(self.lo[calls], self.count[calls])
        out[self.op_order[pos]] = np.repeat(calls, self.count[calls])
        return out


def launches(export: Export, ops) -> Launches:
    """Join calls to ``ops`` (GpuOps or Ops) on (process, correlation id); correlation ids repeat across processes."""
    api = export.api
    n_calls = len(api) if api is not None else 0
    if n_calls == 0 or len(ops) == 0:
        z = np.zeros(n_calls, dtype=np.int64)
        return Launches(
            np.zeros(0, dtype=np.int64), z, z.copy(), np.full(n_calls, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        )
    assert api is not None
    call_pid = api.global_tid & PID_MASK
    pids = distinct(np.concatenate([ops.global_pid, call_pid]))
    okey = launch_key(np.searchsorted(pids, ops.global_pid), ops.correlation_id)
    order = np.argsort(okey, kind="stable")
    skey = okey[order]
    ckey = launch_key(np.searchsorted(pids, call_pid), api.correlation_id)
    lo = np.searchsorted(skey, ckey, side="left")
    hi = np.searchsorted(skey, ckey, side="right")
    first = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]])
    lid = np.where(hi > lo, np.searchsorted(skey[first], ckey), -1)
    return Launches(
        order, lo.astype(np.int64), hi.astype(np.int64), lid.astype(np.int64), np.r_[first, len(skey)].astype(np.int64)
    )


@dataclass
class OpPairs:
    """(range, op) attribution pairs, plus the launching call of each pair."""

    range: np.ndarray  # index into Export.ranges
    op: np.ndarray  # index into Ops
    call: np.ndarray  # index into Export.api

    def __len__(self) -> int:
        return len(self.range)


def op_pairs(export: Export, ops: Ops, link: Launches, ranges: np.ndarray, *, cross_thread: bool = False) -> OpPairs:
    """Pairs for the given ranges. Cross-thread ranges are skipped (as nsys does) unless ``cross_thread``,
    in which case they collect the launches of the thread that started them."""
    z = np.zeros(0, dtype=np.int64)
    api = export.api
    if api is None or len(api) == 0 or len(ops) == 0 or len(ranges) == 0:
        return OpPairs(z, z, z)
    r = export.ranges
    ranges = np.asarray(ranges, dtype=np.int64)
    if not cross_thread:
        ranges = ranges[~r.cross_thread[ranges]]
    calls = np.flatnonzero(link.hi > link.lo)
    ri, ci = contained(
        r.start[ranges], r.end[ranges], r.global_tid[ranges], api.start[calls], api.end[calls], api.global_tid[calls]
    )
    rng, call = ranges[ri], calls[ci]
    # Two calls of one range may share a launch key (repeated correlation ids): count their ops once.
    lid = link.launch_id[call]
    if len(lid):
        uniq, first = unique_pairs(rng, lid, return_index=True)
        if len(uniq) != len(rng):
            first.sort()
            rng, call = rng[first], call[first]
    n = link.count[call]
    total = int(n.sum())
    if total == 0:
        return OpPairs(z, z, z)
    firsts = np.cumsum(n) - n
    pos = np.repeat(link.lo[call], n) + (np.arange(total, dtype=np.int64) - np.repeat(firsts, n))
    return OpPairs(np.repeat(rng, n), link.op_order[pos], np.repeat(call, n))


def ops_of(link: Launches, calls: np.ndarray) -> np.ndarray:
    """The GPU ops (indices into Ops) the given calls launched, call after call."""
    cnt = link.hi[calls] - link.lo[calls]  # ``count`` of these calls only, not of every call
    total = int(cnt.sum())
    return link.op_order[
        np.repeat(link.lo[calls], cnt) + (np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    ]


def queue_delay(export: Export, ops: Ops, pairs: OpPairs) -> np.ndarray:
    """Per pair: GPU start minus the end of the launching call, 0 when the op started before the call
    returned (nsys ``kernexectrace`` "Queue Dur", which it leaves empty in that case)."""
    api = export.api
    if api is None or len(pairs) == 0:
        return np.zeros(len(pairs), dtype=np.int64)
    return np.maximum(ops.start[pairs.op] - api.end[pairs.call], 0)


def copy_direction(ops: Ops, idx: np.ndarray | None = None) -> np.ndarray:
    """Direction label per op (``memset`` for memsets, ``""`` for kernels and graphs)."""
    kind = ops.kind if idx is None else ops.kind[idx]
    ck = ops.copy_kind if idx is None else ops.copy_kind[idx]
    out = np.full(len(kind), "", dtype=object)
    copy = kind == MEMCPY
    labels = np.array([COPY_KINDS.get(int(c), "other") for c in range(0, 32)] + ["other"], dtype=object)
    out[copy] = labels[np.clip(ck[copy], 0, 32)]
    out[kind == MEMSET] = "memset"
    return out


# --------------------------------------------------------------------------- the range that launched each op


def innermost(export: Export, nesting: Any, c_start: np.ndarray, c_end: np.ndarray, c_tid: np.ndarray) -> np.ndarray:
    """Per call: position (in ``nesting.ranges``) of the innermost range containing it on its thread, or -1."""
    r = export.ranges
    idx = nesting.ranges
    out = np.full(len(c_start), -1, dtype=np.int64)
    if len(idx) == 0 or len(c_start) == 0:
        return out
    # Positions are sorted by (thread, start): the last range of the thread starting at or before the call ...
    r_tid, r_start = r.global_tid[idx], r.start[idx]
    tids, first = np.unique(r_tid, return_index=True)
    bounds = np.r_[first, len(idx)]
    t = np.minimum(np.searchsorted(tids, c_tid), len(tids) - 1)
    on = tids[t] == c_tid
    cand = np.full(len(c_start), -1, dtype=np.int64)
    for k in np.unique(t[on]):
        sel = np.flatnonzero(on & (t == k))
        a, b = bounds[k], bounds[k + 1]
        p = a + np.searchsorted(r_start[a:b], c_start[sel], side="right") - 1
        cand[sel] = np.where(p >= a, p, -1)
    # ... or the nearest of its ancestors that still contains the call.
    r_end = r.end[idx]
    live = np.flatnonzero(cand >= 0)
    while len(live):
        c = cand[live]
        ok = r_end[c] >= c_end[live]
        out[live[ok]] = c[ok]
        nxt = nesting.parent[c[~ok]]
        live = live[~ok]
        cand[live] = nxt
        live = live[nxt >= 0]
    return out


def call_owners(export: Export, nesting: Any, link: Launches) -> tuple[np.ndarray, np.ndarray]:
    """The calls that launched GPU work and, per call, the position (in ``nesting.ranges``, a
    :class:`~nvtxsim.analysis.tree.Nesting`) of the innermost range around it on its thread, or -1."""
    api = export.api
    calls = np.flatnonzero(link.hi > link.lo)
    if api is None or len(calls) == 0:
        return calls, np.full(len(calls), -1, dtype=np.int64)
    return calls, innermost(export, nesting, api.start[calls], api.end[calls], api.global_tid[calls])


def op_owners(export: Export, nesting: Any, link: Launches, n_ops: int) -> np.ndarray:
    """Per op: the position (in ``nesting.ranges``) of the range that launched it - the innermost range
    around its launching call (with repeated correlation ids, the last such call) - or -1."""
    call_of = link.op_call(n_ops)
    out = np.full(n_ops, -1, dtype=np.int64)
    has = call_of >= 0
    api = export.api
    if api is not None and has.any():
        c = call_of[has]
        out[has] = innermost(export, nesting, api.start[c], api.end[c], api.global_tid[c])
    return out
