"""Which range launched which GPU op, as explicit (range, op) pairs.

``analyse.project`` reduces attribution straight to per-range numbers; the detail
views (kernels, copies, queue delay, per-GPU splits, self time) need the pairs
themselves. The rule is nsys's: an op belongs to a range when the whole CUDA API
call that launched it lies inside the range on the range's thread. Graph-level
CUDA graph executions (``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``) are joined like
kernels, so graph launches are attributed however the graph was traced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from nvtxsim.analysis.projection import call_windows, expand_segments
from nvtxsim.export.reader import KERNEL, MEMCPY, MEMSET, PID_MASK, Export

GRAPH = 3  # op kind of a graph-level graph execution
KIND_NAMES = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset", GRAPH: "graph"}
#: CUPTI copyKind → direction label.
COPY_KINDS = {1: "htod", 2: "dtoh", 8: "dtod", 10: "ptop", 11: "unified_htod", 12: "unified_dtoh", 13: "unified_dtod"}

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
        out = [np.zeros((0, 2), dtype=np.int64)]
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
        res = np.unique(np.stack([a, b], axis=1), axis=0, return_index=return_index, return_inverse=return_inverse)
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
        parts.append((g.start, g.end, g.global_pid, g.correlation_id, g.kind.astype(np.int8), g.device_id, g.stream_id, g.bytes, g.copy_kind.astype(np.int64), g.name_id))
    gx = getattr(export.extras, "graph_execs", None)
    if gx is not None and len(gx):
        n = len(gx)
        parts.append((gx.start, gx.end, gx.global_pid, gx.correlation_id, np.full(n, GRAPH, dtype=np.int8), gx.device_id, gx.stream_id, np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), gx.graph_id))
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
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if len(r_start) == 0 or len(c_start) == 0:
        return empty
    order = np.lexsort((c_start, c_tid))
    lo, hi = call_windows(r_start, r_end, r_tid, c_tid[order], c_start[order])
    rng, pos = expand_segments(lo, np.maximum(hi - lo, 0))
    call = order[pos]
    keep = c_end[call] <= r_end[rng]
    return rng[keep], call[keep]


@dataclass
class Launches:
    """GPU ops per CUDA API call: ``op_order[lo[c]:hi[c]]`` are the ops call ``c`` launched."""

    op_order: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    launch_id: np.ndarray  # per call: index of its (process, correlation id) group, -1 if it launched nothing

    @property
    def count(self) -> np.ndarray:
        return self.hi - self.lo


def launches(export: Export, ops: Ops) -> Launches:
    """Join calls to ops on (process, correlation id); correlation ids repeat across processes."""
    api = export.api
    n_calls = len(api) if api is not None else 0
    if n_calls == 0 or len(ops) == 0:
        z = np.zeros(n_calls, dtype=np.int64)
        return Launches(np.zeros(0, dtype=np.int64), z, z.copy(), np.full(n_calls, -1, dtype=np.int64))
    assert api is not None
    pids = np.unique(np.concatenate([ops.global_pid, api.global_tid & PID_MASK]))

    def key(pid_bits: np.ndarray, corr: np.ndarray) -> np.ndarray:
        return (np.searchsorted(pids, pid_bits).astype(np.int64) << 32) | (corr.astype(np.int64) & 0xFFFFFFFF)

    okey = key(ops.global_pid, ops.correlation_id)
    order = np.argsort(okey, kind="stable")
    skey = okey[order]
    ckey = key(api.global_tid & PID_MASK, api.correlation_id)
    lo = np.searchsorted(skey, ckey, side="left")
    hi = np.searchsorted(skey, ckey, side="right")
    uniq = skey[np.r_[True, skey[1:] != skey[:-1]]] if len(skey) else skey  # already sorted
    lid = np.searchsorted(uniq, ckey)
    lid = np.where(hi > lo, lid, -1)
    return Launches(order, lo.astype(np.int64), hi.astype(np.int64), lid.astype(np.int64))


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
    ri, ci = contained(r.start[ranges], r.end[ranges], r.global_tid[ranges], api.start[calls], api.end[calls], api.global_tid[calls])
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
    cnt = link.count[calls]
    total = int(cnt.sum())
    return link.op_order[np.repeat(link.lo[calls], cnt) + (np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt))]


def queue_delay(export: Export, ops: Ops, pairs: OpPairs) -> np.ndarray:
    """Per pair: GPU start minus the end of the launching call, 0 when the op started before the call
    returned (nsys ``kernexectrace`` "Queue Dur", which it leaves empty in that case)."""
    api = export.api
    if api is None or len(pairs) == 0:
        return np.zeros(len(pairs), dtype=np.int64)
    return np.maximum(ops.start[pairs.op] - api.end[pairs.call], 0)


def copy_direction(ops: Ops, idx: Optional[np.ndarray] = None) -> np.ndarray:
    """Direction label per op (``memset`` for memsets, ``""`` for kernels and graphs)."""
    kind = ops.kind if idx is None else ops.kind[idx]
    ck = ops.copy_kind if idx is None else ops.copy_kind[idx]
    out = np.full(len(kind), "", dtype=object)
    copy = kind == MEMCPY
    labels = np.array([COPY_KINDS.get(int(c), "other") for c in range(0, 32)] + ["other"], dtype=object)
    out[copy] = labels[np.clip(ck[copy], 0, 32)]
    out[kind == MEMSET] = "memset"
    return out
