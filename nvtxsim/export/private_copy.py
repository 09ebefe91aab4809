"""Private temporary copies of an export: an inflated ``.sqlite.gz`` or ``.sqlite.xz``, or a WAL-mode export with its ``-wal``.

Why: the export itself is only ever opened read-only and immutable (no journal, no lock, no
``-shm`` beside it). Rows that sit in a ``-wal`` file are invisible that way, and a gzip stream
cannot be opened at all, so both are read from a copy in a private temporary folder that is
removed afterwards - also when the process is ended by SIGINT, SIGTERM or SIGHUP.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from nvtxsim.errors import NvtxsimError

#: Largest inflated size of a ``.sqlite.gz`` (bytes, or with a K/M/G/T suffix); default: 90 % of the free space.
LIMIT_ENV = "NVTXSIM_GZ_LIMIT"
FREE_SHARE = 0.9
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


# --------------------------------------------------------------------------- the private folder


@contextlib.contextmanager
def private_dir() -> Iterator[Path]:
    """A private temporary folder, removed on exit, on SIGINT, and on SIGTERM/SIGHUP (turned into SystemExit)."""
    with _signals_end_cleanly(), tempfile.TemporaryDirectory(prefix="nvtxsim-") as tmp:
        yield Path(tmp)


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _signals_end_cleanly() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP unwind the stack (so ``finally`` blocks remove temporary files)
    instead of killing the process on the spot. Signals a caller ignores stay ignored; other threads cannot
    set handlers, so there the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None:
            continue
        try:
            old = signal.getsignal(sig)
            if old is signal.SIG_DFL:
                signal.signal(sig, _raise_exit)
                previous[sig] = old
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# --------------------------------------------------------------------------- gzip


def parse_size(text: str) -> int:
    """``"512M"``, ``"2G"``, ``"1000000"`` → bytes (one-line error otherwise)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text, re.IGNORECASE)
    if not m:
        raise NvtxsimError(f"{LIMIT_ENV}={text!r}: expected a size such as 500M, 20G or a number of bytes")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not value >= 1:
        raise NvtxsimError(f"{LIMIT_ENV}={text!r}: must be at least 1 byte")
    return int(value)


def inflate_limit(folder: Path) -> tuple[int, str]:
    """The most bytes a gzip may inflate to in ``folder``, and where the limit comes from."""
    free = shutil.disk_usage(folder).free
    share = int(free * FREE_SHARE)
    configured = os.environ.get(LIMIT_ENV, "").strip()
    if configured:
        limit = parse_size(configured)
        if limit <= share:
            return limit, f"{LIMIT_ENV}={configured}"
    return share, f"{int(FREE_SHARE * 100)} % of the {_human(free)} free in {folder}"


#: Compressed export suffix → (module opening it, the name users know the format by).
COMPRESSED = {".gz": ("gzip", "gzip"), ".xz": ("lzma", "xz")}


def inflate(path: Path, dst: Path, limit: int | None = None) -> None:
    """Decompress ``path`` (gzip or xz, by suffix) into ``dst``, refusing past the size limit (a bomb or a full
    disk: one clear line)."""
    import importlib
    import lzma
    import zlib

    module, kind = COMPRESSED.get(path.suffix, COMPRESSED[".gz"])
    opener = importlib.import_module(module).open
    if limit is None:
        limit, why = inflate_limit(dst.parent)
    else:
        why = "the given limit"
    written = 0
    try:
        with opener(path) as src, open(dst, "wb") as out:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                written += len(chunk)
                if written > limit:
                    raise NvtxsimError(
                        f"{path}: inflates to more than {_human(limit)} ({why}); "
                        f"set {LIMIT_ENV}=SIZE or TMPDIR to a folder with more space"
                    )
                out.write(chunk)
    except NvtxsimError:
        raise
    except OSError as exc:
        if exc.errno is not None and exc.errno in (28, 122):  # ENOSPC, EDQUOT: the disk, not the file
            raise NvtxsimError(
                f"{path}: no space left to inflate it in {dst.parent} ({_human(written)} written); set TMPDIR to a larger disk"
            ) from None
        raise NvtxsimError(f"{path}: not a readable {kind} file ({exc})") from None
    except (EOFError, zlib.error, lzma.LZMAError) as exc:
        raise NvtxsimError(f"{path}: not a readable {kind} file ({exc})") from None


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# --------------------------------------------------------------------------- WAL


WAL_HEADER = 32


def pending_wal(path: Path) -> Path | None:
    """The ``-wal`` beside ``path`` when it holds frames (rows an immutable read would miss), else None."""
    wal = Path(str(path) + "-wal")
    try:
        return wal if wal.is_file() and wal.stat().st_size > WAL_HEADER else None
    except OSError:
        return None


def copy_with_wal(path: Path, wal: Path, folder: Path) -> Path:
    """``path`` and its ``-wal`` copied into ``folder`` and checkpointed there: one self-contained database."""
    dst = folder / path.name
    need = path.stat().st_size + wal.stat().st_size
    free = shutil.disk_usage(folder).free
    if need > free * FREE_SHARE:
        raise NvtxsimError(
            f"{path}: its rows are partly in {wal.name} (WAL mode); reading them needs a private copy of "
            f"{_human(need)} but {folder} has {_human(free)} free. Checkpoint it first "
            f"(sqlite3 {path.name} 'PRAGMA wal_checkpoint(TRUNCATE)') or set TMPDIR"
        )
    try:
        shutil.copyfile(path, dst)
        shutil.copyfile(wal, Path(str(dst) + "-wal"))
        conn = sqlite3.connect(dst)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            conn.execute("PRAGMA journal_mode=DELETE").fetchone()
        finally:
            conn.close()
    except (OSError, sqlite3.DatabaseError) as exc:
        raise NvtxsimError(f"{path}: cannot read the rows in {wal.name} (WAL mode): {exc}") from None
    return dst
