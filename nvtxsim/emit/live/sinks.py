"""Emit stage, live timing: where the windows go, one :class:`~nvtxsim.live_record.LiveWindow` at a time.

A sink's :meth:`Sink.write` runs on the writer thread. When it raises, the writer turns live timing
off if the sink is ``fatal`` (the file: the run's record) or drops that sink alone (a logger), with
the one stderr line the sink words (:meth:`Sink.failure`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Any

from nvtxsim.live_record import LiveWindow


class Sink:
    """Where windows go; :meth:`open` at the run's first step, :meth:`write` per window, :meth:`close` at stop."""

    fatal = False  # a failure turns live timing off (else: this sink is dropped)

    def open(self) -> None:
        """Before the first window (on the training thread, at the first step); may raise."""

    def write(self, window: LiveWindow) -> None:
        raise NotImplementedError

    def failure(self, exc: BaseException) -> str:
        """The stderr line when :meth:`open` or :meth:`write` raised ``exc``."""
        raise NotImplementedError

    def close(self) -> None:
        """After the last window; never raises."""


class FileSink(Sink):
    """Appends one JSON line per window to ``path`` (truncated at the first step unless ``append``)."""

    fatal = True

    def __init__(self, path: str, *, append: bool) -> None:
        self.path, self.append = path, append
        self.file: Any = None

    def open(self) -> None:
        """At the first step(), not at start(): nvtxsim's own commands, which never step, leave the file
        alone, and children exec'd later append after the truncation."""
        if self.file is None:
            self.file = open_append(self.path, truncate=not self.append)

    def write(self, window: LiveWindow) -> None:
        self.open()
        write_line(self.file, window.to_json() + "\n")

    def failure(self, exc: BaseException) -> str:
        return f"live timing: cannot write {self.path!r} ({type(exc).__name__}: {exc}); live timing turned off"

    def close(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except Exception:
                pass


class ScalarSink(Sink):
    """``nvtxsim/<phase>/cpu_ms`` and ``gpu_ms`` per window to a TensorBoard-like ``add_scalar(tag, value, step)``:
    the phase's time per measured iteration, at the window's last iteration. With CUPTI (``gpu_mode`` cupti)
    ``gpu_ms`` is the busy time, and ``launches`` (kernels and copies) and ``copy_mb`` per iteration come too:
    what ``nvtxsim live`` shows."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def write(self, window: LiveWindow) -> None:
        per = max(window.measured or 1, 1)
        step = window.iterations[1] if window.iterations is not None else 0
        for key, p in window.phases.items():
            name = key.split(":", 1)[1]
            self.writer.add_scalar(f"nvtxsim/{name}/cpu_ms", (p.cpu_ns or 0) / per / 1e6, step)
            if p.gpu_ns is not None:
                self.writer.add_scalar(f"nvtxsim/{name}/gpu_ms", p.gpu_ns / per / 1e6, step)
            if p.kernels is not None:
                self.writer.add_scalar(f"nvtxsim/{name}/launches", (p.kernels + (p.copies or 0)) / per, step)
                self.writer.add_scalar(f"nvtxsim/{name}/copy_mb", (p.copy_bytes or 0) / per / 1e6, step)

    def failure(self, exc: BaseException) -> str:
        return f"live timing: the SummaryWriter failed ({type(exc).__name__}: {exc}); no more scalars"


class CallbackSink(Sink):
    """``callback(record)`` per window, with the line's JSON object."""

    def __init__(self, callback: Callable[[dict], Any]) -> None:
        self.callback = callback

    def write(self, window: LiveWindow) -> None:
        self.callback(window.to_dict())

    def failure(self, exc: BaseException) -> str:
        return f"live timing: the callback failed ({type(exc).__name__}: {exc}); it is not called again"


def write_line(file: Any, line: str) -> None:
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


def open_append(path: str, *, truncate: bool) -> Any:
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
