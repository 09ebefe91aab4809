"""CLI front end: only the command being run is imported; BLAS threads are capped for reports only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvtxsim.cli import main as cli

DATA = Path(__file__).parent / "data" / "gpu" / "demo_h200.sqlite.gz"
ENV = {k: v for k, v in os.environ.items() if k not in cli._THREAD_VARIABLES}


@pytest.mark.parametrize(
    "argv, command",
    [
        (["report", "x.sqlite"], "report"),
        (["run", "train.py", "--report"], "run"),
        (["--help"], None),
        (["bogus"], None),
        ([], None),
        (["--version", "report"], None),
    ],
)
def test_command_is_found_before_parsing(argv, command):
    assert cli._command_in(argv) == command


def _child(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV, timeout=120)


def test_report_caps_blas_threads_and_imports_only_its_command():
    code = (
        "import io, json, os, sys, contextlib\n"
        "from nvtxsim.cli import main as cli\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = cli.main(['report', sys.argv[1], '-f', 'json'])\n"
        "print(json.dumps({'rc': rc, 'phases': len(json.loads(buf.getvalue())['phases']),\n"
        "  'threads': [os.environ.get(v) for v in cli._THREAD_VARIABLES],\n"
        "  'loaded': sorted(m for m in ('nvtxsim.capture.nsys', 'nvtxsim.cli.commands.profile', 'nvtxsim.cli.commands.doctor', 'subprocess') if m in sys.modules)}))\n"
    )
    proc = _child(code, str(DATA))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["rc"] == 0 and got["phases"] > 0
    assert got["threads"] == ["1", "1", "1"]
    assert got["loaded"] == []


def test_run_leaves_the_users_blas_threads_alone(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import os\nprint(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'))\n")
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", str(script)], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "None"]


def test_full_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert all(m.rsplit(".", 1)[1] in out for m in cli._COMMANDS)
