"""The OS waits a phase made itself (nsys ``-t osrt``), for the ``os_wait`` kind and the evidence of others.

A wait is a traced OS call of a waiting category (:data:`nvtxsim.analysis.osrt.WAIT_CATEGORIES`:
sleep, file, socket, poll, lock, process) owned by the innermost kept range around it on its thread
(:meth:`Context.owner`, the rule of CUDA calls), so it counts once, at the phase that made it. A wait
inside a CUDA API call is left out: that time is the CUDA call's (the driver's ``ioctl`` in
``cudaMalloc``, its ``poll``/``futex`` while a sync waits for the GPU; the sync and CUDA-call evidence
count it), never an OS wait of the program's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.findings.context import Context, blocked
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.analysis.osrt import CATEGORIES, WAIT_CATEGORIES, call_categories, os_calls

TOP_CALLS = 3
#: Advice per category: what to do about a wait of that kind (at most 71 characters each).
ADVICE = {
    "sleep": "the phase sleeps: drop or shorten the sleep, or move it off the loop",
    "file": "file I/O in the loop: do it less often, or on a background thread",
    "socket": "network I/O in the loop: batch it, or move it to a background thread",
    "poll": "it waits in poll/select: make that wait asynchronous or off the loop",
    "lock": "it waits for another thread (lock, condition, GIL): make it hold less",
    "process": "it starts processes in the loop: start them once, outside it",
}


@dataclass
class OwnedWaits:
    """The waits of the report's kept ranges: one entry per OS call, with the range that made it."""

    owner: np.ndarray  # index into Export.ranges of the innermost kept range around the call
    start: np.ndarray
    end: np.ndarray
    category: np.ndarray  # index into osrt.CATEGORIES
    name_id: np.ndarray
    names: dict[int, str]


def _inside(
    outer_s: np.ndarray, outer_e: np.ndarray, outer_t: np.ndarray, s: np.ndarray, e: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """Per inner interval: it lies inside an outer one of the same thread (outer ones may nest: a runtime
    call around its driver call; the latest end of those starting before it decides)."""
    out = np.zeros(len(s), dtype=bool)
    for tid in np.unique(t).tolist():  # the few threads of the inner ones; never a unique over the outer ones
        o = np.flatnonzero(outer_t == tid)
        if not len(o):
            continue
        o_s = outer_s[o]
        if not (o_s[1:] >= o_s[:-1]).all():  # an export's calls are in start order already: no sort then
            o = o[np.argsort(o_s, kind="stable")]
            o_s = outer_s[o]
        reach = np.maximum.accumulate(outer_e[o])
        mine = np.flatnonzero(t == tid)
        j = np.searchsorted(o_s, s[mine], side="right") - 1
        ok = j >= 0
        out[mine[ok]] = reach[j[ok]] >= e[mine[ok]]
    return out


def owned_waits(ctx: Context) -> OwnedWaits | None:
    """The OS waits of the kept ranges (computed once per report), None when the export has no OS trace."""

    def compute() -> OwnedWaits | None:
        calls = os_calls(ctx.ex)
        if calls is None:
            return None
        cats = call_categories(calls)
        codes = [CATEGORIES.index(c) for c in WAIT_CATEGORIES]
        sel = np.flatnonzero(np.isin(cats, codes))
        cuda = ctx.ex.api
        if cuda is not None and len(cuda) and len(sel):
            inside = _inside(
                cuda.start, cuda.end, cuda.global_tid, calls.start[sel], calls.end[sel], calls.global_tid[sel]
            )
            sel = sel[~inside]
        own = ctx.owner(calls.start[sel], calls.end[sel], calls.global_tid[sel])
        keep = own >= 0
        sel = sel[keep]
        return OwnedWaits(own[keep], calls.start[sel], calls.end[sel], cats[sel], calls.name_id[sel], calls.names)

    return ctx.shared("os_calls.owned_waits", compute)


@dataclass
class WaitSummary:
    """Some ranges' own OS waits: total (union per range), per category and the top calls."""

    total_ns: int
    categories: dict[str, int]  # category → ns, largest first
    top: dict[str, list[int]]  # function → [calls, ns], largest first (TOP_CALLS of them)

    @property
    def main(self) -> str:
        return next(iter(self.categories))


def summarise(w: OwnedWaits, pos: np.ndarray) -> WaitSummary | None:
    """The waits at positions ``pos`` of ``w``, None when there are none."""
    if not len(pos):
        return None
    dur = (w.end[pos] - w.start[pos]).astype(np.int64)
    cats: dict[str, int] = {}
    for c, d in zip(w.category[pos].tolist(), dur.tolist()):
        cats[CATEGORIES[c]] = cats.get(CATEGORIES[c], 0) + int(d)
    ids, inv = np.unique(w.name_id[pos], return_inverse=True)
    tot = np.bincount(inv.reshape(-1), weights=dur)
    cnt = np.bincount(inv.reshape(-1))
    order = np.argsort(-tot, kind="stable")[:TOP_CALLS]
    top: dict[str, list[int]] = {}
    for k in order.tolist():
        name = function_name_of(w, int(ids[k]))
        prev = top.get(name, [0, 0])
        top[name] = [prev[0] + int(cnt[k]), prev[1] + int(tot[k])]
    total = blocked(w.owner[pos], w.start[pos], w.end[pos])
    return WaitSummary(total, dict(sorted(cats.items(), key=lambda kv: -kv[1])), top)


def function_name_of(w: OwnedWaits, name_id: int) -> str:
    """The function of a call; one nsys did not resolve is ``(unknown call #id)`` (as in ``--view osrt``)."""
    return w.names.get(int(name_id)) or f"(unknown call #{int(name_id)})"


def waits_of(ctx: Context, ranges: np.ndarray) -> WaitSummary | None:
    """The OS waits the ranges ``ranges`` made themselves (not in a child phase), None when none or no OS trace."""
    w = owned_waits(ctx)
    if w is None:
        return None
    return summarise(w, np.flatnonzero(np.isin(w.owner, ranges)))


def evidence(s: WaitSummary) -> dict:
    """The evidence fields a finding explained by OS waits carries (the same names in every kind)."""
    return {
        "os_wait_ns": s.total_ns,
        "os_wait_category": s.main,
        "os_wait_categories": s.categories,
        "os_wait_top": s.top,
    }


def calls_text(top: dict[str, list[int]], ns) -> str:
    """``clock_nanosleep 3× 156 ms, …`` for evidence text (``ns`` writes a duration)."""
    return ", ".join(f"{name} {n}× {ns(t)}" for name, (n, t) in top.items())


def name_os_wait(ctx: Context, f: Finding, ranges: np.ndarray, of: float) -> bool:
    """When the OS waits the ranges ``ranges`` made themselves take half of ``of`` (a slow iteration's overrun,
    the stalls' excess), make them ``f``'s cause: its evidence names the category and calls, the advice fits."""
    waits = waits_of(ctx, ranges)
    if waits is None or not of or waits.total_ns < 0.5 * of:
        return False
    f.evidence.update({"cause": "os_wait", **evidence(waits)})
    f.advice = ADVICE.get(waits.main, f.advice)
    return True


def cause_text(e: dict, u) -> str:
    """``; OS sleep: clock_nanosleep 3× 150 ms`` for the evidence text of a finding whose cause is an OS wait."""
    if e.get("cause") != "os_wait":
        return ""
    return f"; OS {e['os_wait_category']}: {calls_text(e['os_wait_top'], u.ns)}"
