"""Findings: which phase is slow, why, and what to do about it.

The report's numbers (CPU and GPU time, syncs, copies, launches) are turned into a short
list of diagnoses, one per (phase, kind), each with its cost, the numbers behind it and one
concrete piece of advice. Thresholds and their reasoning: docs/findings.md.

Where time goes is decided per *innermost* phase, so a problem is reported once, at the
phase that contains it, not again at every enclosing phase (``iteration``):

* a synchronizing CUDA call or a host copy belongs to the innermost selected range around
  its API call on the calling thread;
* a phase's *self* numbers are its ranges' numbers minus their child ranges' (CPU self
  time, launches, GPU busy time of the work launched inside);
* GPU work launched from a thread outside any range of that thread (autograd's backward
  thread, a Python worker) is nsys-unattributed: it belongs, by time overlap only, to the
  innermost phase open on another thread of the process when it was launched
  (``other_thread_gpu``), or to nothing (``unattributed_gpu``).

Costs are ns over the capture (after ``skip_first``), and per iteration when the loop's
iterations are known (the ``by`` range).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property

import numpy as np

from nvtxsim.analysis.gpu import gpu_idle_per_range, is_sync_api
from nvtxsim.analysis.iterations import Iterations, culprits, per_iteration
from nvtxsim.analysis.launches import api_name, contained, innermost, ops_of
from nvtxsim.analysis.projection import _union_length
from nvtxsim.analysis.selection import Detail
from nvtxsim.analysis.tree import RangeTree, build
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import ApiCalls
from nvtxsim.export.schema import PID_MASK, RUNTIME_TABLE
from nvtxsim.export.tables import connect

KINDS = (
    "sync",
    "pageable_copy",
    "launch_bound",
    "cpu_bound",
    "other_thread_gpu",
    "gpu_bound",
    "outlier_iterations",
    "unattributed_gpu",
)
SEVERITIES = ("high", "medium", "low")
INFORMATIONAL = ("gpu_bound",)  # says where the time goes, not what is wrong: listed after the others
OUTSIDE = "(outside phases)"  # phase of unattributed_gpu
OUTSIDE_LOOP = "(before or after the phases)"  # GPU work outside every phase before the first kept range or after the last: setup, teardown

# Thresholds (reasoning in docs/findings.md). Shares are of the reference time: the summed
# iteration durations when iterations are known, else the span of the selected ranges.
MIN_SHARE = 0.01  # findings costing less than 1 % are left out ...
SYNC_MIN_SHARE = 0.001  # ... except syncs and pageable copies: they also cost CPU/GPU overlap
HIGH_SHARE, MEDIUM_SHARE = 0.10, 0.03
PAGEABLE_MIN_BYTES = 1 << 20  # pageable bytes over the capture below this are scalars (.item())
BIG_COPY_BYTES = 1 << 16  # copies this large reach bandwidth: used for the pinned reference rate
LAUNCH_MIN_PER_RANGE = 20  # launch-bound: at least this many launches per range instance ...
LAUNCH_MAX_CPU_PER_LAUNCH_NS = 50_000  # ... each costing under 50 µs of CPU time ...
LAUNCH_MAX_OP_NS = 20_000  # ... running under 20 µs on the GPU on average ...
LAUNCH_MAX_GPU_SHARE = 0.5  # ... so that the GPU is busy under half of the phase's own time
CPU_BOUND_MAX_GPU_SHARE = 0.10  # cpu-bound: GPU busy under 10 % of the phase's own CPU time ...
CPU_BOUND_GPU_SATURATED = 0.80  # ... unless the GPU is busy 80 % of the iteration anyway (hidden)
GPU_BOUND_MIN_RATIO = 0.8  # gpu-bound: GPU busy at least 0.8× the phase's own CPU time
OUTLIER_FACTOR = 2.0  # iterations longer than 2× the median

ADVICE = {  # one concrete sentence each, at most 71 characters (the terminal block's second line)
    "sync": "replace .item()/.cpu()/nonzero() by tensor ops, or move them out",
    "pageable_copy": "copy via pinned memory (pin_memory=True) with non_blocking=True",
    "launch_bound": "fuse these kernels: CUDA-graph or torch.compile this function",
    "cpu_bound": "CPU-limited: vectorise Python loops into tensor ops, or torch.compile",
    "other_thread_gpu": "not in this phase's nsys GPU columns: see --view overlap",
    "gpu_bound": "GPU-limited: speed up its top kernels (--view kernels)",
    "outlier_iterations": "look for compilation, GC or I/O there; skip warm-up: --skip-first",
    "unattributed_gpu": "wrap this work (warm-up, logging, evaluation) in a phase",
}


@dataclass
class Finding:
    phase: str  # "<domain>:<name>", or OUTSIDE for unattributed_gpu
    kind: str
    severity: str  # high | medium | low
    cost_ns: int  # over the capture (after skip_first)
    cost_per_iteration_ns: int | None  # None when the iterations are not known
    evidence: dict = field(default_factory=dict)
    advice: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


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


def user_ranges(export, ranges: np.ndarray) -> np.ndarray:
    """``ranges`` without those of library domains (LIBRARY_DOMAINS)."""
    dom = export.ranges.domain
    if not len(ranges) or not len(dom):
        return ranges
    names = np.unique(dom[ranges])
    lib = [d for d in names.tolist() if str(d).lower() in LIBRARY_DOMAINS]
    return ranges[~np.isin(dom[ranges], lib)] if lib else ranges


def severity(share: float) -> str:
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


class _Context:
    """Shared per-report data: nesting, per-label self numbers, iterations, the reference time."""

    def __init__(self, detail: Detail, by: str | None, skip_first: int) -> None:
        self.d = detail
        self.ex = detail.export
        self.r = detail.export.ranges
        try:
            self.it: Iterations | None = (
                per_iteration(detail, by, skip_first=skip_first) if len(detail.selected) else None
            )
        except NvtxsimError:
            self.it = None
        if self.it is not None and len(self.it) == 0:
            self.it = None
        sel = self.phases = user_ranges(detail.export, detail.selected)
        # Ranges of skipped (warm-up) iterations are left out; ranges between iterations stay.
        self.ranges = sel if self.it is None or not self.it.skipped else sel[~self._in_skipped(sel)]

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

    @cached_property
    def calls(self) -> ApiCalls:
        return notable_calls(self.d)

    @cached_property
    def copy_calls(self) -> np.ndarray:
        """Per host copy of the export: the position in :attr:`calls` of its launching call, -1 if none."""
        hc = getattr(self.ex.extras, "host_copies", None)
        return _copy_calls(self, hc) if hc is not None else np.zeros(0, dtype=np.int64)

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

    def finding(
        self,
        phase: str,
        kind: str,
        cost: float,
        evidence: dict,
        *,
        min_share: float = MIN_SHARE,
        sev: str | None = None,
    ) -> Finding | None:
        share = self.share(cost)
        if share < min_share:
            return None
        evidence = {"share_of_time": round(share, 4), **evidence}
        if phase in self.off_loop:
            evidence["off_loop_thread"] = True
            sev = "low"
        return Finding(
            phase, kind, sev or severity(share), int(round(cost)), self.per_iter(cost), evidence, ADVICE[kind]
        )


def _is_copy_api(name: str) -> bool:
    return name.startswith(("cudaMemcpy", "cuMemcpy"))


def _notable_ids(detail: Detail) -> list[int]:
    return [i for i, v in detail.export.strings.items() if is_sync_api(v) or _is_copy_api(api_name(v))]


def notable_calls(detail: Detail) -> ApiCalls:
    """The CUDA calls the findings look at: synchronizing calls and memcpys (every thread).

    A streamed export (millions of calls, columns read on demand) is not materialised for them: the
    projection's pass keeps them on its way when :func:`prefetch` asked it to, else one filtered
    query reads just these rows."""
    ex = detail.export
    api = ex.api
    empty = ApiCalls(*(np.zeros(0, dtype=np.int64) for _ in range(5)))
    ids = _notable_ids(detail) if api is not None else []
    if not ids:
        return empty
    from nvtxsim.export.streamed import source_of

    src = source_of(ex)
    assert api is not None
    if src is not None and "name_id" not in api.__dict__:
        a = src.watched if src.watched is not None else _query_calls(src.path, ids)
        return ApiCalls(*(a[:, i].copy() for i in range(5)))
    m = np.isin(api.name_id, ids)
    return ApiCalls(api.start[m], api.end[m], api.global_tid[m], api.correlation_id[m], api.name_id[m])


def _query_calls(path, ids: list[int]) -> np.ndarray:
    conn = connect(path)
    try:
        rows = conn.execute(
            f"SELECT start, end, globalTid, correlationId, nameId FROM {RUNTIME_TABLE} WHERE nameId IN ({','.join(map(str, ids))}) "
            "AND start IS NOT NULL AND end IS NOT NULL AND globalTid IS NOT NULL AND correlationId IS NOT NULL"
        ).fetchall()
    finally:
        conn.close()
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
#: Names of the calls a streamed export's pass keeps (tags < 0, see :func:`prefetch`): CUPTI records one
#: synchronization row per explicit synchronize call (syncType 1 event, 3 stream, 4 context; 2 is a stream
#: waiting on an event, no host wait), and the host copies give their launching calls.
WATCH_NAMES = {
    -1: "cudaEventSynchronize",
    -3: "cudaStreamSynchronize",
    -4: "cudaDeviceSynchronize",
    -10: "cudaMemcpyAsync",
}


def api_label(export, name_id: int) -> str:
    """The API name of a call, also for the tags a streamed export's pass gives the calls it keeps."""
    return WATCH_NAMES.get(int(name_id), "") if name_id < 0 else api_name(export.string(int(name_id)))


def prefetch(detail: Detail) -> None:
    """For a streamed export whose projection has not run yet: ask its pass over the CUDA calls to keep
    the synchronize calls and the host copies' calls on its way, by correlation id (from the small
    synchronization and memcpy tables): no second scan of the calls, no extra column read. Their names
    are then the CUDA call kinds (WATCH_NAMES); synchronous ``cudaMemcpy`` calls are not among them."""
    from nvtxsim.export.streamed import source_of

    ex = detail.export
    src = source_of(ex) if ex.api is not None else None
    if src is None or src.projection is not None or "gpu" in detail.__dict__:
        return
    parts = []
    if SYNC_TABLE in ex.tables:
        conn = connect(src.path)
        try:
            cols = {row[1] for row in conn.execute(f"PRAGMA table_info({SYNC_TABLE})")}
            if {"globalPid", "correlationId", "syncType"} <= cols:
                rows = conn.execute(
                    f"SELECT globalPid, -syncType, correlationId FROM {SYNC_TABLE} WHERE syncType IN (1, 3, 4) "
                    "AND globalPid IS NOT NULL AND correlationId IS NOT NULL"
                ).fetchall()
                parts.append(np.array(rows, dtype=np.int64).reshape(-1, 3)[:, [0, 2, 1]])
        finally:
            conn.close()
    hc = getattr(ex.extras, "host_copies", None)
    if hc is not None and len(hc):
        parts.append(np.column_stack([hc.global_pid, hc.correlation_id, np.full(len(hc), -10, dtype=np.int64)]))
    src.watch = np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int64)


def _named(ctx: _Context, pred) -> np.ndarray:
    """Positions in ``ctx.calls`` of the calls whose API name satisfies ``pred``."""
    ids, inv = np.unique(ctx.calls.name_id, return_inverse=True)
    ok = np.array([bool(pred(api_label(ctx.ex, int(i)))) for i in ids], dtype=bool)
    return np.flatnonzero(ok[inv.reshape(-1)]) if len(ids) else np.zeros(0, dtype=np.int64)


def _by_label(ctx: _Context, owners: np.ndarray) -> dict[str, np.ndarray]:
    """Group call positions by the label of their owning range (owners -1 dropped)."""
    pos = np.flatnonzero(owners >= 0)
    labels = ctx.r.label[owners[pos]]
    order = np.argsort(labels, kind="stable")
    uniq, first = np.unique(labels[order], return_index=True)
    groups = np.split(pos[order], first[1:])
    return {str(ctx.d.label_names[lab]): g for lab, g in zip(uniq.tolist(), groups)}


def _blocked(owner: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """Time inside the owning ranges covered by the calls (union per range: nested driver calls once)."""
    if len(owner) == 0:
        return 0
    codes, inv = np.unique(owner, return_inverse=True)
    return int(_union_length(inv.reshape(-1), start, end, len(codes)).sum())


# --------------------------------------------------------------------------- sync, pageable copies


def _implicit_sync_copies(ctx: _Context) -> np.ndarray:
    """Host copies that are syncs: small D→H copies into pageable memory (``.cpu()``, ``.tolist()`` of a
    few values; ``.item()`` on older PyTorch). CUDA returns from such a copy only once it is done, so the
    CPU waits in it for all the work queued before, and the ``cudaStreamSynchronize`` after it finds the
    GPU idle: counting only the synchronize calls would miss the wait."""
    hc = getattr(ctx.ex.extras, "host_copies", None)
    if hc is None or not len(hc):
        return np.zeros(0, dtype=bool)
    return hc.pageable & (hc.copy_kind == 2) & (hc.bytes < BIG_COPY_BYTES)


def sync_findings(ctx: _Context, claimed: np.ndarray | None = None) -> tuple[list[Finding], dict[str, int]]:
    """Synchronizing CUDA calls per innermost phase, implicit ones (pageable D→H copies) included, but the
    ``claimed`` calls (those of a pageable copy finding); also returns the blocked time per phase."""
    api = ctx.calls
    calls = _named(ctx, is_sync_api)
    if claimed is not None and len(claimed):
        calls = np.setdiff1d(calls, claimed)
    # D→H copies into pageable memory block until done: those no copy finding claims (the small ones, or
    # a phase's few below PAGEABLE_MIN_BYTES over the capture) are syncs.
    hc = getattr(ctx.ex.extras, "host_copies", None)
    blocking = hc.pageable & (hc.copy_kind == 2) if hc is not None and len(hc) else np.zeros(0, dtype=bool)
    copy_calls = ctx.copy_calls[blocking] if blocking.any() else np.zeros(0, dtype=np.int64)
    copy_calls = np.setdiff1d(copy_calls[copy_calls >= 0], claimed if claimed is not None else [])
    calls = np.union1d(calls, copy_calls)
    if len(calls) == 0:
        return [], {}
    owner = ctx.owner(api.start[calls], api.end[calls], api.global_tid[calls])
    out, blocked = [], {}
    for phase, pos in _by_label(ctx, owner).items():
        c = calls[pos]
        wait = _blocked(owner[pos], api.start[c], api.end[c])
        blocked[phase] = wait
        names: dict[str, int] = {}
        waits: dict[str, int] = {}  # time per API name: which kind of sync the advice is about
        via_copy = np.isin(c, copy_calls)
        for i, nid in enumerate(api.name_id[c].tolist()):
            key = api_label(ctx.ex, int(nid)) + (" D→H pageable" if via_copy[i] else "")
            names[key] = names.get(key, 0) + 1
            waits[key] = waits.get(key, 0) + int(api.end[c[i]] - api.start[c[i]])
        explicit = int((~via_copy).sum())  # the synchronize calls, as --view syncs counts them
        ev = {
            "calls": explicit,
            "pageable_d2h_copies": int(via_copy.sum()),
            "blocked_ns": wait,
            "apis": dict(sorted(names.items(), key=lambda kv: -kv[1])),
        }
        if ctx.iterations:
            ev["calls_per_iteration"] = round((explicit or int(via_copy.sum())) / ctx.iterations, 2)
        f = ctx.finding(phase, "sync", wait, ev, min_share=SYNC_MIN_SHARE)
        if f is not None:
            f.advice = sync_advice(max(waits, key=lambda k: waits[k]))
            out.append(f)
    return out, blocked


SYNC_ADVICE = (  # (what the API name starts with, advice): the sync that waited longest decides
    (
        ("cudaDeviceSynchronize", "cuCtxSynchronize", "cudaThreadSynchronize"),
        "drop torch.cuda.synchronize() from the step; time with CUDA events",
    ),
    (("cudaEventSynchronize", "cuEventSynchronize"), "read CUDA events after the loop, not in every step"),
    (("cudaMemcpy", "cuMemcpy"), "keep the values on the GPU, or copy non_blocking into pinned memory"),
)


def sync_advice(api: str) -> str:
    """The advice for a sync finding whose longest wait was in ``api`` (stream syncs: ``.item()`` and the like)."""
    return next((advice for prefixes, advice in SYNC_ADVICE if api.startswith(prefixes)), ADVICE["sync"])


def _copy_calls(ctx: _Context, hc) -> np.ndarray:
    """Per host copy: the index of its launching CUDA call (same process and correlation id), -1 if none."""
    api = ctx.calls
    out = np.full(len(hc), -1, dtype=np.int64)
    calls = _named(ctx, lambda n: _is_copy_api(api_name(n)))
    if len(calls) == 0 or len(hc) == 0:
        return out
    pids = np.unique(np.concatenate([api.global_tid[calls] & PID_MASK, hc.global_pid]))
    key = lambda p, c: (np.searchsorted(pids, p).astype(np.int64) << 32) | (c & 0xFFFFFFFF)  # noqa: E731
    k_calls = key(api.global_tid[calls] & PID_MASK, api.correlation_id[calls])
    order = np.argsort(k_calls, kind="stable")
    k_sorted = k_calls[order]
    k_hc = key(hc.global_pid, hc.correlation_id)
    j = np.minimum(np.searchsorted(k_sorted, k_hc), len(k_sorted) - 1)
    hit = k_sorted[j] == k_hc
    out[hit] = calls[order[j[hit]]]
    return out


def _pinned_rate(hc, direction: int) -> float | None:
    """GB/s of the large pinned copies of this direction in the capture (the rate pinned memory gets)."""
    m = hc.pinned & (hc.copy_kind == direction) & (hc.bytes >= BIG_COPY_BYTES)
    t = int((hc.end - hc.start)[m].sum())
    return float(hc.bytes[m].sum()) / t if t else None


def pageable_findings(ctx: _Context) -> tuple[list[Finding], dict[str, int], np.ndarray]:
    """Host↔device copies through pageable memory, per innermost phase of the launching call; also the
    blocked time per phase and the calls (positions in ``ctx.calls``) the copy findings claim: a
    synchronous ``cudaMemcpy`` of them is not counted again as a sync."""
    hc = getattr(ctx.ex.extras, "host_copies", None)
    api = ctx.calls
    claimed: list[np.ndarray] = []
    if hc is None or not hc.pageable.any():
        return [], {}, np.zeros(0, dtype=np.int64)
    call = ctx.copy_calls
    idx = np.flatnonzero(hc.pageable & (call >= 0) & ~_implicit_sync_copies(ctx))  # the small D→H ones are syncs
    c = call[idx]
    owner = ctx.owner(api.start[c], api.end[c], api.global_tid[c])
    out, blocked = [], {}
    for phase, pos in _by_label(ctx, owner).items():
        ops, cs = idx[pos], c[pos]
        nbytes = int(hc.bytes[ops].sum())
        if nbytes < PAGEABLE_MIN_BYTES:
            continue  # a few small uploads; a synchronous one among them is a sync
        cost = _blocked(owner[pos], api.start[cs], api.end[cs])
        blocked[phase] = cost
        claimed.append(cs)
        gpu_ns = int((hc.end - hc.start)[ops].sum())
        ev: dict = {
            "copies": int(len(ops)),
            "bytes": nbytes,
            "gpu_ns": gpu_ns,
            "cpu_in_calls_ns": cost,
            "gbps": round(nbytes / gpu_ns, 2) if gpu_ns else None,
            "directions": {},
        }
        for d, name in ((1, "H→D"), (2, "D→H")):
            m = hc.copy_kind[ops] == d
            if m.any():
                rate = _pinned_rate(hc, d)
                ev["directions"][name] = {
                    "copies": int(m.sum()),
                    "bytes": int(hc.bytes[ops][m].sum()),
                    "pinned_gbps": round(rate, 2) if rate else None,
                }
        ev["apis"] = sorted({api_label(ctx.ex, int(n)) for n in np.unique(api.name_id[cs])})
        f = ctx.finding(phase, "pageable_copy", cost, ev, min_share=SYNC_MIN_SHARE)
        if f is not None:
            out.append(f)
    return out, blocked, np.unique(np.concatenate(claimed)) if claimed else np.zeros(0, dtype=np.int64)


# --------------------------------------------------------------------------- launch-, CPU-, GPU-bound


@dataclass
class PhaseSelf:
    """A phase's own numbers, its child phases' subtracted (sums over its kept ranges)."""

    phase: str
    instances: int
    cpu_self_ns: int
    launches: int
    gpu_busy_ns: int  # busy time of the work launched in the phase itself (nsys rule, children subtracted)
    gpu_idle_ns: int = 0  # its own time (children's removed) with no GPU op of the process running, whoever launched it


def _gpu_idle(ctx: _Context, idx: np.ndarray) -> np.ndarray:
    """Per range: its time with no GPU op of its process running. A streamed export whose GPU ops are
    not in memory yet gets its CPU time (no cap): reading every op for this would cost more than the
    findings' whole budget."""
    from nvtxsim.export.streamed import source_of

    if source_of(ctx.ex) is not None and "ops" not in ctx.d.__dict__:
        return (ctx.r.end - ctx.r.start)[idx].astype(np.int64)
    return gpu_idle_per_range(ctx.d, idx)


def phase_self(ctx: _Context) -> list[PhaseSelf]:
    tree, g = ctx.tree, ctx.d.gpu
    idx, parent = tree.nesting.ranges, tree.nesting.parent
    ops, busy = g.ops[idx].astype(np.int64), g.busy[idx].astype(np.int64)
    kids = np.flatnonzero(parent >= 0)
    child_ops = np.bincount(parent[kids], weights=ops[kids], minlength=len(idx)).astype(np.int64)
    child_busy = np.bincount(parent[kids], weights=busy[kids], minlength=len(idx)).astype(np.int64)
    keep = ctx.kept
    lab = ctx.r.label[idx][keep].astype(np.int64)
    n = len(ctx.ex.labels)

    def per_label(v: np.ndarray) -> np.ndarray:
        return np.bincount(lab, weights=v[keep], minlength=n).astype(np.int64)

    idle = _gpu_idle(ctx, idx)
    child_idle = np.bincount(parent[kids], weights=idle[kids], minlength=len(idx)).astype(np.int64)
    cnt = np.bincount(lab, minlength=n)
    cpu = per_label(tree.cpu_self)
    launches = per_label(np.maximum(ops - child_ops, 0))
    own_busy = per_label(np.maximum(busy - child_busy, 0))
    own_idle = per_label(np.maximum(idle - child_idle, 0))
    names = ctx.d.label_names
    return [
        PhaseSelf(str(names[k]), int(cnt[k]), int(cpu[k]), int(launches[k]), int(own_busy[k]), int(own_idle[k]))
        for k in np.flatnonzero(cnt)
    ]


def _gpu_saturation(ctx: _Context) -> float | None:
    """GPU busy share of the iterations (work launched inside them on the key thread), None if unknown."""
    it = ctx.it
    if it is None or not it.duration.sum():
        return None
    return float(it.gpu_busy.sum()) / float(it.duration.sum())


def bound_findings(
    ctx: _Context, blocked: dict[str, int], explained: set[str], others: dict[str, OtherThreadGpu]
) -> list[Finding]:
    """launch_bound, cpu_bound and gpu_bound from each phase's own CPU time, launches and GPU busy time.

    ``blocked``: CPU time per phase already explained (waits in syncs and pageable copies, excess of
    outlier iterations); ``explained``: phases with a sync or copy finding, whose GPU time is the
    copy waited for (no gpu_bound there); ``others``: per phase, the work other threads launched
    while it was open (a phase blocked in ``backward()`` waits for autograd's launches)."""
    out = []
    saturation = _gpu_saturation(ctx)
    key = ctx.it.key if ctx.it is not None else None
    for p in phase_self(ctx):
        if p.phase == key:
            continue  # the iteration's own time is the gaps between its phases
        work = max(p.cpu_self_ns - blocked.get(p.phase, 0), 0)  # CPU time not spent waiting on the GPU
        ev: dict[str, object] = {
            "instances": p.instances,
            "cpu_self_ns": p.cpu_self_ns,
            "cpu_work_ns": work,
            "launches": p.launches,
            "gpu_busy_ns": p.gpu_busy_ns,
            "gpu_idle_ns": p.gpu_idle_ns,
        }
        # What launch- or CPU-bound work costs is the time the GPU sits idle meanwhile: CPU time during
        # which the GPU runs work queued earlier (or another thread's) is hidden behind it.
        lost = min(work - p.gpu_busy_ns, p.gpu_idle_ns)
        o = others.get(p.phase)
        if o is not None:
            ev.update({"other_thread_launches": o.launches, "other_thread_gpu_ns": o.gpu_busy_ns})
            p = PhaseSelf(
                p.phase,
                p.instances,
                p.cpu_self_ns,
                p.launches + o.launches,
                p.gpu_busy_ns + o.gpu_busy_ns,
                p.gpu_idle_ns,
            )
        gpu_share = p.gpu_busy_ns / work if work else 0.0
        per_launch = work / p.launches if p.launches else None
        mean_op = p.gpu_busy_ns / p.launches if p.launches else None
        ev.update(
            {
                "gpu_busy_share": round(gpu_share, 3),
                "cpu_per_launch_ns": _r(per_launch),
                "gpu_per_launch_ns": _r(mean_op),
            }
        )
        if (
            p.launches >= LAUNCH_MIN_PER_RANGE * p.instances
            and per_launch is not None
            and per_launch < LAUNCH_MAX_CPU_PER_LAUNCH_NS
            and mean_op is not None
            and mean_op < LAUNCH_MAX_OP_NS
            and gpu_share < LAUNCH_MAX_GPU_SHARE
        ):
            ev["launches_per_range"] = round(p.launches / p.instances, 1)
            f = ctx.finding(p.phase, "launch_bound", lost, ev)
        elif (per_launch is None or per_launch >= LAUNCH_MAX_CPU_PER_LAUNCH_NS) and gpu_share < CPU_BOUND_MAX_GPU_SHARE:
            if saturation is not None:
                ev["iteration_gpu_busy_share"] = round(saturation, 3)
            if saturation is not None and saturation >= CPU_BOUND_GPU_SATURATED:
                continue  # the GPU is busy anyway: this CPU time is hidden behind GPU work
            f = ctx.finding(p.phase, "cpu_bound", lost, ev)
            if f is not None:
                _cuda_call_time(ctx, f)
        elif p.gpu_busy_ns >= GPU_BOUND_MIN_RATIO * max(work, 1) and p.launches and p.phase not in explained:
            f = ctx.finding(p.phase, "gpu_bound", p.gpu_busy_ns, ev, sev="low")
        else:
            f = None
        if f is not None:
            out.append(f)
    return out


ALLOC_APIS = (
    "cudaMalloc",
    "cudaFree",
    "cuMemAlloc",
    "cuMemFree",
    "cudaHostAlloc",
    "cudaFreeHost",
    "cuMemHostAlloc",
    "cuMemFreeHost",
)
CUDA_CALLS_SHARE = 0.5  # a CPU-bound phase spending half its CPU time in CUDA calls is not Python-bound
CUDA_CAUSES = {  # CUDA calls that explain CPU time, by what their names start with → advice
    "launch_queue": (
        ("cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch"),
        "launches wait on a full CUDA queue: the GPU is the limit there",
    ),
    "module_load": (
        ("cuLibraryLoad", "cuModuleLoad", "cuLibraryGet", "cuModuleGet"),
        "CUDA modules load lazily on first use: warm up, then --skip-first",
    ),
    "alloc": (ALLOC_APIS, "allocate once, outside the step; keep PyTorch's caching allocator on"),
    "gpu_wait": (
        (
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "cudaEventSynchronize",
            "cuStreamSynchronize",
            "cuCtxSynchronize",
            "cuEventSynchronize",
            "cudaMemcpy",
            "cuMemcpy",
        ),
        "it waits there for GPU work queued before it (a sync or a copy)",
    ),
}


def _cause(per: dict[str, int], of: float, causes: tuple[str, ...]) -> str | None:
    """The first of ``causes`` whose calls in ``per`` (API name → time) take at least half of ``of``."""
    for cause in causes:
        prefixes = CUDA_CAUSES[cause][0]
        if of and sum(v for name, v in per.items() if name.startswith(prefixes)) >= 0.5 * of:
            return cause
    return None


def _own_cuda_calls(ctx: _Context, mine: np.ndarray) -> tuple[int, dict[str, int]] | None:
    """Time in CUDA calls made by the ranges ``mine`` themselves (not in a child phase; union per range)
    and per API name; None for a streamed export, whose calls are not all in memory."""
    from nvtxsim.export.streamed import source_of

    api = ctx.ex.api
    if api is None or len(api) == 0 or source_of(ctx.ex) is not None:
        return None
    r = ctx.r
    ri, ci = contained(r.start[mine], r.end[mine], r.global_tid[mine], api.start, api.end, api.global_tid)
    own = ctx.owner(api.start[ci], api.end[ci], api.global_tid[ci]) == mine[ri]  # not in a child phase: self time
    ri, ci = ri[own], ci[own]
    if len(ci) == 0:
        return 0, {}
    ids, code = np.unique(api.name_id[ci], return_inverse=True)
    dur = np.bincount(code.reshape(-1), weights=api.end[ci] - api.start[ci], minlength=len(ids))
    per: dict[str, int] = {}
    for i, t in zip(ids.tolist(), dur.tolist()):
        name = api_name(ctx.ex.string(int(i)))
        per[name] = per.get(name, 0) + int(t)
    return _blocked(mine[ri], api.start[ci], api.end[ci]), dict(sorted(per.items(), key=lambda kv: -kv[1]))


def _cuda_call_time(ctx: _Context, f: Finding) -> None:
    """A CPU-bound phase's time in CUDA calls (in-memory exports): when it is most of it, say so and
    change the advice (allocations per step are the usual cause: ``PYTORCH_NO_CUDA_MEMORY_CACHING``,
    tensors created every step)."""
    r = ctx.r
    mine = ctx.ranges[(r.label[ctx.ranges] == _label_of(ctx, f.phase)) & ~r.cross_thread[ctx.ranges]]
    got = _own_cuda_calls(ctx, mine)
    if not got or not got[1]:
        return
    total, per = got
    top = dict(list(per.items())[:3])
    share = total / max(f.evidence["cpu_work_ns"], 1)
    f.evidence.update({"cuda_calls_ns": total, "cuda_calls_share": round(share, 3), "cuda_calls_top": top})
    if share >= CUDA_CALLS_SHARE:
        cause = _cause(per, total, ("alloc", "module_load"))
        f.advice = CUDA_CAUSES[cause][1] if cause else CUDA_CALL_ADVICE
        if cause:
            f.evidence["cause"] = cause


CUDA_CALL_ADVICE = "the time is in CUDA calls (see evidence): make fewer of them"


def _label_of(ctx: _Context, phase: str) -> int:
    names = ctx.d.label_names
    return int(np.flatnonzero(names == phase)[0])


def _r(x: float | None) -> int | None:
    return int(round(x)) if x is not None else None


# --------------------------------------------------------------------------- other threads, unattributed


@dataclass
class OtherThreadGpu:
    """GPU work launched outside every range of the launching thread, by the phase open elsewhere at launch.

    A time-overlap attribution, not nsys's rule (nsys attributes none of this work): ``phase`` is the
    innermost phase open on another thread of the process when the work was launched, or OUTSIDE."""

    phase: str
    launches: int
    ops: int
    gpu_busy_ns: int  # union of the ops' GPU intervals
    threads: dict[str, int]  # launching thread → launches


def _open_elsewhere(ctx: _Context, start: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Per call: the innermost range (tree position) open at ``start`` on another thread of its process, -1 if none."""
    nesting = ctx.tree.nesting
    r_tid = ctx.r.global_tid[nesting.ranges]
    best = np.full(len(start), -1, dtype=np.int64)
    for t in np.unique(r_tid):
        other = ((tid & PID_MASK) == (t & PID_MASK)) & (tid != t)
        if not other.any():
            continue
        pos = np.full(len(start), -1, dtype=np.int64)
        pos[other] = innermost(
            ctx.ex, nesting, start[other], start[other], np.full(int(other.sum()), t, dtype=np.int64)
        )
        deeper = (pos >= 0) & ((best < 0) | (nesting.depth[np.maximum(pos, 0)] > nesting.depth[np.maximum(best, 0)]))
        best[deeper] = pos[deeper]
    return best


def context(detail: Detail, by: str | None = None, skip_first: int = 0) -> _Context:
    """The shared data of the findings for ``detail`` (iterations keyed on ``by``, the first ``skip_first`` left out)."""
    return _Context(detail, by, skip_first)


def other_thread_gpu(detail: Detail, ctx: _Context | None = None) -> list[OtherThreadGpu]:
    """GPU work nsys attributes to no range, split by the phase open on another thread at launch time."""
    ctx = ctx or _Context(detail, None, 0)
    from nvtxsim.analysis.unattributed import outside_calls

    api, ops, link = ctx.ex.api, detail.ops, detail.link
    if api is None or len(ops) == 0 or len(ctx.tree.nesting.ranges) == 0:
        return []
    calls = outside_calls(detail)  # nsys attributes these to no range
    pos = _open_elsewhere(ctx, api.start[calls], api.global_tid[calls])
    in_skipped = (pos >= 0) & ~ctx.kept[np.maximum(pos, 0)]
    calls, pos = calls[~in_skipped], pos[~in_skipped]
    labels = np.where(pos >= 0, ctx.r.label[ctx.tree.nesting.ranges[np.maximum(pos, 0)]].astype(np.int64), -1)
    if len(ctx.ranges):  # outside the span of the (kept) phases: setup or teardown, not the loop's
        t = api.start[calls]
        labels[(labels == -1) & ((t < ctx.r.start[ctx.ranges].min()) | (t > ctx.r.end[ctx.ranges].max()))] = -2
    op = ops_of(link, calls)
    op_label = np.repeat(labels, link.count[calls])
    out = []
    for lab in np.unique(labels):
        m, om = labels == lab, op_label == lab
        busy = int(_union_length(np.zeros(int(om.sum()), dtype=np.int64), ops.start[op[om]], ops.end[op[om]], 1)[0])
        threads: dict[str, int] = {}
        for t, n in zip(*np.unique(api.global_tid[calls[m]], return_counts=True)):
            threads[detail.thread_name(int(t))] = int(n)
        phase = str(detail.label_names[lab]) if lab >= 0 else OUTSIDE if lab == -1 else OUTSIDE_LOOP
        out.append(
            OtherThreadGpu(
                phase, int(m.sum()), int(om.sum()), busy, dict(sorted(threads.items(), key=lambda kv: -kv[1]))
            )
        )
    return out


def thread_findings(ctx: _Context, rows: list[OtherThreadGpu]) -> list[Finding]:
    """other_thread_gpu (work nsys leaves out of the phase: reported from 0.1 %) and unattributed_gpu (from 1 %)."""
    out = []
    for row in rows:
        if row.phase == OUTSIDE_LOOP:
            continue  # setup before the loop, teardown after it: no cost to the iterations (--view overlap lists it)
        kind = "unattributed_gpu" if row.phase == OUTSIDE else "other_thread_gpu"
        ev = {"launches": row.launches, "ops": row.ops, "gpu_busy_ns": row.gpu_busy_ns, "threads": row.threads}
        f = ctx.finding(
            row.phase, kind, row.gpu_busy_ns, ev, min_share=MIN_SHARE if kind == "unattributed_gpu" else SYNC_MIN_SHARE
        )
        if f is not None:
            out.append(f)
    return out


# --------------------------------------------------------------------------- outlier iterations


def outlier_findings(ctx: _Context) -> list[Finding]:
    """Iterations over OUTLIER_FACTOR × the median, grouped by the phase that overran its median the most."""
    it = ctx.it
    if it is None or len(it) < 5:
        return []
    med = float(np.median(it.duration))
    slow = np.flatnonzero(it.duration > OUTLIER_FACTOR * med)
    if len(slow) == 0:
        return []
    culprit, excess = culprits(it, slow)  # the key range itself explains nothing
    out = []
    for j in np.unique(culprit):
        k = slow[culprit == j]
        cost = float((it.duration[k] - med).sum())
        phase = it.phases[int(j)] if excess[culprit == j].max() > 0 else it.key
        ev = {
            "iterations": it.index[k].tolist()[:20],
            "count": int(len(k)),
            "median_ns": int(med),
            "max_ns": int(it.duration[k].max()),
            "phase_excess_ns": int(np.maximum(excess[culprit == j], 0).sum()),
        }
        f = ctx.finding(phase, "outlier_iterations", cost, ev)
        if f is not None:
            if phase != it.key:
                m = np.isin(it.member_row, k) & (it.member_col == j)
                _outlier_cause(ctx, f, np.intersect1d(it.members[m], ctx.ranges))
            out.append(f)
    return out


def _outlier_cause(ctx: _Context, f: Finding, ranges: np.ndarray) -> None:
    """When CUDA calls of the overrunning phase (in its slow iterations) make up most of the overrun,
    name them and give the advice for that cause instead of the generic one (compilation, GC, I/O):
    a CPU far ahead of the GPU blocks in launches once CUDA's queue is full; lazy module loading and
    allocations stall the first iterations."""
    got = _own_cuda_calls(ctx, ranges)
    if not got or not got[1]:
        return
    total, per = got
    f.evidence.update({"cuda_calls_ns": total, "cuda_calls_top": dict(list(per.items())[:3])})
    cause = _cause(per, f.evidence["phase_excess_ns"], tuple(CUDA_CAUSES))
    if cause:
        f.evidence["cause"] = cause
        f.advice = CUDA_CAUSES[cause][1]


def _merge_waits(outliers: list[Finding], waits: list[Finding]) -> list[Finding]:
    """Slow iterations whose overrun is a wait in a sync or copy that has its own finding are that
    finding's (its cost already holds the wait): their indices go to its evidence, not into a second,
    overlapping cost."""
    by_phase: dict[str, list[Finding]] = {}
    for w in waits:
        by_phase.setdefault(w.phase, []).append(w)
    out = []
    for f in outliers:
        mine = by_phase.get(f.phase) if f.evidence.get("cause") == "gpu_wait" else None
        if not mine:
            out.append(f)
            continue
        for w in mine:
            w.evidence["slow_iterations"] = f.evidence["iterations"]
    return out


# --------------------------------------------------------------------------- entry point


@dataclass
class Findings:
    """The findings of one report, and what they were measured against."""

    items: list[Finding]
    iterations: int | None  # iterations the per-iteration costs divide by (None: unknown)
    reference_ns: int  # wall time inside the kept ranges: what the shares are of
    notes: list[str] = field(default_factory=list)

    def as_list(self) -> list[dict]:
        return [f.as_dict() for f in self.items]


def analyse(detail: Detail, *, by: str | None = None, skip_first: int = 0, threads: bool | None = None) -> Findings:
    """All findings of the report's selection, most costly first.

    ``threads``: look for other_thread_gpu and unattributed_gpu, which join every CUDA call to its
    GPU work; None = unless the export is streamed (too large to hold every call: the other
    kinds read only the calls they need), with a note saying so."""
    if not len(detail.selected):
        return Findings([], None, 0)
    ctx = _Context(detail, by, skip_first)
    notes = []
    copies, copy_blocked, claimed = pageable_findings(ctx)
    syncs, sync_blocked = sync_findings(ctx, claimed)
    blocked = dict(sync_blocked)
    for k, v in copy_blocked.items():
        blocked[k] = blocked.get(k, 0) + v
    outliers = _merge_waits(outlier_findings(ctx), syncs + copies)
    for f in outliers:
        blocked[f.phase] = blocked.get(f.phase, 0) + f.evidence["phase_excess_ns"]
    if threads is None:
        from nvtxsim.export.streamed import source_of

        threads = source_of(detail.export) is None
        if not threads and detail.has_cuda:
            notes.append(
                "other_thread_gpu and unattributed_gpu were not looked for (export too large to join every CUDA call in memory): --view overlap computes them"
            )
    rows = other_thread_gpu(detail, ctx) if threads and detail.has_cuda else []
    others = {r.phase: r for r in rows if r.phase not in (OUTSIDE, OUTSIDE_LOOP)}
    bounds = bound_findings(ctx, blocked, {f.phase for f in syncs + copies}, others) if detail.has_cuda else []
    if not detail.has_cuda:
        notes.append("no CUDA trace (nsys -t cuda): only outlier iterations were looked for")
    found = syncs + copies + bounds + outliers + thread_findings(ctx, rows)
    found.sort(key=lambda f: (f.kind in INFORMATIONAL, -f.cost_ns, f.phase, f.kind))  # actionable ones first
    return Findings(found, ctx.iterations, ctx.reference_ns, notes)


def for_detail(detail: Detail, *, by: str | None = None, skip_first: int = 0) -> Findings:
    """:func:`analyse`, computed once per (detail, by, skip_first): the block, the views and the page share it."""
    cache = detail.__dict__.setdefault("_findings", {})
    if (by, skip_first) not in cache:
        cache[(by, skip_first)] = analyse(detail, by=by, skip_first=skip_first)
    return cache[(by, skip_first)]


@dataclass
class FindingsDiff:
    """Findings of two runs matched by (phase, kind): which appeared in the new run, which went away."""

    appeared: list[Finding]
    gone: list[Finding]
    kept: list[tuple[Finding, Finding]]  # (base, new)

    def as_dict(self) -> dict:
        return {
            "appeared": [f.as_dict() for f in self.appeared],
            "gone": [f.as_dict() for f in self.gone],
            "kept": [
                {
                    "phase": b.phase,
                    "kind": b.kind,
                    "base_cost_ns": b.cost_ns,
                    "new_cost_ns": n.cost_ns,
                    "base_cost_per_iteration_ns": b.cost_per_iteration_ns,
                    "new_cost_per_iteration_ns": n.cost_per_iteration_ns,
                }
                for b, n in self.kept
            ],
        }


def diff(base: Findings, new: Findings) -> FindingsDiff:
    b = {(f.phase, f.kind): f for f in base.items}
    n = {(f.phase, f.kind): f for f in new.items}
    return FindingsDiff(
        [f for k, f in n.items() if k not in b],
        [f for k, f in b.items() if k not in n],
        [(b[k], n[k]) for k in n if k in b],
    )


def find(detail: Detail, *, by: str | None = None, skip_first: int = 0, threads: bool | None = None) -> list[Finding]:
    """:func:`analyse`'s findings only."""
    return analyse(detail, by=by, skip_first=skip_first, threads=threads).items
