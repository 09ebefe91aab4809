"""Per-iteration view: how long each phase takes in each iteration of the loop.

The loop's iterations are the instances of one *key* range (by default ``step``,
one env step as an instrumented RL runner performs it, when the export has such
ranges, else the ``iteration`` phase; or any range chosen with ``--by``, e.g.
``learning_iteration``). Every other selected range
belongs to the key instance of the same process whose interval holds its start
(on any thread of that process, so a side thread's work counts for the iteration
it ran in). Per (iteration, phase) the CPU durations and the GPU busy times of
the phase's ranges are summed; a phase absent from an iteration counts 0 there.
Ranges outside every key instance (setup, a learning update between iterations)
are not part of any iteration.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from nvtxsim import phases
from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import Ranges
from nvtxsim.schema import PID_MASK

QUANTILES = (0.5, 0.9, 0.99)


@dataclass
class IterationCells:
    """The non-empty (iteration, phase) cells of an :class:`Iterations`, sorted by phase then iteration.

    Sparse because a loop that names a phase per iteration (``phase(f"step_{i}")``) has as many
    phases as iterations: dense matrices would grow with their product.
    """

    row: np.ndarray  # iteration row of each cell
    col: np.ndarray  # phase column of each cell
    cpu: np.ndarray  # summed CPU ns
    gpu: np.ndarray  # summed GPU busy ns
    count: np.ndarray  # instances
    col_start: np.ndarray  # cells of phase j: [col_start[j], col_start[j + 1])

    @classmethod
    def build(
        cls, n_it: int, nph: int, row: np.ndarray, col: np.ndarray, cpu: np.ndarray, gpu: np.ndarray
    ) -> IterationCells:
        """Sum the per-range values ``cpu``/``gpu`` of ranges at (``row``, ``col``) into cells."""
        code = col.astype(np.int64) * max(n_it, 1) + row
        order = np.argsort(code, kind="stable")
        code = code[order]
        first = np.flatnonzero(np.r_[True, code[1:] != code[:-1]]) if len(code) else np.zeros(0, dtype=np.int64)
        sums = [
            np.add.reduceat(v[order], first) if len(first) else v[:0]
            for v in (cpu.astype(np.int64), gpu.astype(np.int64))
        ]
        count = np.diff(np.r_[first, len(code)]).astype(np.int64)
        cell_col, cell_row = np.divmod(code[first], max(n_it, 1))
        return cls(cell_row, cell_col, sums[0], sums[1], count, np.searchsorted(cell_col, np.arange(nph + 1)))

    def values(self, what: str) -> np.ndarray:
        return {"cpu": self.cpu, "gpu": self.gpu, "count": self.count}[what]


@dataclass
class Iterations:
    """Iterations × phases (ns), iterations in time order after ``skip_first``.

    The per (iteration, phase) sums are kept sparse (:attr:`cells`); :meth:`column`, :meth:`row` and
    :meth:`column_stats` read them in time linear in the cells. ``cpu``/``gpu``/``count`` build the
    dense matrices on first use, for callers that want them (their size is iterations × phases).
    """

    key: str  # display label of the key range
    index: np.ndarray  # per iteration: its position among the key thread's instances (before skipping)
    key_range: np.ndarray  # per iteration: index into Export.ranges
    start: np.ndarray
    duration: np.ndarray  # key range CPU duration
    gpu_busy: np.ndarray  # key range GPU busy time (nsys attribution)
    phases: list[str]  # column labels (key first)
    cells: IterationCells  # (iterations, phases) sums, sparse; .cpu/.gpu/.count give them dense
    skipped: int = 0
    unassigned: dict[str, int] = field(default_factory=dict)  # phase → ranges outside every iteration
    # Which iteration row and phase column each non-key range went to (row -1: outside or skipped),
    # so other per-range quantities (GPU memory, ...) can be aggregated per iteration the same way.
    members: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # indices into Export.ranges
    member_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    member_col: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.index)

    @functools.cached_property
    def cpu(self) -> np.ndarray:
        return self._dense("cpu")

    @functools.cached_property
    def gpu(self) -> np.ndarray:
        return self._dense("gpu")

    @functools.cached_property
    def count(self) -> np.ndarray:
        return self._dense("count")

    def _dense(self, what: str) -> np.ndarray:
        out = np.zeros((len(self), len(self.phases)), dtype=np.int64)
        out[self.cells.row, self.cells.col] = self.cells.values(what)
        return out

    def column(self, j: int, what: str = "cpu") -> np.ndarray:
        """Phase ``j``'s value in every iteration (0 where absent)."""
        c = self.cells
        lo, hi = c.col_start[j], c.col_start[j + 1]
        out = np.zeros(len(self), dtype=np.int64)
        out[c.row[lo:hi]] = c.values(what)[lo:hi]
        return out

    def row(self, k: int, what: str = "cpu") -> np.ndarray:
        """Every phase's value in iteration row ``k`` (0 where absent)."""
        cols, values = self.row_cells(k, what)
        out = np.zeros(len(self.phases), dtype=np.int64)
        out[cols] = values
        return out

    @functools.cached_property
    def _by_row(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.argsort(self.cells.row, kind="stable")
        return order, np.searchsorted(self.cells.row[order], np.arange(len(self) + 1))

    def row_cells(self, k: int, what: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
        """The phases that ran in iteration row ``k`` (columns in order, the key first) and their values."""
        order, starts = self._by_row
        idx = order[starts[k] : starts[k + 1]]  # cells are sorted by column, and the sort by row is stable
        return self.cells.col[idx], self.cells.values(what)[idx]

    def present(self) -> np.ndarray:
        """Per phase, the iterations in which it ran."""
        return np.diff(self.cells.col_start)

    def column_quantiles(self, what: str, qs: tuple[float, ...]) -> np.ndarray:
        """(phases, len(qs)) ``np.quantile`` of each column (absent = 0), from the cells only."""
        return _column_order_stats(self, what, qs, median=False)

    def column_medians(self, what: str = "cpu") -> np.ndarray:
        """Per phase, ``np.median`` of its column (absent = 0), from the cells only."""
        return _column_order_stats(self, what, (0.5,), median=True)[:, 0]


def _key_label(detail: Selection, by: str) -> int:
    """The label ``by`` names: ``domain:name`` or a bare name, preferring the selected ranges' labels."""
    names = detail.label_names
    labels = detail.export.labels
    sel_labels = set(np.unique(detail.export.ranges.label[detail.selected]).tolist())
    exact = [i for i in range(len(labels)) if str(names[i]) == by]
    bare = [i for i, (dom, name) in enumerate(labels) if name == by]
    for group in ([i for i in exact if i in sel_labels], [i for i in bare if i in sel_labels], exact, bare):
        if group:
            return group[0]
    raise NvtxsimError(f"--by {by!r}: no range of that name; phases present: {_candidates(detail, by)}")


def _candidates(detail: Selection, by: str, shown: int = 8, cells: int = 40) -> str:
    """The phases ``--by`` could name, for an error line: close matches first, then the most frequent
    (loop bodies), each on one line and short (``emit_nvtx`` names are paragraphs), then how many more."""
    import difflib
    import re

    counts = np.bincount(detail.export.ranges.label[detail.selected], minlength=len(detail.export.labels))
    names = {str(detail.label_names[i]): int(counts[i]) for i in np.flatnonzero(counts)}
    close = difflib.get_close_matches(by, list(names), n=3, cutoff=0.6)
    ranked = close + sorted((n for n in names if n not in close), key=lambda n: (-names[n], len(n), n))
    flat = [re.sub(r"\s+", " ", n).strip() for n in ranked[:shown]]
    short = [n if len(n) <= cells else n[: cells // 2 - 1] + "…" + n[-(cells - cells // 2) :] for n in flat]
    more = f" and {len(ranked) - shown} more" if len(ranked) > shown else ""
    return " | ".join(short) + more if short else "none"  # names hold commas


def _loop_labels(detail: Selection, name: str) -> list[int]:
    """Labels of the RL loop level ``name`` (``step`` ...) that nvtxsim records in its domain."""
    return [i for i, (dom, n) in enumerate(detail.export.labels) if n == name and dom == phases.DOMAIN]


def default_key(detail: Selection) -> str:
    """``step`` when the selection holds nvtxsim ``step`` ranges (an instrumented RL runner), else ``iteration``."""
    steps = _loop_labels(detail, phases.STEP)
    if steps and np.isin(detail.export.ranges.label[detail.selected], steps).any():
        return phases.STEP
    return phases.ITERATION


def _key_instances(r: Ranges, key: int, skip_first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every instance of the key range in time order, its position within its thread (the iteration
    number as the program counted it) and whether it is kept after ``skip_first`` (members of skipped
    iterations are still found, then dropped, so they do not count as outside every iteration)."""
    all_keys = np.flatnonzero(r.label == key)
    order = np.lexsort((r.start[all_keys], r.global_tid[all_keys]))
    all_keys = all_keys[order]
    tids = r.global_tid[all_keys]
    first = np.r_[True, tids[1:] != tids[:-1]] if len(tids) else np.zeros(0, dtype=bool)
    grp = np.cumsum(first) - 1
    pos = np.arange(len(all_keys)) - (np.flatnonzero(first)[grp] if len(all_keys) else 0)
    t_order = np.argsort(r.start[all_keys], kind="stable")
    return all_keys[t_order], pos[t_order], (pos >= skip_first)[t_order]


def _member_rows(r: Ranges, all_keys: np.ndarray, slot: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Per member range, the row (``slot``) of the key instance of its process whose interval holds
    its start; -1 outside every instance (-2: in a skipped one)."""
    it_of = np.full(len(members), -1, dtype=np.int64)
    if not (len(all_keys) and len(members)):
        return it_of
    # Per process: key instances sorted by start; a member goes to the last one starting at or before it.
    k_pid = r.global_tid[all_keys] & PID_MASK
    m_pid = r.global_tid[members] & PID_MASK
    for p in np.unique(k_pid):
        ks = np.flatnonzero(k_pid == p)  # already in start order
        ms = np.flatnonzero(m_pid == p)
        j = np.searchsorted(r.start[all_keys[ks]], r.start[members[ms]], side="right") - 1
        ok = j >= 0
        cand = np.where(ok, ks[np.maximum(j, 0)], -1)
        inside = ok & (r.start[members[ms]] <= r.end[all_keys[np.maximum(cand, 0)]])
        it_of[ms[inside]] = slot[cand[inside]]
    return it_of


def per_iteration(detail: Selection, by: str | None = None, *, skip_first: int = 0) -> Iterations:
    """Split the selected ranges into the iterations given by the key range ``by`` (None: :func:`default_key`)."""
    if skip_first < 0:
        raise NvtxsimError("--skip-first must be >= 0")
    by = by or default_key(detail)
    ex = detail.export
    r = ex.ranges
    key = _key_label(detail, by)
    key_name = str(detail.label_names[key])
    all_keys, pos, keep_all = _key_instances(r, key, skip_first)
    slot = np.where(keep_all, np.cumsum(keep_all) - 1, -2)  # row in the matrices, -2 for skipped instances
    keys, pos = all_keys[keep_all], pos[keep_all]
    n_it = len(keys)

    members = detail.selected[r.label[detail.selected] != key]
    labels_used = np.unique(r.label[members])
    phase_labels = [key] + [int(x) for x in labels_used]
    col = np.zeros(len(ex.labels) + 1, dtype=np.int64)
    col[labels_used] = np.arange(1, len(labels_used) + 1)
    nph = len(phase_labels)
    busy = detail.gpu.busy
    dur = r.end - r.start
    unassigned: dict[str, int] = {}
    it_of = _member_rows(r, all_keys, slot, members)
    hit = np.flatnonzero(it_of >= 0)
    cells = IterationCells.build(
        n_it,
        nph,
        row=np.r_[np.arange(n_it), it_of[hit]].astype(np.int64),
        col=np.r_[np.zeros(n_it, dtype=np.int64), col[r.label[members[hit]]]],
        cpu=np.r_[dur[keys], dur[members[hit]]],
        gpu=np.r_[busy[keys], busy[members[hit]]],
    )
    miss = members[it_of == -1]
    for lab, n in zip(*np.unique(r.label[miss], return_counts=True)):
        unassigned[str(detail.label_names[lab])] = int(n)
    return Iterations(
        key=key_name,
        index=pos.astype(np.int64),
        key_range=keys,
        start=r.start[keys],
        duration=dur[keys],
        gpu_busy=busy[keys],
        phases=[str(detail.label_names[lab]) for lab in phase_labels],
        cells=cells,
        skipped=int((~keep_all).sum()),
        unassigned=unassigned,
        members=members,
        member_row=np.where(it_of >= 0, it_of, -1),
        member_col=col[r.label[members]],
    )


def steps_per_s(envs: float, iteration_ns: float) -> float | None:
    """Env-steps per second of a loop that steps ``envs`` environments once per iteration."""
    return envs * 1e9 / iteration_ns if iteration_ns > 0 else None


def steps_cost(envs: float, iteration_ns: float, phase_ns: float) -> float | None:
    """What a phase costs in env-steps/s: how much higher the rate would be without it, N/(T - t) - N/T."""
    if not (iteration_ns > phase_ns > 0):
        return None
    return envs * 1e9 / (iteration_ns - phase_ns) - envs * 1e9 / iteration_ns


@dataclass
class LoopRates:
    """Per iteration: env steps, env-steps/s and, for learning iterations, rollout and update time."""

    steps: np.ndarray  # env steps per iteration: its nvtxsim ``step`` ranges, else 1 (the key is one env step)
    envs: float | None  # environments per env step: ``--envs``, else recorded by nvtxsim, else None
    envs_source: str  # "--envs" | "recorded" | ""
    env_steps_per_s: np.ndarray  # envs × steps / iteration time; NaN while envs is unknown
    rollout_ns: np.ndarray | None  # nvtxsim ``rollout`` time per iteration (None: no rollout inside)
    update_ns: np.ndarray | None  # ``policy_update`` time per iteration (with rollout_ns)


def recorded_envs(detail: Selection) -> float | None:
    """Environments per step as nvtxsim recorded them: the payload of its RL loop ranges (median)."""
    labels = [
        i for name in (phases.STEP, phases.LEARNING_ITERATION, phases.ROLLOUT) for i in _loop_labels(detail, name)
    ]
    r = detail.export.ranges
    sel = detail.selected[np.isin(r.label[detail.selected], labels)] if labels else detail.selected[:0]
    values = r.payload[sel]
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.median(values)) if len(values) else None


def _loop_column(detail: Selection, it: Iterations, name: str) -> int | None:
    """The column of ``it`` where the nvtxsim loop level or phase ``name`` ran inside iterations (never the key's)."""
    wanted = {str(detail.label_names[i]) for i in _loop_labels(detail, name)}
    present = it.present()
    cols = [j for j, p in enumerate(it.phases) if j > 0 and p in wanted and present[j]]
    return cols[0] if cols else None


def loop_rates(detail: Selection, it: Iterations, envs: float | None = None) -> LoopRates:
    """Env steps and env-steps/s per iteration (``envs`` overrides the recorded count); rollout vs update."""
    step = _loop_column(detail, it, phases.STEP)
    steps = it.column(step, "count") if step is not None else np.ones(len(it), dtype=np.int64)
    source = "--envs" if envs else ""
    if not envs:
        envs = recorded_envs(detail)
        source = "recorded" if envs else ""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(it.duration > 0, (envs or np.nan) * steps * 1e9 / np.maximum(it.duration, 1), np.nan)
    rollout = _loop_column(detail, it, phases.ROLLOUT)
    update = _loop_column(detail, it, phases.POLICY_UPDATE)
    zeros = np.zeros(len(it), dtype=np.int64)
    return LoopRates(
        steps=steps,
        envs=envs or None,
        envs_source=source,
        env_steps_per_s=rate,
        rollout_ns=it.column(rollout) if rollout is not None else None,
        update_ns=(it.column(update) if update is not None else zeros) if rollout is not None else None,
    )


def per_iteration_max(it: Iterations, key_values: np.ndarray, member_values: np.ndarray) -> np.ndarray:
    """(iterations, phases) maximum of a per-range quantity: ``key_values`` per key range (in
    iteration order), ``member_values`` aligned with ``it.members``; 0 where a phase is absent."""
    out = np.zeros((len(it), len(it.phases)), dtype=np.int64)
    if len(it):
        out[:, 0] = key_values
    hit = it.member_row >= 0
    np.maximum.at(out, (it.member_row[hit], it.member_col[hit]), np.asarray(member_values, dtype=np.int64)[hit])
    return out


@dataclass
class PhaseAcrossIterations:
    phase: str
    iterations: int  # iterations in which the phase ran
    mean_ns: int
    p50_ns: int
    p90_ns: int
    p99_ns: int
    max_ns: int
    share: float  # mean phase time / mean iteration time
    gpu_mean_ns: int
    gpu_p50_ns: int
    gpu_p99_ns: int
    gpu_max_ns: int
    per_iteration_count: float  # mean instances per iteration


def phase_stats(it: Iterations) -> list[PhaseAcrossIterations]:
    """Per phase, the distribution of its per-iteration total over the iterations (absent = 0).

    Computed from the sparse cells (``np.quantile``'s numbers), so the time is linear in the
    cells even when every iteration has phases of its own."""
    if len(it) == 0:
        return []
    n = len(it)
    mean_iter = float(it.duration.mean()) or 1.0
    c, nph = it.cells, len(it.phases)
    sums = {w: np.bincount(c.col, weights=c.values(w), minlength=nph) for w in ("cpu", "gpu", "count")}
    maxima = {w: _column_max(it, w) for w in ("cpu", "gpu")}
    qc, qg = it.column_quantiles("cpu", QUANTILES), it.column_quantiles("gpu", (0.5, 0.99))
    present = it.present()
    out = []
    for j, name in enumerate(it.phases):
        cpu_mean, gpu_mean = sums["cpu"][j] / n, sums["gpu"][j] / n
        out.append(
            PhaseAcrossIterations(
                phase=name,
                iterations=int(present[j]),
                mean_ns=int(round(cpu_mean)),
                p50_ns=int(round(qc[j, 0])),
                p90_ns=int(round(qc[j, 1])),
                p99_ns=int(round(qc[j, 2])),
                max_ns=int(maxima["cpu"][j]),
                share=float(cpu_mean) / mean_iter,
                gpu_mean_ns=int(round(gpu_mean)),
                gpu_p50_ns=int(round(qg[j, 0])),
                gpu_p99_ns=int(round(qg[j, 1])),
                gpu_max_ns=int(maxima["gpu"][j]),
                per_iteration_count=float(sums["count"][j] / n),
            )
        )
    return out


def _column_max(it: Iterations, what: str) -> np.ndarray:
    """Per phase, the largest value of its column (absent = 0)."""
    c = it.cells
    out = np.zeros(len(it.phases), dtype=np.int64)
    nonempty = np.flatnonzero(np.diff(c.col_start) > 0)
    if len(nonempty):
        out[nonempty] = np.maximum.reduceat(c.values(what), c.col_start[nonempty])
    full = np.diff(c.col_start) == len(it)  # no implicit 0 in these columns
    return np.where(full, out, np.maximum(out, 0))


def _column_order_stats(it: Iterations, what: str, qs: tuple[float, ...], *, median: bool) -> np.ndarray:
    """Quantiles (``np.quantile``, linear) or the median (``np.median``) of every column at once.

    A column is its cells plus ``n - cells`` implicit zeros; with no negative value the zeros come
    first in sorted order, so order statistic ``i`` is 0 below the zeros and a sorted cell above.
    Interpolation follows numpy's arithmetic, so the numbers are the same as on the dense column.
    """
    c, n, nph = it.cells, len(it), len(it.phases)
    vals = c.values(what)
    if len(vals) and vals.min() < 0:  # not the case for durations; keep numpy's answer regardless
        dense = getattr(it, what).astype(np.float64)
        return np.median(dense, axis=0)[:, None] if median else np.quantile(dense, qs, axis=0).T
    order = np.lexsort((vals, c.col))
    ordered = vals[order].astype(np.float64)
    zeros = n - np.diff(c.col_start)

    def stat(i: int) -> np.ndarray:
        pos = c.col_start[:-1] + i - zeros
        ok = i >= zeros
        return np.where(ok, ordered[np.clip(pos, 0, max(len(ordered) - 1, 0))] if len(ordered) else 0.0, 0.0)

    out = np.zeros((nph, len(qs)), dtype=np.float64)
    for k, q in enumerate(qs):
        if median:
            out[:, k] = (stat((n - 1) // 2) + stat(n // 2)) / 2
            continue
        v = (n - 1) * q
        lo = math.floor(v)
        hi = lo + 1 if v < n - 1 else lo
        a, b = stat(min(lo, n - 1)), stat(min(hi, n - 1))
        gamma = v - lo
        diff = b - a
        out[:, k] = b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma
    return out


def culprits(it: Iterations, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per iteration row: the phase (never the key, column 0) whose CPU time exceeds its median the most,
    and that excess (``-inf`` when the key is the only phase).

    The same answer as ``argmax(cpu[rows] - median(cpu, axis=0))`` with column 0 excluded (ties: the
    first column), found from the cells: a phase absent from a row exceeds by minus its median, so
    only the row's own phases and the absent phase with the smallest median are candidates.
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.zeros(len(rows), dtype=np.int64)
    best = np.full(len(rows), -np.inf)
    if len(it.phases) < 2:
        return cols, best
    med = it.column_medians("cpu")
    by_median = (np.lexsort((np.arange(1, len(med)), med[1:])) + 1).tolist()  # smallest median first, then column
    for n, k in enumerate(rows.tolist()):
        mine, values = it.row_cells(k)
        mine, values = mine[1:], values[1:]  # column 0 (the key) is in every row
        cand_j, cand_v = -1, -np.inf
        if len(mine):
            ex = values - med[mine]
            i = int(np.argmax(ex))
            cand_j, cand_v = int(mine[i]), float(ex[i])
        present = set(mine.tolist())
        absent = next((j for j in by_median if j not in present), None)
        if absent is not None and (-med[absent] > cand_v or (-med[absent] == cand_v and absent < cand_j)):
            cand_j, cand_v = absent, float(-med[absent])
        cols[n], best[n] = cand_j, cand_v
    return cols, best


@dataclass
class SlowIteration:
    rank: int
    iteration: int  # index within the key thread (before skipping)
    row: int  # row of the Iterations matrices
    start_ns: int  # from capture start
    duration_ns: int
    vs_median: float  # duration / median iteration duration
    gpu_busy_ns: int
    culprit: str  # phase with the largest excess over its median
    culprit_excess_ns: int
    phases: dict[str, int]  # CPU ns per phase that ran in this iteration (the key first)


def slowest(it: Iterations, top: int = 5) -> list[SlowIteration]:
    """The ``top`` longest iterations and, for each, the phase that overran its median the most."""
    if len(it) == 0:
        return []
    med_it = float(np.median(it.duration)) or 1.0
    order = np.argsort(-it.duration, kind="stable")[: max(top, 0)]
    cols, excess = culprits(it, order)
    out = []
    for rank, k in enumerate(order, 1):
        ran, cpu_k = it.row_cells(int(k))
        j = int(cols[rank - 1]) if excess[rank - 1] > 0 else 0
        out.append(
            SlowIteration(
                rank=rank,
                iteration=int(it.index[k]),
                row=int(k),
                start_ns=int(it.start[k]),
                duration_ns=int(it.duration[k]),
                vs_median=float(it.duration[k]) / med_it,
                gpu_busy_ns=int(it.gpu_busy[k]),
                culprit=it.phases[j] if j else "",
                culprit_excess_ns=int(round(excess[rank - 1])) if j else 0,
                phases={it.phases[c]: int(v) for c, v in zip(ran.tolist(), cpu_k.tolist())},
            )
        )
    return out
