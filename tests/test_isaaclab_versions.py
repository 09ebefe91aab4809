"""nvtxsim.isaaclab against the REAL Isaac Lab source from PyPI: 2.3.2 (with Kit stand-ins) and 3.0.0.

Each test runs a subprocess with the isolated deps from ``scripts/install_isaaclab_test_deps.sh``
(``$NVTXSIM_ISAACLAB_DEPS``, default ``.deps/isaaclab``); they skip, saying so, where those are absent.
The env ``step()`` bodies, scene, sensor readout and (3.0) SimulationContext/RenderContext code are
Isaac Lab's; Kit, PhysX and RTX are replaced by light objects (tests/isaaclab_support/light.py).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).parent / "isaaclab_support"
sys.path.insert(0, str(SUPPORT))

import deps  # noqa: E402
from nesting import Span, ancestors, children_count, from_export, inside, names, parents, self_nested  # noqa: E402

pytestmark = pytest.mark.skipif(deps.missing_reason() is not None, reason=deps.missing_reason() or "")

VERSIONS = ["2.3.2", "3.0.0"]
CARTPOLE_TASK = {
    "2.3.2": "isaaclab_tasks.direct.cartpole.cartpole_camera_env:CartpoleCameraEnv",
    "3.0.0": "isaaclab_tasks.core.cartpole.cartpole_direct_camera_env:CartpoleCameraEnv",
}
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


def _major(version: str) -> int:
    return int(version.split(".")[0])


# --------------------------------------------------------------------------- the map resolves


@pytest.fixture(scope="module")
def check_reports(tmp_path_factory):
    """``nvtxsim isaaclab check --json`` in each version's Python (run once per module)."""
    procs = _parallel(lambda v: deps.run(v, ["-m", "nvtxsim", "isaaclab", "check", "--json", "--strict"]))
    for proc in procs.values():
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {v: json.loads(p.stdout) for v, p in procs.items()}


def _parallel(fn):
    """``{version: fn(version)}``, the versions' subprocesses running side by side."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(VERSIONS)) as pool:
        futures = {v: pool.submit(fn, v) for v in VERSIONS}
        return {v: f.result() for v, f in futures.items()}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_map_entry_resolves(check_reports, version):
    report = check_reports[version]
    assert report["ok"] is True and report["version"] == _major(version)
    by_status = {}
    for e in report["entries"]:
        by_status.setdefault(e["status"], []).append(e)
    assert set(by_status) <= {"ok", "source", "other-version"}, {k: len(v) for k, v in by_status.items()}
    # Isaac Lab's own package imports (2.3: with the Kit stand-ins), every core entry resolved by import
    assert all(e["status"] == "ok" for e in report["entries"] if e["entry"].startswith("isaaclab."))
    # only Kit-bound backends are checked from source, and the reason names the missing Kit module
    for e in by_status.get("source", []):
        assert e["entry"].startswith(("isaaclab_physx.", "isaaclab_ov.")), e
        assert "importing needs" in e["detail"], e
    # only skrl 1.x names are absent (skrl 2 is installed); every RL library entry is checked
    assert {e["entry"].rsplit(".", 1)[1] for e in by_status.get("other-version", [])} == {"_update"}
    libs = {e["entry"].split(".")[0] for e in report["entries"] if e["optional"]}
    assert {"rsl_rl", "skrl", "rl_games"} <= libs
    if _major(version) == 3:
        assert any(e["entry"].startswith("isaaclab_newton.") and e["status"] == "ok" for e in report["entries"])


@pytest.mark.parametrize("version", VERSIONS)
def test_nsys_json_entries_resolve(check_reports, version, tmp_path):
    out = tmp_path / "trace.json"
    args = ["-m", "nvtxsim", "isaaclab", "nsys-json", "-o", out, "--task", CARTPOLE_TASK[version]]
    proc = deps.run(version, args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from nvtxsim.isaaclab.nsys_json import read_functions

    written = set(read_functions(json.loads(out.read_text())))
    resolved = {e["entry"] for e in check_reports[version]["entries"] if e["status"] in ("ok", "source")}
    task = CARTPOLE_TASK[version].replace(":", ".")
    task_entries = {n for n in written if n.startswith(task + ".")}
    assert f"{task}._get_observations" in task_entries
    assert written - task_entries <= resolved


# --------------------------------------------------------------------------- step() under instrumentation


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The in-process scenarios (direct, manager, cartpole, runner, warnings) of each version, recorded."""
    tmp = tmp_path_factory.mktemp("isaaclab-scenarios")
    return _parallel(lambda v: deps.scenario(v, "all", tmp, "--record", "--steps", "4"))


def _spans(result: dict) -> list[Span]:
    return [Span(*s) for s in result["spans"]]


def assert_env_step_nesting(
    spans: list[Span], *, steps: int, decimation: int, version: str, kind: str, resets: bool, runner: bool = False
) -> None:
    """iteration ⊃ action, sim_step × decimation, render, reward, reset, observation ⊃ camera_readout."""
    par = parents(spans)
    count = names(spans)
    assert self_nested(spans, par) == []
    assert count["iteration"] == steps
    assert children_count(spans, par, "iteration", "sim_step") == [decimation] * steps
    assert children_count(spans, par, "iteration", "scene.write_data_to_sim") == [decimation] * steps
    assert children_count(spans, par, "iteration", "scene.update") == [decimation] * steps
    assert children_count(spans, par, "iteration", "action") == [1 + decimation] * steps  # process + apply × dec
    for phase in ("reward", "termination", "observation"):
        assert children_count(spans, par, "iteration", phase) == [1] * steps, phase
    assert min(children_count(spans, par, "iteration", "render")) >= 1  # render_interval == decimation
    for name in (
        "action",
        "sim_step",
        "reward",
        "termination",
        "scene.update",
        "scene.write_data_to_sim",
        "events.interval",
        "commands",
        "reset",
        "scene.reset",
    ):
        hits, total = inside(spans, par, name, "iteration")
        assert hits == total, (name, hits, total)
    # renders run in the step, or (3.x) lazily inside a camera readout, which may happen outside a step
    render_parents = [set(ancestors(spans, par, i)) for i, s in enumerate(spans) if s.name == "render"]
    assert all(p & {"iteration", "camera_readout"} for p in render_parents)
    # lazy sensor readout happens inside the observation phase, labelled with the sensor
    hits, total = inside(spans, par, "camera_readout", "observation")
    assert total >= steps and hits >= steps
    # one camera in the scene: its readout is camera_readout alone (a sub-range would repeat its numbers),
    # and no range name holds a prim path
    assert not [s.name for s in spans if s.name.startswith("sensor.") or "/World" in s.name]
    if resets:
        assert count["reset"] >= 1 and count["scene.reset"] >= 1
        assert inside(spans, par, "scene.reset", "reset")[0] == count["scene.reset"]
    if _major(version) == 3:
        # physics_manager.step is sim_step's whole body: no second row with the same numbers
        assert count["sim_step"] == steps * decimation and count.get("physics_manager.step", 0) == 0
        if kind in ("direct", "manager"):
            # 3.x: the renderer runs inside the camera readout (lazy render)
            assert inside(spans, par, "render", "camera_readout")[0] >= steps
            assert inside(spans, par, "renderer.read_output", "camera_readout")[0] >= steps
    if runner:
        assert count["policy_update"] == 1 and count["compute_returns"] == 1
        assert count["process_env_step"] == steps and count["policy"] >= steps
        assert inside(spans, par, "iteration", "policy") == (0, steps)  # act and env.step are siblings
        # ... inside one RL step each (rsl-rl-lib 3.0.1 and 5.5.1), in the learning iteration's rollout
        assert count["step"] == steps and count["learning_iteration"] == 1 and count["rollout"] == 1
        assert children_count(spans, par, "step", "iteration", direct=True) == [1] * steps
        assert children_count(spans, par, "step", "process_env_step", direct=True) == [1] * steps
        assert children_count(spans, par, "rollout", "step", direct=True) == [steps]
        assert inside(spans, par, "policy_update", "learning_iteration") == (1, 1)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["direct", "manager", "cartpole"])
def test_real_step_runs_under_instrumentation(recorded, version, kind):
    result = recorded[version][kind]
    assert result["missing"] == [] and result["warnings"] == []
    assert result["version"] == _major(version)
    assert_env_step_nesting(
        _spans(result),
        steps=result["steps"],
        decimation=result["decimation"],
        version=version,
        kind=kind,
        resets=kind != "manager",
    )
    patched = set(result["patched"])
    step = {"direct": "DirectRLEnv.step", "cartpole": "DirectRLEnv.step", "manager": "ManagerBasedRLEnv.step"}[kind]
    assert {
        step,
        "SimulationContext.render",
        "InteractiveScene.update",
        "InteractiveScene.write_data_to_sim",
        "SensorBase._update_outdated_buffers",
        "ObservationManager.compute",
    } <= patched
    # everything is put back by the handle's context-manager exit
    assert all(result["restored"].values()), result["restored"]


@pytest.mark.parametrize("version", VERSIONS)
def test_task_hooks_patched_on_their_defining_class(recorded, version):
    patched = recorded[version]["cartpole"]["patched"]
    if _major(version) == 3:  # CartpoleCameraEnv(CartpoleEnv): rewards/dones/actions come from CartpoleEnv
        expected = {
            "CartpoleEnv._get_rewards",
            "CartpoleEnv._get_dones",
            "CartpoleEnv._pre_physics_step",
            "CartpoleEnv._apply_action",
            "CartpoleCameraEnv._get_observations",
            "CartpoleCameraEnv._reset_idx",
            "DirectRLEnv._reset_envs_from_buffer",
            "DirectRLEnv._compute_observations",
        }
    else:
        expected = {
            "CartpoleCameraEnv._get_rewards",
            "CartpoleCameraEnv._get_dones",
            "CartpoleCameraEnv._get_observations",
            "CartpoleCameraEnv._reset_idx",
        }
    assert expected <= set(patched)
    assert not any(p.startswith("DirectRLEnv._get_") for p in patched)  # never the abstract base hooks
    assert recorded[version]["direct"]["restored_task"] is True


@pytest.mark.parametrize("version", VERSIONS)
def test_rsl_rl_runner_phases(recorded, version):
    result = recorded[version]["runner"]
    assert result["missing"] == []
    assert {
        "PPO.act",
        "PPO.update",
        "PPO.process_env_step",
        "PPO.compute_returns",
        "OnPolicyRunner.get_inference_policy",
    } <= set(result["patched"])
    assert_env_step_nesting(
        _spans(result), steps=result["steps"], decimation=2, version=version, kind="direct", resets=True, runner=True
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_missing_names_and_properties_one_warning(recorded, version):
    result = recorded[version]["warnings"]
    assert len(result["warnings"]) == 1
    msg = result["warnings"][0]
    for name in (
        "DirectRLEnv._no_such_hook",
        "InteractiveScene.no_such_method",
        "InteractiveScene.num_envs (property)",
        "DirectRLEnv.physics_dt (property)",
    ):
        assert name in msg
    assert result["num_envs_is_property"] and result["physics_dt_is_property"]  # never replaced
    assert not any("num_envs" in p or "physics_dt" in p for p in result["patched"])
    assert result["second_warnings"] == []


def test_skrl_and_rl_games_agents(recorded):
    libs = recorded["3.0.0"]["libraries"]  # the libraries do not depend on the Isaac Lab release
    assert libs["skrl"]["missing"] == []
    assert {"PPO.act", "PPO.record_transition", "PPO.update", "Agent.act"} <= set(libs["skrl"]["patched"])
    runner = set(libs["rl_games_runner"]["patched"])
    assert {
        "A2CBase.get_action_values",
        "A2CBase.discount_values",
        "A2CAgent.train_actor_critic",
        "DiscreteA2CAgent.train_actor_critic",
    } <= runner
    agent = libs["rl_games_agent"]
    assert agent["missing"] == [] and agent["advantages_shape"] == [3, 2, 1]
    assert [s[0] for s in agent["spans"]] == ["compute_returns"]  # a real rl_games GAE call, ranged


# --------------------------------------------------------------------------- zero-edit launch


@pytest.mark.parametrize("version", VERSIONS)
def test_run_unmodified_training_script(version):
    script = SUPPORT / "train_light.py"
    proc = deps.run(
        version, ["-m", "nvtxsim", "run", script, "--steps", "2", "--exit-code", "3"], extra_env={"NVTXSIM_QUIET": ""}
    )
    assert proc.returncode == 3, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("TRAIN_LIGHT "))
    info = json.loads(line.split(" ", 1)[1])
    assert info["name"] == "__main__" and info["argv"][1:] == ["--steps", "2", "--exit-code", "3"]
    assert info["steps"] == 2
    assert "nvtxsim: instrumented LightCameraTask" in proc.stderr
    assert "nvtxsim: instrumented OnPolicyRunner" in proc.stderr


# --------------------------------------------------------------------------- under real nsys


@pytest.mark.nsys
@needs_nsys
@pytest.mark.parametrize("version", VERSIONS)
def test_nsys_export_shows_the_phase_tree(version, tmp_path):
    """2.3.2: explicit instrument()/instrument_runner(); 3.0.0: zero-edit ``nvtxsim run``. Real Cartpole task."""
    out = tmp_path / "capture"
    prefix = NSYS + ["-o", str(out)]
    steps = 3
    if _major(version) == 2:
        deps.scenario(version, "runner", tmp_path, "--task", "cartpole", "--steps", str(steps), prefix=prefix)
    else:
        proc = deps.run(
            version,
            [
                "-m",
                "nvtxsim",
                "run",
                SUPPORT / "train_light.py",
                "--task",
                "Nvtxsim-Cartpole-Camera-Direct-v0",
                "--steps",
                str(steps),
            ],
            prefix=prefix,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    spans = from_export(str(out) + ".sqlite")
    assert spans, "no nvtxsim ranges in the export"
    assert_env_step_nesting(
        spans, steps=steps, decimation=2, version=version, kind="cartpole", resets=True, runner=True
    )
