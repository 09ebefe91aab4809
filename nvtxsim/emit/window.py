"""Capture windows: record only iterations A..B of a loop.

The loop calls :func:`step` once at the top of every iteration; the k-th call
(counting from 0) starts iteration k. When a window ``A:B`` is set (by
``nvtxsim profile --iterations A:B``, or ``NVTXSIM_ITERATIONS=A:B``), call A opens
the window and call B closes it, so iterations A, A+1, ..., B-1 are recorded
(a half-open range, like a Python slice). Setup before the window and
everything after it stay out of the capture, which keeps captures small.

The window is one NVTX start/end range named :data:`WINDOW_RANGE` in the
``nvtxsim_window`` domain, a registered string, so ``nsys profile --capture-range=nvtx
--nvtx-capture=capture_window@nvtxsim_window --capture-range-end=stop`` starts and stops
the collection on it. With ``NVTXSIM_WINDOW_API=cuda`` the window calls
``cudaProfilerStart``/``cudaProfilerStop`` instead (for ``--capture-range=cudaProfilerApi``).
Outside a window (the usual case) :func:`step` only counts.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable
from typing import Any

from nvtxsim.errors import NvtxsimError
from nvtxsim.phases import APIS, ENV_API, ENV_ITERATIONS, WINDOW_DOMAIN, WINDOW_RANGE, Window, parse_iterations

# --------------------------------------------------------------------------- state

_count = -1  # index of the current iteration; -1 before the first step()
_window: Window | None = None
_api = "nvtx"
_open: Callable[[], Any] | None = None  # closes the window when called
_note: str | None = None  # marked inside the window once it opens: why it opened (a live trigger)
_atexit_registered = False
#: Called with the new iteration's index on every step() while live timing is on (emit.live).
on_step: Callable[[int], Any] | None = None


def configure(iterations: str | Window | None, api: str = "nvtx") -> None:
    """Set (or clear, with None) the window of this process and restart the iteration count."""
    global _window, _api, _count
    if api not in APIS:
        raise NvtxsimError(f"window api must be one of {', '.join(APIS)}, got {api!r}")
    _close()
    _window = parse_iterations(iterations) if isinstance(iterations, str) else iterations
    _api = api
    _count = -1


def arm(start: int, stop: int | None, note: str | None = None) -> bool:
    """Open a window at iteration ``start`` without restarting the count (live triggers); ``note``: an
    NVTX mark (``TRIGGER_MARK ...``) placed inside the window as it opens, which the report reads.

    Refused (False) while a window is set that has not ended yet: nsys records one per run.
    """
    global _window, _note
    w = _window
    if w is not None and (w.stop is None or _count < w.stop):
        return False
    _close()
    _window, _note = Window(start, stop), note
    return True


def open_now(stop: int, note: str | None = None) -> bool:
    """Open a window now, inside the iteration running, until iteration ``stop`` (a live trigger's watch
    thread, while the slow iteration is still running: the capture holds it). Refused as :func:`arm`."""
    if not arm(max(_count, 0), stop, note):
        return False
    _open_window()
    return True


def _configure_from_env() -> None:
    spec = os.environ.get(ENV_ITERATIONS, "").strip()
    if not spec:
        return
    try:
        configure(spec, os.environ.get(ENV_API, "nvtx").strip() or "nvtx")
    except NvtxsimError as exc:  # never break the user's program over a bad variable
        sys.stderr.write(f"nvtxsim: {ENV_ITERATIONS}={spec!r} ignored: {exc}\n")


def current() -> Window | None:
    """The window of this process, or None."""
    return _window


def iteration() -> int:
    """Index of the current iteration (-1 before the first :func:`step`)."""
    return _count


def step() -> int:
    """Start the next iteration; returns its index (0 for the first call).

    Call it once at the top of every loop iteration. It opens and closes the
    capture window of ``nvtxsim profile --iterations A:B``; otherwise it only counts.
    """
    global _count
    _count += 1
    if on_step is not None:  # first: a live trigger firing now arms a window that opens at this very step
        on_step(_count)
    w = _window
    if w is not None and (_count == w.start or _count == w.stop):
        _edge(w)
    return _count


def _edge(w: Window) -> None:
    """Open the window at iteration ``w.start``, close it at ``w.stop``."""
    if _count == w.start and _open is None:
        _open_window()
    elif _count == w.stop:
        _close()


def _open_window() -> None:
    global _open, _atexit_registered, _note
    if _open is not None:
        return
    try:
        _open = _start_cuda() if _api == "cuda" else _start_nvtx()
    except Exception as exc:
        sys.stderr.write(f"nvtxsim: could not open the capture window ({type(exc).__name__}: {exc})\n")
        _open = None
    if _open is not None and not _atexit_registered:
        atexit.register(_close)  # stop before interpreter teardown when B is never reached
        _atexit_registered = True
    note, _note = _note, None
    if _open is not None and note:
        from nvtxsim.emit import ranges as emit

        emit.mark(note)


def _close() -> None:
    global _open
    closer, _open = _open, None
    if closer is not None:
        try:
            closer()
        except Exception as exc:
            sys.stderr.write(f"nvtxsim: could not close the capture window ({type(exc).__name__}: {exc})\n")


def _start_nvtx() -> Callable[[], Any] | None:
    """Start the window range; None when no profiler is attached (nothing to trigger)."""
    from nvtxsim.emit import ranges as emit

    token = emit.start_range(WINDOW_RANGE, domain=WINDOW_DOMAIN, color=0x404040, category="capture")
    if token is None:
        return None
    return lambda: emit.end_range(token)


def _start_cuda() -> Callable[[], Any] | None:
    start, stop = _cuda_profiler_api()
    rc = start()
    if rc not in (0, None):
        raise RuntimeError(f"cudaProfilerStart returned {rc}")
    return stop


def _cuda_profiler_api() -> tuple[Callable[[], Any], Callable[[], Any]]:
    """cudaProfilerStart/Stop of the CUDA runtime the program uses (torch's, or one already loaded)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                rt = torch.cuda.cudart()
                return rt.cudaProfilerStart, rt.cudaProfilerStop
        except Exception:
            pass
    import ctypes
    import ctypes.util

    names = _loaded_cudart() + [n for n in ("libcudart.so", ctypes.util.find_library("cudart")) if n]
    names += ["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            return lib.cudaProfilerStart, lib.cudaProfilerStop
        except (OSError, AttributeError):
            continue
    raise RuntimeError("no CUDA runtime (libcudart) found for cudaProfilerStart")


def _loaded_cudart() -> list[str]:
    """Paths of libcudart already mapped into this process (prefer the program's own runtime)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split()[-1] for line in fh if "libcudart.so" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


_configure_from_env()

__all__ = ["WINDOW_RANGE", "WINDOW_DOMAIN", "Window", "parse_iterations", "configure", "current", "iteration", "step"]
