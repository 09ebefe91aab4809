"""Emit stage: NVTX ranges for simulation phases, in the ``nvtxsim`` domain.

The hot path is two calls into the ``nvtx`` package's Cython layer per range
(``push_range``/``pop_range`` with pre-built attributes), so a phase costs about
what raw ``nvtx`` costs. With no profiler attached (``NVTX_INJECTION64_PATH``
unset) or when disabled, nothing crosses into C.

That speed comes from module globals: what :mod:`nvtxsim.emit.backend` resolved (the push/pop
functions, the domain handle) and whether ranges are recorded now (``_active``) are read
straight from this module's namespace by :class:`phase`'s methods and by the wrappers built
here (:meth:`phase._call_wrapper`); :func:`enable`, :func:`disable`, an NVTX failure and live
timing (:func:`set_live`) rewrite them, and swap the class's ``__enter__``/``__exit__``. The
shapes of decorated callables are :mod:`nvtxsim.emit.wrapping`'s.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from nvtxsim import envflags as _envflags
from nvtxsim import phases as _phases
from nvtxsim.emit import wrapping as _wrapping
from nvtxsim.emit.backend import Backend, Payload, clean_payload, clean_text, nvtx_version
from nvtxsim.emit.notices import report_once
from nvtxsim.phases import UNMATCHED_POP_MARK

F = TypeVar("F", bound=Callable[..., Any])

# --------------------------------------------------------------------------- state


_backend = Backend()
_enabled = not _envflags.env_flag(_envflags.DISABLE, default=False, on_unknown=True)
if _envflags.parse_flag(os.environ.get(_envflags.DISABLE, "")) is None:
    report_once(
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
    """In a forked child: a fresh backend lock, and ranges off when nsys does not trace this process."""
    try:
        if _backend.after_fork_in_child():
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
# Stack sampling (emit.stacks) asks the phases which one is open on each thread: while it samples, the
# class's __enter__/__exit__ are the tracking ones below, around the methods they would be otherwise.
_stacks_on = False
_open_phases: dict[int, list[str]] = {}  # thread ident → names of its open phases, innermost last
_base: tuple[Any, Any] | None = None  # the (enter, exit) the tracking methods call; None: nothing records
_get_ident = threading.get_ident


def set_live(on: bool, timing: tuple[Callable[..., Any], Callable[..., Any]] | None = None) -> None:
    """emit.live's switch: ``timing`` = its (enter, exit) while an iteration is measured, else None."""
    global _live_methods, _live_on
    _live_on = on
    _live_methods = timing if on else None
    _install_with_methods()


def set_stacks(on: bool) -> None:
    """emit.stacks' switch: while on, every phase tells it which phase is open on its thread."""
    global _stacks_on
    _stacks_on = on
    _install_with_methods()


def is_measuring() -> bool:
    """True when phases do work: ranges reach a profiler, live timing or stack sampling is on (wrappers are then
    worth installing)."""
    return _active or _live_on or _stacks_on


def backend_info() -> dict[str, Any]:
    """Facts for ``nvtxsim doctor`` and for tests."""
    return {
        "nvtx_version": nvtx_version(),
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
    _backend.fail(exc)
    _refresh()
    report_once("nvtx-failed", f"NVTX call failed ({_backend.error}); ranges turned off for the rest of this process")


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
    clean_category = None if category is None else clean_text(category)
    clean = (clean_text(name), clean_color, clean_category, clean_payload(payload))
    report_once(
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
            name = clean_text(name)
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

    def _tracking_enter(self) -> Any:
        got = _base[0](self) if _base is not None else self
        tid = _get_ident()
        names = _open_phases.get(tid)
        if names is None:
            names = _open_phases[tid] = []
        names.append(self.name)
        return got

    def _tracking_exit(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        names = _open_phases.get(_get_ident())
        if names:
            names.pop()
        return bool(_base[1](self, exc_type, exc, tb)) if _base is not None else False

    __enter__ = _recording_enter
    __exit__ = _recording_exit

    def __call__(self, fn: F) -> F:
        """Decorate ``fn``; the result behaves the same whether or not a profiler records.

        While nothing is recorded ``fn`` comes back unchanged (no cost per call); while recording
        it comes back wrapped in the same shape (:func:`nvtxsim.emit.wrapping.wrap_in_shape`). What
        cannot be wrapped that way (a class, a non-callable) is refused with a TypeError in both states.
        """
        if getattr(fn, "__nvtxsim_phase__", None) is not None:
            return fn  # already a phase: never range twice
        _wrapping.refuse_undecoratable(fn)
        if not (_active or _live_on or _stacks_on):
            return fn  # like nvtx: no tool or disabled at decoration time costs nothing per call
        return _wrapping.wrap_in_shape(self, fn)

    def wrap(self, fn: F) -> F:
        """Always wrap ``fn`` (the wrapper checks at call time whether ranges are recorded).

        A wrapped call costs one extra Python frame of recursion depth, also for generators
        and coroutines (one range per resumption). Callables that are not plain functions keep
        their shape (:mod:`nvtxsim.emit.wrapping`).
        """
        return _wrapping.wrap(self, fn)

    # The per-call and per-resumption work of the wrappers of nvtxsim.emit.wrapping: here, so that
    # they read this module's globals (the hot path) directly.
    def _call_wrapper(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` in this phase's range per call: one Python frame more than ``fn``."""
        ph, attrs = self, self._attrs

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

    def _open_resumption(self) -> int:
        """Open the range of one generator/coroutine resumption: 2 when live timing times it (the phase's
        own ``__enter__``, which also pushes while recording), 1 when pushed, 0 when nothing records."""
        if _timing is not None:
            self.__enter__()
            return 2
        if not _active:
            return 0
        try:
            _push(self._attrs, _handle)
            return 1
        except Exception as exc:
            _nvtx_failed(exc)
            return 0

    def _close_resumption(self, opened: int) -> None:
        """Close what :meth:`_open_resumption` opened (whatever the state is now: pushes and pops stay paired)."""
        if opened == 2:
            self.__exit__(None, None, None)
        elif opened == 1:
            try:
                _pop(_handle)
            except Exception as exc:
                _nvtx_failed(exc)


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
    global _timing, _base
    _timing = _live_methods if _enabled else None  # disable() pauses live timing too
    if _timing is not None:
        methods: tuple[Any, Any] = _timing
    elif _active:
        methods = (phase._recording_enter, phase._recording_exit)
    else:
        methods = (_IDLE_ENTER, _IDLE_EXIT)
    if _stacks_on and _enabled:  # stack sampling: track the open phase around whatever else phases do
        _base = methods if (_timing is not None or _active) else None
        methods = _timing = (phase._tracking_enter, phase._tracking_exit)
    phase.__enter__, phase.__exit__ = methods


_install_with_methods()


# --------------------------------------------------------------------------- marks


def mark(name: str, payload: Payload = None, *, color: int | None = None) -> None:
    """An instant event in the nvtxsim domain (e.g. "episode_end")."""
    if not _active:
        return
    try:
        name = name if type(name) is str else clean_text(name)
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
        name = name if type(name) is str else clean_text(name)
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
    report_once(
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
        name = name if type(name) is str else clean_text(name)
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
        report_once(
            "end-range-token", f"end_range() got a {type(token).__name__}, not a token of start_range(); ignored"
        )
        return
    if token._ended:
        report_once("end-range-twice", "end_range() was called twice with one token; the second call was ignored")
        return
    token._ended = True
    if not _live:
        return
    try:
        from nvtx import _lib as nvtxlib

        nvtxlib.end_range(token._range_id, token._domain)
    except Exception as exc:
        _nvtx_failed(exc)
