"""nvtxsim scaling on real Isaac Lab 3.0 sweeps (H200, PyTorch's default caching allocator).

``sweep_direct``: Cartpole-Direct at 1024…49152 envs; ``sweep``: the camera task at 1024…8192 envs
(16384 ran out of memory). The values are held against what the raw SQL of each export gives,
computed here with sqlite3 and numpy alone: ranges by name, GPU memory levels as cumulative sums
of the allocation events, the log-log slope as ``numpy.polyfit``.
"""

from __future__ import annotations

import gzip
import json
import lzma
import math
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from committed import committed

from nvtxsim.analysis.scaling import memory_budget
from nvtxsim.cli.main import main
from nvtxsim.reporting.renderers import render
from nvtxsim.reporting.scaling import as_dict, scaling_document
from nvtxsim.reporting.scaling import sweep as scaling_sweep

DATA = Path(__file__).resolve().parent / "data" / "isaaclab3"
DIRECT = [(DATA / "sweep_direct" / f"il3_direct_sweep_{n}.sqlite.gz", n) for n in (1024, 4096, 16384, 49152)]
CAMERA = [(DATA / "sweep" / f"il3_camera_sweep_{n}.sqlite.xz", n) for n in (1024, 2048, 4096, 8192)]
GiB = 1 << 30
pytestmark = pytest.mark.slow  # about 70 s (eight real exports loaded, four decompressed): CI runs it
DEVICE_KINDS = (2, 3, 4, 5)  # device, array, managed, static device memory (nsys memKind)


def _present(runs) -> list[str]:
    return [f"{committed(p)}={n}" for p, n in runs]


@pytest.fixture(scope="module")
def direct() -> dict:
    sc = scaling_sweep(_present(DIRECT), "num_envs")
    sc.budget = memory_budget(sc, 80 * GiB)
    return {"sc": sc, "doc": as_dict(sc)}


@pytest.fixture(scope="module")
def camera() -> dict:
    sc = scaling_sweep(_present(CAMERA), "num_envs")
    sc.budget = memory_budget(sc, 140 * GiB)
    return {"sc": sc, "doc": as_dict(sc)}


def _plain(path: Path, tmp: Path) -> Path:
    out = tmp / path.name.rsplit(".", 1)[0]
    if not out.exists():
        opener = gzip.open if path.suffix == ".gz" else lzma.open
        with opener(path, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> dict[int, Path]:
    """The direct sweep's exports, decompressed for sqlite3."""
    _present(DIRECT)
    tmp = tmp_path_factory.mktemp("raw")
    return {n: _plain(p, tmp) for p, n in DIRECT}


def _ranges(db: Path, name: str) -> np.ndarray:
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT e.start, e.end FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
            "WHERE s.value = ? AND e.end IS NOT NULL ORDER BY e.start",
            (name,),
        ).fetchall()
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def _levels(db: Path) -> tuple[np.ndarray, np.ndarray]:
    """Event times and the GPU memory level after each (one process in these captures)."""
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT start, CASE memoryOperationType WHEN 0 THEN bytes WHEN 1 THEN -bytes ELSE 0 END "
            f"FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memKind IN {DEVICE_KINDS} ORDER BY start, rowid"
        ).fetchall()
    a = np.array(rows, dtype=np.int64)
    return a[:, 0], np.cumsum(a[:, 1])


def _rise_max(db: Path, name: str) -> int:
    """The most any call of ``name`` added to the level it opened at (events at its start count inside)."""
    t, level = _levels(db)
    best = 0
    for s, e in _ranges(db, name):
        inside = level[(t >= s) & (t <= e)]
        before = level[t < s]
        at_start = int(before[-1]) if len(before) else 0
        best = max(best, int(inside.max(initial=at_start)) - at_start)
    return best


def _high_water_rise_max(db: Path, name: str) -> int:
    """The most any call of ``name`` raised the high-water mark (the most held since the capture began)."""
    t, level = _levels(db)
    best = 0
    for s, e in _ranges(db, name):
        before, upto = level[t < s], level[t <= e]
        best = max(best, int(upto.max(initial=0)) - int(before.max(initial=0)))
    return best


def _phase(doc: dict, name: str) -> dict:
    return next(p for p in doc["phases"] if p["phase"] == f"nvtxsim:{name}")


def test_learning_update_is_scaled_per_call_against_the_raw_sql(direct, raw):
    """policy_update runs between the steps: one sample per call; median, spread and the log-log
    slope (numpy.polyfit weighted by 1/spread) come out as the raw ranges give them."""
    pu = _phase(direct["doc"], "policy_update")
    assert pu["per"] == "call"
    meds, rels = [], []
    for row, n in zip(pu["per_run"], (1024, 4096, 16384, 49152)):
        d = np.diff(_ranges(raw[n], "policy_update"), axis=1)[:, 0].astype(float)
        assert row["calls"] == len(d) == 6
        assert row["cpu_ns"] == pytest.approx(np.median(d), abs=0.5)
        assert row["cpu_ns_per_learning_iteration"] == pytest.approx(d.sum() / 6, abs=0.5)  # one update each
        meds.append(np.median(d))
        rels.append(max(np.std(np.log(d), ddof=1) / math.sqrt(len(d)), 0.01))
    slope = np.polyfit(np.log([1024, 4096, 16384, 49152]), np.log(meds), 1, w=1 / np.array(rels))[0]
    assert pu["fit"]["cpu"]["loglog_slope"] == pytest.approx(slope, abs=1e-9)
    assert not any("not scaled" in n for n in direct["doc"]["notes"])
    li = _phase(direct["doc"], "learning_iteration")["fit"]
    assert li["gpu_per_learning_iteration"]["class"] == li["gpu"]["class"] == "linear"


def test_memory_is_the_largest_rise_over_every_call_against_the_raw_sql(direct, raw):
    """Under the caching allocator the per-iteration median rise is 0; the largest rise over the
    calls is what each phase made the driver allocate: reset's grows superlinearly, the update's linearly."""
    for name in ("reset", "policy_update", "policy"):
        row = _phase(direct["doc"], name)
        for r, n in zip(row["per_run"], (1024, 4096, 16384, 49152)):
            assert r["memory_bytes"] == _rise_max(raw[n], name), (name, n)
            assert r["high_water_rise_bytes"] == _high_water_rise_max(raw[n], name), (name, n)
    for r, n in zip(direct["doc"]["runs"], (1024, 4096, 16384, 49152)):
        assert r["process_peak_bytes"] == max(int(_levels(raw[n])[1].max()), 0)
    reset, update = _phase(direct["doc"], "reset"), _phase(direct["doc"], "policy_update")
    assert reset["memory_class"] == "superlinear" and not reset["fit"]["memory"]["class_uncertain"]
    assert update["memory_class"] == "linear" and not update["fit"]["memory"]["class_uncertain"]
    assert reset["per_run"][-1]["memory_bytes"] > 20 * (1 << 20) > reset["per_run"][0]["memory_bytes"]
    # reset takes back memory the driver had already given (a rise of 22 MiB at 49152 envs) and never
    # raises the high-water mark: classed by that, it would read as allocating nothing.
    assert [r["high_water_rise_bytes"] for r in reset["per_run"]] == [0, 0, 0, 0]
    assert reset["fit"]["high_water"]["class"] == "none"


def test_classes_of_the_direct_sweep(direct):
    doc = direct["doc"]
    assert doc["key"] == "nvtxsim:step"
    assert _phase(doc, "step")["gpu_class"] == "linear"
    assert _phase(doc, "sim_step")["gpu_class"] == "linear"
    assert _phase(doc, "policy")["gpu_class"] == "superlinear"
    assert {_phase(doc, n)["per"] for n in ("policy_update", "learning_iteration", "rollout", "compute_returns")} == {
        "call"
    }
    assert doc["peak_memory_fit"]["class"] == "linear"


def test_classes_of_the_camera_sweep(camera):
    doc = camera["doc"]
    render_ = _phase(doc, "render")
    assert render_["gpu_class"] == "linear" and abs(render_["gpu_exponent"] - 1) < 0.05
    for name in ("reset", "observation", "policy"):
        assert _phase(doc, name)["memory_class"] == "linear", name
    update = _phase(doc, "policy_update")
    assert update["per"] == "call" and update["memory_class"] == "linear" and update["gpu_class"] == "linear"
    # 23.3 GiB at 8192 envs, allocated by the first call (the allocator reuses it afterwards)
    assert update["per_run"][-1]["memory_bytes"] == pytest.approx(23.3 * GiB, rel=0.01)


def test_no_exponent_at_a_bound_is_reported_as_certain(direct, camera):
    at_bound = 0
    for doc in (direct["doc"], camera["doc"]):
        for p in doc["phases"]:
            for m, f in p["fit"].items():
                k = f["exponent"]
                if f["class"] not in (None, "none", "constant") and (k <= 0.05 + 1e-9 or k >= 3.0 - 1e-9):
                    at_bound += 1
                    assert f["class_uncertain"] and f["exponent_at_bound"] and "bound" in f["doubt"], (p["phase"], m)
    assert at_bound  # the direct sweep's step memory (125 → 160 MiB, all at the top) sits at k = 3
    step = _phase(direct["doc"], "step")["fit"]["memory"]
    assert step["exponent_at_bound"] == "upper" and step["class_uncertain"]


def test_vram_sizing_against_the_measured_peaks(camera, direct):
    """140 GiB: between the measured 8192 (136.1 GiB) and 16384 (out of memory at startup); the
    linear extrapolation of the last two measured peaks gives the same to 2 %."""
    b = camera["doc"]["memory_budget"]
    peaks = [r["process_peak_bytes"] for r in camera["doc"]["runs"]]
    per_env = (peaks[-1] - peaks[-2]) / (8192 - 4096)
    by_hand = 8192 + (140 * GiB - peaks[-1]) / per_env
    assert 8192 < b["largest_value"] < 16384 and b["largest_value"] == pytest.approx(by_hand, rel=0.02)
    assert b["peak_at_largest_bytes"] <= 140 * GiB and b["measured_peak_bytes"] == peaks[-1]
    assert b["limited_by"] == "nvtxsim:policy_update"
    d = direct["doc"]["memory_budget"]
    assert d["largest_value"] > 49152 and d["bound_by"] == "the process"


@pytest.mark.parametrize("which", ["direct", "camera"])
def test_terminal_output_fits_80_columns(which, request):
    text = render(scaling_document(request.getfixturevalue(which)["sc"]), "table", width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Between iterations, per call" in text and "memory budget" in text


def test_memory_view_leads_with_the_largest_rise(capsys):
    path = committed(DIRECT[-1][0])
    assert main(["report", str(path), "--view", "memory", "-f", "json"]) == 0
    view = json.loads(capsys.readouterr().out)["views"]["memory"]
    assert list(view["rows"][0])[2:5] == ["rise_max_bytes", "net_total_bytes", "grow_max_bytes"]
    assert main(["report", str(path), "--view", "memory", "--wide"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Phase"))
    assert header.split()[2:4] == ["rise", "max"]
    rises = [r["rise_max_bytes"] for r in view["rows"]]
    assert rises == sorted(rises, reverse=True) and view["rows"][0]["phase"] == "nvtxsim:learning_iteration"


def test_skip_first_drops_the_warm_up_calls_between_iterations(raw):
    """--skip-first 16 (one learning iteration of 16 steps): the first update and its learning
    iteration end before the first kept step, so they are warm-up; the other five remain."""
    from nvtxsim.analysis.scaling import RunSpec, collect_run
    from nvtxsim.analysis.selection import Selection
    from nvtxsim.export.reader import load

    path, n = DIRECT[0]
    run = collect_run(RunSpec(str(path), n, str(n)), Selection(load(path)), skip_first=16)
    assert run.iterations == 96 - 16 and run.learning_iterations == 5
    updates = np.diff(_ranges(raw[n], "policy_update"), axis=1)[:, 0]
    pu = run.phases["nvtxsim:policy_update"]
    assert pu.per == "call" and sorted(pu.cpu.tolist()) == sorted(updates[1:].astype(float).tolist())
    assert pu.memory == _rise_max(raw[n], "policy_update")  # memory counts every call, warm-up included


def test_three_runs_as_the_issue_had_them(direct):
    """4096, 16384 and 49152 envs only: three points fit a + b·N^k exactly, so an exponent pinned at
    the grid's end is common; none of them is reported as certain, and the memory classes hold."""
    from nvtxsim.analysis.scaling import analyse

    doc = as_dict(analyse(direct["sc"].runs[1:], "num_envs"))
    assert doc["values"] == [4096, 16384, 49152]
    pinned = [
        (p["phase"], m)
        for p in doc["phases"]
        for m, f in p["fit"].items()
        if f["class"] not in (None, "none", "constant") and (f["exponent"] <= 0.05 + 1e-9 or f["exponent"] >= 3 - 1e-9)
    ]
    assert pinned and all(_phase(doc, ph[8:])["fit"][m]["class_uncertain"] for ph, m in pinned)
    assert _phase(doc, "reset")["memory_class"] == "superlinear"
    assert _phase(doc, "policy_update")["memory_class"] == "linear" and _phase(doc, "policy_update")["per"] == "call"
