"""Range nesting per thread: parent, depth, inclusive and self (exclusive) CPU and GPU time.

nsys stores no nesting; it is rebuilt here from times. A range's parent is the
tightest range of the same thread that contains it (push/pop and start/end
mixed, as nsys's ``nvtxpptrace``/``nvtx_gpu_proj_trace`` do). Start/end ranges
that end on another thread stay in the tree of the thread that started them
(nsys drops them from its projections).

* CPU self time = duration minus the union of the children's intervals.
* GPU time is *busy* time (union of op intervals). Each launch goes to the
  innermost range around its API call on the launching thread (:func:`nvtxsim.analysis.launches.call_owners`); GPU self = the
  busy time of the range's own launches, GPU inclusive = that of its subtree
  (for properly nested ranges this equals ``RangeGpu.busy``, the nsys rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.launches import Launches, Ops, call_owners, expand_segments, unique_pairs
from nvtxsim.analysis.projection import _union_length
from nvtxsim.export.columns import Export


@dataclass
class Nesting:
    """Parent and depth per selected range (indices into ``Export.ranges``)."""

    ranges: np.ndarray  # selected range indices, sorted by (thread, start, -end, row)
    parent: np.ndarray  # per position in ``ranges``: position of the parent, -1 for roots
    depth: np.ndarray


FAST_NEST_MIN = 1000  # ranges from which the vectorised nesting is tried first


def _range_max_table(values: np.ndarray) -> list[np.ndarray]:
    """Sparse table: level k holds max(values[x : x + 2**k]) for every x where the window fits."""
    table = [values]
    while (1 << len(table)) <= len(values):
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-half], prev[half:]))
    return table


def _range_max(table: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo:hi]) per query (``hi > lo``), from :func:`_range_max_table`."""
    k = np.floor(np.log2(np.maximum(hi - lo, 1))).astype(np.int64)
    out = np.empty(len(lo), dtype=table[0].dtype)
    for level in np.unique(k).tolist():
        m = k == level
        out[m] = np.maximum(table[level][lo[m]], table[level][hi[m] - (1 << level)])
    return out


def nest_fast(tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """Parents of ranges sorted by (thread, start, -end, row) when they nest properly; None otherwise.

    Properly nested (the push/pop discipline), the tightest range around i is the nearest earlier range
    of its thread that ends no earlier than i: found for all ranges at once by binary lifting over a
    range-maximum table of the ends. A range still open at i's start that ends before i (a partial
    overlap) makes it return None, and :func:`nest` sweeps with the stack rule instead."""
    n = len(tid)
    first = np.r_[True, tid[1:] != tid[:-1]]
    tstart = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    table = _range_max_table(end)
    pos = np.arange(n, dtype=np.int64)  # exclusive bound, moved left over blocks that all end before i does
    for level in range(len(table) - 1, -1, -1):
        cand = pos - (1 << level)
        ok = cand >= tstart
        ok[ok] = table[level][cand[ok]] < end[ok]
        pos[ok] = cand[ok]
    parent = np.where(pos > tstart, pos - 1, -1)
    # Between the parent (or the thread's first range) and i, every range must be over when i starts;
    # one that ends exactly then is over for the stack rule too.
    lo = np.where(parent >= 0, parent + 1, tstart)
    gap = np.flatnonzero(lo < np.arange(n))
    if len(gap) and (_range_max(table, lo[gap], gap) > start[gap]).any():
        return None
    return parent


def _depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every range by pointer jumping: about log2(deepest) vectorised rounds, not one round
    per level (a million ranges that never ended nest a million deep)."""
    depth = (parent >= 0).astype(np.int64)  # edges from i up to anc[i]; once anc[i] is -1, up to the root
    anc = parent.copy()
    live = np.flatnonzero(anc >= 0)
    while len(live):
        up = anc[live]
        depth[live] += depth[up]  # the right side is read before any write: one simultaneous round
        anc[live] = anc[up]
        live = live[anc[live] >= 0]
    return depth


def nest(export: Export, ranges: np.ndarray) -> Nesting:
    """Tightest enclosing range per range on its thread: vectorised when the ranges nest properly, else a stack sweep per thread."""
    r = export.ranges
    ranges = np.asarray(ranges, dtype=np.int64)
    order = np.lexsort((r.row[ranges], -r.end[ranges], r.start[ranges], r.global_tid[ranges]))
    idx = ranges[order]
    n = len(idx)
    if n >= FAST_NEST_MIN:
        parent = nest_fast(r.global_tid[idx], r.start[idx], r.end[idx])
        if parent is not None:
            return Nesting(idx, parent, _depths(parent))
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    tid = r.global_tid[idx].tolist()
    start = r.start[idx].tolist()
    end = r.end[idx].tolist()
    stack: list[int] = []
    cur_tid = None
    par = parent.tolist()
    dep = depth.tolist()
    for i in range(n):
        if tid[i] != cur_tid:
            stack.clear()
            cur_tid = tid[i]
        s, e = start[i], end[i]
        while stack and end[stack[-1]] < s:
            stack.pop()
        # Tightest range on the stack that contains this one (least slack at both ends, like nsys's
        # nvtxpptrace); for properly nested ranges that is simply the deepest one.
        best, slack = -1, None
        for j in range(len(stack) - 1, -1, -1):
            k = stack[j]
            if slack is not None and s - start[k] >= slack:
                break  # starts only get earlier down the stack: nothing below can be tighter
            if end[k] >= e:
                sl = (s - start[k]) + (end[k] - e)
                if slack is None or sl < slack:
                    best, slack = k, sl
                    if sl == 0:
                        break
        if best >= 0:
            par[i] = best
            dep[i] = dep[best] + 1
        stack.append(i)
    return Nesting(idx, np.array(par, dtype=np.int64), np.array(dep, dtype=np.int64))


@dataclass
class RangeTree:
    """Per selected range (positions as in ``nesting.ranges``): inclusive and self times in ns."""

    nesting: Nesting
    cpu_incl: np.ndarray
    cpu_self: np.ndarray
    gpu_incl: np.ndarray  # busy time of the subtree's launches
    gpu_self: np.ndarray  # busy time of the range's own launches
    children: np.ndarray


def build(
    export: Export,
    ranges: np.ndarray,
    ops: Ops | None = None,
    link: Launches | None = None,
    *,
    nesting: Nesting | None = None,
) -> RangeTree:
    """Inclusive and self CPU/GPU time of the selected ``ranges`` (``nesting``: already computed for them)."""
    r = export.ranges
    nesting = nesting if nesting is not None else nest(export, ranges)
    idx, parent = nesting.ranges, nesting.parent
    n = len(idx)
    start, end = r.start[idx], r.end[idx]
    cpu_incl = end - start
    kids = np.flatnonzero(parent >= 0)
    p = parent[kids]
    cpu_self = cpu_incl - _union_length(p, np.maximum(start[kids], start[p]), np.minimum(end[kids], end[p]), n)
    children = np.bincount(p, minlength=n).astype(np.int64)
    gpu_incl = np.zeros(n, dtype=np.int64)
    gpu_self = np.zeros(n, dtype=np.int64)
    if ops is not None and link is not None and export.api is not None and len(ops) and n:
        gpu_self, gpu_incl = _gpu_times(export, nesting, ops, link)
    return RangeTree(nesting, cpu_incl, cpu_self, gpu_incl, gpu_self, children)


def _gpu_times(export: Export, nesting: Nesting, ops: Ops, link: Launches) -> tuple[np.ndarray, np.ndarray]:
    """GPU self (own launches) and inclusive (subtree's launches) busy time per position."""
    n, parent = len(nesting.ranges), nesting.parent
    calls, owner = call_owners(export, nesting, link)
    has = owner >= 0
    calls, owner = calls[has], owner[has]
    cnt = link.count[calls]
    if int(cnt.sum()) == 0:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    _, pos = expand_segments(link.lo[calls], cnt)
    op = link.op_order[pos]
    own = np.repeat(owner, cnt)
    # The same op can be reached twice only through repeated correlation ids: keep it once per owner.
    pair = unique_pairs(own, op)
    own, op = pair[:, 0], pair[:, 1]
    gpu_self = _union_length(own, ops.start[op], ops.end[op], n)
    anc_g, anc_o = [own], [op]
    cur, cur_op = own, op
    while True:
        up = parent[cur]
        keep = up >= 0
        if not keep.any():
            break
        cur, cur_op = up[keep], cur_op[keep]
        anc_g.append(cur)
        anc_o.append(cur_op)
    gpu_incl = _union_length(np.concatenate(anc_g), ops.start[np.concatenate(anc_o)], ops.end[np.concatenate(anc_o)], n)
    return gpu_self, gpu_incl


@dataclass
class TreeNode:
    """All ranges of one thread that share a path of names from the root (one line of the tree view)."""

    global_tid: int
    path: tuple[str, ...]
    depth: int
    count: int
    cpu_incl_ns: int
    cpu_self_ns: int
    gpu_incl_ns: int
    gpu_self_ns: int
    cross_thread: int
    first_start: int


_VECTOR_LEVELS = 64  # deeper trees are grouped by a plain loop instead of one numpy pass per level
MAX_DEPTH = 32  # deepest tree level listed by default


@dataclass
class _Nodes:
    """Tree nodes (one per thread and name path): per range its node, per node its parent, label and thread."""

    of_range: np.ndarray
    parent: list[int]
    label: list[int]
    tid: list[int]


def aggregate(export: Export, tree: RangeTree, max_depth: int = MAX_DEPTH) -> list[TreeNode]:
    """Merge ranges by (thread, name path); nodes come out depth-first, children in order of first appearance.

    Levels below ``max_depth`` are left out of the list (their time is in their ancestors' inclusive time).
    """
    nesting = tree.nesting
    if len(nesting.ranges) == 0:
        return []
    r = export.ranges
    idx = nesting.ranges
    label, tid = r.label[idx].astype(np.int64), r.global_tid[idx]
    deep = int(nesting.depth.max()) > _VECTOR_LEVELS  # e.g. millions of never-closed ranges
    nodes = _nodes_by_loop(nesting, label, tid) if deep else _nodes_by_level(nesting, label, tid)
    node, m = nodes.of_range, len(nodes.parent)

    def total(v: np.ndarray) -> np.ndarray:
        out = np.zeros(m, dtype=np.int64)
        np.add.at(out, node, v)
        return out

    count = np.bincount(node, minlength=m)
    first = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, node, r.start[idx])
    times = (
        total(tree.cpu_incl),
        total(tree.cpu_self),
        total(tree.gpu_incl),
        total(tree.gpu_self),
        total(r.cross_thread[idx].astype(np.int64)),
    )
    return _depth_first(nodes, export.label_names(), count, first, times, max_depth)


def _nodes_by_level(nesting: Nesting, label: np.ndarray, tid: np.ndarray) -> _Nodes:
    """Node id per range, level by level with one numpy pass each: (parent's node, label); roots (thread, label)."""
    parent, depth = nesting.parent, nesting.depth
    nodes = _Nodes(np.full(len(nesting.ranges), -1, dtype=np.int64), [], [], [])
    for d in range(int(depth.max()) + 1):
        at = np.flatnonzero(depth == d)
        if d == 0:
            _, tinv = np.unique(tid[at], return_inverse=True)
            keys = np.stack([np.full(len(at), -1), tinv.reshape(-1), label[at]], axis=1)
        else:
            keys = np.stack([nodes.of_range[parent[at]], np.zeros(len(at), dtype=np.int64), label[at]], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        nodes.of_range[at] = len(nodes.parent) + inv.reshape(-1)
        nodes.parent.extend(int(u[0]) for u in uniq)
        nodes.label.extend(int(u[2]) for u in uniq)
        # Thread of each new node: the thread of any of its ranges.
        tmp = np.zeros(len(uniq), dtype=np.int64)
        tmp[inv.reshape(-1)] = tid[at]
        nodes.tid.extend(tmp.tolist())
    return nodes


def _nodes_by_loop(nesting: Nesting, label: np.ndarray, tid: np.ndarray) -> _Nodes:
    """The same nodes for very deep nesting: one Python pass in depth order (a numpy pass per level would be slower)."""
    index: dict[tuple, int] = {}
    par_l, lab_l, tid_l = nesting.parent.tolist(), label.tolist(), tid.tolist()
    nd = [-1] * len(par_l)
    nodes = _Nodes(np.zeros(0, dtype=np.int64), [], [], [])
    for i in np.argsort(nesting.depth, kind="stable").tolist():
        pk = ("t", tid_l[i]) if par_l[i] < 0 else nd[par_l[i]]
        key = (pk, lab_l[i])
        k = index.get(key)
        if k is None:
            k = index[key] = len(nodes.parent)
            nodes.parent.append(-1 if par_l[i] < 0 else nd[par_l[i]])
            nodes.label.append(lab_l[i])
            nodes.tid.append(tid_l[i])
        nd[i] = k
    nodes.of_range = np.array(nd, dtype=np.int64)
    return nodes


def _depth_first(
    nodes: _Nodes, names: np.ndarray, count: np.ndarray, first: np.ndarray, times: tuple, max_depth: int
) -> list[TreeNode]:
    """The nodes depth-first, children in order of first appearance (iterative: nesting can be very deep)."""
    ci, cs, gi, gs, cross = times
    kids: dict[int, list[int]] = {}
    for k in range(len(nodes.parent)):
        kids.setdefault(nodes.parent[k], []).append(k)
    out: list[TreeNode] = []
    todo: list[tuple[int, tuple[str, ...], int]] = [
        (k, (), 0) for k in reversed(sorted(kids.get(-1, []), key=lambda c: (nodes.tid[c], first[c])))
    ]
    while todo:
        k, path, d = todo.pop()
        if d > max_depth:
            continue
        path = path + (str(names[nodes.label[k]]),)
        out.append(
            TreeNode(
                nodes.tid[k],
                path,
                d,
                int(count[k]),
                int(ci[k]),
                int(cs[k]),
                int(gi[k]),
                int(gs[k]),
                int(cross[k]),
                int(first[k]),
            )
        )
        for c in reversed(sorted(kids.get(k, []), key=lambda c: first[c])):
            todo.append((c, path, d + 1))
    return out
