"""``instrument(env)``: ranges around one Isaac Lab env's step, its scene, sim, managers and sensors."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from nvtxsim.errors import NvtxsimError
from nvtxsim.isaaclab import loop
from nvtxsim.isaaclab import phasemap as M
from nvtxsim.isaaclab.patching import (
    IsaacLabInstrumentation,
    note_missing,
    patch_defining,
    patch_function,
    warn_missing,
)
from nvtxsim.isaaclab.ranges import phase_for, phase_named, register_sensors
from nvtxsim.isaaclab.resolve import defining_class, detect_version, package_in_use, resolve

# Instance attributes of an env -> (class name that must be on their MRO, {method: (range, kind)}).
_MANAGERS: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "action_manager": (
        "ActionManager",
        {"process_action": (M.P.ACTION, "phase"), "apply_action": (M.P.ACTION, "phase")},
    ),
    "observation_manager": ("ObservationManager", {"compute": (M.P.OBSERVATION, "phase")}),
    "reward_manager": ("RewardManager", {"compute": (M.P.REWARD, "phase")}),
    "termination_manager": ("TerminationManager", {"compute": (M.P.TERMINATION, "phase")}),
    "event_manager": ("EventManager", {"apply": (M.EVENTS_PREFIX, "events")}),
    "command_manager": ("CommandManager", {"compute": (M.COMMANDS, "phase")}),
    "curriculum_manager": ("CurriculumManager", {"compute": (M.CURRICULUM, "phase")}),
}
_SIM_METHODS = {"step": M.P.SIM_STEP, "render": M.P.RENDER}
_SCENE_METHODS = {"write_data_to_sim": M.SCENE_WRITE, "update": M.SCENE_UPDATE, "reset": M.SCENE_RESET}
_SENSOR_METHODS = ("_update_outdated_buffers", "_update_buffers_impl")
_RENDERER_METHODS = {
    "render": (M.P.RENDER, "phase"),
    "render_batch": (M.P.RENDER, "phase"),
    "read_output": (M.RENDERER_READ_OUTPUT, "phase"),
}


def _is_isaaclab_env(obj: Any) -> bool:
    names = {(k.__module__, k.__qualname__) for k in type(obj).__mro__}
    return any(key in names for key in M.ENV_CLASSES)


def unwrap_env(env: Any) -> Any | None:
    """The Isaac Lab env inside gym / RL-library wrappers, or None."""
    seen: set[int] = set()
    obj = env
    for _ in range(16):
        if obj is None or id(obj) in seen:
            return None
        seen.add(id(obj))
        if _is_isaaclab_env(obj):
            return obj
        nxt = None
        for attr in ("unwrapped", "env", "_env", "_unwrapped"):
            try:
                cand = getattr(obj, attr, None)
            except Exception:
                cand = None
            if cand is not None and cand is not obj:
                nxt = cand
                break
        obj = nxt
    return None


def _has_class_named(obj: Any, name: str) -> bool:
    return any(k.__name__ == name for k in type(obj).__mro__)


def _instance_dict(obj: Any) -> dict:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def _env_targets(env_cls: type, version: int | None, targets: Iterable[M.Target]) -> list[M.Target]:
    bases = {(k.__module__, k.__qualname__) for k in env_cls.__mro__}
    return [t for t in targets if t.scope == "task" and t.applies_to(version) and (t.module, t.owner) in bases]


def apply_class_targets(
    handle: IsaacLabInstrumentation,
    targets: Iterable[M.Target],
    version: int | None,
    *,
    only_module: str | None = None,
) -> None:
    """Patch class/function entries. Optional ones only where their package is already imported."""
    for t in targets:
        if t.scope == "task" or not t.applies_to(version):
            continue
        if only_module is not None and t.module != only_module:
            continue
        if t.optional and not package_in_use(t.package):
            continue
        res = resolve(t)
        if res.status == "ok":
            ph = phase_for(t)
            if t.owner is None:
                patch_function(handle, res.obj, t.attr, ph)
            elif not patch_defining(handle, res.obj, t.attr, ph):
                handle.missing.append(t.dotted)
        elif not t.optional and res.status != "not-installed":
            handle.missing.append(t.dotted + (" (property)" if res.status == "property" else ""))


def _patch_instances(handle: IsaacLabInstrumentation, env: Any) -> None:
    """Patch the classes of the env's own sim, scene, sensors and managers (subclasses included)."""
    d = _instance_dict(env)
    sim = d.get("sim")
    if sim is not None and _has_class_named(sim, "SimulationContext"):
        for name, rng in _SIM_METHODS.items():
            patch_defining(handle, type(sim), name, phase_named(rng))
        manager = _instance_dict(sim).get("physics_manager")  # 3.x: a PhysicsManager subclass (the class itself)
        if isinstance(manager, type):
            patch_defining(handle, manager, "step", phase_named(M.PHYSICS_MANAGER_STEP, inside=(M.P.SIM_STEP,)))
    scene = d.get("scene")
    if scene is not None and _has_class_named(scene, "InteractiveScene"):
        for name, rng in _SCENE_METHODS.items():
            patch_defining(handle, type(scene), name, phase_named(rng))
        sensors = _instance_dict(scene).get("_sensors")
        if isinstance(sensors, dict):
            register_sensors(sensors)
        for sensor in sensors.values() if isinstance(sensors, dict) else ():
            for name in _SENSOR_METHODS:
                patch_defining(handle, type(sensor), name, phase_named(M.P.CAMERA_READOUT, kind="sensor"))
    for attr, (cls_name, methods) in _MANAGERS.items():
        manager = d.get(attr)
        if manager is not None and _has_class_named(manager, cls_name):
            for name, (rng, kind) in methods.items():
                patch_defining(handle, type(manager), name, phase_named(rng, kind=kind))


def _patch_renderers(handle: IsaacLabInstrumentation) -> None:
    """3.x: every imported ``BaseRenderer`` subclass (custom renderers included)."""
    base = getattr(sys.modules.get("isaaclab.renderers.base_renderer"), "BaseRenderer", None)
    if not isinstance(base, type):
        return
    todo: list[type] = list(base.__subclasses__())
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        for name, (rng, kind) in _RENDERER_METHODS.items():
            owner = defining_class(cls, name)
            if owner is not None and owner is not base:
                patch_defining(handle, cls, name, phase_named(rng, kind=kind))


def instrument(
    env: Any,
    *,
    version: int | None = None,
    targets: Iterable[M.Target] | None = None,
    count_steps: bool = False,
    warn: bool = True,
    idle: bool = False,
) -> IsaacLabInstrumentation:
    """Put nvtxsim phases around an Isaac Lab env's step and everything it calls, without editing it.

    ``env`` may be gym- or RL-library-wrapped. Task hooks are wrapped on the class
    that defines them (``type(env.unwrapped).__mro__``); scene, sim, managers,
    sensors and renderers where they are defined, so the patch covers every env
    of those classes. Entries missing in the installed version are skipped with
    one warning when ``targets`` are the caller's own (entries of nvtxsim's map that this release lacks are
    listed under ``NVTXSIM_VERBOSE=1`` and by ``nvtxsim isaaclab check``); properties are never wrapped. ``count_steps`` makes every env step
    call :func:`nvtxsim.step` (capture windows: ``nvtxsim profile --iterations A:B``).
    Returns a handle: ``.patched``, ``.missing``, ``.restore()``; a context manager.
    ``idle`` only names what would be wrapped (``instrument_runner`` while nothing records).
    """
    base = unwrap_env(env)
    if base is None:
        raise NvtxsimError(
            f"not an Isaac Lab env: {type(env).__name__} (expected a DirectRLEnv, DirectMARLEnv, ManagerBasedEnv or "
            "ManagerBasedRLEnv, possibly gym-wrapped)"
        )
    if version is None:
        version = detect_version()
    own_map = targets is None
    targets = tuple(M.ENV_TARGETS + M.CLASS_TARGETS) if targets is None else tuple(targets)
    handle = IsaacLabInstrumentation(version=version, idle=idle)
    loop.note_num_envs(base)
    env_cls = type(base)
    for t in _env_targets(env_cls, version, targets):
        if not patch_defining(handle, env_cls, t.attr, phase_for(t, count_steps=count_steps)):
            handle.missing.append(t.dotted)
    apply_class_targets(handle, targets, version)
    _patch_instances(handle, base)
    _patch_renderers(handle)
    if warn and handle.missing:
        (note_missing if own_map else warn_missing)(handle.missing)
    return handle
