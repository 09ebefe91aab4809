"""``nvtxsim run SCRIPT ARGS``: the script's arguments reach it untouched, as with ``python SCRIPT ARGS``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = "import json, sys; print(json.dumps(sys.argv[1:]))\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],  # run's own --help
        ["--q", "--verb"],  # unique abbreviations of run's -q/--quiet and -v/--verbose
        ["--n", "5"],  # an ambiguous abbreviation (--no-count-steps, --no-instrument)
        ["-m", "x", "--", "--no-instrument"],
        ["plain", "-"],
    ],
)
def test_script_arguments_are_never_nvtxsims(tmp_path: Path, args: list[str]) -> None:
    script = tmp_path / "show.py"
    script.write_text(SCRIPT)
    for prefix in ([], ["-q"], ["--no-instrument", "--"]):
        cmd = [sys.executable, "-m", "nvtxsim", "run", *prefix, str(script), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (cmd, proc.stderr)
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == args, cmd


def test_an_unknown_option_before_the_script_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "show.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", "--bogus", str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "unrecognized arguments: --bogus" in proc.stderr
