"""Hostile cases across this round's classes: options through both doors, repeated options, numpy
values, case, a program's own excepthook under ``nvtxsim run``, live files under ``nvtxsim run``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nvtxsim.cli.arguments import add_view_arguments, request_from_args
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.pipeline import request

ROOT = Path(__file__).resolve().parents[1]


def _cli(*argv: str):
    p = argparse.ArgumentParser()
    add_view_arguments(p)
    return request_from_args(p.parse_args(list(argv)))


def test_a_repeated_fail_on_keeps_every_one():
    """A CI config with two --fail-on must gate on both, never only the last."""
    kinds = {r.kind for r in _cli("--fail-on", "sync", "--fail-on", "cpu_bound").fail_on}
    assert kinds == {"sync", "cpu_bound"}


def test_a_repeated_view_keeps_every_one():
    assert _cli("--view", "tree", "--view", "kernels").views == ["tree", "kernels"]
    assert _cli().views == ["summary"]


@pytest.mark.parametrize("value", ["SYNC", "Sync:HIGH", "ALL", "All:Medium"])
def test_kind_and_severity_names_ignore_case(value):
    assert request(fail_on=value).fail_on == _cli("--fail-on", value).fail_on
    assert request(fail_on=value).fail_on == request(fail_on=value.lower()).fail_on


@pytest.mark.parametrize("value", ["TREE", "Tree,Kernels", "ALL"])
def test_view_names_ignore_case(value):
    assert request(views=value).views == request(views=value.lower()).views


@pytest.mark.parametrize("key,value,want", [("top", np.int64(3), 3), ("skip_first", np.int32(2), 2)])
def test_numpy_integers_are_integers(key, value, want):
    assert getattr(request(**{key: value}).options, key) == want


@pytest.mark.parametrize("value", [np.float32(4096), np.int64(64)])
def test_numpy_numbers_for_envs(value):
    assert request(envs=value).options.envs == float(value)


def test_an_int_past_floats_range_for_envs_is_one_line():
    with pytest.raises(NvtxsimError, match="finite number"):
        request(envs=10**400)


@pytest.mark.parametrize("value", ["sync:", ":high", "sync:high:low", "all,sync:bogus"])
def test_malformed_fail_on_entries(value):
    with pytest.raises(NvtxsimError, match="^fail_on=: unknown"):
        request(fail_on=value)


HOOK = "import sys\nsys.excepthook = lambda t, v, tb: print('HOOK', t.__name__, file=sys.stderr)\nraise {}\n"


@pytest.mark.parametrize("exc", ["ValueError('x')", "KeyboardInterrupt"])
def test_run_uses_the_programs_own_excepthook(tmp_path, exc):
    (tmp_path / "p.py").write_text(HOOK.format(exc))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    env["PYTHONPATH"] = str(ROOT)
    runs = [
        subprocess.run([sys.executable, *pre, "p.py"], capture_output=True, text=True, cwd=tmp_path, env=env)
        for pre in ([], ["-m", "nvtxsim", "run"])
    ]
    assert runs[0].returncode == runs[1].returncode and runs[0].stderr == runs[1].stderr
    assert runs[1].stderr.startswith("HOOK")


def test_nvtxsim_run_claims_the_live_file_before_the_program_starts_workers(tmp_path):
    stale = {"iterations": [0, 1], "measured": 2, "sample": 1, "pid": 1, "phases": {"nvtxsim:old": {"count": 1}}}
    out = tmp_path / "live.jsonl"
    out.write_text(json.dumps(stale) + "\n")
    (tmp_path / "w.py").write_text(
        "import subprocess, sys, nvtxsim\n"
        "subprocess.run([sys.executable, '-c', 'import nvtxsim\\nfor _ in range(2):\\n    nvtxsim.step()\\n"
        '    with nvtxsim.phase("worker"): pass\'], check=True)\n'
        "for _ in range(3):\n    nvtxsim.step()\n    with nvtxsim.phase('main'): pass\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    env.update(PYTHONPATH=str(ROOT), NVTXSIM_LIVE=str(out))
    cmd = [sys.executable, "-m", "nvtxsim", "run", "--no-instrument", "w.py"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    phases = sorted(k for line in out.read_text().splitlines() for k in json.loads(line)["phases"])
    assert phases == ["nvtxsim:main", "nvtxsim:worker"]
