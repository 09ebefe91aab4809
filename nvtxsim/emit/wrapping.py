"""Emit stage: a phase around a callable, keeping what the callable is.

A plain function gets a call wrapper; a generator or coroutine function a wrapper that opens one
range per resumption (so no range stays open across a ``yield`` or an ``await``); an async
generator function is left as it is. Descriptors (``staticmethod``, ``classmethod``, ``property``,
``cached_property``, ``partialmethod``) are rebuilt around wrapped functions, a bound method stays
a bound method, and any other callable (``lru_cache``, ``partial``, a builtin, a callable object
with its own ``__get__``) gets a wrapper that binds as the callable binds and pickles as it pickles,
so a program behaves the same with and without a profiler.

What a wrapper does per call or resumption is the phase's own (:class:`Ranged`): the range forms
of :mod:`nvtxsim.emit.ranges` keep the module-global hot path; this module only picks the shape.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any, Protocol


class Ranged(Protocol):
    """What the wrappers need of a phase (:class:`nvtxsim.emit.ranges.phase`)."""

    @property
    def name(self) -> str: ...

    def wrap(self, fn: Any) -> Any:
        """The phase around ``fn``, whatever ``fn`` is (a subclass may do more)."""
        ...

    def _call_wrapper(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` in the phase's range per call."""
        ...

    def _open_resumption(self) -> int:
        """Open the range of one generator/coroutine resumption; what :meth:`_close_resumption` closes."""
        ...

    def _close_resumption(self, opened: int) -> None: ...


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


def wrap(ph: Ranged, fn: Any) -> Any:
    """``ph`` around ``fn`` (:meth:`phase.wrap <nvtxsim.emit.ranges.phase.wrap>`): a plain function gets the
    wrapper its kind needs; anything else keeps its shape (:func:`wrap_in_shape`)."""
    if not isinstance(fn, types.FunctionType):
        return wrap_in_shape(ph, fn)
    if inspect.isasyncgenfunction(fn):
        return fn  # async generators: left as they are (a range cannot span an await safely)
    wrapper = _wrapper_for(ph, fn)
    wrapper.__nvtxsim_phase__ = ph.name  # type: ignore[attr-defined]
    return wrapper


def _wrapper_for(ph: Ranged, fn: Callable[..., Any]) -> Callable[..., Any]:
    """What calling ``fn`` returns decides the wrapper (inspect sees through partials): a generator or a
    coroutine gets one range per resumption, not one around its creation; anything else one per call."""
    if inspect.isgeneratorfunction(fn):
        return wrap_generator(fn, ph)
    if inspect.iscoroutinefunction(fn):
        return wrap_coroutine(fn, ph)
    return ph._call_wrapper(fn)


def wrap_in_shape(ph: Ranged, fn: Any) -> Any:
    """``ph`` around ``fn``, keeping what ``fn`` is: descriptors stay descriptors of the same kind.

    ``staticmethod``/``classmethod``/``property``/``cached_property``/``partialmethod`` are rebuilt around wrapped
    functions; a bound method stays a bound method; another callable (``lru_cache``, ``partial``,
    a builtin, a callable object) gets a function wrapper that carries its public attributes
    (``cache_info()`` ...; a snapshot of the values, live for methods) and that binds as a method
    only where the callable itself did.
    """
    refuse_undecoratable(fn)
    if isinstance(fn, _DESCRIPTORS) or (
        isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType)
    ):
        return _rebuild_descriptor(ph, fn)
    if isinstance(fn, types.FunctionType):
        return ph.wrap(fn)
    if inspect.isasyncgenfunction(fn):
        return fn  # as wrap() leaves async generator functions
    wrapper = _wrapper_for(ph, fn)
    wrapper.__nvtxsim_phase__ = ph.name  # type: ignore[attr-defined]
    _copy_public_attributes(fn, wrapper)
    binder = getattr(type(fn), "__get__", None)
    if binder is None:
        return staticmethod(wrapper)  # fn does not bind as a method in a class: neither does the wrapper
    if isinstance(fn, _BINDS_AS_FUNCTION):
        return wrapper  # binds as a function does, like the wrapper
    return _binding_like(ph, fn, wrapper)


def _rebuild_descriptor(ph: Ranged, fn: Any) -> Any:
    """A descriptor, or a bound method of a function, of the same kind around ``ph.wrap`` of its function(s)."""
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
    return types.MethodType(ph.wrap(fn.__func__), fn.__self__)


def _copy_public_attributes(fn: Any, wrapper: Callable[..., Any]) -> None:
    """``fn``'s public attributes on ``wrapper`` (``cache_info()`` of an ``lru_cache`` ...), where it has none."""
    for name in dir(fn):
        if not name.startswith("_") and not hasattr(wrapper, name):
            try:
                setattr(wrapper, name, getattr(fn, name))
            except Exception:
                pass


# Callables whose ``__get__`` binds exactly as a function's does (``MethodType(fn, obj)``).
_BINDS_AS_FUNCTION = (type(functools.lru_cache(None)(lambda: None)), types.BuiltinFunctionType)


class _BindsLike:
    """A wrapped callable with a ``__get__`` of its own (a descriptor that is also callable): in a
    class body the wrapper binds through that ``__get__`` — what it returns is wrapped — so an
    attribute lookup gives what it gives without a profiler. Called directly it is the wrapper
    (``__call__`` is the wrapper itself: one frame of recursion depth)."""

    __slots__ = ("__dict__", "_ph", "_fn")
    _ph: Ranged
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


def _binding_like(ph: Ranged, fn: Any, wrapper: Callable[..., Any]) -> Any:
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


# --------------------------------------------------------------------------- one range per resumption


def wrap_generator(fn: Callable[..., Any], ph: Ranged) -> Callable[..., Any]:
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
            opened = ph._open_resumption()
            try:
                item = it.send(sent) if thrown is None else it.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                ph._close_resumption(opened)
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


def wrap_coroutine(fn: Callable[..., Any], ph: Ranged) -> Callable[..., Any]:
    """A coroutine driving ``fn``'s, one range per resumption (one frame of recursion depth)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        it = fn(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            opened = ph._open_resumption()
            try:
                item = it.send(sent) if thrown is None else it.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                ph._close_resumption(opened)
            thrown = None
            try:
                sent = await _Suspend(item)
            except GeneratorExit:
                it.close()
                raise
            except BaseException as exc:  # cancellation and the like, delivered into the wrapped coroutine
                thrown, sent = exc, None

    return wrapper
