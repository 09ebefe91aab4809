"""The report's views: each turns a :class:`~nvtxsim.analysis.selection.Selection` into one :class:`ViewTable`.

``summary`` is the classic per-phase table; the others answer "why": ``tree``
(nesting, self time), ``iterations`` and ``slowest`` (per-iteration statistics),
``kernels``, ``copies``, ``syncs``, ``gpu`` (idle, queue delay, graphs), ``gpus``
(per device), ``threads``, ``processes``, ``memory`` (GPU memory per phase), ``osrt`` (OS waits per phase), ``stacks`` (hot Python functions per phase, from the sidecar of ``--stacks``), ``findings``
(diagnoses with advice) and ``overlap`` (other threads' GPU work by time overlap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from nvtxsim.analysis.projection import row_dict
from nvtxsim.analysis.selection import Selection, pid_of, tid_of
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.summary import SUMMARY_COLUMNS, summary_table
from nvtxsim.reporting.viewtable import Column, ViewTable, fmt_bytes, fmt_ns

if TYPE_CHECKING:
    from nvtxsim.analysis.iterations import Iterations, LoopRates


@dataclass
class ViewOptions:
    by: str | None = None  # key range of the per-iteration views (None: step if recorded, else iteration)
    by_given: bool = False  # --by was given explicitly (a missing key is then an error)
    # None: the steady state (the warm-up the findings find left out, here and in the per-iteration views).
    skip_first: int | None = None
    top: int = 10  # kernels per phase, slowest iterations
    envs: float | None = None  # environments stepped per iteration (--envs): env-steps/s in the iterations view


def summary(d: Selection, o: ViewOptions) -> ViewTable:
    return summary_table(d.report)


def memory(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.memory import has_memory, phase_memory, process_peak

    cols = [
        Column("phase", "Phase"),
        Column("instances", "N", "int"),
        Column("rise_max_bytes", "rise max", "bytes"),
        Column("net_total_bytes", "net total", "bytes"),
        Column("grow_max_bytes", "high-water +", "bytes"),
        Column("peak_bytes", "peak", "bytes"),
        Column("peak_median_bytes", "peak p50", "bytes"),
        Column("rise_median_bytes", "rise p50", "bytes"),
        Column("net_mean_bytes", "net/inst", "bytes"),
    ]
    if not has_memory(d.export):
        return ViewTable(
            "memory",
            "GPU memory per phase",
            cols,
            [],
            ["export has no GPU memory events: profile with nvtxsim profile --memory (nsys --cuda-memory-usage=true)"],
        )
    notes = [
        "rise max: what the phase needs, the most it added to what the process held when it opened, over its calls "
        "(under PyTorch's caching allocator: its first calls' cache growth); net: allocations minus frees inside it; "
        "high-water +: the most one call raised the process's high-water mark; peak: most the process held while it was open",
        f"process peak during the capture: {fmt_bytes(process_peak(d.export))}",
        "only driver allocations are seen: PyTorch's caching allocator hides tensor frees (PYTORCH_NO_CUDA_MEMORY_CACHING=1 shows them)",
    ]
    return ViewTable("memory", "GPU memory per phase", cols, [row_dict(r) for r in phase_memory(d)], notes)


def osrt(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.osrt import osrt_note, phase_waits
    from nvtxsim.schema import OSRT_CATEGORY_TEXT

    cols = [
        Column("phase", "Phase"),
        Column("category", "waits in"),
        Column("calls", "calls", "int"),
        Column("total_ns", "total", "ns"),
        Column("per_instance_ns", "per inst", "ns"),
        Column("phase_share", "of phase", "pct"),
        Column("top", "top calls", prose=True),
    ]
    title = "OS waits per phase"
    note = osrt_note(d.export)
    if note is not None:
        return ViewTable("osrt", title, cols, [], [note])
    rows = phase_waits(d, fmt_ns)
    notes = [
        "each OS call (nsys -t osrt, calls over --osrt-threshold, 1 µs by default) counts for the innermost phase open "
        "around it on its thread, not again for the phases around that; of phase: share of the phase's time",
        "; ".join(f"{k}: {v}" for k, v in OSRT_CATEGORY_TEXT.items()),
    ]
    return ViewTable("osrt", title, cols, [row_dict(r) for r in rows], notes)


def stacks(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.stacks import read_stacks, sidecar_for
    from nvtxsim.reporting.stacks import stacks_table

    path = sidecar_for(d.export.path)
    return stacks_table(read_stacks(path), path, o.top)


def tree(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.tree import aggregate

    nodes = aggregate(d.export, d.tree)
    rows = []
    for nd in nodes:
        rows.append(
            {
                "thread": f"{d.process_name(nd.global_tid)} / {d.thread_name(nd.global_tid)}",
                "pid": pid_of(nd.global_tid),
                "tid": tid_of(nd.global_tid),
                "depth": nd.depth,
                "phase": nd.path[-1],
                "path": list(nd.path),
                "count": nd.count,
                "cpu_incl_ns": nd.cpu_incl_ns,
                "cpu_self_ns": nd.cpu_self_ns,
                "self_share": nd.cpu_self_ns / nd.cpu_incl_ns if nd.cpu_incl_ns else 0.0,
                "gpu_incl_ns": nd.gpu_incl_ns,
                "gpu_self_ns": nd.gpu_self_ns,
                "cross_thread": nd.cross_thread,
            }
        )
    cols = [  # a narrow terminal keeps the self time and its share first: what the tree is read for
        Column("thread", "Thread", shared_prefix=" / ", once=True),
        Column("phase", "Phase", "tree", shared_prefix=":"),
        Column("count", "N", "int", priority=3),
        Column("cpu_incl_ns", "CPU incl", "ns", priority=1),
        Column("cpu_self_ns", "CPU self", "ns", priority=0),
        Column("self_share", "self %", "pct", priority=2),
        Column("gpu_incl_ns", "GPU incl", "ns", priority=4, drop_if_empty=True),
        Column("gpu_self_ns", "GPU self", "ns", priority=5, drop_if_empty=True),
        Column("cross_thread", "cross-thread", "int", priority=6, drop_if_empty=True),
    ]
    notes = [
        "CPU self = range time minus its child ranges; GPU = busy time of the work launched inside (self: not inside a child)"
    ]
    from nvtxsim.analysis.tree import MAX_DEPTH

    if len(d.tree.nesting.depth) and int(d.tree.nesting.depth.max()) > MAX_DEPTH:
        notes.append(
            f"nesting deeper than {MAX_DEPTH} levels is not listed (its time is in the inclusive time above it)"
        )
    if any(nd.cross_thread for nd in nodes):
        notes.append("cross-thread start/end ranges are kept on the thread that started them")
    return ViewTable(
        "tree", "Nesting per thread: inclusive and self time (totals over instances)", cols, rows, notes, sortable=False
    )


def skip_of(d: Selection, o: ViewOptions) -> int:
    """The iterations the per-iteration views leave out: --skip-first N, else the warm-up the findings find."""
    from nvtxsim.analysis.findings import steady_skip

    return o.skip_first if o.skip_first is not None else steady_skip(d, o.by)


def skipped_text(it: Iterations, o: ViewOptions) -> str:
    """``, first N skipped`` (said why when it is the warm-up found), or nothing."""
    if not it.skipped:
        return ""
    why = " as warm-up (--keep-warm-up keeps them)" if o.skip_first is None else ""
    return f", first {it.skipped} set aside{why}" if why else f", first {it.skipped} skipped"


def _iterations(d: Selection, o: ViewOptions):
    from nvtxsim.analysis.iterations import per_iteration

    try:
        return per_iteration(d, o.by, skip_first=skip_of(d, o)), None
    except NvtxsimError as exc:
        if o.by_given:
            raise
        return None, f"{exc} (choose the range that marks one loop iteration with --by NAME)"


def iterations(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.iterations import loop_rates, phase_stats

    it, err = _iterations(d, o)
    cols = [  # a narrow terminal keeps the typical time and its share of the iteration first
        Column("phase", "Phase", shared_prefix=":"),
        Column("iterations", "iters", "int", priority=4),
        Column("per_iteration_count", "per iter", "float", priority=5),
        Column("mean_ns", "mean", "ns", priority=2),
        Column("p50_ns", "p50", "ns", priority=0),
        Column("p90_ns", "p90", "ns", priority=8),
        Column("p99_ns", "p99", "ns", priority=3),
        Column("max_ns", "max", "ns", priority=9),
        Column("share", "of iter", "pct", priority=1),
        Column("gpu_p50_ns", "GPU p50", "ns", priority=7, drop_if_empty=True),
        Column("gpu_p99_ns", "GPU p99", "ns", priority=10, drop_if_empty=True),
        Column("gpu_max_ns", "GPU max", "ns", priority=11, drop_if_empty=True),
    ]
    if it is None:
        return ViewTable("iterations", "Per iteration", cols, [], [err or ""])
    rows = [row_dict(s) for k, s in enumerate(phase_stats(it)) if k == 0 or s.iterations > 0]
    notes = [
        f"{len(it)} iterations keyed on '{it.key}'"
        + skipped_text(it, o)
        + "; a phase's time per iteration is the sum of its ranges in that iteration (0 when absent)"
    ]
    rates = loop_rates(d, it, o.envs)
    if rates.envs and rows:
        cols, note = _throughput(rows, cols, rates)
        notes.append(note)
    if rates.rollout_ns is not None and len(it):
        notes.append(_learning_note(it, rates))
    if it.unassigned:
        outside = ", ".join(f"{k} ×{v}" for k, v in sorted(it.unassigned.items(), key=lambda kv: -kv[1])[:6])
        notes.append(f"ranges outside every iteration (not counted): {outside}")
    return ViewTable("iterations", f"Per-phase time per iteration ({it.key})", cols, rows, notes)


def _throughput(rows: list[dict], cols: list[Column], rates: LoopRates) -> tuple[list[Column], str]:
    """Env-steps/s of the loop (from the mean iteration) and, per phase, what it costs in env-steps/s."""
    from nvtxsim.analysis.iterations import steps_cost, steps_per_s

    steps = float(rates.steps.mean()) if len(rates.steps) else 1.0
    envs = float(rates.envs or 0) * steps  # env steps per iteration
    iter_ns = rows[0]["mean_ns"]
    for row in rows[1:]:
        cost = steps_cost(envs, iter_ns, row["mean_ns"])
        row["env_steps_per_s_cost"] = round(cost) if cost is not None else None
    rate = steps_per_s(envs, iter_ns)
    rows[0]["env_steps_per_s"] = round(rate) if rate is not None else None
    rows[0]["env_steps_per_s_cost"] = None  # the loop itself: its rate is in the note
    per = f"{rates.envs:g} envs" + (f" × {steps:g} steps" if steps != 1 else "")
    recorded = " (recorded by nvtxsim)" if rates.envs_source == "recorded" else ""
    note = (
        f"{per} per iteration{recorded}: {rate or 0:,.0f} env-steps/s (mean iteration); "
        "a phase's cost: how much higher that would be if the phase took no time"
    )
    return cols + [Column("env_steps_per_s_cost", "env-steps/s cost", "int", priority=6)], note


def slowest(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.iterations import loop_rates
    from nvtxsim.analysis.iterations import slowest as slow

    it, err = _iterations(d, o)
    cols = [
        Column("rank", "#", "int"),
        Column("iteration", "iteration", "int"),
        Column("start_ns", "at", "ns"),
        Column("duration_ns", "duration", "ns"),
        Column("vs_median", "vs median", "ratio"),
        Column("gpu_busy_ns", "GPU busy", "ns"),
        Column("culprit", "largest excess"),
        Column("culprit_excess_ns", "excess", "ns"),
    ]
    if it is None:
        return ViewTable("slowest", "Slowest iterations", cols, [], [err or ""])
    rows = [row_dict(s) for s in slow(it, o.top)]
    rates = loop_rates(d, it, o.envs)
    rollout_ns, update_ns = rates.rollout_ns, rates.update_ns
    if rollout_ns is not None and update_ns is not None:  # set together
        cols = cols + [Column("rollout_ns", "rollout", "ns"), Column("update_ns", "update", "ns")]
        for row in rows:
            row["rollout_ns"], row["update_ns"] = int(rollout_ns[row["row"]]), int(update_ns[row["row"]])
    if rates.envs:
        cols = cols + [Column("env_steps_per_s", "env-steps/s", "int")]
        for row in rows:
            row["env_steps_per_s"] = _rounded(rates.env_steps_per_s[row["row"]])
    return ViewTable(
        "slowest",
        f"Slowest iterations ({it.key})",
        cols,
        rows,
        ["excess: the phase's time in that iteration minus its median over all iterations"]
        + ([f"{len(it)} iterations{skipped_text(it, o)}"] if it.skipped else []),
    )


def _rounded(value: float) -> int | None:
    return int(round(value)) if value == value else None  # NaN: unknown


def _learning_note(it: Iterations, rates: LoopRates) -> str:
    """Learning iterations at a glance: collection vs update, env steps, env-steps/s."""
    assert rates.rollout_ns is not None and rates.update_ns is not None  # the caller checked; set together
    mean = float(it.duration.mean()) or 1.0
    rollout, update = float(rates.rollout_ns.mean()), float(rates.update_ns.mean())
    text = (
        f"per iteration: rollout {fmt_ns(rollout)} ({rollout / mean:.0%}), update {fmt_ns(update)} "
        f"({update / mean:.0%}), {float(rates.steps.mean()):g} env steps"
    )
    rate = rates.env_steps_per_s[np.isfinite(rates.env_steps_per_s)]
    if len(rate):
        text += f"; env-steps/s median {np.median(rate):,.0f} (min {rate.min():,.0f}, max {rate.max():,.0f})"
    return text


def kernels(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.gpu import kernels as k

    rows = [row_dict(r) for r in k(d, o.top)]
    # Short names collide across template instantiations: number the repeats within a phase.
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        n = seen[(row["phase"], row["kernel_short"])] = seen.get((row["phase"], row["kernel_short"]), 0) + 1
        name = row["kernel_short"] if len(row["kernel_short"]) <= 60 else row["kernel_short"][:59] + "…"
        row["kernel_display"] = name if n == 1 else f"{name} #{n}"
    cols = [
        Column("phase", "Phase"),
        Column("kernel_display", "Kernel"),
        Column("count", "count", "int"),
        Column("total_ns", "GPU total", "ns"),
        Column("mean_ns", "mean", "ns"),
        Column("max_ns", "max", "ns"),
        Column("share", "of phase", "pct"),
    ]
    notes = [
        f"top {o.top} per phase by GPU time; a kernel counts for every phase around its launch, once per phase (as nsys nvtxkernsum)"
    ]
    if not d.has_cuda:
        notes.append(f"export has {d.export.no_cuda_reason}")
    return ViewTable("kernels", "Top kernels per phase", cols, rows, notes)


def copies(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.gpu import DIRECTION_LABELS
    from nvtxsim.analysis.gpu import copies as cp

    rows = []
    for r in cp(d):
        row = row_dict(r)
        row["direction_label"] = DIRECTION_LABELS.get(r.direction, r.direction)
        rows.append(row)
    cols = [
        Column("phase", "Phase"),
        Column("direction_label", "Direction"),
        Column("count", "count", "int"),
        Column("bytes", "bytes", "bytes"),
        Column("total_ns", "GPU time", "ns"),
        Column("mean_ns", "mean", "ns"),
        Column("throughput_gbps", "GB/s", "float"),
    ]
    return ViewTable("copies", "Memory copies and sets per phase", cols, rows)


def syncs(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.gpu import syncs as sy

    cols = [
        Column("phase", "Phase"),
        Column("api", "CUDA call"),
        Column("calls", "calls", "int"),
        Column("total_ns", "CPU wait", "ns"),
        Column("mean_ns", "mean", "ns"),
        Column("max_ns", "max", "ns"),
        Column("share_of_cpu", "of phase CPU", "pct"),
    ]
    return ViewTable("syncs", "CPU time in synchronizing CUDA calls per phase", cols, [row_dict(r) for r in sy(d)])


def gpu(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.gpu import graph_hints, overview

    cols = [
        Column("phase", "Phase"),
        Column("launches", "launches", "int"),
        Column("gpu_busy_ns", "GPU busy", "ns"),
        Column("gpu_idle_ns", "GPU idle", "ns"),
        Column("gpu_idle_share", "idle %", "pct"),
        Column("span_gaps_ns", "span gaps", "ns"),
        Column("queue_p50_ns", "queue p50", "ns"),
        Column("queue_p99_ns", "queue p99", "ns"),
        Column("sync_wait_ns", "sync wait", "ns"),
        Column("sync_share", "sync %", "pct"),
        Column("graph_launches", "graphs", "int"),
        Column("graph_gpu_ns", "graph GPU", "ns"),
    ]
    notes = [
        "GPU idle: range time with no GPU op of its process running; span gaps: idle inside the range's own GPU work; "
        "queue: GPU start minus end of the launch call; sync wait: CPU time in synchronizing CUDA calls"
    ]
    notes += graph_hints(d)
    if not d.has_cuda:
        notes.append(f"export has {d.export.no_cuda_reason}: GPU columns are 0")
    return ViewTable(
        "gpu",
        "GPU per phase: busy, idle, queue delay, sync waits, CUDA graphs",
        cols,
        [row_dict(r) for r in overview(d)],
        notes,
    )


def gpus(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.gpu import by_device

    cols = [
        Column("phase", "Phase"),
        Column("gpu", "GPU"),
        Column("ops", "ops", "int"),
        Column("kernels", "kernels", "int"),
        Column("kernel_ns", "kernel time", "ns"),
        Column("busy_ns", "busy", "ns"),
        Column("copy_bytes", "copied", "bytes"),
    ]
    return ViewTable("gpus", "Per phase and GPU", cols, [row_dict(r) for r in by_device(d)])


def _grouped(d: Selection, by: str) -> ViewTable:
    from nvtxsim.analysis.breakdown import breakdown

    rows = []
    for g in breakdown(d, by):
        row = g.as_dict()
        row["phase"] = g.stats.label
        rows.append(row)
    first = Column("where", "Thread" if by == "thread" else "Process")
    return ViewTable("threads" if by == "thread" else "processes", f"Phases per {by}", [first] + SUMMARY_COLUMNS, rows)


def threads(d: Selection, o: ViewOptions) -> ViewTable:
    return _grouped(d, "thread")


def processes(d: Selection, o: ViewOptions) -> ViewTable:
    return _grouped(d, "process")


def findings(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.analysis.findings import analyse
    from nvtxsim.reporting.findings import findings_table

    return findings_table(analyse(d, by=o.by, skip_first=o.skip_first))


def overlap(d: Selection, o: ViewOptions) -> ViewTable:
    from nvtxsim.reporting.findings import overlap_table

    return overlap_table(d, by=o.by, skip_first=o.skip_first)


@dataclass(frozen=True)
class View:
    """One view, declared once: its name (``--view NAME``, the key in JSON), its heading on the HTML page,
    and the function that builds its table."""

    name: str
    page_title: str
    build: Callable[[Selection, ViewOptions], ViewTable]

    def table(self, d: Selection, o: ViewOptions) -> ViewTable:
        return replace(self.build(d, o), page_title=self.page_title)


#: Every view, in the order ``--view all`` and the HTML page show them.
VIEWS: dict[str, View] = {
    v.name: v
    for v in (
        View("summary", "Phases", summary),
        View("tree", "Nesting and self time", tree),
        View("iterations", "Per iteration", iterations),
        View("slowest", "Slowest iterations", slowest),
        View("kernels", "Top kernels", kernels),
        View("copies", "Copies", copies),
        View("syncs", "Synchronization waits", syncs),
        View("gpu", "GPU idle, queue, graphs", gpu),
        View("gpus", "Per GPU", gpus),
        View("threads", "Per thread", threads),
        View("processes", "Per process", processes),
        View("memory", "GPU memory", memory),
        View("osrt", "OS waits", osrt),
        View("stacks", "Hot Python functions", stacks),
        View("findings", "Findings (all)", findings),
        View("overlap", "Other threads' GPU work (time overlap)", overlap),
    )
}


def build(d: Selection, names: list[str], options: ViewOptions | None = None) -> list[ViewTable]:
    o = options or ViewOptions()
    return [VIEWS[n].table(d, o) for n in names]
