"""``instrument_runner(runner)``: ranges around the RL library side of training (rsl_rl, skrl, rl_games)."""

from __future__ import annotations

from typing import Any

from nvtxsim.emit.ranges import is_measuring
from nvtxsim.errors import NvtxsimError
from nvtxsim.isaaclab import loop
from nvtxsim.isaaclab import phasemap as M
from nvtxsim.isaaclab.envs import apply_class_targets, unwrap_env
from nvtxsim.isaaclab.envs import instrument as instrument_env
from nvtxsim.isaaclab.patching import IsaacLabInstrumentation, patch_defining, warn_missing
from nvtxsim.isaaclab.ranges import PolicyFactoryPhase, runner_phase

#: Methods that must exist on an algorithm/agent of each library (others are optional across versions).
_REQUIRED = {"rsl_rl": ("act", "update"), "skrl": ("act",), "rl_games": ("get_action_values",)}


def library_of(obj: Any) -> str | None:
    """``rsl_rl``, ``skrl`` or ``rl_games`` from the modules on ``type(obj).__mro__``."""
    for klass in type(obj).__mro__:
        top = (getattr(klass, "__module__", "") or "").split(".", 1)[0]
        if top in M.RUNNER_METHODS:
            return top
    return None


def _algorithms(runner: Any, library: str) -> list[Any]:
    """The objects whose methods are the RL phases: rsl_rl ``runner.alg``, skrl agents, rl_games agents."""
    d = getattr(runner, "__dict__", {})
    if library == "rsl_rl":
        alg = d.get("alg")
        return [alg] if alg is not None else ([runner] if hasattr(runner, "act") else [])
    if library == "skrl":
        agents = d.get("agents", runner if hasattr(runner, "act") else None)
        if agents is None:
            return []
        if isinstance(agents, dict):
            return list(agents.values())
        return list(agents) if isinstance(agents, (list, tuple)) else [agents]
    if library == "rl_games":
        return [runner] if hasattr(runner, "get_action_values") else []
    return []


def instrument_runner(runner: Any, *, env: bool = True, warn: bool = True) -> IsaacLabInstrumentation:
    """Wrap an RL runner/trainer/agent's phases and mark its loop: ``learning_iteration`` ⊃ ``rollout`` ⊃ ``step``.

    * rsl_rl ``OnPolicyRunner`` (or its ``alg``): ``act`` -> ``policy``, ``process_env_step``,
      ``compute_returns``, ``update`` -> ``policy_update``; ``get_inference_policy`` returns a
      policy whose calls are ``policy`` ranges. A ``step`` runs from ``act`` to the end of
      ``process_env_step``; a ``learning_iteration`` from the first ``act`` after an update to
      the end of ``update``, its ``rollout`` until ``compute_returns``.
    * skrl ``Trainer`` or ``Agent``: ``act`` -> ``policy``, ``record_transition``, ``update`` (1.x
      ``_update``) -> ``policy_update``; a ``step`` from ``act`` to the end of ``post_interaction``
      (or the start of the update it calls).
    * rl_games ``Runner`` or agent: ``get_action_values`` -> ``policy``, ``discount_values`` ->
      ``compute_returns``, ``train_actor_critic`` -> ``policy_update``; ``train_epoch`` is the
      ``learning_iteration``, ``play_steps`` the ``rollout``, a ``step`` runs from one action to the
      next (patched by class name, so agents the runner creates later are covered).

    The loop ranges are NVTX start/end ranges carrying the number of envs as payload. With
    ``env=True`` the runner's Isaac Lab env (if any) is instrumented as well. While nothing
    records (no profiler, or :func:`nvtxsim.disable`), nothing is replaced: the handle is
    ``idle`` and ``patched`` names what would have been wrapped (instrument after enabling).
    """
    library = library_of(runner)
    if library is None:
        raise NvtxsimError(
            f"not an rsl_rl, skrl or rl_games runner/agent: {type(runner).__module__}.{type(runner).__qualname__}"
        )
    handle = IsaacLabInstrumentation(idle=not is_measuring())
    # Library classes by name (rl_games creates its agent inside Runner.run; skrl/rsl_rl base classes).
    apply_class_targets(handle, [t for t in M.RUNNER_TARGETS if t.package == library], None)
    methods = M.RUNNER_METHODS[library]
    for alg in _algorithms(runner, library):
        for name, rng in methods.items():
            found = patch_defining(handle, type(alg), name, runner_phase(library, name, rng))
            if not found and name in _REQUIRED[library]:
                handle.missing.append(f"{type(alg).__qualname__}.{name}")
    if library == "rsl_rl":
        patch_defining(handle, type(runner), "get_inference_policy", PolicyFactoryPhase(M.P.POLICY))
    for attr in ("env", "vec_env"):
        candidate = getattr(runner, "__dict__", {}).get(attr)
        if candidate is None:
            continue
        loop.note_num_envs(candidate)
        if env and unwrap_env(candidate) is not None:
            handle.absorb(instrument_env(candidate, warn=False, idle=handle.idle))
            break
    if warn and handle.missing:
        warn_missing(handle.missing)
    return handle
