"""Emit stage, live timing: a phase's GPU *busy* time from CUPTI activity records (``NVTXSIM_LIVE_GPU=cupti``).

CUDA events measure a stream span: for a short phase whose kernels wait for the CPU's launches it reads
the CPU time, not the GPU's work. Here CUPTI (libcupti through ctypes, :mod:`nvtxsim.emit.live.cupti_lib`)
hands over kernel, memcpy and memset records in buffers, asynchronously, with no sync; each measured range
places a marker at its enter and exit (:meth:`CuptiTiming.begin`: a tiny memset of ours whose record
carries its correlation id), and the writer thread attributes the records between them
(:mod:`nvtxsim.emit.live.cupti_records`).

Why markers and not external correlation ids pushed around the phase: CUPTI emits EXTERNAL_CORRELATION
records only beside API records, and recording every runtime/driver call costs about as much as the
launches themselves (H200, reports/live-cupti-h200.md); kernel records alone cost little. External ids
also miss the launches of other threads (autograd), which correlation order attributes.

Steps aside (one stderr line, CUDA events instead) when another CUPTI client is injected (nsys, Nsight
Compute: ``CUDA_INJECTION64_PATH``), when libcupti cannot be found, or when CUPTI refuses (a driver too
old, a second subscriber). Ops past :data:`MAX_OPS` waiting for the writer are dropped and counted (the
markers are kept), never waited for. At interpreter exit the activity kinds are disabled, the buffers
flushed and CUPTI detached (``cuptiFinalize``) before Python goes: CUPTI's thread calling into a finalised
interpreter was the segfault at exit.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from nvtxsim.emit.live import cupti_records as recs
from nvtxsim.emit.live.budget import op_ns_from_env
from nvtxsim.emit.live.gpu import GpuTiming, PhaseGpu, Span
from nvtxsim.emit.notices import report_once
from nvtxsim.envflags import env_flag

FLUSH_PERIOD_MS = 100  # CUPTI's worker thread delivers the records it has at least this often
GPU_WAIT_S = 10.0  # how long the writer waits for a window's records before giving up on them
MAX_OPS = 20_000_000  # ops held for the writer (about 33 B each); past that a buffer's ops are dropped and counted
TICKET_BASE = 0x4E560000  # markers' values start here (wrapping at 2**32): unlike any value a program memsets
ACTIVITY_KINDS = (recs.CONCURRENT_KERNEL, recs.MEMCPY, recs.MEMSET)
#: Also record the CUDA runtime API calls (their records are read and ignored): a diagnostic switch, for a CUPTI
#: that gives ops correlation ids only beside API records. It costs about a launch's time per launch.
RUNTIME_ENV = "NVTXSIM_LIVE_CUPTI_RUNTIME"

_now = time.perf_counter_ns
_state_lock = threading.Lock()
_collector: Collector | None = None  # one per process: CUPTI has one set of buffer callbacks
_refused: str | None = None  # why CUPTI cannot be had in this process (asked once)


class Collector:
    """The process's CUPTI client: the buffers' ops (cut on CUPTI's thread), the marker, the kinds switched."""

    def __init__(self, api: Any, marker: Callable[[int], int], layout: dict | None = None) -> None:
        self.api = api  # CuptiLib, or a stand-in with its methods
        self.marker = marker
        self.layout = layout or recs.LAYOUTS
        self.lock = threading.Lock()
        self.ops = recs.Ops()
        self.dropped = 0  # records dropped: by us (too many waiting, a buffer not readable) or by CUPTI
        self.unreadable = 0  # buffers walked record by record (a kind without a layout in them)
        self.received = 0  # ops (kernels and copies, not markers) that came in: the attribution's denominator
        self.last_delivery = time.monotonic()
        self.kinds = list(ACTIVITY_KINDS)
        self.enabled = False
        self.closed = False
        self.tickets = itertools.count(TICKET_BASE)
        self.no_markers = False  # a window's markers never came back: later windows do not wait for them
        # markers found by their value (the ticket), or, where CUPTI does not keep the value, paired with the
        # markers' records in call order (mark() places them one at a time); `issued` kept until that is known
        self.mark_lock = threading.Lock()
        self.pairing = "value"
        self.confirmed = False
        self.issued: list[int] = []
        self.runtime = False  # runtime API records on: ops came without correlation ids of their own
        self.marker_ns = 0  # wall time spent placing markers (CUPTI's record of each included): the budget's
        self.op_ns = op_ns_from_env()  # CUPTI's cost per recorded op: the budget's estimate

    # ---- CUPTI's thread

    def completed(self, raw: bytes) -> None:
        """One buffer's bytes cut into columns (never raises into CUPTI)."""
        if self.closed:
            return
        try:
            ops = recs.parse_buffer(raw, self.layout)
            if ops is None:
                ops = self._rewalk(raw)
            if self.pairing == "order":
                ops.tickets = {}  # the values are not the tickets: marks are paired in order (pair_in_order)
            with self.lock:
                self.received += ops.size
                if self.ops.size + ops.size > MAX_OPS:  # the writer is behind: these ops go, the markers stay
                    self.dropped += ops.size
                    ops = recs.Ops(tickets=ops.tickets, records=ops.records, kinds=ops.kinds)
                self.ops.merge(ops)
                self.last_delivery = time.monotonic()
        except Exception as exc:
            report_once(
                "live-cupti-buffer", f"live timing: a CUPTI buffer could not be read ({type(exc).__name__}: {exc})"
            )

    def _rewalk(self, raw: bytes) -> recs.Ops:
        """A buffer with a kind of unknown size: its known records one by one (the slow way, counted)."""
        self.unreadable += 1
        walk = getattr(self.api, "rewalk", None)
        ops = recs.parse_buffer(walk(raw, self.layout), self.layout) if walk is not None else None
        if ops is None:
            raise ValueError(f"{len(raw)} bytes not laid out as known records")
        return ops

    # ---- setup (training thread, once)

    def start(self) -> None:
        self.api.register(self.completed)
        self.enable(True)
        try:
            self.api.flush_period(FLUSH_PERIOD_MS)
        except Exception:
            pass  # the records then come when a buffer fills, and at the writer's flush
        atexit.register(self.shutdown)

    def enable(self, on: bool) -> None:
        """The activity kinds on (measured iterations) or off (the others: no records, no cost)."""
        if on == self.enabled or self.closed:
            return
        if on:
            runtime = self.runtime or env_flag(RUNTIME_ENV)
            self.kinds = list(ACTIVITY_KINDS) + ([recs.RUNTIME] if runtime else [])
        for k in self.kinds:
            (self.api.enable if on else self.api.disable)(k)
        self.enabled = on

    def shutdown(self) -> None:
        """Before the interpreter goes (atexit): no more records, the held ones delivered, CUPTI detached, so
        that CUPTI's thread never calls into a finalised interpreter. Never raises."""
        if self.closed:
            return
        for step in (lambda: self.enable(False), lambda: self.api.flush_all(True), self.api.finalize):
            try:
                step()
            except Exception:
                pass
        self.closed = True

    # ---- the training thread's markers

    def mark(self) -> int:
        """A ticket placed as a marker memset's value: its record tells the correlation id of that call."""
        with self.mark_lock:  # one at a time: tickets in the order of the calls (and so of their correlation ids)
            ticket = next(self.tickets) & 0xFFFFFFFF
            t0 = _now()
            rc = self.marker(ticket)
            self.marker_ns += _now() - t0
            if not self.confirmed and not rc:
                self.issued.append(ticket)
        if rc:
            raise RuntimeError(f"the marker memset failed (CUDA error {rc})")
        return ticket

    # ---- the writer thread

    def found(self, wanted: set[int]) -> dict[int, int]:
        """The correlation ids of the ``wanted`` tickets that came back; decides how markers are recognised
        the first time it can (under :attr:`lock`)."""
        if self.pairing == "order":
            self._pair_in_order()
        have = {t: self.ops.tickets[t] for t in wanted if t in self.ops.tickets}
        if self.pairing == "value" and not self.confirmed:
            if have:
                self.confirmed, self.issued = True, []
            elif self.ops.marks and len(self.ops.marks) >= len(self.issued):
                # every marker placed so far came back, none with its ticket as value: pair them in call order
                self.pairing, self.ops.tickets = "order", {}
                report_once(
                    "live-cupti-order",
                    "live timing: CUPTI's memset records do not keep the marker's value; markers paired in call order",
                )
                return self.found(wanted)
        return have

    def _pair_in_order(self) -> None:
        marks = sorted(self.ops.marks)
        n = min(len(marks), len(self.issued))
        self.ops.tickets.update(zip(self.issued[:n], marks[:n]))
        del self.issued[:n]
        self.ops.marks = marks[n:]

    def need_runtime(self) -> None:
        """Ops and markers came with one correlation id for many calls: record the runtime API calls from now on
        (a CUPTI that numbers ops only beside API records); one line."""
        if self.runtime:
            return
        self.runtime = True
        report_once(
            "live-cupti-runtime",
            "live timing: CUPTI gave the markers no distinct correlation ids; runtime API records on from now "
            "(this window's GPU times skipped)",
        )
        if self.enabled and recs.RUNTIME not in self.kinds:
            self.api.enable(recs.RUNTIME)
            self.kinds.append(recs.RUNTIME)

    def cupti_dropped(self) -> int:
        """Records CUPTI dropped since the last ask (no buffer at hand), 0 when it cannot tell."""
        try:
            return int(self.api.dropped())
        except Exception:
            return 0

    def flush(self) -> None:
        try:
            self.api.flush_all(False)
        except Exception:
            pass


class CuptiTiming(GpuTiming):
    """GPU busy time, kernels, copies and bytes per phase from CUPTI records (see the module docstring)."""

    what = "CUPTI markers"
    mode = "cupti"

    def __init__(self, collector: Collector, torch: Any = None) -> None:
        self.col = collector
        c_capturing = getattr(getattr(torch, "_C", None), "_cuda_isCurrentStreamCapturing", None)
        fallback = getattr(getattr(torch, "cuda", None), "is_current_stream_capturing", None)
        self.capturing: Callable[[], bool] = c_capturing or fallback or (lambda: False)

    @classmethod
    def attach(cls) -> GpuTiming | None:
        """Once the program initialised CUDA through torch: CUPTI, or CUDA events with one line saying why not."""
        from nvtxsim.emit.live.cuda_events import CudaEventTiming

        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():
            return None
        collector = _collector_or_reason(torch)
        if isinstance(collector, str):
            report_once("live-cupti", f"live timing: {collector}; GPU times from CUDA events (stream spans) instead")
            return CudaEventTiming.attach()
        return cls(collector, torch)

    def begin(self) -> Any:
        """A marker; None while the current stream captures a CUDA graph (the range is then not timed)."""
        if self.capturing():
            return None
        return self.col.mark()

    def end(self, opening: Any) -> Any:
        try:
            return self.begin()
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
                "live timing: CUPTI did not return the phase markers' records (memsets of "
                f"{recs.MARK_BYTES} bytes); GPU times skipped",
            )
            return {}
        if len(set(tickets.values())) < len(tickets):
            col.need_runtime()
            with col.lock:
                col.ops.keep_after(max(tickets.values()))
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

    def cost_ns(self) -> int:
        """The ops CUPTI recorded × the per-op cost, plus the markers' measured time (no lock: two ints read)."""
        col = self.col
        return col.received * col.op_ns + col.marker_ns


def _wait(col: Collector, wanted: set[int]) -> dict[int, int] | None:
    """The correlation ids of ``wanted`` tickets, once all came back (None if none did before the deadline)."""
    deadline = time.monotonic() + GPU_WAIT_S
    flushed = False
    while True:
        with col.lock:
            have = col.found(wanted)
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
    # the window's records launched by other threads (autograd's backward) sit in buffers of their own, which
    # CUPTI's periodic delivery did not always hand over in time on the H200 (policy_update lost its other-thread
    # half from the 8th window on): ask for every buffer whose records are complete, then a period for the rest
    col.flush()
    time.sleep(period)


def _collector_or_reason(torch: Any) -> Collector | str:
    """The process's collector, started on the first call; or the reason CUPTI cannot be had (kept)."""
    global _collector, _refused
    with _state_lock:
        if _collector is not None:
            return _collector
        if _refused is not None:
            return _refused
        try:
            _collector = _start(torch)
            return _collector
        except _Refused as exc:
            _refused = str(exc)
        except Exception as exc:
            _refused = f"CUPTI could not be started ({type(exc).__name__}: {exc})"
        return _refused


class _Refused(Exception):
    pass


def _start(torch: Any) -> Collector:
    injected = os.environ.get("CUDA_INJECTION64_PATH")
    if injected:
        raise _Refused(
            f"another CUPTI client is injected (CUDA_INJECTION64_PATH={injected}: nsys or Nsight); CUPTI left to it"
        )
    api, marker, layout = _open(torch)
    col = Collector(api, marker, layout)
    try:
        col.start()
    except Exception as exc:
        raise _Refused(
            f"CUPTI refused live timing (a profiler attached, or a driver too old): {type(exc).__name__}: {exc}"
        ) from None
    return col


def _open(torch: Any) -> tuple[Any, Callable[[int], int], dict]:
    """libcupti, the marker and the record layouts (CUPTI 13's; cupti-python is not imported: it would load a
    libcupti of its own beside the one found here); _Refused when not to be had."""
    from nvtxsim.emit.live import cupti_lib

    path = cupti_lib.find_library()
    if not path:
        raise _Refused(
            "NVTXSIM_LIVE_GPU=cupti needs libcupti (pip install 'nvtxsim[cupti]', or set "
            f"{cupti_lib.LIB_ENV}=/path/to/libcupti.so)"
        )
    try:
        api = cupti_lib.CuptiLib(path)
        api.rewalk = lambda raw, layout: cupti_lib.rewalk(raw, api, layout)  # type: ignore[attr-defined]
    except Exception as exc:
        raise _Refused(f"libcupti ({path}) cannot be loaded ({type(exc).__name__}: {exc})") from None
    try:
        marker = cupti_lib.MemsetMarker(torch)
    except Exception as exc:
        raise _Refused(f"the CUPTI phase markers cannot be placed ({type(exc).__name__}: {exc})") from None
    return api, marker, recs.LAYOUTS


def _reset_in_child() -> None:
    """A forked child has no CUPTI client of its own (the parent's callbacks and buffers are not its)."""
    global _collector, _refused, _state_lock
    _collector, _refused, _state_lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
