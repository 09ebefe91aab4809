"""Patch one method on the class that defines it, through :func:`nvtxsim.instrument`.

:func:`nvtxsim.instrument` wraps a method on the class it is given (an inherited
method is then set on that subclass). Isaac Lab needs the *defining* class instead:
tasks override hooks, and 3.0 compares methods by identity
(``type(self)._update_buffers_impl is Camera._update_buffers_impl`` in
``Camera.supports_batch_update``), which a copy on a subclass would break.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nvtxsim.emit.instrument import Instrumentation, instrument
from nvtxsim.emit.ranges import phase
from nvtxsim.envflags import env_flag
from nvtxsim.isaaclab.resolve import defining_class


@dataclass
class IsaacLabInstrumentation(Instrumentation):
    """:class:`nvtxsim.Instrumentation` plus what the phase map expected but did not find."""

    version: int | None = None
    missing: list[str] = field(default_factory=list)

    def absorb(self, other: Instrumentation) -> IsaacLabInstrumentation:
        self.extend(other)
        if isinstance(other, IsaacLabInstrumentation):
            self.missing.extend(m for m in other.missing if m not in self.missing)
        return self


def patch_defining(handle: IsaacLabInstrumentation, cls: Any, name: str, ph: phase) -> bool:
    """Wrap ``name`` on the class of ``cls.__mro__`` that defines it; False when nothing defines it.

    An idle ``handle`` (nothing records) only names the method: nothing is replaced.
    """
    owner = defining_class(cls, name) if isinstance(cls, type) else None
    if owner is None:
        return False
    if handle.idle:
        handle.add_idle(owner, name)
        return True
    result = instrument(owner, {name: ph}, warn=False)
    for skipped in result.skipped:
        if skipped.endswith("(property)") and skipped not in handle.missing:
            handle.missing.append(skipped)
    handle.extend(result)
    return True


def patch_function(handle: IsaacLabInstrumentation, module: Any, name: str, ph: phase) -> bool:
    """Wrap a module-level function in the module's namespace."""
    if not callable(getattr(module, name, None)):
        return False
    if handle.idle:
        handle.add_idle(module, name)
        return True
    handle.extend(instrument(module, {name: ph}, warn=False))
    return True


_warned: set[str] = set()

#: Set (to 1) for a line on stderr naming the entries of nvtxsim's own phase map that the installed Isaac
#: Lab lacks (``nvtxsim run --verbose`` sets it). ``nvtxsim isaaclab check`` lists them too.
VERBOSE = "NVTXSIM_VERBOSE"
_verbose = {"on": False}


def set_verbose(on: bool) -> None:
    """``nvtxsim run --verbose``: name the missing entries without changing the program's environment."""
    _verbose["on"] = on


def warn_missing(names: Iterable[str], *, stacklevel: int = 3) -> None:
    """ONE warning listing entries of a map the user gave that are absent here (each name once per process)."""
    new = [n for n in dict.fromkeys(names) if n not in _warned]
    if not new:
        return
    _warned.update(new)
    warnings.warn(
        "nvtxsim.isaaclab: not in the installed Isaac Lab, not instrumented: " + ", ".join(new),
        stacklevel=stacklevel,
    )


def note_missing(names: Iterable[str]) -> None:
    """Entries of nvtxsim's own phase map that this Isaac Lab release lacks: a line under NVTXSIM_VERBOSE only.

    The map covers several releases and backends, so some entries are always absent; that is no fault
    of the user's program and is not warned about at every run."""
    new = [n for n in dict.fromkeys(names) if n not in _warned]
    if not new or not (_verbose["on"] or env_flag(VERBOSE)):
        return
    _warned.update(new)
    try:
        sys.stderr.write(
            "nvtxsim: phase-map entries not in this Isaac Lab (not instrumented): " + ", ".join(new) + "\n"
        )
    except Exception:
        pass
