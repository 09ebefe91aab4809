"""Emit stage: put phases around methods of classes or objects by name, without editing them.

Methods are wrapped where they are looked up (the class given, or the instance),
so a subclass override is wrapped when the subclass is the target. Every change
is recorded so :meth:`Instrumentation.restore` puts back exactly what was there.
"""

from __future__ import annotations

import copy
import functools
import inspect
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nvtxsim.emit import ranges as _emit
from nvtxsim.emit.ranges import phase

PhaseSpec = str | phase

_MISSING = object()
_UNCHANGED = object()  # a _Patch.previous for a method left as it was (idle instrumentation)


@dataclass
class _Patch:
    owner: Any  # class or instance whose __dict__ was changed
    name: str
    previous: Any  # what owner.__dict__ held before, _MISSING, or _UNCHANGED (nothing replaced)
    label: str


@dataclass
class Instrumentation:
    """What :func:`instrument` changed; restores it on :meth:`restore` or at the end of a ``with`` block.

    ``idle`` is True when ranges were not being recorded (no profiler attached, or nvtxsim
    disabled) at the time of the call: like a ``@phase`` decorator then, and like ``nvtx``'s,
    nothing was replaced, so the methods cost nothing; ``patched`` still names what would
    have been wrapped. Instrument after :func:`nvtxsim.enable`, not before.
    """

    patches: list[_Patch] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    idle: bool = False

    @property
    def patched(self) -> list[str]:
        """``Class.method`` for every method wrapped."""
        return [p.label for p in self.patches]

    def restore(self) -> None:
        """Put back every original method, newest first; calling it twice is harmless; never raises."""
        while self.patches:
            p = self.patches.pop()
            try:
                _undo(p)
            except Exception as exc:  # a target that refuses the change back: keep going with the rest
                warnings.warn(f"nvtxsim: could not restore {p.label} ({type(exc).__name__}: {exc})", stacklevel=2)

    def add_idle(self, owner: Any, name: str) -> None:
        """Name ``owner.name`` as what would have been wrapped, leaving it unchanged (idle instrumentation)."""
        label = f"{getattr(owner, '__qualname__', None) or getattr(owner, '__name__', type(owner).__qualname__)}.{name}"
        if all(p.label != label for p in self.patches):
            self.patches.append(_Patch(owner, name, _UNCHANGED, label))

    def extend(self, other: Instrumentation) -> Instrumentation:
        self.patches.extend(other.patches)
        other.patches = []
        self.skipped.extend(other.skipped)
        return self

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.restore()
        return False

    def __len__(self) -> int:
        return len(self.patches)


def _undo(p: _Patch) -> None:
    if p.previous is _UNCHANGED:
        return
    d = _dict_of(p.owner)
    if p.previous is _MISSING:
        if isinstance(p.owner, type):
            if p.name in p.owner.__dict__:
                delattr(p.owner, p.name)
        elif d is not None:
            d.pop(p.name, None)
    elif isinstance(p.owner, type):
        setattr(p.owner, p.name, p.previous)
    elif d is not None:
        d[p.name] = p.previous


def _dict_of(obj: Any) -> Any:
    try:
        return object.__getattribute__(obj, "__dict__")
    except Exception:  # no __dict__, or a __dict__ property that raises
        return None


class _PhasedMethod(functools.partial):
    """What :func:`instrument` puts in an instance's ``__dict__``: the instance's method in a phase.

    A ``functools.partial`` (called in C, so the phase adds one frame, as a decorator does) that
    remembers where it came from: ``copy.deepcopy``, ``pickle`` and ``torch.save`` of the instance
    rebuild it around the copy, so a deep copy (a target network) runs its own methods, not the
    original's. A shallow ``copy.copy`` shares the instance ``__dict__`` values, this one included.
    """

    origin: tuple[Any, str, phase, Any]  # (target, name, ph, previous): what build() was given
    __self__: Any
    __nvtxsim_phase__: str

    @classmethod
    def build(cls, target: Any, name: str, ph: phase, previous: Any = None) -> _PhasedMethod:
        """``ph`` around ``target.name``: ``previous`` (a callable in the instance dict) or, if None, the class's method."""
        if previous is None:
            raw = _lookup_static(type(target), name)
            bound = raw.__get__(target, type(target)) if hasattr(type(raw), "__get__") else raw
        else:
            bound = previous
        if not callable(bound):
            raise TypeError(f"{name} is not callable")
        obj = cls(ph.wrap(bound))
        obj.origin = (target, name, ph, previous)
        functools.update_wrapper(obj, bound, updated=())  # __name__, __doc__, __wrapped__ ... as a method has
        obj.__self__ = target
        obj.__nvtxsim_phase__ = ph.name  # instrumenting the instance again leaves it as it is
        return obj

    def __reduce__(self) -> Any:
        return (_rebuild_phased_method, self.origin)

    def __deepcopy__(self, memo: dict) -> _PhasedMethod:
        return _rebuild_phased_method(*copy.deepcopy(self.origin, memo))

    def __repr__(self) -> str:
        return f"<nvtxsim phase {self.origin[2].name!r} around {self.origin[1]} of {type(self.origin[0]).__qualname__}>"


def _rebuild_phased_method(target: Any, name: str, ph: phase, previous: Any = None) -> _PhasedMethod:
    """Unpickle/deep-copy a :class:`_PhasedMethod` around the new instance (its state may not be set yet)."""
    return _PhasedMethod.build(target, name, ph, previous)


def _as_phase(spec: PhaseSpec) -> phase:
    return spec if isinstance(spec, phase) else phase(str(spec))


def is_instrumented(fn: Any) -> bool:
    """True when ``fn`` (function, method or descriptor) is already an nvtxsim wrapper."""
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "__nvtxsim_phase__", None) is not None


def _lookup_static(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


def instrument(
    target: Any,
    methods: Mapping[str, PhaseSpec] | Iterable[str],
    *,
    warn: bool = True,
) -> Instrumentation:
    """Wrap methods of ``target`` (a class or an instance) in phases, by name.

    ``methods`` maps a method name to a phase name (or :class:`phase`); a plain
    list of names uses each name as its phase, and one string names one method. Wrapping an already wrapped
    method is a no-op; properties and missing names are skipped (one warning).
    While nothing is recorded (no profiler, or disabled), plain phases install nothing
    (``Instrumentation.idle``), as a ``@phase`` decorator returns the function unchanged.
    """
    result = Instrumentation(idle=not _emit.is_measuring())
    is_class = isinstance(target, type)
    owner_label = target.__qualname__ if is_class else type(target).__qualname__
    for name, spec in _method_phases(methods).items():
        label = f"{owner_label}.{name}"
        raw = _current(target, name, is_class)
        reason = _not_wrappable(raw)
        if reason is None and is_instrumented(raw):
            continue
        # What can be known without changing anything is checked in both states, so a program
        # gets the same skips and warnings (under -W error: the same exception) with or without a profiler.
        d = None if is_class or reason else _dict_of(target)
        reason = reason or _not_patchable(raw, is_class, d)
        if reason:
            result.skipped.append(f"{label} ({reason})")
            continue
        ph = _as_phase(spec)
        if result.idle and type(ph).wrap is phase.wrap:  # subclasses' wrappers may do more than ranges
            result.patches.append(_Patch(target, name, _UNCHANGED, label))
            continue
        patch = _patch_class(target, name, raw, ph, label) if is_class else _patch_instance(target, d, name, ph, label)
        if isinstance(patch, str):
            result.skipped.append(f"{label} ({patch})")
        else:
            result.patches.append(patch)
    if warn and result.skipped:
        warnings.warn("nvtxsim: not instrumented: " + ", ".join(result.skipped), stacklevel=2)
    return result


def _method_phases(methods: Mapping[str, PhaseSpec] | Iterable[str]) -> Mapping[str, PhaseSpec]:
    """``instrument``'s ``methods`` as {method name: phase}: one name, or names that are their own phase."""
    if isinstance(methods, str):
        return {methods: methods}
    if not isinstance(methods, Mapping):
        return {m: m for m in methods}
    return methods


def _current(target: Any, name: str, is_class: bool) -> Any:
    """What ``target.name`` resolves to without calling descriptors: the instance dict first, then the class's."""
    raw = _lookup_static(target if is_class else type(target), name)
    if not is_class:
        d = _dict_of(target)
        if d is not None and name in d:
            raw = d[name]
    return raw


def _not_wrappable(raw: Any) -> str | None:
    """Why ``raw`` is skipped (missing, a property, a class), or None."""
    if raw is _MISSING:
        return "missing"
    if isinstance(raw, property) or (inspect.isdatadescriptor(raw) and not callable(raw)):
        return "property"
    if isinstance(raw, type):
        return "a class"
    return None


def _not_patchable(raw: Any, is_class: bool, instance_dict: Any) -> str | None:
    """Why a wrappable ``raw`` still cannot be patched (not callable, no instance dict), or None."""
    if is_class:
        return None if isinstance(raw, (staticmethod, classmethod)) or callable(raw) else "not callable"
    return "no instance dict" if instance_dict is None else None


def _patch_class(target: type, name: str, raw: Any, ph: phase, label: str) -> _Patch | str:
    """Replace the class attribute by its wrapped form (descriptors kept); the patch, or why not."""
    if isinstance(raw, staticmethod):
        new: Any = staticmethod(ph.wrap(raw.__func__))
    elif isinstance(raw, classmethod):
        new = classmethod(ph.wrap(raw.__func__))
    else:
        new = ph.wrap(raw)
    previous = target.__dict__.get(name, _MISSING)
    try:
        setattr(target, name, new)
    except Exception as exc:  # builtin/immutable types, metaclasses that refuse attributes
        return f"cannot be replaced: {type(exc).__name__}"
    return _Patch(target, name, previous, label)


def _patch_instance(target: Any, d: Any, name: str, ph: phase, label: str) -> _Patch | str:
    """Put a :class:`_PhasedMethod` in the instance dict ``d`` (the class is left alone); the patch, or why not."""
    previous = d.get(name, _MISSING)
    try:
        d[name] = _PhasedMethod.build(target, name, ph, None if previous is _MISSING else previous)
    except Exception as exc:
        return f"lookup failed: {type(exc).__name__}"
    return _Patch(target, name, previous, label)
