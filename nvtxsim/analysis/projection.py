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

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from nvtxsim.analysis import stream
from nvtxsim.analysis.launches import Launches, chunks, contained_chunks, expand_segments, launches, unique_pairs
from nvtxsim.errors import NvtxsimError, debug
from nvtxsim.export.columns import Export, distinct
from nvtxsim.export.streamed import Source, source_of
from nvtxsim.schema import KERNEL, MEMCPY, MEMSET, SUMMARY_DIRECTIONS, summary_direction

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
    def empty(cls, n: int) -> RangeGpu:
        z = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
        return cls(
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            z(),
            z(),
            z(),
            {d: z() for d in SUMMARY_DIRECTIONS},
        )


@dataclass
class _PerLaunch:
    """GPU ops reduced per launch group (process, correlation id) of a :class:`Launches` join."""

    first_start: np.ndarray
    last_end: np.ndarray
    kernels: np.ndarray
    copy_bytes: dict[str, np.ndarray]


def _per_launch(export: Export, link: Launches) -> _PerLaunch:
    gpu = export.gpu
    assert gpu is not None
    order, starts = link.op_order, link.group_start[:-1]
    n = len(starts)

    def seg(values: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
        return ufunc.reduceat(values[order], starts) if n else np.zeros(0, dtype=values.dtype)

    direction = summary_direction(gpu.copy_kind)
    moving = gpu.kind == MEMCPY
    copy = {d: seg(np.where(moving & (direction == i), gpu.bytes, 0), np.add) for i, d in enumerate(SUMMARY_DIRECTIONS)}
    return _PerLaunch(
        seg(gpu.start, np.minimum), seg(gpu.end, np.maximum), seg((gpu.kind == KERNEL).astype(np.int64), np.add), copy
    )


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


def project(export: Export) -> RangeGpu:
    """GPU attribution for every range of ``export`` (nsys projection + busy time).

    A streamed export is projected in one bounded-memory pass (:mod:`nvtxsim.analysis.stream`)
    when its tables allow it; otherwise, or when that pass falls back, in memory."""
    streamed = project_stream(export)
    return streamed if streamed is not None else _project_in_memory(export)


def project_stream(export: Export) -> RangeGpu | None:
    """The streamed projection of a streamed export; None when the export is not streamed or the pass falls back."""
    src = source_of(export)
    if src is None:
        return None
    if src.projection is not None and len(src.projection.ops) == len(export.ranges):
        return src.projection
    if len(export.ranges) == 0:
        return RangeGpu.empty(0)
    out = _streamed(export, src)
    if out is not None:
        src.keep_projection(out)  # the export holds it (and its cache, if it came through one, stores it)
    return out


def _streamed(export: Export, src: Source) -> RangeGpu | None:
    try:
        return RangeGpu(**stream.project_columns(export, src))
    except stream.Fallback as exc:
        debug(f"{export.path}: streamed projection not possible ({exc}); projecting in memory")
    except (MemoryError, OSError, ValueError, IndexError) as exc:  # a bug or a hostile file: say so under NVTXSIM_DEBUG
        debug(f"{export.path}: streamed projection failed ({type(exc).__name__}: {exc}); projecting in memory", exc=exc)
    return None


def _project_in_memory(export: Export) -> RangeGpu:
    r = export.ranges
    n = len(r)
    result = RangeGpu.empty(n)
    api, gpu = export.api, export.gpu
    if not export.has_cuda or n == 0 or len(gpu) == 0 or len(api) == 0:  # type: ignore[arg-type]
        return result
    assert api is not None and gpu is not None
    link = launches(export, gpu)
    per = _per_launch(export, link)

    # Calls that launched GPU work, with their launch group.
    calls = np.flatnonzero((link.launch_id >= 0) & (api.end >= api.start))
    c_launch = link.launch_id[calls]
    need_dedupe = bool(len(c_launch)) and int(np.bincount(c_launch).max()) > 1  # a launch matched by several calls
    eligible = np.flatnonzero(~r.cross_thread)
    pairs = contained_chunks(
        r.start[eligible],
        r.end[eligible],
        r.global_tid[eligible],
        api.start[calls],
        api.end[calls],
        api.global_tid[calls],
        budget=_PAIR_CHUNK,
    )
    for seg, call in pairs:  # seg: position in eligible, sorted
        if len(seg) == 0:
            continue
        launch = c_launch[call]
        if need_dedupe:
            pair = unique_pairs(seg, launch)
            seg, launch = pair[:, 0], pair[:, 1]
        _reduce_chunk(result, export, link, per, eligible, seg, launch)
    return result


def _reduce_chunk(
    result: RangeGpu,
    export: Export,
    link: Launches,
    per: _PerLaunch,
    ranges_c: np.ndarray,
    seg: np.ndarray,
    launch: np.ndarray,
) -> None:
    """Add one chunk of (range, launch) pairs, sorted by range (``ranges_c[seg]``), to ``result``."""
    gpu = export.gpu
    assert gpu is not None
    bounds = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    target = ranges_c[seg[bounds]]
    result.proj_start[target] = np.minimum.reduceat(per.first_start[launch], bounds)
    result.proj_end[target] = np.maximum.reduceat(per.last_end[launch], bounds)
    result.ops[target] = np.diff(np.r_[bounds, len(seg)])
    result.kernels[target] = np.add.reduceat(per.kernels[launch], bounds)
    for d in SUMMARY_DIRECTIONS:
        result.copy_bytes[d][target] = np.add.reduceat(per.copy_bytes[d][launch], bounds)
    # Busy time: union of the individual op intervals of each range; chunks end on range boundaries.
    offsets = link.group_start
    nops = offsets[launch + 1] - offsets[launch]
    pair_bounds = np.r_[bounds, len(seg)]
    per_range = np.add.reduceat(nops, bounds)
    for rs in chunks(per_range, _PAIR_CHUNK):
        a, b = pair_bounds[rs.start], pair_bounds[rs.stop]
        pseg, op_pos = expand_segments(offsets[launch[a:b]], nops[a:b])
        ops = link.op_order[op_pos]
        local = seg[a:b][pseg]
        base = int(local.min())
        busy = _union_length(local - base, gpu.start[ops], gpu.end[ops], int(local.max()) - base + 1)
        touched = distinct(local)
        result.busy[ranges_c[touched]] = busy[touched - base]


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
    gpu_mem_peak_bytes: int | None = None  # most the process held while an instance was open
    gpu_mem_net_bytes: int | None = None  # allocations minus frees per instance, on average

    @property
    def label(self) -> str:
        return f"{self.domain}:{self.name}" if self.domain else self.name

    def as_dict(self) -> dict:
        d = row_dict(self)
        for key in MEMORY_FIELDS:
            if d[key] is None:
                del d[key]  # exports without memory events keep the original fields
        return d


MEMORY_FIELDS = ("gpu_mem_peak_bytes", "gpu_mem_net_bytes")


@functools.cache
def _row_shape(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A row class's field names, and those that may hold a dict or list (copied one level)."""
    fs = fields(cls)
    return tuple(f.name for f in fs), tuple(
        f.name for f in fs if any(t in str(f.type) for t in ("dict", "list", "Any"))
    )


def row_dict(row: Any) -> dict:
    """A result-row dataclass as a dict, like ``dataclasses.asdict`` for rows of scalars but without its
    deep copy of every value (a dict or list value is copied one level): ten times faster, which
    matters with 100,000 phases."""
    names, nested = _row_shape(row.__class__)
    try:
        own: dict | None = vars(row)  # the row's fields, when they are all it holds
    except TypeError:  # a row class with __slots__
        own = None
    d = own.copy() if own is not None and len(own) == len(names) else {n: getattr(row, n) for n in names}
    for n in nested:
        v = d[n]
        d[n] = dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v
    return d


@dataclass
class PhaseSummary:
    """Per-phase statistics of one export, plus where they came from."""

    source: dict
    phases: list[PhaseStats]
    warnings: list[str] = field(default_factory=list)
    findings: Any | None = None  # nvtxsim.analysis.findings.Findings, when asked for (JSON: top-level "findings")
    headline: Any | None = None  # nvtxsim.analysis.headline.Headline: the line above the table (text formats)

    def as_dict(self) -> dict:
        doc = {"source": self.source, "phases": [p.as_dict() for p in self.phases], "warnings": list(self.warnings)}
        if self.findings is not None:
            doc["findings"] = self.findings.as_list()
        return doc

    def phase(self, name: str, domain: str | None = None) -> PhaseStats:
        for p in self.phases:
            if p.name == name and (domain is None or p.domain == domain):
                return p
        raise KeyError(name)


def _group_quantiles(
    group: np.ndarray, values: np.ndarray, ngroups: int, qs: Iterable[float]
) -> dict[float, np.ndarray]:
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


def select_ranges(export: Export, domain: str | None = "nvtxsim") -> np.ndarray:
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


def resolve_domain(export: Export, domain: str | None, *, given: bool = True) -> tuple[str | None, str | None]:
    """The domain to report and, when it was widened, a one-line note saying so.

    A domain the user named (``given``) that holds no range is an error listing the domains;
    the default domain holding none (``torch.cuda.nvtx``, ``nvtx.annotate``, CuPy ... ranges)
    widens to every domain, so any NVTX export is reported without flags.
    """
    if domain is None or domain == "all":
        return domain, None
    if not len(export.ranges):
        if given:
            raise NvtxsimError(f"no ranges in domain {domain!r}: this export holds no NVTX range in any domain")
        return domain, None
    wanted = "" if domain == "default" else domain
    if any(d == wanted for d, _ in export.labels):
        return domain, None
    present = ", ".join(domains_in(export))
    if given:
        raise NvtxsimError(f"no ranges in domain {domain!r}; domains in this export: {present} (or --domain all)")
    return None, f"no ranges in domain {domain!r}, so every domain is shown ({present}); --domain NAME picks one"


def summarize(
    export: Export, gpu: RangeGpu | None = None, *, domain: str | None = "nvtxsim", select: np.ndarray | None = None
) -> PhaseSummary:
    """Per-phase statistics for the ranges of ``domain``, sorted by CPU total time.

    ``select`` (range indices) narrows the ranges further: one thread, names matching a pattern, ...
    """
    if gpu is None:
        gpu = project(export)
    idx = select_ranges(export, domain)
    if select is not None:
        idx = np.intersect1d(idx, np.asarray(select, dtype=np.int64))
    labels_used, group = np.unique(export.ranges.label[idx], return_inverse=True)
    group = group.reshape(-1)
    cols = {**_cpu_columns(export, idx, group, len(labels_used)), **_gpu_columns(gpu, idx, group, len(labels_used))}
    phases = []
    for i, lab in enumerate(labels_used):
        dom, name = export.labels[int(lab)]
        phases.append(PhaseStats(domain=dom, name=name, **{k: int(v[i]) for k, v in cols.items()}))
    _add_memory(export, idx, group, phases)
    phases.sort(key=lambda p: (-p.cpu_total_ns, p.domain, p.name))
    return PhaseSummary(source=source_info(export), phases=phases, warnings=_summary_warnings(export, idx, domain))


def _group_sum(group: np.ndarray, values: np.ndarray, ng: int) -> np.ndarray:
    """Exact int64 sum per group (bincount weights would be float64)."""
    out = np.zeros(ng, dtype=np.int64)
    np.add.at(out, group, values)
    return out


def _cpu_columns(export: Export, idx: np.ndarray, group: np.ndarray, ng: int) -> dict[str, np.ndarray]:
    """The CPU side of each phase: instance count, duration statistics, unclosed/cross-thread ranges, threads."""
    r = export.ranges
    dur = (r.end - r.start)[idx]
    count = np.bincount(group, minlength=ng)
    total = _group_sum(group, dur, ng)
    mean = np.divide(total, count, out=np.zeros(ng), where=count > 0)
    sq = np.zeros(ng)
    np.add.at(sq, group, (dur - mean[group]) ** 2)
    std = np.sqrt(np.divide(sq, count - 1, out=np.zeros(ng), where=count > 1))
    q = _group_quantiles(group, dur, ng, (0.5, 0.9, 0.99, 0.0, 1.0))
    threads = np.zeros(ng, dtype=np.int64)
    if len(idx):
        pairs = np.unique(np.stack([group, r.global_tid[idx]], axis=1), axis=0)
        threads = np.bincount(pairs[:, 0], minlength=ng).astype(np.int64)
    return {
        "instances": count,
        "cpu_total_ns": total,
        "cpu_mean_ns": _rint(mean),
        "cpu_median_ns": _rint(q[0.5]),
        "cpu_p90_ns": _rint(q[0.9]),
        "cpu_p99_ns": _rint(q[0.99]),
        "cpu_min_ns": q[0.0].astype(np.int64),
        "cpu_max_ns": q[1.0].astype(np.int64),
        "cpu_stddev_ns": _rint(std),
        "unclosed": _group_sum(group, r.unclosed[idx].astype(np.int64), ng),
        "cross_thread": _group_sum(group, r.cross_thread[idx].astype(np.int64), ng),
        "threads": threads,
    }


def _gpu_columns(gpu: RangeGpu, idx: np.ndarray, group: np.ndarray, ng: int) -> dict[str, np.ndarray]:
    """The GPU side of each phase: projected span statistics over the ranges that launched work, busy time, counts, bytes."""
    has = gpu.has_gpu[idx]
    gdur = gpu.proj_duration[idx]
    gcount = np.bincount(group[has], minlength=ng)
    gtotal = _group_sum(group[has], gdur[has], ng)
    gq = _group_quantiles(group[has], gdur[has], ng, (0.5,))
    copies = {d: _group_sum(group, gpu.copy_bytes[d][idx], ng) for d in SUMMARY_DIRECTIONS}
    return {
        "gpu_instances": gcount,
        "gpu_proj_total_ns": gtotal,
        "gpu_proj_mean_ns": np.array(
            [int(round(t / c)) if c else 0 for t, c in zip(gtotal.tolist(), gcount.tolist())], dtype=np.int64
        ),
        "gpu_proj_median_ns": np.where(gcount > 0, _rint(gq[0.5]), 0),
        "gpu_busy_total_ns": _group_sum(group, gpu.busy[idx], ng),
        "gpu_ops": _group_sum(group, gpu.ops[idx], ng),
        "gpu_kernels": _group_sum(group, gpu.kernels[idx], ng),
        **{f"memcpy_{d}_bytes": copies[d] for d in SUMMARY_DIRECTIONS},
    }


def _summary_warnings(export: Export, idx: np.ndarray, domain: str | None) -> list[str]:
    r = export.ranges
    warnings = list(export.warnings)
    if len(export.ranges) and len(idx) == 0 and domain not in (None, "all"):
        warnings.append(
            f"no ranges in domain {domain!r}; domains present: {', '.join(domains_in(export))} (use --domain all)"
        )
    n_unclosed = int(r.unclosed[idx].sum()) if len(idx) else 0
    if n_unclosed:
        warnings.append(
            f"{n_unclosed} range(s) never ended (program exited or was killed inside them, or the capture stopped first); they are counted up to the end of the capture"
        )
    n_cross = int(r.cross_thread[idx].sum()) if len(idx) else 0
    if n_cross:
        warnings.append(
            f"{n_cross} range(s) ended on another thread: counted on the CPU side, left out of GPU projection (as nsys does)"
        )
    if not export.has_cuda:
        warnings.append(f"export has {export.no_cuda_reason}: GPU columns are 0")
    return warnings


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
    trigger = {"trigger": export.trigger} if export.trigger else {}  # only in a triggered capture
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
        **trigger,
    }
