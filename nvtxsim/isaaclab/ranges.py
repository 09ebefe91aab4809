"""Phases with the wrappers Isaac Lab needs, usable with :func:`nvtxsim.instrument`.

:func:`nvtxsim.instrument` calls ``phase.wrap(fn)``; these subclasses of
:class:`nvtxsim.phase` change only that wrapper:

* :class:`GuardedPhase`: no range when a range of the same name is already open on
  this thread. Isaac Lab nests its own hooks (3.0 ``_compute_observations`` calls
  the task's ``_get_observations``; ``_reset_envs_from_buffer`` calls ``_reset_idx``;
  the readout calls ``render_into_camera``), and per-phase totals must not count
  the inner call twice. With ``inside`` it also opens none inside a range that is
  the call's whole wrapper (``physics_manager.step`` inside ``sim_step``): a wrapper
  and the call it wraps would make two rows with the same numbers.
* :class:`SensorReadoutPhase`: ``camera_readout`` (cameras, ray casters) or
  ``sensor_readout`` (others); where a scene holds several sensors of one kind, a
  sub-range ``sensor.<name>`` with the sensor's name in the scene.
* :class:`EventsPhase`: ``events.<mode>`` from ``EventManager.apply(mode, ...)``.
* :class:`PolicyFactoryPhase`: wraps the callable that ``get_inference_policy`` returns.
* :class:`LoopPhase`: an RL-library method that also begins/ends the loop levels
  ``step``, ``rollout``, ``learning_iteration`` (:mod:`nvtxsim.isaaclab.loop`).

All ranges go through ``phase.__enter__``/``__exit__`` so they cost what a ``with
nvtxsim.phase(...)`` costs, plus one thread-local lookup.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable
from typing import Any, cast

from nvtxsim.emit.ranges import F, is_measuring, phase
from nvtxsim.isaaclab import loop, phasemap

_tls = threading.local()


def _open_names() -> set:
    names = getattr(_tls, "names", None)
    if names is None:
        names = _tls.names = set()
    return names


_PHASES: dict[str, phase] = {}
_PHASES_LOCK = threading.Lock()


def cached_phase(name: str) -> phase:
    """One :class:`phase` per range name (its NVTX attributes are built once)."""
    ph = _PHASES.get(name)
    if ph is None:
        with _PHASES_LOCK:
            ph = _PHASES.get(name)
            if ph is None:
                ph = _PHASES[name] = phase(name)
    return ph


def run_in(names: list[str], fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Call ``fn`` inside nested ranges ``names`` (outermost first), skipping names already open."""
    open_names = _open_names()
    opened: list[tuple[str, phase]] = []
    try:
        for name in names:
            if name not in open_names:
                ph = cached_phase(name)
                ph.__enter__()
                open_names.add(name)
                opened.append((name, ph))
        return fn(*args, **kwargs)
    finally:
        for name, ph in reversed(opened):
            open_names.discard(name)
            ph.__exit__(None, None, None)


class GuardedPhase(phase):
    """A phase whose wrapper opens no range while one of the same name, or of ``inside``, is open on this thread."""

    __slots__ = ("inside",)

    def __init__(self, name: str, *, inside: tuple[str, ...] = ()) -> None:
        super().__init__(name)
        self.inside = frozenset(inside)

    def range_names(self, args: tuple, kwargs: dict) -> list[str]:
        if self.inside and not self.inside.isdisjoint(_open_names()):
            return []
        return [self.name]

    def wrap(self, fn: F) -> F:
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            return phase.wrap(self, fn)  # never the case for Isaac Lab's hooks; keep nvtxsim's semantics
        names_for = self.range_names

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not is_measuring():
                return fn(*args, **kwargs)
            return run_in(names_for(args, kwargs), fn, args, kwargs)

        wrapper.__nvtxsim_phase__ = self.name  # type: ignore[attr-defined]
        return cast(F, wrapper)


class IterationPhase(GuardedPhase):
    """The env step: optionally counts iterations for capture windows (``nvtxsim.step()``) first."""

    __slots__ = ("count_steps",)

    def __init__(self, name: str, *, count_steps: bool = False) -> None:
        super().__init__(name)
        self.count_steps = count_steps

    def wrap(self, fn: F) -> F:
        inner = GuardedPhase.wrap(self, fn)
        if not self.count_steps:
            return inner
        from nvtxsim.emit.window import step as window_step

        name = self.name

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if name not in _open_names():  # the outermost env step only
                window_step()
            return inner(*args, **kwargs)

        wrapper.__nvtxsim_phase__ = name  # type: ignore[attr-defined]
        return cast(F, wrapper)


_SENSOR_NAMES: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()


def _readout_phase(sensor: Any) -> str:
    return phasemap.P.CAMERA_READOUT if phasemap.is_camera_like(type(sensor)) else phasemap.SENSOR_READOUT


def register_sensors(sensors: dict[str, Any]) -> None:
    """Name the readout ranges of a scene's sensors (``scene.sensors``: name -> sensor).

    A readout is ``camera_readout`` or ``sensor_readout``; only where the scene holds several sensors of
    one of these kinds does each get a sub-range ``sensor.<name>`` (the key the task gave it): with one
    camera the sub-range would repeat its parent's numbers, and a prim path (``/World/envs/env_.*/Camera``)
    says less than the name the user chose."""
    by_phase: dict[str, list[tuple[str, Any]]] = {}
    for name, sensor in sensors.items():
        by_phase.setdefault(_readout_phase(sensor), []).append((str(name), sensor))
    for outer, members in by_phase.items():
        for name, sensor in members:
            try:
                _SENSOR_NAMES[sensor] = [outer, f"sensor.{name}"] if len(members) > 1 else [outer]
            except TypeError:  # not weakly referenceable or unhashable: the readout keeps its kind only
                pass


def sensor_range_names(sensor: Any) -> list[str]:
    """The ranges of one sensor's readout: its kind, and its name where the scene has several of that kind."""
    try:
        names = _SENSOR_NAMES.get(sensor)
    except TypeError:
        names = None
    return names if names is not None else [_readout_phase(sensor)]


class SensorReadoutPhase(GuardedPhase):
    """Readout of a sensor's buffers: its kind's phase, plus the sensor's name where several share the kind."""

    __slots__ = ()

    def range_names(self, args: tuple, kwargs: dict) -> list[str]:
        return sensor_range_names(args[0]) if args else [self.name]


class EventsPhase(GuardedPhase):
    """``EventManager.apply(mode, ...)`` -> ``events.<mode>``."""

    __slots__ = ()

    def range_names(self, args: tuple, kwargs: dict) -> list[str]:
        mode = kwargs.get("mode", args[1] if len(args) > 1 else None)
        return [f"{self.name}.{mode}" if isinstance(mode, str) else self.name]


class PolicyFactoryPhase(phase):
    """Wraps the callable returned by ``get_inference_policy`` in a ``policy`` range (no range around the call)."""

    __slots__ = ()

    def wrap(self, fn: F) -> F:
        policy_phase = GuardedPhase(self.name)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            policy = fn(*args, **kwargs)
            if callable(policy) and getattr(policy, "__nvtxsim_phase__", None) is None:
                try:
                    return policy_phase.wrap(policy)
                except Exception:  # an exotic callable: leave it alone
                    return policy
            return policy

        wrapper.__nvtxsim_phase__ = self.name  # type: ignore[attr-defined]
        return cast(F, wrapper)


def _active_hooks() -> set:
    hooks = getattr(_tls, "hooks", None)
    if hooks is None:
        hooks = _tls.hooks = set()
    return hooks


class LoopPhase(GuardedPhase):
    """A method that sends loop events (:mod:`nvtxsim.isaaclab.loop`) before and/or after its own range.

    With ``ranged=False`` the method gets no range of its own (skrl ``post_interaction`` only
    ends a step; rl_games ``play_steps`` only delimits a rollout). A call nested in a call with
    the same events (``PPO.post_interaction`` -> ``Agent.post_interaction``) sends none.
    """

    __slots__ = ("before", "after", "ranged")

    def __init__(
        self, name: str, *, before: loop.Event | None = None, after: loop.Event | None = None, ranged: bool = True
    ) -> None:
        super().__init__(name)
        self.before = before
        self.after = after
        self.ranged = ranged

    def range_names(self, args: tuple, kwargs: dict) -> list[str]:
        return [self.name] if self.ranged else []

    def wrap(self, fn: F) -> F:
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            return GuardedPhase.wrap(self, fn)
        before, after, names_for = self.before, self.after, self.range_names
        key = (before, after)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not is_measuring():
                return fn(*args, **kwargs)
            hooks = _active_hooks()
            if key in hooks:  # nested in a call with the same events
                return run_in(names_for(args, kwargs), fn, args, kwargs)
            owner = args[0] if args else None
            hooks.add(key)
            try:
                if before is not None:
                    loop.event(before, owner)
                return run_in(names_for(args, kwargs), fn, args, kwargs)
            finally:  # the call is over, returned or raised: its level ends either way
                hooks.discard(key)
                if after is not None:
                    loop.event(after, owner)

        wrapper.__nvtxsim_phase__ = self.name  # type: ignore[attr-defined]
        return cast(F, wrapper)


def runner_phase(library: str, method: str, name: str | None) -> phase:
    """The phase of an RL-library method: its range ``name`` (None: none) and its loop events, if any."""
    events = phasemap.LOOP_EVENTS.get(library, {}).get(method)
    if events is None:
        return GuardedPhase(name or method)
    return LoopPhase(name or method, before=events[0], after=events[1], ranged=name is not None)


def phase_for(target: phasemap.Target, *, count_steps: bool = False) -> phase:
    """The phase object a map entry is wrapped with."""
    if target.kind == "sensor":
        return SensorReadoutPhase(target.phase)
    if target.kind == "events":
        return EventsPhase(target.phase)
    if target.kind == "policy_factory":
        return PolicyFactoryPhase(target.phase)
    if target.owner is not None and target.package in phasemap.LOOP_EVENTS:
        return runner_phase(target.package, target.attr, None if target.kind == "loop" else target.phase)
    if target.phase == phasemap.P.ITERATION:
        return IterationPhase(target.phase, count_steps=count_steps)
    return GuardedPhase(target.phase, inside=target.inside)


def phase_named(name: str, *, kind: str = "phase", count_steps: bool = False, inside: tuple[str, ...] = ()) -> phase:
    """Like :func:`phase_for`, from a range name and kind."""
    return phase_for(phasemap.Target("", "", name, kind=kind, inside=inside), count_steps=count_steps)


__all__ = [
    "GuardedPhase",
    "IterationPhase",
    "SensorReadoutPhase",
    "EventsPhase",
    "PolicyFactoryPhase",
    "LoopPhase",
    "runner_phase",
    "phase_for",
    "phase_named",
    "cached_phase",
    "sensor_range_names",
    "register_sensors",
]
