"""Lightweight sim / scene / sensor / manager objects around the REAL Isaac Lab env classes (tests only).

The env ``step()`` bodies, ``InteractiveScene`` methods, ``SensorBase`` readout and
(3.0) ``SimulationContext.step/render`` and ``RenderContext`` are Isaac Lab's own code;
only what needs Kit/PhysX/RTX is replaced by small subclasses with trivial bodies
(instances are made without ``__init__``; envs get ``_is_closed = True`` so the real
``__del__`` does not call ``close()``). Works with Isaac Lab 2.3.x (with
:mod:`kit_stubs` installed first) and 3.0.x.
"""

from __future__ import annotations

import builtins
from types import SimpleNamespace as NS
from typing import Any

import torch

N_ENVS = 4
PRIM = "/World/envs/env_.*/Camera"


def work(n: int = 3) -> torch.Tensor:
    """A little CPU work so every range has a width."""
    x = torch.full((48, 48), 0.01)
    for _ in range(n):
        x = torch.tanh(x @ x)
    return x


def _new(cls: type, **attrs: Any) -> Any:
    obj = object.__new__(cls)
    obj.__dict__.update(attrs)
    return obj


def major() -> int:
    import isaaclab

    return 3 if str(getattr(isaaclab, "__version__", "0")).startswith("3") else 2


class _Quiet:
    """No real ``__del__`` (it would try to unsubscribe Kit callbacks)."""

    def __del__(self) -> None:
        pass


class LightAsset:
    """Stands in for an Articulation: what InteractiveScene calls on its assets."""

    def write_data_to_sim(self) -> None:
        work(1)

    def update(self, dt: float) -> None:
        work(1)

    def reset(self, env_ids: Any = None) -> None:
        pass


# --------------------------------------------------------------------------- sim


def make_sim(dt: float) -> Any:
    from isaaclab.sim import SimulationContext

    if major() == 2:

        class LightApp:
            def update(self) -> None:  # where Kit renders RTX (SimulationContext.render -> app.update())
                work(2)

        class LightSim(_Quiet, SimulationContext):
            device = "cpu"

            def step(self, render: bool = True) -> None:  # PhysX simulate + fetch
                self.physics_steps += 1
                work(2)

            def has_gui(self) -> bool:
                return False

            def has_rtx_sensors(self) -> bool:
                return True

            def is_playing(self) -> bool:
                return True

            def forward(self) -> None:
                pass

            def set_setting(self, name: str, value: Any) -> None:
                pass

        builtins.ISAACLAB_CALLBACK_EXCEPTION = getattr(builtins, "ISAACLAB_CALLBACK_EXCEPTION", None)
        return _new(
            LightSim, _app=LightApp(), render_mode=SimulationContext.RenderMode.PARTIAL_RENDERING, physics_steps=0
        )

    from isaaclab.physics import PhysicsManager
    from isaaclab.renderers.render_context import RenderContext

    class LightPhysicsManager(PhysicsManager):  # used as a class, like PhysxManager / NewtonManager
        steps = 0

        @classmethod
        def step(cls) -> None:
            cls.steps += 1
            work(2)

        @classmethod
        def wait_for_playing(cls) -> None:
            pass

        @classmethod
        def pre_render(cls) -> None:
            pass

        @classmethod
        def after_visualizers_render(cls) -> None:
            pass

    class LightSim(_Quiet, SimulationContext):
        device = "cpu"
        is_rendering = True  # shadows the property: GUI/RTX sensors on

    def kit_render(_event: Any) -> None:  # a render callback (Kit's app pump in a real run)
        work(2)

    return _new(
        LightSim,
        physics_manager=LightPhysicsManager,
        _visualizers=[],
        _physics_step_count=0,
        _render_callbacks={0: (0, kit_render)},
        _render_generation=0,
        _viz_dt=dt,
        _reset_requested=False,
        _render_context=RenderContext([]),
    )


# --------------------------------------------------------------------------- sensors and scene


def make_renderer() -> Any:
    """3.0: a BaseRenderer subclass (like NewtonWarpRenderer) whose render/read_output do a little work."""
    from isaaclab.renderers.base_renderer import BaseRenderer

    def _noop(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    body = {name: _noop for name in BaseRenderer.__abstractmethods__}

    def render(self: Any, render_data: Any) -> None:
        work(3)

    def read_output(self: Any, render_data: Any, camera_data: Any) -> None:
        camera_data.output["rgb"].fill_(1.0)

    body.update(render=render, read_output=read_output, __module__=__name__)
    return type("LightWarpRenderer", (BaseRenderer,), body)()


def make_camera(sim: Any) -> Any:
    """A camera whose buffers come from the real SensorBase readout path (lazy, on ``.data``)."""
    data = NS(output={"rgb": torch.zeros(N_ENVS, 8, 8, 3)})
    cfg = NS(prim_path=PRIM, update_period=0.0, history_length=0, debug_vis=False)
    if major() == 2:
        from isaaclab.sensors import TiledCamera

        class LightTiledCamera(_Quiet, TiledCamera):
            def _update_buffers_impl(self, env_ids: Any) -> None:  # annotator.get_data() + copies in a real run
                work(2)
                self._data.output["rgb"][env_ids] = 1.0

            def reset(self, env_ids: Any = None) -> None:
                ids = slice(None) if env_ids is None else env_ids
                self._timestamp[ids] = 0.0
                self._is_outdated[ids] = True

        return _new(
            LightTiledCamera,
            cfg=cfg,
            _data=data,
            _is_outdated=torch.ones(N_ENVS, dtype=torch.bool),
            _timestamp=torch.zeros(N_ENVS),
            _timestamp_last_update=torch.zeros(N_ENVS),
            _is_visualizing=False,
            _is_initialized=True,
            _num_envs=N_ENVS,
        )

    from isaaclab.sensors import Camera

    class LightCamera(_Quiet, Camera):
        def update(self, dt: float, force_recompute: bool = False) -> None:  # real one: warp timestamp kernels
            self._data_dirty = True
            if force_recompute:
                self._update_outdated_buffers(force_recompute=True)

        def _mark_buffers_updated(self) -> None:
            self._data_dirty = False

        def _update_buffers_impl(self, env_mask: Any) -> None:  # as Camera._update_buffers_impl: lazy render
            work(1)
            self._sim.render_context.render_into_camera(
                self._renderer, self._render_data, self._data, self._sim.get_physics_step_count()
            )

        def reset(self, env_ids: Any = None, env_mask: Any = None) -> None:
            self._data_dirty = True

    return _new(
        LightCamera,
        cfg=cfg,
        _data=data,
        _data_dirty=True,
        _is_outdated=None,
        _sim=sim,
        _renderer=make_renderer(),
        _render_data=NS(),
        _is_initialized=True,
        _num_envs=N_ENVS,
    )


def make_scene(camera: Any) -> Any:
    from isaaclab.scene import InteractiveScene

    class LightScene(_Quiet, InteractiveScene):
        pass

    fields = dict(
        _articulations={"robot": LightAsset()},
        _deformable_objects={},
        _rigid_objects={},
        _surface_grippers={},
        _rigid_object_collections={},
        _cable_objects={},
        _sensors={"camera": camera},
        cfg=NS(lazy_sensor_update=True, num_envs=N_ENVS),
    )
    return _new(LightScene, **fields)


def _env_fields(decimation: int, sim: Any, scene: Any) -> dict:
    cfg = NS(
        decimation=decimation,
        sim=NS(render_interval=decimation, dt=0.01),
        action_noise_model=None,
        observation_noise_model=None,
        events=None,
        num_rerenders_on_reset=1,
        compute_final_obs=False,
        episode_length_s=1.0,
    )
    return dict(
        cfg=cfg,
        sim=sim,
        scene=scene,
        _sim_step_counter=0,
        common_step_counter=0,
        episode_length_buf=torch.zeros(N_ENVS, dtype=torch.long),
        reset_terminated=torch.zeros(N_ENVS, dtype=torch.bool),
        reset_time_outs=torch.zeros(N_ENVS, dtype=torch.bool),
        reset_buf=torch.zeros(N_ENVS, dtype=torch.bool),
        reward_buf=torch.zeros(N_ENVS),
        extras={},
        _is_closed=True,
        _physics_handles_decimation=False,
        render_enabled=True,
        has_rtx_sensors=True,
        video_recorders=[],
    )


# --------------------------------------------------------------------------- envs


def direct_task_class() -> type:
    """A DirectRLEnv task (camera observations) overriding the hooks, as Isaac Lab tasks do."""
    from isaaclab.envs import DirectRLEnv

    class LightCameraTask(DirectRLEnv):
        def _pre_physics_step(self, actions: torch.Tensor) -> None:
            self.actions = actions.clone()

        def _apply_action(self) -> None:
            work(1)

        def _get_observations(self) -> dict:
            rgb = self._camera.data.output["rgb"]  # lazy sensor readout happens here
            return {"policy": rgb.reshape(N_ENVS, -1)[:, :4]}

        def _get_rewards(self) -> torch.Tensor:
            work(1)
            return torch.ones(N_ENVS)

        def _get_dones(self) -> tuple:
            terminated = self.episode_length_buf >= 2  # every env resets every 2nd step
            return terminated, torch.zeros_like(terminated)

        def _reset_idx(self, env_ids: Any) -> None:
            super()._reset_idx(env_ids)  # the real DirectRLEnv._reset_idx: scene.reset, episode_length_buf
            work(1)

    return LightCameraTask


def make_direct_env(decimation: int = 2) -> Any:
    """Build the light DirectRLEnv task (instance made without ``__init__``)."""
    sim = make_sim(0.01)
    camera = make_camera(sim)
    scene = make_scene(camera)
    env = _new(direct_task_class(), _camera=camera, **_env_fields(decimation, sim, scene))
    env.actions = torch.zeros(N_ENVS, 1)
    return env


def make_manager_env(decimation: int = 2) -> Any:
    """A ManagerBasedRLEnv with small manager subclasses (the real step() drives them)."""
    from isaaclab.envs import ManagerBasedRLEnv
    from isaaclab.managers import (
        ActionManager,
        CommandManager,
        EventManager,
        ObservationManager,
        RewardManager,
        TerminationManager,
    )

    class LightActionManager(_Quiet, ActionManager):
        def process_action(self, action: torch.Tensor) -> None:
            self._action = action

        def apply_action(self) -> None:
            work(1)

    class LightObservationManager(_Quiet, ObservationManager):
        def compute(self, update_history: bool = False) -> dict:
            return {"policy": self._camera.data.output["rgb"].reshape(N_ENVS, -1)[:, :4]}

    class LightRewardManager(_Quiet, RewardManager):
        def compute(self, dt: float) -> torch.Tensor:
            work(1)
            return torch.ones(N_ENVS)

    class LightTerminationManager(_Quiet, TerminationManager):
        terminated = torch.zeros(N_ENVS, dtype=torch.bool)
        time_outs = torch.zeros(N_ENVS, dtype=torch.bool)

        def compute(self) -> torch.Tensor:
            return self.terminated | self.time_outs

    class LightEventManager(_Quiet, EventManager):
        available_modes = ["interval"]  # 2.3 step() checks this
        active_terms = {"interval": ["push"]}  # 3.0 step() checks this

        def apply(self, mode: str, env_ids: Any = None, dt: Any = None, global_env_step_count: Any = None) -> None:
            work(1)

    class LightCommandManager(_Quiet, CommandManager):
        def compute(self, dt: float) -> None:
            work(1)

    class LightRecorderManager:
        active_terms: list = []

        def __getattr__(self, name: str) -> Any:  # record_pre_step, record_post_step, ...
            return lambda *args, **kwargs: None

    class LightManagerEnv(ManagerBasedRLEnv):
        pass

    sim = make_sim(0.01)
    camera = make_camera(sim)
    scene = make_scene(camera)
    env = _new(LightManagerEnv, **_env_fields(decimation, sim, scene))
    env.action_manager = _new(LightActionManager)
    env.observation_manager = _new(LightObservationManager, _camera=camera)
    env.reward_manager = _new(LightRewardManager)
    env.termination_manager = _new(LightTerminationManager)
    env.event_manager = _new(LightEventManager)
    env.command_manager = _new(LightCommandManager)
    env.recorder_manager = LightRecorderManager()
    return env


# --------------------------------------------------------------------------- a real task: Cartpole (camera)


class LightCartpole:
    """Stands in for the cartpole Articulation: joint state tensors, writes that do nothing."""

    def __init__(self, wrap: bool) -> None:
        n, j = N_ENVS, 2
        fields = dict(
            joint_pos=torch.zeros(n, j),
            joint_vel=torch.zeros(n, j),
            default_joint_pos=torch.zeros(n, j),
            default_joint_vel=torch.zeros(n, j),
            default_root_state=torch.zeros(n, 13),
            default_root_pose=torch.zeros(n, 7),
            default_root_vel=torch.zeros(n, 6),
            soft_joint_pos_limits=torch.stack([torch.full((n, j), -3.0), torch.full((n, j), 3.0)], dim=-1),
            soft_joint_vel_limits=torch.full((n, j), 10.0),
        )
        # 3.0 data fields are warp-backed with a ``.torch`` view; 2.3 ones are tensors
        self.data = NS(**{k: (NS(torch=v) if wrap else v) for k, v in fields.items()})
        self._ALL_INDICES = torch.arange(n)

    def __getattr__(self, name: str) -> Any:  # set_joint_effort_target[_index], write_*_to_sim[_index], ...
        if name.startswith(("set_", "write_")):
            return lambda *args, **kwargs: work(1)
        raise AttributeError(name)

    def update(self, dt: float) -> None:
        work(1)

    def reset(self, env_ids: Any = None) -> None:
        pass


def make_cartpole_camera_env(decimation: int = 2) -> Any:
    """Isaac Lab's own CartpoleCameraEnv (isaaclab_tasks), made without ``__init__`` over light objects."""
    v3 = major() == 3
    if v3:
        from isaaclab.utils.images import CameraFrameStack
        from isaaclab_tasks.core.cartpole.cartpole_direct_camera_env import CartpoleCameraEnv
    else:
        from isaaclab_tasks.direct.cartpole.cartpole_camera_env import CartpoleCameraEnv

    sim = make_sim(1 / 120)
    camera = make_camera(sim)
    if v3:
        camera._data.output["rgb"] = NS(torch=torch.zeros(N_ENVS, 8, 8, 3))

        def read_output(render_data: Any, camera_data: Any) -> None:
            camera_data.output["rgb"].torch.fill_(1.0)

        camera._renderer.read_output = read_output
        sim._clone_plan = None
    cartpole = LightCartpole(wrap=v3)
    scene = make_scene(camera)
    scene._articulations = {"cartpole": cartpole}
    scene.__dict__.update(
        _terrain=None,
        _default_env_origins=torch.zeros(N_ENVS, 3),
        _env_origins=torch.zeros(N_ENVS, 3),
        _env_origins_plan=None,
        _ALL_INDICES=torch.arange(N_ENVS),
        sim=sim,
    )
    fields = _env_fields(decimation, sim, scene)
    cfg = fields["cfg"]
    cfg.__dict__.update(
        rew_scale_alive=1.0,
        rew_scale_terminated=-2.0,
        rew_scale_pole_pos=-1.0,
        rew_scale_cart_vel=-0.01,
        rew_scale_pole_vel=-0.005,
        max_cart_pos=3.0,
        initial_pole_angle_range=[-0.25, 0.25],
        initial_cart_position_range=[-0.5, 0.5],
        initial_cart_velocity_range=[-0.1, 0.1],
        initial_pole_velocity_range=[-0.1, 0.1],
        write_image_to_file=False,
        action_scale=100.0,
        episode_length_s=3 * decimation / 120,  # time-outs every 2nd (2.3) / 3rd (3.0) step: resets run
        tiled_camera=NS(data_types=["rgb"]),
        scene=NS(tiled_camera=NS(data_types=["rgb"])),
    )
    cfg.sim.dt = 1 / 120
    env = _new(CartpoleCameraEnv, **fields)
    env.__dict__.update(action_scale=cfg.action_scale, actions=torch.zeros(N_ENVS, 1))
    if v3:
        env.__dict__.update(
            cartpole=cartpole,
            _tiled_camera=camera,
            _cart_dof_idx=torch.tensor([0]),
            _pole_dof_idx=torch.tensor([1]),
            joint_pos=cartpole.data.joint_pos.torch,
            joint_vel=cartpole.data.joint_vel.torch,
            _frames=CameraFrameStack(N_ENVS, "cpu", 1, channel_first=True),
        )
    else:
        env.__dict__.update(
            _cartpole=cartpole,
            _tiled_camera=camera,
            _cart_dof_idx=[0],
            _pole_dof_idx=[1],
            joint_pos=cartpole.data.joint_pos,
            joint_vel=cartpole.data.joint_vel,
        )
    return env
