"""``split_by_pid``: one export of a 2-rank torchrun job split into one summary per process (real H200 export)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nvtxsim.analysis.ranks import analyse_one, merge, split_by_pid

DATA = Path(__file__).parent / "data" / "gpu" / "ranks"
EXPORT = DATA / "ranks_gloo_1gpu.sqlite.xz"


def _truth() -> dict[int, dict]:
    rows = [
        json.loads(line.split("truth:", 1)[1])
        for line in (DATA / "ranks_gloo_1gpu.truth.txt").read_text().splitlines()
        if "truth:" in line
    ]
    return {r["pid"]: r for r in rows}


@pytest.fixture(scope="module")
def split():
    return split_by_pid(EXPORT)


def test_split_by_pid_matches_truth(split) -> None:
    truth = _truth()
    pids = [r.report.source["pid"] for r in split]
    assert pids == sorted(truth)
    slow = next(r for r in split if truth[r.report.source["pid"]]["slow"]).report
    fast = next(r for r in split if not truth[r.report.source["pid"]]["slow"]).report
    assert "logging" in {p.name for p in slow.phases}
    assert "logging" not in {p.name for p in fast.phases}
    assert slow.phase("sim_step").cpu_total_ns > fast.phase("sim_step").cpu_total_ns


def test_split_instances_add_up_to_pooled(split) -> None:
    pooled = {p.label: p.instances for p in analyse_one(EXPORT).report.phases}
    merged = {p.label: p.instances for p in merge(split).phases}
    per_rank: dict[str, int] = {}
    for r in split:
        for p in r.report.phases:
            per_rank[p.label] = per_rank.get(p.label, 0) + p.instances
    assert per_rank == pooled == merged


def _allreduce_durations() -> dict[int, list[int]]:
    """Straight from the export's NVTX_EVENTS: every allreduce range's duration per pid, in time order."""
    import lzma
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "r.sqlite"
        db.write_bytes(lzma.decompress(EXPORT.read_bytes()))
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT (e.globalTid >> 24) & 16777215, e.end - e.start FROM NVTX_EVENTS e "
            "JOIN StringIds s ON s.id = e.textId WHERE s.value = 'allreduce' ORDER BY e.start"
        ).fetchall()
        con.close()
    out: dict[int, list[int]] = {}
    for pid, dur in rows:
        out.setdefault(pid, []).append(dur)
    return out


def test_collective_waits_blame_the_slow_rank(split) -> None:
    from nvtxsim.analysis.ranks import collective_waits

    truth = _truth()
    pids = [r.report.source["pid"] for r in split]
    slow = next(i for i, pid in enumerate(pids) if truth[pid]["slow"])
    fast = 1 - slow
    w = collective_waits(split)
    assert w is not None and w.ranks == 2
    # 60 allreduce ranges a rank; the first is warm-up on the slow rank (250 ms: its first gloo call) and left out
    assert w.skipped == 1 and w.calls == 59 and not w.mismatched
    assert w.last[slow] == w.calls  # the slow rank arrives last at every steady-state call
    durs = _allreduce_durations()
    a, b = (np.array(durs[pids[i]][1:]) for i in (fast, slow))
    assert w.wait_ns[fast] == int(np.maximum(a - b, 0).sum())  # wait = duration - the other rank's
    assert w.wait_ns[slow] == int(np.maximum(b - a, 0).sum()) == 0
    assert w.caused_ns[slow] == w.wait_ns[fast] == w.lost_ns
    # the planted extra CPU work is 3 ms an iteration on the slow rank: the fast one waits about that
    assert 2.5e6 < w.wait_ns[fast] / w.calls < 5e6
    assert w.phase_wait_ns[fast] == {"nvtxsim:policy_update": w.wait_ns[fast]}  # the phase holding allreduce
