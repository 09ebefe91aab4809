"""``outlier_iterations``: iterations longer than 2 × the median, grouped by the phase that overran its median most.

2 × keeps ordinary jitter (±30 % on a shared host) out and catches warm-up, compilation, GC pauses
and I/O stalls; at least 5 iterations are needed for a median to mean something. Cost: the
iterations' time above the median. When CUDA calls of the overrunning phase make up half its
overrun, the cause is named (``evidence.cause``) and the advice fits it; a slow iteration whose
overrun is a wait in a sync or copy that has its own finding is that finding's (its cost already
holds the wait): its index goes to that finding's ``slow_iterations``, not into a second,
overlapping cost; likewise one whose overrun is a stall that ``phase_stalls`` names (with its iteration
numbers) is that finding's, and not reported again. Otherwise, when the phase's own OS waits in those
iterations (nsys ``-t osrt``) make up half its overrun, the wait is named (``cause: os_wait``, its category
and calls) and the advice fits it; an ``os_wait`` finding of that phase then holds the slow iterations
instead. The excess of the outliers kept is explained CPU time (the bound kinds leave it out), unless it
is an OS wait, which ``os_wait`` has counted already.
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings import os_calls
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.cuda_calls import CUDA_CAUSES, cause, own_cuda_calls
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.analysis.iterations import culprits

NAME = "outlier_iterations"
OUTLIER_FACTOR = 2.0  # iterations longer than 2× the median
MIN_ITERATIONS = 5
ADVICE = "look for compilation, GC or I/O there; skip warm-up: --skip-first"


def _outlier_cause(ctx: Context, f: Finding, ranges: np.ndarray) -> None:
    """When CUDA calls of the overrunning phase (in its slow iterations) make up most of the overrun,
    name them and give the advice for that cause instead of the generic one (compilation, GC, I/O):
    a CPU far ahead of the GPU blocks in launches once CUDA's queue is full; lazy module loading and
    allocations stall the first iterations."""
    got = own_cuda_calls(ctx, ranges)
    if got and got[1]:
        total, per = got
        f.evidence.update({"cuda_calls_ns": total, "cuda_calls_top": dict(list(per.items())[:3])})
        found = cause(per, f.evidence["phase_excess_ns"], tuple(CUDA_CAUSES))
        if found:
            f.evidence["cause"] = found
            f.advice = CUDA_CAUSES[found][1]
            return
    os_calls.name_os_wait(ctx, f, ranges, f.evidence["phase_excess_ns"])


def outliers(ctx: Context) -> list[Finding]:
    """Iterations over OUTLIER_FACTOR × the median, grouped by the phase that overran its median the most."""
    it = ctx.it
    if it is None or len(it) < MIN_ITERATIONS:
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
        if phase != it.key:  # the phase's own numbers: its time in those iterations against its own median
            col = it.column(int(j))
            ev["phase_max_ns"] = int(col[k].max())
            ev["phase_median_ns"] = int(np.median(col))
            ev["key"] = it.key  # what an iteration is: the range the phase's numbers are set against
        f = ctx.finding(phase, NAME, cost, ev, ADVICE)
        if f is not None:
            if phase != it.key:
                m = np.isin(it.member_row, k) & (it.member_col == j)
                _outlier_cause(ctx, f, np.intersect1d(it.members[m], ctx.ranges))
            out.append(f)
    return out


def merge_waits(found: list[Finding], waits: list[Finding], os_waits: list[Finding]) -> list[Finding]:
    """``found`` without the outliers that are a wait of a sync or copy finding (or an OS wait of an
    ``os_wait`` finding) of their phase; those findings get the slow iterations' indices instead."""
    by_cause: dict[str, dict[str, list[Finding]]] = {"gpu_wait": {}, "os_wait": {}}
    for c, ws in (("gpu_wait", waits), ("os_wait", os_waits)):
        for w in ws:
            by_cause[c].setdefault(w.phase, []).append(w)
    out = []
    for f in found:
        mine = by_cause.get(f.evidence.get("cause", ""), {}).get(f.phase)
        if not mine:
            out.append(f)
            continue
        for w in mine:
            w.evidence["slow_iterations"] = f.evidence["iterations"]
    return out


def without_stalls(found: list[Finding], stalls: list[Finding]) -> list[Finding]:
    """``found`` without the outliers whose overrunning phase has a phase_stalls finding naming all their
    iterations: the stall is that finding's (its cost already holds it)."""
    named = {(s.phase, i) for s in stalls for i in s.evidence.get("iterations", [])}
    return [f for f in found if not all((f.phase, i) in named for i in f.evidence["iterations"])]


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    out = without_stalls(merge_waits(outliers(ctx), facts.get("waits"), facts.get("os_waits")), facts.get("stalls"))
    excess: dict[str, int] = {}
    for f in out:
        if f.evidence.get("cause") != "os_wait":  # os_wait counted the phase's OS waits already
            excess[f.phase] = excess.get(f.phase, 0) + f.evidence["phase_excess_ns"]
    facts.add("blocked_ns", excess)
    return out


def evidence_text(e: dict, u: Units) -> str:
    """The phase's own time in the slow iterations and its own median first, then the iterations'."""
    its = ", ".join(map(str, e["iterations"][:6])) + ("…" if e["count"] > 6 else "")
    whole = f"up to {u.ns(e['max_ns'])}, median {u.ns(e['median_ns'])}"
    if "phase_max_ns" not in e:  # the iteration itself overran
        return f"iterations {its}: {whole}{os_calls.cause_text(e, u)}"
    own = f"up to {u.ns(e['phase_max_ns'])} (median {u.ns(e['phase_median_ns'])})"
    key = str(e.get("key", "iteration")).rpartition(":")[2]
    whole = f"{key} up to {u.ns(e['max_ns'])} (median {u.ns(e['median_ns'])})"
    return f"iterations {its}: {own}, {whole}{os_calls.cause_text(e, u)}"


KIND = Kind(
    NAME,
    ADVICE,
    detect,
    evidence_text,
    needs=("waits", "os_waits", "stalls"),
    provides=("blocked_ns",),
    needs_cuda=False,
)
