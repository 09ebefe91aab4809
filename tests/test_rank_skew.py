"""``rank_skew`` and the collective waits on real captures: a 2-rank torchrun job (gloo, CPU) under the local
nsys, one rank planted slow (15 ms of extra CPU work, ``logging``, every iteration) and one balanced; and the
committed H200 export (2 ranks on one GPU, gloo)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nvtxsim.analysis.findings import registry
from nvtxsim.analysis.findings.rank_skew import NAME, detect_ranks
from nvtxsim.analysis.ranks import collective_waits, split_by_pid
from tests.nsys_util import NSYS, REPO, SAFE_FLAGS, needs_nsys

H200 = REPO / "tests" / "data" / "gpu" / "ranks"
WORKLOAD = REPO / "scripts" / "gpu" / "ranks_workload.py"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _capture(tmp: Path, name: str, *workload_args: str) -> tuple[Path, dict[int, dict]]:
    """``nsys profile ... torchrun --nproc_per_node=2 ranks_workload.py`` (CPU, gloo): the export and the
    ranks' truth lines by pid."""
    assert NSYS is not None
    out = tmp / name
    cmd = [
        NSYS, "profile", "-t", "nvtx,osrt", *SAFE_FLAGS, "--export=sqlite", "--force-overwrite=true", "-o", str(out),
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={_port()}",
        str(WORKLOAD), "--device", "cpu", "--backend", "gloo", "--iterations", "30", "--num-envs", "2048",
        *workload_args,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=180)
    sqlite = out.with_suffix(".sqlite")
    assert sqlite.exists(), f"no export (rc={proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    # the two ranks write to one pipe: their lines can run together
    truth = [json.loads(m) for m in re.findall(r"truth: (\{[^}]*\})", proc.stdout)]
    assert len(truth) == 2, proc.stdout[-2000:]
    return sqlite, {t["pid"]: t for t in truth}


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    return _capture(tmp_path_factory.mktemp("ranks"), "slow", "--slow-envs", "1", "--slow-cpu-ms", "15")


@pytest.fixture(scope="module")
def balanced(tmp_path_factory):
    return _capture(tmp_path_factory.mktemp("ranks"), "balanced", "--slow-envs", "1", "--slow-cpu-ms", "0")


def _report(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--ranks", "-f", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _slow_index(doc: dict, truth: dict[int, dict]) -> int:
    pids = [r["source"]["pid"] for r in doc["ranks"]]
    assert pids == sorted(truth)
    return next(i for i, pid in enumerate(pids) if truth[pid]["slow"])


def _skew(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["kind"] == NAME]


@needs_nsys
def test_planted_slow_rank_is_found_with_its_waits(slow) -> None:
    path, truth = slow
    doc = _report(path)
    s = _slow_index(doc, truth)
    (f,) = _skew(doc)
    assert f["evidence"]["slow_rank"] == s and f["evidence"]["slow_pid"] == sorted(truth)[s]
    assert f["phase"] == "nvtxsim:policy_update"  # the phase holding the allreduce range
    assert next(iter(f["evidence"]["extra_phases"])) == "nvtxsim:logging"  # the planted cause, first
    w = doc["collective_waits"]
    assert w["calls"] + w["skipped"] == 30 and w["last"][s] >= 0.75 * w["calls"]
    # the other rank waits for the planted 15 ms an iteration; the slow one waits far less (what it does wait is
    # scheduling noise: 107 ms of the fast rank's 375 ms with two test suites sharing two cores)
    fast = 1 - s
    assert w["wait_ns"][fast] > 10e6 * w["calls"] and w["wait_ns"][s] < 0.5 * w["wait_ns"][fast]
    spread = {row["phase"]: row for row in doc["spread"]}
    assert spread["nvtxsim:logging"]["slowest_rank"] == s


@needs_nsys
def test_balanced_run_has_no_rank_skew(balanced) -> None:
    path, truth = balanced
    doc = _report(path)
    assert doc["collective_waits"]["calls"] >= 27  # the collectives were matched; no rank made the others wait
    assert _skew(doc) == []
    assert "nvtxsim:logging" not in {row["phase"] for row in doc["spread"]}
    text = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--ranks", "--wide"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    ).stdout
    assert "rank_skew: no rank came last at 75% of the" in text  # says what was looked at


def test_h200_export_names_the_slow_rank() -> None:
    truth = {
        t["pid"]: t
        for t in (
            json.loads(line.split("truth:", 1)[1])
            for line in (H200 / "ranks_gloo_1gpu.truth.txt").read_text().splitlines()
            if "truth:" in line
        )
    }
    res = split_by_pid(H200 / "ranks_gloo_1gpu.sqlite.xz")
    found = detect_ranks(
        [r.report for r in res], collective_waits(res), [r.reference_ns for r in res], [r.self_ns for r in res]
    )
    (f,) = found
    s = next(i for i, r in enumerate(res) if truth[r.report.source["pid"]]["slow"])
    assert f.kind == NAME and f.evidence["slow_rank"] == s and f.severity == "high"
    assert next(iter(f.evidence["extra_phases"])) == "nvtxsim:logging"  # the planted cause, by self time
    assert 0.10 < f.evidence["share_of_time"] < 0.5  # ~3.5 ms lost an iteration of ~9 ms per rank (half in allreduce)


def test_rank_skew_is_registered_as_a_kind_across_ranks() -> None:
    k = registry.kind(NAME)
    assert k is not None and k.across_ranks and not k.needs_cuda
    assert sum(1 for kk in registry.REGISTRY if kk.across_ranks) == 1
