"""Writing results: atomically, and never over a user's file unless asked."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterator, Iterable, Optional, Union

from nvtxsim.errors import NvtxsimError

PathLike = Union[str, "os.PathLike[str]"]


def check_writable(path: PathLike, *, force: bool = False, protect: Iterable[PathLike] = ()) -> Path:
    """Fail early (before any work) when ``path`` cannot or must not be written."""
    p = Path(path)
    for other in protect:
        try:
            if p.exists() and Path(other).exists() and p.samefile(other):
                raise NvtxsimError(f"{p}: refusing to overwrite the input file")
        except OSError:
            pass
    if p.is_dir():
        raise NvtxsimError(f"{p}: is a directory")
    if is_stream(p):
        return p  # /dev/null, /dev/stdout, a FIFO: written into, never replaced
    if p.exists() and not force:
        raise NvtxsimError(f"{p}: already exists (use --force to overwrite)")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise NvtxsimError(f"{parent}: no such directory")
    if not os.access(parent, os.W_OK):
        raise NvtxsimError(f"{parent}: directory is not writable")
    return p


def terminal_width(*, wide: bool = False) -> Optional[int]:
    """Columns a terminal table must fit in (``COLUMNS``, else the terminal's); None with ``wide``: no limit."""
    import shutil

    return None if wide else max(shutil.get_terminal_size((200, 24)).columns, 20)


def deliver(text: str, out: Optional[PathLike], *, force: bool = False, protect: Iterable[PathLike] = (), stream: Optional[IO[str]] = None) -> None:
    """The last step of every command that renders: to ``out`` atomically, else to ``stream`` (stdout)."""
    if out is not None:
        write_atomic(out, text, force=force, protect=protect)
        return
    stream = stream or sys.stdout
    stream.write(text)
    stream.flush()


def write_atomic(path: PathLike, data: Union[str, bytes], *, force: bool = False, protect: Iterable[PathLike] = ()) -> Path:
    """Write to a temporary file beside ``path``, then rename: readers never see a partial file."""
    p = check_writable(path, force=force, protect=protect)
    mode = "wb" if isinstance(data, bytes) else "w"
    if is_stream(p):  # renaming over a device or FIFO would destroy it (even as root)
        with open(p, mode, **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as fh:
            fh.write(data)
        return p
    def recheck() -> None:
        if not force and p.exists():  # appeared meanwhile: still never clobber
            raise NvtxsimError(f"{p}: already exists (use --force to overwrite)")

    with replace_via_temp(p, mode, before_replace=recheck) as fh:
        fh.write(data)
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def is_stream(path: Path) -> bool:
    """An existing character device or FIFO (``-o /dev/stdout``): output goes into it as a stream."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


@contextmanager
def replace_via_temp(path: Path, mode: str = "wb", *, before_replace: Optional[Callable[[], Any]] = None) -> Iterator[IO[Any]]:
    """Yield a temporary file beside ``path``; on success it replaces ``path`` in one rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results follow the umask like any new file
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
