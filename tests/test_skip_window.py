"""A --skip-first window that leaves no iteration gives no findings and says so; it never puts the skipped
iterations back (issue 23.1), so --fail-on cannot fail on warm-up alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import nvtxsim

EXPORT = Path(__file__).resolve().parent / "data" / "gpu" / "findings_planted.sqlite.gz"  # 60 iterations


def test_the_planted_export_has_findings_to_lose():
    m = nvtxsim.report(EXPORT, skip_first=0)
    assert m.findings.iterations == 60 and len(m.findings.items) >= 3
    steady = nvtxsim.report(EXPORT).findings  # by default its warm-up iterations 0-1 are left out, and said so
    assert steady.iterations == 58 and any(n.startswith("steady state: iterations 0-1 set aside") for n in steady.notes)


@pytest.mark.parametrize("skip", [60, 61, 1000])
def test_a_window_that_skips_every_iteration_finds_nothing_and_says_why(skip):
    f = nvtxsim.report(EXPORT, skip_first=skip).findings
    assert f.items == []
    assert f.notes == [f"--skip-first {skip} left no iteration: no findings (the skipped ones are not looked at)"]


def test_one_iteration_left_is_looked_at_alone():
    f = nvtxsim.report(EXPORT, skip_first=59).findings
    assert f.iterations == 1 and not any("left no iteration" in n for n in f.notes)


@pytest.mark.parametrize("skip, code", [(60, 0), (0, 1)])
def test_fail_on_all_never_fails_on_skipped_iterations(skip, code):
    r = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(EXPORT), "--skip-first", str(skip), "--fail-on", "all"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == code, r.stderr
