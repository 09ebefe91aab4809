"""A CI-sized run of scripts/fuzz_export.py: mutated real exports (SQL-level and byte/page mutations)
through the whole CLI, bounded by a case count (deterministic: seeds fixed; the per-case timeout guards against
hangs). A longer run: ``python scripts/fuzz_export.py --seconds 600``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from nsys_util import REPO

pytestmark = pytest.mark.slow  # about 30 s: `-m 'not slow'` leaves it out locally; CI runs it

CASES = 100  # ten batches of ten, seeds 1..10


def test_fuzz_export_ci_cases(tmp_path):
    out = tmp_path / "failures"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "fuzz_export.py"),
            "--cases",
            str(CASES),
            "--seed",
            "1",
            "--batch",
            "10",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    detail = (
        proc.stderr[-4000:] + "".join(f"\n--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(out.glob("*.txt")))
        if out.exists()
        else proc.stderr[-4000:]
    )
    assert proc.returncode == 0, detail
    m = re.search(r"fuzz_export: (\d+) cases", proc.stdout)
    assert m and int(m.group(1)) == CASES, proc.stdout
