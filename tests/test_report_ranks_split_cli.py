"""``nvtxsim report FILE --ranks``: one export of a 2-rank torchrun job (real H200 gloo export) reported per rank."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from synth import make_export

DATA = Path(__file__).parent / "data" / "gpu" / "ranks"
EXPORT = DATA / "ranks_gloo_1gpu.sqlite.xz"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", *args], capture_output=True, text=True, timeout=300
    )


def _truth() -> dict[int, dict]:
    rows = [
        json.loads(line.split("truth:", 1)[1])
        for line in (DATA / "ranks_gloo_1gpu.truth.txt").read_text().splitlines()
        if "truth:" in line
    ]
    return {r["pid"]: r for r in rows}


def test_ranks_json_names_the_slow_rank_and_counts_add_up() -> None:
    proc = _cli(str(EXPORT), "--ranks", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    truth = _truth()
    pids = [r["source"]["pid"] for r in doc["ranks"]]
    assert pids == sorted(truth)
    slow = next(i for i, pid in enumerate(pids) if truth[pid]["slow"])
    spread = {row["phase"]: row for row in doc["spread"]}
    assert spread["nvtxsim:sim_step"]["slowest_rank"] == slow
    assert spread["nvtxsim:logging"]["cpu_total_ns"][1 - slow] == 0
    assert doc["notes"] and doc["notes"][0].startswith("ranks taken in pid order")
    for p in doc["phases"]:
        per_rank = [q for r in doc["ranks"] for q in r["phases"] if q["name"] == p["name"]]
        assert p["instances"] == sum(q["instances"] for q in per_rank) > 0
        assert p["cpu_total_ns"] == sum(q["cpu_total_ns"] for q in per_rank)
    whole = json.loads(_cli(str(EXPORT), "-f", "json").stdout)["source"]
    assert doc["source"]["ranges"] == whole["ranges"]  # each rank counts its own process's ranges
    assert doc["source"]["kernels"] == whole["kernels"]


def test_ranks_text_says_pid_order_and_the_pids() -> None:
    proc = _cli(str(EXPORT), "--ranks")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "ranks taken in pid order" in first and "rank 0 = pid" in first
    assert "(pid " in proc.stdout and "spread across ranks" in proc.stdout


def test_ranks_on_one_process_export_is_one_line_error(tmp_path: Path) -> None:
    one = Path(__file__).parent / "data" / "cpu" / "cpu_planted.sqlite.xz"  # a real one-process capture
    proc = _cli(str(one), "--ranks")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nvtxsim: error: ") and "1 process" in lines[0]
    two = tmp_path / "two.sqlite"
    make_export(two, 5)
    proc = _cli(str(two), str(two), "--ranks")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "nvtxsim: error: --ranks splits one export of several processes by pid; "
        "several exports are already one per rank"
    ]


def test_a_plain_report_of_several_processes_points_to_ranks(tmp_path: Path) -> None:
    """Read whole, one export of a 2-rank job adds the ranks up, and no slow rank can be found: one warning line
    says so and names the pids; an export of one process gets no such line."""
    proc = _cli(str(EXPORT), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    hints = [w for w in json.loads(proc.stdout)["warnings"] if "--ranks" in w]
    pids = sorted(_truth())
    assert hints == [
        f"the phases' ranges come from 2 processes (pids {pids[0]}, {pids[1]}) and are added up here; if they are "
        "the ranks of one job, --ranks reports them rank by rank and looks for a slow rank (rank_skew)"
    ]
    one = tmp_path / "one.sqlite"
    make_export(one, 1, processes=1)
    single = json.loads(_cli(str(one), "-f", "json").stdout)
    assert not [w for w in single["warnings"] if "--ranks" in w]
