"""``split_by_pid``: one export of a 2-rank torchrun job split into one summary per process (real H200 export)."""

from __future__ import annotations

import json
from pathlib import Path

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
