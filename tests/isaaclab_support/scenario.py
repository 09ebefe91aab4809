"""Scenarios run in a subprocess with a given Isaac Lab on PYTHONPATH (tests only).

    python scenario.py NAME --out result.json [--record] [--steps N]

NAME: ``check`` (resolve the phase map), ``direct`` / ``manager`` (instrument a light
DirectRLEnv / ManagerBasedRLEnv, gym-wrapped, and step it), ``runner`` (an rsl_rl
OnPolicyRunner learning one iteration), ``warnings`` (missing entries and properties),
``cartpole`` (Isaac Lab's own CartpoleCameraEnv task over light objects),
``all`` (direct, manager, cartpole, runner, warnings and skrl / rl_games agents in one process).
With ``--record`` the ranges are recorded in-process; without it they go to whatever
profiler is attached (nsys). The result JSON holds what the test asserts on.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

import torch


def _spans(rec: Any) -> list:
    return [list(s) for s in rec.spans] if rec is not None else []


def _originals() -> dict:
    from isaaclab.envs import DirectRLEnv, ManagerBasedRLEnv
    from isaaclab.scene import InteractiveScene
    from isaaclab.sensors.sensor_base import SensorBase
    from isaaclab.sim import SimulationContext

    return {
        "DirectRLEnv.step": DirectRLEnv.__dict__["step"],
        "ManagerBasedRLEnv.step": ManagerBasedRLEnv.__dict__["step"],
        "SimulationContext.render": SimulationContext.__dict__["render"],
        "InteractiveScene.update": InteractiveScene.__dict__["update"],
        "SensorBase._update_outdated_buffers": SensorBase.__dict__["_update_outdated_buffers"],
    }


def _run_env(kind: str, steps: int, record: bool) -> dict:
    import gymnasium as gym
    import light
    from recorder import RangeRecorder

    import nvtxsim.isaaclab as nil

    env = {
        "direct": light.make_direct_env,
        "manager": light.make_manager_env,
        "cartpole": light.make_cartpole_camera_env,
    }[kind]()
    wrapped = gym.Wrapper(env)
    before = _originals()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = nil.instrument(wrapped)
    rec = RangeRecorder() if record else None
    if rec is not None:
        rec.__enter__()
    try:
        for _ in range(steps):
            wrapped.step(torch.zeros(light.N_ENVS, 1))
    finally:
        if rec is not None:
            rec.__exit__(None, None, None)
    patched = list(handle.patched)
    with handle:
        pass  # context manager exit restores
    after = _originals()
    return {
        "version": handle.version,
        "patched": patched,
        "missing": handle.missing,
        "warnings": [str(w.message) for w in caught],
        "restored": {k: after[k] is before[k] for k in before},
        "restored_task": "_get_rewards" in type(env).__dict__
        and not hasattr(type(env).__dict__["_get_rewards"], "__nvtxsim_phase__"),
        "spans": _spans(rec),
        "decimation": env.cfg.decimation,
        "steps": steps,
    }


def _run_runner(steps: int, record: bool, task: str = "direct", iterations: int = 1) -> dict:
    import light
    import light_rl
    from recorder import RangeRecorder

    import nvtxsim.isaaclab as nil

    env = light.make_cartpole_camera_env() if task == "cartpole" else light.make_direct_env()
    runner = light_rl.make_runner(env, num_steps_per_env=steps)
    rec = RangeRecorder() if record else None
    if rec is not None:
        rec.__enter__()  # instrument_runner installs nothing while nothing records
    handle = nil.instrument_runner(runner)
    try:
        runner.learn(iterations)
        policy = runner.get_inference_policy()
        with torch.inference_mode():
            policy(runner.env.get_observations())
    finally:
        if rec is not None:
            rec.__exit__(None, None, None)
    patched = list(handle.patched)
    handle.restore()
    return {
        "patched": patched,
        "missing": handle.missing,
        "spans": _spans(rec),
        "steps": steps,
        "iterations": iterations,
    }


def _run_libraries(record: bool) -> dict:
    """skrl and rl_games agents (made without __init__): what instrument_runner patches; one real rl_games call."""
    from recorder import RangeRecorder
    from rl_games.algos_torch.a2c_continuous import A2CAgent
    from rl_games.torch_runner import Runner
    from skrl.agents.torch.ppo import PPO

    import nvtxsim.isaaclab as nil

    out: dict = {}
    agent = object.__new__(PPO)
    h = nil.instrument_runner(agent)
    out["skrl"] = {"patched": list(h.patched), "missing": h.missing}
    h.restore()

    h = nil.instrument_runner(object.__new__(Runner))  # by class name: agents the runner creates later
    out["rl_games_runner"] = {"patched": list(h.patched), "missing": h.missing}
    h.restore()

    a2c = object.__new__(A2CAgent)
    a2c.__dict__.update(horizon_length=3, gamma=0.99, tau=0.95)
    rec = RangeRecorder() if record else None
    if rec is not None:
        rec.__enter__()
    h = nil.instrument_runner(a2c)
    try:
        n = 2
        advs = a2c.discount_values(
            torch.zeros(n), torch.zeros(n, 1), torch.zeros(3, n), torch.zeros(3, n, 1), torch.ones(3, n, 1)
        )
    finally:
        if rec is not None:
            rec.__exit__(None, None, None)
    out["rl_games_agent"] = {
        "patched": list(h.patched),
        "missing": h.missing,
        "spans": _spans(rec),
        "advantages_shape": list(advs.shape),
    }
    h.restore()
    return out


def _run_warnings() -> dict:
    import light

    import nvtxsim.isaaclab as nil
    from nvtxsim.isaaclab import phasemap as M

    env = light.make_direct_env()
    bogus = [
        M.Target("isaaclab.envs.direct_rl_env", "DirectRLEnv._no_such_hook", "reward", scope="task"),
        M.Target("isaaclab.scene.interactive_scene", "InteractiveScene.no_such_method", "scene.update"),
        M.Target("isaaclab.scene.interactive_scene", "InteractiveScene.num_envs", "scene.update"),  # a property
        M.Target("isaaclab.envs.direct_rl_env", "DirectRLEnv.physics_dt", "sim_step", scope="task"),  # property
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = nil.instrument(env, targets=M.ENV_TARGETS + M.CLASS_TARGETS + tuple(bogus))
    from isaaclab.scene import InteractiveScene

    result = {
        "warnings": [str(w.message) for w in caught if "nvtxsim" in str(w.message)],
        "missing": handle.missing,
        "num_envs_is_property": isinstance(InteractiveScene.__dict__["num_envs"], property),
        "physics_dt_is_property": isinstance(type(env).__mro__[1].__dict__["physics_dt"], property),
        "patched": handle.patched,
    }
    handle.restore()
    with warnings.catch_warnings(record=True) as again:  # the same names are not warned about twice
        warnings.simplefilter("always")
        nil.instrument(env, targets=M.ENV_TARGETS + M.CLASS_TARGETS + tuple(bogus)).restore()
    result["second_warnings"] = [str(w.message) for w in again if "nvtxsim" in str(w.message)]
    return result


def _run_check() -> dict:
    from nvtxsim.isaaclab.check import check
    from nvtxsim.isaaclab.resolve import detect_version

    version = detect_version()
    result = check(version)
    return {
        "version": version,
        "entries": [
            {"entry": r.target.dotted, "status": r.status, "detail": r.detail, "optional": r.target.optional}
            for r in result.results
        ],
        "failures": [r.target.dotted for r in result.failures()],
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("name", choices=("check", "direct", "manager", "cartpole", "runner", "warnings", "all"))
    p.add_argument("--task", choices=("direct", "cartpole"), default="direct", help="env of the runner scenario")
    p.add_argument("--out", required=True)
    p.add_argument("--record", action="store_true")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--iterations", type=int, default=1, help="learning iterations of the runner scenario")
    args = p.parse_args()
    if args.name == "check":
        result = _run_check()
    elif args.name in ("direct", "manager", "cartpole"):
        result = _run_env(args.name, args.steps, args.record)
    elif args.name == "runner":
        result = _run_runner(args.steps, args.record, args.task, args.iterations)
    elif args.name == "warnings":
        result = _run_warnings()
    else:  # one process for the in-process checks: imports dominate the cost
        result = {
            "direct": _run_env("direct", args.steps, args.record),
            "manager": _run_env("manager", args.steps, args.record),
            "cartpole": _run_env("cartpole", args.steps, args.record),
            "runner": _run_runner(args.steps, args.record),
            "warnings": _run_warnings(),
            "libraries": _run_libraries(args.record),
        }
    import nvtxsim

    result["backend"] = nvtxsim.backend_info()
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
