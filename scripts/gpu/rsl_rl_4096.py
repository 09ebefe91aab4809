"""rsl_rl 5.x PPO training a 4096-env torch task, instrumented with ``nvtxsim.isaaclab.instrument_runner``.

The capture behind docs/isaaclab.md's step / learning-iteration views (issue 17): the real
``rsl-rl-lib`` ``OnPolicyRunner.learn`` loop (act -> env.step -> process_env_step, then
compute_returns and update) over a vectorised point-mass task written in torch. Besides the
runner's phases the env marks its own (``iteration`` = env.step with ``action``, ``sim_step`` ×
decimation, ``reward``, ``termination``, ``reset``, ``observation``), as an instrumented Isaac Lab
env would.

    python3 scripts/gpu/rsl_rl_4096.py [--device cuda] [--num-envs 4096] [--steps 24] [--iterations 5]

The GPU host has no ``tensorboard``: rsl_rl imports ``torch.utils.tensorboard.SummaryWriter``
unconditionally (a base class of its W&B/Neptune writers), and this script never writes logs
(``log_dir=None``), so a stand-in module is used when ``tensorboard`` is absent.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import types

import torch

import nvtxsim
import nvtxsim.isaaclab as nil


def _tensorboard_stand_in() -> None:
    """``torch.utils.tensorboard`` without the tensorboard package (imported, never used, by rsl_rl)."""
    if importlib.util.find_spec("tensorboard") is not None:
        return
    module = types.ModuleType("torch.utils.tensorboard")

    class SummaryWriter:  # noqa: D401 - a base class only; no log is written here
        def __init__(self, *args, **kwargs) -> None:
            raise RuntimeError("tensorboard is not installed (stand-in SummaryWriter)")

    module.SummaryWriter = SummaryWriter
    sys.modules["torch.utils.tensorboard"] = module


class PointMassTask:
    """An rsl_rl ``VecEnv``: ``num_envs`` point masses in ``dim`` dimensions steering to random targets."""

    def __init__(self, num_envs: int, device: str, *, dim: int = 8, decimation: int = 4, episode_length: int = 200):
        from tensordict import TensorDict

        self._td = TensorDict
        self.num_envs, self.num_actions, self.device = num_envs, dim, device
        self.max_episode_length, self.decimation, self.dt = episode_length, decimation, 0.02
        self.cfg: dict = {}
        g = torch.Generator(device="cpu").manual_seed(0)
        self.coupling = (torch.randn(dim, dim, generator=g) * 0.1).to(device)
        self.pos = torch.zeros(num_envs, dim, device=device)
        self.vel = torch.zeros_like(self.pos)
        self.target = torch.zeros_like(self.pos)
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long, device=device)
        self._reset(torch.arange(num_envs, device=device))
        self._obs = self._observe()

    def _reset(self, ids: torch.Tensor) -> None:
        n = len(ids)
        self.pos[ids] = torch.rand(n, self.num_actions, device=self.device) * 2 - 1
        self.vel[ids] = 0.0
        self.target[ids] = torch.rand(n, self.num_actions, device=self.device) * 2 - 1
        self.episode_length_buf[ids] = 0

    def _observe(self):
        obs = torch.cat([self.pos, self.vel, self.target - self.pos], dim=-1)
        return self._td({"policy": obs, "critic": obs}, batch_size=[self.num_envs])

    def get_observations(self):
        return self._obs

    def step(self, actions: torch.Tensor):
        with nvtxsim.phase("iteration"):
            with nvtxsim.phase("action"):
                force_in = actions.clamp(-1.0, 1.0) * 4.0
            for _ in range(self.decimation):
                with nvtxsim.phase("sim_step"):
                    force = force_in - 2.0 * self.pos - 0.5 * self.vel + torch.tanh(self.pos @ self.coupling)
                    self.vel.add_(force, alpha=self.dt)
                    self.pos.add_(self.vel, alpha=self.dt)
            with nvtxsim.phase("reward"):
                dist = (self.pos - self.target).square().sum(-1)
                reward = torch.exp(-dist) - 0.01 * actions.square().sum(-1)
            with nvtxsim.phase("termination"):
                self.episode_length_buf += 1
                time_outs = self.episode_length_buf >= self.max_episode_length
                dones = time_outs | (self.pos.abs().amax(-1) > 4.0)
            with nvtxsim.phase("reset"):
                ids = dones.nonzero(as_tuple=False).flatten()  # a host sync per step, as in Isaac Lab envs
                if len(ids):
                    self._reset(ids)
            with nvtxsim.phase("observation"):
                self._obs = self._observe()
        return self._obs, reward, dones.long(), {"time_outs": time_outs, "log": {}}


def runner_cfg(num_steps_per_env: int) -> dict:
    """An rsl-rl-lib 5.x OnPolicyRunner config (PPO, MLP actor/critic as in Isaac Lab's locomotion tasks)."""
    return {
        "num_steps_per_env": num_steps_per_env,
        "save_interval": 10_000,
        "check_for_nan": False,
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "logger": "tensorboard",
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": 5,
            "num_mini_batches": 4,
            "learning_rate": 1e-3,
            "schedule": "fixed",
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [256, 128, 64],
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
        },
        "critic": {"class_name": "MLPModel", "hidden_dims": [256, 128, 64]},
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--num-envs", type=int, default=4096)
    p.add_argument("--steps", type=int, default=24, help="env steps per learning iteration (num_steps_per_env)")
    p.add_argument("--iterations", type=int, default=5, help="learning iterations")
    args = p.parse_args()
    _tensorboard_stand_in()
    from rsl_rl.runners import OnPolicyRunner

    torch.manual_seed(0)
    env = PointMassTask(args.num_envs, args.device)
    runner = OnPolicyRunner(env, runner_cfg(args.steps), log_dir=None, device=args.device)
    handle = nil.instrument_runner(runner)
    t0 = time.perf_counter()
    runner.learn(num_learning_iterations=args.iterations)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    steps = args.iterations * args.steps
    print(
        "RSL_RL "
        + json.dumps(
            {
                "num_envs": args.num_envs,
                "steps_per_iteration": args.steps,
                "iterations": args.iterations,
                "seconds": round(seconds, 3),
                "env_steps_per_s": round(args.num_envs * steps / seconds),
                "patched": handle.patched,
                "idle": handle.idle,
                "recording": nvtxsim.is_recording(),
            }
        )
    )
    handle.restore()
    return 0


if __name__ == "__main__":
    sys.exit(main())
