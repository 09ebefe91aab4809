"""`nvtxsim compare BASE NEW`: per-phase deltas with bootstrap intervals and the CI regression gate."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from nsys_util import needs_nsys, profile_python
from synth import make_export

from nvtxsim.analysis.compare import CompareSettings, compare
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load


def cli(*args: str, subprocess_run: bool = False) -> subprocess.CompletedProcess:
    """``nvtxsim compare ARGS``: in-process by default (fast), or as a real subprocess."""
    if subprocess_run:
        return subprocess.run(
            [sys.executable, "-m", "nvtxsim", "compare", *args], capture_output=True, text=True, timeout=120
        )
    import contextlib
    import io

    from nvtxsim.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["compare", *args])
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


def _set_durations(path: Path, name: str, base_ns: int, jitter_ns: int, extra: str = "") -> None:
    """Give every range called ``name`` the duration base + (rowid % 7) * jitter (a tight, known distribution)."""
    con = sqlite3.connect(path)
    con.execute(
        f"UPDATE NVTX_EVENTS SET end = start + {base_ns} + (rowid % 7) * {jitter_ns} "
        f"WHERE eventType = 59 AND (text = ? OR textId IN (SELECT id FROM StringIds WHERE value = ?)) {extra}",
        (name, name),
    )
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    base, new = d / "base.sqlite", d / "new.sqlite"
    make_export(base, 31, threads=4, calls_per_thread=120)
    shutil.copy(base, new)
    _set_durations(base, "sim_step", 10_000, 100)
    _set_durations(new, "sim_step", 15_000, 150)  # +50 %, every instance
    _set_durations(base, "reward", 8_000, 80)
    _set_durations(new, "reward", 8_000, 80)  # unchanged
    return base, new


def test_slowdown_detected_and_gated(pair):
    base, new = pair
    res = compare(
        Selection(load(base), domain=None), Selection(load(new), domain=None), CompareSettings(by=None, fail_above=20)
    )
    rows = {p.phase: p for p in res.phases}
    for lab in ("sim_step", "nvtxsim:sim_step"):
        p = rows[lab]
        assert p.status == "compared" and p.base_n >= 5
        assert abs(p.median_delta_pct - 50.0) < 1.0
        assert 0 < p.median_ci_low_pct <= p.median_delta_pct <= p.median_ci_high_pct
        assert p.verdict == "slower" and p.regression
    assert (
        rows["reward"].median_delta_pct == 0 and not rows["reward"].regression and rows["reward"].verdict == "no change"
    )
    assert {p.phase for p in res.regressions} == {"sim_step", "nvtxsim:sim_step"}


def test_cli_exit_codes_and_formats(pair, tmp_path):
    base, new = pair
    gate = cli(str(base), str(new), "--domain", "all", "--per-instance", "--fail-above", "20", subprocess_run=True)
    assert gate.returncode == 1
    assert gate.stderr.startswith("nvtxsim: regression in 2 phase(s): ") and "sim_step" in gate.stderr
    assert "REGRESSION" in gate.stdout
    assert (
        cli(str(base), str(new), "--domain", "all", "--per-instance", "--fail-above", "80").returncode == 0
    )  # +50 % is under the bar
    assert cli(str(base), str(new), "--domain", "all", "--per-instance").returncode == 0  # no gate, no failure
    for fmt in ("table", "csv", "json", "markdown", "html"):
        out = tmp_path / f"c.{fmt}"
        p = cli(
            str(base), str(new), "--domain", "all", "--per-instance", "-f", fmt, "-o", str(out), "--fail-above", "20"
        )
        assert p.returncode == 1 and out.stat().st_size > 200, (fmt, p.stderr)
    doc = json.loads((tmp_path / "c.json").read_text())
    assert set(doc["regressions"]) == {"sim_step", "nvtxsim:sim_step"} and doc["settings"]["fail_above"] == 20
    page = (tmp_path / "c.html").read_text()
    assert "sim_step" in page and not re.search(r"https?://", page) and "<svg" in page
    header = (tmp_path / "c.csv").read_text().splitlines()[0].split(",")
    assert {"phase", "median_delta_pct", "median_ci_low_pct", "p99_delta_pct", "regression"} <= set(header)
    missing = cli(str(tmp_path / "nope.sqlite"), str(new))
    assert (
        missing.returncode == 2 and missing.stderr.startswith("nvtxsim: error:") and "Traceback" not in missing.stderr
    )


def test_same_file_and_determinism(pair):
    base, _ = pair
    a = cli(str(base), str(base), "--domain", "all", "-f", "json", "--fail-above", "1")
    b = cli(str(base), str(base), "--domain", "all", "-f", "json", "--fail-above", "1")
    assert a.returncode == 0 and a.stdout == b.stdout
    doc = json.loads(a.stdout)
    compared = [p for p in doc["phases"] if p["status"] == "compared"]
    assert compared and all(
        p["median_delta_pct"] == 0 and p["median_ci_low_pct"] <= 0 <= p["median_ci_high_pct"] for p in compared
    )
    assert all(not p["regression"] for p in doc["phases"])


def test_added_removed_and_few_samples(tmp_path):
    base, new = tmp_path / "b.sqlite", tmp_path / "n.sqlite"
    make_export(base, 5)
    shutil.copy(base, new)
    con = sqlite3.connect(new)
    con.execute(
        "DELETE FROM NVTX_EVENTS WHERE textId IN (SELECT id FROM StringIds WHERE value = 'reward') OR text = 'reward'"
    )
    con.commit()
    con.close()
    res = compare(
        Selection(load(base), domain=None),
        Selection(load(new), domain=None),
        CompareSettings(by=None, fail_above=0, min_samples=10_000),
    )
    rows = {p.phase: p for p in res.phases}
    assert rows["reward"].status == "removed" and rows["nvtxsim:reward"].status == "removed"
    assert all(p.status in ("removed", "too few samples") for p in res.phases) and not res.regressions
    back = compare(Selection(load(new), domain=None), Selection(load(base), domain=None), CompareSettings(by=None))
    assert {p.phase: p.status for p in back.phases}["reward"] == "added"


def test_bootstrap_interval_covers_a_known_shift():
    """Draws from known distributions: the interval for a +20 % median shift contains 20 and excludes 0."""
    from nvtxsim.analysis import compare as cmp

    rng = np.random.default_rng(1)
    a = rng.lognormal(10, 0.2, 400)
    b = rng.lognormal(10, 0.2, 400) * 1.2
    point, lo, hi = cmp._delta(a, b, 0.5, CompareSettings(resamples=1000), np.random.default_rng(0))
    assert lo < 20 < hi and lo > 0 and abs(point - 20) < 8


LOOP = """
import os, time
import nvtxsim

step = float(os.environ["STEP_MS"]) / 1000
for i in range(25):
    with nvtxsim.phase("iteration"):
        for _ in range(2):
            with nvtxsim.phase("sim_step"):
                time.sleep(step)
        with nvtxsim.phase("policy"):
            time.sleep(0.001)
"""


@needs_nsys
@pytest.mark.nsys
def test_real_runs_per_iteration(tmp_path):
    base = profile_python(tmp_path, LOOP, name="base", env={"STEP_MS": "1"})
    new = profile_python(tmp_path, LOOP, name="new", env={"STEP_MS": "3"})
    p = cli(str(base), str(new), "--by", "iteration", "--skip-first", "2", "--fail-above", "25", "-f", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    rows = {r["phase"]: r for r in doc["phases"]}
    assert rows["nvtxsim:sim_step"]["base_n"] == 23 and rows["nvtxsim:sim_step"]["median_delta_pct"] > 100
    assert rows["nvtxsim:sim_step"]["regression"] and rows["nvtxsim:iteration"]["regression"]
    assert not rows["nvtxsim:policy"]["regression"]


def test_by_iteration_names_the_phases_outside_every_iteration():
    data = Path(__file__).parent / "data" / "gpu"
    base, new = (
        Selection(load(data / n), domain="nvtxsim") for n in ("demo_h200.sqlite.gz", "demo_h200_graphlevel.sqlite.gz")
    )
    c = compare(base, new, CompareSettings(by="iteration", resamples=100))
    assert "ranges outside every 'iteration' range, not compared: nvtxsim:policy_update (base ×4, new ×7)" in c.notes
    assert "nvtxsim:policy_update" not in {p.phase for p in c.phases}
    assert not any("outside every" in n for n in compare(base, new, CompareSettings(by=None, resamples=100)).notes)
