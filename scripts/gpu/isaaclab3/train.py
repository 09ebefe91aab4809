"""Train a real Isaac Lab 3.0 Cartpole task kitless (Newton/MJWarp physics), as a user's train script would.

Made to run unmodified under ``python -m nvtxsim run`` (zero-edit instrumentation) and ``nvtxsim profile``:
it imports nothing of nvtxsim. It follows Isaac Lab 3.0's own ``train`` entry points (task config from the
registry, presets resolved, ``gym.make``, the library's wrapper and runner) with the two changes an offline
host needs: the Cartpole robot comes from the newton wheel's copy of the same asset, and the ground plane
(a URL) is left out.

    python3 train.py --task Isaac-Cartpole-Direct --num_envs 4096 --library rsl_rl --max_iterations 20
    python3 train.py --task Isaac-Cartpole-Camera-Direct --num_envs 256 --library rsl_rl --renderer newton_renderer
    python3 train.py --task Isaac-Cartpole-Direct --library skrl --max_iterations 10

It prints one line ``train: ... ms_per_iteration=...`` at the end (wall time of the learning iterations
after the first, from the library's own loop), which scripts/gpu/isaaclab3/overhead.sh reads.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")  # no git binary on the GPU host


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="Isaac-Cartpole-Direct")
    p.add_argument("--num_envs", type=int, default=4096)
    p.add_argument("--library", choices=("rsl_rl", "skrl"), default="rsl_rl")
    p.add_argument("--max_iterations", type=int, default=20, help="learning iterations (skrl: rollouts)")
    p.add_argument("--renderer", default="", help="extra preset, e.g. newton_renderer for camera tasks")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log_dir", default="/tmp/il3_logs")
    p.add_argument("--device", default="cuda:0", help="cpu: one env only (CPU MuJoCo), for a dry run")
    return p.parse_args()


def _offline_cartpole_usd() -> str:
    """The newton wheel's Cartpole (same joints as Isaac Lab's), with the default prim Isaac Lab expects."""
    import newton

    src = Path(newton.__file__).parent / "examples" / "assets" / "cartpole_single_pendulum.usda"
    dst = Path(os.environ.get("IL3_ASSETS", "/tmp")) / "cartpole.usda"
    if not dst.exists():
        dst.write_text(src.read_text().replace('defaultPrim = "cartPole"', 'defaultPrim = "cartpole"'))
    return str(dst)


def _configs(args: argparse.Namespace) -> tuple[object, object]:
    from isaaclab_tasks.utils.hydra import resolve_presets
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    presets = ("newton_mjwarp",) + ((args.renderer,) if args.renderer else ())
    env_cfg = resolve_presets(load_cfg_from_registry(args.task, "env_cfg_entry_point"), selected=presets)
    agent_cfg = load_cfg_from_registry(args.task, f"{args.library}_cfg_entry_point")
    env_cfg.scene.num_envs = args.num_envs
    env_cfg.seed = args.seed
    env_cfg.sim.device = args.device
    robot = getattr(env_cfg.scene, "cartpole", None) or getattr(env_cfg.scene, "robot", None)
    robot.spawn.usd_path = _offline_cartpole_usd()
    if hasattr(env_cfg.scene, "ground"):
        env_cfg.scene.ground = None
    return env_cfg, agent_cfg


def _train_rsl_rl(env: object, agent_cfg: object, args: argparse.Namespace) -> float:
    import importlib.metadata

    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper, create_rsl_rl_runner, handle_deprecated_rsl_rl_cfg

    agent_cfg = handle_deprecated_rsl_rl_cfg(agent_cfg, importlib.metadata.version("rsl-rl-lib"))
    agent_cfg.max_iterations = args.max_iterations
    agent_cfg.seed = args.seed
    agent_cfg.device = args.device
    vec = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner = create_rsl_rl_runner(vec, agent_cfg, log_dir=args.log_dir)
    times: list[float] = []
    update = runner.alg.update

    def timed_update(*a: object, **kw: object) -> object:  # learning iterations end with the update
        out = update(*a, **kw)
        times.append(time.perf_counter())
        return out

    runner.alg.update = timed_update  # an instance attribute: nvtxsim's class patch stays underneath
    runner.learn(num_learning_iterations=args.max_iterations, init_at_random_ep_len=True)
    return (times[-1] - times[0]) / (len(times) - 1) * 1e3 if len(times) > 1 else float("nan")


def _train_skrl(env: object, agent_cfg: dict, args: argparse.Namespace) -> float:
    from isaaclab_rl.skrl import SkrlVecEnvWrapper
    from skrl.utils.runner.torch import Runner

    rollouts = agent_cfg["agent"]["rollouts"]
    agent_cfg["trainer"]["timesteps"] = args.max_iterations * rollouts
    agent_cfg["trainer"]["close_environment_at_exit"] = False
    agent_cfg["trainer"]["disable_progressbar"] = True
    agent_cfg["seed"] = args.seed
    agent_cfg["agent"]["experiment"]["directory"] = args.log_dir
    runner = Runner(SkrlVecEnvWrapper(env, ml_framework="torch"), agent_cfg)
    t0 = time.perf_counter()
    runner.run()
    return (time.perf_counter() - t0) / args.max_iterations * 1e3


def main() -> int:
    args = _args()
    import gymnasium as gym
    import isaaclab_tasks  # noqa: F401  (registers the tasks)

    t_start = time.perf_counter()
    env_cfg, agent_cfg = _configs(args)
    env = gym.make(args.task, cfg=env_cfg)
    t_env = time.perf_counter()
    train = _train_rsl_rl if args.library == "rsl_rl" else _train_skrl
    ms = train(env, agent_cfg, args)  # type: ignore[arg-type]
    print(
        f"train: task={args.task} library={args.library} num_envs={args.num_envs} "
        f"iterations={args.max_iterations} env_create_s={t_env - t_start:.1f} ms_per_iteration={ms:.1f}",
        flush=True,
    )
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
