"""``rank_skew``: one rank of a data-parallel job reaches the collectives last, and every other rank waits for it.

Why: in distributed PPO each rank steps its own envs, and the gradient all-reduce makes every rank
wait for the slowest, so two GPUs are no faster than one while one rank is slow. Looked for across
the ranks of a job (one export per rank, or ``report FILE --ranks``), never in one export alone.
From :func:`nvtxsim.analysis.ranks.collective_waits` (the k-th collective range of each rank matched,
wait = duration - shortest, warm-up calls left out):

* the rank that arrived last at the most calls is the suspect; it is the skew when it was last at
  :data:`BLAME_SHARE` (three quarters) of at least :data:`MIN_CALLS` calls: in a balanced job the last
  one is whoever jitter picks (one in N), so a steady culprit is what tells skew from noise;
* the cost is, per call, the longest wait of any rank (the time the job lost), at least
  :data:`~nvtxsim.analysis.findings.model.MIN_SHARE` of the ranks' mean time inside their outermost
  ranges; severity by that share as for every kind;
* the finding's phase is the one holding the collective, where the others' waits show; the evidence
  names the slow rank (its pid with ``--ranks``), the phases whose self time on it is over the other
  ranks' median (``extra_phases``; a phase only it runs, such as ``logging``, counts whole), the waits
  per rank and per phase.

Without a collective range on every rank nothing is looked for (the ranks report says so); the
per-phase spread is still shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import MIN_SHARE, Finding, severity

if TYPE_CHECKING:
    from nvtxsim.analysis.projection import PhaseSummary
    from nvtxsim.analysis.ranks import CollectiveWaits

NAME = "rank_skew"
ADVICE = "even out envs per rank, move logging off it, pin CPU affinity"
BLAME_SHARE = 0.75  # last at three quarters of the calls: a steady culprit, not jitter
MIN_CALLS = 10  # fewer matched calls: too few to tell a culprit from chance
TOP_PHASES = 3


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    """One export is one rank: there is no other rank to compare it with (see :func:`detect_ranks`)."""
    return []


def detect_ranks(
    reports: Sequence[PhaseSummary],
    waits: CollectiveWaits | None,
    reference_ns: Sequence[int],
    self_ns: Sequence[dict[str, int]],
) -> list[Finding]:
    """The skew of a job's ranks: ``reports`` per rank, their collective ``waits``, per rank the time
    its shares are of (its outermost ranges) and its phases' self times (``RankResult.self_ns``)."""
    if waits is None or waits.calls < MIN_CALLS:
        return []
    slow = int(np.argmax(waits.last))
    if waits.last[slow] < BLAME_SHARE * waits.calls:
        return []
    reference = float(np.mean(reference_ns)) if len(reference_ns) else 0.0
    share = waits.lost_ns / reference if reference else 0.0
    if share < MIN_SHARE:
        return []
    held: dict[str, int] = {}
    for r, per in enumerate(waits.phase_wait_ns):
        if r != slow:
            for ph, ns in per.items():
                held[ph] = held.get(ph, 0) + ns
    phase = max(held, key=lambda p: held[p]) if held else ""
    evidence = {
        "share_of_time": round(share, 4),
        "slow_rank": slow,
        "slow_pid": reports[slow].source.get("pid"),
        "last_calls": waits.last[slow],
        "calls": waits.calls,
        "caused_ns": waits.caused_ns[slow],
        "wait_ns": list(waits.wait_ns),
        "phase_wait_ns": held,
        "extra_phases": _extra_phases(self_ns, slow),
    }
    return [Finding(phase, NAME, severity(share), int(waits.lost_ns), None, evidence, ADVICE)]


def note(waits: CollectiveWaits | None, found: Sequence[Finding]) -> str | None:
    """The line a ranks report shows when there is no ``rank_skew`` finding: what was looked at."""
    if found:
        return None
    if waits is None:
        return "rank_skew not looked for: no collective range (allreduce, all_gather, broadcast, barrier ...) on every rank"
    if waits.calls < MIN_CALLS:
        return f"rank_skew not looked for: {waits.calls} matched collective calls, fewer than {MIN_CALLS}"
    return (
        f"rank_skew: no rank came last at {BLAME_SHARE:.0%} of the {waits.calls} matched collective calls "
        f"(most: {max(waits.last)}), or the waits cost under {MIN_SHARE:.0%}"
    )


def _extra_phases(totals: Sequence[dict[str, int]], slow: int) -> dict[str, int]:
    """The slow rank's self time above the other ranks' median, per phase (top few, most first): self
    time, so that a slow child is not named again in its parents."""
    extra = {}
    for label, ns in totals[slow].items():
        others = [t.get(label, 0) for i, t in enumerate(totals) if i != slow]
        over = int(ns - np.median(others)) if others else 0
        if over > 0:
            extra[label] = over
    top = sorted(extra.items(), key=lambda kv: -kv[1])[:TOP_PHASES]
    return dict(top)


def evidence_text(e: dict, u: Units) -> str:
    pid = f" (pid {e['slow_pid']})" if e.get("slow_pid") is not None else ""
    extra = ", ".join(f"{p} +{u.ns(ns)}" for p, ns in e.get("extra_phases", {}).items())
    return (
        f"rank {e['slow_rank']}{pid} last at {e['last_calls']}/{e['calls']} collectives, "
        f"the others waited {u.ns(e['caused_ns'])}" + (f"; it spends more in {extra}" if extra else "")
    )


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs_cuda=False, across_ranks=True)
