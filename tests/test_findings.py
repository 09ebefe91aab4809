"""Findings on exports with planted bottlenecks: each problem found at its phase, with its kind."""

from __future__ import annotations

import json

import pytest

from nvtxsim.analysis.findings import KINDS, OUTSIDE, SEVERITIES, find
from nvtxsim.analysis.selection import Detail
from nvtxsim.export.reader import load
from synth import OUTLIER_ITERATIONS, PLANTED, make_planted


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    p = tmp_path_factory.mktemp("findings") / "planted.sqlite"
    make_planted(p)
    return find(Detail(load(p)))


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    p = tmp_path_factory.mktemp("findings") / "clean.sqlite"
    make_planted(p, clean=True)
    return find(Detail(load(p)))


def _kinds(found, phase):
    return [f.kind for f in found if f.phase == phase]


@pytest.mark.parametrize("name,kind", sorted(PLANTED.items()))
def test_each_planted_problem_is_found_at_its_phase(planted, name, kind):
    assert kind in _kinds(planted, f"nvtxsim:{name}")


def test_gpu_work_outside_every_phase(planted):
    (f,) = [f for f in planted if f.kind == "unattributed_gpu"]
    assert f.phase == OUTSIDE and f.evidence["launches"] == 200


def test_problems_are_reported_once_at_the_innermost_phase(planted):
    assert "sync" not in _kinds(planted, "nvtxsim:iteration")
    assert "pageable_copy" not in _kinds(planted, "nvtxsim:iteration")
    # A sync or a pageable copy is not also a CPU- or GPU-bound phase.
    assert {"cpu_bound", "gpu_bound"}.isdisjoint(_kinds(planted, "nvtxsim:reward"))
    assert "gpu_bound" not in _kinds(planted, "nvtxsim:camera_readout")


def test_evidence(planted):
    by = {(f.phase, f.kind): f for f in planted}
    sync = by[("nvtxsim:reward", "sync")]
    assert sync.evidence["calls"] == 30 and sync.evidence["apis"] == {"cudaStreamSynchronize": 30}
    assert sync.evidence["calls_per_iteration"] == 1.0 and sync.cost_per_iteration_ns == 1_500_000
    copy = by[("nvtxsim:camera_readout", "pageable_copy")]
    assert copy.evidence["bytes"] == 30 * (8 << 20) and copy.evidence["directions"]["D→H"]["copies"] == 30
    out = by[("nvtxsim:observation", "outlier_iterations")]
    assert out.evidence["iterations"] == list(OUTLIER_ITERATIONS)
    other = by[("nvtxsim:policy_update", "other_thread_gpu")]
    assert other.evidence["threads"] == {"pt_autograd_0 (2001)": 300}
    assert by[("nvtxsim:sim_step", "launch_bound")].evidence["launches_per_range"] == 300


def test_shape_of_findings(planted):
    costs = [(f.kind == "gpu_bound", -f.cost_ns) for f in planted]
    assert costs == sorted(costs)  # most costly first, the informational gpu_bound after the rest
    for f in planted:
        assert f.kind in KINDS and f.severity in SEVERITIES and f.advice and f.cost_ns > 0
        json.dumps(f.as_dict(), ensure_ascii=False)


def test_clean_run_has_no_sync_or_pageable_copy(clean):
    kinds = {f.kind for f in clean}
    assert not kinds & {"sync", "pageable_copy", "launch_bound", "cpu_bound", "other_thread_gpu", "unattributed_gpu", "outlier_iterations"}


def test_skip_first_and_no_iterations(tmp_path):
    p = tmp_path / "planted.sqlite"
    make_planted(p)
    d = Detail(load(p))
    skipped = {(f.phase, f.kind): f for f in find(d, skip_first=10)}
    assert skipped[("nvtxsim:reward", "sync")].evidence["calls"] == 20
    # Without the key range the findings still come, without per-iteration costs.
    no_it = find(d, by="no_such_range")
    assert no_it and all(f.cost_per_iteration_ns is None for f in no_it)
    assert "sync" in _kinds(no_it, "nvtxsim:reward")
