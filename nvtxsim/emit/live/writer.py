"""Emit stage, live timing: the writer thread, from a session's windows to its sinks.

The training thread hands a finished window over (:meth:`WindowWriter.submit`: never blocks while the
program runs; a window that finds the queue full is dropped and counted). The writer thread waits for
the window's GPU marks, summarises it into a :class:`~nvtxsim.live_record.LiveWindow` and gives that
to each sink in turn.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from nvtxsim import phases as _phases
from nvtxsim.emit.live.gpu import GpuTiming, Span
from nvtxsim.emit.live.sinks import Sink
from nvtxsim.emit.notices import report
from nvtxsim.live_record import LiveWindow, PhaseTimes

QUEUE_SIZE = 64  # windows waiting for the writer; past that a window is dropped (never blocks)
#: The writer reads a window's lists this long after the flush: a phase ending on another thread at that moment may
#: still append to the list it looked up just before the swap (a GIL switch between the lookup and the append).
SETTLE_S = 0.05


@dataclass
class FlushedWindow:
    """One window as the session measured it, handed to the writer thread."""

    iterations: tuple[int, int] | None
    measured: int
    sample: int
    pid: int
    cpu: dict[str, list[int]]  # phase name -> CPU ns of each range
    spans: list[Span]  # GPU marks of the ranges, resolved by ``gpu``
    gpu: GpuTiming | None
    fired: dict | None  # a trigger's firing in this window
    dropped: int  # windows dropped since the last one handed over
    flushed: float  # time.monotonic() of the hand-over
    threads: bool  # other threads were running: phases may end late (see SETTLE_S)
    gpu_measured: int | None = None  # measured iterations with GPU times, under a cost budget (None: no budget)

    def summary(self) -> LiveWindow:
        """The window's record (waits for its GPU marks, so: on the writer thread)."""
        timing = self.gpu
        gpu = timing.resolve_phases(self.spans) if timing is not None and self.spans else {}
        covered: dict[str, int] = {}  # ranges with GPU marks per phase: what its GPU numbers cover
        if self.gpu_measured is not None:
            for name, _a, _b in self.spans:
                covered[name] = covered.get(name, 0) + 1
        phases = {}
        for name, times in sorted(self.cpu.items()):
            if times:
                g = gpu.get(name)
                counts = () if g is None else (g.kernels, g.copies, g.copy_bytes)
                phases[f"{_phases.DOMAIN}:{name}"] = PhaseTimes.of(
                    times, None if g is None else g.ns, counts, covered.get(name)
                )
        dropped = timing.dropped() if timing is not None else 0
        return LiveWindow(
            iterations=self.iterations,
            measured=self.measured,
            gpu_measured=self.gpu_measured,
            sample=self.sample,
            pid=self.pid,
            time=round(time.time(), 3),
            phases=phases,
            trigger=self.fired or None,
            dropped_windows=self.dropped or None,
            gpu_mode=timing.mode if timing is not None and gpu else None,
            gpu_dropped=dropped or None,
        )


class WindowWriter:
    """The writer thread of one session: a bounded queue of windows in, :class:`LiveWindow`\\ s to ``sinks`` out.

    ``fail(message)`` turns live timing off (from the writer thread) when a window cannot be summarised or a
    fatal sink fails; the thread then ends."""

    def __init__(self, sinks: list[Sink], fail: Callable[[str], None]) -> None:
        self.sinks, self.fail = sinks, fail
        self.queue: queue.Queue[FlushedWindow | None] = queue.Queue(QUEUE_SIZE)
        self.thread = threading.Thread(target=self._loop, name="nvtxsim-live", daemon=True)
        self.thread.start()

    def open_sinks(self) -> str | None:
        """Open every sink (the file is created or truncated here); the failure line of the first that cannot."""
        for sink in self.sinks:
            try:
                sink.open()
            except Exception as exc:
                return sink.failure(exc)
        return None

    def submit(self, window: FlushedWindow, wait: float = 0.0) -> bool:
        """Queue ``window``; False when the queue is full (after ``wait`` seconds, if given)."""
        try:
            self.queue.put(window, timeout=wait) if wait > 0 else self.queue.put_nowait(window)
        except queue.Full:
            return False
        return True

    def close(self, timeout: float) -> None:
        """End the thread after the queued windows (waits up to ``timeout``), then close the sinks."""
        try:
            self.queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)
        if not self.thread.is_alive():
            for sink in self.sinks:
                sink.close()

    def _loop(self) -> None:
        while True:
            window = self.queue.get()
            if window is None:
                return
            settle = window.flushed + SETTLE_S - time.monotonic()
            if settle > 0 and window.threads and self.queue.qsize() < QUEUE_SIZE // 2:  # never when behind
                time.sleep(settle)
            try:
                record = window.summary()
            except Exception as exc:
                self.fail(f"live timing could not summarise a window ({type(exc).__name__}: {exc})")
                return
            if not self._emit(record):
                return

    def _emit(self, record: LiveWindow) -> bool:
        """``record`` to every sink; False when a fatal sink failed (live timing is then off)."""
        for sink in list(self.sinks):
            try:
                sink.write(record)
            except Exception as exc:
                if sink.fatal:
                    self.fail(sink.failure(exc))
                    return False
                self.sinks.remove(sink)
                report(sink.failure(exc))
        return True
