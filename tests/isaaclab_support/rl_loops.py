"""Real skrl 2.x and rl_games 1.6 training loops over a tiny torch vectorised env, instrumented (tests only).

    python rl_loops.py {skrl,rl_games} --out result.json [--record] [--envs N] [--steps S] [--iterations I]

``instrument_runner`` is given the library's trainer/agent as a training script would hold it
(skrl ``SequentialTrainer``; rl_games agent built by its ``Runner``), then the library trains for
``iterations`` learning iterations of ``steps`` env steps. With ``--record`` the ranges are
recorded in-process (``recorder.RangeRecorder``); without it they go to the attached profiler
(nsys). rsl_rl 5.x is exercised by ``scripts/gpu/rsl_rl_4096.py --device cpu``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any

import gymnasium
import torch
from torch import nn

import nvtxsim
import nvtxsim.isaaclab as nil

OBS, ACT = 4, 1


class TinyVecEnv:
    """``num_envs`` 1-D point masses: the env step is an ``iteration`` range, as nvtxsim would make it."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs, self.device = num_envs, "cpu"
        self.observation_space = gymnasium.spaces.Box(-10.0, 10.0, (OBS,))
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (ACT,))
        self.state = torch.zeros(num_envs, OBS)
        self.t = torch.zeros(num_envs, dtype=torch.long)
        self.steps = 0

    def step(self, actions: torch.Tensor) -> tuple:
        with nvtxsim.phase("iteration"):
            self.steps += 1
            self.state[:, 1] += 0.1 * actions.reshape(self.num_envs, -1)[:, 0]
            self.state[:, 0] += 0.1 * self.state[:, 1]
            self.t += 1
            reward = -self.state[:, 0].abs()
            truncated = self.t >= 5
            terminated = self.state[:, 0].abs() > 5
            done = terminated | truncated
            self.state[done] = 0.0
            self.t[done] = 0
            return self.state.clone(), reward, terminated, truncated


def _mlp(n_in: int, n_out: int) -> nn.Module:
    return nn.Sequential(nn.Linear(n_in, 8), nn.ELU(), nn.Linear(8, n_out))


def train_skrl(core: TinyVecEnv, steps: int, iterations: int) -> Any:
    from skrl.agents.torch.ppo import PPO
    from skrl.envs.wrappers.torch.base import Wrapper
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
    from skrl.trainers.torch import SequentialTrainer

    class Env(Wrapper):
        def reset(self):
            return core.state.clone(), {}

        def step(self, actions):
            obs, reward, terminated, truncated = core.step(actions)
            return obs, reward.unsqueeze(-1), terminated.unsqueeze(-1), truncated.unsqueeze(-1), {}

        def state(self):
            return None

        def render(self, *args, **kwargs):
            return None

        def close(self):
            return None

    class Policy(GaussianMixin, Model):
        def __init__(self, env):
            Model.__init__(self, observation_space=env.observation_space, action_space=env.action_space, device="cpu")
            GaussianMixin.__init__(self)
            self.net, self.log_std = _mlp(OBS, ACT), nn.Parameter(torch.zeros(ACT))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {"log_std": self.log_std}

    class Value(DeterministicMixin, Model):
        def __init__(self, env):
            Model.__init__(self, observation_space=env.observation_space, action_space=env.action_space, device="cpu")
            DeterministicMixin.__init__(self)
            self.net = _mlp(OBS, 1)

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    env = Env(core)
    agent = PPO(
        models={"policy": Policy(env), "value": Value(env)},
        memory=RandomMemory(memory_size=steps, num_envs=core.num_envs, device="cpu"),
        observation_space=env.observation_space,
        action_space=env.action_space,
        device="cpu",
        cfg={
            "rollouts": steps,
            "learning_epochs": 1,
            "mini_batches": 1,
            "experiment": {
                "directory": tempfile.mkdtemp(prefix="nvtxsim-skrl-"),
                "write_interval": 0,
                "checkpoint_interval": 0,
            },
        },
    )
    trainer = SequentialTrainer(
        env=env, agents=agent, cfg={"timesteps": steps * iterations, "headless": True, "disable_progressbar": True}
    )
    handle = nil.instrument_runner(trainer)
    trainer.train()
    return handle


def train_rl_games(core: TinyVecEnv, steps: int, iterations: int) -> Any:
    from rl_games.common import env_configurations, vecenv
    from rl_games.torch_runner import Runner

    class Env(vecenv.IVecEnv):
        def step(self, actions):
            obs, reward, terminated, truncated = core.step(actions)
            return obs, reward, terminated | truncated, {"time_outs": truncated}

        def reset(self):
            return core.state.clone()

        def get_number_of_agents(self):
            return 1

        def get_env_info(self):
            return {"observation_space": core.observation_space, "action_space": core.action_space}

    vecenv.register("nvtxsim_tiny", lambda config_name, num_actors, **kwargs: Env())
    env_configurations.register("nvtxsim_tiny", {"vecenv_type": "nvtxsim_tiny", "env_creator": lambda **kw: Env()})
    n = core.num_envs
    params = {
        "seed": 0,
        "algo": {"name": "a2c_continuous"},
        "model": {"name": "continuous_a2c_logstd"},
        "network": {
            "name": "actor_critic",
            "separate": False,
            "space": {
                "continuous": {
                    "mu_activation": "None",
                    "sigma_activation": "None",
                    "mu_init": {"name": "default"},
                    "sigma_init": {"name": "const_initializer", "val": 0},
                    "fixed_sigma": True,
                }
            },
            "mlp": {"units": [8], "activation": "elu", "initializer": {"name": "default"}},
        },
        "config": {
            "name": "tiny",
            "env_name": "nvtxsim_tiny",
            "device": "cpu",
            "device_name": "cpu",
            "ppo": True,
            "multi_gpu": False,
            "mixed_precision": False,
            "normalize_input": False,
            "normalize_value": False,
            "value_bootstrap": True,
            "num_actors": n,
            "reward_shaper": {},
            "normalize_advantage": True,
            "gamma": 0.99,
            "tau": 0.95,
            "learning_rate": 1e-3,
            "lr_schedule": None,
            "kl_threshold": 0.01,
            "score_to_win": 1e9,
            "max_epochs": iterations,
            "save_best_after": 10**6,
            "save_frequency": 0,
            "print_stats": False,
            "grad_norm": 1.0,
            "entropy_coef": 0.0,
            "truncate_grads": True,
            "e_clip": 0.2,
            "horizon_length": steps,
            "minibatch_size": n * steps,
            "mini_epochs": 1,
            "critic_coef": 2,
            "clip_value": True,
            "bounds_loss_coef": 0.0001,
            "train_dir": tempfile.mkdtemp(prefix="nvtxsim-rl-games-"),
        },
    }
    runner = Runner()
    runner.load({"params": params})
    agent = runner.algo_factory.create(runner.algo_name, base_name="run", params=runner.params)
    handle = nil.instrument_runner(agent)
    agent.train()
    return handle


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("library", choices=("skrl", "rl_games"))
    p.add_argument("--out", required=True)
    p.add_argument("--record", action="store_true")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=4, help="env steps per learning iteration")
    p.add_argument("--iterations", type=int, default=3, help="learning iterations")
    args = p.parse_args()
    from recorder import RangeRecorder

    core = TinyVecEnv(args.envs)
    rec = RangeRecorder() if args.record else None
    if rec is not None:
        rec.__enter__()
    try:
        train = train_skrl if args.library == "skrl" else train_rl_games
        handle = train(core, args.steps, args.iterations)
    finally:
        if rec is not None:
            rec.__exit__(None, None, None)
    result = {
        "library": args.library,
        "patched": handle.patched,
        "missing": handle.missing,
        "idle": handle.idle,
        "env_steps": core.steps,
        "steps": args.steps,
        "iterations": args.iterations,
        "envs": args.envs,
        "spans": [list(s) for s in rec.spans] if rec is not None else [],
        "payloads": rec.payloads if rec is not None else {},
        "backend": nvtxsim.backend_info(),
    }
    handle.restore()
    with open(args.out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
