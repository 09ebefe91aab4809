"""``gpu_bound`` (informational): the phase's work is on the GPU.

Raised when the GPU is busy (the phase's own launches, plus other threads' work during it) at
least 0.8 × the phase's own CPU work, and the phase has no sync or pageable_copy finding (its GPU
time is then the copy or the work it waits for). Faster kernels, not less Python, make it
faster: it says where the time goes, not what is wrong, so it is always ``low`` and listed after
the actionable findings. Cost: that GPU busy time.
"""

from __future__ import annotations

from nvtxsim.analysis.findings import cpu_bound, launch_bound
from nvtxsim.analysis.findings.bound import LOAD_NEEDS, Load, loads
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding

NAME = "gpu_bound"
GPU_BOUND_MIN_RATIO = 0.8  # GPU busy at least 0.8× the phase's own CPU time
ADVICE = "GPU-limited: speed up its top kernels (--view kernels)"


def applies(load: Load) -> bool:
    p = load.own
    return p.gpu_busy_ns >= GPU_BOUND_MIN_RATIO * max(load.work, 1) and bool(p.launches)


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    explained = {f.phase for f in facts.get("waits")}
    out = []
    for load in loads(ctx, facts):
        if launch_bound.applies(load) or cpu_bound.applies(load) or not applies(load):
            continue
        if load.own.phase in explained:
            continue
        f = ctx.finding(load.own.phase, NAME, load.own.gpu_busy_ns, dict(load.evidence), ADVICE, sev="low")
        if f is not None:
            out.append(f)
    return out


def evidence_text(e: dict, u: Units) -> str:
    return f"GPU {u.ns(e['gpu_busy_ns'])} for {u.ns(e['cpu_work_ns'])} CPU"


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs=LOAD_NEEDS + ("waits",), needs_cuda=True, informational=True)
