"""``unattributed_gpu``: GPU work launched outside every range of its thread, with no phase open anywhere in the process.

Work between phases (logging, evaluation): nsys attributes it to no range, so it is in no row.
Only work between the first kept phase and the last counts: before the first or after the last
(setup, warm-up, skipped iterations, teardown) it costs the iterations nothing, and ``--view
overlap`` lists it as ``(before or after the phases)``. Raised from 1 % of the reference time;
its phase is ``(outside phases)``. Cost: the GPU busy time of that work.
"""

from __future__ import annotations

from nvtxsim.analysis.findings import other_thread_gpu
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import OUTSIDE, Finding

NAME = "unattributed_gpu"
ADVICE = "wrap this work (warm-up, logging, evaluation) in a phase"


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    out = []
    for row in facts.get("other_threads"):
        if row.phase == OUTSIDE:
            f = ctx.finding(row.phase, NAME, row.gpu_busy_ns, other_thread_gpu.thread_evidence(row), ADVICE)
            if f is not None:
                out.append(f)
    return out


def evidence_text(e: dict, u: Units) -> str:
    return other_thread_gpu.evidence_text(e, u)


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs=("other_threads",), needs_cuda=True)
