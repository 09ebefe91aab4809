"""Running the real Nsight Systems from tests: profile a Python program, read `nsys stats` CSVs."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NSYS = shutil.which("nsys")
REPO = Path(__file__).resolve().parents[1]

needs_nsys = pytest.mark.skipif(NSYS is None, reason="Nsight Systems (nsys) is not installed; run .ci/install-nsys.sh")

# Flags that keep the old Debian nsys from hanging on machines without a GPU.
SAFE_FLAGS = ["--sample=none", "--cpuctxsw=none"]


def profile_python(
    tmp: Path,
    source: str,
    *,
    name: str = "run",
    trace: str = "nvtx,osrt",
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 180,
    check: bool = True,
) -> Path:
    """Write ``source`` to a file, run it under ``nsys profile`` and return the SQLite export."""
    assert NSYS is not None
    prog = tmp / f"{name}.py"
    prog.write_text(textwrap.dedent(source))
    out = tmp / name
    cmd = [
        NSYS,
        "profile",
        "-t",
        trace,
        *SAFE_FLAGS,
        "--export=sqlite",
        "--force-overwrite=true",
        "-o",
        str(out),
        sys.executable,
        str(prog),
        *args,
    ]
    full_env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    proc = subprocess.run(cmd, cwd=tmp, env=full_env, capture_output=True, text=True, timeout=timeout)
    sqlite = out.with_suffix(".sqlite")
    if check and not sqlite.exists():
        raise AssertionError(
            f"nsys produced no export (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return sqlite


def nsys_stats(sqlite: Path, report: str) -> list[dict[str, str]]:
    """Rows of ``nsys stats -r REPORT --format csv`` on an export, as dicts."""
    assert NSYS is not None
    proc = subprocess.run(
        [NSYS, "stats", "-r", report, "--format", "csv", "-o", "-", str(sqlite)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return parse_stats_csv(proc.stdout)


def parse_stats_csv(text: str) -> list[dict[str, str]]:
    """Parse the CSV part of `nsys stats` output (it may be preceded by progress lines)."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if "," in line and not line.startswith(("Processing", "Generating", " "))),
        None,
    )
    if start is None:
        return []
    body = "\n".join(line for line in lines[start:] if line.strip())
    return list(csv.DictReader(io.StringIO(body)))


def range_label(nsys_label: str) -> str:
    """nsys 2025 writes a default-domain range as ':name', 2022.4 as 'name'; nvtxsim as 'name'."""
    return nsys_label[1:] if nsys_label.startswith(":") else nsys_label


def sum_by_name(rows: list[dict[str, str]], name_col: str, value_col: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        key = range_label(r[name_col])
        out[key] = out.get(key, 0) + int(float(r[value_col]))
    return out
