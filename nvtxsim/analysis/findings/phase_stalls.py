"""``phase_stalls``: calls of a phase far above that phase's own median, whatever the iteration totals do.

A 60 ms stall in a 0.6 ms phase, in 3 iterations of 120, hides in the iteration totals when the
iteration is long anyway, and shows only as a small share of the phase's time. Per phase (its calls
in the steady state, each call's self time: its child phases' time taken out), a call is a stall when
its self time is over :data:`STALL_FACTOR` × the phase's median and at least :data:`STALL_MIN_NS`
above it (shorter ones are jitter, whatever their ratio); phases with fewer than
:data:`MIN_CALLS` calls have no median to speak of. Cost: the stalls' time above the median.

The stalls come with their iteration numbers, and are called periodic (``evidence.every``) when
there are at least :data:`MIN_PERIODIC` of them at a constant gap of K iterations (logging,
checkpoints, evaluation, GC): the gaps' greatest common divisor, with at least three quarters of
the multiples of K between the first and the last stall stalled. The warm-up's calls are the
``warm_up`` finding's, never a stall. When CUDA calls make up half the stalls' excess the cause is
named and the advice fits it (``launch_queue``: the CPU blocked on a full launch queue), and likewise
the OS waits of the stalled calls (``cause: os_wait``, its category and calls: a ``time.sleep``); a stall
that is a wait in a sync or copy with its own finding at the phase is that finding's (its
``slow_iterations``), not a second cost. The stalls' excess is explained CPU time (the bound kinds leave
it out), and a slow iteration whose overrun is a stall named here is not reported again as an
``outlier_iterations`` finding.
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from nvtxsim.analysis.findings import os_calls
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.cuda_calls import CUDA_CAUSES, cause, own_cuda_calls
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.analysis.warmup import iteration_rows

NAME = "phase_stalls"
STALL_FACTOR = 5.0
STALL_MIN_NS = 1_000_000  # at least 1 ms over the median
MIN_CALLS = 10
MIN_PERIODIC = 3
PERIODIC_COVER = 0.75
ADVICE = "what runs then (logging, checkpoints, eval, GC)? move it off the loop"


def period(numbers: list[int]) -> int | None:
    """K when ``numbers`` (sorted, distinct) are stalls every K iterations (module docstring), else None."""
    if len(numbers) < MIN_PERIODIC:
        return None
    k = reduce(math.gcd, np.diff(numbers).tolist())
    if k < 2:
        return None
    expected = (numbers[-1] - numbers[0]) // k + 1
    return k if len(numbers) >= PERIODIC_COVER * expected else None


def _phase_calls(ctx: Context) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per phase of the steady state: its calls (indices into Export.ranges) in time order and their self times."""
    tree, r = ctx.tree, ctx.r
    warm = np.concatenate([p.ranges for p in ctx.warm_up.phases]) if ctx.warm_up.phases else np.zeros(0, np.int64)
    pos = np.flatnonzero(ctx.kept & ~np.isin(tree.nesting.ranges, warm))
    idx = tree.nesting.ranges[pos]
    order = np.lexsort((r.start[idx], r.label[idx]))
    idx, self_ns = idx[order], tree.cpu_self[pos[order]].astype(np.int64)
    labels = r.label[idx]
    cut = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1], True]) if len(idx) else np.zeros(1, dtype=np.int64)
    return [
        (str(ctx.d.label_names[labels[a]]), idx[a:b], self_ns[a:b])
        for a, b in zip(cut[:-1].tolist(), cut[1:].tolist())
        if b - a >= MIN_CALLS
    ]


def _iteration_numbers(ctx: Context, ranges: np.ndarray) -> list[int] | None:
    """The iteration numbers ``ranges`` ran in, None when one of them ran between iterations."""
    it = ctx.it
    if it is None:
        return None
    rows = ctx.shared("phase_stalls.rows", lambda: iteration_rows(ctx.ex, it))
    got = rows[ranges]
    return None if (got < 0).any() else sorted({int(it.index[k]) for k in got})


def _cause(ctx: Context, f: Finding, ranges: np.ndarray) -> None:
    """When CUDA calls of the stalled calls make up half their excess, name the cause and fit the advice
    (a CPU far ahead of the GPU blocks in launches once CUDA's queue is full; a wait in a sync or copy)."""
    got = own_cuda_calls(ctx, ranges) if ctx.d.has_cuda else None
    if got and got[1]:
        found = cause(got[1], f.cost_ns, tuple(CUDA_CAUSES))
        f.evidence["cuda_calls_top"] = dict(list(got[1].items())[:3])
        if found:
            f.evidence["cause"] = found
            f.advice = CUDA_CAUSES[found][1]
            return
    os_calls.name_os_wait(ctx, f, ranges, f.cost_ns)


def _waited(f: Finding, waits: list[Finding]) -> bool:
    """A stall that is a wait in a sync or copy with its own finding at the phase: that finding's (its cost
    holds the wait), which gets the stalls' iterations as ``slow_iterations``."""
    mine = [w for w in waits if w.phase == f.phase] if f.evidence.get("cause") == "gpu_wait" else []
    for w in mine:
        w.evidence["slow_iterations"] = f.evidence.get("iterations", [])
    return bool(mine)


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    out, excess = [], {}
    waits = facts.get("waits")
    for phase, idx, self_ns in _phase_calls(ctx):
        m = float(np.median(self_ns))
        stall = np.flatnonzero((self_ns > STALL_FACTOR * m) & (self_ns >= m + STALL_MIN_NS))
        if not len(stall):
            continue
        cost = float((self_ns[stall] - m).sum())
        its = _iteration_numbers(ctx, idx[stall])
        ev: dict = {
            "count": int(len(stall)),
            "of_calls": int(len(idx)),
            "median_ns": int(m),
            "max_ns": int(self_ns[stall].max()),
            "stall_ns": int(np.median(self_ns[stall])),
        }
        if its is not None:
            ev["iterations"] = its[:20]
        else:
            ev["calls"] = stall.tolist()[:20]  # positions among the phase's steady calls
        ev["every"] = period(its if its is not None else stall.tolist())
        f = ctx.finding(phase, NAME, cost, ev, ADVICE)
        if f is None:
            continue
        _cause(ctx, f, idx[stall])
        if not _waited(f, waits):
            out.append(f)
            excess[phase] = int(cost)
    facts.add("blocked_ns", excess)
    facts.add("stalls", out)
    return out


def evidence_text(e: dict, u: Units) -> str:
    nums = e.get("iterations", e.get("calls", []))
    where = "#" if "iterations" in e else "calls "  # "#30, 62": iterations 30 and 62 (short: the block is 80 cells)
    listed = ", ".join(map(str, nums[:6])) + ("…" if e["count"] > 6 else "")
    when = f"every {e['every']} from {where.strip()}{nums[0]}" if e.get("every") else f"{where}{listed}"
    return f"{when}: {u.ns(e['stall_ns'])}, median {u.ns(e['median_ns'])}{os_calls.cause_text(e, u)}"


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs=("waits",), provides=("blocked_ns", "stalls"), needs_cuda=False)
