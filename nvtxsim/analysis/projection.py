"""Analyse stage: attribute GPU work to NVTX ranges and summarise per phase.

Attribution follows nsys's ``nvtx_gpu_proj_*`` semantics exactly: a GPU op
(kernel, memcpy, memset) belongs to every range that wholly contains, on the
same thread, the CUDA API call that launched it; ranges that end on another
thread are left out; the projected duration is last op end minus first op
start; ``gpu_ops`` counts distinct launches (correlation ids). On top of
nsys: GPU *busy* time (the union of the op intervals, so idle gaps and overlaps
do not inflate it), kernel counts, copy bytes by direction and percentiles.

Everything is vectorised: per thread, ranges find their calls with two
``searchsorted`` over the start-sorted calls; the (range, call) pairs are then
reduced with ``reduceat``. Memory is bounded by processing ranges in chunks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, Optional

import numpy as np

from nvtxsim.errors import NvtxsimError
from nvtxsim.export.reader import KERNEL, MEMCPY, MEMSET, PID_MASK, Export, distinct

#: CUPTI copyKind → direction label used in reports.
COPY_DIRECTIONS = {1: "htod", 2: "dtoh", 8: "dtod", 10: "ptop"}
DIRECTIONS = ("htod", "dtoh", "dtod", "other")
_PAIR_CHUNK = 4_000_000  # (range, op) pairs held at once


# --------------------------------------------------------------------------- per range


@dataclass
class RangeGpu:
    """GPU attribution per range, aligned with ``Export.ranges``."""

    proj_start: np.ndarray  # int64, -1 where the range launched no GPU work
    proj_end: np.ndarray  # int64
    ops: np.ndarray  # int64: distinct launches (nsys NumGPUOps)
    kernels: np.ndarray  # int64: kernel executions
    busy: np.ndarray  # int64 ns: union of op intervals
    copy_bytes: dict[str, np.ndarray]  # direction → int64 bytes copied

    @property
    def has_gpu(self) -> np.ndarray:
        return self.ops > 0

    @property
    def proj_duration(self) -> np.ndarray:
        return np.where(self.ops > 0, self.proj_end - self.proj_start, 0)

    @classmethod
    def empty(cls, n: int) -> "RangeGpu":
        z = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
        return cls(np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64), z(), z(), z(), {d: z() for d in DIRECTIONS})


@dataclass
class _Launches:
    """GPU ops grouped per launch key (process, correlation id)."""

    keys: np.ndarray  # sorted unique int64 keys
    first_start: np.ndarray
    last_end: np.ndarray
    kernels: np.ndarray
    copy_bytes: dict[str, np.ndarray]
    op_order: np.ndarray  # op indices sorted by key
    op_offsets: np.ndarray  # op_order[op_offsets[k]:op_offsets[k+1]] are the ops of key k


def _launch_keys(pid_bits: np.ndarray, corr: np.ndarray, pid_codes: np.ndarray) -> np.ndarray:
    code = np.searchsorted(pid_codes, pid_bits)
    return (code.astype(np.int64) << 32) | (corr.astype(np.int64) & 0xFFFFFFFF)


def _group_launches(export: Export, pid_codes: np.ndarray) -> _Launches:
    gpu = export.gpu
    assert gpu is not None
    key = _launch_keys(gpu.global_pid, gpu.correlation_id, pid_codes)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    starts = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]]) if len(skey) else np.zeros(0, dtype=np.int64)
    offsets = np.r_[starts, len(skey)].astype(np.int64)
    n = len(starts)

    def seg(values: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
        return ufunc.reduceat(values[order], starts) if n else np.zeros(0, dtype=values.dtype)

    is_kernel = (gpu.kind == KERNEL).astype(np.int64)
    copy = {}
    direction = np.full(len(gpu), 3, dtype=np.int8)  # "other"
    for ck, label in COPY_DIRECTIONS.items():
        if label in DIRECTIONS:
            direction[gpu.copy_kind == ck] = DIRECTIONS.index(label)
    moving = (gpu.kind == MEMCPY)
    for i, d in enumerate(DIRECTIONS):
        copy[d] = seg(np.where(moving & (direction == i), gpu.bytes, 0), np.add)
    return _Launches(
        keys=skey[starts] if n else np.zeros(0, dtype=np.int64),
        first_start=seg(gpu.start, np.minimum),
        last_end=seg(gpu.end, np.maximum),
        kernels=seg(is_kernel, np.add),
        copy_bytes=copy,
        op_order=order,
        op_offsets=offsets,
    )


def expand_segments(offsets_lo: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For segments [lo, lo+len): (segment index per element, element index)."""
    total = int(lengths.sum())
    seg = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    if total == 0:
        return seg, np.zeros(0, dtype=np.int64)
    firsts = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=np.int64) - np.repeat(firsts, lengths)
    return seg, np.repeat(offsets_lo, lengths) + within


def _chunks(lengths: np.ndarray, budget: int) -> Iterator[slice]:
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


def _union_length(group: np.ndarray, start: np.ndarray, end: np.ndarray, ngroups: int) -> np.ndarray:
    """Per group, the total length of the union of [start, end) intervals (vectorised)."""
    out = np.zeros(ngroups, dtype=np.int64)
    if len(group) == 0:
        return out
    order = np.lexsort((start, group))
    g, s, e = group[order], start[order], end[order]
    first = np.r_[True, g[1:] != g[:-1]]
    # Running max of ends within each group: shift each group above the previous one.
    t0 = min(int(s.min()), int(e.min()))
    span = int(e.max()) - t0 + 1
    rank = np.cumsum(first) - 1
    if span * (int(rank[-1]) + 1) < (1 << 62):
        shifted = (e - t0) + rank * span
        runmax = np.maximum.accumulate(shifted) - rank * span + t0
    else:  # astronomically long captures: fall back to a loop over groups
        runmax = np.empty_like(e)
        bounds = np.r_[np.flatnonzero(first), len(g)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            runmax[a:b] = np.maximum.accumulate(e[a:b])
    prev = np.r_[np.int64(0), runmax[:-1]]
    lo = np.where(first, s, np.maximum(s, prev))
    contrib = np.maximum(e - lo, 0)
    idx = np.flatnonzero(first)
    sums = np.add.reduceat(contrib, idx)
    out[g[idx]] = sums
    return out


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


def project(export: Export) -> RangeGpu:
    """GPU attribution for every range of ``export`` (nsys projection + busy time)."""
    from nvtxsim.analysis.stream import project_stream  # large exports: one bounded-memory pass (None: not streamed)

    streamed = project_stream(export)
    if streamed is not None:
        return streamed
    r = export.ranges
    n = len(r)
    result = RangeGpu.empty(n)
    api, gpu = export.api, export.gpu
    if not export.has_cuda or n == 0 or len(gpu) == 0 or len(api) == 0:  # type: ignore[arg-type]
        return result
    assert api is not None and gpu is not None
    pid_codes = distinct(np.concatenate([gpu.global_pid, api.global_tid & PID_MASK]))
    launches = _group_launches(export, pid_codes)

    # Calls that launched GPU work, with their launch index.
    call_key = _launch_keys(api.global_tid & PID_MASK, api.correlation_id, pid_codes)
    pos = np.searchsorted(launches.keys, call_key)
    pos_c = np.minimum(pos, len(launches.keys) - 1)
    hit = (launches.keys[pos_c] == call_key) & (api.end >= api.start)
    c_idx = np.flatnonzero(hit)
    c_launch = pos_c[c_idx]
    c_tid, c_start, c_end = api.global_tid[c_idx], api.start[c_idx], api.end[c_idx]
    order = np.lexsort((c_start, c_tid))
    c_tid, c_start, c_end, c_launch = c_tid[order], c_start[order], c_end[order], c_launch[order]
    need_dedupe = bool(len(c_launch)) and int(np.bincount(c_launch).max()) > 1  # a launch matched by several calls

    eligible = np.flatnonzero(~r.cross_thread)
    if len(eligible) == 0 or len(c_tid) == 0:
        return result
    # Candidate calls per range: start-sorted calls of its thread with start in [r.start, r.end].
    lo, hi = call_windows(r.start[eligible], r.end[eligible], r.global_tid[eligible], c_tid, c_start)
    lengths = np.maximum(hi - lo, 0)

    for chunk in _chunks(lengths, _PAIR_CHUNK):
        ranges_c = eligible[chunk]
        seg, call = expand_segments(lo[chunk], lengths[chunk])
        keep = c_end[call] <= r.end[ranges_c[seg]]
        seg, call = seg[keep], call[keep]
        if len(seg) == 0:
            continue
        launch = c_launch[call]
        if need_dedupe:
            pair = np.unique(np.stack([seg, launch], axis=1), axis=0)
            seg, launch = pair[:, 0], pair[:, 1]
        bounds = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
        target = ranges_c[seg[bounds]]
        result.proj_start[target] = np.minimum.reduceat(launches.first_start[launch], bounds)
        result.proj_end[target] = np.maximum.reduceat(launches.last_end[launch], bounds)
        result.ops[target] = np.diff(np.r_[bounds, len(seg)])
        result.kernels[target] = np.add.reduceat(launches.kernels[launch], bounds)
        for d in DIRECTIONS:
            result.copy_bytes[d][target] = np.add.reduceat(launches.copy_bytes[d][launch], bounds)
        # Busy time: union of the individual op intervals of each range; chunks end on range boundaries.
        nops = launches.op_offsets[launch + 1] - launches.op_offsets[launch]
        pair_bounds = np.r_[bounds, len(seg)]
        per_range = np.add.reduceat(nops, bounds)
        for rs in _chunks(per_range, _PAIR_CHUNK):
            a, b = pair_bounds[rs.start], pair_bounds[rs.stop]
            pseg, op_pos = expand_segments(launches.op_offsets[launch[a:b]], nops[a:b])
            ops = launches.op_order[op_pos]
            local = seg[a:b][pseg]
            base = int(local.min())
            busy = _union_length(local - base, gpu.start[ops], gpu.end[ops], int(local.max()) - base + 1)
            touched = distinct(local)
            result.busy[ranges_c[touched]] = busy[touched - base]
    return result


# --------------------------------------------------------------------------- per phase


@dataclass
class PhaseStats:
    """One row of the report: every range of one (domain, name)."""

    domain: str
    name: str
    instances: int
    cpu_total_ns: int
    cpu_mean_ns: int
    cpu_median_ns: int
    cpu_p90_ns: int
    cpu_p99_ns: int
    cpu_min_ns: int
    cpu_max_ns: int
    cpu_stddev_ns: int
    gpu_instances: int  # ranges that launched GPU work
    gpu_proj_total_ns: int
    gpu_proj_mean_ns: int
    gpu_proj_median_ns: int
    gpu_busy_total_ns: int
    gpu_ops: int
    gpu_kernels: int
    memcpy_htod_bytes: int
    memcpy_dtoh_bytes: int
    memcpy_dtod_bytes: int
    memcpy_other_bytes: int
    unclosed: int
    cross_thread: int
    threads: int
    # GPU memory (only when the export has memory events, nsys --cuda-memory-usage=true):
    gpu_mem_peak_bytes: Optional[int] = None  # most the process held while an instance was open
    gpu_mem_net_bytes: Optional[int] = None  # allocations minus frees per instance, on average

    @property
    def label(self) -> str:
        return f"{self.domain}:{self.name}" if self.domain else self.name

    def as_dict(self) -> dict:
        d = asdict(self)
        for key in MEMORY_FIELDS:
            if d[key] is None:
                del d[key]  # exports without memory events keep the original fields
        return d


MEMORY_FIELDS = ("gpu_mem_peak_bytes", "gpu_mem_net_bytes")


@dataclass
class Report:
    """Per-phase statistics of one export, plus where they came from."""

    source: dict
    phases: list[PhaseStats]
    warnings: list[str] = field(default_factory=list)
    findings: Optional[Any] = None  # nvtxsim.analysis.findings.Findings, when asked for (JSON: top-level "findings")

    def as_dict(self) -> dict:
        doc = {"source": self.source, "phases": [p.as_dict() for p in self.phases], "warnings": list(self.warnings)}
        if self.findings is not None:
            doc["findings"] = self.findings.as_list()
        return doc

    def phase(self, name: str, domain: Optional[str] = None) -> PhaseStats:
        for p in self.phases:
            if p.name == name and (domain is None or p.domain == domain):
                return p
        raise KeyError(name)


def _group_quantiles(group: np.ndarray, values: np.ndarray, ngroups: int, qs: Iterable[float]) -> dict[float, np.ndarray]:
    """Per group quantiles with linear interpolation (numpy's default; q=0.5 is the usual median)."""
    order = np.lexsort((values, group))
    g, v = group[order], values[order].astype(np.float64)
    counts = np.bincount(g, minlength=ngroups)
    first = np.cumsum(counts) - counts
    out = {}
    for q in qs:
        pos = (counts - 1).clip(min=0) * q
        lo = np.floor(pos).astype(np.int64)
        hi = np.ceil(pos).astype(np.int64)
        has = counts > 0
        vlo = np.where(has, v[np.minimum(first + lo, len(v) - 1)] if len(v) else 0, 0)
        vhi = np.where(has, v[np.minimum(first + hi, len(v) - 1)] if len(v) else 0, 0)
        out[q] = vlo + (vhi - vlo) * (pos - lo)
    return out


def _rint(x: np.ndarray) -> np.ndarray:
    return np.rint(x).astype(np.int64)


def select_ranges(export: Export, domain: Optional[str] = "nvtxsim") -> np.ndarray:
    """Indices of the ranges in ``domain`` (None or "all": every domain; "default"/"": the unnamed one)."""
    if domain is None or domain == "all":
        return np.arange(len(export.ranges))
    wanted = "" if domain == "default" else domain
    ok = np.array([d == wanted for d, _ in export.labels], dtype=bool)
    return np.flatnonzero(ok[export.ranges.label]) if len(ok) else np.zeros(0, dtype=np.int64)


DEFAULT_DOMAIN = "nvtxsim"


def domains_in(export: Export) -> list[str]:
    """The domains the export's ranges are in, sorted ("default" for the unnamed one)."""
    return sorted({d or "default" for d, _ in export.labels})


def resolve_domain(export: Export, domain: Optional[str], *, given: bool = True) -> tuple[Optional[str], Optional[str]]:
    """The domain to report and, when it was widened, a one-line note saying so.

    A domain the user named (``given``) that holds no range is an error listing the domains;
    the default domain holding none (``torch.cuda.nvtx``, ``nvtx.annotate``, CuPy ... ranges)
    widens to every domain, so any NVTX export is reported without flags.
    """
    if domain is None or domain == "all" or not len(export.ranges):
        return domain, None
    wanted = "" if domain == "default" else domain
    if any(d == wanted for d, _ in export.labels):
        return domain, None
    present = ", ".join(domains_in(export))
    if given:
        raise NvtxsimError(f"no ranges in domain {domain!r}; domains in this export: {present} (or --domain all)")
    return None, f"no ranges in domain {domain!r}, so every domain is shown ({present}); --domain NAME picks one"


def summarize(
    export: Export, gpu: Optional[RangeGpu] = None, *, domain: Optional[str] = "nvtxsim", select: Optional[np.ndarray] = None
) -> Report:
    """Per-phase statistics for the ranges of ``domain``, sorted by CPU total time.

    ``select`` (range indices) narrows the ranges further: one thread, names matching a pattern, ...
    """
    if gpu is None:
        gpu = project(export)
    idx = select_ranges(export, domain)
    if select is not None:
        idx = np.intersect1d(idx, np.asarray(select, dtype=np.int64))
    r = export.ranges
    labels_used, group = np.unique(r.label[idx], return_inverse=True)
    group = group.reshape(-1)
    ng = len(labels_used)
    dur = (r.end - r.start)[idx]
    count = np.bincount(group, minlength=ng)
    total = np.bincount(group, weights=dur, minlength=ng)
    # Exact integer totals (bincount weights are float64).
    total_i = np.zeros(ng, dtype=np.int64)
    np.add.at(total_i, group, dur)
    mean = np.divide(total_i, count, out=np.zeros(ng), where=count > 0)
    sq = np.zeros(ng)
    np.add.at(sq, group, (dur - mean[group]) ** 2)
    std = np.sqrt(np.divide(sq, count - 1, out=np.zeros(ng), where=count > 1))
    q = _group_quantiles(group, dur, ng, (0.5, 0.9, 0.99, 0.0, 1.0))
    del total

    has = gpu.has_gpu[idx]
    gdur = gpu.proj_duration[idx]
    gcount = np.bincount(group[has], minlength=ng)
    gtotal = np.zeros(ng, dtype=np.int64)
    np.add.at(gtotal, group[has], gdur[has])
    gq = _group_quantiles(group[has], gdur[has], ng, (0.5,))

    def gsum(a: np.ndarray) -> np.ndarray:
        out = np.zeros(ng, dtype=np.int64)
        np.add.at(out, group, a[idx])
        return out

    busy, ops, kernels = gsum(gpu.busy), gsum(gpu.ops), gsum(gpu.kernels)
    copies = {d: gsum(gpu.copy_bytes[d]) for d in DIRECTIONS}
    unclosed = gsum(r.unclosed.astype(np.int64))
    cross = gsum(r.cross_thread.astype(np.int64))
    threads = np.zeros(ng, dtype=np.int64)
    if len(idx):
        pairs = np.unique(np.stack([group, r.global_tid[idx]], axis=1), axis=0)
        threads = np.bincount(pairs[:, 0], minlength=ng).astype(np.int64)

    phases = []
    for i, lab in enumerate(labels_used):
        dom, name = export.labels[int(lab)]
        phases.append(
            PhaseStats(
                domain=dom,
                name=name,
                instances=int(count[i]),
                cpu_total_ns=int(total_i[i]),
                cpu_mean_ns=int(_rint(mean[i : i + 1])[0]),
                cpu_median_ns=int(_rint(q[0.5][i : i + 1])[0]),
                cpu_p90_ns=int(_rint(q[0.9][i : i + 1])[0]),
                cpu_p99_ns=int(_rint(q[0.99][i : i + 1])[0]),
                cpu_min_ns=int(q[0.0][i]),
                cpu_max_ns=int(q[1.0][i]),
                cpu_stddev_ns=int(_rint(std[i : i + 1])[0]),
                gpu_instances=int(gcount[i]),
                gpu_proj_total_ns=int(gtotal[i]),
                gpu_proj_mean_ns=int(round(gtotal[i] / gcount[i])) if gcount[i] else 0,
                gpu_proj_median_ns=int(_rint(gq[0.5][i : i + 1])[0]) if gcount[i] else 0,
                gpu_busy_total_ns=int(busy[i]),
                gpu_ops=int(ops[i]),
                gpu_kernels=int(kernels[i]),
                memcpy_htod_bytes=int(copies["htod"][i]),
                memcpy_dtoh_bytes=int(copies["dtoh"][i]),
                memcpy_dtod_bytes=int(copies["dtod"][i]),
                memcpy_other_bytes=int(copies["other"][i]),
                unclosed=int(unclosed[i]),
                cross_thread=int(cross[i]),
                threads=int(threads[i]),
            )
        )
    _add_memory(export, idx, group, phases)
    phases.sort(key=lambda p: (-p.cpu_total_ns, p.domain, p.name))
    warnings = list(export.warnings)
    if len(export.ranges) and len(idx) == 0 and domain not in (None, "all"):
        warnings.append(f"no ranges in domain {domain!r}; domains present: {', '.join(domains_in(export))} (use --domain all)")
    n_unclosed = int(r.unclosed[idx].sum()) if len(idx) else 0
    if n_unclosed:
        warnings.append(f"{n_unclosed} range(s) never ended (program exited or was killed inside them, or the capture stopped first); they are counted up to the end of the capture")
    n_cross = int(r.cross_thread[idx].sum()) if len(idx) else 0
    if n_cross:
        warnings.append(f"{n_cross} range(s) ended on another thread: counted on the CPU side, left out of GPU projection (as nsys does)")
    if not export.has_cuda:
        warnings.append("export has no CUDA trace (no CUPTI runtime/kernel tables): GPU columns are 0")
    return Report(source=source_info(export), phases=phases, warnings=warnings)


def _add_memory(export: Export, idx: np.ndarray, group: np.ndarray, phases: list[PhaseStats]) -> None:
    """Peak and net GPU memory per phase (``phases`` in group order), when the export recorded it."""
    from nvtxsim.analysis.memory import range_memory

    m = range_memory(export, idx)
    if m is None:
        return
    for i, p in enumerate(phases):
        k = group == i
        if k.any():
            p.gpu_mem_peak_bytes = int(m.peak[k].max())
            p.gpu_mem_net_bytes = int(round(float(m.net[k].mean())))


def source_info(export: Export) -> dict:
    """What a report was made from, for the JSON ``source`` object."""
    gpu = export.gpu
    return {
        "path": str(export.path),
        "nsys_version": export.nsys_version,
        "schema_version": export.schema_version,
        "capture_ns": export.capture_end,
        "ranges": int(len(export.ranges)),
        "cuda_api_calls": int(len(export.api)) if export.api is not None else 0,
        "gpu_ops": int(len(gpu)) if gpu is not None else 0,
        "kernels": int((gpu.kind == KERNEL).sum()) if gpu is not None else 0,
        "memcpys": int((gpu.kind == MEMCPY).sum()) if gpu is not None else 0,
        "memsets": int((gpu.kind == MEMSET).sum()) if gpu is not None else 0,
    }
