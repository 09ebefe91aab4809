"""Writing a file atomically: shared by the export cache and the CLI's outputs.

Lives at the package root because two stages need it (``export.cache`` writes cache
entries, ``cli.output`` writes reports) and neither may import the other.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """The replaced file's permissions (``--force`` over a read-only or private file keeps them); a new
    file follows the umask (mkstemp makes 0600)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return 0o666 & ~_umask()


def temp_stem(name: str, limit: int = 180) -> str:
    """``name`` cut to ``limit`` bytes (whole characters): the temporary name must fit where ``name`` fits."""
    raw = os.fsencode(name)
    return (
        name
        if len(raw) <= limit
        else os.fsdecode(raw[:limit]).encode("utf-8", "ignore").decode("utf-8", "ignore") or "out"
    )


@contextmanager
def replace_via_temp(
    path: Path, mode: str = "wb", *, before_replace: Callable[[], Any] | None = None
) -> Iterator[IO[Any]]:
    """Yield a temporary file beside ``path``; on success it replaces ``path`` in one rename."""
    fd, tmp = tempfile.mkstemp(
        prefix=f".{temp_stem(path.name)}.", suffix=".tmp", dir=path.parent if str(path.parent) else "."
    )
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
        os.chmod(tmp, _mode_for(path))
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
