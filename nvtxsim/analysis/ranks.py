"""Many exports at once (one per rank of a multi-GPU job): per-rank reports and one merged report.

Why: ``torchrun`` training writes one export per rank; reading them one after another wastes
the other cores, and a per-rank table alone hides what the whole job spent per phase.

Each file is loaded and analysed in its own worker process (or on a Dask cluster): the worker
returns the rank's :class:`~nvtxsim.analysis.projection.PhaseSummary` plus, per phase, the raw CPU durations and
GPU projected durations of its ranges (int64 arrays, in range order) and the phase's sums -
a few bytes per range, never the export. The merged report is computed by
:func:`nvtxsim.analysis.projection.summarize` itself over those arrays, so its numbers are exactly the
single-process ones: instances and totals add up, medians/percentiles/min/max/stddev are
those of all the ranks' ranges together, threads count each rank's threads separately.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from nvtxsim.analysis.projection import PhaseSummary, RangeGpu, project, resolve_domain, select_ranges, summarize
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import Export, Ranges
from nvtxsim.export.reader import load
from nvtxsim.schema import SUMMARY_DIRECTIONS, pids_of

_COUNTS = ("ranges", "cuda_api_calls", "gpu_ops", "kernels", "memcpys", "memsets")
DASK_TIMEOUT = "20s"  # connecting to the scheduler


@dataclass
class PhaseArrays:
    """One phase (domain, name) of one rank: what merging needs."""

    domain: str
    name: str
    cpu_ns: np.ndarray  # int64 duration of every range, in range order
    gpu_ns: np.ndarray  # int64 projected GPU duration of the ranges that launched GPU work, in range order
    busy_ns: int
    ops: int
    kernels: int
    copy_bytes: dict[str, int]
    unclosed: int
    cross_thread: int
    threads: int


#: NVTX range names taken for a collective (the call every rank must reach before any goes on): torch's
#: collectives and the backends' names, with or without separators (``all_reduce``, ``allreduce``, ``AllReduce``).
COLLECTIVE_NAMES = re.compile(
    r"all[_ -]?reduce|all[_ -]?gather|reduce[_ -]?scatter|all[_ -]?to[_ -]?all|broadcast|barrier|collective",
    re.IGNORECASE,
)


@dataclass
class CollectiveCalls:
    """One collective (an NVTX range whose name :data:`COLLECTIVE_NAMES` matches) of one rank, in time order.

    Why ranges: a gloo collective on the CPU is the Python call that blocks until every rank sent its part;
    nsys sees it only as condition-variable waits (OS runtime), whose number per call varies, while the
    range around the call is one per call on every rank, so the k-th call of each rank is the same call."""

    domain: str
    name: str
    dur_ns: np.ndarray  # int64 duration of each call, time order
    holder: list[str]  # per call: "domain:name" of the range holding it (itself when it is a root)
    warm_up: np.ndarray  # bool per call: a first-tenth call far over the steady state (warmup's rule)


@dataclass
class RankResult:
    """What one worker sends back for one export."""

    path: str
    report: PhaseSummary
    phases: list[PhaseArrays] = field(default_factory=list)
    collectives: list[CollectiveCalls] = field(default_factory=list)
    reference_ns: int = 0  # CPU time of the rank's outermost ranges: what a wait's share is of
    self_ns: dict[str, int] = field(default_factory=dict)  # per "domain:name": CPU time minus its child ranges'


def analyse_one(path: str | os.PathLike[str], domain: str | None = "nvtxsim", domain_given: bool = True) -> RankResult:
    """Load and analyse one export; the unit of work of a process or Dask worker (domain: see ``resolve_domain``)."""
    export = load(path)
    gpu = project(export)
    domain, widened = resolve_domain(export, domain, given=domain_given)
    return _result(str(path), export, gpu, domain, widened)


def _result(
    path: str, export: Export, gpu: RangeGpu, domain: str | None, widened: str | None, select: np.ndarray | None = None
) -> RankResult:
    """The summary and phase arrays of ``select`` (default: every range in ``domain``), with the export's warnings."""
    from nvtxsim.analysis.gpu import graph_hints
    from nvtxsim.analysis.selection import Selection

    report = summarize(export, gpu, domain=domain, select=select)
    report.warnings[:0] = [widened] if widened else []
    report.warnings.extend(graph_hints(Selection(export, domain=domain, gpu=gpu)))
    idx = select_ranges(export, domain) if select is None else np.asarray(select, dtype=np.int64)
    calls, reference, self_ns = _collectives(export, idx)
    return RankResult(
        path=path,
        report=report,
        phases=_phase_arrays(export, gpu, domain, select),
        collectives=calls,
        reference_ns=reference,
        self_ns=self_ns,
    )


def _collectives(export: Export, idx: np.ndarray) -> tuple[list[CollectiveCalls], int, dict[str, int]]:
    """The collective ranges among ``idx`` by name (time order, with the range holding each), the CPU
    time of the outermost ranges and each phase's self time (nesting per thread,
    :func:`nvtxsim.analysis.tree.nest`): a slow child is not charged again to its parents."""
    from nvtxsim.analysis.tree import nest

    if len(idx) == 0:
        return [], 0, {}
    r = export.ranges
    nesting = nest(export, idx)
    ranges, parent = nesting.ranges, nesting.parent
    dur = (r.end[ranges] - r.start[ranges]).astype(np.int64)
    reference = int(dur[parent < 0].sum())
    names = [f"{d}:{n}" for d, n in export.labels]
    own = dur.copy()
    kids = np.flatnonzero(parent >= 0)
    np.subtract.at(own, parent[kids], dur[kids])
    per = np.bincount(r.label[ranges].astype(np.int64), weights=own, minlength=len(names))
    self_ns = {names[i]: int(per[i]) for i in np.unique(r.label[ranges]).tolist()}
    hits = [i for i, (_, n) in enumerate(export.labels) if COLLECTIVE_NAMES.search(n)]
    labels = r.label[ranges]
    out = []
    for lab in hits:
        pos = np.flatnonzero(labels == lab)
        if not len(pos):
            continue
        pos = pos[np.argsort(r.start[ranges[pos]], kind="stable")]
        held = [names[int(labels[parent[p]])] if parent[p] >= 0 else names[lab] for p in pos.tolist()]
        d = dur[pos]
        dom, name = export.labels[lab]
        out.append(CollectiveCalls(dom, name, d, held, _warm_up_calls(d)))
    return out, reference, self_ns


def _warm_up_calls(dur: np.ndarray) -> np.ndarray:
    """The leading calls that are warm-up by :mod:`nvtxsim.analysis.warmup`'s rule (first tenth, over
    max(m + 8 robust σ, 2 m, m + 100 µs) of the steady state's median m), so a first call that loads or
    connects is not taken for a rank that made the others wait."""
    from nvtxsim.analysis.warmup import MAD_FACTOR, MEDIAN_FACTOR, MIN_CALLS, MIN_EXCESS_NS, WINDOW

    out = np.zeros(len(dur), dtype=bool)
    if len(dur) < MIN_CALLS:
        return out
    head = max(1, int(len(dur) * WINDOW))
    steady = dur[head:].astype(np.float64)
    m = float(np.median(steady))
    mad = float(np.median(np.abs(steady - m)))
    limit = max(m + MAD_FACTOR * mad, MEDIAN_FACTOR * m, m + MIN_EXCESS_NS)
    for i in range(head):
        if dur[i] <= limit:
            break
        out[i] = True
    return out


def split_by_pid(
    path: str | os.PathLike[str], domain: str | None = "nvtxsim", domain_given: bool = True
) -> list[RankResult]:
    """One export holding several processes: one result per pid with ranges in ``domain``, in pid order."""
    export = load(path)
    gpu = project(export)  # per range: projected once, selected by range index below
    domain, widened = resolve_domain(export, domain, given=domain_given)
    idx = select_ranges(export, domain)
    pids = pids_of(export.ranges.global_tid[idx])
    found = np.unique(pids)
    if len(found) < 2:
        raise NvtxsimError(
            f"{Path(path).name} holds ranges of {len(found)} process(es); splitting it by process needs 2 or more"
        )
    out = []
    for pid in found.tolist():
        res = _result(f"{path}#pid{pid}", export, gpu, domain, widened, idx[pids == pid])
        res.report.source.update(_pid_counts(export, int(pid)), pid=int(pid))
        out.append(res)
    return out


def _pid_counts(export: Export, pid: int) -> dict[str, int | None]:
    """The source counts of one process of ``export``, so that the ranks' counts add up to the export's
    (None where a streamed export holds the table on disk only)."""
    from nvtxsim.schema import KERNEL, MEMCPY, MEMSET

    def of(ids: np.ndarray) -> np.ndarray:
        return pids_of(ids) == pid

    out: dict[str, int | None] = {"ranges": int(of(export.ranges.global_tid).sum())}
    api = export.api
    out["cuda_api_calls"] = (
        0 if api is None else int(of(api.global_tid).sum()) if getattr(api, "backend", "") == "memory" else None
    )
    g = export.gpu
    if g is None or getattr(g, "backend", "") != "memory":
        out.update(dict.fromkeys(("gpu_ops", "kernels", "memcpys", "memsets"), 0 if g is None else None))
    else:
        mine = of(g.global_pid)
        out["gpu_ops"] = int(mine.sum())
        for key, kind in (("kernels", KERNEL), ("memcpys", MEMCPY), ("memsets", MEMSET)):
            out[key] = int((mine & (g.kind == kind)).sum())
    return out


def _phase_arrays(
    export: Export, gpu: RangeGpu, domain: str | None, select: np.ndarray | None = None
) -> list[PhaseArrays]:
    idx = select_ranges(export, domain) if select is None else np.asarray(select, dtype=np.int64)
    r = export.ranges
    if len(idx) == 0:
        return []
    labels = r.label[idx]
    order = np.argsort(labels, kind="stable")  # keeps range order inside each phase
    idx, labels = idx[order], labels[order]
    bounds = np.r_[np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]]), len(idx)]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        sel = idx[a:b]
        dom, name = export.labels[int(labels[a])]
        has = gpu.has_gpu[sel]
        out.append(
            PhaseArrays(
                domain=dom,
                name=name,
                cpu_ns=(r.end[sel] - r.start[sel]).astype(np.int64),
                gpu_ns=gpu.proj_duration[sel][has].astype(np.int64),
                busy_ns=int(gpu.busy[sel].sum()),
                ops=int(gpu.ops[sel].sum()),
                kernels=int(gpu.kernels[sel].sum()),
                copy_bytes={d: int(gpu.copy_bytes[d][sel].sum()) for d in SUMMARY_DIRECTIONS},
                unclosed=int(r.unclosed[sel].sum()),
                cross_thread=int(r.cross_thread[sel].sum()),
                threads=int(len(np.unique(r.global_tid[sel]))),
            )
        )
    return out


# --------------------------------------------------------------------------- merging


def merge(results: Sequence[RankResult]) -> PhaseSummary:
    """One report over all ranks: :func:`summarize` over the ranks' phase arrays."""
    labels: list[tuple[str, str]] = []
    where: dict[tuple[str, str], int] = {}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in _COLUMNS + tuple(f"copy_{d}" for d in SUMMARY_DIRECTIONS)}
    for rank, res in enumerate(results):
        for ph in res.phases:
            key = (ph.domain, ph.name)
            if key not in where:
                where[key] = len(labels)
                labels.append(key)
            if len(ph.cpu_ns):
                for name, values in _phase_columns(ph, rank, where[key]).items():
                    cols[name].append(values)
    ranges, gpu = _merged_columns(cols)
    combined = Export(
        path=Path("merged"),
        meta={},
        tables=frozenset(),
        labels=labels,
        ranges=ranges,
        api=None,
        gpu=None,
        capture_end=None,
        warnings=[],
    )
    merged = summarize(combined, gpu, domain=None)
    merged.source = _merged_source(results)
    merged.warnings = [f"{Path(res.path).name}: {w}" for res in results for w in res.report.warnings]
    return merged


_COLUMNS = ("dur", "label", "tid", "unclosed", "cross", "has", "proj", "ops", "kernels", "busy")


def _phase_columns(ph: PhaseArrays, rank: int, label: int) -> dict[str, np.ndarray]:
    """Stand-in ranges of one rank's phase whose summary is the phase's: its durations, and flags and
    sums on its first ranges (summarize only adds them up per phase)."""
    n, g = len(ph.cpu_ns), len(ph.gpu_ns)
    # Thread ids: the phase's first `threads` ranges get distinct ids of this rank, the rest repeat one.
    tid = np.full(n, rank << 32, dtype=np.int64)
    tid[: ph.threads] += np.arange(ph.threads, dtype=np.int64)
    has = np.arange(n) < g
    proj = np.zeros(n, dtype=np.int64)
    proj[:g] = ph.gpu_ns
    ops = has.astype(np.int64)
    ops[0] += ph.ops - g  # ops >= launches >= ranges with GPU work

    def first(total: int) -> np.ndarray:
        v = np.zeros(n, dtype=np.int64)
        v[0] = total
        return v

    return {
        "dur": ph.cpu_ns,
        "label": np.full(n, label, dtype=np.int32),
        "tid": tid,
        "unclosed": np.arange(n) < ph.unclosed,
        "cross": np.arange(n) < ph.cross_thread,
        "has": has,
        "proj": proj,
        "ops": ops,
        "kernels": first(ph.kernels),
        "busy": first(ph.busy_ns),
        **{f"copy_{d}": first(ph.copy_bytes.get(d, 0)) for d in SUMMARY_DIRECTIONS},
    }


def _merged_columns(cols: dict[str, list[np.ndarray]]) -> tuple[Ranges, RangeGpu]:
    """The stand-in ranges of every rank as one Ranges and its RangeGpu."""

    def cat(name: str, dtype) -> np.ndarray:
        parts = cols[name]
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

    dur = cat("dur", np.int64)
    n = len(dur)
    ranges = Ranges(
        row=np.arange(n, dtype=np.int64),
        start=np.zeros(n, dtype=np.int64),
        end=dur,
        global_tid=cat("tid", np.int64),
        cross_thread=cat("cross", bool),
        unclosed=cat("unclosed", bool),
        style=np.zeros(n, dtype=np.int8),
        label=cat("label", np.int32),
        payload=np.full(n, np.nan),
    )
    has, proj = cat("has", bool), cat("proj", np.int64)
    gpu = RangeGpu(
        proj_start=np.where(has, 0, -1).astype(np.int64),
        proj_end=np.where(has, proj, -1).astype(np.int64),
        ops=cat("ops", np.int64),
        kernels=cat("kernels", np.int64),
        busy=cat("busy", np.int64),
        copy_bytes={d: cat(f"copy_{d}", np.int64) for d in SUMMARY_DIRECTIONS},
    )
    return ranges, gpu


def _merged_source(results: Sequence[RankResult]) -> dict:
    src: dict = {"paths": [res.path for res in results], "ranks": len(results)}
    for key in _COUNTS:
        src[key] = int(sum(int(res.report.source.get(key) or 0) for res in results))
    versions = sorted({str(res.report.source.get("nsys_version", "")) for res in results} - {""})
    src["nsys_version"] = ", ".join(versions)
    return src


def rank_spread(reports: Sequence[PhaseSummary]) -> list[dict]:
    """Per phase: CPU total of each rank, the slowest rank and max/min (a straggler shows up here)."""
    names: dict[str, None] = {}
    for rep in reports:
        for p in rep.phases:
            names.setdefault(p.label, None)
    rows = []
    for label in names:
        totals = [next((p.cpu_total_ns for p in rep.phases if p.label == label), 0) for rep in reports]
        lo, hi = min(totals), max(totals)
        rows.append(
            {
                "phase": label,
                "cpu_total_ns": totals,
                "slowest_rank": int(np.argmax(totals)),
                "max_over_min": (hi / lo) if lo else None,
            }
        )
    return rows


# --------------------------------------------------------------------------- collective waits


@dataclass
class CollectiveWaits:
    """Time each rank waited in its collectives for the others, and which rank they waited for.

    The k-th call of a collective is the same call on every rank; all leave it together, so a rank
    that entered it early spent longer inside: ``wait[r, k] = duration[r, k] - min over ranks``, and
    the rank of the shortest call is the last to arrive, the one that made the others wait (no
    clock is compared across exports, so per-rank files of different hosts work too). Calls that are
    warm-up on some rank are left out (``skipped``)."""

    ranks: int
    calls: int  # matched calls (every collective, after the warm-up)
    skipped: int  # warm-up calls left out
    wait_ns: list[int]  # per rank: its time waiting
    phase_wait_ns: list[dict[str, int]]  # per rank: its waits charged to the phase holding the call
    last: list[int]  # per rank: calls it arrived last at
    caused_ns: list[int]  # per rank: the others' waits at the calls it arrived last at
    lost_ns: int  # per call the longest wait, summed: what the job lost to the skew
    mismatched: list[str] = field(default_factory=list)  # collectives called a different number of times

    def as_dict(self) -> dict:
        return asdict(self)


def collective_waits(results: Sequence[RankResult]) -> CollectiveWaits | None:
    """The waits of matched collectives (see :class:`CollectiveWaits`); None when fewer than two ranks
    or no collective range appears on every rank."""
    n = len(results)
    if n < 2:
        return None
    per = [{(c.domain, c.name): c for c in res.collectives} for res in results]
    keys = [k for k in per[0] if all(k in p for p in per[1:])]
    if not keys:
        return None
    wait_ns, last, caused = [0] * n, [0] * n, [0] * n
    phase_wait: list[dict[str, int]] = [{} for _ in range(n)]
    calls = skipped = lost = 0
    mismatched = []
    for key in keys:
        cs = [p[key] for p in per]
        m = min(len(c.dur_ns) for c in cs)
        if any(len(c.dur_ns) != m for c in cs):
            mismatched.append(f"{key[0]}:{key[1]}")
        dur = np.stack([c.dur_ns[:m] for c in cs])
        keep = ~np.any(np.stack([c.warm_up[:m] for c in cs]), axis=0)
        skipped += int((~keep).sum())
        w = dur - dur.min(axis=0)
        late = np.argmin(dur, axis=0)
        for k in np.flatnonzero(keep).tolist():
            calls += 1
            lost += int(w[:, k].max())
            last[int(late[k])] += 1
            caused[int(late[k])] += int(w[:, k].sum())
            for r in range(n):
                wait_ns[r] += int(w[r, k])
                ph = cs[r].holder[k]
                phase_wait[r][ph] = phase_wait[r].get(ph, 0) + int(w[r, k])
    return CollectiveWaits(n, calls, skipped, wait_ns, phase_wait, last, caused, lost, mismatched)


# --------------------------------------------------------------------------- running


def report_many(
    paths: Sequence[str | os.PathLike[str]],
    *,
    domain: str | None = "nvtxsim",
    workers: int | None = None,
    dask: str | None = None,
    domain_given: bool = True,
) -> tuple[list[PhaseSummary], PhaseSummary]:
    """Per-rank reports and the merged report (see :func:`analyse_many` for the per-rank results too)."""
    results = analyse_many(paths, domain=domain, workers=workers, dask=dask, domain_given=domain_given)
    return [r.report for r in results], merge(results)


def analyse_many(
    paths: Sequence[str | os.PathLike[str]],
    *,
    domain: str | None = "nvtxsim",
    workers: int | None = None,
    dask: str | None = None,
    domain_given: bool = True,
) -> list[RankResult]:
    """The per-rank results of several exports, in ``paths`` order (one worker each).

    ``workers``: processes to use (default: one per file, at most the usable cores; 1 = in
    this process). ``dask``: address of a Dask scheduler (``tcp://host:8786``) to run the
    per-file work on instead; its workers must see the same paths.
    """
    files = [str(Path(p).resolve()) if Path(p).exists() else str(p) for p in paths]
    if not files:
        raise NvtxsimError("no exports given")
    if dask:
        return _run_dask(dask, files, domain, domain_given)
    return _run_local(files, domain, workers, domain_given)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run_local(paths: list[str], domain: str | None, workers: int | None, given: bool = True) -> list[RankResult]:
    if workers is not None and workers < 1:
        raise NvtxsimError("--jobs must be at least 1")
    n = min(len(paths), workers or _cores())
    if n <= 1:
        return [analyse_one(p, domain, given) for p in paths]
    import multiprocessing

    # fork is fastest, but unsafe once this process runs threads: then start fresh interpreters.
    method = "fork" if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context(method)) as pool:
        futures = [pool.submit(analyse_one, p, domain, given) for p in paths]
        return [f.result() for f in futures]


def _run_dask(address: str, paths: list[str], domain: str | None, given: bool = True) -> list[RankResult]:
    try:
        from distributed import Client
    except ImportError:
        raise NvtxsimError("--dask needs Dask distributed: pip install 'nvtxsim[dask]'") from None
    try:
        client = Client(address, timeout=DASK_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise NvtxsimError(f"cannot reach the Dask scheduler at {address} ({exc})") from None
    try:
        futures = client.map(analyse_one, paths, domain=domain, domain_given=given, pure=False)
        return client.gather(futures)
    finally:
        client.close()
