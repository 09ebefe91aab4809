"""Load stage: read an Nsight Systems SQLite export into numpy columns.

The export is opened read-only and immutable (never modified, no journal, no
lock), tables and columns are detected by name (every table is optional, the
schema changes between nsys releases), and rows are read in bulk: one SQL scan
per table, flattened straight into int64 arrays, no per-row Python objects kept.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import stat
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from nvtxsim.errors import NvtxsimError

# NVTX event types (ENUM_NSYS_EVENT_TYPE), stable since 2022.4.
PUSHPOP, STARTEND, MARK, DOMAIN_CREATE = 59, 60, 34, 75
NVTXT_PUSHPOP, NVTXT_STARTEND = 70, 71
RANGE_TYPES = (PUSHPOP, STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND)

KERNEL, MEMCPY, MEMSET = 0, 1, 2
GPU_TABLES = {
    KERNEL: "CUPTI_ACTIVITY_KIND_KERNEL",
    MEMCPY: "CUPTI_ACTIVITY_KIND_MEMCPY",
    MEMSET: "CUPTI_ACTIVITY_KIND_MEMSET",
}
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
PID_MASK = np.int64(-(1 << 24))  # == 0xFFFFFFFFFF000000 as int64: keeps HW, VM and PID bits
_SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_ABS_NS = 1 << 62  # ~146 years: larger timestamps are corrupt (their differences would overflow int64)
_SANE_TIMES = f"start BETWEEN {-MAX_ABS_NS} AND {MAX_ABS_NS} AND end BETWEEN {-MAX_ABS_NS} AND {MAX_ABS_NS} AND end >= start"


@dataclass
class Ranges:
    """One row per NVTX range (push/pop and start/end), in table order."""

    row: np.ndarray  # int64: rowid / eventId (nsys's RangeId)
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns; unclosed ranges end at the largest timestamp (nsys rule)
    global_tid: np.ndarray  # int64: thread that started the range
    cross_thread: np.ndarray  # bool: ended on another thread (start/end ranges only)
    unclosed: np.ndarray  # bool: never ended inside the capture
    style: np.ndarray  # int8: 0 push/pop, 1 start/end
    label: np.ndarray  # int32 index into Export.labels
    payload: np.ndarray  # float64, NaN where the range has no scalar payload
    name: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # str per range
    domain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # str per range ("" = default)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start


@dataclass
class ApiCalls:
    """CUDA runtime/driver API calls (the CPU side of GPU work)."""

    start: np.ndarray
    end: np.ndarray
    global_tid: np.ndarray
    correlation_id: np.ndarray
    name_id: np.ndarray  # int64 StringIds id of the API name

    def __len__(self) -> int:
        return len(self.start)


@dataclass
class GpuOps:
    """Kernels, memcpys and memsets, concatenated (sync rows are not GPU work)."""

    start: np.ndarray
    end: np.ndarray
    global_pid: np.ndarray
    correlation_id: np.ndarray
    kind: np.ndarray  # int8: KERNEL, MEMCPY, MEMSET
    device_id: np.ndarray
    stream_id: np.ndarray
    bytes: np.ndarray  # int64, 0 for kernels
    copy_kind: np.ndarray  # int16 CUPTI copyKind for memcpys, -1 otherwise
    name_id: np.ndarray  # int64 StringIds id of the kernel name, -1 otherwise

    def __len__(self) -> int:
        return len(self.start)


@dataclass
class Export:
    """Everything the analyse stage needs from one export."""

    path: Path
    meta: dict[str, str]
    tables: frozenset[str]
    labels: list[tuple[str, str]]  # (domain, name) per Ranges.label; domain "" = default domain
    ranges: Ranges
    api: Optional[ApiCalls]
    gpu: Optional[GpuOps]
    capture_end: Optional[int]
    strings: dict[int, str] = field(repr=False, default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extras: Any = field(repr=False, default=None)  # nvtxsim.export.extras.Extras: side tables for the detail views

    @property
    def has_cuda(self) -> bool:
        return self.api is not None and self.gpu is not None

    @property
    def nsys_version(self) -> str:
        return self.meta.get("EXPORT_PRODUCT_VERSION", "") or self.meta.get("PRODUCT_VERSION", "")

    @property
    def schema_version(self) -> str:
        return self.meta.get("EXPORT_SCHEMA_VERSION", "") or self.meta.get("SCHEMA_VERSION", "")

    def label_names(self) -> np.ndarray:
        """Display name per label: ``domain:name``, or ``name`` in the default domain."""
        return np.array([f"{d}:{n}" if d else n for d, n in self.labels], dtype=object)

    def string(self, sid: int) -> str:
        return self.strings.get(int(sid), "")


# --------------------------------------------------------------------------- opening


def _check_regular(path: Path) -> os.stat_result:
    """A non-empty regular file (a FIFO or device would block or never end)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise NvtxsimError(f"{path}: no such file") from None
    except OSError as exc:
        raise NvtxsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise NvtxsimError(f"{path}: is a directory, not an nsys export")
    if not stat.S_ISREG(st.st_mode):
        raise NvtxsimError(f"{path}: not a regular file (an nsys export is an .sqlite file)")
    if st.st_size == 0:
        raise NvtxsimError(f"{path}: empty file, not an nsys SQLite export")
    return st


def _check_file(path: Path) -> None:
    st = _check_regular(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise NvtxsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not head.startswith(_SQLITE_MAGIC):
        raise NvtxsimError(f"{path}: not an SQLite file (expected an nsys export made with --export=sqlite)")
    if len(head) < 100:
        raise NvtxsimError(f"{path}: truncated SQLite file")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if page_size and pages and st.st_size < page_size * pages:
        raise NvtxsimError(f"{path}: truncated SQLite file ({st.st_size} of {page_size * pages} bytes)")


def connect(path: Path) -> sqlite3.Connection:
    """Open an export read-only and immutable: the user's file is never written or locked."""
    _check_file(path)
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a corrupt schema can make even the error text undecodable
        raise NvtxsimError(f"{path}: not a readable SQLite export ({exc})") from None
    return conn


def _tables(conn: sqlite3.Connection) -> frozenset[str]:
    # Tables only: nsys writes no views, and a view can compute endless rows (a hostile file would hang us).
    return frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}


def _ints(conn: sqlite3.Connection, sql: str, ncols: int, params: Sequence[Any] = ()) -> np.ndarray:
    """Run ``sql`` and return its integer columns as an (n, ncols) int64 array, in one pass."""
    if not params:  # fast path: the same result computed with numpy from the file's pages (None: not applicable)
        from nvtxsim.export.pages import select_ints

        fast = select_ints(conn, sql, ncols)
        if fast is not None:
            return fast
    cur = conn.execute(sql, params)
    flat = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64)
    if flat.size % ncols:
        raise NvtxsimError("malformed export: a query returned ragged rows")
    return flat.reshape(-1, ncols)


def _meta(conn: sqlite3.Connection, tables: frozenset[str]) -> dict[str, str]:
    meta: dict[str, str] = {}
    for t in ("EXPORT_META_DATA", "META_DATA_EXPORT", "META_DATA_CAPTURE"):
        if t in tables and {"name", "value"} <= _columns(conn, t):
            for name, value in conn.execute(f"SELECT name, value FROM {t}"):
                meta.setdefault(str(name), str(value))
    # 2025.x spells keys without the EXPORT_ prefix in some releases; normalise both ways.
    for k in list(meta):
        if k.startswith("EXPORT_"):
            meta.setdefault(k[len("EXPORT_"):], meta[k])
        else:
            meta.setdefault("EXPORT_" + k, meta[k])
    return meta


def distinct(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array.

    Ids (string, thread, launch) are dense small integers: a bincount finds them in one pass,
    where numpy 2's hash-based ``np.unique`` is several times slower; other values are sorted.
    """
    if len(a) == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(a.min()), int(a.max())
    if hi - lo < max(4 * len(a), 1 << 16):
        return np.flatnonzero(np.bincount(a - lo)) + lo
    s = np.sort(a)
    return s[np.r_[True, s[1:] != s[:-1]]]


def _strings(conn: sqlite3.Connection, tables: frozenset[str], ids: np.ndarray) -> dict[int, str]:
    """StringIds values for the given ids (text decoded leniently: exports may hold bad UTF-8)."""
    if "StringIds" not in tables or ids.size == 0:
        return {}
    wanted = set(distinct(ids[ids >= 0]).tolist())
    out: dict[int, str] = {}
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        for sid, value in conn.execute("SELECT id, value FROM StringIds"):
            if sid in wanted:
                out[int(sid)] = value if isinstance(value, str) else str(value)
    finally:
        conn.text_factory = str
    return out


# --------------------------------------------------------------------------- tables


def _read_ranges(conn: sqlite3.Connection, tables: frozenset[str]) -> tuple[Ranges, list[tuple[str, str]], dict[int, str], list[str]]:
    if "NVTX_EVENTS" not in tables:
        raise NvtxsimError("export has no NVTX_EVENTS table: the program emitted no NVTX ranges, or nsys ran without '-t nvtx'")
    cols = _columns(conn, "NVTX_EVENTS")
    missing = {"start", "end", "eventType", "globalTid"} - cols
    if missing or not ({"text", "textId"} & cols):
        need = sorted(missing | ({"textId"} if not ({"text", "textId"} & cols) else set()))
        raise NvtxsimError(f"unsupported export: NVTX_EVENTS lacks column(s) {', '.join(need)}")
    rid = rowid_name(cols)
    ids = "ifnull(eventId,-1)" if "eventId" in cols else rid
    if ids is None:
        raise NvtxsimError("unsupported export: NVTX_EVENTS has real columns named rowid, _rowid_ and oid, and no eventId")
    both = rid is not None and ids != rid  # eventId identifies ranges; the true rowid joins texts and payloads
    has_text_id = "textId" in cols
    has_end_tid = "endGlobalTid" in cols
    has_domain = "domainId" in cols
    warnings: list[str] = []
    types = ",".join(str(t) for t in RANGE_TYPES)
    # Largest timestamp of the table: nsys ends unclosed ranges there (ignoring impossible ones).
    sane = f"BETWEEN {-MAX_ABS_NS} AND {MAX_ABS_NS}"
    mx = conn.execute(
        f"SELECT max(max(ifnull(start,0)), max(ifnull(end,0))) FROM NVTX_EVENTS WHERE ifnull(start,0) {sane} AND ifnull(end,0) {sane}"
    ).fetchone()[0]
    max_ts = int(mx) if mx is not None else 0
    sql = (
        f"SELECT {ids}, ifnull(start,0), ifnull(end,0), start IS NULL, end IS NULL, eventType, ifnull(globalTid,0), "
        f"{'(endGlobalTid IS NOT NULL AND endGlobalTid != ifnull(globalTid,0))' if has_end_tid else '0'}, "
        f"{'ifnull(textId,-1)' if has_text_id else '-1'}, "
        f"{'ifnull(domainId,0)' if has_domain else '0'}, "
        f"{'text IS NOT NULL' if 'text' in cols else '0'}{f', {rid}' if both else ''} "
        f"FROM NVTX_EVENTS WHERE eventType IN ({types})"
    )
    try:
        a = _ints(conn, sql, 12 if both else 11)
    except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError) as exc:
        raise NvtxsimError(f"corrupt NVTX_EVENTS table ({exc})") from None
    row, start, end, no_start, no_end, etype, tid, cross, text_id, domain_id, has_text = (a[:, i] for i in range(11))
    key, join = (rid, a[:, 11]) if both else (rid or "eventId", row)
    if "eventId" in cols and not _unique(row):  # names and payloads must never be matched to the wrong range
        if not both:
            raise NvtxsimError("unsupported export: NVTX_EVENTS.eventId is not unique and the table has no rowid to tell its rows apart")
        row = join
        warnings.append("NVTX_EVENTS.eventId is not unique (not an nsys export as written?): ranges are identified by rowid")
    no_start, no_end, cross, has_text = (x.astype(bool) for x in (no_start, no_end, cross, has_text))

    if no_start.any():
        warnings.append(f"{int(no_start.sum())} range(s) without a start time ignored")
    unclosed = no_end & ~no_start
    end = np.where(no_end, max_ts, end)
    wild = ~no_start & ((start < -MAX_ABS_NS) | (start > MAX_ABS_NS) | (end < -MAX_ABS_NS) | (end > MAX_ABS_NS))
    if wild.any():  # durations of such values overflow int64
        warnings.append(f"{int(wild.sum())} range(s) with impossible timestamps (beyond ±2^62 ns) ignored")
    reversed_ = (end < start) & ~no_start & ~wild
    if reversed_.any():
        warnings.append(f"{int(reversed_.sum())} range(s) ending before they start ignored")
    keep = ~(no_start | reversed_ | wild)
    if len(row) == 0:
        kinds = {r[0] for r in conn.execute("SELECT DISTINCT eventType FROM NVTX_EVENTS")}
        if kinds and kinds <= {75, 76}:
            warnings.append(
                "NVTX_EVENTS holds only domain create/destroy rows: this nsys refused the ranges of nvtx>=0.2.12; "
                "import nvtxsim before nvtx (it lifts the gate), use a newer nsys, or pin nvtx<=0.2.11"
            )

    # Texts given as plain strings (torch.cuda.nvtx, NVTXT) instead of registered ones.
    texts: dict[int, str] = {}
    if "text" in cols and has_text.any():
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        try:
            for r, t in conn.execute(f"SELECT {key}, text FROM NVTX_EVENTS WHERE eventType IN ({types}) AND text IS NOT NULL"):
                texts[int(r)] = t if isinstance(t, str) else str(t)
        finally:
            conn.text_factory = str

    # Domain names per (process, domainId), from the domain-create rows.
    pid_bits = tid & PID_MASK
    domains: dict[tuple[int, int], str] = {}
    if has_domain:
        dsql = f"SELECT ifnull(globalTid,0), domainId, text{', textId' if has_text_id else ''} FROM NVTX_EVENTS WHERE eventType = {DOMAIN_CREATE}"
        drows = conn.execute(dsql).fetchall()
        dstr_ids = np.array([r[3] for r in drows if len(r) > 3 and r[3] is not None], dtype=np.int64)
        dstrings = _strings(conn, tables, dstr_ids)
        for r in drows:
            name = r[2] if r[2] is not None else dstrings.get(r[3], "") if len(r) > 3 and r[3] is not None else ""
            if isinstance(name, bytes):
                name = name.decode("utf-8", "replace")
            domains.setdefault((int(r[0]) & int(PID_MASK), int(r[1] or 0)), str(name))

    strings = _strings(conn, tables, text_id[keep])
    # Labels: unique (domain, name) pairs; vectorised over unique (pid, domain, textId) combinations.
    label = np.zeros(len(row), dtype=np.int32)
    label_index: dict[tuple[str, str], int] = {}
    labels: list[tuple[str, str]] = []

    def intern(dom: str, name: str) -> int:
        k = (dom, name)
        i = label_index.get(k)
        if i is None:
            i = label_index[k] = len(labels)
            labels.append(k)
        return i

    plain = keep & ~has_text
    if plain.any():
        combo = np.stack([pid_bits[plain], domain_id[plain], text_id[plain]], axis=1)
        uniq, inverse = np.unique(combo, axis=0, return_inverse=True)
        codes = np.array(
            [intern(domains.get((int(p), int(d)), "") if d else "", strings.get(int(s), "")) for p, d, s in uniq],
            dtype=np.int32,
        )
        label[plain] = codes[inverse.reshape(-1)]
    if texts:
        idx = np.nonzero(keep & has_text)[0]
        for i in idx:
            d = int(domain_id[i])
            dom = domains.get((int(pid_bits[i]), d), "") if d else ""
            label[i] = intern(dom, texts.get(int(join[i]), ""))

    payload = _read_payloads(conn, cols, key, types, join[keep]) if len(row) else np.zeros(0)
    style = np.isin(etype, (STARTEND, NVTXT_STARTEND)).astype(np.int8)
    ranges = Ranges(
        row=row[keep],
        start=start[keep],
        end=end[keep],
        global_tid=tid[keep],
        cross_thread=cross[keep],
        unclosed=unclosed[keep],
        style=style[keep],
        label=label[keep],
        payload=payload,
    )
    if labels:
        ranges.name = np.array([n for _, n in labels], dtype=object)[ranges.label]
        ranges.domain = np.array([d for d, _ in labels], dtype=object)[ranges.label]
    return ranges, labels, strings, warnings


def rowid_name(cols: set[str]) -> Optional[str]:
    """A name that reaches the table's true rowid (a real column called ``rowid`` hides it), None if all are taken."""
    from nvtxsim.export.pages import ROWID_NAMES

    taken = {c.lower() for c in cols}
    return next((n for n in ROWID_NAMES if n not in taken), None)


def _unique(a: np.ndarray) -> bool:
    s = np.sort(a)
    return bool(len(s) < 2 or (s[1:] != s[:-1]).all())


def _read_payloads(conn: sqlite3.Connection, cols: set[str], key: str, types: str, rows: np.ndarray) -> np.ndarray:
    """Scalar payloads as float64 (NaN where absent), aligned with ``rows``."""
    out = np.full(len(rows), np.nan)
    fields = [c for c in ("int64Value", "uint64Value", "int32Value", "uint32Value", "doubleValue", "floatValue") if c in cols]
    if not fields:
        return out
    expr = "coalesce(" + ",".join(fields) + ")" if len(fields) > 1 else fields[0]
    got = conn.execute(f"SELECT {key}, {expr} FROM NVTX_EVENTS WHERE eventType IN ({types}) AND {expr} IS NOT NULL").fetchall()
    if got:
        r = np.array([g[0] for g in got], dtype=np.int64)
        v = np.array([float(g[1]) if isinstance(g[1], (int, float)) else np.nan for g in got])
        order = np.argsort(rows, kind="stable")
        pos = np.searchsorted(rows, r, sorter=order)
        pos = np.clip(pos, 0, max(len(rows) - 1, 0))
        hit = order[pos] if len(rows) else pos
        ok = len(rows) > 0
        if ok:
            match = rows[hit] == r
            out[hit[match]] = v[match]
    return out


def _read_api(conn: sqlite3.Connection, tables: frozenset[str]) -> Optional[ApiCalls]:
    if RUNTIME_TABLE not in tables:
        return None
    cols = _columns(conn, RUNTIME_TABLE)
    if not {"start", "end", "globalTid", "correlationId"} <= cols:
        return None
    name = "ifnull(nameId,-1)" if "nameId" in cols else "-1"
    a = _ints(
        conn,
        f"SELECT start, end, globalTid, correlationId, {name} FROM {RUNTIME_TABLE} "
        f"WHERE start IS NOT NULL AND end IS NOT NULL AND globalTid IS NOT NULL AND correlationId IS NOT NULL AND {_SANE_TIMES}",
        5,
    )
    return ApiCalls(a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy(), a[:, 3].copy(), a[:, 4].copy())


def _read_gpu(conn: sqlite3.Connection, tables: frozenset[str]) -> Optional[GpuOps]:
    parts = []
    for kind, table in GPU_TABLES.items():
        if table not in tables:
            continue
        cols = _columns(conn, table)
        if not {"start", "end", "globalPid", "correlationId"} <= cols:
            continue
        sel = [
            "start",
            "end",
            "globalPid",
            "correlationId",
            "ifnull(deviceId,-1)" if "deviceId" in cols else "-1",
            "ifnull(streamId,-1)" if "streamId" in cols else "-1",
            "ifnull(bytes,0)" if "bytes" in cols else "0",
            "ifnull(copyKind,-1)" if "copyKind" in cols and kind == MEMCPY else "-1",
            "ifnull(demangledName,-1)" if "demangledName" in cols and kind == KERNEL else "-1",
        ]
        a = _ints(
            conn,
            f"SELECT {', '.join(sel)} FROM {table} WHERE start IS NOT NULL AND end IS NOT NULL "
            f"AND globalPid IS NOT NULL AND correlationId IS NOT NULL AND {_SANE_TIMES}",
            len(sel),
        )
        parts.append((kind, a))
    if not parts:
        return None
    a = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    kind = np.concatenate([np.full(len(p[1]), p[0], dtype=np.int8) for p in parts])
    return GpuOps(
        start=a[:, 0].copy(),
        end=a[:, 1].copy(),
        global_pid=a[:, 2].copy(),
        correlation_id=a[:, 3].copy(),
        kind=kind,
        device_id=a[:, 4].copy(),
        stream_id=a[:, 5].copy(),
        bytes=a[:, 6].copy(),
        copy_kind=a[:, 7].astype(np.int16),
        name_id=a[:, 8].copy(),
    )


def _capture_end(conn: sqlite3.Connection, tables: frozenset[str]) -> Optional[int]:
    if "ANALYSIS_DETAILS" in tables and "duration" in _columns(conn, "ANALYSIS_DETAILS"):
        row = conn.execute("SELECT max(duration) FROM ANALYSIS_DETAILS").fetchone()
        if row and row[0] is not None:
            return int(row[0])
    return None


# --------------------------------------------------------------------------- entry point


def load(path: "str | os.PathLike[str]", *, cuda: bool = True, cache: Optional[bool] = None) -> Export:
    """Read one export. ``.nsys-rep`` files are converted with ``nsys export`` first.

    ``cache``: go through the parsed-columns cache beside the export (nvtxsim.export.cache);
    None = as the NVTXSIM_CACHE environment variable says (off by default)."""
    path = Path(path)
    if cache is not False:
        from nvtxsim.export import cache as _cache

        if _cache.enabled(cache):
            return _cache.load_cached(path, cuda=cuda)
    if path.suffix == ".gz":
        return _load_gzip(path, cuda=cuda)
    if path.suffix == ".nsys-rep":
        from nvtxsim.capture.nsys import ensure_sqlite  # capture stage owns nsys

        path = Path(ensure_sqlite(path))
    from nvtxsim.export.private_copy import copy_with_wal, pending_wal

    wal = pending_wal(path)
    if wal is not None:  # rows still in the -wal: an immutable read would silently miss them
        _check_file(path)
        return _load_copy(path, lambda folder: copy_with_wal(path, wal, folder), cuda=cuda)
    conn = connect(path)
    try:
        try:
            tables = _tables(conn)
            meta = _meta(conn, tables)
            ranges, labels, strings, warnings = _read_ranges(conn, tables)
            from nvtxsim.analysis.stream import lazy_columns  # large exports: CUDA columns read on demand, projection streamed

            lazy = lazy_columns(conn, tables, path) if cuda else None
            api = lazy[0] if lazy else _read_api(conn, tables) if cuda else None
            gpu = lazy[1] if lazy else _read_gpu(conn, tables) if cuda else None
            if lazy:
                strings.update(lazy[2])
            if not lazy and gpu is not None and len(gpu):
                names = _strings(conn, tables, gpu.name_id)
                strings.update(names)
            if not lazy and api is not None and len(api):
                strings.update(_strings(conn, tables, api.name_id))
            capture_end = _capture_end(conn, tables)
            _flag_open_at_capture_end(ranges, capture_end)
            warnings.extend(_unmatched_pop_warning(conn, tables))
            from nvtxsim.export.extras import read_extras  # detail views' side tables (thread/GPU names, graph traces)

            extras = read_extras(conn, tables, cuda=cuda)
        except sqlite3.DatabaseError as exc:
            raise NvtxsimError(f"{path}: corrupt or truncated export ({exc})") from None
        except (OverflowError, ValueError, TypeError) as exc:
            raise NvtxsimError(f"{path}: unexpected values in export ({exc})") from None
    finally:
        conn.close()
    exp = Export(
        path=path,
        meta=meta,
        tables=tables,
        labels=labels,
        ranges=ranges,
        api=api,
        gpu=gpu,
        capture_end=capture_end,
        strings=strings,
        warnings=warnings,
        extras=extras,
    )
    return exp


def _flag_open_at_capture_end(ranges: Ranges, capture_end: Optional[int]) -> None:
    """nsys 2022.4 writes a range still open when the capture stops (program killed or exited
    inside it) with ``end`` = capture end (``ANALYSIS_DETAILS.duration``), not NULL: flag those too."""
    if capture_end is not None and len(ranges):
        ranges.unclosed |= ranges.end >= capture_end


#: Mark that nvtxsim.emit.ranges records for each range_pop() it refused (no open range_push on that thread).
UNMATCHED_POP_MARK = "unmatched_range_pop"


def _unmatched_pop_warning(conn: sqlite3.Connection, tables: frozenset[str]) -> list[str]:
    if "NVTX_EVENTS" not in tables:
        return []
    cols = _columns(conn, "NVTX_EVENTS")
    where = []
    if "text" in cols:
        where.append("text = ?")
    if "textId" in cols and "StringIds" in tables:
        where.append("textId IN (SELECT id FROM StringIds WHERE value = ?)")
    if not where:
        return []
    sql = f"SELECT count(*) FROM NVTX_EVENTS WHERE eventType = {MARK} AND ({' OR '.join(where)})"
    n = conn.execute(sql, [UNMATCHED_POP_MARK] * len(where)).fetchone()[0] or 0
    if not n:
        return []
    return [f"{n} unmatched range_pop() call(s) were ignored by nvtxsim (marks {UNMATCHED_POP_MARK!r}): a range_pop without its range_push on that thread"]


def _load_gzip(path: Path, *, cuda: bool) -> Export:
    """Gzipped exports (as shipped in tests/data) are inflated to a private temporary file (size-limited)."""
    from nvtxsim.export.private_copy import inflate

    _check_regular(path)
    return _load_copy(path, lambda folder: _inflated(path, folder, inflate), cuda=cuda)


def _inflated(path: Path, folder: Path, inflate: Any) -> Path:
    inner = folder / (path.name[: -len(".gz")] or "export.sqlite")
    inflate(path, inner)
    return inner


def _load_copy(path: Path, make: Any, *, cuda: bool) -> Export:
    """Load from a private copy that ``make(folder)`` writes; the copy is gone afterwards (signals included)."""
    from nvtxsim.export.private_copy import private_dir

    with private_dir() as folder:
        exp = load(make(folder), cuda=cuda, cache=False)
        from nvtxsim.analysis.stream import materialize  # lazy columns must be read before the copy goes

        materialize(exp)
    exp.path = path
    return exp
