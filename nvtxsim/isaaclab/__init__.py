"""Isaac Lab integration: NVTX phases around real Isaac Lab envs, sensors and RL runners, without editing them.

::

    import nvtxsim.isaaclab as nil

    env = gym.make("Isaac-Cartpole-v0", cfg=env_cfg)
    with nil.instrument(env):            # env step -> iteration, sim.step -> sim_step, ...
        runner = OnPolicyRunner(env, agent_cfg, log_dir=None, device="cuda:0")
        nil.instrument_runner(runner)    # PPO.act -> policy, PPO.update -> policy_update, ...
        runner.learn(100)

Zero edits: ``python -m nvtxsim run train.py --task ...`` (see :mod:`nvtxsim.isaaclab.auto`).
The phase map is data (:mod:`nvtxsim.isaaclab.phasemap`); ``nvtxsim isaaclab check``
verifies it against the installed Isaac Lab and ``nvtxsim isaaclab nsys-json`` writes
it as an nsys ``--python-functions-trace`` file. Nothing from Isaac Lab is imported
until an env or runner is instrumented.
"""

from nvtxsim.isaaclab.envs import instrument, unwrap_env
from nvtxsim.isaaclab.patching import IsaacLabInstrumentation
from nvtxsim.isaaclab.phasemap import CLASS_TARGETS, ENV_TARGETS, RUNNER_TARGETS, Target, all_targets, targets_for
from nvtxsim.isaaclab.resolve import detect_version
from nvtxsim.isaaclab.runners import instrument_runner

__all__ = [
    "instrument",
    "instrument_runner",
    "unwrap_env",
    "IsaacLabInstrumentation",
    "Target",
    "ENV_TARGETS",
    "CLASS_TARGETS",
    "RUNNER_TARGETS",
    "all_targets",
    "targets_for",
    "detect_version",
]
