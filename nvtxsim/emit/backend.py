"""Emit stage: what nvtxsim needs from NVTX, resolved once per process.

Whether a profiler is attached (``NVTX_INJECTION64_PATH``) and traces this very process, the
``nvtxsim`` domain and the Cython push/pop/mark functions behind it, and event attributes (cached):
:class:`Backend`. The range forms of :mod:`nvtxsim.emit.ranges` read these once into module globals,
so nothing here is on the per-range path.

Old Nsight Systems (2022.4 .. at least 2023.2) refuses the payload-extension handshake that
``nvtx>=0.2.12`` uses to decide whether a domain is enabled, so every range of such an ``nvtx``
is silently dropped. When a tool is attached and that gate says "disabled", nvtxsim opens its
domain without the gate (:func:`lift_enabled_gate`; it lifts the gate for the ``nvtx`` package as
a whole, so the user's own ``nvtx.annotate`` ranges appear too). See README, "Old nsys and new nvtx".
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any

from nvtxsim import phases as _phases
from nvtxsim.emit.notices import report_once

Payload = int | float | None

FORKED_UNTRACED = (
    "forked from a profiled process without exec and nsys does not trace this process "
    "(NVTX calls here can hang nsys 2022.4): ranges are off; use the 'spawn' start method "
    "or nsys --trace-fork-before-exec=true"
)

# --------------------------------------------------------------------------- what NVTX accepts


def clean_text(value: Any) -> str:
    """``value`` as a str NVTX accepts (UTF-8 encodable); never raises."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:
        text = f"<unprintable {type(value).__name__}>"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clean_payload(payload: Any) -> Payload:
    """A payload NVTX accepts: an int in int64 range or a float; anything else is dropped (None)."""
    if isinstance(payload, bool) or not isinstance(payload, (int, float)):
        return None
    if isinstance(payload, int) and not -(1 << 63) <= payload < (1 << 63):
        return float(payload)
    return payload


# --------------------------------------------------------------------------- is this process traced

_STORAGE_FILE = re.compile(rb"/injection_(\d+)_\d+_storage\.dat")


def nsys_traces_this_process() -> bool | None:
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


# --------------------------------------------------------------------------- the backend


def noop(*_args: Any) -> None:
    """push/pop/mark while no domain is open."""
    return None


class Backend:
    """What the range forms need from NVTX, resolved once per process."""

    def __init__(self) -> None:
        self.tool_attached = bool(os.environ.get("NVTX_INJECTION64_PATH"))
        self.gate_bypassed = False  # True when the nvtx>=0.2.12 enabled-gate was lifted
        self.domain: Any = None
        self.handle: Any = None
        self.error: str | None = None
        self.push: Callable[..., Any] = noop
        self.pop: Callable[..., Any] = noop
        self.mark: Callable[..., Any] = noop
        self._lock = threading.Lock()
        self._attr_cache: dict[tuple, Any] = {}
        self._domains: dict[str, Any] = {}
        self.failed = False  # an NVTX call raised: ranges stay off for the rest of the process
        self.inactive_reason: str | None = None  # why a tool is attached but nothing is recorded
        self.unmatched_pops = 0
        if self.tool_attached:
            if nsys_traces_this_process() is False:
                self.inactive_reason = FORKED_UNTRACED
                return
            try:
                self._open()
            except Exception as exc:  # NVTX must never break the user's program
                self.error = f"{type(exc).__name__}: {exc}"
                self.domain = None
                report_once("open", f"could not open the NVTX domain ({self.error}); phases are not recorded")

    def _open(self) -> None:
        import nvtx
        from nvtx import _lib as nvtxlib

        domain = nvtx.get_domain(_phases.DOMAIN)
        dummy_cls = getattr(getattr(nvtxlib, "lib", nvtxlib), "DummyDomain", None)
        if dummy_cls is not None and isinstance(domain, dummy_cls):
            domain = lift_enabled_gate(_phases.DOMAIN)
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
        """NVTX usable: a domain open, no NVTX call failed, and the tool traces this process."""
        return self.domain is not None and not self.failed and self.inactive_reason is None

    def after_fork_in_child(self) -> bool:
        """A fresh lock; ranges off when nsys does not trace this forked child. True when that turned them off."""
        self._lock = threading.Lock()
        if self.live and nsys_traces_this_process() is False:
            self.inactive_reason = FORKED_UNTRACED
            return True
        return False

    def fail(self, exc: BaseException) -> None:
        """An NVTX call raised: NVTX is not used again in this process (the first error is kept)."""
        if not self.failed:
            self.failed = True
            self.error = f"{type(exc).__name__}: {exc}"

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


def lift_enabled_gate(name: str) -> Any:
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


def nvtx_version() -> str | None:
    """The installed ``nvtx`` package's version; None when it cannot be told."""
    try:
        import nvtx

        version = getattr(nvtx, "__version__", None)
        if version is None:
            from importlib.metadata import version as _v

            version = _v("nvtx")
    except Exception:
        version = None
    return version
