"""A training script with no nvtxsim in it: the zero-edit target of ``python -m nvtxsim run`` (tests only).

Shaped like Isaac Lab's ``scripts/reinforcement_learning/rsl_rl/train.py``: it builds the
env through the gymnasium registry, wraps it for rsl_rl, creates an ``OnPolicyRunner``
and learns. (Where a real script launches Kit with ``AppLauncher``, Isaac Lab 2.3 tests
get Kit stand-ins from ``kit_site/sitecustomize.py``.)
"""

import argparse
import json
import sys

import gymnasium as gym
import light
import light_rl

parser = argparse.ArgumentParser()
parser.add_argument("--task", default="Nvtxsim-Light-Camera-Direct-v0")
parser.add_argument("--steps", type=int, default=2, help="env steps per learning iteration")
parser.add_argument("--iterations", type=int, default=1)
parser.add_argument("--exit-code", type=int, default=0)
args = parser.parse_args()

gym.register(
    id="Nvtxsim-Light-Camera-Direct-v0",
    entry_point=light.make_direct_env,
    disable_env_checker=True,
    order_enforce=False,
)
gym.register(
    id="Nvtxsim-Cartpole-Camera-Direct-v0",
    entry_point=light.make_cartpole_camera_env,
    disable_env_checker=True,
    order_enforce=False,
)
env = gym.make(args.task)
runner = light_rl.make_runner(env, num_steps_per_env=args.steps)
runner.learn(args.iterations)

print(
    "TRAIN_LIGHT " + json.dumps({"name": __name__, "argv": sys.argv, "steps": int(env.unwrapped.common_step_counter)})
)
sys.exit(args.exit_code)
