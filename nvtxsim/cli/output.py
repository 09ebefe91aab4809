"""Writing results: atomically, and never over a user's file unless asked."""

from __future__ import annotations

import argparse
import codecs
import io
import os
import re
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, NamedTuple

from nvtxsim.errors import NvtxsimError
from nvtxsim.files import replace_via_temp

PathLike = str | os.PathLike[str]


def check_writable(path: PathLike, *, force: bool = False, protect: Iterable[PathLike] = ()) -> Path:
    """Fail early (before any work) when ``path`` cannot or must not be written.

    A symlink is followed: its target is what gets written (the link itself is never replaced)."""
    asked = Path(path)
    if own_fd(asked) is not None:
        return asked  # -o /dev/stdout, /proc/self/fd/1: this process's own stream, written into
    try:
        _check_target(asked, resolved(asked), force=force, protect=protect)
    except OSError as exc:  # a name too long, a loop of links, ...: still one line
        raise NvtxsimError(f"{asked}: cannot write: {exc.strerror or exc}") from None
    return asked


def _check_target(asked: Path, p: Path, *, force: bool, protect: Iterable[PathLike]) -> None:
    parent = p.parent if str(p.parent) else Path(".")
    try:
        name_max = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    if len(os.fsencode(p.name)) > name_max:
        raise NvtxsimError(f"{asked}: file name too long (the limit here is {name_max} bytes)")
    if any(_is_part_of(p, Path(other)) for other in protect):
        raise NvtxsimError(f"{asked}: refusing to overwrite the input file")
    if p.is_dir():
        raise NvtxsimError(f"{asked}: is a directory")
    if is_stream(p):
        return  # /dev/null, a tty, a FIFO (or a link to one): written into, never replaced
    if p.exists() or p.is_symlink():
        if not force:
            raise NvtxsimError(f"{asked}: already exists (use --force to overwrite)")
        if not p.is_file():
            raise NvtxsimError(f"{asked}: not a regular file; refusing to replace it")
    if not parent.is_dir():
        raise NvtxsimError(f"{parent}: no such directory")
    if not os.access(parent, os.W_OK):
        raise NvtxsimError(f"{parent}: directory is not writable")


# SQLite keeps part of a database beside it: writing over these corrupts or loses the input's rows.
_SQLITE_SIDECARS = ("", "-wal", "-journal", "-shm")


def _is_part_of(p: Path, export: Path) -> bool:
    """``p`` is the input ``export`` or one of its SQLite sidecar files (existing or not), through
    any symlink or hard link."""
    bases = {str(export), os.path.realpath(export)}  # SQLite finds the sidecars of a link's target
    for part in (Path(base + suffix) for base in bases for suffix in _SQLITE_SIDECARS):
        try:
            if p.exists() and part.exists() and p.samefile(part):
                return True
            if os.path.realpath(p) == os.path.realpath(part):
                return True
        except (OSError, ValueError):
            pass
    return False


_OWN_FD = re.compile(r"/dev/(?:std(in|out|err)|fd/(\d+))|/proc/(?:self|thread-self|(\d+))/fd/(\d+)")


def own_fd(path: Path) -> int | None:
    """The file descriptor of this process that ``path`` names (``/dev/stdout``, ``/proc/self/fd/N``,
    a symlink to one), else None. Such a path is the stream itself: written into, never renamed over."""
    p = str(path)
    if p == "-":  # the usual spelling of standard output
        return 1
    for _ in range(40):  # the kernel's own limit on a symlink chain
        m = _OWN_FD.fullmatch(os.path.normpath(p))
        if m:
            if m.group(1):
                return {"in": 0, "out": 1, "err": 2}[m.group(1)]
            if m.group(3) and int(m.group(3)) != os.getpid():
                return None
            return int(m.group(2) or m.group(4))
        try:
            target = os.readlink(p)
        except OSError:
            return None
        p = os.path.join(os.path.dirname(p), target)
    return None


def resolved(path: Path) -> Path:
    """``path`` with its symlinks followed (a dangling link gives its missing target)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


class Layout(NamedTuple):
    """How a rendered table is laid out for where it goes."""

    width: int | None  # cells every line must fit in; None: whole, as wide as it needs
    color: bool  # bold headers


PLAIN = Layout(None, False)  # a file, a pipe: every column, no styling


def layout(out: PathLike | None = None, *, wide: bool = False, stream: IO[str] | None = None) -> Layout:
    """The width and styling of text going to ``out`` (a file: whole, plain) or ``stream`` (stdout).

    A terminal gets its width (``COLUMNS`` first) and bold headers, unless ``NO_COLOR`` is set or
    ``TERM=dumb``. A pipe gets every column whatever ``COLUMNS`` says: GNU readline exports
    ``COLUMNS`` into the environment of every child of a process that loaded it (a REPL, pytest).
    """
    stream = stream or sys.stdout
    if out is not None or not bool(getattr(stream, "isatty", lambda: False)()):
        return PLAIN
    import shutil

    color = not os.environ.get("NO_COLOR") and os.environ.get("TERM", "") != "dumb"
    return Layout(None if wide else max(shutil.get_terminal_size((200, 24)).columns, 20), color)


def deliver(
    text: str,
    out: PathLike | None,
    *,
    force: bool = False,
    protect: Iterable[PathLike] = (),
    stream: IO[str] | None = None,
) -> None:
    """The last step of every command that renders: to ``out`` atomically, else to ``stream`` (stdout)."""
    if out is not None:
        write_atomic(out, text, force=force, protect=protect)
        return
    write_stream(stream or sys.stdout, text, "standard output")


def deliver_document(
    doc: Any,
    fmt: str,
    out: PathLike | None,
    *,
    wide: bool = False,
    force: bool = False,
    protect: Iterable[PathLike] = (),
) -> None:
    """A command's document rendered in ``fmt``, laid out for where it goes (:func:`layout`), then
    :func:`deliver`-ed: the one tail of every command that prints a document."""
    from nvtxsim.reporting.renderers import render

    to = layout(out, wide=wide)
    deliver(render(doc, fmt, width=to.width, color=to.color), out, force=force, protect=protect)


def encode_text(text: str, encoding: str = "utf-8") -> bytes:
    """Output bytes; a character the encoding cannot hold (a lone surrogate from a non-UTF-8 file name)
    becomes U+FFFD (or ``?``), never an exception."""
    try:
        return text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, errors="nvtxsim-replacement")


def _replacement(exc: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    try:  # bytes: UTF-8's encoder accepts only ASCII text from a handler
        return "\ufffd".encode(exc.encoding), exc.end
    except UnicodeEncodeError:
        return b"?", exc.end


codecs.register_error("nvtxsim-replacement", _replacement)


def write_stream(stream: IO[str], text: str, name: str) -> None:
    """``text`` into an open stream; a full disk or a device that refuses is one error line, not a traceback.

    A real file stream (stdout) is written through its descriptor, so nothing stays in its buffer for
    Python to fail on again at exit; other streams (StringIO, a notebook's) get ``write`` as usual."""
    try:
        fd = _file_descriptor(stream)
        if fd is not None:
            stream.flush()
            _write_fd(fd, encode_text(text, getattr(stream, "encoding", None) or "utf-8"))
        else:
            stream.write(text)
            stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise NvtxsimError(f"{name}: cannot write: {exc.strerror or exc}") from None


def _file_descriptor(stream: IO[str]) -> int | None:
    """The descriptor under a real file stream; None for in-memory ones, including text wrappers
    without a file (pytest's capture is an ``io.TextIOWrapper`` whose ``fileno`` raises)."""
    if not isinstance(stream, io.TextIOWrapper):
        return None
    try:
        return stream.fileno()
    except (OSError, ValueError):
        return None


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_atomic(path: PathLike, data: str | bytes, *, force: bool = False, protect: Iterable[PathLike] = ()) -> Path:
    """Write to a temporary file beside ``path``, then rename: readers never see a partial file.

    A stream (device, FIFO, this process's own stdout) is written into instead; a symlink is followed."""
    asked = check_writable(path, force=force, protect=protect)
    raw = data if isinstance(data, bytes) else encode_text(data)
    fd = own_fd(asked)
    if fd is not None:
        try:
            sys.stdout.flush() if fd == 1 else None
            _write_fd(fd, raw)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise NvtxsimError(f"{asked}: cannot write: {exc.strerror or exc}") from None
        return asked
    p = resolved(asked)
    try:
        if is_stream(p):  # renaming over a device or FIFO would destroy it (even as root)
            with open(p, "wb") as device:
                device.write(raw)
            return asked

        def recheck() -> None:
            if not force and (p.exists() or p.is_symlink()):  # appeared meanwhile: still never clobber
                raise NvtxsimError(f"{asked}: already exists (use --force to overwrite)")

        with replace_via_temp(p, "wb", before_replace=recheck) as fh:
            fh.write(raw)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise NvtxsimError(f"{asked}: cannot write: {exc.strerror or exc}") from None
    return asked


def is_stream(path: Path) -> bool:
    """An existing character device or FIFO (``-o /dev/stdout``): output goes into it as a stream."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def add_output_arguments(p: argparse.ArgumentParser, formats: Iterable[str]) -> None:
    """``-f/--format``, ``-o/--output``, ``--force``, ``--wide``: the output options of every command that
    renders a report, the same everywhere (without ``--format``, ``-o FILE``'s suffix picks it: see cli.main)."""
    from nvtxsim.reporting.renderers import DEFAULT_FORMAT

    p.add_argument(
        "--format",
        "-f",
        choices=tuple(formats),
        default=DEFAULT_FORMAT,
        help="output format (default: what -o FILE's extension names: .html .json .csv .md, else table)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument(
        "--wide",
        action="store_true",
        help="on a terminal too, show every column and whole names (default: fit the terminal's width)",
    )
