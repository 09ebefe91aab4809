"""Emit stage: the hot Python functions of each phase, from a sampling thread of nvtxsim's own (opt-in).

``NVTXSIM_STACKS=1`` (or a file name; ``nvtxsim profile --stacks`` sets it) starts one daemon thread that
wakes ``NVTXSIM_STACKS_HZ`` times a second (default 200), reads every thread's current frame
(``sys._current_frames()``) and, for each thread with an nvtxsim phase open, counts the sample for the
innermost open phase: one *self* count for the function running, one *total* count for every function on
the stack. Which phase is open on which thread comes from the phases themselves: while sampling, their
``__enter__``/``__exit__`` push and pop the name on a per-thread list (:func:`nvtxsim.emit.ranges.set_stacks`),
with or without a profiler attached. At exit each process appends one JSON line to the file (the
*stacks sidecar* beside the export: ``NAME.stacks.jsonl``), which ``nvtxsim report --view stacks`` reads.

Why this and not another sampler (docs/cpu.md): nsys 2025.3's Python sampling puts the function names
in ``StringIds`` but in no table of the SQLite export; pyinstrument and py-spy know nothing of phases
(pyinstrument profiles one thread's call tree, py-spy is another process that needs ptrace). Nothing here
may break the program: a thread that cannot start, a file that cannot be written or is not a stacks file
is one stderr line and the program runs on; in a forked child the counts restart empty and so does the thread.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time
from types import CodeType, FrameType
from typing import Any

from nvtxsim.emit import ranges as _ranges
from nvtxsim.emit.notices import report
from nvtxsim.envflags import parse_flag
from nvtxsim.phases import ENV_STACKS
from nvtxsim.schema import STACKS_FORMAT

ENV = ENV_STACKS
ENV_HZ = "NVTXSIM_STACKS_HZ"
DEFAULT_HZ = 200
MAX_HZ = 2000
DEFAULT_FILE = "nvtxsim.stacks.jsonl"
FORMAT = STACKS_FORMAT  # first key of every line: a file without it is none of ours (never appended to)
MAX_FUNCTIONS = 20_000  # distinct functions kept per process; the samples of more go to OTHER
IDLE_CHECK_S = 0.1  # how often the sampler thread looks for threads with a phase open while there are none
MAX_DEPTH = 512  # frames walked per sample (a deeper recursion counts its innermost 512)
OTHER = ("(other functions)", 0, "")
#: Frames of nvtxsim itself (a phase's wrapper, ``nvtxsim run``'s runner) are not the program's.
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class Sampler:
    """Counts per phase: samples, and per function (file, first line, name) the self and total samples."""

    def __init__(self, path: str, hz: int) -> None:
        self.path, self.hz = path, hz
        self.pid = os.getpid()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples: dict[str, int] = {}
        self.self_: dict[str, dict[int, int]] = {}
        self.total: dict[str, dict[int, int]] = {}
        self.depth: dict[str, dict[int, int]] = {}  # per phase and function: the sum of its distances to the innermost
        self.functions: list[tuple[str, int, str]] = []
        self._index: dict[int, int] = {}  # id(code) → index; the codes are kept alive in _codes (ids stay unique)
        self._codes: list[CodeType] = []
        self.ticks = 0
        self.started = time.monotonic()
        self.written = False
        self.mechanism = ""
        self._timer = False
        self._main = threading.main_thread().ident

    def start(self) -> bool:
        """The main thread on SIGPROF (where the interpreter runs signal handlers), the other threads with a
        phase open on a thread of ours (all of them, the main one too, when there is no timer)."""
        timer = self._start_timer()
        try:
            t = threading.Thread(target=self._run, name="nvtxsim-stacks", daemon=True)
            t.start()
        except Exception as exc:  # RuntimeError: can't start new thread (limits, interpreter shutdown)
            if not timer:
                report(
                    f"{ENV}: the stack sampler did not start ({type(exc).__name__}: {exc}); the program runs without it"
                )
                return False
            t = None  # the main thread is still sampled
        self._thread = t
        self.mechanism = "+".join(m for m, on in (("sigprof", timer), ("thread", t is not None)) if on)
        return True

    def _start_timer(self) -> bool:
        """A CPU-time interval timer (``ITIMER_PROF``) whose SIGPROF handler samples: only from the main thread,
        and only when nobody else handles SIGPROF (another profiler's handler is never replaced)."""
        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return False
        try:
            if signal.getsignal(signal.SIGPROF) not in (signal.SIG_DFL, None, _on_sigprof):
                return False
            signal.signal(signal.SIGPROF, _on_sigprof)
            signal.setitimer(signal.ITIMER_PROF, 1.0 / self.hz, 1.0 / self.hz)
        except (ValueError, OSError, AttributeError):
            return False
        self._timer = True
        return True

    def stop(self) -> None:
        self._stop.set()
        if self._timer:
            try:
                signal.setitimer(signal.ITIMER_PROF, 0, 0)
                if threading.current_thread() is threading.main_thread():
                    signal.signal(signal.SIGPROF, signal.SIG_DFL)
            except (ValueError, OSError):
                pass
            self._timer = False
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=1.0)

    def _run(self) -> None:
        busy, idle = 1.0 / self.hz, max(1.0 / self.hz, IDLE_CHECK_S)
        interval = busy
        try:
            while not self._stop.wait(interval):
                # while no thread it samples has a phase open, look ten times a second: each wake takes the GIL
                interval = busy if self.sample(None) else idle
        except Exception as exc:  # never into the program: stop sampling, keep what was counted
            report(f"{ENV}: the stack sampler stopped ({type(exc).__name__}: {exc})")

    def _fn(self, code: CodeType) -> int:
        i = self._index.get(id(code))  # a code object's own hash walks its bytecode: its id is cheap
        if i is None:
            if len(self.functions) >= MAX_FUNCTIONS:
                return -1
            i = self._index[id(code)] = len(self.functions)
            self._codes.append(code)
            self.functions.append((code.co_filename, code.co_firstlineno, getattr(code, "co_qualname", code.co_name)))
        return i

    def sample(self, main: FrameType | None) -> bool:
        """One sample: ``main`` is the main thread's frame where SIGPROF interrupted it; None: the sampler thread's
        turn, every other thread with a phase open (from ``sys._current_frames()``; the main thread too when
        there is no timer). A thread blocked outside Python counts where it entered C: the call that blocks."""
        opened = _ranges._open_phases
        me = threading.get_ident()
        if main is not None:
            self.ticks += 1
            names = opened.get(me)
            if names:
                self._count(names[-1], main)
            return True
        skip = {me, self._main} if self._timer else {me}
        mine = [(tid, names) for tid, names in list(opened.items()) if names and tid not in skip]
        if not mine:
            return False  # no thread it samples has a phase open now
        self.ticks += 1
        frames = sys._current_frames()
        for tid, names in mine:
            f = frames.get(tid)
            if f is None:
                continue
            try:
                phase = names[-1]
            except IndexError:  # closed meanwhile
                continue
            self._count(phase, f)
        return True

    def _count(self, phase: str, f: FrameType | None) -> None:
        seen: set[int] = set()
        first = True
        depth = level = 0  # frames walked; the program's frames counted from the innermost
        self_ = self.self_.setdefault(phase, {})
        total = self.total.setdefault(phase, {})
        below = self.depth.setdefault(phase, {})
        while f is not None and depth < MAX_DEPTH:
            code = f.f_code
            f = f.f_back
            depth += 1
            if code.co_filename.startswith(_OWN):
                continue
            i = self._fn(code)
            if first:
                self_[i] = self_.get(i, 0) + 1
                first = False
            if i not in seen:
                seen.add(i)
                total[i] = total.get(i, 0) + 1
                below[i] = below.get(i, 0) + level  # how far from the running function: callers list nearest first
            level += 1
        if not first:
            self.samples[phase] = self.samples.get(phase, 0) + 1

    def record(self) -> dict[str, Any]:
        """This process's line of the sidecar."""
        fns = [list(f) for f in self.functions] + [list(OTHER)]
        other = len(self.functions)

        def keyed(per: dict[int, int]) -> dict[str, int]:
            return {str(other if i < 0 else i): n for i, n in per.items()}

        return {
            "format": FORMAT,
            "pid": self.pid,
            "hz": self.hz,
            "mechanism": self.mechanism,
            "ticks": self.ticks,
            "seconds": round(time.monotonic() - self.started, 3),
            "functions": fns,
            "phases": {
                p: {
                    "samples": n,
                    "self": keyed(self.self_.get(p, {})),
                    "total": keyed(self.total.get(p, {})),
                    "depth": keyed(self.depth.get(p, {})),
                }
                for p, n in self.samples.items()
            },
        }

    def write(self) -> None:
        """Append this process's line (once); a failure is one stderr line."""
        if self.written or os.getpid() != self.pid:
            return
        self.written = True
        try:
            line = json.dumps(self.record(), separators=(",", ":"))
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except Exception as exc:
            report(f"{ENV}: stack samples not written to {self.path} ({type(exc).__name__}: {exc})")


_sampler: Sampler | None = None
_lock = threading.Lock()


def _on_sigprof(signum: int, frame: FrameType | None) -> None:
    """SIGPROF: one sample, where the main thread was interrupted; never raises into the program."""
    s = _sampler
    if s is None or frame is None:
        return
    try:
        s.sample(frame)
    except Exception:
        pass


def _ours(path: str) -> bool:
    """``path`` is absent, empty or a stacks sidecar (its first line says so): safe to append to."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except FileNotFoundError:
        return True
    return not head or head.startswith(b'{"format":"' + FORMAT.encode())


def start(path: str | os.PathLike[str] = DEFAULT_FILE, *, hz: int = DEFAULT_HZ) -> bool:
    """Start sampling (restarts it when on); the samples go to ``path`` at exit (or :func:`stop`). False, with one
    stderr line, when it cannot: ``path`` is some other file, or the thread does not start."""
    global _sampler
    stop(write=False)
    full = os.path.abspath(os.fspath(path))  # the program may chdir before exit
    if not 1 <= int(hz) <= MAX_HZ:
        raise ValueError(f"stack sampling: hz must be 1..{MAX_HZ} (not {hz})")
    if not _ours(full):
        report(f"{ENV}: {full} exists and is not a stacks file; not sampling (nothing was overwritten)")
        return False
    s = Sampler(full, int(hz))
    with _lock:
        _ranges.set_stacks(True)
        if not s.start():
            _ranges.set_stacks(False)
            return False
        _sampler = s
    _register_exit()
    return True


def stop(*, write: bool = True) -> None:
    """Stop sampling and (``write``) append the samples to the file."""
    global _sampler
    with _lock:
        s, _sampler = _sampler, None
    if s is None:
        return
    s.stop()
    _ranges.set_stacks(False)
    if write:
        s.write()


def is_on() -> bool:
    return _sampler is not None


_exit_registered = False


def _register_exit() -> None:
    """stop() at exit, and at the end of a multiprocessing child (which leaves through ``os._exit``)."""
    global _exit_registered
    if not _exit_registered:
        atexit.register(stop)
        _exit_registered = True
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        try:
            mp_util.Finalize(None, stop, exitpriority=0)
        except Exception:
            pass


def _after_fork_in_child() -> None:
    """A forked child: the parent's counts are not its own and its thread did not survive the fork: start anew."""
    global _lock, _sampler
    _lock = threading.Lock()
    s = _sampler
    me = threading.get_ident()
    for tid in [t for t in _ranges._open_phases if t != me]:  # threads that did not survive the fork
        _ranges._open_phases.pop(tid, None)
    if s is None:
        return
    _sampler = None
    try:
        fresh = Sampler(s.path, s.hz)
        if fresh.start():
            _sampler = fresh
            _register_exit()
        else:
            _ranges.set_stacks(False)
    except Exception:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def start_from_env() -> bool:
    """Start sampling when ``NVTXSIM_STACKS`` is set (1/true/yes/on: :data:`DEFAULT_FILE`; else a file name);
    never raises (a bad value: one stderr line, no sampling)."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return False
    flag = parse_flag(raw)
    if flag is False:
        return False
    path = DEFAULT_FILE if flag is True else raw
    hz_raw = os.environ.get(ENV_HZ, "").strip()
    hz = DEFAULT_HZ
    if hz_raw:
        try:
            hz = int(hz_raw)
            if not 1 <= hz <= MAX_HZ:
                raise ValueError
        except ValueError:
            report(f"{ENV_HZ}={hz_raw[:40]!r} ignored (expected an integer 1..{MAX_HZ}); sampling at {DEFAULT_HZ} Hz")
            hz = DEFAULT_HZ
    try:
        return start(path, hz=hz)
    except Exception as exc:
        report(f"{ENV}={raw[:80]!r}: stack sampling not started ({type(exc).__name__}: {exc})")
        return False
