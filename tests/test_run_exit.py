"""``nvtxsim run PROGRAM`` ends as ``python PROGRAM`` does: the same exit status (or signal), the same output.

Each hostile program is run both ways and compared; mistakes refused before the program starts
(no such module, a folder without ``__main__``) have Python's exit status, with nvtxsim's one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAMS = {
    "closes_stdout": "import sys\nprint('x')\nsys.stdout.close()\n",
    "closes_stdout_exit3": "import sys\nsys.stdout.close()\nsys.exit(3)\n",
    "closes_stdout_fd": "import os\nprint('x', flush=True)\nos.close(1)\n",
    "keyboard_interrupt": "print('before', flush=True)\nraise KeyboardInterrupt\n",
    "keyboard_interrupt_subclass": "class K(KeyboardInterrupt): pass\nraise K()\n",
    "keyboard_interrupt_atexit": "import atexit\natexit.register(lambda: print('atexit ran'))\nraise KeyboardInterrupt\n",
    "exit_text": "import sys\nsys.exit('bye')\n",
    "exit_256": "import sys\nsys.exit(256)\n",
    "exit_minus_1": "raise SystemExit(-1)\n",
    "exit_true": "import sys\nsys.exit(True)\n",
    "os_exit": "import os\nos._exit(7)\n",
    "error": "def f():\n    raise ValueError('no')\nf()\n",
    "syntax_error": "def (:\n",
    "sigterm": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
}


def _both(tmp_path: Path, args: list[str], stdout=subprocess.PIPE) -> tuple[subprocess.CompletedProcess, ...]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    env["PYTHONPATH"] = str(ROOT)
    runs = []
    for pre in ([], ["-m", "nvtxsim", "run"]):
        runs.append(
            subprocess.run(
                [sys.executable, *pre, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env,
                cwd=tmp_path, timeout=120,
            )
        )  # fmt: skip
    return tuple(runs)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_program_ends_as_under_python(tmp_path, name):
    script = tmp_path / f"{name}.py"
    script.write_text(PROGRAMS[name])
    py, ours = _both(tmp_path, [script.name])
    assert ours.returncode == py.returncode, (py.stderr, ours.stderr)
    assert ours.stdout == py.stdout and ours.stderr == py.stderr


def test_a_full_stdout_at_exit_is_the_programs_to_report(tmp_path):
    (tmp_path / "big.py").write_text("print('x' * 100)\n")
    with open("/dev/full", "w") as full:
        py, ours = _both(tmp_path, ["big.py"], stdout=full)
    assert ours.returncode == py.returncode != 0 and ours.stderr == py.stderr


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["-m", "nosuchmod_xyz"], 1),
        (["-m", "nosuchpkg_xyz.sub"], 1),
        (["missing.py"], 2),
        (["folder"], 1),
        (["empty.zip"], 1),
    ],
)
def test_refused_before_the_start_with_pythons_status(tmp_path, args, status):
    (tmp_path / "folder").mkdir()
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as z:
        z.writestr("other.py", "print(1)\n")
    py, ours = _both(tmp_path, args)
    assert py.returncode == ours.returncode == status, (py.stderr, ours.stderr)
    assert ours.stdout == "" and ours.stderr.count("\n") <= 1 and "Traceback" not in ours.stderr
