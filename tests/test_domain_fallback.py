"""Any NVTX export is reported without flags: with no range in the ``nvtxsim`` domain every domain
is shown (and one line says so); a ``--domain`` that is absent exits 2 listing the domains."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed

from tests.nsys_util import needs_nsys, profile_python
from tests.synth import make_export

ROOT = Path(__file__).resolve().parents[1]
NOTE = "no ranges in domain 'nvtxsim', so every domain is shown"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def no_nvtxsim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic export whose ranges are all in the default domain (as torch.cuda.nvtx writes them)."""
    path = tmp_path_factory.mktemp("dom") / "default-only.sqlite"
    make_export(path, 5)
    con = sqlite3.connect(path)
    con.execute("UPDATE NVTX_EVENTS SET domainId = 0")
    con.commit()
    con.close()
    return path


def test_default_domain_absent_reports_every_domain(no_nvtxsim: Path) -> None:
    proc = cli("report", str(no_nvtxsim))
    assert proc.returncode == 0, proc.stderr
    assert f"{NOTE} (default)" in proc.stdout
    assert "\niteration " in proc.stdout and "nvtxsim:" not in proc.stdout.split("\n", 2)[2]
    assert proc.stdout.count(NOTE) == 1


@pytest.mark.parametrize("fmt", ["json", "markdown", "csv"])
def test_widened_in_every_format(no_nvtxsim: Path, fmt: str) -> None:
    proc = cli("report", str(no_nvtxsim), "-f", fmt)
    assert proc.returncode == 0, proc.stderr
    if fmt == "json":
        doc = json.loads(proc.stdout)
        assert doc["phases"] and NOTE in doc["warnings"][0]
    elif fmt == "markdown":
        assert NOTE in proc.stdout
    else:
        assert "iteration" in proc.stdout


def test_views_and_compare_widen_too(no_nvtxsim: Path) -> None:
    proc = cli("report", str(no_nvtxsim), "--view", "tree")
    assert proc.returncode == 0 and NOTE in proc.stdout and "iteration" in proc.stdout
    proc = cli("compare", str(no_nvtxsim), str(no_nvtxsim))
    assert proc.returncode == 0 and NOTE in proc.stdout and "iteration" in proc.stdout


def test_compare_says_when_one_run_lacks_the_domain(no_nvtxsim: Path, tmp_path: Path) -> None:
    """An instrumented run against one without nvtxsim ranges: every phase added/removed, and a note says why."""
    with_nvtxsim = tmp_path / "nvtxsim.sqlite"
    make_export(with_nvtxsim, 5)
    proc = cli("compare", str(with_nvtxsim), str(no_nvtxsim), "--no-findings")
    assert proc.returncode == 0, proc.stderr
    assert (
        f"{no_nvtxsim} has no range in domain 'nvtxsim': every phase shows as added or removed"
        in proc.stdout.replace("\n  ", " ")
    )


@pytest.mark.parametrize("command", ["report", "compare"])
def test_named_domain_absent_exits_2_with_the_list(no_nvtxsim: Path, command: str) -> None:
    paths = [str(no_nvtxsim)] * (2 if command == "compare" else 1)
    proc = cli(command, *paths, "--domain", "nvtxsim")
    assert proc.returncode == 2 and not proc.stdout
    assert "no ranges in domain 'nvtxsim'; domains in this export: default (or --domain all)" in proc.stderr


def test_all_and_present_domains_say_nothing(no_nvtxsim: Path, tmp_path: Path) -> None:
    assert NOTE not in cli("report", str(no_nvtxsim), "--domain", "all").stdout
    mixed = tmp_path / "mixed.sqlite"
    make_export(mixed, 5)
    out = cli("report", str(mixed)).stdout
    assert NOTE not in out and "nvtxsim:iteration" in out


@needs_nsys
def test_real_capture_of_nvtx_annotate(tmp_path: Path) -> None:
    """nvtx.annotate in the default domain and a library's own domain, captured by the real nsys.

    nvtx>=0.2.12 ranges are invisible to nsys 2022.4 unless the enabled-gate is lifted; importing
    nvtxsim lifts it for the whole package (docs: "Old nsys and new nvtx"), and records no range itself.
    """
    sqlite = profile_python(
        tmp_path,
        """
        import time
        import nvtxsim  # lifts nvtx's enabled-gate under old nsys; emits nothing here
        import nvtx

        for i in range(5):
            with nvtx.annotate("train_step"):
                with nvtx.annotate("load", domain="MyLib"):
                    time.sleep(0.001)
                time.sleep(0.001)
        """,
        name="annotate",
    )
    proc = cli("report", str(sqlite))
    assert proc.returncode == 0, proc.stderr
    assert f"{NOTE} (MyLib, default)" in proc.stdout
    lines = proc.stdout.splitlines()
    assert any(ln.startswith("train_step ") and " 5 " in ln for ln in lines), proc.stdout
    assert any(ln.startswith("MyLib:load ") for ln in lines), proc.stdout
    proc = cli("report", str(sqlite), "--domain", "Nope")
    assert proc.returncode == 2 and "domains in this export: MyLib, default" in proc.stderr
    proc = cli("report", str(sqlite), "--domain", "MyLib")
    assert proc.returncode == 0 and "MyLib:load" in proc.stdout and "train_step" not in proc.stdout


def test_ranks_widen_per_rank_and_named_domain_fails(no_nvtxsim: Path) -> None:
    proc = cli("report", str(no_nvtxsim), str(no_nvtxsim), "-j", "1")
    assert proc.returncode == 0 and proc.stdout.count(NOTE) >= 2 and "\niteration " in proc.stdout
    proc = cli("report", str(no_nvtxsim), str(no_nvtxsim), "-j", "1", "--domain", "nvtxsim")
    assert proc.returncode == 2 and "domains in this export: default" in proc.stderr


TORCH_EXPORT = ROOT / "tests" / "data" / "gpu" / "torch_nvtx_h200.sqlite.gz"


def test_h200_torch_cuda_nvtx_and_emit_nvtx_without_flags(tmp_path: Path) -> None:
    """torch.cuda.nvtx (default domain), nvtx.annotate(domain="data") and emit_nvtx, captured by nsys 2025.3."""
    committed(TORCH_EXPORT)
    from tests.test_terminal_width import assert_fits, tty

    proc = cli("report", str(TORCH_EXPORT))
    assert proc.returncode == 0, proc.stderr
    assert NOTE in proc.stdout and "data" in proc.stdout.split(NOTE, 1)[1].split("\n", 1)[0]
    for name in ("train_step", "forward", "backward", "optimizer", "data:make_batch"):
        assert name in proc.stdout
    text = tty(["report", str(TORCH_EXPORT), "--view", "summary,tree,kernels"], 80, tmp_path)
    assert_fits(text, 80)
    assert "train_step" in text
