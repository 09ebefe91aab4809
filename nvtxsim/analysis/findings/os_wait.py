"""``os_wait``: a phase that waits in the OS (sleep, file or socket I/O, poll, a lock or the GIL, a child process).

Raised when a phase's own OS waits (nsys ``-t osrt``; see :mod:`.os_calls`) take at least a quarter of
its self time: under that a wait is part of what the phase does, over it the wait is what the phase
is. Cost: the waits' time (union per range); waits that a ``phase_stalls`` finding of the phase names as
its cause are that finding's, left out here (the rest of the phase's waits are still tested), and so are the
lock waits of a phase while another thread launched its GPU work (``other_threads``: the main thread of
``backward()`` waits on a condition variable for autograd's thread, whose work other_thread_gpu reports). The evidence names the category that took most of it
and the top calls; the advice fits that category. Every phase's own waits are explained CPU time
(``blocked_ns``): a phase asleep is not CPU-bound. The findings go to ``os_waits``: a slow iteration
whose overrun is this phase's wait is this finding's (its ``slow_iterations``), not a second cost.
Without an OS trace nothing is looked for (one note when the export has no CUDA trace either: then
``cpu_bound`` is not looked for, see :mod:`.cpu_work`).
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings import os_calls
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.analysis.osrt import CATEGORIES, osrt_note

NAME = "os_wait"
OS_WAIT_PHASE_SHARE = 0.25  # waits of at least a quarter of the phase's self time
ADVICE = "waits in the OS (see evidence): remove the wait or move it off the loop"


def _self_ns(ctx: Context) -> dict[int, int]:
    """Per label: the self time of its kept ranges (children's removed)."""
    tree = ctx.tree
    lab = ctx.r.label[tree.nesting.ranges][ctx.kept]
    per = np.bincount(lab.astype(np.int64), weights=tree.cpu_self[ctx.kept], minlength=len(ctx.d.label_names))
    return {int(k): int(per[k]) for k in np.flatnonzero(per)}


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    w = os_calls.owned_waits(ctx)
    if w is None:
        note = osrt_note(ctx.ex)
        if note and not ctx.d.has_cuda:  # a CUDA export without it: --view osrt says so, the findings need not
            facts.note(f"{note}; os_wait and cpu_bound not looked for (a phase asleep would look busy)")
        return []
    labels = ctx.r.label[w.owner]
    self_ns = _self_ns(ctx)
    named: dict[
        str, int
    ] = {}  # per phase: the OS waits its phase_stalls finding names as its cause (that finding's time)
    for st in facts.get("stalls"):
        if st.evidence.get("cause") == "os_wait":
            named[st.phase] = named.get(st.phase, 0) + st.evidence["os_wait_ns"]
    # A phase during which another thread launched its GPU work (autograd's backward()) waits on a condition
    # variable for that thread: the other_thread_gpu finding's work, not a lock of the program's.
    others = {o.phase for o in facts.get("other_threads") if o.launches}
    lock = CATEGORIES.index("lock")
    out, blocked = [], {}
    for lab in np.unique(labels).tolist():
        phase = str(ctx.d.label_names[lab])
        pos = np.flatnonzero(labels == lab)
        s = os_calls.summarise(w, pos[w.category[pos] != lock] if phase in others else pos)
        if s is None:
            continue
        s.total_ns -= min(named.get(phase, 0), s.total_ns)
        blocked[phase] = s.total_ns
        own = self_ns.get(int(lab), 0) - named.get(phase, 0)
        share = s.total_ns / own if own else 0.0
        if share < OS_WAIT_PHASE_SHARE:
            continue
        ev = {"phase_self_ns": own, "phase_share": round(min(share, 1.0), 3), **os_calls.evidence(s)}
        f = ctx.finding(phase, NAME, s.total_ns, ev, os_calls.ADVICE.get(s.main, ADVICE))
        if f is not None:
            out.append(f)
    facts.add("blocked_ns", blocked)
    facts.add("os_waits", out)
    return out


def evidence_text(e: dict, u: Units) -> str:
    slow = e.get("slow_iterations")
    its = f"; slow iterations {', '.join(map(str, slow[:6]))}{'…' if len(slow) > 6 else ''}" if slow else ""
    return (
        f"{e['os_wait_category']} {u.pct(e['phase_share'])} of the phase: "
        f"{os_calls.calls_text(e['os_wait_top'], u.ns)}{its}"
    )


KIND = Kind(
    NAME,
    ADVICE,
    detect,
    evidence_text,
    needs=("stalls", "other_threads"),
    provides=("blocked_ns", "os_waits"),
    needs_cuda=False,
)
