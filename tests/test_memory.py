"""GPU memory per phase (CUDA_GPU_MEMORY_USAGE_EVENTS): peak, rise and net while a range is open."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from synth import LoopPhase, make_loop_export

from nvtxsim.analysis.memory import _window_levels, range_memory
from nvtxsim.analysis.selection import Selection
from nvtxsim.cli.main import main
from nvtxsim.export.reader import load

MiB = 1 << 20
PHASES = [
    LoopPhase("pairwise", 50_000, 30_000, 4 * MiB),
    LoopPhase("step", 20_000, 10_000, MiB, per_iteration=2),
    LoopPhase("log", 5_000),
]


@pytest.fixture()
def loop(tmp_path: Path) -> Path:
    p = tmp_path / "loop.sqlite"
    make_loop_export(p, PHASES, resident_bytes=3 * MiB)
    return p


def test_window_levels_peak_rise_net():
    t = np.array([10, 20, 30, 40])
    level = np.cumsum([100, 50, -100, -50])
    windows = np.array([0, 15, 20, 35, 45, 10]), np.array([5, 35, 20, 50, 50, 40])
    peak, rise, net, grow = _window_levels(t, level, *windows)
    assert peak.tolist() == [0, 150, 150, 50, 0, 150]
    assert rise.tolist() == [0, 50, 50, 0, 0, 150]
    assert net.tolist() == [0, -50, 50, -50, 0, 0]
    assert grow.tolist() == [0, 50, 50, 0, 0, 150]  # the high-water mark: 100, 150, 150, 150 after each event


def test_high_water_rise_is_not_a_rise_below_the_mark():
    """Memory taken again after a free rises the level, not the high-water mark (what the process had held)."""
    t = np.array([10, 20, 30, 40])
    level = np.cumsum([100, -100, 60, 80])  # 100, 0, 60, 140
    _, rise, _, grow = _window_levels(t, level, np.array([25, 35, 5]), np.array([35, 45, 45]))
    assert rise.tolist() == [60, 80, 140]
    assert grow.tolist() == [0, 40, 140]


def test_phase_peak_counts_resident_memory_and_ignores_host_memory(loop):
    rep = Selection(load(loop)).report
    by = {p.name: p for p in rep.phases}
    assert by["pairwise"].gpu_mem_peak_bytes == 7 * MiB  # resident 3 + own 4; pinned host 1 GiB left out
    assert by["step"].gpu_mem_peak_bytes == 4 * MiB
    assert by["log"].gpu_mem_peak_bytes == 3 * MiB
    assert by["iteration"].gpu_mem_peak_bytes == 7 * MiB
    assert all(p.gpu_mem_net_bytes == 0 for p in rep.phases)  # every phase frees what it allocates


def test_range_memory_rise_is_the_phase_own_footprint(loop):
    ex = load(loop)
    idx = np.flatnonzero(ex.ranges.name == "step")
    m = range_memory(ex, idx)
    assert set(m.rise.tolist()) == {MiB} and set(m.net.tolist()) == {0}


def test_report_columns_only_with_memory_events(tmp_path, loop, capsys):
    plain = tmp_path / "plain.sqlite"
    make_loop_export(plain, PHASES, memory=False)
    assert main(["report", str(plain), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "gpu_mem_peak_bytes" not in doc["phases"][0]
    assert main(["report", str(plain)]) == 0
    assert "GPU mem peak" not in capsys.readouterr().out
    assert main(["report", str(loop)]) == 0
    assert "GPU mem peak" in capsys.readouterr().out
    assert main(["report", str(loop), "-f", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("gpu_mem_peak_bytes,gpu_mem_net_bytes")


def test_memory_view(tmp_path, loop, capsys):
    assert main(["report", str(loop), "--view", "memory", "-f", "json"]) == 0
    rows = {r["phase"]: r for r in json.loads(capsys.readouterr().out)["views"]["memory"]["rows"]}
    assert rows["nvtxsim:pairwise"]["rise_max_bytes"] == 4 * MiB
    assert rows["nvtxsim:step"]["instances"] == 16
    plain = tmp_path / "plain.sqlite"
    make_loop_export(plain, PHASES, memory=False)
    assert main(["report", str(plain), "--view", "memory"]) == 0
    assert "--memory" in capsys.readouterr().out


def test_profile_memory_flag_adds_the_nsys_switch():
    from nvtxsim.capture import nsys as capture
    from nvtxsim.errors import NvtxsimError

    n = capture.Nsys(Path("/opt/nsys"), "2025.3.1", "PATH")
    n._switches["profile"] = frozenset({"cuda-graph-trace", "capture-range-end"})
    req = capture.ProfileRequest(command=["python", "t.py"], output=Path("o"), memory=True)
    assert "--cuda-memory-usage=true" in capture.build_profile_command(n, req)
    with pytest.raises(NvtxsimError):
        capture.build_profile_command(
            n, capture.ProfileRequest(command=["x"], output=Path("o"), trace=("nvtx",), memory=True)
        )


def test_events_with_bare_pids_still_match_their_process(tmp_path):
    import sqlite3

    p = tmp_path / "bare.sqlite"
    make_loop_export(p, PHASES, resident_bytes=3 * MiB)
    con = sqlite3.connect(p)
    con.execute("UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET globalPid = 4242 << 24")  # host/VM bits left out
    con.commit()
    con.close()
    by = {q.name: q for q in Selection(load(p)).report.phases}
    assert by["pairwise"].gpu_mem_peak_bytes == 7 * MiB
