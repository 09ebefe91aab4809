"""``other_thread_gpu``: GPU work launched outside every range of its own thread while the phase was open elsewhere.

GPU work launched from a thread outside any range of that thread (autograd's backward thread, a
Python worker) is nsys-unattributed: nsys's projection counts none of it, so the phase's GPU
columns look too small. By time overlap only, it belongs to the innermost phase open on another
thread of the process when it was launched (this kind), or to nothing (``unattributed_gpu``).
Reported from 0.1 % of the reference time, or at any size when it is at least a quarter of the
phase's GPU work (its nsys busy time plus this; ``evidence.phase_gpu_share``): the point is that the
numbers are missing, not that they are large. Cost: the GPU busy time of that work.

Both backends look for it: a streamed export reads the CUDA columns this needs (as ``--view overlap``
does), so an export's findings never depend on its size. ``threads=False`` (``analyse``) skips it,
with a note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import OUTSIDE, OUTSIDE_LOOP, Finding
from nvtxsim.analysis.launches import innermost, ops_of
from nvtxsim.analysis.projection import _union_length
from nvtxsim.analysis.selection import Selection
from nvtxsim.schema import PID_MASK

NAME = "other_thread_gpu"
MIN_SHARE = 0.001
PHASE_SHARE = 0.25  # ... or whatever its size, when it is a quarter of the phase's own GPU work
ADVICE = "not in this phase's nsys GPU columns: see --view overlap"
NOT_LOOKED_FOR = (
    "other_thread_gpu and unattributed_gpu were not looked for (asked not to): --view overlap computes them"
)


@dataclass
class OtherThreadGpu:
    """GPU work launched outside every range of the launching thread, by the phase open elsewhere at launch.

    A time-overlap attribution, not nsys's rule (nsys attributes none of this work): ``phase`` is the
    innermost phase open on another thread of the process when the work was launched, or OUTSIDE."""

    phase: str
    launches: int
    ops: int
    gpu_busy_ns: int  # union of the ops' GPU intervals
    threads: dict[str, int]  # launching thread → launches


def _open_elsewhere(ctx: Context, start: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Per call: the innermost range (tree position) open at ``start`` on another thread of its process, -1 if none."""
    nesting = ctx.tree.nesting
    r_tid = ctx.r.global_tid[nesting.ranges]
    best = np.full(len(start), -1, dtype=np.int64)
    for t in np.unique(r_tid):
        other = ((tid & PID_MASK) == (t & PID_MASK)) & (tid != t)
        if not other.any():
            continue
        pos = np.full(len(start), -1, dtype=np.int64)
        pos[other] = innermost(
            ctx.ex, nesting, start[other], start[other], np.full(int(other.sum()), t, dtype=np.int64)
        )
        deeper = (pos >= 0) & ((best < 0) | (nesting.depth[np.maximum(pos, 0)] > nesting.depth[np.maximum(best, 0)]))
        best[deeper] = pos[deeper]
    return best


def _call_labels(ctx: Context, calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``calls`` without those launched inside a skipped iteration's range elsewhere, and per call the label of the
    phase open elsewhere: -1 none, -2 outside the span of the kept phases (setup or teardown, not the loop's)."""
    api = ctx.ex.api
    assert api is not None
    pos = _open_elsewhere(ctx, api.start[calls], api.global_tid[calls])
    in_skipped = (pos >= 0) & ~ctx.kept[np.maximum(pos, 0)]
    calls, pos = calls[~in_skipped], pos[~in_skipped]
    labels = np.where(pos >= 0, ctx.r.label[ctx.tree.nesting.ranges[np.maximum(pos, 0)]].astype(np.int64), -1)
    if len(ctx.ranges):
        t = api.start[calls]
        labels[(labels == -1) & ((t < ctx.r.start[ctx.ranges].min()) | (t > ctx.r.end[ctx.ranges].max()))] = -2
    return calls, labels


def overlap_rows(detail: Selection, ctx: Context | None = None) -> list[OtherThreadGpu]:
    """GPU work nsys attributes to no range, split by the phase open on another thread at launch time
    (``--view overlap``, and this kind's and unattributed_gpu's findings)."""
    ctx = ctx or Context(detail)
    from nvtxsim.analysis.unattributed import outside_calls

    api, ops, link = ctx.ex.api, detail.ops, detail.link
    if api is None or len(ops) == 0 or len(ctx.tree.nesting.ranges) == 0:
        return []
    calls, labels = _call_labels(ctx, outside_calls(detail))  # nsys attributes these calls to no range
    op = ops_of(link, calls)
    op_label = np.repeat(labels, link.hi[calls] - link.lo[calls])
    out = []
    for lab in np.unique(labels):
        m, om = labels == lab, op_label == lab
        busy = int(_union_length(np.zeros(int(om.sum()), dtype=np.int64), ops.start[op[om]], ops.end[op[om]], 1)[0])
        threads: dict[str, int] = {}
        for t, n in zip(*np.unique(api.global_tid[calls[m]], return_counts=True)):
            threads[detail.thread_name(int(t))] = int(n)
        phase = str(detail.label_names[lab]) if lab >= 0 else OUTSIDE if lab == -1 else OUTSIDE_LOOP
        out.append(
            OtherThreadGpu(
                phase, int(m.sum()), int(om.sum()), busy, dict(sorted(threads.items(), key=lambda kv: -kv[1]))
            )
        )
    return out


def thread_evidence(row: OtherThreadGpu) -> dict:
    return {"launches": row.launches, "ops": row.ops, "gpu_busy_ns": row.gpu_busy_ns, "threads": row.threads}


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    """The rows of :func:`overlap_rows` go to ``other_threads``; a finding per phase open elsewhere."""
    threads = ctx.threads is not False  # None (the default) and True: looked for on every backend
    if not threads:
        facts.note(NOT_LOOKED_FOR)
    rows = overlap_rows(ctx.d, ctx) if threads else []
    facts.add("other_threads", rows)
    out = []
    for row in rows:
        if row.phase in (OUTSIDE, OUTSIDE_LOOP):
            continue  # unattributed_gpu's; before or after the loop: no cost to the iterations (--view overlap lists it)
        ev = thread_evidence(row)
        own = _own_gpu_busy(ctx, row.phase)
        share = row.gpu_busy_ns / (own + row.gpu_busy_ns) if row.gpu_busy_ns else 0.0
        ev["phase_gpu_share"] = round(share, 3)  # of the phase's GPU work, its own (nsys) and this together
        floor = 0.0 if share >= PHASE_SHARE else MIN_SHARE
        f = ctx.finding(row.phase, NAME, row.gpu_busy_ns, ev, ADVICE, min_share=floor)
        if f is not None:
            out.append(f)
    return out


def _own_gpu_busy(ctx: Context, phase: str) -> int:
    """GPU busy time nsys attributes to the phase's kept ranges (its own column in the summary)."""
    r = ctx.r
    mine = ctx.ranges[r.label[ctx.ranges] == ctx.label_of(phase)]
    return int(ctx.d.gpu.busy[mine].sum())


def threads_text(threads: dict) -> str:
    names = list(threads)
    return names[0] + (f" +{len(names) - 1}" if len(names) > 1 else "") if names else "?"


def evidence_text(e: dict, u: Units) -> str:
    return f"{e['launches']:,} launches from {threads_text(e['threads'])}"


KIND = Kind(NAME, ADVICE, detect, evidence_text, provides=("other_threads",), needs_cuda=True)
