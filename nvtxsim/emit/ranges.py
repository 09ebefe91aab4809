"""Emit stage: NVTX ranges for simulation phases, in the ``nvtxsim`` domain.

The hot path is two calls into the ``nvtx`` package's Cython layer per range
(``push_range``/``pop_range`` with pre-built attributes), so a phase costs about
what raw ``nvtx`` costs. With no profiler attached (``NVTX_INJECTION64_PATH``
unset) or when disabled, nothing crosses into C.

Old Nsight Systems (2022.4 .. at least 2023.2) refuses the payload-extension
handshake that ``nvtx>=0.2.12`` uses to decide whether a domain is enabled, so
every range of such an ``nvtx`` is silently dropped. When a tool is attached
and that gate says "disabled", nvtxsim opens its domain without the gate (and
lifts the gate for the ``nvtx`` package as a whole, so the user's own
``nvtx.annotate`` ranges appear too). See README, "Old nsys and new nvtx".
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from nvtxsim import envflags as _envflags
from nvtxsim import phases as _phases
from nvtxsim.phases import UNMATCHED_POP_MARK

F = TypeVar("F", bound=Callable[..., Any])
Payload = int | float | None

FORKED_UNTRACED = (
    "forked from a profiled process without exec and nsys does not trace this process "
    "(NVTX calls here can hang nsys 2022.4): ranges are off; use the 'spawn' start method "
    "or nsys --trace-fork-before-exec=true"
)

# --------------------------------------------------------------------------- reliability helpers

_report_lock = threading.Lock()
_reported: set = set()


def _report_once(key: Any, message: str) -> None:
    """One stderr line per distinct problem and process; never raises (stderr may be gone)."""
    with _report_lock:
        if key in _reported:
            return
        _reported.add(key)
    try:
        sys.stderr.write(f"nvtxsim: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


_STORAGE_FILE = re.compile(rb"/injection_(\d+)_\d+_storage\.dat")


def _nsys_traces_this_process() -> bool | None:
    """Whether nsys traces this process: None when it cannot be told (no nsys storage mapping seen).

    nsys (2022.4) maps one ``injection_<pid>_<n>_storage.dat`` per traced process. A child
    forked without exec inherits its parent's mapping but gets its own only under
    ``--trace-fork-before-exec=true``; without it, the child's NVTX calls are dropped, and
    the first NVTX call of a forked child that had not used NVTX before hangs.
    """
    try:
        with open("/proc/self/maps", "rb") as fh:
            pids = {int(p) for p in _STORAGE_FILE.findall(fh.read())}
    except Exception:
        return None
    if not pids:
        return None
    return os.getpid() in pids


def _clean_text(value: Any) -> str:
    """``value`` as a str NVTX accepts (UTF-8 encodable); never raises."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        text = f"<unprintable {type(value).__name__}>"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clean_payload(payload: Any) -> Payload:
    if isinstance(payload, bool) or not isinstance(payload, (int, float)):
        return None
    if isinstance(payload, int) and not -(1 << 63) <= payload < (1 << 63):
        return float(payload)
    return payload


def _safe_attributes(name: Any, color: Any, category: Any, payload: Any = None) -> Any:
    """Event attributes that never raise: arguments NVTX rejects are repaired and reported once.

    Attributes are built only while a profiler is attached, so without this a bad argument
    (a name with lone surrogates, a colour out of range, an oversized int payload) would
    fail only under the profiler.
    """
    try:
        return _backend.attributes(name, color, category, payload)
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    clean_color = color if isinstance(color, int) and 0 <= color <= 0xFFFFFFFF else None
    clean_category = None if category is None else _clean_text(category)
    clean = (_clean_text(name), clean_color, clean_category, _clean_payload(payload))
    _report_once(
        ("attributes", clean[0][:200]),
        f"NVTX rejected the attributes of phase {clean[0][:80]!r} ({problem}); recorded with repaired ones",
    )
    for args in (clean, (clean[0], None, None, None), ("nvtxsim.invalid_phase", None, None, None)):
        try:
            return _backend.attributes(*args)
        except Exception as exc:
            last = exc
    _nvtx_failed(last)
    return None


# --------------------------------------------------------------------------- backend


class _Backend:
    """What the rest of the module needs from NVTX, resolved once per process."""

    def __init__(self) -> None:
        self.tool_attached = bool(os.environ.get("NVTX_INJECTION64_PATH"))
        self.gate_bypassed = False  # True when the nvtx>=0.2.12 enabled-gate was lifted
        self.domain: Any = None
        self.handle: Any = None
        self.error: str | None = None
        self.push: Callable[..., Any] = _noop
        self.pop: Callable[..., Any] = _noop
        self.mark: Callable[..., Any] = _noop
        self._lock = threading.Lock()
        self._attr_cache: dict[tuple, Any] = {}
        self._domains: dict[str, Any] = {}
        self.failed = False  # an NVTX call raised: ranges stay off for the rest of the process
        self.inactive_reason: str | None = None  # why a tool is attached but nothing is recorded
        self.unmatched_pops = 0
        if self.tool_attached:
            if _nsys_traces_this_process() is False:
                self.inactive_reason = FORKED_UNTRACED
                return
            try:
                self._open()
            except Exception as exc:  # NVTX must never break the user's program
                self.error = f"{type(exc).__name__}: {exc}"
                self.domain = None
                _report_once("open", f"could not open the NVTX domain ({self.error}); phases are not recorded")

    def _open(self) -> None:
        import nvtx
        from nvtx import _lib as nvtxlib

        domain = nvtx.get_domain(_phases.DOMAIN)
        dummy_cls = getattr(getattr(nvtxlib, "lib", nvtxlib), "DummyDomain", None)
        if dummy_cls is not None and isinstance(domain, dummy_cls):
            domain = _lift_enabled_gate(_phases.DOMAIN)
            self.gate_bypassed = domain is not None
        if domain is None:
            return
        self.domain = domain
        self.handle = domain.handle
        self.push = nvtxlib.push_range
        self.pop = nvtxlib.pop_range
        self.mark = nvtxlib.mark

    @property
    def live(self) -> bool:
        return self.domain is not None and not self.failed and self.inactive_reason is None

    def domain_for(self, name: str | None) -> Any:
        """Another NVTX domain (None: nvtxsim's), opened like nvtxsim's own; None when not live."""
        if self.domain is None or name is None or name == _phases.DOMAIN:
            return self.domain
        with self._lock:
            dom = self._domains.get(name)
            if dom is None:
                import nvtx

                dom = self._domains[name] = nvtx.get_domain(name)  # the gate is already lifted if needed
            return dom

    def attributes(self, name: str, color: int | None, category: str | None, payload: Payload = None) -> Any:
        """Event attributes for a range; cached per (name, color, category) when there is no payload."""
        if self.domain is None:
            return None
        if payload is None:
            key = (name, color, category)
            attrs = self._attr_cache.get(key)
            if attrs is None:
                with self._lock:
                    attrs = self._attr_cache.get(key)
                    if attrs is None:
                        attrs = self.domain.get_event_attributes(name, color, category)
                        self._attr_cache[key] = attrs
            return attrs
        return self.domain.get_event_attributes(name, color, category, payload)


def _noop(*_args: Any) -> None:
    return None


def _lift_enabled_gate(name: str) -> Any:
    """Open an NVTX domain without ``nvtxDomainIsEnabled`` (nvtx>=0.2.12 under old nsys).

    Also replaces ``nvtx.Domain.__new__`` so domains the user opens afterwards are
    recorded too, and clears nvtx's domain caches so no dummy domain stays cached.
    """
    try:
        import nvtx.nvtx as N
        from nvtx._lib import lib as L
    except Exception:
        return None
    Domain = getattr(L, "Domain", None)
    DomainHandle = getattr(L, "DomainHandle", None)
    if Domain is None or DomainHandle is None:
        return None

    def __new__(cls, name=None):  # noqa: N807 - mirrors nvtx's own constructor
        obj = object.__new__(cls)
        obj.handle = DomainHandle(name)
        return obj

    Domain.__new__ = __new__
    for cached in ("get_domain", "_get_domain_cached"):
        fn = getattr(N, cached, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    import nvtx

    return nvtx.get_domain(name)


_backend = _Backend()
_enabled = not _envflags.env_flag(_envflags.DISABLE, default=False, on_unknown=True)
if _envflags.parse_flag(os.environ.get(_envflags.DISABLE, "")) is None:
    _report_once(
        "env-disable",
        f"{_envflags.DISABLE}={os.environ[_envflags.DISABLE][:40]!r} is not one of 1/0, true/false, yes/no, on/off; ranges are off",
    )
#: True when ranges actually reach a tool: enabled, a tool attached, domain open.
_active = _enabled and _backend.live
_push = _backend.push
_pop = _backend.pop
_handle = _backend.handle
_live = _backend.live  # NVTX usable (whether or not enabled); kept in step by _refresh()
_tls = threading.local()  # per-thread depth of range_push ranges that reached NVTX
_pushed = False  # some range_push reached NVTX in this process (keeps range_pop free otherwise)


def _refresh() -> None:
    global _active, _live
    _live = _backend.live
    _active = _enabled and _live
    if "phase" in globals():  # not while the module is still being imported
        _install_with_methods()


def _after_fork_in_child() -> None:
    """In a forked child: fresh locks, and ranges off when nsys does not trace this process."""
    global _report_lock
    try:
        _report_lock = threading.Lock()
        _backend._lock = threading.Lock()
        if _backend.live and _nsys_traces_this_process() is False:
            _backend.inactive_reason = FORKED_UNTRACED
            _refresh()
    except Exception:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def enable() -> None:
    """Turn ranges back on (call between phases, not inside one)."""
    global _enabled
    _enabled = True
    _refresh()


def disable() -> None:
    """Turn ranges off: phases become near-free no-ops (call between phases, not inside one)."""
    global _enabled
    _enabled = False
    _refresh()


def is_enabled() -> bool:
    """True when nvtxsim is not disabled (whether or not a profiler is attached)."""
    return _enabled


def is_recording() -> bool:
    """True when ranges reach an attached profiler right now."""
    return _active


# Live timing (emit.live) hooks in here: while it measures, its own __enter__/__exit__ (which
# also record the range) replace the class's; while it is off nothing below costs anything.
_live_methods: tuple[Callable[..., Any], Callable[..., Any]] | None = None  # (enter, exit) of emit.live
_timing = _live_methods  # the same while nvtxsim is enabled, else None (kept by _install_with_methods)
_live_on = False  # emit.live is started (it may still skip unsampled iterations)


def set_live(on: bool, timing: tuple[Callable[..., Any], Callable[..., Any]] | None = None) -> None:
    """emit.live's switch: ``timing`` = its (enter, exit) while an iteration is measured, else None."""
    global _live_methods, _live_on
    _live_on = on
    _live_methods = timing if on else None
    _install_with_methods()


def is_measuring() -> bool:
    """True when phases do work: ranges reach a profiler or live timing is on (wrappers are then worth installing)."""
    return _active or _live_on


def backend_info() -> dict[str, Any]:
    """Facts for ``nvtxsim doctor`` and for tests."""
    try:
        import nvtx

        version = getattr(nvtx, "__version__", None)
        if version is None:
            from importlib.metadata import version as _v

            version = _v("nvtx")
    except Exception:
        version = None
    return {
        "nvtx_version": version,
        "tool_attached": _backend.tool_attached,
        "injection": os.environ.get("NVTX_INJECTION64_PATH"),
        "domain_open": _backend.live,
        "gate_bypassed": _backend.gate_bypassed,
        "enabled": _enabled,
        "recording": _active,
        "error": _backend.error,
        "inactive_reason": _backend.inactive_reason,
        "unmatched_pops": _backend.unmatched_pops,
    }


def _nvtx_failed(exc: BaseException) -> None:
    """Turn nvtxsim off for good after an NVTX failure instead of raising into user code (reported once)."""
    if not _backend.failed:
        _backend.failed = True
        _backend.error = f"{type(exc).__name__}: {exc}"
    _refresh()
    _report_once("nvtx-failed", f"NVTX call failed ({_backend.error}); ranges turned off for the rest of this process")


# --------------------------------------------------------------------------- phase


_SHARED: dict[str, phase] = {}
_SHARED_MAX = 4096  # distinct plain names kept; past that, phases are built per call


class _PhaseType(type):
    """``phase(name)`` without options returns one shared, pre-built object per name.

    The inline form ``with nvtxsim.phase("sim_step"):`` then costs a dict lookup
    instead of building attributes on every call. Phase objects carry no per-use
    state, so sharing them across threads and nesting levels is safe.
    """

    def __call__(cls, name: Any, **options: Any) -> Any:
        if not options and cls is phase and type(name) is str:  # subclasses build their own
            shared = _SHARED.get(name)
            if shared is not None:
                return shared
            obj = super().__call__(name)
            if len(_SHARED) < _SHARED_MAX:
                _SHARED[name] = obj
            return obj
        return super().__call__(name, **options)


class phase(metaclass=_PhaseType):
    """A named phase: use it as a context manager or as a decorator.

    ``with nvtxsim.phase("sim_step"): ...`` or ``@nvtxsim.phase("policy")``.
    Build it once (module level) for the lowest cost per range. Decorated
    generators and coroutines get one range per resumption, so ranges never
    stay open across a ``yield`` or an ``await``. A ``with phase(...)`` block
    around a ``yield``/``await`` stays open while suspended: still balanced on
    its thread, but interleaved generators/tasks can end each other's ranges
    (docs/reliability.md). Nothing here ever raises into the caller because of NVTX.
    """

    __slots__ = ("name", "color", "category", "payload", "_attrs", "_self", "__weakref__")

    def __init__(
        self,
        name: str,
        *,
        color: int | None = None,
        payload: Payload = None,
        category: str | None = None,
    ) -> None:
        if type(name) is not str:
            name = _clean_text(name)
        if color is None or category is None:
            style = _phases.style_for(name)
            if color is None:
                color = style.color
            if category is None:
                category = style.category
        self.name = name
        self.color = color
        self.category = category
        self.payload = payload
        self._attrs = _safe_attributes(name, color, category, payload) if _backend.live else None
        self._self = weakref.ref(self)  # what the idle __enter__ returns (see _install_with_methods)

    def __repr__(self) -> str:
        return f"phase({self.name!r})"

    def __reduce__(self) -> Any:
        state = {k: getattr(self, k) for k in _state_slots(type(self)) if hasattr(self, k)}
        state.update(getattr(self, "__dict__", {}))  # attributes of subclasses without __slots__
        return (_rebuild_phase, (type(self), state))

    # While ranges are recorded these two are the class's __enter__/__exit__; otherwise
    # _install_with_methods puts C-level no-ops in their place (see there).
    def _recording_enter(self) -> phase:
        if _active:
            try:
                _push(self._attrs, _handle)
            except Exception as exc:
                _nvtx_failed(exc)
        return self

    def _recording_exit(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if _active:
            try:
                _pop(_handle)
            except Exception as err:
                _nvtx_failed(err)
        return False

    __enter__ = _recording_enter
    __exit__ = _recording_exit

    def __call__(self, fn: F) -> F:
        """Decorate ``fn``; the result behaves the same whether or not a profiler records.

        While nothing is recorded ``fn`` comes back unchanged (no cost per call); while recording
        it comes back wrapped in the same shape (see :func:`wrap_in_shape`). What cannot be wrapped
        that way (a class, a non-callable) is refused with a TypeError in both states.
        """
        if getattr(fn, "__nvtxsim_phase__", None) is not None:
            return fn  # already a phase: never range twice
        refuse_undecoratable(fn)
        if not (_active or _live_on):
            return fn  # like nvtx: no tool or disabled at decoration time costs nothing per call
        return wrap_in_shape(self, fn)

    def wrap(self, fn: F) -> F:
        """Always wrap ``fn`` (the wrapper checks at call time whether ranges are recorded).

        A wrapped call costs one extra Python frame of recursion depth, also for generators
        and coroutines (one range per resumption). Callables that are not plain functions keep
        their shape (:func:`wrap_in_shape`).
        """
        if not isinstance(fn, types.FunctionType):
            return wrap_in_shape(self, fn)
        if inspect.isgeneratorfunction(fn):
            wrapper = _wrap_generator(fn, self)
        elif inspect.iscoroutinefunction(fn):
            wrapper = _wrap_coroutine(fn, self)
        elif inspect.isasyncgenfunction(fn):
            return fn  # async generators: left as they are (a range cannot span an await safely)
        else:
            wrapper = _wrap_call(fn, self)
        wrapper.__nvtxsim_phase__ = self.name  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]


def _wrap_call(fn: Callable[..., Any], ph: phase) -> Callable[..., Any]:
    """``fn`` in ``ph``'s range per call: one Python frame more than ``fn``."""
    attrs = ph._attrs

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _timing is not None:  # live timing: the phase's own __enter__/__exit__ time it
            with ph:
                return fn(*args, **kwargs)
        if not _active:
            return fn(*args, **kwargs)
        try:
            _push(attrs, _handle)
        except Exception as exc:
            _nvtx_failed(exc)
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            try:
                _pop(_handle)
            except Exception as exc:
                _nvtx_failed(exc)

    return wrapper


_DESCRIPTORS = (staticmethod, classmethod, property, functools.cached_property, functools.partialmethod)


def refuse_undecoratable(fn: Any) -> None:
    """TypeError for what a phase cannot wrap without changing it: classes and non-callables.

    Raised whether or not a profiler records, so a program never works only without one.
    """
    if isinstance(fn, type):
        raise TypeError(
            f"phase() cannot decorate a class ({fn.__qualname__}): decorate its methods, "
            f"or use nvtxsim.instrument({fn.__qualname__}, [...]) to wrap methods by name"
        )
    if not callable(fn) and not isinstance(fn, _DESCRIPTORS):
        raise TypeError(f"phase() decorates functions, methods and properties, not {type(fn).__name__} objects")


def wrap_in_shape(ph: phase, fn: Any) -> Any:
    """``ph`` around ``fn``, keeping what ``fn`` is: descriptors stay descriptors of the same kind.

    ``staticmethod``/``classmethod``/``property``/``cached_property``/``partialmethod`` are rebuilt around wrapped
    functions; a bound method stays a bound method; another callable (``lru_cache``, ``partial``,
    a builtin, a callable object) gets a function wrapper that carries its public attributes
    (``cache_info()`` ...; a snapshot of the values, live for methods) and that binds as a method
    only where the callable itself did.
    """
    refuse_undecoratable(fn)
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(ph.wrap(fn.__func__))
    if isinstance(fn, property):
        for part, rebuild in ((fn.fget, "getter"), (fn.fset, "setter"), (fn.fdel, "deleter")):
            if part is not None and getattr(part, "__nvtxsim_phase__", None) is None:
                fn = getattr(fn, rebuild)(ph.wrap(part))
        return fn
    if isinstance(fn, functools.partialmethod):
        return functools.partialmethod(ph.wrap(fn.func), *fn.args, **fn.keywords)
    if isinstance(fn, functools.cached_property):
        new = functools.cached_property(ph.wrap(fn.func))
        new.attrname, new.__doc__ = fn.attrname, fn.__doc__
        return new
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return types.MethodType(ph.wrap(fn.__func__), fn.__self__)
    if isinstance(fn, types.FunctionType):
        return ph.wrap(fn)
    if inspect.isasyncgenfunction(fn):
        return fn  # as ph.wrap leaves async generator functions
    # What calling returns decides the wrapper (inspect sees through partials): a partial of a
    # generator or coroutine function gets one range per resumption, not one around its creation.
    kind = (
        _wrap_generator
        if inspect.isgeneratorfunction(fn)
        else _wrap_coroutine
        if inspect.iscoroutinefunction(fn)
        else None
    )
    wrapper = kind(fn, ph) if kind is not None else _wrap_call(fn, ph)
    wrapper.__nvtxsim_phase__ = ph.name  # type: ignore[attr-defined]
    for name in dir(fn):
        if not name.startswith("_") and not hasattr(wrapper, name):
            try:
                setattr(wrapper, name, getattr(fn, name))
            except Exception:
                pass
    binder = getattr(type(fn), "__get__", None)
    if binder is None:
        return staticmethod(wrapper)  # fn does not bind as a method in a class: neither does the wrapper
    if isinstance(fn, _BINDS_AS_FUNCTION):
        return wrapper  # binds as a function does, like the wrapper
    return _binding_like(ph, fn, wrapper)


# Callables whose ``__get__`` binds exactly as a function's does (``MethodType(fn, obj)``).
_BINDS_AS_FUNCTION = (type(functools.lru_cache(None)(lambda: None)), types.BuiltinFunctionType)


class _BindsLike:
    """A wrapped callable with a ``__get__`` of its own (a descriptor that is also callable): in a
    class body the wrapper binds through that ``__get__`` — what it returns is wrapped — so an
    attribute lookup gives what it gives without a profiler. Called directly it is the wrapper
    (``__call__`` is the wrapper itself: one frame of recursion depth)."""

    __slots__ = ("__dict__", "_ph", "_fn")
    _ph: phase
    _fn: Any

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # each subclass: the wrapper itself
        raise NotImplementedError

    def __get__(self, obj: Any, typ: Any = None) -> Any:
        bound = self._fn.__get__(obj, typ)
        if bound is self._fn:
            return self
        if isinstance(bound, types.MethodType) and bound.__func__ is self._fn:
            return types.MethodType(self, bound.__self__)
        return wrap_in_shape(self._ph, bound) if callable(bound) and not isinstance(bound, type) else bound

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as the callable would be: by reference when it has a name, else by value
        (which unpickles the callable itself, unwrapped, as without a profiler)."""
        name = getattr(self._fn, "__qualname__", None)
        return name if isinstance(name, str) and name else (_unwrapped, (self._fn,))


def _unwrapped(fn: Any) -> Any:
    return fn


def _binding_like(ph: phase, fn: Any, wrapper: Callable[..., Any]) -> Any:
    cls = types.new_class(
        type(fn).__name__, (_BindsLike,), exec_body=lambda ns: ns.update(__call__=staticmethod(wrapper), __slots__=())
    )
    obj = cls()
    obj._ph, obj._fn = ph, fn
    obj.__dict__.update(wrapper.__dict__)
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        if hasattr(wrapper, name):
            obj.__dict__[name] = getattr(wrapper, name)
    return obj


_NOT_STATE = frozenset({"_attrs", "_self", "__weakref__", "__dict__"})


def _state_slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        names.extend(n for n in ((slots,) if isinstance(slots, str) else slots) if n not in _NOT_STATE)
    return names


def _rebuild_phase(cls: type[phase], state: dict) -> phase:
    """Unpickle/copy a phase: its NVTX attributes and self-reference are made anew in this process."""
    obj = cls.__new__(cls)
    for k, v in state.items():
        setattr(obj, k, v)
    obj._attrs = _safe_attributes(obj.name, obj.color, obj.category, obj.payload) if _backend.live else None
    obj._self = weakref.ref(obj)
    return obj


#: Idle ``__enter__``: the slot descriptor of ``phase._self`` returns the instance's weak
#: reference, and calling that returns the instance: two C calls, no Python frame.
_IDLE_ENTER = phase.__dict__["_self"]
#: Idle ``__exit__``: ``"".format(exc_type, exc, tb)`` is ``""`` (falsy: exceptions propagate).
_IDLE_EXIT: Any = staticmethod("".format)  # stands in for a method: Any, not its staticmethod type


def _install_with_methods() -> None:
    """Give ``phase`` C-level no-op ``__enter__``/``__exit__`` while nothing is recorded.

    A ``with`` statement whose methods are Python functions costs two Python frames
    (~0.13-0.15 us) even when they do nothing; with these it costs ~0.07 us. The swap
    happens only in :func:`enable`/:func:`disable` and when NVTX fails, which the
    ``_active`` check in the recording methods already treated the same way (a phase
    open across a switch is not popped/pushed on the other side).
    """
    global _timing
    _timing = _live_methods if _enabled else None  # disable() pauses live timing too
    if _timing is not None:
        phase.__enter__, phase.__exit__ = _timing
    elif _active:
        phase.__enter__ = phase._recording_enter
        phase.__exit__ = phase._recording_exit
    else:
        phase.__enter__ = _IDLE_ENTER
        phase.__exit__ = _IDLE_EXIT


_install_with_methods()


def _open_resumption(ph: phase) -> int:
    """Open the range of one generator/coroutine resumption: 2 when live timing times it (the phase's
    own ``__enter__``, which also pushes while recording), 1 when pushed, 0 when nothing records."""
    if _timing is not None:
        ph.__enter__()
        return 2
    if not _active:
        return 0
    try:
        _push(ph._attrs, _handle)
        return 1
    except Exception as exc:
        _nvtx_failed(exc)
        return 0


def _close_resumption(ph: phase, opened: int) -> None:
    if opened == 2:
        ph.__exit__(None, None, None)
    elif opened == 1:
        try:
            _pop(_handle)
        except Exception as exc:
            _nvtx_failed(exc)


def _wrap_generator(fn: Callable[..., Any], ph: phase) -> Callable[..., Any]:
    """A generator forwarding send/throw/close to ``fn``'s, one range per resumption.

    The loop is the wrapper itself (no helper generator between), so a wrapped generator costs
    one frame of recursion depth, as a wrapped function does.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        it = fn(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            opened = _open_resumption(ph)
            try:
                item = it.send(sent) if thrown is None else it.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                _close_resumption(ph, opened)
            thrown = None
            try:
                sent = yield item
            except GeneratorExit:
                it.close()
                raise
            except BaseException as exc:  # delivered into the wrapped generator
                thrown, sent = exc, None

    return wrapper


class _Suspend:
    """Awaiting this passes ``item`` (what the wrapped coroutine yielded) up to the event loop."""

    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item

    def __await__(self) -> Any:
        return (yield self.item)


def _wrap_coroutine(fn: Callable[..., Any], ph: phase) -> Callable[..., Any]:
    """A coroutine driving ``fn``'s, one range per resumption (one frame of recursion depth)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        it = fn(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            opened = _open_resumption(ph)
            try:
                item = it.send(sent) if thrown is None else it.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                _close_resumption(ph, opened)
            thrown = None
            try:
                sent = await _Suspend(item)
            except GeneratorExit:
                it.close()
                raise
            except BaseException as exc:  # cancellation and the like, delivered into the wrapped coroutine
                thrown, sent = exc, None

    return wrapper


# --------------------------------------------------------------------------- marks


def mark(name: str, payload: Payload = None, *, color: int | None = None) -> None:
    """An instant event in the nvtxsim domain (e.g. "episode_end")."""
    if not _active:
        return
    try:
        name = name if type(name) is str else _clean_text(name)
        style = _phases.style_for(name)
        attrs = _safe_attributes(name, color if color is not None else style.color, style.category, payload)
        _backend.mark(attrs, _handle)
    except Exception as exc:
        _nvtx_failed(exc)


def range_push(name: str, payload: Payload = None) -> None:
    """Open a phase without a ``with`` block; pair with :func:`range_pop` on the same thread."""
    global _pushed
    if not _active:
        return
    try:
        name = name if type(name) is str else _clean_text(name)
        style = _phases.style_for(name)
        try:
            attrs = _backend.attributes(name, style.color, style.category, payload)
        except Exception:
            attrs = _safe_attributes(name, style.color, style.category, payload)
        _push(attrs, _handle)
    except Exception as exc:
        _nvtx_failed(exc)
        return
    _tls.depth = getattr(_tls, "depth", 0) + 1
    _pushed = True


def range_pop() -> None:
    """Close the innermost phase opened with :func:`range_push` on this thread.

    A pop with no :func:`range_push` of this thread open is refused (it would end some other
    range, e.g. an enclosing ``with phase``): reported once on stderr and recorded as an
    ``unmatched_range_pop`` mark that ``nvtxsim report`` counts. A range pushed before
    :func:`disable` is still popped, so pushes and pops stay balanced.
    """
    if not _active and not _pushed:
        return
    depth = getattr(_tls, "depth", 0)
    if depth <= 0:
        if _active:
            _unmatched_pop()
        return
    _tls.depth = depth - 1
    if not _live:
        return
    try:
        _pop(_handle)
    except Exception as exc:
        _nvtx_failed(exc)


def _unmatched_pop() -> None:
    _backend.unmatched_pops += 1
    _report_once(
        "unmatched-pop",
        "range_pop() without an open range_push() on this thread was ignored (reported once; "
        f"each is recorded as an {UNMATCHED_POP_MARK!r} mark)",
    )
    mark(UNMATCHED_POP_MARK)


class RangeToken:
    """What :func:`start_range` returns and :func:`end_range` takes; ends its range once."""

    __slots__ = ("_range_id", "_domain", "_ended")

    def __init__(self, range_id: Any, domain: Any) -> None:
        self._range_id = range_id
        self._domain = domain
        self._ended = False

    def __repr__(self) -> str:
        return f"<nvtxsim range token{' (ended)' if self._ended else ''}>"


def start_range(
    name: str,
    *,
    domain: str | None = None,
    payload: Payload = None,
    color: int | None = None,
    category: str | None = None,
) -> RangeToken | None:
    """Open a start/end range: it may end on another thread or out of order (async work, windows).

    Returns a token for :func:`end_range` (None when nothing is recorded).
    """
    if not _active:
        return None
    try:
        name = name if type(name) is str else _clean_text(name)
        style = _phases.style_for(name)
        dom = _backend.domain_for(domain)
        attrs = dom.get_event_attributes(
            name, color if color is not None else style.color, category or style.category, payload
        )
        from nvtx import _lib as nvtxlib

        return RangeToken(*nvtxlib.start_range(attrs, dom.handle))
    except Exception as exc:
        _nvtx_failed(exc)
        return None


def end_range(token: RangeToken | None) -> None:
    """Close a range opened with :func:`start_range` (from any thread); None is ignored.

    Anything else than a token of :func:`start_range`, or a token already ended, is ignored with
    one stderr line, recording or not: a caller's mistake never turns ranges off.
    """
    if token is None:
        return
    if type(token) is not RangeToken:
        _report_once(
            "end-range-token", f"end_range() got a {type(token).__name__}, not a token of start_range(); ignored"
        )
        return
    if token._ended:
        _report_once("end-range-twice", "end_range() was called twice with one token; the second call was ignored")
        return
    token._ended = True
    if not _live:
        return
    try:
        from nvtx import _lib as nvtxlib

        nvtxlib.end_range(token._range_id, token._domain)
    except Exception as exc:
        _nvtx_failed(exc)
