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
import sys
import threading
from typing import Any, Callable, Optional, TypeVar, Union

from . import phases as _phases

F = TypeVar("F", bound=Callable[..., Any])
Payload = Union[int, float, None]

# --------------------------------------------------------------------------- backend


class _Backend:
    """What the rest of the module needs from NVTX, resolved once per process."""

    def __init__(self) -> None:
        self.tool_attached = bool(os.environ.get("NVTX_INJECTION64_PATH"))
        self.gate_bypassed = False  # True when the nvtx>=0.2.12 enabled-gate was lifted
        self.domain: Any = None
        self.handle: Any = None
        self.error: Optional[str] = None
        self.push: Callable[..., Any] = _noop
        self.pop: Callable[..., Any] = _noop
        self.mark: Callable[..., Any] = _noop
        self._lock = threading.Lock()
        self._attr_cache: dict[tuple, Any] = {}
        self._domains: dict[str, Any] = {}
        if self.tool_attached:
            try:
                self._open()
            except Exception as exc:  # NVTX must never break the user's program
                self.error = f"{type(exc).__name__}: {exc}"
                self.domain = None

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
        return self.domain is not None

    def domain_for(self, name: Optional[str]) -> Any:
        """Another NVTX domain (None: nvtxsim's), opened like nvtxsim's own; None when not live."""
        if self.domain is None or name is None or name == _phases.DOMAIN:
            return self.domain
        with self._lock:
            dom = self._domains.get(name)
            if dom is None:
                import nvtx

                dom = self._domains[name] = nvtx.get_domain(name)  # the gate is already lifted if needed
            return dom

    def attributes(self, name: str, color: Optional[int], category: Optional[str], payload: Payload = None) -> Any:
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
        from nvtx._lib import lib as L
        import nvtx.nvtx as N
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

    Domain.__new__ = __new__  # type: ignore[assignment]
    for cached in ("get_domain", "_get_domain_cached"):
        fn = getattr(N, cached, None)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
    import nvtx

    return nvtx.get_domain(name)


_backend = _Backend()
_enabled = os.environ.get("NVTXSIM_DISABLE", "").strip().lower() in ("", "0", "false", "no")
#: True when ranges actually reach a tool: enabled, a tool attached, domain open.
_active = _enabled and _backend.live
_push = _backend.push
_pop = _backend.pop
_handle = _backend.handle


def _refresh() -> None:
    global _active
    _active = _enabled and _backend.live


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
    }


def _nvtx_failed(exc: BaseException) -> None:
    """Turn nvtxsim off after an NVTX failure instead of raising into user code."""
    global _active
    _active = False
    _backend.error = f"{type(exc).__name__}: {exc}"
    try:
        sys.stderr.write(f"nvtxsim: NVTX call failed ({_backend.error}); ranges turned off\n")
    except Exception:
        pass


# --------------------------------------------------------------------------- phase


class phase:
    """A named phase: use it as a context manager or as a decorator.

    ``with nvtxsim.phase("sim_step"): ...`` or ``@nvtxsim.phase("policy")``.
    Build it once (module level) for the lowest cost per range. Decorated
    generators and coroutines get one range per resumption, so ranges never
    stay open across a ``yield`` or an ``await``.
    """

    __slots__ = ("name", "color", "category", "payload", "_attrs")

    def __init__(
        self,
        name: str,
        *,
        color: Optional[int] = None,
        payload: Payload = None,
        category: Optional[str] = None,
    ) -> None:
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
        self._attrs = _backend.attributes(name, color, category, payload) if _backend.live else None

    def __repr__(self) -> str:
        return f"phase({self.name!r})"

    def __enter__(self) -> "phase":
        if _active:
            try:
                _push(self._attrs, _handle)
            except Exception as exc:
                _nvtx_failed(exc)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if _active:
            try:
                _pop(_handle)
            except Exception as err:
                _nvtx_failed(err)
        return False

    def __call__(self, fn: F) -> F:
        if getattr(fn, "__nvtxsim_phase__", None) is not None:
            return fn  # already a phase: never range twice
        if not _active:
            return fn  # like nvtx: no tool or disabled at decoration time costs nothing per call
        return self.wrap(fn)

    def wrap(self, fn: F) -> F:
        """Always wrap ``fn`` (the wrapper checks at call time whether ranges are recorded)."""
        attrs = self._attrs
        if inspect.isgeneratorfunction(fn):
            wrapper = _wrap_generator(fn, attrs)
        elif inspect.iscoroutinefunction(fn):
            wrapper = _wrap_coroutine(fn, attrs)
        elif inspect.isasyncgenfunction(fn):
            return fn  # async generators: left as they are (a range cannot span an await safely)
        else:

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
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

        wrapper.__nvtxsim_phase__ = self.name  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]


def _step(attrs: Any, resume: Callable[[], Any]) -> Any:
    """Run one resumption of a generator/coroutine inside a range."""
    if not _active:
        return resume()
    try:
        _push(attrs, _handle)
    except Exception as exc:
        _nvtx_failed(exc)
        return resume()
    try:
        return resume()
    finally:
        try:
            _pop(_handle)
        except Exception as exc:
            _nvtx_failed(exc)


def _drive(attrs: Any, it: Any) -> Any:
    """A generator that forwards send/throw/close to ``it``, one range per resumption."""
    send_value: Any = None
    thrown: Optional[BaseException] = None
    while True:
        try:
            if thrown is None:
                value = send_value
                item = _step(attrs, lambda: it.send(value))
            else:
                err = thrown
                item = _step(attrs, lambda: it.throw(err))
        except StopIteration as stop:
            return stop.value
        thrown = None
        try:
            send_value = yield item
        except GeneratorExit:
            it.close()
            raise
        except BaseException as exc:  # delivered into the wrapped generator
            thrown = exc
            send_value = None


def _wrap_generator(fn: Callable[..., Any], attrs: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return (yield from _drive(attrs, fn(*args, **kwargs)))

    return wrapper


class _StepwiseAwaitable:
    __slots__ = ("_coro", "_attrs")

    def __init__(self, coro: Any, attrs: Any) -> None:
        self._coro = coro
        self._attrs = attrs

    def __await__(self) -> Any:
        return (yield from _drive(self._attrs, self._coro))


def _wrap_coroutine(fn: Callable[..., Any], attrs: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        return await _StepwiseAwaitable(fn(*args, **kwargs), attrs)

    return wrapper


# --------------------------------------------------------------------------- marks


def mark(name: str, payload: Payload = None, *, color: Optional[int] = None) -> None:
    """An instant event in the nvtxsim domain (e.g. "episode_end")."""
    if not _active:
        return
    try:
        style = _phases.style_for(name)
        attrs = _backend.attributes(name, color if color is not None else style.color, style.category, payload)
        _backend.mark(attrs, _handle)
    except Exception as exc:
        _nvtx_failed(exc)


def range_push(name: str, payload: Payload = None) -> None:
    """Open a phase without a ``with`` block; pair with :func:`range_pop` on the same thread."""
    if not _active:
        return
    try:
        style = _phases.style_for(name)
        _push(_backend.attributes(name, style.color, style.category, payload), _handle)
    except Exception as exc:
        _nvtx_failed(exc)


def range_pop() -> None:
    """Close the innermost phase opened with :func:`range_push` on this thread."""
    if not _active:
        return
    try:
        _pop(_handle)
    except Exception as exc:
        _nvtx_failed(exc)


def start_range(
    name: str,
    *,
    domain: Optional[str] = None,
    payload: Payload = None,
    color: Optional[int] = None,
    category: Optional[str] = None,
) -> Any:
    """Open a start/end range: it may end on another thread or out of order (async work, windows).

    Returns a token for :func:`end_range` (None when nothing is recorded).
    """
    if not _active:
        return None
    try:
        style = _phases.style_for(name)
        dom = _backend.domain_for(domain)
        attrs = dom.get_event_attributes(name, color if color is not None else style.color, category or style.category, payload)
        from nvtx import _lib as nvtxlib

        return (nvtxlib.start_range(attrs, dom.handle), nvtxlib.end_range)
    except Exception as exc:
        _nvtx_failed(exc)
        return None


def end_range(token: Any) -> None:
    """Close a range opened with :func:`start_range` (from any thread); None is ignored."""
    if token is None:
        return
    try:
        started, end = token
        end(*started)
    except Exception as exc:
        _nvtx_failed(exc)
