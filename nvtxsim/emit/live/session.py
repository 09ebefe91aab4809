"""Emit stage, live timing: one session, and the phase methods that fill its windows.

While an iteration is measured, :data:`METHODS` are ``phase``'s ``__enter__``/``__exit__``
(:func:`nvtxsim.emit.ranges.set_live`): each range's CPU time (``perf_counter_ns``) goes into the
current window's list for its phase, and, once the program uses CUDA, the range's GPU marks
(:mod:`nvtxsim.emit.live.gpu`). At every :func:`nvtxsim.step` the :class:`Session` counts the
iteration, feeds its trigger, hands a finished window to the writer thread
(:mod:`nvtxsim.emit.live.writer`) and switches the methods on or off for sampling.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from nvtxsim.emit import ranges as _r
from nvtxsim.emit import window as _window
from nvtxsim.emit.live.budget import OFF, TIMED, GpuBudget, block_from_env
from nvtxsim.emit.live.gpu import GpuTiming, Span
from nvtxsim.emit.live.sinks import Sink
from nvtxsim.emit.live.trigger import Trigger, Watch
from nvtxsim.emit.live.writer import FlushedWindow, WindowWriter
from nvtxsim.emit.notices import report

_PENDING_MAX = 200_000  # GPU mark pairs per window; past that GPU time is skipped for the window

_now = time.perf_counter_ns
_tls = threading.local()  # .stack: [(phase, opening GPU mark or None, t0)] of the ranges open on this thread
_current: Session | None = None  # the session the measuring methods fill (Session.activate)
_rec_enter = _r.phase._recording_enter
_rec_exit = _r.phase._recording_exit


class Session:
    """What one start() measures: the iterations, the current window, and where finished windows go."""

    def __init__(
        self,
        every: int,
        sample: int,
        trigger: Trigger | None,
        sinks: list[Sink],
        gpu: type[GpuTiming] | None,
        gpu_budget: float | None = None,
    ) -> None:
        self.every, self.sample, self.trigger, self.gpu_kind = every, sample, trigger, gpu
        self.gpu_budget = gpu_budget  # share of wall time a costly GPU timing (CUPTI) may take; None: no limit
        self.pid = os.getpid()
        self.first = 0  # first iteration of the current window
        self.iteration = -1  # last step() seen
        self.stepped = False
        self.opened = False  # the sinks were opened (at the first step)
        self.measured = 0  # measured iterations in the current window
        self.cpu: dict[str, list[int]] = {}  # phase name -> CPU ns of each range (current window)
        self.pending: list[Span] = []  # GPU marks of the current window's ranges
        self.trigger_mark = 0  # len of the trigger phase's list at the last step()
        self.fired: dict | None = None
        self.dropped = 0
        self.gpu: GpuTiming | None = None  # placing GPU marks now (None: CPU times only)
        self.timing: GpuTiming | None = None  # the GPU timing attached last: resolves and releases the marks
        self.budget: GpuBudget | None = None  # which iterations get GPU times (a timing with a cost)
        self.gpu_on: bool | None = None  # this iteration places GPU marks (None: not switched since attaching)
        self.gpu_records: bool | None = None  # the GPU timing records this iteration (CUPTI's kinds on)
        self.gpu_failed = False  # placing a mark failed: CPU times only from then on
        self.gpu_measured = 0  # measured iterations of the current window that had GPU times
        self.writer = WindowWriter(sinks, self.fail)  # starts the writer thread
        self.watch: Watch | None = None  # the trigger's watch thread (while current)

    # ---- training thread

    def measuring(self, iteration: int) -> bool:
        return self.sample <= 1 or (iteration >= 0 and iteration % self.sample == 0)

    def on_step(self, iteration: int) -> None:
        """At the top of iteration ``iteration``: trigger, window flush, sampling switch."""
        if iteration <= self.iteration:  # the count restarted (window.configure)
            self.first = max(iteration, 0)
        if self.stepped and self.measuring(self.iteration):  # the iteration that just ended
            self.measured += 1
            self.gpu_measured += bool(self.gpu_on)
            if self.trigger is not None:
                self._observe_trigger(max(self.iteration, 0))
        self.iteration, self.stepped = iteration, True
        if not self.opened and not self._open_sinks():
            return
        if iteration - self.first >= self.every:
            self.flush(iteration - 1)
            self.first = iteration
        self.check_gpu()
        measure = self.measuring(iteration)
        methods = METHODS if measure else None
        if _current is self:  # never after fail
            if methods is not _r._live_methods:  # swap only when sampling switches
                _r.set_live(True, methods)
            self.switch_gpu(measure)

    def switch_gpu(self, measure: bool) -> None:
        """GPU marks on or off for the iteration starting: on where it is measured and, under a cost budget, chosen."""
        timing = self.timing
        if timing is None:
            return
        on = records = measure and not self.gpu_failed
        if self.sample > 1 and not self.gpu_failed and self.budget is None and timing.cost_ns() is not None:
            # CUPTI sampled every K-th iteration: on for the iterations either side too (a lead and a trail), as
            # the budget's blocks are: an iteration next to a switch is not measured as it ran (budget.py)
            it = self.iteration
            records = on or self.measuring(it + 1) or self.measuring(it - 1)
        if self.budget is not None:  # asked at every step: it follows the steps' wall time
            state = self.budget.decide(_now(), timing.cost_ns() or 0, allowed=on)
            on, records = state == TIMED, state != OFF  # a block's lead and trail: records on, no markers
        if records != self.gpu_records:
            timing.sampling(records)  # CUPTI: records only while GPU-timed (and around, under a budget)
        self.gpu_on, self.gpu_records = on, records
        self.gpu = timing if on else None

    def claim(self) -> None:
        """Open the sinks now (at start, before the program can start workers), not at the first step."""
        if not self.opened and self.is_current():
            self._open_sinks()

    def _open_sinks(self) -> bool:
        """At :meth:`claim` or the first step(): the sinks open (the file is claimed now); a failure turns live timing off."""
        problem = self.writer.open_sinks()
        if problem is not None:
            self.fail(problem)
            return False
        self.opened = True
        return True

    def _observe_trigger(self, iteration: int) -> None:
        trigger = self.trigger
        assert trigger is not None  # on_step checked
        times = self.cpu.get(trigger.name) or []
        n = len(times)
        if n > self.trigger_mark:
            fired = trigger.observe(sum(times[self.trigger_mark : n]), iteration)
            if fired is not None:
                self.fired = fired
        self.trigger_mark = n

    def check_gpu(self) -> None:
        """Attach the GPU timing once the program uses the GPU (asked at every step until then; once only: an
        iteration left untimed by sampling or a budget keeps the timing, and the budget's history, as they are)."""
        if self.timing is not None or self.gpu_kind is None:
            return
        try:
            timing = self.gpu_kind.attach()
        except Exception:
            return
        if timing is not None:
            self.timing, self.gpu_on, self.gpu_records = timing, None, None
            if self.gpu_budget and timing.cost_ns() is not None:
                self.budget = GpuBudget(self.gpu_budget, seed=self.pid, block=block_from_env())

    def flush(self, last: int, *, final: bool = False, wait: float = 0.0) -> None:
        """Hand the current window to the writer thread (dropped, and counted, when its queue is full; ``wait``:
        at stop(), where the queue may still be full of windows that a busy program kept the writer from writing)."""
        cpu, pending, measured, gpu_measured = self.cpu, self.pending, self.measured, self.gpu_measured
        self.cpu, self.pending, self.measured, self.trigger_mark, self.gpu_measured = {}, [], 0, 0, 0
        if not cpu and not final:
            return
        window = FlushedWindow(
            iterations=(self.first, max(last, self.first)) if self.iteration >= 0 else None,
            measured=measured,
            gpu_measured=gpu_measured if self.budget is not None else None,
            sample=self.sample,
            pid=self.pid,
            cpu=cpu,
            spans=pending,
            gpu=self.timing,
            fired=self.fired,
            dropped=self.dropped,
            flushed=time.monotonic(),
            threads=threading.active_count() > 2,  # more than this thread and the writer: phases may end late
        )
        self.fired = None
        if self.writer.submit(window, wait):
            self.dropped = 0
            return
        self.dropped += 1
        if self.timing is not None:
            self.timing.release(pending)

    def finish(self, timeout: float) -> None:
        """At stop(), in the process that started it: the last (partial) window, then the writer thread ends."""
        if self.stepped and self.measuring(self.iteration):
            self.measured += 1  # the iteration running now
            self.gpu_measured += bool(self.gpu_on)
        self.flush(self.iteration, final=bool(self.cpu) or self.dropped > 0, wait=timeout)
        if self.dropped:
            report(f"live timing: the last {self.dropped} window(s) were not written (the writer fell behind)")
        self.writer.close(timeout)
        if self.timing is not None:
            self.timing.sampling(False)  # CUPTI: no more records once nothing reads them

    def fail(self, message: str) -> None:
        """Turn live timing off (from either thread) with one stderr line."""
        self.deactivate()
        report(message)

    # ---- the current session

    def activate(self) -> None:
        """Make this the current session: it sees every step() from now on, and measures this iteration if sampled."""
        global _current
        _current = self
        self.iteration = _window.iteration()  # the iteration in progress is not counted as measured
        self.first = self.iteration + 1
        self.check_gpu()
        _window.on_step = self.on_step
        _r.set_live(True, METHODS if self.measuring(self.iteration) else None)
        self.switch_gpu(self.measuring(self.iteration))
        if self.trigger is not None and self.trigger.fired is None and self.watch is None:
            self.watch = Watch(self.trigger, self._fired_while_running)

    def _fired_while_running(self, fired: dict) -> None:
        """The watch thread opened the window inside the slow iteration: the live file says so at the next flush."""
        self.fired = fired

    def deactivate(self) -> bool:
        """Live timing off if this is the current session (phases back on their plain methods); whether it was."""
        global _current
        if _current is not self:
            return False
        _current = None
        _window.on_step = None
        _r.set_live(False)
        if self.watch is not None:
            self.watch.stop()
        return True

    def is_current(self) -> bool:
        return _current is self


# --------------------------------------------------------------------------- the measuring methods


def _live_enter(self: Any) -> Any:
    """phase.__enter__ while an iteration is measured: the range, the start time, the opening GPU mark.

    The clock reads sit just inside the NVTX push/pop, so under a profiler the live CPU time and
    the range's duration cover the same work (the GPU marks and bookkeeping included)."""
    if _r._active:
        _rec_enter(self)
    t0 = _now()
    s = _current
    try:
        st = _tls.stack
    except AttributeError:
        st = _tls.stack = []
    ev = None
    if s is not None and s.gpu is not None:
        try:
            ev = s.gpu.begin()
        except Exception as exc:
            ev = None
            what, s.gpu, s.gpu_failed = s.gpu.what, None, True
            report(f"live timing: cannot record {what} ({type(exc).__name__}: {exc}); CPU times only")
    st.append((self, ev, t0))
    tr = s.trigger if s is not None else None
    if tr is not None and self.name == tr.name:  # the watch thread sees the trigger's phase running
        tr.t0 = t0
    return self


def _live_exit(self: Any, exc_type: Any, exc: Any, tb: Any) -> bool:
    """phase.__exit__ while measured: the closing GPU mark, the end time, the range's end, then the bookkeeping."""
    try:
        st = _tls.stack
        top = st.pop() if st else None
        if top is not None and top[0] is not self:
            top = _unwind(st, top, self)
    except Exception:
        top = None
    s = _current
    ev1 = None
    if top is not None and top[1] is not None and s is not None and s.timing is not None:
        # a range opened while GPU-timed closes after a budget switched CUPTI off: its closing marker would never
        # come back (the opening ticket holds nothing); any other closes as it opened (an event goes back to its pool)
        if s.gpu_records or s.budget is None:
            ev1 = s.timing.end(top[1])
    t1 = _now()
    if _r._active:
        _rec_exit(self, exc_type, exc, tb)
    if top is not None and s is not None:
        name = self.name
        times = s.cpu.get(name)
        if times is None:
            times = s.cpu.setdefault(name, [])
        times.append(t1 - top[2])
        tr = s.trigger
        if tr is not None and name == tr.name:
            tr.done_ns += t1 - top[2]
            tr.t0 = None
        if ev1 is not None:
            if len(s.pending) < _PENDING_MAX:
                s.pending.append((name, top[1], ev1))
            elif s.timing is not None:
                s.timing.release([(name, top[1], ev1)])
    return False


def _unwind(st: list, top: tuple, ph: Any) -> tuple | None:
    """The entry of ``ph`` below mismatched ones (a phase opened before sampling switched); None if absent."""
    for i in range(len(st) - 1, -1, -1):
        if st[i][0] is ph:
            entry = st[i]
            del st[i:]
            return entry
    st.append(top)  # not ours: leave the stack as it was
    if len(st) > 256:
        st.clear()
    return None


METHODS = (_live_enter, _live_exit)


def _after_fork_in_child() -> None:
    """In a forked child live timing is off: the parent's writer thread does not exist here."""
    global _current
    if _current is not None:
        _current = None
        try:
            _window.on_step = None
            _r.set_live(False)
            _tls.__dict__.clear()
        except Exception:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
