"""The streamed backend: CUDA columns read from the export on first use, for exports too large to hold.

Why: an export with tens of millions of CUDA calls and kernels does not fit in a laptop's
memory as int64 columns (56M calls x 5 columns alone are 2.2 GB). With this backend the
loader reads the ranges and every StringIds entry now, and stands in lazy
:class:`LazyApiCalls` / :class:`LazyGpuOps` for the CUDA columns: a view that needs a
column reads exactly what the in-memory backend would have read; the per-range GPU
projection is computed in one bounded-memory pass (:mod:`nvtxsim.analysis.stream`).

The backend applies when the export is large (``NVTXSIM_STREAM_ROWS``, default 3M CUDA
rows) and its tables suit the page fast path (:mod:`nvtxsim.export.pages`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nvtxsim.export.columns import ApiCalls, Export, GpuOps
from nvtxsim.export.pages import Select, Unsupported
from nvtxsim.export.tables import (
    API_FIELDS,
    GPU_FIELDS,
    api_columns,
    api_sql,
    connect,
    gpu_sql,
    gpu_tables,
    ints,
    sane_bytes,
)
from nvtxsim.schema import API_WHERE, GPU_WHERE, RUNTIME_TABLE

#: Exports with at least this many CUDA calls + GPU ops are streamed (env NVTXSIM_STREAM_ROWS overrides).
STREAM_MIN_ROWS = 3_000_000


def min_rows() -> int:
    try:
        return int(os.environ.get("NVTXSIM_STREAM_ROWS", STREAM_MIN_ROWS))
    except ValueError:
        return STREAM_MIN_ROWS


@dataclass
class Source:
    """The SQLite file behind a streamed export, and the SQL of each column (as the in-memory backend reads it)."""

    path: Path
    api_cols: set[str]
    gpu_tables: list[tuple[int, str, set[str]]]  # (kind, table, columns) in load order
    api_count: int | None = None
    gpu_counts: dict[int, int] | None = None
    #: The per-range GPU projection (an ``analysis.projection.RangeGpu``) once computed (:meth:`keep_projection`)
    #: or read from the cache.
    projection: Any = field(default=None, repr=False)
    #: Called when a projection is kept: an export loaded through the cache rewrites its entry to hold it.
    on_projection: Callable[[], None] | None = field(default=None, repr=False)
    #: A :meth:`prefetch_named` under way: its ids and the future of its rows.
    _prefetch: tuple[tuple[int, ...], Any] | None = field(default=None, repr=False, compare=False)

    def connect(self) -> sqlite3.Connection:
        return connect(self.path)

    def keep_projection(self, projection: Any) -> None:
        """Hold the projection the analysis stage computed (and persist it, when the export came through the cache)."""
        self.projection = projection
        if self.on_projection is not None:
            self.on_projection()

    @contextmanager
    def scan(self) -> Iterator[Scan]:
        """One connection for a pass over the CUDA tables in batches (:class:`Scan`)."""
        conn = self.connect()
        try:
            yield Scan(self, conn)
        finally:
            conn.close()

    def prefetch_named(self, ids: list[int]) -> None:
        """Start :meth:`calls_named` for ``ids`` on a connection and thread of its own, so that its scan of
        the runtime table (SQLite's own work, done without the GIL) overlaps the projection's pass instead
        of following it; :meth:`calls_named` with the same ids then takes its rows. Best effort: a
        prefetch that fails leaves :meth:`calls_named` to run the query itself."""
        if self._prefetch is not None:
            return
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(1, thread_name_prefix="nvtxsim-prefetch")
        self._prefetch = (tuple(ids), pool.submit(self._calls_named, list(ids)))
        pool.shutdown(wait=False)

    def calls_named(self, ids: list[int]) -> np.ndarray:
        """The CUDA calls whose name is one of the StringIds ``ids``, as (start, end, global_tid,
        correlation_id, name_id) rows: one filtered query, no column read in full. The rows, and their
        order (the table's), are those the in-memory backend reads (the same WHERE clause)."""
        pending, self._prefetch = self._prefetch, None
        if pending is not None and pending[0] == tuple(ids):
            try:
                return pending[1].result()
            except Exception:  # the prefetch's own failure: the query below says what is wrong, if anything
                pass
        return self._calls_named(ids)

    def _calls_named(self, ids: list[int]) -> np.ndarray:
        conn = self.connect()
        try:
            rows = conn.execute(
                f"SELECT start, end, globalTid, correlationId, nameId FROM {RUNTIME_TABLE} "
                f"WHERE nameId IN ({','.join(map(str, ids))}) AND {API_WHERE} ORDER BY rowid"
            ).fetchall()
        finally:
            conn.close()
        return np.array(rows, dtype=np.int64).reshape(-1, 5)

    def api_sql(self, names: list[str]) -> str:
        return api_sql(names, self.api_cols)

    @staticmethod
    def gpu_sql(names: list[str], kind: int, table: str, cols: set[str]) -> str:
        return gpu_sql(names, kind, table, cols)

    def column(self, conn: sqlite3.Connection, sql: str, rows: int | None = None) -> np.ndarray:
        """One column, filled batch by batch (``rows`` known: straight into its array, no second copy)."""
        plan = Select.compile(sql, 1)
        if plan is not None:
            try:
                if rows is not None:
                    out, at = np.empty(rows, dtype=np.int64), 0
                    for b in plan.batches(conn):
                        if at + len(b) > rows:
                            raise Unsupported("more rows than counted")
                        out[at : at + len(b)] = b[:, 0]
                        at += len(b)
                    if at == rows:
                        return out
                    raise Unsupported("fewer rows than counted")
                parts = [b[:, 0].copy() for b in plan.batches(conn)]
                return np.concatenate(parts) if len(parts) != 1 else parts[0]
            except Unsupported:
                pass
        return ints(conn, sql, 1)[:, 0].copy()

    def counts(self) -> tuple[int, dict[int, int]]:
        """Rows of the runtime and GPU tables that the reader keeps (computed once)."""
        if self.api_count is None or self.gpu_counts is None:
            conn = self.connect()
            try:
                self.api_count = int(
                    conn.execute(f"SELECT count(*) FROM {RUNTIME_TABLE} WHERE {API_WHERE}").fetchone()[0]
                )
                self.gpu_counts = {
                    kind: int(conn.execute(f"SELECT count(*) FROM {table} WHERE {GPU_WHERE}").fetchone()[0])
                    for kind, table, _ in self.gpu_tables
                }
            finally:
                conn.close()
        return self.api_count, dict(self.gpu_counts)


class Scan:
    """A streamed export read in batches of int64 rows through the page fast path, over one connection.

    Every iterator raises :class:`~nvtxsim.export.pages.Unsupported` when a table cannot be read that way."""

    def __init__(self, src: Source, conn: sqlite3.Connection) -> None:
        self.src, self.conn = src, conn

    def gpu(self, names: list[str], kind: int, table: str, cols: set[str], batch_bytes: int) -> Iterator[np.ndarray]:
        """Columns ``names`` of one GPU table (one of ``src.gpu_tables``), in table order."""
        plan = Select.compile(self.src.gpu_sql(names, kind, table, cols), len(names))
        if plan is None:
            raise Unsupported("GPU table not readable by the fast path")
        return plan.batches(self.conn, batch_bytes=batch_bytes)

    def api(self, names: list[str], batch_bytes: int) -> Iterator[np.ndarray]:
        """Columns ``names`` of the CUDA calls, in table order."""
        plan = Select.compile(self.src.api_sql(names), len(names))
        if plan is None:
            raise Unsupported("runtime table not readable by the fast path")
        return plan.batches(self.conn, batch_bytes=batch_bytes)


def _row_estimate(conn: sqlite3.Connection, table: str) -> int:
    """Rows of ``table`` for the stream-or-not decision: its largest rowid (one b-tree descent;
    nsys never deletes rows, so it is the count), or ``count(*)`` (a full scan) without rowids."""
    try:
        return int(conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0] or 0)
    except sqlite3.OperationalError:
        return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


def open_source(conn: sqlite3.Connection, tables: frozenset[str], path: Path, *, force: bool = False) -> Source | None:
    """A :class:`Source` when ``path`` can be streamed (and, unless ``force``, is large enough to be worth it)."""
    api_cols = api_columns(conn, tables)
    if api_cols is None:
        return None
    usable = gpu_tables(conn, tables)
    if not usable:
        return None
    if not force and sum(_row_estimate(conn, t) for t in [RUNTIME_TABLE] + [t for _, t, _ in usable]) < min_rows():
        return None
    src = Source(path=Path(path).resolve(), api_cols=api_cols, gpu_tables=usable)
    if Select.compile(src.api_sql(list(API_FIELDS)), len(API_FIELDS)) is None:
        return None
    if any(Select.compile(src.gpu_sql(list(GPU_FIELDS), k, t, c), len(GPU_FIELDS)) is None for k, t, c in usable):
        return None
    return src


# --------------------------------------------------------------------------- lazy columns


def release_memory() -> None:
    """Hand freed buffers back to the OS, so later steps of a report start from a low RSS."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class _Lazy:
    """What both lazy column sets share: the source they read from, and each column read once, on first use.

    A subclass names its columns (``_FIELDS``) and reads one of them (``_read``); what is read stays in the
    instance, so :meth:`is_read` says whether a column is in memory."""

    _FIELDS: tuple[str, ...]
    _source: Source

    def __init__(self, source: Source) -> None:  # noqa: D107 (no dataclass __init__: fields are lazy)
        self._source = source

    def is_read(self, name: str) -> bool:
        return name in vars(self)

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._FIELDS:
            raise AttributeError(name)
        value = self._read(name)
        self.__dict__[name] = value
        return value

    def _read(self, name: str) -> np.ndarray:
        raise NotImplementedError


class LazyApiCalls(_Lazy, ApiCalls):
    """:class:`ApiCalls` whose columns are read from the export on first use, one at a time."""

    _FIELDS = API_FIELDS
    backend = "streamed"

    def _read(self, name: str) -> np.ndarray:
        conn = self._source.connect()
        try:
            return self._source.column(conn, self._source.api_sql([name]), self._source.api_count)
        finally:
            conn.close()
            release_memory()

    def __len__(self) -> int:
        return self._source.counts()[0]

    def __repr__(self) -> str:
        return f"LazyApiCalls({len(self)} calls from {self._source.path.name})"


class LazyGpuOps(_Lazy, GpuOps):
    """:class:`GpuOps` whose columns are read from the export on first use, one at a time."""

    _FIELDS = ("kind",) + GPU_FIELDS
    backend = "streamed"

    def _read(self, name: str) -> np.ndarray:
        src = self._source
        if name == "kind":  # the tables are concatenated in load order: the kinds follow from the counts
            counts = src.counts()[1]
            return np.concatenate([np.full(counts[k], k, dtype=np.int8) for k, _, _ in src.gpu_tables])
        conn = src.connect()
        try:
            counts = src.gpu_counts or {}
            parts = [src.column(conn, src.gpu_sql([name], k, t, c), counts.get(k)) for k, t, c in src.gpu_tables]
        finally:
            conn.close()
            release_memory()
        value = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if name == "copy_kind":
            value = value.astype(np.int16)
        if name == "bytes":
            value = sane_bytes(value)
        return value

    def __len__(self) -> int:
        return sum(self._source.counts()[1].values())

    def __repr__(self) -> str:
        return f"LazyGpuOps({len(self)} ops from {self._source.path.name})"


def lazy_columns(src: Source) -> tuple[LazyApiCalls, LazyGpuOps]:
    return LazyApiCalls(src), LazyGpuOps(src)


def materialize(export: Export) -> None:
    """Replace lazy columns by plain ones, read now (before the file behind them goes away)."""
    if isinstance(export.api, LazyApiCalls):
        export.api = ApiCalls(**{name: getattr(export.api, name) for name in LazyApiCalls._FIELDS})
    if isinstance(export.gpu, LazyGpuOps):
        export.gpu = GpuOps(**{name: getattr(export.gpu, name) for name in LazyGpuOps._FIELDS})


def source_of(export: Export) -> Source | None:
    """The streamed source behind ``export``; None for an export loaded in memory."""
    api, gpu = export.api, export.gpu
    src = getattr(api, "_source", None) if isinstance(api, LazyApiCalls) else None
    if src is None or not isinstance(gpu, LazyGpuOps) or gpu._source is not src:
        return None
    return src
