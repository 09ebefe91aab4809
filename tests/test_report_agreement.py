"""`nvtxsim report` agrees with nsys's own NVTX reports, to the nanosecond.

References: the real `nsys stats` (2022.4 here) run on the same file, and the CSVs
that nsys 2025.3 wrote on the GPU machine for the committed GPU exports.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from committed import committed_glob
from nsys_util import REPO, needs_nsys, nsys_stats, parse_stats_csv, profile_python, range_label, sum_by_name
from synth import make_export

from nvtxsim.analysis.projection import project, summarize
from nvtxsim.export.reader import load

GPU_DATA = REPO / "tests" / "data" / "gpu"
ISAACLAB3_DATA = REPO / "tests" / "data" / "isaaclab3"  # real Isaac Lab 3.0 trainings on the H200


def _ours_by_label(path: Path, domain=None):
    return {p.label: p for p in summarize(load(path), domain=domain).phases}


def _check_nvtx_sum(ours: dict, rows: list[dict[str, str]], range_col: str = "Range") -> None:
    inst = sum_by_name(rows, range_col, "Instances")
    total = sum_by_name(rows, range_col, [c for c in rows[0] if c.startswith("Total Time")][0])
    assert set(inst) == set(ours), set(inst) ^ set(ours)
    for name in inst:
        assert ours[name].instances == inst[name], name
        assert ours[name].cpu_total_ns == total[name], name
    # Names with one style map 1:1 to an nsys row: min/max/median/stddev agree too.
    single = [r for r in rows if sum(1 for q in rows if q[range_col] == r[range_col]) == 1]
    med_col = [c for c in rows[0] if c.startswith("Med")][0]
    std_col = [c for c in rows[0] if c.startswith("StdDev")][0]
    min_col = [c for c in rows[0] if c.startswith("Min")][0]
    max_col = [c for c in rows[0] if c.startswith("Max")][0]
    for r in single:
        p = ours[range_label(r[range_col])]
        assert p.cpu_min_ns == int(r[min_col]) and p.cpu_max_ns == int(r[max_col]), r[range_col]
        assert abs(p.cpu_median_ns - float(r[med_col])) <= 0.5, r[range_col]
        assert abs(p.cpu_stddev_ns - float(r[std_col])) <= 0.5 + 1e-9 * float(r[std_col]), r[range_col]


def _brute_force(synth):
    """Obviously-correct reference: per range, its ops by the nsys containment rule, and their union."""
    ops_by_key: dict[tuple[int, int], list[dict]] = {}
    for op in synth.ops:
        ops_by_key.setdefault((op["gpid"], op["corr"]), []).append(op)
    max_ts = max(max(r["start"], r["end"] or 0) for r in synth.ranges)
    out = {}
    for r in synth.ranges:
        if r["end_tid"] is not None:
            continue
        end = r["end"] if r["end"] is not None else max_ts
        ops, corrs = [], set()
        for c in synth.calls:
            if c["tid"] == r["tid"] and r["start"] <= c["start"] and c["end"] <= end:
                got = ops_by_key.get((c["tid"] & ~0xFFFFFF, c["corr"]), [])
                if got:
                    ops += got
                    corrs.add(c["corr"])
        if not ops:
            continue
        iv = sorted((o["start"], o["end"]) for o in ops)
        busy, cur_s, cur_e = 0, iv[0][0], iv[0][1]
        for s, e in iv[1:]:
            if s > cur_e:
                busy += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        kernels = sum(1 for o in ops if o["kind"] == "k")
        dtoh = sum(o["bytes"] for o in ops if o["kind"] == "m" and o["copy_kind"] == 2)
        out[r["row"]] = (min(o["start"] for o in ops), max(o["end"] for o in ops), len(corrs), busy, kernels, dtoh)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 7])
def test_projection_matches_brute_force(tmp_path, seed):
    synth = make_export(tmp_path / "s.sqlite", seed)
    ex = load(tmp_path / "s.sqlite")
    g = project(ex)
    ours = {
        int(ex.ranges.row[i]): (
            int(g.proj_start[i]),
            int(g.proj_end[i]),
            int(g.ops[i]),
            int(g.busy[i]),
            int(g.kernels[i]),
            int(g.copy_bytes["dtoh"][i]),
        )
        for i in range(len(ex.ranges))
        if g.ops[i] > 0
    }
    assert ours == _brute_force(synth)
    assert len(ours) > 10  # the generator really produced attributed work


@needs_nsys
@pytest.mark.nsys
@pytest.mark.parametrize("seed", [1, 5])
def test_synthetic_exports_agree_with_nsys_stats(tmp_path, seed):
    path = tmp_path / "s.sqlite"
    make_export(path, seed)
    ex = load(path)
    g = project(ex)
    rows = nsys_stats(path, "nvtxgpuproj")
    assert rows, "nsys produced no projection rows"
    theirs = {
        int(r["RangeId"]): (int(r["Projected Start (ns)"]), int(r["Projected Duration (ns)"]), int(r["NumGPUOps"]))
        for r in rows
    }
    ours = {
        int(ex.ranges.row[i]): (int(g.proj_start[i]), int(g.proj_duration[i]), int(g.ops[i]))
        for i in range(len(ex.ranges))
        if g.ops[i] > 0
    }
    assert ours == theirs
    _check_nvtx_sum(_ours_by_label(path), nsys_stats(path, "nvtxsum"))
    # Per name, projected totals and op counts equal nsys's rows summed per name.
    rep = _ours_by_label(path)
    proj = sum_by_name(rows, "Name", "Projected Duration (ns)")
    nops = sum_by_name(rows, "Name", "NumGPUOps")
    for name, total in proj.items():
        assert rep[name].gpu_proj_total_ns == total
        assert rep[name].gpu_ops == nops[name]


PROGRAM = """
import threading, time
import nvtxsim

policy = nvtxsim.phase("policy")

@nvtxsim.phase("reward")
def reward(i):
    time.sleep(0.0002)
    return i

def worker():
    for i in range(7):
        with nvtxsim.phase("render"):
            with nvtxsim.phase("camera_readout", payload=i):
                time.sleep(0.0003)

t = threading.Thread(target=worker)
t.start()
for i in range(12):
    with nvtxsim.phase("iteration"):
        for _ in range(3):
            with nvtxsim.phase("sim_step"):
                time.sleep(0.0001)
        with policy:
            pass
        reward(i)
        nvtxsim.mark("tick", i)
t.join()
"""


@needs_nsys
@pytest.mark.nsys
def test_real_capture_two_threads_nested(tmp_path):
    path = profile_python(tmp_path, PROGRAM)
    ours = _ours_by_label(path)
    assert {k: v.instances for k, v in ours.items()} == {
        "nvtxsim:iteration": 12,
        "nvtxsim:sim_step": 36,
        "nvtxsim:policy": 12,
        "nvtxsim:reward": 12,
        "nvtxsim:render": 7,
        "nvtxsim:camera_readout": 7,
    }
    assert ours["nvtxsim:render"].threads == 1 and ours["nvtxsim:iteration"].threads == 1
    ex = load(path)
    r = ex.ranges
    # Nesting on the main thread: every sim_step lies inside an iteration of the same thread.
    it = np.flatnonzero(r.name == "iteration")
    for i in np.flatnonzero(r.name == "sim_step"):
        assert any(r.start[j] <= r.start[i] and r.end[i] <= r.end[j] and r.global_tid[j] == r.global_tid[i] for j in it)
    assert r.global_tid[r.name == "render"][0] != r.global_tid[it[0]]
    assert sorted(r.payload[r.name == "camera_readout"].tolist()) == list(range(7))
    assert ours["nvtxsim:sim_step"].cpu_median_ns >= 100_000  # 0.1 ms sleeps really inside
    _check_nvtx_sum(_ours_by_label(path, domain=None), nsys_stats(path, "nvtxsum"))


# ----------------------------------------------------------------------------- GPU exports (nsys 2025.3, H200)


def _gpu_exports():
    """Every committed H200 export, gzipped or xz (nsys's CSVs were written beside each on the H200)."""
    return sorted(
        committed_glob(GPU_DATA, "*.sqlite.gz", "*.sqlite.xz", at_least=7, recursive=True)
        + committed_glob(ISAACLAB3_DATA, "*.sqlite.gz", "*.sqlite.xz", recursive=True)
    )


def _decompress(src: Path, dst: Path) -> None:
    import lzma

    with lzma.open(src) if src.suffix == ".xz" else gzip.open(src) as inp, open(dst, "wb") as out:
        shutil.copyfileobj(inp, out)


def test_the_real_exports_are_committed():
    """A missing file must fail here, not turn the agreement tests into fewer cases."""
    names = {p.name.split(".")[0] for p in _gpu_exports()}
    for name in (
        "demo_h200",
        "rsl_rl_4096",
        "il3_direct_rsl_rl",
        "il3_manager_rsl_rl",
        "il3_camera_rsl_rl",
        "il3_direct_skrl",
        "il3_direct_live",
    ):
        assert name in names, name
    assert {f"il3_camera_sweep_{n}" for n in (1024, 2048, 4096, 8192, 16384)} <= names
    assert {f"il3_direct_sweep_{n}" for n in (1024, 4096, 16384, 49152)} <= names


def _csv_text(path):
    """A CSV of nsys stats, stored gzipped when over 1 MB (scripts/gpu/make_exports.sh, stats_csvs.sh)."""
    gz = path.with_name(path.name + ".gz")
    return gzip.decompress(gz.read_bytes()).decode() if not path.exists() and gz.exists() else path.read_text()


@pytest.mark.parametrize("gz", _gpu_exports(), ids=lambda p: p.name.split(".")[0])
def test_gpu_exports_agree_with_nsys_csvs(tmp_path, gz):
    name = gz.name.split(".")[0]
    path = tmp_path / f"{name}.sqlite"
    _decompress(gz, path)
    ours = _ours_by_label(path, domain=None)
    sum_csv = gz.parent / f"{name}_nvtx_sum.csv"
    proj_csv = gz.parent / f"{name}_nvtx_gpu_proj_sum.csv"
    trace_csv = gz.parent / f"{name}_nvtx_gpu_proj_trace.csv"
    rows = parse_stats_csv(_csv_text(sum_csv))
    assert rows
    _check_nvtx_sum(ours, rows)
    proj_rows = parse_stats_csv(_csv_text(proj_csv))
    assert proj_rows
    tot_col = [c for c in proj_rows[0] if c.startswith("Total Proj Time")][0]
    ops_col = [c for c in proj_rows[0] if c.startswith("Total GPU Ops")][0]
    range_col = "Range" if "Range" in proj_rows[0] else "Name"
    proj = sum_by_name(proj_rows, range_col, tot_col)
    nops = sum_by_name(proj_rows, range_col, ops_col)
    for label, total in proj.items():
        assert ours[label].gpu_proj_total_ns == total, label
        assert ours[label].gpu_ops == nops[label], label
    for label, p in ours.items():
        if label not in proj:
            assert p.gpu_ops == 0 and p.gpu_proj_total_ns == 0, label
    if trace_csv.exists() or trace_csv.with_name(trace_csv.name + ".gz").exists():
        trace = parse_stats_csv(_csv_text(trace_csv))
        ex = load(path)
        g = project(ex)
        by_row = {int(ex.ranges.row[i]): i for i in range(len(ex.ranges))}
        id_col = "RangeId" if "RangeId" in trace[0] else [c for c in trace[0] if c.lower().startswith("range id")][0]
        start_col = [c for c in trace[0] if c.startswith("Projected Start")][0]
        for t in trace:
            i = by_row[int(t[id_col])]
            assert int(g.proj_start[i]) == int(t[start_col])
    # Busy time never exceeds the projected span; kernels counted.
    for p in ours.values():
        assert p.gpu_busy_total_ns <= p.gpu_proj_total_ns
    assert sum(p.gpu_kernels for p in ours.values()) > 0


def test_cli_json_schema_on_shipped_export(tmp_path):
    exports = _gpu_exports()
    gz = exports[0]
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(gz), "--format", "json", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert set(doc) >= {"source", "phases"}
    required = {
        "domain",
        "name",
        "instances",
        "cpu_total_ns",
        "cpu_median_ns",
        "cpu_p99_ns",
        "gpu_proj_total_ns",
        "gpu_busy_total_ns",
        "gpu_ops",
    }
    assert doc["phases"] and all(required <= set(p) for p in doc["phases"])
    assert all(isinstance(p[k], int) for p in doc["phases"] for k in required - {"domain", "name"})
    assert {p["name"] for p in doc["phases"]} >= {"iteration", "sim_step", "render", "camera_readout", "policy"}
