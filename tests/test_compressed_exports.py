"""Compressed exports: ``.sqlite.gz`` and ``.sqlite.xz`` read as the ``.sqlite`` inside them; damage is one line."""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "gpu" / "torch_nvtx_h200.sqlite.gz"


def _report(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--format", "json", "--no-findings"],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert DATA.is_file(), f"committed export missing: {DATA}"
    out = tmp_path_factory.mktemp("plain") / "run.sqlite"
    with gzip.open(DATA) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def test_xz_reads_as_the_sqlite_inside(plain: Path, tmp_path: Path) -> None:
    xz = tmp_path / "run.sqlite.xz"
    xz.write_bytes(lzma.compress(plain.read_bytes(), preset=1))
    got, want = _report(xz), _report(plain)
    assert got.returncode == want.returncode == 0, got.stderr
    a, b = json.loads(got.stdout), json.loads(want.stdout)
    assert a["phases"] == b["phases"] and len(a["phases"]) > 0


@pytest.mark.parametrize("kind", ["truncated", "garbage"])
def test_damaged_xz_is_one_line_naming_the_users_file(plain: Path, tmp_path: Path, kind: str) -> None:
    xz = tmp_path / "damaged.sqlite.xz"
    data = lzma.compress(plain.read_bytes(), preset=1)
    xz.write_bytes(data[: len(data) // 2] if kind == "truncated" else b"\xfd7zXZ\x00" + b"\x01" * 4096)
    proc = _report(xz)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(xz) in lines[0] and "xz" in lines[0] and "Traceback" not in proc.stderr
