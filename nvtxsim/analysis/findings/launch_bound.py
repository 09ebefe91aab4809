"""``launch_bound``: many tiny kernels, launched faster than they run, so the GPU idles between them.

Raised when a phase makes at least 20 launches per range instance, each costing under 50 µs of CPU
and running under 20 µs on the GPU on average, so that the GPU is busy under half of the phase's
own CPU time. A CUDA launch from PyTorch costs ~5-20 µs of CPU; below 50 µs per launch the CPU is
doing little else. Kernels under 20 µs finish before the next launch arrives, so the GPU idles
between them: fusing them (CUDA graph, ``torch.compile``) is the fix. 20 launches per range keeps
a phase of a few large kernels out.

Cost: the phase's CPU work minus its GPU busy time, at most the time the GPU sat idle during the
phase (:class:`~nvtxsim.analysis.findings.bound.Load`).
"""

from __future__ import annotations

from nvtxsim.analysis.findings.bound import LOAD_NEEDS, Load, loads
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding

NAME = "launch_bound"
LAUNCH_MIN_PER_RANGE = 20  # at least this many launches per range instance ...
LAUNCH_MAX_CPU_PER_LAUNCH_NS = 50_000  # ... each costing under 50 µs of CPU time ...
LAUNCH_MAX_OP_NS = 20_000  # ... running under 20 µs on the GPU on average ...
LAUNCH_MAX_GPU_SHARE = 0.5  # ... so that the GPU is busy under half of the phase's own time
ADVICE = "fuse these kernels: CUDA-graph or torch.compile this function"


def applies(load: Load) -> bool:
    p = load.own
    return (
        p.launches >= LAUNCH_MIN_PER_RANGE * p.instances
        and load.per_launch is not None
        and load.per_launch < LAUNCH_MAX_CPU_PER_LAUNCH_NS
        and load.mean_op is not None
        and load.mean_op < LAUNCH_MAX_OP_NS
        and load.gpu_share < LAUNCH_MAX_GPU_SHARE
    )


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    out = []
    for load in loads(ctx, facts):
        if not applies(load):
            continue
        ev = {**load.evidence, "launches_per_range": round(load.own.launches / load.own.instances, 1)}
        f = ctx.finding(load.own.phase, NAME, load.lost, ev, ADVICE)
        if f is not None:
            out.append(f)
    return out


def evidence_text(e: dict, u: Units) -> str:
    return f"{e['launches_per_range']:g} launches/range, {u.ns(e['gpu_per_launch_ns'])} GPU each"


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs=LOAD_NEEDS, needs_cuda=True)
