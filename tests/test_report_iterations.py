"""Per-iteration view: per-phase time per iteration, percentiles across iterations, slowest iterations."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest
from nsys_util import needs_nsys, profile_python
from synth import make_export

from nvtxsim.analysis.iterations import per_iteration, phase_stats, slowest
from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.reader import load


def test_per_iteration_sums_match_brute_force(tmp_path):
    path = tmp_path / "s.sqlite"
    synth = make_export(path, 12, processes=2, threads=2)
    ex = load(path)
    d = Selection(ex, domain="nvtxsim")
    it = per_iteration(d, "iteration")
    max_ts = max(max(r["start"], r["end"] or 0) for r in synth.ranges)
    rs = [dict(r, end=r["end"] if r["end"] is not None else max_ts) for r in synth.ranges if r["domain"] == "nvtxsim"]
    keys = sorted((r for r in rs if r["name"] == "iteration"), key=lambda r: (r["start"], r["tid"], r["row"]))
    ref: dict = defaultdict(int)
    for m in rs:
        if m["name"] == "iteration":
            continue
        pid = m["tid"] & ~0xFFFFFF
        before = [k for k in keys if k["tid"] & ~0xFFFFFF == pid and k["start"] <= m["start"]]
        if before and m["start"] <= before[-1]["end"]:
            ref[(before[-1]["row"], "nvtxsim:" + m["name"])] += m["end"] - m["start"]
    ours = {}
    for i, k in enumerate(it.key_range):
        for j, ph in enumerate(it.phases[1:], 1):
            if it.cpu[i, j]:
                ours[(int(ex.ranges.row[k]), ph)] = int(it.cpu[i, j])
    assert ours == dict(ref) and len(ref) > 5
    assert np.array_equal(it.cpu[:, 0], (ex.ranges.end - ex.ranges.start)[it.key_range])


def test_skip_first_and_missing_key(tmp_path):
    path = tmp_path / "s.sqlite"
    make_export(path, 3)
    d = Selection(load(path), domain="nvtxsim")
    full = per_iteration(d, "iteration")
    skipped = per_iteration(d, "nvtxsim:iteration", skip_first=2)
    n_threads = len(np.unique(d.export.ranges.global_tid[full.key_range]))
    assert len(skipped) <= len(full) - 2 and skipped.skipped >= 2
    assert len(full) - len(skipped) == skipped.skipped and skipped.skipped <= 2 * n_threads
    assert (skipped.index >= 2).all()
    with pytest.raises(NvtxsimError, match="no range of that name"):
        per_iteration(d, "no_such_phase")


LOOP = """
import time
import nvtxsim

for i in range(14):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("sim_step"):
            time.sleep(0.002)
        with nvtxsim.phase("render"):
            time.sleep(0.001 + (0.012 if i in (6, 10) else 0))
        with nvtxsim.phase("policy"):
            time.sleep(0.0005)
    if i % 5 == 4:
        with nvtxsim.phase("policy_update"):
            time.sleep(0.001)
"""


@pytest.fixture(scope="module")
def loop_capture(tmp_path_factory):
    from nsys_util import NSYS

    if NSYS is None:
        pytest.skip("nsys not installed")
    return profile_python(tmp_path_factory.mktemp("it"), LOOP, name="loop")


@needs_nsys
@pytest.mark.nsys
def test_slowest_iterations_found_with_their_culprit(loop_capture):
    d = Selection(load(loop_capture))
    it = per_iteration(d, "iteration", skip_first=2)
    assert len(it) == 12 and list(it.index) == list(range(2, 14))
    slow = slowest(it, top=2)
    assert {s.iteration for s in slow} == {6, 10}
    assert all(s.culprit == "nvtxsim:render" and s.culprit_excess_ns > 10_000_000 for s in slow)
    stats = {s.phase: s for s in phase_stats(it)}
    render = it.cpu[:, it.phases.index("nvtxsim:render")]
    assert stats["nvtxsim:render"].p50_ns == int(round(np.quantile(render, 0.5)))
    assert stats["nvtxsim:render"].max_ns == render.max() > 12_000_000
    assert stats["nvtxsim:render"].p99_ns == int(round(np.quantile(render, 0.99)))
    assert stats["nvtxsim:iteration"].iterations == 12
    # policy_update runs between iterations: not part of any.
    assert it.unassigned == {"nvtxsim:policy_update": 2}


@needs_nsys
@pytest.mark.nsys
def test_iteration_views_from_the_cli(loop_capture):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nvtxsim",
            "report",
            str(loop_capture),
            "--view",
            "iterations,slowest",
            "--skip-first",
            "2",
            "--top",
            "3",
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {p["name"] for p in doc["phases"]} >= {"iteration", "render"}  # summary still there, unchanged keys
    rows = doc["views"]["iterations"]["rows"]
    assert {r["phase"] for r in rows} == {"nvtxsim:iteration", "nvtxsim:sim_step", "nvtxsim:render", "nvtxsim:policy"}
    assert [r["iteration"] for r in doc["views"]["slowest"]["rows"]][:2] in ([6, 10], [10, 6])
    assert len(doc["views"]["slowest"]["rows"]) == 3
    table = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(loop_capture), "--by", "iteration"],
        capture_output=True,
        text=True,
    )
    assert table.returncode == 0 and "Per-phase time per iteration" in table.stdout and "p99" in table.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(loop_capture), "--by", "nope"], capture_output=True, text=True
    )
    assert (
        bad.returncode == 2 and bad.stderr.startswith("nvtxsim: error: --by 'nope'") and "Traceback" not in bad.stderr
    )
