"""Load stage: one export (.sqlite, .sqlite.gz or .sqlite.xz, .nsys-rep) → :class:`~nvtxsim.export.columns.Export`.

The entry point of the export stage. It picks the route - the parsed-columns cache
(:mod:`nvtxsim.export.cache`), a gzip inflated to a temporary file, an ``.nsys-rep``
converted by nsys - and the backend that reads the CUDA tables:

* ``memory``: every column read now, in bulk (:mod:`nvtxsim.export.tables`);
* ``streamed``: the CUDA columns read on first use and the GPU projection computed in one
  bounded-memory pass (:mod:`nvtxsim.export.streamed`), for exports too large to hold;
* ``None`` (auto): streamed for large exports (``NVTXSIM_STREAM_ROWS``) whose tables allow it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from nvtxsim.errors import NvtxsimError, debug
from nvtxsim.export import cache as _cache
from nvtxsim.export import streamed
from nvtxsim.export.columns import (  # noqa: F401  (the loaded types, importable from here)
    TRIGGER_META,
    ApiCalls,
    Export,
    GpuOps,
    Ranges,
)
from nvtxsim.export.extras import read_extras
from nvtxsim.export.private_copy import COMPRESSED, copy_with_wal, inflate, pending_wal, private_dir
from nvtxsim.export.tables import (
    all_strings,
    capture_end,
    check_file,
    check_regular,
    connect,
    flag_open_at_capture_end,
    read_api,
    read_gpu,
    read_meta,
    read_ranges,
    strings_for,
    table_names,
    trigger_note,
    unmatched_pop_warning,
    wild_bytes_warning,
)

Backend = Literal["memory", "streamed"]
BACKENDS = ("memory", "streamed")


def load(
    path: str | os.PathLike[str], *, cuda: bool = True, cache: bool | None = None, backend: Backend | None = None
) -> Export:
    """Read one export. ``.nsys-rep`` files are converted with ``nsys export`` first.

    ``cache``: go through the parsed-columns cache beside the export (:mod:`nvtxsim.export.cache`);
    None = as the NVTXSIM_CACHE environment variable says (off by default).
    ``backend``: "memory", "streamed" or None (auto: streamed when the export is large)."""
    if backend is not None and backend not in BACKENDS:
        raise NvtxsimError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    path = export_named(Path(path))
    if not _cache.enabled(cache):
        return _load(path, cuda=cuda, backend=backend)
    got = _cache.lookup(path, cuda=cuda, backend=backend)
    if got is not None:
        return got
    export = _load(path, cuda=cuda, backend=backend)
    _cache.store(path, export, cuda=cuda, backend=backend)
    return export


#: What ``nvtxsim profile -o NAME`` writes, in the order a bare NAME is looked for.
EXPORT_SUFFIXES = (".sqlite", ".sqlite.gz", ".sqlite.xz", ".nsys-rep")


def export_named(path: Path) -> Path:
    """``path``, or, when no such file exists, the export ``nvtxsim profile -o path`` wrote (``path.sqlite``,
    ``.sqlite.gz``, ``.sqlite.xz``, ``.nsys-rep``, the first that exists): ``report run`` after ``-o run``."""
    if os.path.lexists(path):
        return path
    for suffix in EXPORT_SUFFIXES:
        candidate = path.with_name(path.name + suffix)
        if candidate.is_file():
            return candidate
    if not path.suffix:
        raise NvtxsimError(f"{path}: no such file (nor {path.name}{', '.join(EXPORT_SUFFIXES)})")
    return path


def _load(path: Path, *, cuda: bool, backend: Backend | None) -> Export:
    if path.suffix in COMPRESSED:
        return _load_compressed(path, cuda=cuda, backend=backend)
    if path.suffix == ".nsys-rep":
        from nvtxsim.capture.nsys import ensure_sqlite  # capture stage owns nsys (imported only for .nsys-rep)

        path = Path(ensure_sqlite(path))
    wal = pending_wal(path)
    if wal is not None:  # rows still in the -wal: an immutable read would silently miss them
        check_file(path)
        return _load_copy(path, lambda folder: copy_with_wal(path, wal, folder), cuda=cuda, backend=backend)
    conn = connect(path)
    try:
        try:
            return _read(conn, path, cuda=cuda, backend=backend)
        except sqlite3.DatabaseError as exc:
            raise NvtxsimError(f"{path}: corrupt or truncated export ({exc})") from None
        except (OverflowError, ValueError, TypeError) as exc:
            raise NvtxsimError(f"{path}: unexpected values in export ({exc})") from None
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, path: Path, *, cuda: bool, backend: Backend | None) -> Export:
    tables = table_names(conn)
    meta = read_meta(conn, tables)
    note = trigger_note(conn, tables)
    if note:
        meta[TRIGGER_META] = note
    ranges, labels, strings, warnings = read_ranges(conn, tables)
    api: ApiCalls | None = None
    gpu: GpuOps | None = None
    if cuda:
        src = _streamed_source(conn, tables, path, backend)
        if src is not None:
            api, gpu = streamed.lazy_columns(src)
            strings.update(all_strings(conn, tables))
        else:
            api, gpu = read_api(conn, tables), read_gpu(conn, tables)
            if gpu is not None and len(gpu):
                strings.update(strings_for(conn, tables, gpu.name_id))
            if api is not None and len(api):
                strings.update(strings_for(conn, tables, api.name_id))
    end = capture_end(conn, tables)
    flag_open_at_capture_end(ranges, end)
    warnings.extend(unmatched_pop_warning(conn, tables))
    if cuda:
        warnings.extend(wild_bytes_warning(conn, tables))  # both backends: the same warning
    extras = read_extras(conn, tables, cuda=cuda)  # detail views' side tables (thread/GPU names, graph traces)
    return Export(
        path=path,
        meta=meta,
        tables=tables,
        labels=labels,
        ranges=ranges,
        api=api,
        gpu=gpu,
        capture_end=end,
        strings=strings,
        warnings=warnings,
        extras=extras,
    )


def _streamed_source(
    conn: sqlite3.Connection, tables: frozenset[str], path: Path, backend: Backend | None
) -> streamed.Source | None:
    """The streamed backend's source when it applies (asked for, or auto and the export is large)."""
    if backend == "memory":
        return None
    src = streamed.open_source(conn, tables, path, force=backend == "streamed")
    if src is None and backend == "streamed":
        debug(
            f"{path}: the streamed backend does not apply (no CUDA tables, or tables the page reader cannot read); reading in memory"
        )
    return src


def _load_compressed(path: Path, *, cuda: bool, backend: Backend | None) -> Export:
    """Gzipped or xz exports (as shipped in tests/data) are inflated to a private temporary file (size-limited)."""
    check_regular(path)

    def inflated(folder: Path) -> Path:
        inner = folder / (path.name[: -len(path.suffix)] or "export.sqlite")
        inflate(path, inner)
        return inner

    return _load_copy(path, inflated, cuda=cuda, backend=backend)


def _load_copy(path: Path, make: Callable[[Path], Path], *, cuda: bool, backend: Backend | None) -> Export:
    """Load from a private copy that ``make(folder)`` writes; the copy is gone afterwards (signals included)."""
    with private_dir() as folder:
        copy = make(folder)
        try:
            exp = _load(copy, cuda=cuda, backend=backend)
            streamed.materialize(exp)  # lazy columns must be read before the copy goes
        except NvtxsimError as exc:  # the user gave `path`: the temporary copy is no name of theirs
            raise NvtxsimError(_as_given(str(exc), copy, path)) from None
        except sqlite3.DatabaseError as exc:
            raise NvtxsimError(f"{path}: corrupt or truncated export ({exc})") from None
    exp.path = path
    exp.warnings = [_as_given(w, copy, path) for w in exp.warnings]
    return exp


def _as_given(text: str, copy: Path, path: Path) -> str:
    """``text`` with the private copy's name (and its folder's) replaced by the file the user gave."""
    if str(copy) in text:
        return text.replace(str(copy), str(path))
    return text.replace(str(copy.parent), str(path.parent))
