"""The RL loop's own levels, whatever the library: ``learning_iteration`` ⊃ ``rollout`` ⊃ ``step``.

No single function of rsl_rl, skrl or rl_games spans one env step as the runner performs it
(rsl_rl: ``alg.act``, ``env.step``, ``alg.process_env_step`` are siblings inside ``learn()``),
nor, in rsl_rl and skrl, one learning iteration. Hooks on those calls send *events* here
(``begin``/``end`` of a level) and a per-thread state opens and closes NVTX start/end ranges,
which need not nest with the push/pop ranges of the calls themselves:

* ``begin`` of a level first ends that level (and the ones inside it) if still open, so a
  missed end (an exception, a call outside the loop) never leaves a range open for long,
  then opens the enclosing levels that are not open (a step opens a rollout and a learning
  iteration: rsl_rl's first ``act`` after an update starts the next learning iteration);
* ``end`` of a level ends the levels inside it first.

Every range carries the number of environments (when known) as its integer payload, so the
report can turn steps into env-steps/s.
"""

from __future__ import annotations

import operator
import threading
from typing import Any

from nvtxsim import phases as P
from nvtxsim.emit import ranges as _emit  # looked up per call: tests record them in-process

#: Outermost first.
LEVELS: tuple[str, ...] = (P.LEARNING_ITERATION, P.ROLLOUT, P.STEP)
BEGIN, END = "begin", "end"

Event = tuple[str, str]  # (BEGIN | END, level)

_tls = threading.local()
_defaults: dict[str, int | None] = {"num_envs": None}


def _open() -> dict[str, Any]:
    """Level -> start/end token of the ranges open on this thread."""
    tokens = getattr(_tls, "tokens", None)
    if tokens is None:
        tokens = _tls.tokens = {}
    return tokens


def note_num_envs(obj: Any) -> None:
    """Remember ``obj.num_envs`` (an env or vec-env nvtxsim instruments) as the payload of the loop ranges."""
    n = _positive_int(_attr(obj, "num_envs"))
    if n is not None:
        _defaults["num_envs"] = n


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # a property that needs state the object lacks
        return None


def _positive_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        n = operator.index(value)  # ints and integer 0-d tensors, not 2.5
    except Exception:
        return None
    return n if n > 0 else None


def num_envs_of(owner: Any) -> int | None:
    """Environments stepped per step: the owner's (rl_games ``num_actors``), else the env seen last."""
    for name in ("num_envs", "num_actors"):
        n = _positive_int(_attr(owner, name))
        if n is not None:
            return n
    return _defaults["num_envs"]


def end(level: str) -> None:
    """End ``level`` and the levels inside it, innermost first (no-op for levels not open)."""
    tokens = _open()
    for inner in reversed(LEVELS[LEVELS.index(level) :]):
        token = tokens.pop(inner, None)
        if token is not None:
            _emit.end_range(token)


def begin(level: str, owner: Any = None) -> None:
    """Start ``level`` (ending an open one first) and the enclosing levels not open yet."""
    end(level)
    tokens = _open()
    n = num_envs_of(owner)
    depth = LEVELS.index(level)
    # An evaluation loop (skrl Agent.training False) has steps but no rollouts or learning iterations.
    outer = LEVELS[:depth] if _attr(owner, "training") is not False else ()
    for name in outer + (level,):
        if name not in tokens:
            token = _emit.start_range(name, payload=n)
            if token is not None:
                tokens[name] = token


def event(ev: Event, owner: Any = None) -> None:
    """Apply one hook event; never raises into the training loop."""
    try:
        if ev[0] == BEGIN:
            begin(ev[1], owner)
        else:
            end(ev[1])
    except Exception:  # instrumentation must not break training
        pass


def reset() -> None:
    """End every level open on this thread (tests, end of a run)."""
    end(LEVELS[0])


__all__ = ["LEVELS", "BEGIN", "END", "Event", "begin", "end", "event", "note_num_envs", "num_envs_of", "reset"]
