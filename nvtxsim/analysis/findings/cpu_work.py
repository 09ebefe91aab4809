"""``cpu_bound`` in a capture without a CUDA trace: a phase busy on the CPU for a large share of the loop.

Without GPU work there is no idle GPU to measure the cost against, so the test is the phase's own CPU
work: its self time minus the time already explained (``blocked_ns``: its OS waits, found by ``os_wait``,
and the excess of outlier iterations). A phase whose work is at least a tenth of the reference time is
a finding (cost: that work): the loop spends that share running the phase's own code, and the hot
functions are the next question (``nvtxsim profile --stacks``). Only with an OS-runtime trace
(``-t osrt``): without one, a phase asleep or blocked on a lock looks exactly like one computing, so
nothing is claimed (``os_wait``'s note says so). The key range (``iteration``) is not tested: its self time is
the gaps between its phases.
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.analysis.osrt import os_calls
from nvtxsim.analysis.stacks import hot_functions, read_stacks, sidecar_for

CPU_ONLY_MIN_SHARE = 0.10  # the phase's own CPU work is a tenth of the loop's time
ADVICE = "busy on the CPU: find its hot code (profile --stacks), vectorise it"


def detect(ctx: Context, facts: Facts, name: str) -> list[Finding]:
    """The ``name`` (cpu_bound) findings of a capture without CUDA."""
    if os_calls(ctx.ex) is None:  # os_wait's note says so
        return []
    tree = ctx.tree
    lab = ctx.r.label[tree.nesting.ranges][ctx.kept].astype(np.int64)
    n = len(ctx.d.label_names)
    cpu = np.bincount(lab, weights=tree.cpu_self[ctx.kept], minlength=n)
    count = np.bincount(lab, minlength=n)
    blocked = facts.get("blocked_ns")
    key = ctx.it.key if ctx.it is not None else None
    out = []
    for k in np.flatnonzero(count).tolist():
        phase = str(ctx.d.label_names[k])
        if phase == key:
            continue
        work = max(int(cpu[k]) - int(blocked.get(phase, 0)), 0)
        ev = {"instances": int(count[k]), "cpu_self_ns": int(cpu[k]), "cpu_work_ns": work, "no_cuda": True}
        f = ctx.finding(phase, name, work, ev, ADVICE, min_share=CPU_ONLY_MIN_SHARE)
        if f is not None:
            add_hot_function(ctx, f)
            out.append(f)
    return out


def add_hot_function(ctx: Context, f: Finding) -> None:
    """The function the phase's samples ran most (``--stacks``: the sidecar beside the export), when there is one:
    the finding then says which code to look at (``evidence.hot_function``)."""
    st = ctx.shared("stacks", lambda: read_stacks(sidecar_for(ctx.ex.path)))
    top = next((h for h in hot_functions(st, 1) if h.phase == f.phase), None) if st is not None else None
    if top is not None and top.self_samples:
        f.evidence["hot_function"] = {
            "function": top.function,
            "location": top.location,
            "self_share": top.self_share,
            "samples": st.samples.get(f.phase, 0) if st is not None else 0,
        }


def hot_text(e: dict, u) -> str:
    h = e.get("hot_function")
    return f", hot: {h['function']} {u.pct(h['self_share'])} of its samples" if h else ""


def evidence_text(e: dict, u) -> str:
    return f"CPU work {u.ns(e['cpu_work_ns'])} of {u.ns(e['cpu_self_ns'])} self time, no GPU traced{hot_text(e, u)}"
