"""Per-phase GPU detail: which kernels, which copies, how long the CPU waited, how idle the GPU was.

All attribution follows nsys's rule (an op belongs to every range that wholly
contains its launching call on the same thread; cross-thread ranges excluded), so
per-phase kernel totals match ``nsys stats -r nvtxkernsum``. Definitions:

* *queue delay* of an op: its GPU start minus the end of its launching call, 0 when
  it started before the call returned (nsys ``kernexectrace`` "Queue Dur").
* *sync wait*: CPU time inside the phase spent in CUDA calls that block the
  thread until the GPU catches up (stream/device/event/context synchronize and
  the synchronous memcpys), by API name with the ``_vNNNN`` suffix stripped; the
  per-phase total is the union of those calls per range (a runtime call and the
  driver call nested in it count once).
* *GPU idle in range*: range wall time during which no GPU op of the range's
  process ran (any stream, any device, launched from anywhere).
* *span gaps*: projected span minus busy time (idle gaps inside the range's own
  GPU work).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.launches import api_name, contained, copy_direction, is_graph_launch, queue_delay, unique_pairs
from nvtxsim.analysis.projection import _group_quantiles, _union_length
from nvtxsim.analysis.selection import Selection
from nvtxsim.schema import GRAPH, KERNEL, MEMCPY, MEMSET, PID_MASK

SYNC_API = re.compile(
    r"^(cuda(Device|Stream|Event|Thread)Synchronize|cu(Ctx|Stream|Event)Synchronize"
    r"|cudaMemcpy(2D|3D|Peer|ToSymbol|FromSymbol|ToArray|FromArray|2DToArray|2DFromArray)?"
    r"|cuMemcpy(HtoD|DtoH|DtoD|HtoA|AtoH|AtoD|DtoA|AtoA|2D|2DUnaligned|3D|Peer|3DPeer)?)$"
)
DIRECTION_LABELS = {
    "htod": "H→D",
    "dtoh": "D→H",
    "dtod": "D→D",
    "ptop": "P→P",
    "memset": "memset",
    "unified_htod": "UM H→D",
    "unified_dtoh": "UM D→H",
    "unified_dtod": "UM D→D",
    "other": "other",
}


def is_sync_api(name: str) -> bool:
    """True for CUDA calls that block the calling thread until GPU work finishes."""
    return bool(SYNC_API.match(api_name(name)))


def short_kernel_name(name: str) -> str:
    """``void ns::kern<T, 4>(float*, int)`` → ``kern``: the base name nsys's ``:base`` option shows."""
    s = name
    out = []
    depth = 0
    for ch in s:  # drop everything inside <...> and (...)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    base = "".join(out).strip()
    base = base.split()[-1] if base.split() else name
    base = base.split("::")[-1] or name
    return base


def _phase_order(detail: Selection) -> dict[str, int]:
    return {p.label: i for i, p in enumerate(detail.report.phases)}


def _label_of_ranges(detail: Selection, ranges: np.ndarray) -> np.ndarray:
    return detail.export.ranges.label[ranges].astype(np.int64)


# --------------------------------------------------------------------------- kernels


@dataclass
class KernelRow:
    phase: str
    kernel: str  # full (demangled) name, or "[CUDA graph N]" for graph-level executions
    kernel_short: str
    kind: str  # kernel | graph
    ranges: int  # range instances of the phase around its launches (nsys "NVTX Inst")
    count: int  # executions (nsys "Kern Inst"); each counts once per phase, also inside nested ranges of the phase
    total_ns: int
    mean_ns: int
    max_ns: int
    share: float  # of the phase's kernel time


def kernels(detail: Selection, top: int | None = 10) -> list[KernelRow]:
    """Per phase, its kernels by total GPU time (graph-level graph executions listed as one 'kernel')."""
    ex, ops, pairs = detail.export, detail.ops, detail.pairs
    sel = np.isin(ops.kind[pairs.op], (KERNEL, GRAPH))
    rng, op = pairs.range[sel], pairs.op[sel]
    if len(rng) == 0:
        return []
    lab = _label_of_ranges(detail, rng)
    is_graph = ops.kind[op] == GRAPH
    name_key = np.where(is_graph, -1 - ops.name_id[op], ops.name_id[op])  # graph ids kept apart from string ids
    uniq, inv = unique_pairs(lab, name_key, return_inverse=True)
    m = len(uniq)
    ri = unique_pairs(inv, rng)
    nranges = np.bincount(ri[:, 0], minlength=m)
    # Each execution once per phase, even when ranges of the phase nest (nsys sums those twice in Total Time).
    ko = unique_pairs(inv, op)
    inv, op = ko[:, 0], ko[:, 1]
    dur = ops.duration[op]
    count = np.bincount(inv, minlength=m)
    total = np.zeros(m, dtype=np.int64)
    np.add.at(total, inv, dur)
    mx = np.zeros(m, dtype=np.int64)
    np.maximum.at(mx, inv, dur)
    per_label: dict[int, int] = {}
    for k in range(m):
        per_label[int(uniq[k, 0])] = per_label.get(int(uniq[k, 0]), 0) + int(total[k])
    rows = []
    for k in range(m):
        label, nk = int(uniq[k, 0]), int(uniq[k, 1])
        if nk < 0:
            full = f"[CUDA graph {-1 - nk}]" if -1 - nk >= 0 else "[CUDA graph]"
            short, kind = full, "graph"
        else:
            full = ex.string(nk) or f"kernel #{nk}"
            short, kind = short_kernel_name(full), "kernel"
        rows.append(
            KernelRow(
                phase=str(detail.label_names[label]),
                kernel=full,
                kernel_short=short,
                kind=kind,
                ranges=int(nranges[k]),
                count=int(count[k]),
                total_ns=int(total[k]),
                mean_ns=int(round(total[k] / count[k])) if count[k] else 0,
                max_ns=int(mx[k]),
                share=float(total[k]) / per_label[label] if per_label[label] else 0.0,
            )
        )
    order = _phase_order(detail)
    rows.sort(key=lambda r: (order.get(r.phase, 1 << 30), r.phase, -r.total_ns, r.kernel))
    if top is not None:
        seen: dict[str, int] = {}
        kept = []
        for r in rows:
            seen[r.phase] = seen.get(r.phase, 0) + 1
            if seen[r.phase] <= top:
                kept.append(r)
        rows = kept
    return rows


# --------------------------------------------------------------------------- copies


@dataclass
class CopyRow:
    phase: str
    kind: str  # memcpy | memset
    direction: str  # htod, dtoh, dtod, ptop, memset, ...
    count: int
    bytes: int
    total_ns: int
    mean_ns: int
    throughput_gbps: float  # bytes / GPU time, GB/s (10^9)


def copies(detail: Selection) -> list[CopyRow]:
    """Per phase and direction: memcpy/memset counts, bytes and GPU time (every enclosing range)."""
    ops, pairs = detail.ops, detail.pairs
    sel = np.isin(ops.kind[pairs.op], (MEMCPY, MEMSET))
    rng, op = pairs.range[sel], pairs.op[sel]
    if len(rng) == 0:
        return []
    lo = unique_pairs(_label_of_ranges(detail, rng), op)  # each op once per phase
    lab, op = lo[:, 0], lo[:, 1]
    direction = copy_direction(ops, op)
    dnames, dcode = np.unique(direction.astype(str), return_inverse=True)
    uniq, inv = unique_pairs(lab, dcode.reshape(-1), return_inverse=True)
    m = len(uniq)
    count = np.bincount(inv, minlength=m)
    nbytes = np.zeros(m, dtype=np.int64)
    np.add.at(nbytes, inv, ops.bytes[op])
    total = np.zeros(m, dtype=np.int64)
    np.add.at(total, inv, ops.duration[op])
    rows = []
    for k in range(m):
        d = str(dnames[uniq[k, 1]])
        rows.append(
            CopyRow(
                phase=str(detail.label_names[uniq[k, 0]]),
                kind="memset" if d == "memset" else "memcpy",
                direction=d,
                count=int(count[k]),
                bytes=int(nbytes[k]),
                total_ns=int(total[k]),
                mean_ns=int(round(total[k] / count[k])) if count[k] else 0,
                throughput_gbps=float(nbytes[k]) / total[k] if total[k] else 0.0,
            )
        )
    order = _phase_order(detail)
    rows.sort(key=lambda r: (order.get(r.phase, 1 << 30), r.phase, -r.total_ns))
    return rows


# --------------------------------------------------------------------------- syncs


@dataclass
class SyncRow:
    phase: str
    api: str
    calls: int
    total_ns: int
    mean_ns: int
    max_ns: int
    share_of_cpu: float  # of the phase's CPU total


def _api_names(detail: Selection) -> tuple[np.ndarray, np.ndarray]:
    """Normalised API name per distinct name id (index = position in ``np.unique(api.name_id)``)."""
    api = detail.export.api
    assert api is not None
    ids = np.unique(api.name_id)
    return ids, np.array([api_name(detail.export.string(int(i))) for i in ids], dtype=object)


def _calls_matching(detail: Selection, pred) -> np.ndarray:
    api = detail.export.api
    if api is None or len(api) == 0:
        return np.zeros(0, dtype=np.int64)
    if not any(pred(api_name(s)) for s in detail.export.strings.values()):
        return np.zeros(0, dtype=np.int64)  # cheap exit: no such API anywhere (saves a pass over every call)
    ids, names = _api_names(detail)
    ok = np.array([bool(pred(n)) for n in names], dtype=bool)
    return np.flatnonzero(ok[np.searchsorted(ids, api.name_id)])


def _range_calls(detail: Selection, calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(range, call) pairs of the selected, same-thread ranges and the given calls."""
    ex, api = detail.export, detail.export.api
    r = ex.ranges
    ranges = detail.selected[~r.cross_thread[detail.selected]]
    if api is None or len(calls) == 0 or len(ranges) == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    ri, ci = contained(
        r.start[ranges], r.end[ranges], r.global_tid[ranges], api.start[calls], api.end[calls], api.global_tid[calls]
    )
    return ranges[ri], calls[ci]


def sync_wait_per_range(detail: Selection) -> np.ndarray:
    """Per range of the export: CPU time inside it spent in synchronizing CUDA calls (union)."""
    n = len(detail.export.ranges)
    api = detail.export.api
    calls = _calls_matching(detail, is_sync_api)
    rng, call = _range_calls(detail, calls)
    if len(rng) == 0 or api is None:
        return np.zeros(n, dtype=np.int64)
    return _union_length(rng, api.start[call], api.end[call], n)


def syncs(detail: Selection) -> list[SyncRow]:
    """Per phase and synchronizing API: calls and CPU time spent in them."""
    api = detail.export.api
    calls = _calls_matching(detail, is_sync_api)
    rng, call = _range_calls(detail, calls)
    if len(rng) == 0 or api is None:
        return []
    ids, names = _api_names(detail)
    name_code = np.searchsorted(ids, api.name_id[call])
    # Group normalised names (several ids may normalise to one name).
    uniq_names, name_inv = np.unique(names.astype(str), return_inverse=True)
    ncode = name_inv.reshape(-1)[name_code]
    lab = _label_of_ranges(detail, rng)
    uniq, inv = unique_pairs(lab, ncode, return_inverse=True)
    m = len(uniq)
    dur = api.end[call] - api.start[call]
    count = np.bincount(inv, minlength=m)
    total = np.zeros(m, dtype=np.int64)
    np.add.at(total, inv, dur)
    mx = np.zeros(m, dtype=np.int64)
    np.maximum.at(mx, inv, dur)
    cpu_total = {p.label: p.cpu_total_ns for p in detail.report.phases}
    rows = []
    for k in range(m):
        phase = str(detail.label_names[uniq[k, 0]])
        rows.append(
            SyncRow(
                phase=phase,
                api=str(uniq_names[uniq[k, 1]]),
                calls=int(count[k]),
                total_ns=int(total[k]),
                mean_ns=int(round(total[k] / count[k])) if count[k] else 0,
                max_ns=int(mx[k]),
                share_of_cpu=float(total[k]) / cpu_total[phase] if cpu_total.get(phase) else 0.0,
            )
        )
    order = _phase_order(detail)
    rows.sort(key=lambda r: (order.get(r.phase, 1 << 30), r.phase, -r.total_ns))
    return rows


# --------------------------------------------------------------------------- idle, queue, graphs


def _covered(ops_start: np.ndarray, ops_end: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Length of [lo, hi) covered by the union of the op intervals (vectorised prefix sums)."""
    if len(ops_start) == 0:
        return np.zeros(len(lo), dtype=np.int64)
    o = np.argsort(ops_start, kind="stable")
    s, e = ops_start[o], ops_end[o]
    runmax = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > runmax[:-1]]
    starts = s[new]
    grp = np.cumsum(new) - 1
    ends = np.full(len(starts), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(ends, grp, e)
    lengths = ends - starts
    before = np.r_[0, np.cumsum(lengths)]

    def cov(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(starts, t, side="right") - 1
        ic = np.maximum(i, 0)
        part = np.clip(t - starts[ic], 0, lengths[ic])
        return np.where(i >= 0, before[ic] + part, 0)

    return cov(hi) - cov(lo)


def gpu_idle_per_range(detail: Selection, ranges: np.ndarray) -> np.ndarray:
    """Per given range: wall time with no GPU op of its process running."""
    r, ops = detail.export.ranges, detail.ops
    out = (r.end - r.start)[ranges].astype(np.int64)
    if len(ops) == 0 or len(ranges) == 0:
        return out
    rp = r.global_tid[ranges] & PID_MASK
    for p in np.unique(rp):
        sel = np.flatnonzero(rp == p)
        mine = ops.global_pid == p
        cov = _covered(ops.start[mine], ops.end[mine], r.start[ranges[sel]], r.end[ranges[sel]])
        out[sel] -= cov
    return out


@dataclass
class GpuPhaseRow:
    phase: str
    instances: int
    gpu_instances: int  # ranges that launched GPU work
    launches: int  # distinct launching calls (nsys NumGPUOps)
    ops: int  # GPU ops incl. graph-level executions
    gpu_busy_ns: int  # union of attributed ops, summed over ranges (graph-level executions included)
    gpu_idle_ns: int  # range time with no GPU op of the process running
    gpu_idle_share: float  # of CPU time
    span_gaps_ns: int  # projected span minus busy (idle inside the range's own GPU work)
    queue_mean_ns: int
    queue_p50_ns: int
    queue_p99_ns: int
    queue_max_ns: int
    sync_wait_ns: int
    sync_share: float  # of CPU time
    graph_launches: int
    graph_gpu_ns: int  # busy time of the ops those graph launches ran


def overview(detail: Selection) -> list[GpuPhaseRow]:
    """One row per phase: launches, busy and idle GPU time, queue delay, sync waits, CUDA graphs."""
    ex, r, sel = detail.export, detail.export.ranges, detail.selected
    phases = detail.report.phases
    if not phases:
        return []
    nl = len(ex.labels)

    def per_label(values_per_range: np.ndarray, idx: np.ndarray = sel) -> np.ndarray:
        out = np.zeros(nl, dtype=np.int64)
        np.add.at(out, r.label[idx].astype(np.int64), values_per_range)
        return out

    instances = np.bincount(r.label[sel].astype(np.int64), minlength=nl)
    cpu = per_label((r.end - r.start)[sel])
    work = _work_columns(detail, per_label, nl)
    idle = per_label(gpu_idle_per_range(detail, sel)) if detail.has_cuda else np.zeros(nl, dtype=np.int64)
    sync = per_label(sync_wait_per_range(detail)[sel])
    q_n, q_mean, q_quant, q_max = _queue_columns(detail, nl)
    graph_n, graph_gpu = _graph_columns(detail, per_label, nl)
    rows = []
    for p in phases:
        lab = detail.label_index[(p.domain, p.name)]
        has_q = q_n[lab] > 0
        c = int(cpu[lab])
        rows.append(
            GpuPhaseRow(
                phase=p.label,
                instances=int(instances[lab]),
                gpu_instances=int(work["gpu_instances"][lab]),
                launches=int(work["launches"][lab]),
                ops=int(work["ops"][lab]),
                gpu_busy_ns=int(work["busy"][lab]),
                gpu_idle_ns=int(idle[lab]),
                gpu_idle_share=float(idle[lab]) / c if c and detail.has_cuda else 0.0,
                span_gaps_ns=int(work["gaps"][lab]),
                queue_mean_ns=int(round(q_mean[lab])) if has_q else 0,
                queue_p50_ns=int(round(q_quant[0.5][lab])) if has_q else 0,
                queue_p99_ns=int(round(q_quant[0.99][lab])) if has_q else 0,
                queue_max_ns=int(q_max[lab]) if has_q else 0,
                sync_wait_ns=int(sync[lab]),
                sync_share=float(sync[lab]) / c if c else 0.0,
                graph_launches=int(graph_n[lab]),
                graph_gpu_ns=int(graph_gpu[lab]),
            )
        )
    return rows


def _work_columns(detail: Selection, per_label, nl: int) -> dict[str, np.ndarray]:
    """Per label: ranges with GPU work, launches, ops, busy time (graph-level executions included) and span gaps."""
    ops, pairs, sel = detail.ops, detail.pairs, detail.selected
    r = detail.export.ranges
    n = len(r)
    # Busy time per range with graph-level executions included (RangeGpu.busy leaves them out, as nsys does).
    busy_r = (
        _union_length(pairs.range, ops.start[pairs.op], ops.end[pairs.op], n)
        if len(pairs)
        else np.zeros(n, dtype=np.int64)
    )
    has = np.zeros(n, dtype=bool)
    has[pairs.range] = True
    # Launches: distinct (range, call) pairs.
    launch_n = np.zeros(nl, dtype=np.int64)
    op_n = np.zeros(nl, dtype=np.int64)
    span = np.zeros(n, dtype=np.int64)
    if len(pairs):
        rc = unique_pairs(pairs.range, pairs.call)
        np.add.at(launch_n, r.label[rc[:, 0]].astype(np.int64), 1)
        np.add.at(op_n, r.label[pairs.range].astype(np.int64), 1)
        lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(lo, pairs.range, ops.start[pairs.op])
        np.maximum.at(hi, pairs.range, ops.end[pairs.op])
        span = np.where(has, hi - lo, 0)
    return {
        "busy": per_label(busy_r[sel]),
        "gpu_instances": per_label(has[sel].astype(np.int64)),
        "launches": launch_n,
        "ops": op_n,
        "gaps": per_label((span - busy_r)[sel]),
    }


def _queue_columns(detail: Selection, nl: int) -> tuple[np.ndarray, np.ndarray, dict, np.ndarray]:
    """Queue delay per label, all labels at once (a mask per phase would be quadratic in phases): count, mean, quantiles, max."""
    pairs = detail.pairs
    q = queue_delay(detail.export, detail.ops, pairs)
    qlab = detail.export.ranges.label[pairs.range].astype(np.int64) if len(pairs) else np.zeros(0, dtype=np.int64)
    q_n = np.bincount(qlab, minlength=nl)
    q_sum = np.bincount(qlab, weights=q, minlength=nl)
    q_max = np.zeros(nl, dtype=np.int64)
    np.maximum.at(q_max, qlab, q.astype(np.int64))
    q_mean = np.divide(q_sum, q_n, out=np.zeros(nl), where=q_n > 0)
    return q_n, q_mean, _group_quantiles(qlab, q, nl, (0.5, 0.99)), q_max


def _graph_columns(detail: Selection, per_label, nl: int) -> tuple[np.ndarray, np.ndarray]:
    """Graph launches inside each phase and the GPU time of what they ran."""
    ops, pairs, r = detail.ops, detail.pairs, detail.export.ranges
    g_calls = _calls_matching(detail, is_graph_launch)
    g_rng, _ = _range_calls(detail, g_calls)
    graph_n = np.zeros(nl, dtype=np.int64)
    np.add.at(graph_n, r.label[g_rng].astype(np.int64), 1)
    graph_gpu = np.zeros(nl, dtype=np.int64)
    if len(pairs) and len(g_calls):
        is_g = np.isin(pairs.call, g_calls)
        gb = _union_length(pairs.range[is_g], ops.start[pairs.op[is_g]], ops.end[pairs.op[is_g]], len(r))
        graph_gpu = per_label(gb[detail.selected])
    return graph_n, graph_gpu


# --------------------------------------------------------------------------- per GPU


@dataclass
class DeviceRow:
    phase: str
    device: int
    gpu: str
    ops: int
    kernels: int
    kernel_ns: int  # summed kernel (and graph execution) time
    busy_ns: int  # union of the phase's ops on this device, summed over ranges
    copy_bytes: int


def by_device(detail: Selection) -> list[DeviceRow]:
    """Per phase and GPU: how the phase's attributed work spread over devices."""
    ops, pairs = detail.ops, detail.pairs
    if len(pairs) == 0:
        return []
    r = detail.export.ranges
    dev = ops.device_id[pairs.op]
    devs, dcode = np.unique(dev, return_inverse=True)
    dcode = dcode.reshape(-1)
    # Busy per (range, device), then summed per (label, device).
    rd_keys = pairs.range * len(devs) + dcode
    ukeys, rd_inv = np.unique(rd_keys, return_inverse=True)
    busy_rd = _union_length(rd_inv.reshape(-1), ops.start[pairs.op], ops.end[pairs.op], len(ukeys))
    rd_label = r.label[ukeys // len(devs)].astype(np.int64)
    rd_dev = ukeys % len(devs)
    # Counts and sums: each op once per phase (also inside nested ranges of the phase), as in kernels().
    lo = unique_pairs(r.label[pairs.range].astype(np.int64), pairs.op)
    lab, op = lo[:, 0], lo[:, 1]
    dcode = np.searchsorted(devs, ops.device_id[op])
    uniq, inv = unique_pairs(lab, dcode, return_inverse=True)
    m = len(uniq)
    kind = ops.kind[op]
    is_k = np.isin(kind, (KERNEL, GRAPH))
    count = np.bincount(inv, minlength=m)
    kcount = np.bincount(inv, weights=is_k, minlength=m).astype(np.int64)
    ktime = np.zeros(m, dtype=np.int64)
    np.add.at(ktime, inv, np.where(is_k, ops.duration[op], 0))
    cbytes = np.zeros(m, dtype=np.int64)
    np.add.at(cbytes, inv, np.where(kind == MEMCPY, ops.bytes[op], 0))
    busy: dict[tuple[int, int], int] = {}
    for label, d, b in zip(rd_label.tolist(), rd_dev.tolist(), busy_rd.tolist()):
        busy[(label, d)] = busy.get((label, d), 0) + b
    rows = []
    for k in range(m):
        label, d = int(uniq[k, 0]), int(uniq[k, 1])
        rows.append(
            DeviceRow(
                phase=str(detail.label_names[label]),
                device=int(devs[d]),
                gpu=detail.gpu_name(int(devs[d])),
                ops=int(count[k]),
                kernels=int(kcount[k]),
                kernel_ns=int(ktime[k]),
                busy_ns=int(busy.get((label, d), 0)),
                copy_bytes=int(cbytes[k]),
            )
        )
    order = _phase_order(detail)
    rows.sort(key=lambda r: (order.get(r.phase, 1 << 30), r.phase, r.device))
    return rows


# --------------------------------------------------------------------------- CUDA graph hints


def graph_hints(detail: Selection) -> list[str]:
    """Say how CUDA graph launches were traced and what that means for the numbers."""
    ex = detail.export
    calls = _calls_matching(detail, is_graph_launch)
    if len(calls) == 0:
        return []
    link = detail.link
    with_ops = int((link.count[calls] > 0).sum())
    gx = getattr(ex.extras, "graph_execs", None)
    hints = []
    if gx is not None and len(gx):
        hints.append(
            f"{len(calls)} CUDA graph launch(es) traced graph-level (--cuda-graph-trace=graph): each graph execution is one GPU op; "
            "kernels inside graphs are not itemised and, as in nsys, not part of the GPU proj/busy columns of the summary "
            "(see --view gpu, which includes them); capture with --cuda-graph-trace=node for per-kernel detail"
        )
    if with_ops < len(calls):
        hints.append(
            f"{len(calls) - with_ops} of {len(calls)} CUDA graph launch(es) have no GPU activity in the export "
            "(node-level data missing: nsys 2022.4 keeps none with --cuda-graph-trace=graph); "
            "profile with --cuda-graph-trace=node"
        )
    return hints
