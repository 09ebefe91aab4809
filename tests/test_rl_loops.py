"""The RL loop levels (issue 17) with the REAL rsl-rl-lib 5.5.1, skrl 2.1.1 and rl_games 1.6.5 on CPU.

``instrument_runner`` must give every library the same structure: ``learning_iteration`` ⊃
``rollout`` ⊃ ``step`` ⊃ {``policy``, the env step, the algorithm's processing of the transition},
one ``step`` per env step and one ``learning_iteration`` per learning iteration; and the report
must read it (``--by step`` by default, ``--by learning_iteration`` with rollout vs update and
env-steps/s from the env count nvtxsim recorded). rsl_rl runs ``scripts/gpu/rsl_rl_4096.py``
(the H200 capture's workload) with few envs; skrl and rl_games run ``isaaclab_support/rl_loops.py``.
Subprocesses use the isolated deps of ``scripts/install_isaaclab_test_deps.sh`` (skipped without).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "isaaclab_support"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SUPPORT))

import deps  # noqa: E402
from nesting import Span, children_count, from_export, inside, names, parents  # noqa: E402

pytestmark = pytest.mark.skipif(deps.missing_reason() is not None, reason=deps.missing_reason() or "")

LIBS = ["rsl_rl", "skrl", "rl_games"]
STEPS, ITERATIONS, ENVS = 4, 3, 8
#: The library's processing of a transition, inside each step (rl_games does it inline: no call to range).
PROCESSING = {"rsl_rl": "process_env_step", "skrl": "record_transition", "rl_games": None}
NSYS = [
    "nsys",
    "profile",
    "-t",
    "nvtx,osrt",
    "--sample=none",
    "--cpuctxsw=none",
    "--export=sqlite",
    "--force-overwrite=true",
]
needs_nsys = pytest.mark.skipif(shutil.which("nsys") is None, reason="nsys not installed")


def _train(lib: str, tmp: Path, *, record: bool = False, prefix: list | None = None) -> dict:
    """Train ``lib`` for ITERATIONS × STEPS; the result JSON (rl_loops.py) or the script's stdout line (rsl_rl)."""
    sizes = ["--steps", STEPS, "--iterations", ITERATIONS]
    if lib == "rsl_rl" and record:
        return deps.scenario("3.0.0", "runner", tmp, "--record", "--steps", str(STEPS), "--iterations", str(ITERATIONS))
    if lib == "rsl_rl":
        args = [REPO / "scripts" / "gpu" / "rsl_rl_4096.py", "--device", "cpu", "--num-envs", ENVS, *sizes]
        proc = deps.run("3.0.0", args, prefix=prefix)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        line = next(text for text in proc.stdout.splitlines() if text.startswith("RSL_RL "))
        return json.loads(line.split(" ", 1)[1])
    out = tmp / f"{lib}.json"
    args = [SUPPORT / "rl_loops.py", lib, "--out", out, "--envs", ENVS, *sizes] + (["--record"] if record else [])
    proc = deps.run("3.0.0", args, prefix=prefix)
    assert proc.returncode == 0 and out.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


def _each_lib(fn):
    with ThreadPoolExecutor(len(LIBS)) as pool:
        futures = {lib: pool.submit(fn, lib) for lib in LIBS}
        return {lib: f.result() for lib, f in futures.items()}


def assert_loop_structure(spans: list[Span], lib: str) -> None:
    """learning_iteration ⊃ rollout ⊃ step ⊃ {policy, iteration, processing}; update in the iteration, after the rollout."""
    par = parents(spans)
    count = names(spans)
    n = STEPS * ITERATIONS
    assert count["step"] == n and count["learning_iteration"] == ITERATIONS and count["rollout"] == ITERATIONS, count
    assert children_count(spans, par, "learning_iteration", "rollout", direct=True) == [1] * ITERATIONS
    assert children_count(spans, par, "rollout", "step", direct=True) == [STEPS] * ITERATIONS
    assert children_count(spans, par, "step", "policy", direct=True) == [1] * n
    assert children_count(spans, par, "step", "iteration", direct=True) == [1] * n  # the env step
    if PROCESSING[lib]:
        assert children_count(spans, par, "step", PROCESSING[lib], direct=True) == [1] * n
    assert inside(spans, par, "policy_update", "learning_iteration") == (ITERATIONS, ITERATIONS)
    assert inside(spans, par, "policy_update", "rollout") == (0, ITERATIONS)
    assert inside(spans, par, "policy", "step")[0] == n  # every policy call of the loop is in a step
    if lib == "rsl_rl":
        assert inside(spans, par, "compute_returns", "rollout") == (0, ITERATIONS)
    if lib == "rl_games":  # GAE runs at the end of play_steps: in the rollout, after the last step
        assert inside(spans, par, "compute_returns", "rollout") == (ITERATIONS, ITERATIONS)
        assert inside(spans, par, "compute_returns", "step") == (0, ITERATIONS)


# --------------------------------------------------------------------------- recorded in-process


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rl-loops-recorded")
    return _each_lib(lambda lib: _train(lib, tmp, record=True))


@pytest.mark.parametrize("lib", LIBS)
def test_loop_levels_recorded(recorded, lib):
    result = recorded[lib]
    assert result["missing"] == []
    assert_loop_structure([Span(*s) for s in result["spans"]], lib)
    if lib != "rsl_rl":  # rl_loops.py also reports the payloads: the env count on every loop range
        assert result["payloads"] == {"learning_iteration": ENVS, "rollout": ENVS, "step": ENVS}
        assert result["env_steps"] == STEPS * ITERATIONS


def test_hooks_patched_per_library(recorded):
    assert {"PPO.act", "PPO.post_interaction", "Agent.post_interaction", "PPO.update"} <= set(
        recorded["skrl"]["patched"]
    )
    assert {
        "A2CBase.get_action_values",
        "A2CBase.get_values",
        "ContinuousA2CBase.train_epoch",
        "A2CBase.play_steps",
        "A2CAgent.train_actor_critic",
    } <= set(recorded["rl_games"]["patched"])
    assert {"PPO.act", "PPO.process_env_step", "PPO.update"} <= set(recorded["rsl_rl"]["patched"])


# --------------------------------------------------------------------------- under real nsys


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    if shutil.which("nsys") is None:
        pytest.skip("nsys not installed")
    tmp = tmp_path_factory.mktemp("rl-loops-nsys")

    def capture(lib: str) -> Path:
        out = tmp / lib
        _train(lib, tmp, prefix=NSYS + ["-o", str(out)])
        return Path(str(out) + ".sqlite")

    return _each_lib(capture)


def _report(path: Path, *args: str) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nvtxsim",
            "report",
            str(path),
            "--view",
            "iterations,slowest",
            "--format",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env={**deps.env_for("3.0.0"), "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)["views"]


@pytest.mark.nsys
@needs_nsys
@pytest.mark.parametrize("lib", LIBS)
def test_loop_levels_in_the_nsys_export(captures, lib):
    spans = from_export(str(captures[lib]))
    assert_loop_structure(spans, lib)
    from nvtxsim.export.reader import load
    from nvtxsim.schema import STARTEND

    r = load(str(captures[lib]), cuda=False).ranges
    loop = [i for i in range(len(r)) if r.name[i] in ("step", "rollout", "learning_iteration")]
    assert {int(r.style[i]) for i in loop} == {1}  # start/end ranges: the calls they span are siblings
    assert {float(r.payload[i]) for i in loop} == {float(ENVS)}  # the env count, for env-steps/s
    assert STARTEND == 60


@pytest.mark.nsys
@needs_nsys
@pytest.mark.parametrize("lib", LIBS)
def test_report_views_by_step_and_learning_iteration(captures, lib):
    # no --by: step, since nvtxsim recorded steps; every step kept (a toy loop's first steps may read as warm-up)
    views = _report(captures[lib], "--keep-warm-up")
    it = views["iterations"]
    assert it["title"].endswith("(nvtxsim:step)")
    key = it["rows"][0]
    assert key["phase"] == "nvtxsim:step" and key["iterations"] == STEPS * ITERATIONS
    inner = {row["phase"]: row for row in it["rows"][1:]}
    assert inner["nvtxsim:policy"]["per_iteration_count"] == 1.0
    assert inner["nvtxsim:iteration"]["per_iteration_count"] == 1.0
    assert key["env_steps_per_s"] > 0 and any("8 envs per iteration (recorded by nvtxsim)" in n for n in it["notes"])

    views = _report(captures[lib], "--by", "learning_iteration", "--keep-warm-up")
    it = views["iterations"]
    assert it["rows"][0]["phase"] == "nvtxsim:learning_iteration" and it["rows"][0]["iterations"] == ITERATIONS
    inner = {row["phase"]: row for row in it["rows"][1:]}
    assert inner["nvtxsim:step"]["per_iteration_count"] == STEPS
    assert inner["nvtxsim:rollout"]["per_iteration_count"] == 1.0
    assert inner["nvtxsim:policy_update"]["iterations"] == ITERATIONS
    assert any(n.startswith("per iteration: rollout ") and f"{STEPS} env steps" in n for n in it["notes"])
    assert any(f"{ENVS} envs × {STEPS} steps per iteration" in n for n in it["notes"])
    slow = views["slowest"]["rows"]
    assert len(slow) == ITERATIONS
    for row in slow:
        assert 0 < row["rollout_ns"] < row["duration_ns"] and 0 < row["update_ns"] < row["duration_ns"]
        assert row["env_steps_per_s"] == pytest.approx(ENVS * STEPS * 1e9 / row["duration_ns"], rel=1e-6, abs=1)

    views = _report(captures[lib], "--by", "learning_iteration", "--envs", "100")  # --envs overrides
    assert any("100 envs × 4 steps per iteration:" in n for n in views["iterations"]["notes"])
