"""The RL loop levels at the edges, with the REAL rsl-rl-lib 5.5.1, skrl 2.x and rl_games 1.6 (CPU).

One ``step`` per env step and one ``learning_iteration`` per learning iteration also when the
library's training loop is run twice, and when the env's step raises: the levels open at that
moment end when the exception leaves ``learn()`` / ``train()`` (before, a retried training put
the failed steps and the next rollout into one learning iteration of more than its steps, and
the ranges stayed open meanwhile). ``nvtxsim.disable()`` before ``instrument_runner`` replaces
nothing; ``restore()`` leaves no wrapper. Runs ``isaaclab_support/rl_edges.py`` with the
isolated deps of ``scripts/install_isaaclab_test_deps.sh`` (skipped without).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "isaaclab_support"
sys.path.insert(0, str(SUPPORT))

import deps  # noqa: E402

pytestmark = pytest.mark.skipif(deps.missing_reason() is not None, reason=deps.missing_reason() or "")

LIBS = ["rsl_rl", "skrl", "rl_games"]
STEPS = 4  # rl_edges.STEPS


def edges(lib: str, mode: str) -> dict:
    proc = deps.run("3.0.0", [SUPPORT / "rl_edges.py", lib, mode])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT ")).split(" ", 1)[1])


@pytest.mark.parametrize("lib", LIBS)
def test_training_twice_counts_every_step_and_learning_iteration(lib):
    r = edges(lib, "repeat")
    c = r["counts"]
    assert c["step"] == c["iteration"] > 0  # one step per env step
    assert c["learning_iteration"] == c["rollout"] == c["policy_update"]  # one per update
    assert r["steps_per_iteration"] == [STEPS] * c["learning_iteration"]
    assert r["open_at_end"] == []


@pytest.mark.parametrize("lib", LIBS)
def test_an_exception_in_env_step_ends_the_open_levels(lib):
    r = edges(lib, "raise")
    assert r["open_after_exception"] == [] and r["open_at_end"] == []
    c = r["counts"]
    assert c["step"] == c["iteration"] + 1  # the failed env.step call is a step too (it has no env range)
    assert sum(r["steps_per_iteration"]) == c["step"]  # every step in one learning iteration
    assert max(r["steps_per_iteration"]) <= STEPS  # the interrupted one is not merged with the next rollout
    assert 2 in r["steps_per_iteration"]  # interrupted in its second step (the 6th env step)


@pytest.mark.parametrize("lib", LIBS)
def test_disable_installs_nothing(lib):
    r = edges(lib, "disable")
    assert r["idle"] is True and r["wrapped"] == []


@pytest.mark.parametrize("lib", LIBS)
def test_restore_leaves_no_wrapper(lib):
    r = edges(lib, "restore")
    assert r["wrapped_before"] and r["wrapped"] == []
