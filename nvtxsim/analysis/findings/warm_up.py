"""``warm_up``: the first calls of phases that stand out from their steady state (:mod:`nvtxsim.analysis.warmup`).

One finding for the capture: the phases with warm-up calls, their iterations, their cost (the calls'
self time above their phase's steady median) and, per phase, the cause the calls inside point to:

* ``graph_capture``: a CUDA graph is captured or instantiated there (any such call);
* ``compile``: JIT calls (NVRTC, ``cuLink*``, nvJitLink), or at least 10 % of the cost waiting for
  child processes (``waitpid``, ``posix_spawn``: a compiler such as torch.compile's workers; needs
  ``-t osrt``);
* ``module_load``: CUDA loads modules lazily (``cuModuleLoad*``, ``cuLibraryLoad*``), at least 5 %
  of the cost (a load is milliseconds; the code that first uses a module pays for more than its
  load call);
* ``alloc``: allocations (``cudaMalloc``...), at least 10 % of the cost;
* none of them: first-call CPU work (imports, tracing, caches).

With an explicit ``--skip-first N`` (N > 0) only the warm-up calls it left in are named. By
default every other finding is computed on the steady state: the warm-up is left out, and a note
says what was (:func:`left_out_note`). Cost share and severity are of the wall time inside every
phase of the whole capture. It is informational (it is not the steady loop's problem), except that a
high one leads the list: it is what the capture's totals mostly are.
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.cuda_calls import CUDA_CAUSES, GRAPH_CAPTURE_APIS, own_cuda_calls
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import MIN_SHARE, Finding, severity
from nvtxsim.analysis.launches import contained
from nvtxsim.analysis.osrt import os_calls
from nvtxsim.analysis.warmup import PhaseWarmUp

NAME = "warm_up"
ADVICE = "warm up before the capture window; the other findings leave it out"
MAX_PHASES = 8  # phases the evidence lists (costliest first)
COMPILE_WAIT_SHARE = 0.10
MODULE_LOAD_SHARE = 0.05
ALLOC_SHARE = 0.10
#: OS calls that start or wait for a child process (a compiler): not thread creation.
CHILD_PROCESS_CALLS = frozenset(
    {"fork", "vfork", "execve", "execv", "execvp", "execl", "execlp", "posix_spawn", "posix_spawnp", "system"}
    | {"popen", "pclose", "wait", "waitpid", "wait3", "wait4", "waitid"}
)
CAUSE_TEXT = {
    "graph_capture": "CUDA graph capture",
    "compile": "compilation",
    "module_load": "CUDA module loading",
    "alloc": "allocations",
}


def _child_process_ns(ctx: Context, ranges: np.ndarray) -> int:
    """Time the ``ranges`` spent starting or waiting for child processes (traced OS calls, their thread)."""
    calls = os_calls(ctx.ex)
    if calls is None or not len(ranges):
        return 0
    ids = [i for i, n in calls.names.items() if n.strip().removeprefix("__") in CHILD_PROCESS_CALLS]
    m = np.isin(calls.name_id, ids)
    if not m.any():
        return 0
    r = ctx.r
    sel = np.flatnonzero(m)
    _, ci = contained(
        r.start[ranges], r.end[ranges], r.global_tid[ranges], calls.start[sel], calls.end[sel], calls.global_tid[sel]
    )
    return int((calls.end[sel[ci]] - calls.start[sel[ci]]).sum())


def causes(ctx: Context, p: PhaseWarmUp) -> dict[str, int]:
    """Per cause found in ``p``'s warm-up calls, the time of its calls (ns), in the order they are named."""
    got = own_cuda_calls(ctx, p.ranges, kept=False) if ctx.d.has_cuda else None
    per = got[1] if got else {}

    def time_in(prefixes: tuple[str, ...]) -> int:
        return sum(v for name, v in per.items() if name.startswith(prefixes))

    of = max(p.excess_ns, 1)
    found: dict[str, int] = {}
    if any(name.startswith(GRAPH_CAPTURE_APIS) for name in per):
        found["graph_capture"] = time_in(GRAPH_CAPTURE_APIS)
    jit, children = time_in(CUDA_CAUSES["compile"][0]), _child_process_ns(ctx, p.ranges)
    if jit or children >= COMPILE_WAIT_SHARE * of:
        found["compile"] = jit + children
    for c, share in (("module_load", MODULE_LOAD_SHARE), ("alloc", ALLOC_SHARE)):
        t = time_in(CUDA_CAUSES[c][0])
        if t >= share * of:
            found[c] = t
    return found


def _phase_evidence(ctx: Context, p: PhaseWarmUp) -> dict:
    found = causes(ctx, p)
    return {
        "calls": int(len(p.ranges)),
        "of_calls": p.calls,
        "excess_ns": p.excess_ns,
        "max_ns": p.max_ns,
        "median_ns": p.median_ns,
        "iterations": p.iterations[:20],
        "cause": next(iter(found), None),
        "causes": found,
    }


def left_out_note(ctx: Context) -> str | None:
    """What the steady state left out of the other findings, None when nothing was."""
    if not ctx.auto:
        return None
    n, between = ctx.skip_first, len(ctx.outside_warm_up)
    calls = f"{between} call{'s' if between > 1 else ''}{' between iterations' if ctx.it is not None else ''}"
    iters = f"iteration{'s' if n > 1 else ''} {'0' if n == 1 else f'0-{n - 1}'}"
    if n and between:
        what = f"{iters} set aside as warm-up, and {calls}"
    elif n:
        what = f"{iters} set aside as warm-up"
    elif between:
        what = f"{calls} set aside as warm-up"
    else:
        return None
    return f"steady state: {what} (--keep-warm-up keeps them, --skip-first N chooses)"


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    wu = ctx.warm_up
    if not ctx.auto and ctx.skip_first > 0:  # --skip-first N: what it skipped is not warm-up the report holds
        wu = wu.kept(ctx.ranges)
    whole = ctx.whole_reference_ns
    if not wu.phases or not whole:
        return []
    cost = wu.excess_ns
    share = cost / whole
    if share < MIN_SHARE:
        return []
    phases = {p.phase: _phase_evidence(ctx, p) for p in wu.phases[:MAX_PHASES]}
    top = wu.phases[0]
    its = sorted({i for p in wu.phases for i in p.iterations})
    ev = {
        "share_of_time": round(share, 4),
        "iterations": its[:20],
        "phase_count": len(wu.phases),
        "phases": phases,
        "cause": phases[top.phase]["cause"],
        "left_out": left_out_note(ctx) is not None,
    }
    return [Finding(top.phase, NAME, severity(share), int(cost), None, ev, ADVICE)]


def evidence_text(e: dict, u: Units) -> str:
    """The top phase's cause first (what the block keeps when little fits), then where and how much."""
    its = e.get("iterations") or []
    where = f"iteration{'s' if len(its) > 1 else ''} {', '.join(map(str, its[:4]))}{'…' if len(its) > 4 else ''}"
    p = next(iter(e["phases"].values()))
    why = CAUSE_TEXT.get(p.get("cause") or "", "first-call CPU work")
    calls = f"{p['calls']} call{'s' if p['calls'] > 1 else ''} up to {u.ns(p['max_ns'])}, median {u.ns(p['median_ns'])}"
    more = f", phases: {e['phase_count']}" if e.get("phase_count", 1) > 1 else ""
    return f"{why}, {where if its else 'between iterations'}{more}, {calls}"


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs_cuda=False, informational=True)
