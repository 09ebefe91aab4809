"""Emit stage, live timing: a phase's GPU *busy* time from CUPTI activity records (``NVTXSIM_LIVE_GPU=cupti``).

CUDA events measure a stream span: for a short phase whose kernels wait for the CPU's launches it reads
the CPU time, not the GPU's work. Here CUPTI (NVIDIA's ``cupti-python``, the ``cupti`` extra) hands over
kernel, memcpy and memset records in buffers, asynchronously, with no sync; each measured range puts a
marker at its enter and exit (:meth:`CuptiTiming.begin`), and the writer thread attributes the records
between them (:mod:`nvtxsim.emit.live.cupti_records`).

Why markers and not an external correlation id around the whole phase: CUPTI emits
EXTERNAL_CORRELATION records only beside API records, and enabling the DRIVER or RUNTIME kinds costs
+50 % and 30x on a launch-bound loop (H200 probe). Kernel records alone cost about nothing. So only one
cheap driver call is recorded (``activity_enable_driver_api`` for that cbid): the marker. Its external id
(our ticket) comes back with its correlation id; correlation ids are assigned in call order, so the ops
of a range are those with an id between its two markers'.

Steps aside (one stderr line, CUDA events instead) when another CUPTI client is injected (nsys, Nsight
Compute: ``CUDA_INJECTION64_PATH``), when cupti-python is missing, or when CUPTI refuses (a driver too
old, a second subscriber). Ops past :data:`MAX_OPS` waiting for the writer are dropped and counted (the
markers are kept), never waited for.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

from nvtxsim.emit.live import cupti_records as recs
from nvtxsim.emit.live.gpu import GpuTiming, PhaseGpu, Span
from nvtxsim.emit.notices import report_once

BUFFER_BYTES = 8 << 20
FLUSH_PERIOD_MS = 100  # CUPTI's worker thread delivers the records it has at least this often
GPU_WAIT_S = 10.0  # how long the writer waits for a window's records before giving up on them
MAX_OPS = 20_000_000  # ops held for the writer (about 33 B each); past that a buffer's ops are dropped and counted
MARKER_ENV = "NVTXSIM_LIVE_CUPTI_MARKER"  # the driver function used as marker (default cuDriverGetVersion)
MARKERS = ("cuDriverGetVersion", "cuDeviceGetCount")  # both take one int*: (int *version), (int *count)
ACTIVITY_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "EXTERNAL_CORRELATION")

_state_lock = threading.Lock()
_collector: Collector | None = None  # one per process: CUPTI has one set of buffer callbacks
_refused: str | None = None  # why CUPTI cannot be had in this process (asked once)


class Collector:
    """The process's CUPTI client: buffer callbacks (a CUPTI thread), the ops they cut, the marker call."""

    def __init__(self, cupti: Any, marker: Any) -> None:
        self.cupti = cupti
        self.marker = marker  # the ctypes driver function, with its int argument
        self.ext_kind = int(cupti.ExternalCorrelationKind.CUSTOM1)
        self.layout = recs.layouts(cupti)
        self.lock = threading.Lock()
        self.ops = recs.Ops()
        self.dropped = 0  # records dropped: by us (too many waiting) or by CUPTI
        self.last_delivery = time.monotonic()
        self.kinds = [getattr(cupti.ActivityKind, k) for k in ACTIVITY_KINDS]
        self.enabled = False
        self.tickets = itertools.count(1)
        self.cbid = -1  # the marker function's driver cbid (start)
        # the fallback pairing (by_order) while no external-id record of ours came: tickets issued per thread
        self.track = True
        self.ext_seen = False
        self.issued: dict[int, list[int]] = {}
        self.local = threading.local()
        self.no_markers = False  # a window's markers never came back: later windows do not wait for them
        self.arg = ctypes.byref(ctypes.c_int())  # the marker's out-argument (its value is never read)

    # ---- CUPTI's thread

    def requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0

    def completed(self, activities: list) -> None:
        """One buffer: its bytes copied and cut into columns (never raises into CUPTI)."""
        try:
            if not activities:
                return
            ops = self._parse(activities)
            if ops.tickets:
                self.ext_seen = True
            if not self.track:
                ops.markers = []
            with self.lock:
                if self.ops.size + ops.size > MAX_OPS:  # the writer is behind: these ops go, the markers stay
                    self.dropped += ops.size
                    ops = recs.Ops(tickets=ops.tickets, records=ops.records)
                self.ops.merge(ops)
                self.last_delivery = time.monotonic()
        except Exception as exc:
            self._drop(len(activities or ()))
            report_once(
                "live-cupti-buffer", f"live timing: a CUPTI buffer could not be read ({type(exc).__name__}: {exc})"
            )

    def _parse(self, activities: list) -> recs.Ops:
        n = len(activities)
        try:
            first, last = int(activities[0]), int(activities[-1])
            span = last - first + self.layout[int(activities[-1].kind)][0]
            biggest = max(size for size, _cols in self.layout.values())
            # one buffer's records lie back to back: anything else is not read as bytes
            raw = ctypes.string_at(first, span) if 0 < span <= min(n * biggest, 2 * BUFFER_BYTES) else None
        except Exception:
            raw = None
        ops = recs.parse_buffer(raw, n, self.ext_kind, self.layout, self.cbid) if raw is not None else None
        return ops if ops is not None else recs.parse_objects(activities, self.ext_kind, self.cbid)

    def _drop(self, n: int) -> None:
        with self.lock:
            self.dropped += n

    # ---- setup (training thread, once)

    def start(self) -> None:
        c = self.cupti
        self.cbid = self._marker_cbid()
        c.activity_register_callbacks(self.requested, self.completed)
        c.activity_enable_driver_api(self.cbid, 1)
        self.enable(True)
        try:
            c.activity_flush_period(FLUSH_PERIOD_MS)
        except Exception:
            pass  # the records then come when a buffer fills, and at the writer's flush

    def _marker_cbid(self) -> int:
        return int(getattr(self.cupti.driver_api_trace_cbid, self.marker.__name__))

    def enable(self, on: bool) -> None:
        """The activity kinds on (measured iterations) or off (the others: no records, no cost)."""
        if on == self.enabled:
            return
        for k in self.kinds:
            (self.cupti.activity_enable if on else self.cupti.activity_disable)(k)
        self.enabled = on

    # ---- the training thread's markers

    def mark(self) -> int:
        """A ticket, pushed as external id around one marker call: CUPTI records its correlation id."""
        ticket = next(self.tickets)
        if self.track:
            try:
                issued = self.local.issued
            except AttributeError:
                issued = self.local.issued = self.issued.setdefault(threading.get_ident() & 0xFFFFFFFF, [])
            issued.append(ticket)
        c, kind = self.cupti, self.ext_kind
        c.activity_push_external_correlation_id(kind, ticket)
        try:
            self.marker(self.arg)
        finally:
            c.activity_pop_external_correlation_id(kind)
        return ticket

    # ---- the writer thread

    def by_order(self) -> None:
        """Pair the tickets issued on each thread with that thread's marker driver records in call order: where
        CUPTI gives the driver records but no external-id records. Tickets that have one keep it; once an
        external-id record of ours came, this stops (and forgets what it kept)."""
        with self.lock:
            if self.ext_seen:
                self.track, self.issued, self.ops.markers = False, {}, []
                return
            per: dict[int, list[int]] = {}
            for thread, corr in self.ops.markers:
                per.setdefault(thread, []).append(corr)
            left: list[tuple[int, int]] = []
            for thread, corrs in per.items():
                issued = self.issued.get(thread)
                if not issued:
                    continue  # a call of the marker function on a thread that never marked: not ours
                corrs.sort()
                n = min(len(issued), len(corrs))
                for ticket, corr in zip(issued[:n], corrs[:n]):
                    self.ops.tickets.setdefault(ticket, corr)
                del issued[:n]
                left.extend((thread, c) for c in corrs[n:])
            self.ops.markers = left

    def cupti_dropped(self) -> int:
        """Records CUPTI dropped since the last ask (no buffer at hand), 0 when it cannot tell."""
        try:
            n = ctypes.c_size_t(0)
            self.cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(n))
            return int(n.value)
        except Exception:
            return 0

    def flush(self) -> None:
        try:
            self.cupti.activity_flush_all(0)
        except Exception:
            pass


class CuptiTiming(GpuTiming):
    """GPU busy time, kernels, copies and bytes per phase from CUPTI records (see the module docstring)."""

    what = "CUPTI markers"
    mode = "cupti"

    def __init__(self, collector: Collector) -> None:
        self.col = collector

    @classmethod
    def attach(cls) -> GpuTiming | None:
        """Once the program initialised CUDA through torch: CUPTI, or CUDA events with one line saying why not."""
        from nvtxsim.emit.live.cuda_events import CudaEventTiming

        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():
            return None
        collector = _collector_or_reason()
        if isinstance(collector, str):
            report_once("live-cupti", f"live timing: {collector}; GPU times from CUDA events (stream spans) instead")
            return CudaEventTiming.attach()
        return cls(collector)

    def begin(self) -> Any:
        return self.col.mark()

    def end(self, opening: Any) -> Any:
        try:
            return self.col.mark()
        except Exception:
            return None

    def sampling(self, on: bool) -> None:
        try:
            self.col.enable(on)
        except Exception as exc:
            report_once(
                "live-cupti-enable", f"live timing: CUPTI activity could not be switched ({type(exc).__name__}: {exc})"
            )

    def resolve(self, spans: list[Span]) -> dict[str, int]:
        return {name: g.ns for name, g in self.resolve_phases(spans).items()}

    def resolve_phases(self, spans: list[Span]) -> dict[str, PhaseGpu]:
        if not spans:
            return {}
        try:
            return self._resolve(spans)
        except Exception as exc:
            report_once(
                "live-cupti-resolve",
                f"live timing: CUPTI records could not be attributed ({type(exc).__name__}: {exc})",
            )
            return {}

    def _resolve(self, spans: list[Span]) -> dict[str, PhaseGpu]:
        col = self.col
        if col.no_markers:
            return {}
        wanted = {t for _n, a, b in spans for t in (a, b)}
        tickets = _wait(col, wanted)
        if tickets is None:
            col.no_markers = True
            report_once(
                "live-cupti-markers",
                f"live timing: CUPTI did not return the phase markers' correlation ids ({col.marker.__name__}); GPU "
                f"times skipped (try {MARKER_ENV}={next(m for m in MARKERS if m != col.marker.__name__)})",
            )
            return {}
        bracket = [(n, tickets[a], tickets[b]) for n, a, b in spans if a in tickets and b in tickets]
        if not bracket:
            return {}
        limit = max(hi for _n, _lo, hi in bracket)
        _settle(col, limit)
        with col.lock:
            ops = recs.Ops()
            ops.merge(col.ops)  # a snapshot of the lists: the callback appends, never mutates
        busy = recs.attribute(bracket, ops)
        with col.lock:
            col.ops.keep_after(limit)
        return {n: PhaseGpu(b.ns, b.kernels, b.copies, b.copy_bytes) for n, b in busy.items()}

    def dropped(self) -> int:
        col = self.col
        lost = col.cupti_dropped()
        with col.lock:
            lost, col.dropped = lost + col.dropped, 0
        return lost

    def release(self, spans: Iterable[Span]) -> None:
        """Tickets hold nothing: records of spans never resolved go with the next resolved window's."""


def _wait(col: Collector, wanted: set[int]) -> dict[int, int] | None:
    """The correlation ids of ``wanted`` tickets, once all came back (None if none did before the deadline)."""
    deadline = time.monotonic() + GPU_WAIT_S
    flushed = False
    while True:
        if col.track:
            col.by_order()
        with col.lock:
            have = {t: col.ops.tickets[t] for t in wanted if t in col.ops.tickets}
        if len(have) == len(wanted):
            return have
        now = time.monotonic()
        if now > deadline:
            return have or None
        if not flushed and now - col.last_delivery > 3 * FLUSH_PERIOD_MS / 1e3:
            col.flush()  # nothing came for a while (the program stopped launching): ask for what CUPTI holds
            flushed = True
        time.sleep(FLUSH_PERIOD_MS / 1e3 / 2)


def _settle(col: Collector, limit: int) -> None:
    """Until an op launched after the window came back (the GPU got past the window's work) or nothing new comes,
    then one flush period more for the other streams' records of the window."""
    deadline = time.monotonic() + GPU_WAIT_S
    period = FLUSH_PERIOD_MS / 1e3
    while time.monotonic() < deadline:
        with col.lock:
            past, quiet = col.ops.max_corr > limit, time.monotonic() - col.last_delivery > 3 * period
        if past or quiet:
            break
        time.sleep(period / 2)
    time.sleep(period)


def _collector_or_reason() -> Collector | str:
    """The process's collector, started on the first call; or the reason CUPTI cannot be had (kept)."""
    global _collector, _refused
    with _state_lock:
        if _collector is not None:
            return _collector
        if _refused is not None:
            return _refused
        try:
            _collector = _start()
            return _collector
        except _Refused as exc:
            _refused = str(exc)
        except Exception as exc:
            _refused = f"CUPTI could not be started ({type(exc).__name__}: {exc})"
        return _refused


class _Refused(Exception):
    pass


def _start() -> Collector:
    injected = os.environ.get("CUDA_INJECTION64_PATH")
    if injected:
        raise _Refused(
            f"another CUPTI client is injected (CUDA_INJECTION64_PATH={injected}: nsys or Nsight); CUPTI left to it"
        )
    try:
        from cupti import cupti  # type: ignore[import-not-found, unused-ignore]
    except Exception as exc:
        raise _Refused(
            f"NVTXSIM_LIVE_GPU=cupti needs cupti-python (pip install 'nvtxsim[cupti]'): {type(exc).__name__}: {exc}"
        ) from None
    col = Collector(cupti, _marker_function())
    try:
        col.start()
    except Exception as exc:
        raise _Refused(
            f"CUPTI refused live timing (a profiler attached, or a driver too old): {type(exc).__name__}: {exc}"
        ) from None
    return col


def _marker_function() -> Any:
    name = os.environ.get(MARKER_ENV, "").strip() or MARKERS[0]
    if name not in MARKERS:
        raise _Refused(f"{MARKER_ENV}={name!r} is none of {', '.join(MARKERS)}")
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise _Refused(f"libcuda.so.1 cannot be loaded ({exc})") from None
    fn = getattr(lib, name)
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def _reset_in_child() -> None:
    """A forked child has no CUPTI client of its own (the parent's callbacks and buffers are not its)."""
    global _collector, _refused, _state_lock
    _collector, _refused, _state_lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
