"""Detailed views on the real GPU exports (nsys 2025.3, H200) in tests/data/gpu, against nsys's own CSVs.

Skipped where the exports are absent; every feature is also covered by synthetic or CPU-captured data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed
from kernsum_check import check_kernels_against_kernsum
from nsys_util import REPO, parse_stats_csv

from nvtxsim.analysis.gpu import copies, graph_hints, overview, syncs
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load

GPU_DATA = REPO / "tests" / "data" / "gpu"


def _export(name: str) -> Path:
    path = GPU_DATA / f"{name}.sqlite.gz"
    return committed(path)


@pytest.fixture(scope="module")
def loaded():
    cache: dict[str, Selection] = {}

    def get(name: str, domain=None) -> Selection:
        if name not in cache:
            cache[name] = load(_export(name))
        return Selection(cache[name], domain=domain)

    return get


@pytest.mark.parametrize("name", ["demo_h200", "demo_h200_threads_graph", "demo_h200_graphlevel"])
def test_kernel_table_agrees_with_nsys_nvtx_kern_sum(loaded, name):
    csv_path = GPU_DATA / f"{name}_nvtx_kern_sum.csv"
    d = loaded(name)
    check_kernels_against_kernsum(d, parse_stats_csv(committed(csv_path).read_text()), min_checked=50)


def test_camera_readout_copies_and_syncs(loaded):
    d = loaded("demo_h200", "nvtxsim")
    cam = [c for c in copies(d) if c.phase == "nvtxsim:camera_readout"]
    assert (
        [c.direction for c in cam] == ["dtoh"]
        and cam[0].bytes > 0
        and cam[0].count == d.report.phase("camera_readout").instances
    )
    assert any(s.phase == "nvtxsim:camera_readout" and s.api == "cudaStreamSynchronize" for s in syncs(d))
    rows = {r.phase: r for r in overview(d)}
    it = rows["nvtxsim:iteration"]
    assert 0 < it.gpu_busy_ns < it.gpu_busy_ns + it.gpu_idle_ns <= d.report.phase("iteration").cpu_total_ns
    assert it.queue_p50_ns > 0 and it.queue_max_ns >= it.queue_p99_ns >= it.queue_p50_ns


def test_graph_launches_attributed_node_level_and_graph_level(loaded):
    node = {r.phase: r for r in overview(loaded("demo_h200_threads_graph", "nvtxsim"))}
    graph = {r.phase: r for r in overview(loaded("demo_h200_graphlevel", "nvtxsim"))}
    for rows in (node, graph):
        assert rows["nvtxsim:policy"].graph_launches > 0 and rows["nvtxsim:policy"].graph_gpu_ns > 0
        assert rows["nvtxsim:sim_step"].graph_launches == 0
    assert graph_hints(loaded("demo_h200_threads_graph")) == []
    assert "graph-level" in " ".join(graph_hints(loaded("demo_h200_graphlevel")))


def test_every_view_and_format_runs(tmp_path):
    path = _export("demo_h200_graphlevel")
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--view", "all", "--skip-first", "5", "-f", "json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc["views"]) == {
        "summary",
        "tree",
        "iterations",
        "slowest",
        "kernels",
        "copies",
        "syncs",
        "gpu",
        "gpus",
        "threads",
        "processes",
        "memory",
        "findings",
        "overlap",
        "osrt",
        "stacks",
    }
    assert doc["findings"] and doc["views"]["findings"]["rows"] and doc["views"]["overlap"]["rows"]
    assert any(r["kernel"].startswith("[CUDA graph") for r in doc["views"]["kernels"]["rows"])
    threads = {r["where"].split(" / ")[1].split(" (")[0] for r in doc["views"]["threads"]["rows"]}
    assert threads == {"main", "side_launcher"}
    for fmt in ("html", "perfetto"):
        out = tmp_path / f"r.{fmt}"
        p = subprocess.run(
            [sys.executable, "-m", "nvtxsim", "report", str(path), "-f", fmt, "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0, p.stderr
        assert out.stat().st_size > 10_000
    trace = json.loads((tmp_path / "r.perfetto").read_text())
    assert any(e.get("cat") == "graph" for e in trace["traceEvents"])
