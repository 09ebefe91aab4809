"""Emit stage: live phase timing during training, without a profiler.

Long runs need always-on per-phase timing that neither syncs the GPU (Isaac Lab's Timer)
nor costs what torch.profiler costs. While live timing is on, every ``nvtxsim.phase``
also measures its CPU time (``perf_counter_ns``) and, once CUDA is initialised, its GPU
time: two pooled CUDA events recorded on the current stream at enter and exit. A
background thread resolves the events only once they completed (``event.query()``, never
a sync on the training thread) and writes one JSON line per ``every`` iterations
(:func:`nvtxsim.step` marks them)::

    {"iterations": [first, last], "measured": n, "sample": k, "pid": ..., "time": ...,
     "phases": {"nvtxsim:sim_step": {"count", "cpu_ns", "cpu_mean_ns", "cpu_p90_ns", "gpu_ns"}}}

``gpu_ns`` is the total over the phase's ranges, null without CUDA. With ``sample=K`` only
every K-th iteration is measured; the others run on the plain (idle or recording) methods,
so they cost what phases cost with live timing off. Turn it on with ``NVTXSIM_LIVE=FILE``
(``NVTXSIM_LIVE_EVERY``, ``NVTXSIM_LIVE_SAMPLE``, ``NVTXSIM_LIVE_TRIGGER``) or
:func:`start`. Nothing here ever raises into, or blocks, the training loop: a failing
file, writer or callback is reported once on stderr and live timing turns off (or that
sink alone, for a logger).
"""

from __future__ import annotations

import atexit
import errno
import os
import stat
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from nvtxsim import phases as _phases
from nvtxsim.emit import ranges as _r
from nvtxsim.emit import window as _window
from nvtxsim.emit.backend import report_once
from nvtxsim.envflags import env_flag, parse_flag

ENV_FILE = "NVTXSIM_LIVE"
ENV_EVERY = "NVTXSIM_LIVE_EVERY"
ENV_SAMPLE = "NVTXSIM_LIVE_SAMPLE"
ENV_GPU = "NVTXSIM_LIVE_GPU"  # 0/false/no/off: CPU times only
ENV_TRIGGER = _phases.ENV_LIVE_TRIGGER
ENV_TRIGGER_ITERATIONS = _phases.ENV_LIVE_TRIGGER_ITERATIONS
#: Set by the process that started live timing from the environment: its children (exec'd
#: workers inheriting ``NVTXSIM_LIVE``) append to the file instead of truncating it.
ENV_OWNER = "NVTXSIM_LIVE_OWNER"
DEFAULT_EVERY = 100
DEFAULT_TRIGGER_ITERATIONS = 10
_QUEUE_SIZE = 64  # windows waiting for the writer; past that a window is dropped (never blocks)
_GPU_WAIT_S = 10.0  # how long the writer waits for a window's events to complete before giving up on them
#: The writer reads a window's lists this long after the flush: a phase ending on another thread at that moment may
#: still append to the list it looked up just before the swap (a GIL switch between the lookup and the append).
_SETTLE_S = 0.05
_PENDING_MAX = 200_000  # GPU event pairs per window; past that GPU time is skipped for the window

_now = time.perf_counter_ns
_tls = threading.local()  # .stack: [(phase, event or None, t0)] of the ranges open on this thread
_session: _Session | None = None
_POOL: deque = deque()  # idle CUDA events (created with enable_timing), reused by every session of this process
_rec_enter = _r.phase._recording_enter
_rec_exit = _r.phase._recording_exit


# --------------------------------------------------------------------------- trigger


class Trigger:
    """``NAME>FACTORx [for N]``: once the phase's CPU time in N measured iterations in a row (default 1; all its
    ranges of an iteration summed) exceeded FACTOR x its baseline, open a capture window of the next
    ``iterations`` iterations. The baseline is the median of the phase's previous measured iterations (the
    last :attr:`BASELINE` under the factor; the rule is checked once :attr:`MIN_BASELINE` are in).
    One firing per run: nsys records one window."""

    BASELINE = 100
    MIN_BASELINE = 10

    def __init__(self, rule: str, iterations: int = DEFAULT_TRIGGER_ITERATIONS) -> None:
        try:
            self.name, self.factor, self.run = _phases.parse_trigger(rule)
        except Exception as exc:
            raise ValueError(str(exc)) from None
        if iterations < 1:
            raise ValueError(f"trigger: the window needs at least 1 iteration, got {iterations}")
        self.name = self.name.removeprefix(f"{_phases.DOMAIN}:")  # the key as the live file writes it
        self.rule, self.iterations = rule.strip(), iterations
        self.baseline: deque = deque(maxlen=self.BASELINE)
        self.slow = 0  # measured iterations in a row over the factor
        self.fired: dict | None = None

    def observe(self, ns: int, iteration: int) -> dict | None:
        """Feed one measured iteration's time of the phase; the firing (once) as a dict, else None."""
        if self.fired is not None:
            return None
        if len(self.baseline) < self.MIN_BASELINE:
            self.baseline.append(ns)
            return None
        base = _median(self.baseline)
        if ns <= self.factor * base:
            self.slow = 0
            self.baseline.append(ns)  # slow iterations stay out: a long slowdown does not raise its own baseline
            return None
        self.slow += 1
        if self.slow < self.run:
            return None
        start = _window.iteration()  # step() calls on_step before it opens windows: the iteration starting now
        if not _window.arm(start, start + self.iterations):
            return None
        self.fired = {
            "rule": self.rule,
            "at": iteration,
            "ns": int(ns),
            "baseline_ns": int(base),
            "window": [start, start + self.iterations - 1],
        }
        _report(
            f"live trigger {self.rule}: {ns / max(base, 1):.2f}x the baseline at iteration {iteration}; "
            f"capture window: iterations {start}..{start + self.iterations - 1}"
        )
        return self.fired


def _median(values: Any) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


# --------------------------------------------------------------------------- the session


class _Session:
    """What one start() measures and where it goes."""

    def __init__(
        self,
        path: str | None,
        every: int,
        sample: int,
        writer: Any,
        callback: Callable[[dict], Any] | None,
        trigger: Trigger | None,
        append: bool,
        use_gpu: bool = True,
    ) -> None:
        self.path, self.every, self.sample, self.append, self.use_gpu = path, every, sample, append, use_gpu
        self.writer, self.callback, self.trigger = writer, callback, trigger
        self.pid = os.getpid()
        self.first = 0  # first iteration of the current window
        self.iteration = -1  # last step() seen
        self.stepped = False
        self.measured = 0  # measured iterations in the current window
        self.cpu: dict[str, list[int]] = {}  # phase name -> CPU ns of each range (current window)
        self.pending: list = []  # (name, ev0, ev1) of the current window
        self.trigger_mark = 0  # len of the trigger phase's list at the last step()
        self.fired: dict | None = None
        self.dropped = 0
        self.gpu = False  # CUDA in use: record events
        self.torch: Any = None
        self.capturing: Callable[[], bool] = bool  # torch.cuda.is_current_stream_capturing once CUDA is in use
        self.record_on_stream: Callable[[Any], Any] = _record_event  # event -> recorded on the current stream
        self.pool = _POOL  # idle CUDA events, kept across start()/stop()
        import queue  # here, not at import: ``import nvtxsim`` stays light when live timing is off

        self.full = queue.Full
        self.queue: queue.Queue = queue.Queue(_QUEUE_SIZE)
        self.file: Any = None
        self.thread = threading.Thread(target=self._write_loop, name="nvtxsim-live", daemon=True)
        self.thread.start()

    # ---- training thread

    def measuring(self, iteration: int) -> bool:
        return self.sample <= 1 or (iteration >= 0 and iteration % self.sample == 0)

    def on_step(self, iteration: int) -> None:
        """At the top of iteration ``iteration``: trigger, window flush, sampling switch."""
        if iteration <= self.iteration:  # the count restarted (window.configure)
            self.first = max(iteration, 0)
        if self.stepped and self.measuring(self.iteration):  # the iteration that just ended
            self.measured += 1
            if self.trigger is not None:
                self._observe_trigger(max(self.iteration, 0))
        self.iteration, self.stepped = iteration, True
        if self.file is None and self.path is not None and not self.open_file():
            return
        if iteration - self.first >= self.every:
            self.flush(iteration - 1)
            self.first = iteration
        self._check_gpu()
        methods = _METHODS if self.measuring(iteration) else None
        if methods is not _r._live_methods and _session is self:  # swap only when sampling switches, never after _fail
            _r.set_live(True, methods)

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

    def _check_gpu(self) -> None:
        if self.gpu or not self.use_gpu:
            return
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                # the C function behind torch.cuda.is_current_stream_capturing (one Python frame less per record)
                c_capturing = getattr(getattr(torch, "_C", None), "_cuda_isCurrentStreamCapturing", None)
                self.capturing = c_capturing or torch.cuda.is_current_stream_capturing
                self.record_on_stream = _stream_recorder(torch)
                self.torch, self.gpu = torch, True
        except Exception:
            pass

    def flush(self, last: int, *, final: bool = False, wait: float = 0.0) -> None:
        """Hand the current window to the writer thread (dropped, and counted, when its queue is full; ``wait``:
        at stop(), where the queue may still be full of windows that a busy program kept the writer from writing)."""
        cpu, pending, measured = self.cpu, self.pending, self.measured
        self.cpu, self.pending, self.measured, self.trigger_mark = {}, [], 0, 0
        if not cpu and not final:
            return
        item = {
            "iterations": [self.first, max(last, self.first)] if self.iteration >= 0 else None,
            "measured": measured,
            "cpu": cpu,
            "pending": pending,
            "fired": self.fired,
            "dropped": self.dropped,
            "flushed": time.monotonic(),
            "threads": threading.active_count() > 2,
        }  # more than this thread and the writer: phases may end late
        self.fired = None
        try:
            self.queue.put(item, timeout=wait) if wait > 0 else self.queue.put_nowait(item)
            self.dropped = 0
        except self.full:
            self.dropped += 1
            self._recycle(pending)

    def record(self) -> Any:
        """A pooled CUDA event recorded on the current stream; None while the stream captures a CUDA graph
        (an event record there would end up in the user's graph, or invalidate its capture)."""
        if self.capturing():
            return None
        try:
            ev = self.pool.pop()
        except IndexError:
            ev = self.torch.cuda.Event(enable_timing=True)
        self.record_on_stream(ev)
        return ev

    def _recycle(self, pending: list) -> None:
        for _name, ev0, ev1 in pending:
            self.pool.append(ev0)
            self.pool.append(ev1)

    # ---- writer thread

    def _write_loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            settle = item["flushed"] + _SETTLE_S - time.monotonic()
            if settle > 0 and item["threads"] and self.queue.qsize() < _QUEUE_SIZE // 2:  # never when behind
                time.sleep(settle)
            try:
                record = self._record(item)
            except Exception as exc:
                _fail(self, f"live timing could not summarise a window ({type(exc).__name__}: {exc})")
                return
            if not self._emit(record):
                return

    def _record(self, item: dict) -> dict:
        gpu = self._resolve(item["pending"])
        phases = {}
        for name, times in sorted(item["cpu"].items()):
            times = sorted(times)
            n = len(times)
            if not n:
                continue
            total = sum(times)
            phases[f"{_phases.DOMAIN}:{name}"] = {
                "count": n,
                "cpu_ns": total,
                "cpu_mean_ns": total // n,
                "cpu_p90_ns": times[min(n - 1, max(0, -(-9 * n // 10) - 1))],
                "gpu_ns": gpu.get(name),
            }
        record = {
            "iterations": item["iterations"],
            "measured": item["measured"],
            "sample": self.sample,
            "pid": self.pid,
            "time": round(time.time(), 3),
            "phases": phases,
        }
        if item["fired"]:
            record["trigger"] = item["fired"]
        if item["dropped"]:
            record["dropped_windows"] = item["dropped"]
        return record

    def _resolve(self, pending: list) -> dict[str, int]:
        """Total GPU ns per phase of the window's completed event pairs (waits, off the training thread)."""
        totals: dict[str, int] = {}
        if not pending:
            return totals
        deadline = time.monotonic() + _GPU_WAIT_S
        try:
            _wait_for(
                pending[-1][2], deadline
            )  # once the stream reached the last event, the earlier ones on it are done
        except Exception:
            pass  # reported below, per event
        for name, ev0, ev1 in pending:
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

    def _emit(self, record: dict) -> bool:
        import json

        if self.path is not None:
            if self.file is None and not self.open_file():
                return False
            try:
                _write_line(self.file, json.dumps(record, separators=(",", ":")) + "\n")
            except Exception as exc:
                _fail(
                    self,
                    f"live timing: cannot write {self.path!r} ({type(exc).__name__}: {exc}); live timing turned off",
                )
                return False
        if self.writer is not None:
            try:
                _scalars(self.writer, record)
            except Exception as exc:
                self.writer = None
                _report(f"live timing: the SummaryWriter failed ({type(exc).__name__}: {exc}); no more scalars")
        if self.callback is not None:
            try:
                self.callback(record)
            except Exception as exc:
                self.callback = None
                _report(f"live timing: the callback failed ({type(exc).__name__}: {exc}); it is not called again")
        return True

    def open_file(self) -> bool:
        """Open (truncate, unless appending) the file: at the first step(), so that nvtxsim's own commands,
        which never step, leave it alone, and children exec'd later append after the truncation."""
        path = self.path
        assert path is not None  # the callers checked
        try:
            self.file = _open_append(path, truncate=not self.append)
            return True
        except Exception as exc:
            _fail(
                self, f"live timing: cannot write {self.path!r} ({type(exc).__name__}: {exc}); live timing turned off"
            )
            return False

    def close(self, timeout: float) -> None:
        try:
            self.queue.put(None, timeout=timeout)
        except self.full:
            pass
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)
        if self.file is not None and not self.thread.is_alive():
            try:
                self.file.close()
            except Exception:
                pass


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


def _scalars(writer: Any, record: dict) -> None:
    """``nvtxsim/<phase>/cpu_ms`` and ``gpu_ms``: the phase's time per measured iteration."""
    per = max(record.get("measured") or 1, 1)
    step = (record.get("iterations") or [0, 0])[1]
    for key, p in record["phases"].items():
        name = key.split(":", 1)[1]
        writer.add_scalar(f"nvtxsim/{name}/cpu_ms", p["cpu_ns"] / per / 1e6, step)
        if p.get("gpu_ns") is not None:
            writer.add_scalar(f"nvtxsim/{name}/gpu_ms", p["gpu_ns"] / per / 1e6, step)


# --------------------------------------------------------------------------- the measuring methods


def _live_enter(self: Any) -> Any:
    """phase.__enter__ while an iteration is measured: the range, the start time, a CUDA event.

    The clock reads sit just inside the NVTX push/pop, so under a profiler the live CPU time and
    the range's duration cover the same work (the event records and bookkeeping included)."""
    if _r._active:
        _rec_enter(self)
    t0 = _now()
    s = _session
    try:
        st = _tls.stack
    except AttributeError:
        st = _tls.stack = []
    ev = None
    if s is not None and s.gpu:
        try:
            ev = s.record()
        except Exception as exc:
            ev = None
            s.gpu = False
            _report(f"live timing: cannot record CUDA events ({type(exc).__name__}: {exc}); CPU times only")
    st.append((self, ev, t0))
    return self


def _live_exit(self: Any, exc_type: Any, exc: Any, tb: Any) -> bool:
    """phase.__exit__ while measured: the closing event, the end time, the range's end, then the bookkeeping."""
    try:
        st = _tls.stack
        top = st.pop() if st else None
        if top is not None and top[0] is not self:
            top = _unwind(st, top, self)
    except Exception:
        top = None
    s = _session
    ev1 = None
    if top is not None and top[1] is not None and s is not None:
        try:
            ev1 = s.record()
        except Exception:
            ev1 = None
        if ev1 is None:
            s.pool.append(top[1])  # no pair: the opening event goes back to the pool
    t1 = _now()
    if _r._active:
        _rec_exit(self, exc_type, exc, tb)
    if top is not None and s is not None:
        name = self.name
        times = s.cpu.get(name)
        if times is None:
            times = s.cpu.setdefault(name, [])
        times.append(t1 - top[2])
        if ev1 is not None:
            if len(s.pending) < _PENDING_MAX:
                s.pending.append((name, top[1], ev1))
            else:
                s.pool.extend((top[1], ev1))
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


_METHODS = (_live_enter, _live_exit)


# --------------------------------------------------------------------------- public API

_lock = threading.Lock()
_owner_set = False


def _report(message: str) -> None:
    try:
        sys.stderr.write(f"nvtxsim: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _fail(session: _Session, message: str) -> None:
    """Turn live timing off from the writer thread (one stderr line)."""
    global _session
    if _session is session:
        _session = None
        _window.on_step = None
        _r.set_live(False)
    _report(message)


def _write_line(file: Any, line: str) -> None:
    """One ``write()`` per line: with O_APPEND, lines of several processes never interleave (a buffered
    file splits lines over 8 KiB). A line cut short (full disk) is taken back, so the file ends with a
    whole line; then OSError."""
    fd = file.fileno()
    data = line.encode("utf-8")
    try:
        st = os.fstat(fd)
        before = st.st_size if stat.S_ISREG(st.st_mode) else None
    except OSError:
        before = None
    written = os.write(fd, data)  # raises only when nothing was written
    if written < len(data):
        if before is not None:
            _take_back(fd, before, written)
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (wrote {written} of {len(data)} bytes)")


def _take_back(fd: int, before: int, written: int) -> None:
    """Truncate to ``before`` when the file ends with our partial line (another process appended nothing since)."""
    try:
        size = os.fstat(fd).st_size
        if size == before + written:
            os.ftruncate(fd, before)
    except OSError:
        pass


def _open_append(path: str, *, truncate: bool) -> Any:
    """``path`` for appending (O_APPEND: lines of other processes are never overwritten), opened
    without blocking: a FIFO nobody reads would block the program in ``open`` until a reader came
    (forever without one), so it is refused; a FIFO with a reader (``NVTXSIM_LIVE=>(jq .)``) is
    written by the writer thread, which drops windows rather than stop the program when it stalls."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | (os.O_TRUNC if truncate else 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO with no reader (or a socket)
            raise OSError(errno.ENXIO, "a FIFO or socket nobody reads") from None
        raise
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


def start(
    path: str | None = None,
    *,
    every: int = DEFAULT_EVERY,
    sample: int = 1,
    writer: Any = None,
    callback: Callable[[dict], Any] | None = None,
    trigger: str | None = None,
    trigger_iterations: int = DEFAULT_TRIGGER_ITERATIONS,
    append: bool = False,
    gpu: bool = True,
) -> None:
    """Start live phase timing (restarts it when on): one JSON line to ``path`` per ``every`` iterations.

    ``sample=K`` measures every K-th iteration (the others cost nothing extra). ``writer``: any object
    with TensorBoard's ``add_scalar(tag, value, step)``; ``callback(record)``: any other logger. Both run
    on the writer thread. ``trigger``: a rule like ``'sim_step>1.5x'`` opening a capture window of
    ``trigger_iterations`` iterations (see :class:`Trigger`). ``gpu=False``: CPU times only, no CUDA events.
    """
    global _session
    if every < 1 or sample < 1:
        raise ValueError("live timing: every and sample must be >= 1")
    trig = Trigger(trigger, trigger_iterations) if trigger else None
    stop()
    with _lock:
        _session = _Session(
            None if path is None else os.fspath(path), every, sample, writer, callback, trig, append, gpu
        )
        _session.iteration = _window.iteration()  # the iteration in progress is not counted as measured
        _session.first = _session.iteration + 1
        _session._check_gpu()
        _window.on_step = _session.on_step
        _r.set_live(True, _METHODS if _session.measuring(_session.iteration) else None)
    _register_atexit()


def stop(timeout: float = 5.0) -> None:
    """Stop live timing: the last (partial) window is written, the writer thread ends (waits up to ``timeout``)."""
    global _session, _owner_set
    with _lock:
        s, _session = _session, None
        if s is None:
            return
        _window.on_step = None
        _r.set_live(False)
    if s.pid == os.getpid():
        if s.stepped and s.measuring(s.iteration):
            s.measured += 1  # the iteration running now
        s.flush(s.iteration, final=bool(s.cpu) or s.dropped > 0, wait=timeout)
        if s.dropped:
            _report(f"live timing: the last {s.dropped} window(s) were not written (the writer fell behind)")
        s.close(timeout)
    if _owner_set and os.environ.get(ENV_OWNER) == str(os.getpid()):
        os.environ.pop(ENV_OWNER, None)
        _owner_set = False


def is_on() -> bool:
    """True while live timing is started."""
    return _session is not None


_atexit_done = False


def _register_atexit() -> None:
    """stop() at exit, and at the end of a multiprocessing child: those leave through ``os._exit`` after
    ``multiprocessing.util._exit_function`` (its finalizers run, atexit's do not), so their last window
    would be lost."""
    global _atexit_done
    if not _atexit_done:
        atexit.register(stop)
        _atexit_done = True
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        try:
            _mp_finalize(mp_util)
            # a child's Process._bootstrap clears the finalizers (after the main module, which started live
            # timing, was imported) and then runs the after-fork hooks: register it again there
            mp_util.register_after_fork(_MP_HOOK, lambda _hook: _mp_finalize(mp_util))
        except Exception:
            pass


class _MpHook:
    """Key of the after-fork hook (multiprocessing keeps weak references to it)."""


_MP_HOOK = _MpHook()


def _mp_finalize(mp_util: Any) -> None:
    mp_util.Finalize(None, stop, exitpriority=0)  # stop() is a no-op once stopped, so several are harmless


def _after_fork_in_child() -> None:
    """In a forked child live timing is off: fresh locks, the parent's writer thread does not exist here."""
    global _session, _lock
    _lock = threading.Lock()
    _POOL.clear()  # the parent's CUDA events mean nothing here
    if _session is not None:
        _session = None
        try:
            _window.on_step = None
            _r.set_live(False)
            _tls.__dict__.clear()
        except Exception:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
        if value >= 1:
            return value
    except ValueError:
        pass
    _report(f"{name}={raw!r} ignored (expected an integer >= 1); using {default}")
    return default


def start_from_env() -> bool:
    """Start live timing when ``NVTXSIM_LIVE`` names a file or ``NVTXSIM_LIVE_TRIGGER`` sets a rule (then no file
    is written); never raises (bad settings: one stderr line)."""
    global _owner_set
    path: str | None = os.environ.get(ENV_FILE, "").strip()
    if path and parse_flag(path) is False:  # NVTXSIM_LIVE=0/off: no file
        path = None
    trigger = os.environ.get(ENV_TRIGGER, "").strip() or None
    if not path and not trigger:
        return False
    owner = os.environ.get(ENV_OWNER)
    append = bool(owner) and owner != str(os.getpid())
    try:
        start(
            path or None,
            every=_int_env(ENV_EVERY, DEFAULT_EVERY),
            sample=_int_env(ENV_SAMPLE, 1),
            trigger=trigger,
            trigger_iterations=_int_env(ENV_TRIGGER_ITERATIONS, DEFAULT_TRIGGER_ITERATIONS),
            append=append,
            gpu=env_flag(ENV_GPU, default=True),
        )
    except Exception as exc:
        _report(
            f"{ENV_FILE}={path!r}: live timing not started ({exc})"
            if path
            else f"{ENV_TRIGGER}: live timing not started ({exc})"
        )
        return False
    if not append:
        os.environ[ENV_OWNER] = str(os.getpid())
        _owner_set = True
    return True


__all__ = ["start", "stop", "is_on", "start_from_env", "Trigger", "ENV_FILE", "ENV_EVERY", "ENV_SAMPLE", "ENV_TRIGGER"]
