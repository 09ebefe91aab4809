"""``--match`` over names an export chose: a pattern that backtracks without end is one error line (issue 13, round 3)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest
from synth import make_export
from test_cli_errors import assert_clean_error

# Patterns that backtrack without end on a name an export chooses ("aaa…a!"): ReDoS.
CATASTROPHIC = [r"(a+)+$", r"(a|a)*$", r"(a*)*b", r"^(\w+\s?)*$", r"(a|aa)+$"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
@pytest.mark.parametrize("command", ["report", "compare"])
def test_catastrophic_match_pattern_ends_with_one_line(tmp_path, pattern, command):
    """``--match`` is a Python regex over names the export chose: it gets a time budget
    (``NVTXSIM_MATCH_SECONDS``) and then one error line, never a hang."""
    path = tmp_path / "redos.sqlite"
    make_export(path, 1, processes=1, threads=1, calls_per_thread=5)
    con = sqlite3.connect(path)
    con.execute("UPDATE StringIds SET value = ?", ("a" * 60 + "!",))
    con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text IS NOT NULL", ("a" * 60 + "!",))
    con.commit()
    con.close()
    argv = ["report", str(path)] if command == "report" else ["compare", str(path), str(path)]
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", *argv, "--domain", "all", "--match", pattern],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NVTXSIM_MATCH_SECONDS": "0.3"},
    )
    assert_clean_error(proc, "NVTXSIM_MATCH_SECONDS")


def test_match_budget_is_validated_and_leaves_no_timer(monkeypatch):
    import re
    import signal

    from nvtxsim.analysis.selection import matching
    from nvtxsim.errors import NvtxsimError

    assert matching(re.compile("b"), ["abc", "x", 3]).tolist() == [True, False, False]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv("NVTXSIM_MATCH_SECONDS", bad)
        with pytest.raises(NvtxsimError, match="NVTXSIM_MATCH_SECONDS"):
            matching(re.compile("b"), ["abc"])


@pytest.mark.parametrize("budget", ["1e-300", "1e-6"])
def test_a_budget_that_ends_at_once_is_still_one_line(tmp_path, budget):
    """The alarm may come at any bytecode (while arming, matching or disarming): never exit 3."""
    path = tmp_path / "e.sqlite"
    make_export(path, 1, processes=1, threads=1, calls_per_thread=5)
    argv = [sys.executable, "-m", "nvtxsim", "report", str(path), "--domain", "all", "--match", "x"]
    full = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert full.returncode == 0 and full.stderr == "", full.stderr
    for _ in range(5):
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=120, env={**os.environ, "NVTXSIM_MATCH_SECONDS": budget}
        )
        # Whether the alarm comes before the last name is matched is the machine's timing; each outcome has
        # one right answer: the report the unbounded run gives, byte for byte, or the budget's one error line.
        if proc.returncode == 0:
            assert (proc.stdout, proc.stderr) == (full.stdout, "")
        else:
            assert_clean_error(proc, f"still matching after {float(budget):g} s")
