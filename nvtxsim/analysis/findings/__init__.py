"""Findings: which phase is slow, why, and what to do about it.

The report's numbers (CPU and GPU time, syncs, copies, launches) are turned into a short
list of diagnoses, one per (phase, kind), each with its cost, the numbers behind it and one
concrete piece of advice. Each kind is one module of this package (its thresholds and their
reasoning, its detection, the text of its evidence, its advice) behind the registry
(:mod:`~nvtxsim.analysis.findings.registry`); :func:`analyse` is the one entry point.
Thresholds and their reasoning for users: docs/findings.md.
"""

from __future__ import annotations

from nvtxsim.analysis.findings.calls import prefetch_notable_calls as prefetch
from nvtxsim.analysis.findings.context import Context, steady_skip
from nvtxsim.analysis.findings.cuda_calls import CUDA_CAUSES
from nvtxsim.analysis.findings.diff import FindingsDiff, diff
from nvtxsim.analysis.findings.kind import Kind, Units
from nvtxsim.analysis.findings.model import OUTSIDE, OUTSIDE_LOOP, SEVERITIES, Finding, Findings
from nvtxsim.analysis.findings.other_thread_gpu import OtherThreadGpu, overlap_rows
from nvtxsim.analysis.findings.registry import ADVICE, INFORMATIONAL, KINDS, REGISTRY, analyse, kind
from nvtxsim.analysis.findings.sync import SYNC_ADVICE

__all__ = [
    "prefetch",
    "ADVICE",
    "CUDA_CAUSES",
    "INFORMATIONAL",
    "KINDS",
    "OUTSIDE",
    "OUTSIDE_LOOP",
    "REGISTRY",
    "SEVERITIES",
    "SYNC_ADVICE",
    "Context",
    "Finding",
    "Findings",
    "FindingsDiff",
    "Kind",
    "OtherThreadGpu",
    "Units",
    "analyse",
    "diff",
    "kind",
    "overlap_rows",
    "steady_skip",
]
