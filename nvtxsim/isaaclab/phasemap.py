"""The Isaac Lab / RL-library phase map, as data.

Each :class:`Target` names one method (``module`` + ``qualname``) and the range it
gets. The map is shared by :func:`nvtxsim.isaaclab.instrument` (patching),
``nvtxsim isaaclab check`` (does every entry resolve against the installed
Isaac Lab?) and ``nvtxsim isaaclab nsys-json`` (the same map as an nsys
``--python-functions-trace`` file). Line references: docs "Isaac Lab phase map"
(2.3.2 and 3.0.0).

Scopes:

* ``task``: env methods that task classes override (``_get_rewards`` ...). They are
  patched on the class that *defines* them on ``type(env.unwrapped).__mro__``;
  ``module``/``qualname`` name the Isaac Lab base class where the hook is declared.
* ``class``: a method of a library class (scene, sim, managers, sensors, renderers).
* ``function``: a module-level function, patched in the module's namespace.

Kinds (how the range is named): ``phase`` (fixed name), ``sensor`` (readout of a
sensor: ``camera_readout`` or ``sensor_readout``, and the sensor's scene name where a
scene has several of that kind), ``events`` (``events.<mode>``),
``policy_factory`` (the returned inference policy is wrapped in ``policy``), ``loop``
(no range of its own: the call only begins/ends an RL loop level, ``phase`` names it).

:data:`LOOP_EVENTS` says which RL-library calls begin and end the loop levels ``step``,
``rollout`` and ``learning_iteration`` (:mod:`nvtxsim.isaaclab.loop`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nvtxsim import phases as P
from nvtxsim.isaaclab.loop import BEGIN, END, Event

#: Range names that are not standard phases: named sub-ranges.
SCENE_WRITE = "scene.write_data_to_sim"
SCENE_UPDATE = "scene.update"
SCENE_RESET = "scene.reset"
PHYSICS_MANAGER_STEP = "physics_manager.step"
RENDERER_READ_OUTPUT = "renderer.read_output"
SENSOR_READOUT = "sensor_readout"  # readout of a non-camera sensor (contact, IMU, frame transformer)
COMMANDS = "commands"
CURRICULUM = "curriculum"
EVENTS_PREFIX = "events"  # events.<mode>: events.interval, events.reset, ...
PROCESS_ENV_STEP = "process_env_step"
COMPUTE_RETURNS = "compute_returns"
RECORD_TRANSITION = "record_transition"

ALL_VERSIONS = (2, 3)


@dataclass(frozen=True)
class Target:
    """One patch point: ``module.qualname`` gets a range named ``phase``."""

    module: str
    qualname: str  # "Class.method" or "function"
    phase: str
    versions: tuple[int, ...] = ALL_VERSIONS  # Isaac Lab major versions that define it
    scope: str = "class"  # "task" | "class" | "function"
    kind: str = "phase"  # "phase" | "sensor" | "events" | "policy_factory" | "loop"
    optional: bool = False  # backend/library entry: used only where its package is in use; never warned about
    note: str = ""
    alternative: str = ""  # the attribute that replaces this one in other releases of the library ("update")
    inside: tuple[str, ...] = ()  # no range while one of these is open: it is the call's whole wrapper

    @property
    def owner(self) -> str | None:
        """Class name, or None for a module-level function."""
        return self.qualname.rpartition(".")[0] or None

    @property
    def attr(self) -> str:
        return self.qualname.rpartition(".")[2]

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.qualname}"

    @property
    def package(self) -> str:
        return self.module.split(".", 1)[0]

    def applies_to(self, version: int | None) -> bool:
        return version is None or version in self.versions


def _t(module: str, qualname: str, phase: str, **kw: object) -> Target:
    return Target(module, qualname, phase, **kw)  # type: ignore[arg-type]


_DIRECT = "isaaclab.envs.direct_rl_env"
_MARL = "isaaclab.envs.direct_marl_env"
_MB = "isaaclab.envs.manager_based_env"
_MBRL = "isaaclab.envs.manager_based_rl_env"

#: Env methods, patched on the defining class of type(env.unwrapped). ``step`` is the iteration.
ENV_TARGETS: tuple[Target, ...] = (
    # DirectRLEnv: 2.3.2 direct_rl_env.py:333-418, 3.0.0 :358-466
    _t(_DIRECT, "DirectRLEnv.step", P.ITERATION, scope="task"),
    _t(_DIRECT, "DirectRLEnv.reset", P.RESET, scope="task"),
    _t(_DIRECT, "DirectRLEnv.render", P.RENDER, scope="task", note="rgb_array frames (D2H per frame)"),
    _t(_DIRECT, "DirectRLEnv._pre_physics_step", P.ACTION, scope="task"),
    _t(_DIRECT, "DirectRLEnv._apply_action", P.ACTION, scope="task", note="per physics substep"),
    _t(_DIRECT, "DirectRLEnv._get_dones", P.TERMINATION, scope="task"),
    _t(_DIRECT, "DirectRLEnv._get_rewards", P.REWARD, scope="task"),
    _t(_DIRECT, "DirectRLEnv._reset_idx", P.RESET, scope="task"),
    _t(
        _DIRECT,
        "DirectRLEnv._reset_envs_from_buffer",
        P.RESET,
        versions=(3,),
        scope="task",
        note="nonzero sync + final obs + _reset_idx",
    ),
    _t(_DIRECT, "DirectRLEnv._get_observations", P.OBSERVATION, scope="task"),
    _t(_DIRECT, "DirectRLEnv._compute_observations", P.OBSERVATION, versions=(3,), scope="task"),
    # DirectMARLEnv: 2.3.2 direct_marl_env.py:340-428, 3.0.0 :360-468
    _t(_MARL, "DirectMARLEnv.step", P.ITERATION, scope="task"),
    _t(_MARL, "DirectMARLEnv.reset", P.RESET, scope="task"),
    _t(_MARL, "DirectMARLEnv.render", P.RENDER, scope="task"),
    _t(_MARL, "DirectMARLEnv.state", P.OBSERVATION, scope="task", note="called by wrappers, not by step"),
    _t(_MARL, "DirectMARLEnv._pre_physics_step", P.ACTION, scope="task"),
    _t(_MARL, "DirectMARLEnv._apply_action", P.ACTION, scope="task"),
    _t(_MARL, "DirectMARLEnv._get_dones", P.TERMINATION, scope="task"),
    _t(_MARL, "DirectMARLEnv._get_rewards", P.REWARD, scope="task"),
    _t(_MARL, "DirectMARLEnv._reset_idx", P.RESET, scope="task"),
    _t(_MARL, "DirectMARLEnv._get_observations", P.OBSERVATION, scope="task"),
    _t(_MARL, "DirectMARLEnv._compute_observations", P.OBSERVATION, versions=(3,), scope="task"),
    # ManagerBasedEnv: 2.3.2 manager_based_env.py:452-502, 3.0.0 :518-575
    _t(_MB, "ManagerBasedEnv.step", P.ITERATION, scope="task"),
    _t(_MB, "ManagerBasedEnv.reset", P.RESET, scope="task"),
    _t(_MB, "ManagerBasedEnv.reset_to", P.RESET, scope="task"),
    _t(_MB, "ManagerBasedEnv._reset_idx", P.RESET, scope="task"),
    # ManagerBasedRLEnv: 2.3.2 manager_based_rl_env.py:153-241, 3.0.0 :174-281 (reset is inherited)
    _t(_MBRL, "ManagerBasedRLEnv.step", P.ITERATION, scope="task"),
    _t(_MBRL, "ManagerBasedRLEnv.render", P.RENDER, scope="task"),
    _t(_MBRL, "ManagerBasedRLEnv._reset_idx", P.RESET, scope="task"),
)

_M = "isaaclab.managers"
_SENS = "isaaclab.sensors"

#: Library classes and functions, patched where they are defined.
CLASS_TARGETS: tuple[Target, ...] = (
    # Simulation: 2.3.2 sim/simulation_context.py step 541-583, render 585-631; 3.0.0 step 724-748, render 750-778
    _t("isaaclab.sim.simulation_context", "SimulationContext.step", P.SIM_STEP),
    _t("isaaclab.sim.simulation_context", "SimulationContext.render", P.RENDER),
    # Scene: interactive_scene.py (2.3.2 reset 443, write 465, update 479; 3.0.0 update 477-517)
    _t("isaaclab.scene.interactive_scene", "InteractiveScene.write_data_to_sim", SCENE_WRITE),
    _t("isaaclab.scene.interactive_scene", "InteractiveScene.update", SCENE_UPDATE),
    _t("isaaclab.scene.interactive_scene", "InteractiveScene.reset", SCENE_RESET),
    # Managers (isaaclab/managers/*.py)
    _t(f"{_M}.action_manager", "ActionManager.process_action", P.ACTION),
    _t(f"{_M}.action_manager", "ActionManager.apply_action", P.ACTION, note="per physics substep"),
    _t(f"{_M}.observation_manager", "ObservationManager.compute", P.OBSERVATION),
    _t(f"{_M}.reward_manager", "RewardManager.compute", P.REWARD),
    _t(f"{_M}.termination_manager", "TerminationManager.compute", P.TERMINATION),
    _t(f"{_M}.event_manager", "EventManager.apply", EVENTS_PREFIX, kind="events"),
    _t(f"{_M}.command_manager", "CommandManager.compute", COMMANDS),
    _t(f"{_M}.curriculum_manager", "CurriculumManager.compute", CURRICULUM),
    # Sensor readout: lazy, at the first .data access (2.3.2 sensor_base.py:354-363, 3.0.0 :421-426)
    _t(f"{_SENS}.sensor_base", "SensorBase._update_outdated_buffers", P.CAMERA_READOUT, kind="sensor"),
    _t(f"{_SENS}.camera.camera", "Camera._update_buffers_impl", P.CAMERA_READOUT, kind="sensor"),
    _t(
        f"{_SENS}.camera.tiled_camera",
        "TiledCamera._update_buffers_impl",
        P.CAMERA_READOUT,
        versions=(2,),
        kind="sensor",
        note="3.0: a deprecated alias of Camera",
    ),
    _t(
        f"{_SENS}.ray_caster.ray_caster",
        "RayCaster._update_buffers_impl",
        P.CAMERA_READOUT,
        versions=(2,),
        kind="sensor",
        note="3.0: a facade; see BaseRayCaster",
    ),
    _t(
        f"{_SENS}.ray_caster.ray_caster_camera",
        "RayCasterCamera._update_buffers_impl",
        P.CAMERA_READOUT,
        versions=(2,),
        kind="sensor",
    ),
    _t(
        f"{_SENS}.ray_caster.base_ray_caster",
        "BaseRayCaster._update_buffers_impl",
        P.CAMERA_READOUT,
        versions=(3,),
        kind="sensor",
    ),
    _t(
        f"{_SENS}.ray_caster.base_ray_caster_camera",
        "BaseRayCasterCamera._update_buffers_impl",
        P.CAMERA_READOUT,
        versions=(3,),
        kind="sensor",
    ),
    # 3.0 renderer-backed cameras: the RTX/warp render can run inside the readout
    _t("isaaclab.renderers.render_context", "RenderContext.render_into_camera", P.CAMERA_READOUT, versions=(3,)),
    _t(
        "isaaclab.renderers.render_context",
        "RenderContext.render_into_cameras",
        P.CAMERA_READOUT,
        versions=(3,),
        note="batched eager readout from scene.update",
    ),
    # 3.0 backends (used only where their package is imported)
    # A range of their own only when called outside SimulationContext.step, whose whole body they are.
    _t(
        "isaaclab_physx.physics.physx_manager",
        "PhysxManager.step",
        PHYSICS_MANAGER_STEP,
        versions=(3,),
        optional=True,
        inside=(P.SIM_STEP,),
    ),
    _t(
        "isaaclab_newton.physics.newton_manager",
        "NewtonManager.step",
        PHYSICS_MANAGER_STEP,
        versions=(3,),
        optional=True,
        note="CUDA-graph replay: measures a launch",
        inside=(P.SIM_STEP,),
    ),
    _t(
        "isaaclab_physx.renderers.isaac_rtx_renderer", "IsaacRtxRenderer.render", P.RENDER, versions=(3,), optional=True
    ),
    _t(
        "isaaclab_physx.renderers.isaac_rtx_renderer",
        "IsaacRtxRenderer.render_batch",
        P.RENDER,
        versions=(3,),
        optional=True,
    ),
    _t(
        "isaaclab_physx.renderers.isaac_rtx_renderer",
        "IsaacRtxRenderer.read_output",
        RENDERER_READ_OUTPUT,
        versions=(3,),
        optional=True,
    ),
    _t(
        "isaaclab_physx.renderers.isaac_rtx_renderer_utils",
        "ensure_isaac_rtx_render_update",
        P.RENDER,
        versions=(3,),
        scope="function",
        optional=True,
        note="pumps omni.kit.app update(): lazy RTX render",
    ),
    _t(
        "isaaclab_physx.renderers.isaac_rtx_renderer",
        "ensure_isaac_rtx_render_update",
        P.RENDER,
        versions=(3,),
        scope="function",
        optional=True,
        note="the renderer module's imported name",
    ),
    _t(
        "isaaclab_newton.renderers.newton_warp_renderer",
        "NewtonWarpRenderer.render",
        P.RENDER,
        versions=(3,),
        optional=True,
    ),
    _t(
        "isaaclab_newton.renderers.newton_warp_renderer",
        "NewtonWarpRenderer.read_output",
        RENDERER_READ_OUTPUT,
        versions=(3,),
        optional=True,
    ),
    _t("isaaclab_ov.renderers.ovrtx_renderer", "OVRTXRenderer.render", P.RENDER, versions=(3,), optional=True),
    _t("isaaclab_ov.renderers.ovrtx_renderer", "OVRTXRenderer.render_batch", P.RENDER, versions=(3,), optional=True),
    _t(
        "isaaclab_ov.renderers.ovrtx_renderer",
        "OVRTXRenderer.read_output",
        RENDERER_READ_OUTPUT,
        versions=(3,),
        optional=True,
    ),
)

#: RL libraries (by name; optional: a library is used only when installed). Versions do not apply.
RUNNER_TARGETS: tuple[Target, ...] = (
    # rsl_rl 3.0.1 (Isaac Lab 2.3) and 5.x (3.0): OnPolicyRunner.learn -> alg.act / process_env_step / compute_returns / update
    _t("rsl_rl.algorithms.ppo", "PPO.act", P.POLICY, optional=True),
    _t("rsl_rl.algorithms.ppo", "PPO.process_env_step", PROCESS_ENV_STEP, optional=True),
    _t("rsl_rl.algorithms.ppo", "PPO.compute_returns", COMPUTE_RETURNS, optional=True),
    _t("rsl_rl.algorithms.ppo", "PPO.update", P.POLICY_UPDATE, optional=True),
    _t("rsl_rl.algorithms.distillation", "Distillation.act", P.POLICY, optional=True),
    _t("rsl_rl.algorithms.distillation", "Distillation.process_env_step", PROCESS_ENV_STEP, optional=True),
    _t("rsl_rl.algorithms.distillation", "Distillation.update", P.POLICY_UPDATE, optional=True),
    _t(
        "rsl_rl.runners.on_policy_runner",
        "OnPolicyRunner.get_inference_policy",
        P.POLICY,
        kind="policy_factory",
        optional=True,
        note="play: the returned policy callable gets a policy range",
    ),
    _t(
        "skrl.agents.torch.base",
        "Agent.post_interaction",
        P.STEP,
        kind="loop",
        optional=True,
        note="ends the step (skrl eval calls the base class directly)",
    ),
    _t(
        "skrl.agents.torch.ppo.ppo",
        "PPO.post_interaction",
        P.STEP,
        kind="loop",
        optional=True,
        note="ends the step; calls update at the end of each rollout",
    ),
    # skrl 2.x (torch): Trainer.train -> agent.act / record_transition / post_interaction -> update
    _t("skrl.agents.torch.base", "Agent.act", P.POLICY, optional=True),
    _t("skrl.agents.torch.base", "Agent.record_transition", RECORD_TRANSITION, optional=True),
    _t(
        "skrl.agents.torch.base",
        "Agent.update",
        P.POLICY_UPDATE,
        optional=True,
        note="skrl >= 2",
        alternative="_update",
    ),
    _t(
        "skrl.agents.torch.base", "Agent._update", P.POLICY_UPDATE, optional=True, note="skrl 1.x", alternative="update"
    ),
    _t("skrl.agents.torch.ppo.ppo", "PPO.act", P.POLICY, optional=True),
    _t("skrl.agents.torch.ppo.ppo", "PPO.record_transition", RECORD_TRANSITION, optional=True),
    _t(
        "skrl.agents.torch.ppo.ppo",
        "PPO.update",
        P.POLICY_UPDATE,
        optional=True,
        note="skrl >= 2",
        alternative="_update",
    ),
    _t(
        "skrl.agents.torch.ppo.ppo",
        "PPO._update",
        P.POLICY_UPDATE,
        optional=True,
        note="skrl 1.x",
        alternative="update",
    ),
    # rl_games 1.6: train_epoch -> play_steps -> get_action_values / env_step / discount_values; train_actor_critic
    _t("rl_games.common.a2c_common", "A2CBase.get_action_values", P.POLICY, optional=True),
    _t("rl_games.common.a2c_common", "A2CBase.discount_values", COMPUTE_RETURNS, optional=True),
    _t("rl_games.algos_torch.a2c_continuous", "A2CAgent.train_actor_critic", P.POLICY_UPDATE, optional=True),
    _t("rl_games.algos_torch.a2c_discrete", "DiscreteA2CAgent.train_actor_critic", P.POLICY_UPDATE, optional=True),
    _t("rl_games.common.a2c_common", "ContinuousA2CBase.train_epoch", P.LEARNING_ITERATION, kind="loop", optional=True),
    _t("rl_games.common.a2c_common", "DiscreteA2CBase.train_epoch", P.LEARNING_ITERATION, kind="loop", optional=True),
    _t("rl_games.common.a2c_common", "A2CBase.play_steps", P.ROLLOUT, kind="loop", optional=True),
    _t("rl_games.common.a2c_common", "A2CBase.play_steps_rnn", P.ROLLOUT, kind="loop", optional=True),
    _t(
        "rl_games.common.a2c_common",
        "A2CBase.get_values",
        P.STEP,
        kind="loop",
        optional=True,
        note="bootstrap values after the last step: ends it",
    ),
    # The training loops themselves: every level ends when one starts and when it returns or raises
    # (an exception inside env.step), so no range spans the code between two calls.
    _t(
        "rsl_rl.runners.on_policy_runner",
        "OnPolicyRunner.learn",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "rsl_rl.runners.distillation_runner",
        "DistillationRunner.learn",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "skrl.trainers.torch.base",
        "Trainer.train",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "skrl.trainers.torch.base",
        "Trainer.eval",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "skrl.trainers.torch.sequential",
        "SequentialTrainer.train",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "skrl.trainers.torch.sequential",
        "SequentialTrainer.eval",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "rl_games.common.a2c_common",
        "ContinuousA2CBase.train",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
    _t(
        "rl_games.common.a2c_common",
        "DiscreteA2CBase.train",
        P.LEARNING_ITERATION,
        kind="loop",
        optional=True,
        note="ends the loop levels on entry and exit",
    ),
)

#: Method name -> range (None: no range, loop events only), patched on whatever class defines it for an
#: RL algorithm/agent instance.
RUNNER_METHODS: dict[str, dict[str, str | None]] = {
    "rsl_rl": {
        "act": P.POLICY,
        "process_env_step": PROCESS_ENV_STEP,
        "compute_returns": COMPUTE_RETURNS,
        "update": P.POLICY_UPDATE,
    },
    "skrl": {
        "act": P.POLICY,
        "record_transition": RECORD_TRANSITION,
        "update": P.POLICY_UPDATE,
        "_update": P.POLICY_UPDATE,
        "post_interaction": None,
    },
    "rl_games": {
        "get_action_values": P.POLICY,
        "discount_values": COMPUTE_RETURNS,
        "train_actor_critic": P.POLICY_UPDATE,
        "train_epoch": None,
        "play_steps": None,
        "play_steps_rnn": None,
        "get_values": None,
    },
}

_STEP_BEGINS: tuple[Event | None, Event | None] = ((BEGIN, P.STEP), None)
_UPDATE: tuple[Event | None, Event | None] = ((END, P.ROLLOUT), (END, P.LEARNING_ITERATION))
#: A training loop (``learn``, ``train``, ``eval``): every level ends on entry and on exit, returned or raised.
_LOOP: tuple[Event | None, Event | None] = ((END, P.LEARNING_ITERATION), (END, P.LEARNING_ITERATION))
#: The training loops, patched on their classes only (runner/trainer classes, not algorithm instances).
TRAINING_LOOPS: dict[str, tuple[str, ...]] = {"rsl_rl": ("learn",), "skrl": ("train", "eval"), "rl_games": ("train",)}

#: Library -> method -> (event before the call, event after it): where steps, rollouts and learning
#: iterations begin and end. rsl_rl 5.x and skrl 2.x have no function per step or per learning
#: iteration (their loops live in ``learn()`` / ``Trainer.train()``): a step runs from the policy's
#: action to the processing of the transition, a learning iteration from the first action after an
#: update to the end of that update. rl_games has both (``train_epoch``, ``play_steps``); its step
#: runs from one action to the next (the loop body's bookkeeping included).
LOOP_EVENTS: dict[str, dict[str, tuple[Event | None, Event | None]]] = {
    "rsl_rl": {
        "act": _STEP_BEGINS,
        "process_env_step": (None, (END, P.STEP)),
        "compute_returns": ((END, P.ROLLOUT), None),
        "update": _UPDATE,
        "learn": _LOOP,
    },
    "skrl": {
        "act": _STEP_BEGINS,
        "post_interaction": (None, (END, P.STEP)),
        "update": _UPDATE,
        "_update": _UPDATE,
        "train": _LOOP,
        "eval": _LOOP,
    },
    "rl_games": {
        "train_epoch": ((BEGIN, P.LEARNING_ITERATION), (END, P.LEARNING_ITERATION)),
        "play_steps": ((BEGIN, P.ROLLOUT), (END, P.ROLLOUT)),
        "play_steps_rnn": ((BEGIN, P.ROLLOUT), (END, P.ROLLOUT)),
        "get_action_values": _STEP_BEGINS,
        "get_values": ((END, P.STEP), None),
        "discount_values": ((END, P.STEP), None),
        "train": _LOOP,
    },
}


def describe(t: Target) -> str:
    """What an entry records: its range and the loop levels it begins or ends (``policy; begins step``)."""
    events = LOOP_EVENTS.get(t.package, {}).get(t.attr) if t.owner else None
    parts = [] if t.kind == "loop" else [t.phase]
    if events == _LOOP:
        return "ends every loop level on entry and exit"
    parts += [f"{ev[0]}s {ev[1]}" for ev in (events or ()) if ev is not None]
    return "; ".join(parts)


#: Env base classes: (module, class name).
ENV_CLASSES: tuple[tuple[str, str], ...] = (
    (_DIRECT, "DirectRLEnv"),
    (_MARL, "DirectMARLEnv"),
    (_MB, "ManagerBasedEnv"),
    (_MBRL, "ManagerBasedRLEnv"),
)


def all_targets() -> tuple[Target, ...]:
    return ENV_TARGETS + CLASS_TARGETS + RUNNER_TARGETS


def targets_for(version: int | None, targets: Iterable[Target] | None = None) -> list[Target]:
    """The entries that apply to Isaac Lab ``version`` (None: all)."""
    return [t for t in (all_targets() if targets is None else targets) if t.applies_to(version)]


def is_camera_like(cls: type) -> bool:
    """Cameras and ray casters: their readout is ``camera_readout``; other sensors get ``sensor_readout``."""
    return any("Camera" in k.__name__ or "RayCaster" in k.__name__ for k in getattr(cls, "__mro__", ()))
