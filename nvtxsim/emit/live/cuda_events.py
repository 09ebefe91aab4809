"""Emit stage, live timing: a phase's GPU time from two CUDA events recorded on the current stream.

The events come from a pool kept for the whole process (creating one costs more than recording it),
are recorded at enter and exit without a sync, and are read on the writer thread only once they
completed (``event.query()``), then go back to the pool.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from nvtxsim.emit.live.gpu import GpuTiming, Span
from nvtxsim.emit.notices import report_once

GPU_WAIT_S = 10.0  # how long the writer waits for a window's events to complete before giving up on them
#: Idle CUDA events (created with enable_timing), reused by every session of this process.
POOL: deque = deque()


class CudaEventTiming(GpuTiming):
    """Two pooled CUDA events per measured range, on the stream current at its enter and exit."""

    what = "CUDA events"

    def __init__(self, torch: Any) -> None:
        # the C function behind torch.cuda.is_current_stream_capturing (one Python frame less per record)
        c_capturing = getattr(getattr(torch, "_C", None), "_cuda_isCurrentStreamCapturing", None)
        self.capturing: Callable[[], bool] = c_capturing or torch.cuda.is_current_stream_capturing
        self.record_on_stream = _stream_recorder(torch)
        self.torch = torch
        self.pool = POOL

    @classmethod
    def attach(cls) -> CudaEventTiming | None:
        """Once the program initialised CUDA through torch (live timing never initialises it itself)."""
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            return cls(torch)
        return None

    def begin(self) -> Any:
        """A pooled event recorded on the current stream; None while the stream captures a CUDA graph
        (an event record there would end up in the user's graph, or invalidate its capture)."""
        if self.capturing():
            return None
        try:
            ev = self.pool.pop()
        except IndexError:
            ev = self.torch.cuda.Event(enable_timing=True)
        self.record_on_stream(ev)
        return ev

    def end(self, opening: Any) -> Any:
        try:
            closing = self.begin()
        except Exception:
            closing = None
        if closing is None:
            self.pool.append(opening)  # no pair: the opening event goes back to the pool
        return closing

    def resolve(self, spans: list[Span]) -> dict[str, int]:
        totals: dict[str, int] = {}
        if not spans:
            return totals
        deadline = time.monotonic() + GPU_WAIT_S
        try:
            _wait_for(spans[-1][2], deadline)  # once the stream reached the last event, the earlier ones on it are done
        except Exception:
            pass  # reported below, per event
        for name, ev0, ev1 in spans:
            try:
                if not _wait_for(ev1, deadline):
                    return totals  # never completed: these events stay out of the pool
                totals[name] = totals.get(name, 0) + int(ev0.elapsed_time(ev1) * 1e6)
            except Exception as exc:
                report_once(
                    "live-gpu",
                    f"live timing: a CUDA event could not be read ({type(exc).__name__}: {exc}); GPU times skipped",
                )
                continue
            self.pool.append(ev0)
            self.pool.append(ev1)
        return totals

    def release(self, spans: Iterable[Span]) -> None:
        for _name, ev0, ev1 in spans:
            self.pool.append(ev0)
            self.pool.append(ev1)


def _record_event(event: Any) -> None:
    event.record()  # torch.cuda.Event.record: on torch.cuda.current_stream()


def _stream_recorder(torch: Any) -> Callable[[Any], None]:
    """``event.record()`` on the current stream through torch's C functions: the same calls that
    ``Event.record`` -> ``current_stream()`` make, without their ~10 Python frames (several µs per record).

    Used only when those functions exist and give the stream ``torch.cuda.current_stream()`` gives;
    else the public ``event.record()``.
    """
    C = getattr(torch, "_C", None)
    get_device = getattr(C, "_cuda_getDevice", None)
    get_stream = getattr(C, "_cuda_getCurrentStream", None)
    record = getattr(getattr(C, "_CudaEventBase", None), "record", None)
    Stream = getattr(torch.cuda, "Stream", None)
    if not (get_device and get_stream and record and Stream):
        return _record_event
    streams: dict[tuple, Any] = {}

    def record_on_current_stream(event: Any) -> None:
        data = get_stream(get_device())
        stream = streams.get(data)
        if stream is None:
            if len(streams) > 256:
                streams.clear()
            stream = streams[data] = Stream(stream_id=data[0], device_index=data[1], device_type=data[2])
        record(event, stream)

    try:
        official = torch.cuda.current_stream()
        data = get_stream(get_device())
        if (data[0], data[1]) != (official.stream_id, official.device_index):
            return _record_event
    except Exception:
        return _record_event
    return record_on_current_stream


def _wait_for(event: Any, deadline: float) -> bool:
    """Until ``event`` completed (True) or ``deadline`` passed (False); polls with a growing pause, so the
    writer thread rarely takes the GIL from the training thread while the GPU catches up."""
    pause = 0.001
    while not event.query():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return True


def _clear_pool_in_child() -> None:
    """In a forked child the parent's CUDA events mean nothing."""
    POOL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_clear_pool_in_child)
