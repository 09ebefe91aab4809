"""Emit stage: live phase timing during training, without a profiler.

Long runs need always-on per-phase timing that neither syncs the GPU (Isaac Lab's Timer)
nor costs what torch.profiler costs. While live timing is on, every ``nvtxsim.phase``
also measures its CPU time (``perf_counter_ns``) and, once CUDA is initialised, its GPU
time: two pooled CUDA events recorded on the current stream at enter and exit. A
background thread resolves the events only once they completed (``event.query()``, never
a sync on the training thread) and writes one JSON line per ``every`` iterations
(:func:`nvtxsim.step` marks them): a :class:`~nvtxsim.live_record.LiveWindow`, where the
line's fields are described.

With ``sample=K`` only every K-th iteration is measured; the others run on the plain (idle or
recording) methods, so they cost what phases cost with live timing off. Turn it on with
``NVTXSIM_LIVE=FILE`` (``NVTXSIM_LIVE_EVERY``, ``NVTXSIM_LIVE_SAMPLE``, ``NVTXSIM_LIVE_TRIGGER``)
or :func:`start`. Nothing here ever raises into, or blocks, the training loop: a failing
file, writer or callback is reported once on stderr and live timing turns off (or that
sink alone, for a logger).

The parts: :mod:`.session` (the measuring phase methods and the windows they fill),
:mod:`.writer` (the writer thread), :mod:`.sinks` (file, TensorBoard scalars, callback),
:mod:`.gpu` (the GPU-timing interface) with :mod:`.cuda_events` and :mod:`.cupti` behind it, :mod:`.budget`
(how much of the run CUPTI may time) and :mod:`.trigger`.
They are imported by the first :func:`start`: ``import nvtxsim`` stays light while live timing is off.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nvtxsim import phases as _phases
from nvtxsim.emit.live.budget import DEFAULT_PERCENT, budget_from_env
from nvtxsim.emit.live.trigger import DEFAULT_TRIGGER_ITERATIONS, Trigger
from nvtxsim.emit.notices import report
from nvtxsim.envflags import env_flag, parse_flag

if TYPE_CHECKING:
    from nvtxsim.emit.live.gpu import GpuTiming
    from nvtxsim.emit.live.session import Session
    from nvtxsim.emit.live.sinks import Sink

ENV_FILE = "NVTXSIM_LIVE"
ENV_EVERY = "NVTXSIM_LIVE_EVERY"
ENV_SAMPLE = "NVTXSIM_LIVE_SAMPLE"
ENV_GPU = "NVTXSIM_LIVE_GPU"  # 0/false/no/off: CPU times only; cupti: busy time from CUPTI records
ENV_TRIGGER = _phases.ENV_LIVE_TRIGGER
ENV_TRIGGER_ITERATIONS = _phases.ENV_LIVE_TRIGGER_ITERATIONS
#: ``NVTXSIM_LIVE=1`` (or true/yes/on): this file, in the working directory.
DEFAULT_FILE = "live.jsonl"
DEFAULT_EVERY = 100
DEFAULT_GPU_BUDGET = DEFAULT_PERCENT  # percent of wall time CUPTI's GPU timing may cost

_lock = threading.Lock()
_session: Session | None = None  # the last one started (it may have turned itself off since)


def start(
    path: str | os.PathLike[str] | None = None,
    *,
    every: int = DEFAULT_EVERY,
    sample: int = 1,
    writer: Any = None,
    callback: Callable[[dict], Any] | None = None,
    trigger: str | None = None,
    trigger_iterations: int = DEFAULT_TRIGGER_ITERATIONS,
    append: bool = False,
    gpu: bool | str = True,
    gpu_budget: float | None = DEFAULT_GPU_BUDGET,
    claim: bool = True,
) -> None:
    """Start live phase timing (restarts it when on): one JSON line to ``path`` per ``every`` iterations.

    The file is claimed now (``claim=False``: at the first :func:`nvtxsim.step`): an empty or live-timing
    file is emptied unless ``append`` or another process writes it (the workers of this run: they append),
    any other existing file is refused, never overwritten (see :func:`nvtxsim.emit.live.sinks.open_append`).

    ``sample=K`` measures every K-th iteration (the others cost nothing extra). ``writer``: any object
    with TensorBoard's ``add_scalar(tag, value, step)``; ``callback(record)``: any other logger. Both run
    on the writer thread. ``trigger``: a rule like ``'sim_step>1.5x'`` opening a capture window of
    ``trigger_iterations`` iterations (see :class:`Trigger`). ``gpu=False``: CPU times only, no CUDA events;
    ``gpu="cupti"``: GPU busy time, kernels and copies per phase from CUPTI activity records (libcupti: the
    ``cupti`` extra or torch's CUDA wheels; when CUPTI cannot be had, CUDA events with one stderr line saying why;
    within 0.3 % of nsys per phase on the H200, reports/live-cupti-h200.md). ``gpu_budget``: with CUPTI, the percent
    of wall time GPU timing may cost (CUPTI then times a random share of the measured iterations, CPU times stay on
    every one: :mod:`nvtxsim.emit.live.budget`); None or 0: every measured iteration.
    """
    global _session
    if every < 1 or sample < 1:
        raise ValueError("live timing: every and sample must be >= 1")
    if gpu_budget is not None and not (isinstance(gpu_budget, (int, float)) and 0 <= gpu_budget <= 100):
        raise ValueError(f"live timing: gpu_budget must be a percent from 0 to 100, or None (not {gpu_budget!r})")
    if gpu not in (True, False, "cupti", "events"):
        raise ValueError(f"live timing: gpu must be True, False, 'events' or 'cupti' (not {gpu!r})")
    trig = Trigger(trigger, trigger_iterations) if trigger else None
    stop()
    from nvtxsim.emit.live.session import Session

    sinks = _sinks(None if path is None else os.fspath(path), append, writer, callback)
    with _lock:
        share = gpu_budget / 100 if gpu_budget else None
        _session = s = Session(every, sample, trig, sinks, _gpu_timing(gpu), gpu_budget=share)
        s.activate()
    _register_atexit()
    if claim:
        s.claim()


def claim() -> None:
    """Claim the live-timing file now, before the program starts workers (``nvtxsim run``: the session
    started at import waits for the first step, as nvtxsim's own commands never step)."""
    s = _session
    if s is not None and s.is_current():
        s.claim()


def _gpu_timing(gpu: bool | str) -> type[GpuTiming] | None:
    if gpu == "cupti":  # opt-in only: it costs more than events on a launch-bound loop (reports/live-cupti-h200.md)
        from nvtxsim.emit.live.cupti import CuptiTiming

        return CuptiTiming
    if gpu:
        from nvtxsim.emit.live.cuda_events import CudaEventTiming

        return CudaEventTiming
    return None


def _gpu_env() -> bool | str:
    """``NVTXSIM_LIVE_GPU``: a flag (CUDA events or none) or ``cupti``/``events``; anything else: one line, events."""
    raw = os.environ.get(ENV_GPU, "").strip().lower()
    if raw in ("cupti", "events"):
        return raw
    if raw and parse_flag(raw) is None:
        report(f"{ENV_GPU}={raw!r} ignored (expected cupti, events, 1 or 0); GPU times from CUDA events")
    return env_flag(ENV_GPU, default=True)


def _budget_env() -> float | None:
    """``NVTXSIM_LIVE_GPU_BUDGET`` in percent (None: off)."""
    share = budget_from_env()
    return None if share is None else share * 100


def _sinks(path: str | None, append: bool, writer: Any, callback: Callable[[dict], Any] | None) -> list[Sink]:
    """Where the windows go, in this order: the file, the scalars, the callback."""
    from nvtxsim.emit.live.sinks import CallbackSink, FileSink, ScalarSink

    sinks: list[Sink] = []
    if path is not None:
        sinks.append(FileSink(path, append=append))
    if writer is not None:
        sinks.append(ScalarSink(writer))
    if callback is not None:
        sinks.append(CallbackSink(callback))
    return sinks


def stop(timeout: float = 5.0) -> None:
    """Stop live timing: the last (partial) window is written, the writer thread ends (waits up to ``timeout``)."""
    global _session
    with _lock:
        s, _session = _session, None
        if s is None or not s.deactivate():
            return  # never started, stopped, or turned itself off
    if s.pid == os.getpid():
        s.finish(timeout)


def is_on() -> bool:
    """True while live timing is started."""
    s = _session
    return s is not None and s.is_current()


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
    """In a forked child: a fresh lock (the session itself is off there: see :mod:`.session`)."""
    global _lock
    _lock = threading.Lock()


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
    report(f"{name}={raw!r} ignored (expected an integer >= 1); using {default}")
    return default


def start_from_env() -> bool:
    """Start live timing when ``NVTXSIM_LIVE`` names a file (``1``/true/yes/on: :data:`DEFAULT_FILE`) or
    ``NVTXSIM_LIVE_TRIGGER`` sets a rule (then no file is written); never raises (bad settings: one
    stderr line). The file is claimed now, before the program can start workers, except under
    nvtxsim's own command line (``nvtxsim live live.jsonl`` must never empty the file it reads)."""
    path: str | None = os.environ.get(ENV_FILE, "").strip()
    flag = parse_flag(path) if path else None
    if flag is False:  # NVTXSIM_LIVE=0/off: no file
        path = None
    elif flag is True:
        path = DEFAULT_FILE
    trigger = os.environ.get(ENV_TRIGGER, "").strip() or None
    if not path and not trigger:
        return False
    try:
        start(
            path or None,
            every=_int_env(ENV_EVERY, DEFAULT_EVERY),
            sample=_int_env(ENV_SAMPLE, 1),
            trigger=trigger,
            trigger_iterations=_int_env(ENV_TRIGGER_ITERATIONS, DEFAULT_TRIGGER_ITERATIONS),
            gpu=_gpu_env(),
            gpu_budget=_budget_env(),
            claim=not _own_command_line(),
        )
    except Exception as exc:
        report(
            f"{ENV_FILE}={path!r}: live timing not started ({exc})"
            if path
            else f"{ENV_TRIGGER}: live timing not started ({exc})"
        )
        return False
    return True


def _own_command_line() -> bool:
    """This process is nvtxsim's command line (``nvtxsim ...``, ``python -m nvtxsim ...``), importing the package."""
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    if sys.argv and os.path.basename(sys.argv[0]) == "nvtxsim":
        return True
    skip = False
    for i, a in enumerate(argv[1:], 1):
        if skip:
            skip = False
            continue
        if a in ("-X", "-W", "--check-hash-based-pycs"):
            skip = True  # an interpreter option with a value
            continue
        if a == "-m" and i + 1 < len(argv):
            return argv[i + 1] in ("nvtxsim", "nvtxsim.__main__")
        if a.startswith("-m") and len(a) > 2:
            return a[2:] in ("nvtxsim", "nvtxsim.__main__")
        if a == "-c" or not a.startswith("-"):
            return False  # a script or -c: the program itself
    return False


__all__ = [
    "start",
    "stop",
    "claim",
    "is_on",
    "start_from_env",
    "DEFAULT_FILE",
    "Trigger",
    "ENV_FILE",
    "ENV_EVERY",
    "ENV_SAMPLE",
    "DEFAULT_GPU_BUDGET",
    "ENV_TRIGGER",
]
