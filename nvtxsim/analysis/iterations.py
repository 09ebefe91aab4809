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

from dataclasses import dataclass, field

import numpy as np

from nvtxsim import phases
from nvtxsim.analysis.selection import Detail
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.schema import PID_MASK

QUANTILES = (0.5, 0.9, 0.99)


@dataclass
class Iterations:
    """Iterations × phases matrices (ns), iterations in time order after ``skip_first``."""

    key: str  # display label of the key range
    index: np.ndarray  # per iteration: its position among the key thread's instances (before skipping)
    key_range: np.ndarray  # per iteration: index into Export.ranges
    start: np.ndarray
    duration: np.ndarray  # key range CPU duration
    gpu_busy: np.ndarray  # key range GPU busy time (nsys attribution)
    phases: list[str]  # column labels (key first)
    cpu: np.ndarray  # (iterations, phases) summed CPU ns
    gpu: np.ndarray  # (iterations, phases) summed GPU busy ns
    count: np.ndarray  # (iterations, phases) instances
    skipped: int = 0
    unassigned: dict[str, int] = field(default_factory=dict)  # phase → ranges outside every iteration
    # Which iteration row and phase column each non-key range went to (row -1: outside or skipped),
    # so other per-range quantities (GPU memory, ...) can be aggregated per iteration the same way.
    members: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # indices into Export.ranges
    member_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    member_col: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.index)


def _key_label(detail: Detail, by: str) -> int:
    """The label ``by`` names: ``domain:name`` or a bare name, preferring the selected ranges' labels."""
    names = detail.label_names
    labels = detail.export.labels
    sel_labels = set(np.unique(detail.export.ranges.label[detail.selected]).tolist())
    exact = [i for i in range(len(labels)) if str(names[i]) == by]
    bare = [i for i, (dom, name) in enumerate(labels) if name == by]
    for group in ([i for i in exact if i in sel_labels], [i for i in bare if i in sel_labels], exact, bare):
        if group:
            return group[0]
    present = sorted({str(names[i]) for i in sel_labels})
    raise NvtxsimError(f"--by {by!r}: no range of that name; phases present: {', '.join(present[:20]) or 'none'}")


def _loop_labels(detail: Detail, name: str) -> list[int]:
    """Labels of the RL loop level ``name`` (``step`` ...) that nvtxsim records in its domain."""
    return [i for i, (dom, n) in enumerate(detail.export.labels) if n == name and dom == phases.DOMAIN]


def default_key(detail: Detail) -> str:
    """``step`` when the selection holds nvtxsim ``step`` ranges (an instrumented RL runner), else ``iteration``."""
    steps = _loop_labels(detail, phases.STEP)
    if steps and np.isin(detail.export.ranges.label[detail.selected], steps).any():
        return phases.STEP
    return phases.ITERATION


def per_iteration(detail: Detail, by: str | None = None, *, skip_first: int = 0) -> Iterations:
    """Split the selected ranges into the iterations given by the key range ``by`` (None: :func:`default_key`)."""
    if skip_first < 0:
        raise NvtxsimError("--skip-first must be >= 0")
    by = by or default_key(detail)
    ex = detail.export
    r = ex.ranges
    key = _key_label(detail, by)
    key_name = str(detail.label_names[key])
    all_keys = np.flatnonzero(r.label == key)
    # Position within the key's thread (iteration number as the program counted it).
    order = np.lexsort((r.start[all_keys], r.global_tid[all_keys]))
    all_keys = all_keys[order]
    tids = r.global_tid[all_keys]
    first = np.r_[True, tids[1:] != tids[:-1]] if len(tids) else np.zeros(0, dtype=bool)
    grp = np.cumsum(first) - 1
    pos = np.arange(len(all_keys)) - (np.flatnonzero(first)[grp] if len(all_keys) else 0)
    keep_all = pos >= skip_first
    # All instances in time order (members of skipped iterations are found too, then dropped).
    t_order = np.argsort(r.start[all_keys], kind="stable")
    all_keys, pos, keep_all = all_keys[t_order], pos[t_order], keep_all[t_order]
    slot = np.where(keep_all, np.cumsum(keep_all) - 1, -2)  # row in the matrices, -2 for skipped instances
    keys, pos = all_keys[keep_all], pos[keep_all]
    n_it = len(keys)

    members = detail.selected[r.label[detail.selected] != key]
    labels_used = np.unique(r.label[members])
    phase_labels = [key] + [int(x) for x in labels_used]
    col = np.zeros(len(ex.labels) + 1, dtype=np.int64)
    col[labels_used] = np.arange(1, len(labels_used) + 1)
    nph = len(phase_labels)
    cpu = np.zeros((n_it, nph), dtype=np.int64)
    gpu = np.zeros((n_it, nph), dtype=np.int64)
    cnt = np.zeros((n_it, nph), dtype=np.int64)
    busy = detail.gpu.busy
    dur = r.end - r.start
    if n_it:
        cpu[:, 0] = dur[keys]
        gpu[:, 0] = busy[keys]
        cnt[:, 0] = 1
    unassigned: dict[str, int] = {}
    it_of = np.full(len(members), -1, dtype=np.int64)
    if len(all_keys) and len(members):
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
        hit = it_of >= 0
        c = col[r.label[members[hit]]]
        np.add.at(cpu, (it_of[hit], c), dur[members[hit]])
        np.add.at(gpu, (it_of[hit], c), busy[members[hit]])
        np.add.at(cnt, (it_of[hit], c), 1)
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
        cpu=cpu,
        gpu=gpu,
        count=cnt,
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


def recorded_envs(detail: Detail) -> float | None:
    """Environments per step as nvtxsim recorded them: the payload of its RL loop ranges (median)."""
    labels = [i for name in (phases.STEP, phases.LEARNING_ITERATION, phases.ROLLOUT) for i in _loop_labels(detail, name)]
    r = detail.export.ranges
    sel = detail.selected[np.isin(r.label[detail.selected], labels)] if labels else detail.selected[:0]
    values = r.payload[sel]
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.median(values)) if len(values) else None


def _loop_column(detail: Detail, it: Iterations, name: str) -> int | None:
    """The column of ``it`` where the nvtxsim loop level or phase ``name`` ran inside iterations (never the key's)."""
    wanted = {str(detail.label_names[i]) for i in _loop_labels(detail, name)}
    cols = [j for j, p in enumerate(it.phases) if j > 0 and p in wanted and it.count[:, j].any()]
    return cols[0] if cols else None


def loop_rates(detail: Detail, it: Iterations, envs: float | None = None) -> LoopRates:
    """Env steps and env-steps/s per iteration (``envs`` overrides the recorded count); rollout vs update."""
    step = _loop_column(detail, it, phases.STEP)
    steps = it.count[:, step] if step is not None else np.ones(len(it), dtype=np.int64)
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
        steps=steps, envs=envs or None, envs_source=source, env_steps_per_s=rate,
        rollout_ns=it.cpu[:, rollout] if rollout is not None else None,
        update_ns=(it.cpu[:, update] if update is not None else zeros) if rollout is not None else None,
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
    """Per phase, the distribution of its per-iteration total over the iterations (absent = 0)."""
    out: list[PhaseAcrossIterations] = []
    if len(it) == 0:
        return out
    mean_iter = float(it.duration.mean()) or 1.0
    for j, name in enumerate(it.phases):
        c, g = it.cpu[:, j], it.gpu[:, j]
        qc = np.quantile(c, QUANTILES)
        qg = np.quantile(g, (0.5, 0.99))
        out.append(
            PhaseAcrossIterations(
                phase=name,
                iterations=int((it.count[:, j] > 0).sum()),
                mean_ns=int(round(c.mean())),
                p50_ns=int(round(qc[0])),
                p90_ns=int(round(qc[1])),
                p99_ns=int(round(qc[2])),
                max_ns=int(c.max()),
                share=float(c.mean()) / mean_iter,
                gpu_mean_ns=int(round(g.mean())),
                gpu_p50_ns=int(round(qg[0])),
                gpu_p99_ns=int(round(qg[1])),
                gpu_max_ns=int(g.max()),
                per_iteration_count=float(it.count[:, j].mean()),
            )
        )
    return out


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
    phases: dict[str, int]  # CPU ns per phase in this iteration


def slowest(it: Iterations, top: int = 5) -> list[SlowIteration]:
    """The ``top`` longest iterations and, for each, the phase that overran its median the most."""
    if len(it) == 0:
        return []
    med_it = float(np.median(it.duration)) or 1.0
    med_ph = np.median(it.cpu, axis=0)
    order = np.argsort(-it.duration, kind="stable")[: max(top, 0)]
    out = []
    for rank, k in enumerate(order, 1):
        excess = it.cpu[k] - med_ph
        excess[0] = -np.inf  # the key itself is not an explanation
        j = int(np.argmax(excess)) if len(excess) > 1 else 0
        j = j if j and excess[j] > 0 else 0
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
                culprit_excess_ns=int(round(excess[j])) if j else 0,
                phases={p: int(v) for p, v in zip(it.phases, it.cpu[k])},
            )
        )
    return out
