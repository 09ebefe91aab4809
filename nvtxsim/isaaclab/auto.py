"""Zero-edit instrumentation: patch Isaac Lab envs and RL runners as the program creates them.

:func:`install` puts an import hook on ``sys.meta_path`` that imports nothing by
itself. When a watched module finishes loading it:

* env modules (``isaaclab.envs.direct_rl_env`` ...): wraps the env class's ``__init__``
  so that every env is instrumented when its outermost ``__init__`` returns;
* ``gymnasium``: wraps ``make`` so envs built through the registry are instrumented
  (also envs whose task class skips the base ``__init__``);
* rsl_rl / skrl runner, trainer and agent modules: wraps their ``__init__`` the same way;
* modules named in the phase map (sim, scene, managers, sensors, renderers, physics
  backends, rl_games agents): patches their entries right away, so backends imported
  lazily (3.0 renderers) are covered too.

Used by ``nvtxsim run`` (``python -m nvtxsim run train.py ...``). Instrumentation
errors never reach the program: they become one line on stderr.
"""

from __future__ import annotations

import functools
import importlib.abc
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from nvtxsim.isaaclab import phasemap as M
from nvtxsim.isaaclab.patching import IsaacLabInstrumentation, note_missing

#: Runner/trainer/agent classes whose construction triggers instrument_runner: module -> class names.
RUNNER_CLASSES: dict[str, tuple[str, ...]] = {
    "rsl_rl.runners.on_policy_runner": ("OnPolicyRunner",),
    "rsl_rl.runners.distillation_runner": ("DistillationRunner",),
    "skrl.trainers.torch.base": ("Trainer",),
    "skrl.agents.torch.base": ("Agent",),
}

_handle = IsaacLabInstrumentation()
_lock = threading.RLock()
_tls = threading.local()
_state: dict[str, Any] = {
    "installed": False,
    "finder": None,
    "count_steps": True,
    "quiet": False,
    "announced": set(),
    "originals": [],
}


def handle() -> IsaacLabInstrumentation:
    """Everything patched so far in this process."""
    return _handle


def _say(message: str) -> None:
    if not _state["quiet"]:
        try:
            sys.stderr.write(f"nvtxsim: {message}\n")
        except Exception:
            pass


def _guarded(what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # instrumentation must never break the user's program
        _say(f"instrumenting {what} failed ({type(exc).__name__}: {exc}); continuing without it")
        return None


# --------------------------------------------------------------------------- what happens on events


def _instrument_object(
    key: type, instrument: Callable[[], IsaacLabInstrumentation], announce: Callable[[int], str]
) -> None:
    """Run ``instrument`` (guarded), add what it patched to the process's handle, and say so once per class.

    Env and runner objects are taken in the same way; only what they patch and how that is said differ.
    ``announce`` gets the number of methods this call added."""
    with _lock:
        before = len(_handle.patches)
        h = _guarded(key.__name__, instrument)
        if h is None:
            return
        _handle.absorb(h)
        if h.missing:
            note_missing(h.missing)
        if key not in _state["announced"]:
            _state["announced"].add(key)
            _say(announce(len(_handle.patches) - before))


def instrument_env_object(env: Any) -> None:
    from nvtxsim.isaaclab.envs import instrument, unwrap_env

    base = unwrap_env(env)
    if base is None:
        return
    _instrument_object(
        type(base),
        lambda: instrument(base, count_steps=_state["count_steps"], warn=False),
        lambda added: f"instrumented {type(base).__name__} ({added} new methods, {len(_handle.patches)} in all)",
    )


def instrument_runner_object(runner: Any) -> None:
    from nvtxsim.isaaclab.runners import instrument_runner

    _instrument_object(
        type(runner),
        lambda: instrument_runner(runner, warn=False),
        lambda added: f"instrumented {type(runner).__name__} ({len(_handle.patches)} methods in all)",
    )


def _after_init(cls: type, callback: Callable[[Any], None]) -> None:
    """Wrap ``cls.__init__`` (its own) so ``callback(self)`` runs when the outermost such ``__init__`` returns."""
    original = cls.__dict__.get("__init__")
    if original is None or getattr(original, "__nvtxsim_init_hook__", False):
        return

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        depth = getattr(_tls, "depth", 0)
        _tls.depth = depth + 1
        try:
            original(self, *args, **kwargs)
        finally:
            _tls.depth = depth
        if depth == 0:
            callback(self)

    __init__.__nvtxsim_init_hook__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]
    _state["originals"].append((cls, "__init__", original))


def _wrap_make(module: Any) -> None:
    make = module.__dict__.get("make")
    if make is None:
        return
    if getattr(make, "__nvtxsim_make_hook__", False):  # re-exported by gymnasium / gymnasium.envs
        _state["originals"].append((module, "make", make.__wrapped__))
        return

    @functools.wraps(make)
    def wrapped_make(*args: Any, **kwargs: Any) -> Any:
        env = make(*args, **kwargs)
        instrument_env_object(env)
        return env

    wrapped_make.__nvtxsim_make_hook__ = True  # type: ignore[attr-defined]
    module.make = wrapped_make
    _state["originals"].append((module, "make", make))


def _on_loaded(name: str, module: Any) -> None:
    """A watched module finished executing."""
    for mod_name, cls_name in M.ENV_CLASSES:
        if mod_name == name:
            cls = getattr(module, cls_name, None)
            if isinstance(cls, type):
                _after_init(cls, instrument_env_object)
    for cls_name in RUNNER_CLASSES.get(name, ()):
        cls = getattr(module, cls_name, None)
        if isinstance(cls, type):
            _after_init(cls, instrument_runner_object)
    if name in ("gymnasium", "gymnasium.envs", "gymnasium.envs.registration"):
        _wrap_make(module)
    if name in _MAP_MODULES:
        from nvtxsim.isaaclab.envs import apply_class_targets
        from nvtxsim.isaaclab.resolve import detect_version

        def apply() -> None:
            version = detect_version() if name.startswith("isaaclab") else None
            h = IsaacLabInstrumentation(version=version)
            apply_class_targets(h, M.CLASS_TARGETS + M.RUNNER_TARGETS, version, only_module=name)
            with _lock:
                _handle.extend(h)  # missing entries are reported once an env is instrumented

        _guarded(name, apply)


_MAP_MODULES = frozenset(t.module for t in M.CLASS_TARGETS + M.RUNNER_TARGETS)
_WATCHED = frozenset(
    {m for m, _ in M.ENV_CLASSES}
    | set(RUNNER_CLASSES)
    | {"gymnasium", "gymnasium.envs", "gymnasium.envs.registration"}
    | _MAP_MODULES
)


# --------------------------------------------------------------------------- the import hook


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the other finders, then hooks the loader's ``exec_module``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _WATCHED:
            return None
        busy = getattr(_tls, "finding", None)
        if busy is None:
            busy = _tls.finding = set()
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        _hook_loader(spec.loader, fullname)
        return spec


def _hook_loader(loader: Any, fullname: str) -> None:
    exec_module = loader.exec_module

    def hooked_exec_module(module: Any) -> None:
        exec_module(module)
        _guarded(fullname, lambda: _on_loaded(fullname, module))

    try:
        loader.exec_module = hooked_exec_module  # an instance attribute: the loader keeps its type
    except (AttributeError, TypeError):
        pass  # a loader without instance dict: leave it alone


def install(*, count_steps: bool = True, quiet: bool | None = None) -> None:
    """Hook imports so Isaac Lab envs and RL runners are instrumented as they are created (idempotent)."""
    _state["count_steps"] = count_steps
    _state["quiet"] = bool(os.environ.get("NVTXSIM_QUIET")) if quiet is None else quiet
    if _state["installed"]:
        return
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    _state["finder"] = finder
    _state["installed"] = True
    for name in sorted(_WATCHED):  # modules imported before install
        module = sys.modules.get(name)
        if module is not None:
            _guarded(name, functools.partial(_on_loaded, name, module))


def uninstall() -> None:
    """Remove the hook and every patch made through it."""
    finder = _state["finder"]
    if finder is not None and finder in sys.meta_path:
        sys.meta_path.remove(finder)
    _state.update(installed=False, finder=None)
    while _state["originals"]:
        owner, name, original = _state["originals"].pop()
        setattr(owner, name, original)
    _handle.restore()
    _state["announced"].clear()
