"""A phase's own numbers, which the launch-, CPU- and GPU-bound kinds test.

Each phase is one of ``launch_bound``, ``cpu_bound`` or ``gpu_bound`` at most, in that precedence
(each kind's ``applies``); the key range (``iteration``) itself is not tested: its self time is
the gaps between its phases. CPU time already explained (``blocked_ns``: waits in syncs and
pageable copies, the excess of outlier iterations) is taken out first: a phase that waits on a
``.item()`` is a sync finding, not a CPU-bound phase. Other threads' GPU work launched while the
phase was open counts as the phase's (a phase blocked in ``backward()`` waits for autograd's launches).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts
from nvtxsim.analysis.findings.model import OUTSIDE, OUTSIDE_LOOP
from nvtxsim.analysis.gpu import gpu_idle_per_range

#: The facts :func:`loads` reads: a kind that calls it needs them.
LOAD_NEEDS = ("blocked_ns", "other_threads")


@dataclass
class PhaseSelf:
    """A phase's own numbers, its child phases' subtracted (sums over its kept ranges)."""

    phase: str
    instances: int
    cpu_self_ns: int
    launches: int
    gpu_busy_ns: int  # busy time of the work launched in the phase itself (nsys rule, children subtracted)
    gpu_idle_ns: int = 0  # its own time (children's removed) with no GPU op of the process running, whoever launched it


@dataclass
class Load:
    """What the bound kinds test for one phase: its own numbers with other threads' work added."""

    own: PhaseSelf  # launches and GPU busy time include other threads' work launched while it was open
    work: int  # CPU self time not spent waiting on the GPU
    lost: int  # what launch- or CPU-bound work costs: the GPU's idle time meanwhile
    gpu_share: float  # GPU busy / work
    per_launch: float | None  # CPU work per launch
    mean_op: float | None  # GPU busy per launch
    evidence: dict  # the numbers every bound finding shows


def _gpu_idle(ctx: Context, idx: np.ndarray) -> np.ndarray:
    """Per range: its time with no GPU op of its process running (both backends: one answer whatever the size)."""
    return gpu_idle_per_range(ctx.d, idx)


def phase_self(ctx: Context) -> list[PhaseSelf]:
    tree, g = ctx.tree, ctx.d.gpu
    idx, parent = tree.nesting.ranges, tree.nesting.parent
    ops, busy = g.ops[idx].astype(np.int64), g.busy[idx].astype(np.int64)
    kids = np.flatnonzero(parent >= 0)
    keep = ctx.kept
    lab = ctx.r.label[idx][keep].astype(np.int64)
    n = len(ctx.ex.labels)

    def per_label(v: np.ndarray) -> np.ndarray:
        return np.bincount(lab, weights=v[keep], minlength=n).astype(np.int64)

    def own(v: np.ndarray) -> np.ndarray:  # per label: the ranges' values minus their children's
        child = np.bincount(parent[kids], weights=v[kids], minlength=len(idx)).astype(np.int64)
        return per_label(np.maximum(v - child, 0))

    idle = _gpu_idle(ctx, idx)
    cnt = np.bincount(lab, minlength=n)
    cpu = per_label(tree.cpu_self)
    launches, own_busy, own_idle = own(ops), own(busy), own(idle)
    names = ctx.d.label_names
    return [
        PhaseSelf(str(names[k]), int(cnt[k]), int(cpu[k]), int(launches[k]), int(own_busy[k]), int(own_idle[k]))
        for k in np.flatnonzero(cnt)
    ]


def _r(x: float | None) -> int | None:
    return int(round(x)) if x is not None else None


def _load(p: PhaseSelf, blocked: dict[str, int], others: dict) -> Load:
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
            p.phase, p.instances, p.cpu_self_ns, p.launches + o.launches, p.gpu_busy_ns + o.gpu_busy_ns, p.gpu_idle_ns
        )
    gpu_share = p.gpu_busy_ns / work if work else 0.0
    per_launch = work / p.launches if p.launches else None
    mean_op = p.gpu_busy_ns / p.launches if p.launches else None
    ev.update(
        {"gpu_busy_share": round(gpu_share, 3), "cpu_per_launch_ns": _r(per_launch), "gpu_per_launch_ns": _r(mean_op)}
    )
    return Load(p, work, lost, gpu_share, per_launch, mean_op, ev)


def loads(ctx: Context, facts: Facts) -> list[Load]:
    """Per phase tested (the key range left out), its :class:`Load`; computed once per report."""

    def compute() -> list[Load]:
        blocked = facts.get("blocked_ns")
        others = {r.phase: r for r in facts.get("other_threads") if r.phase not in (OUTSIDE, OUTSIDE_LOOP)}
        key = ctx.it.key if ctx.it is not None else None
        return [_load(p, blocked, others) for p in phase_self(ctx) if p.phase != key]

    return ctx.shared("bound.loads", compute)
