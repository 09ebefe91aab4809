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
    """Appends one JSON line per window to ``path``; a run replaces the file of an earlier run (see :func:`open_append`)."""

    fatal = True

    def __init__(self, path: str, *, append: bool) -> None:
        self.path, self.append = path, append
        self.file: Any = None

    def open(self) -> None:
        """When the session claims the file (at start, or at the first step for nvtxsim's own commands,
        which never step and so leave the file alone)."""
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
                self.file.close()  # releases the file's lock: a later run may replace it
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
        gpu_per = max(window.gpu_iterations, 1)  # under a GPU cost budget fewer iterations carry GPU times
        step = window.iterations[1] if window.iterations is not None else 0
        for key, p in window.phases.items():
            name = key.split(":", 1)[1]
            self.writer.add_scalar(f"nvtxsim/{name}/cpu_ms", (p.cpu_ns or 0) / per / 1e6, step)
            if p.gpu_ns is not None and window.gpu_iterations:
                self.writer.add_scalar(f"nvtxsim/{name}/gpu_ms", p.gpu_ns / gpu_per / 1e6, step)
            if p.kernels is not None and window.gpu_iterations:
                self.writer.add_scalar(f"nvtxsim/{name}/launches", (p.kernels + (p.copies or 0)) / gpu_per, step)
                self.writer.add_scalar(f"nvtxsim/{name}/copy_mb", (p.copy_bytes or 0) / gpu_per / 1e6, step)

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


#: How much of an existing file is read to tell a live-timing file from any other.
_SNIFF_BYTES = 1 << 20


def open_append(path: str, *, truncate: bool) -> Any:
    """``path`` for appending (O_APPEND: lines of other processes are never overwritten), opened
    without blocking: a FIFO nobody reads would block the program in ``open`` until a reader came
    (forever without one), so it is refused; a FIFO with a reader (``NVTXSIM_LIVE=>(jq .)``) is
    written by the writer thread, which drops windows rather than stop the program when it stalls.

    A regular file is only ever written, or emptied, when it is empty or already a live-timing file:
    ``NVTXSIM_LIVE=train.py`` (or a link to any other file) is refused, never overwritten or appended to.
    Every process writing it holds a shared lock on it for as long as it writes; ``truncate`` empties it
    (the earlier run's lines) only when no other process holds one: the workers of a run, started in
    any order, never empty the file under each other, and no environment variable is needed to tell them."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO with no reader (or a socket)
            raise OSError(errno.ENXIO, "a FIFO or socket nobody reads") from None
        raise
    try:
        os.set_blocking(fd, True)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            _claim(fd, path, truncate=truncate)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "a", encoding="utf-8")


def _claim(fd: int, path: str, *, truncate: bool) -> None:
    """Check that the regular file ``fd`` is (empty or) a live-timing file, empty it when ``truncate``
    and no other writer holds it, and hold a shared lock on it from now on."""
    import fcntl

    alone = True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        alone = False  # another process writes it now: this one appends
    except OSError:
        alone = truncate = False  # no locks here (some network file systems): never empty it
    if not is_live_file(fd, path):
        raise OSError(errno.EEXIST, "exists and is not a live-timing file; not overwritten (choose another name)")
    if truncate and alone:
        os.ftruncate(fd, 0)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # from exclusive: other writers of this run may join now
    except OSError:
        pass


def is_live_file(fd: int, path: str) -> bool:
    """The regular file open (write-only) as ``fd`` is empty or starts with a live-timing line."""
    st = os.fstat(fd)
    if st.st_size == 0:
        return True
    head = _head(fd, path, st, min(st.st_size, _SNIFF_BYTES))
    if head is None:
        return False  # unreadable: it cannot be told from any other file
    try:
        return LiveWindow.from_json(head.split(b"\n", 1)[0].decode("utf-8")) is not None
    except UnicodeDecodeError:
        return False


def _head(fd: int, path: str, st: os.stat_result, n: int) -> bytes | None:
    """The first ``n`` bytes of the file open as ``fd`` (write-only), read through a second, read-only
    descriptor of the same file (checked by device and inode); None when it cannot be read."""
    for name in (f"/proc/self/fd/{fd}", path):
        try:
            rfd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            rst = os.fstat(rfd)
            if (rst.st_dev, rst.st_ino) == (st.st_dev, st.st_ino):
                return os.pread(rfd, n, 0)
        except OSError:
            pass
        finally:
            os.close(rfd)
    return None
