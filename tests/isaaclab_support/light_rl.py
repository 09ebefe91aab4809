"""A real rsl_rl OnPolicyRunner around the light Isaac Lab env (tests only).

``LightVecEnv`` is the smallest rsl_rl ``VecEnv`` over an Isaac Lab env (what
``isaaclab_rl.rsl_rl.RslRlVecEnvWrapper`` does in a real run: it holds the env and
forwards ``step``). The runner config is minimal for rsl-rl-lib 3.0.1 (Isaac Lab 2.3)
and 5.x (Isaac Lab 3.0).
"""

from __future__ import annotations

from typing import Any

import torch


def _rsl_rl_major() -> int:
    import rsl_rl

    try:
        from importlib.metadata import version

        return int(version("rsl-rl-lib").split(".")[0])
    except Exception:
        return 5 if hasattr(rsl_rl, "models") or _has_module("rsl_rl.models") else 3


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class LightVecEnv:
    """rsl_rl VecEnv over an Isaac Lab env (``env`` may be gym-wrapped)."""

    def __init__(self, env: Any) -> None:
        from tensordict import TensorDict

        self._td = TensorDict
        self.env = env
        self.unwrapped = env.unwrapped
        self.num_envs = self.unwrapped.scene.num_envs
        self.num_actions = 1
        self.max_episode_length = 100
        self.device = "cpu"
        self.cfg = {}
        self.episode_length_buf = self.unwrapped.episode_length_buf
        self._obs = self._wrap(self.unwrapped._get_observations())

    def _wrap(self, obs: dict) -> Any:
        flat = obs["policy"].float().reshape(self.num_envs, -1)
        return self._td({"policy": flat, "critic": flat}, batch_size=[self.num_envs])

    def get_observations(self) -> Any:
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple:
        obs, rew, terminated, truncated, extras = self.env.step(actions)
        self._obs = self._wrap(obs)
        dones = (terminated | truncated).to(torch.long)
        return self._obs, rew, dones, {"time_outs": truncated, "log": {}}


def runner_cfg(num_steps_per_env: int = 2) -> dict:
    """Minimal OnPolicyRunner config for the installed rsl-rl-lib."""
    algorithm = {
        "class_name": "PPO",
        "num_learning_epochs": 1,
        "num_mini_batches": 1,
        "learning_rate": 1e-3,
        "schedule": "fixed",
    }
    if _rsl_rl_major() >= 5:
        return {
            "num_steps_per_env": num_steps_per_env,
            "save_interval": 1000,
            "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
            "algorithm": algorithm,
            "logger": "tensorboard",
            "check_for_nan": False,
            "actor": {
                "class_name": "MLPModel",
                "hidden_dims": [8],
                "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
            },
            "critic": {"class_name": "MLPModel", "hidden_dims": [8]},
        }
    return {
        "num_steps_per_env": num_steps_per_env,
        "save_interval": 1000,
        "obs_groups": {"policy": ["policy"], "critic": ["critic"]},
        "algorithm": algorithm,
        "empirical_normalization": None,
        "policy": {
            "class_name": "ActorCritic",
            "actor_hidden_dims": [8],
            "critic_hidden_dims": [8],
            "activation": "elu",
            "init_noise_std": 1.0,
        },
    }


def make_runner(env: Any, num_steps_per_env: int = 2, log_dir: str | None = None) -> Any:
    """An OnPolicyRunner; logs (TensorBoard, code state) go to ``log_dir`` (a new temporary folder by default)."""
    import tempfile

    from rsl_rl.runners import OnPolicyRunner

    log_dir = log_dir or tempfile.mkdtemp(prefix="nvtxsim-rsl-rl-")
    return OnPolicyRunner(LightVecEnv(env), runner_cfg(num_steps_per_env), log_dir=log_dir, device="cpu")
