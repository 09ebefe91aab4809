"""The in-memory backend: read the tables of an export with SQL (or the page fast path) into numpy columns.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import ApiCalls, GpuOps, Ranges, distinct
from nvtxsim.export.pages import ROWID_NAMES, select_ints, table_info
from nvtxsim.phases import TRIGGER_MARK, UNMATCHED_POP_MARK
from nvtxsim.schema import (
    ANALYSIS_TABLE,
    API_REQUIRED,
    API_WHERE,
    DOMAIN_CREATE,
    DOMAIN_DESTROY,
    GPU_REQUIRED,
    GPU_TABLES,
    GPU_WHERE,
    KERNEL,
    MARK,
    MAX_ABS_NS,
    MAX_BYTES,
    MEMCPY,
    MEMORY_TABLE,
    META_TABLES,
    NVTX_TABLE,
    PAYLOAD_COLUMNS,
    PID_MASK,
    RANGE_TYPES,
    RUNTIME_TABLE,
    SANE_BYTES,
    START_END_TYPES,
    STRINGS_TABLE,
)

_SQLITE_MAGIC = b"SQLite format 3\x00"


# --------------------------------------------------------------------------- opening


def check_regular(
    path: Path, *, kind: str = "an nsys export", suffix: str = ".sqlite", empty_ok: bool = False
) -> os.stat_result:
    """A regular file, non-empty unless ``empty_ok`` (a FIFO or device would block or never end),
    checked without opening it. ``kind`` and ``suffix`` name what was expected in the errors."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise NvtxsimError(f"{path}: no such file") from None
    except OSError as exc:
        raise NvtxsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise NvtxsimError(f"{path}: is a directory, not {kind}")
    if not stat.S_ISREG(st.st_mode):
        raise NvtxsimError(f"{path}: not a regular file ({kind} is a {suffix} file)")
    if st.st_size == 0 and not empty_ok:
        raise NvtxsimError(f"{path}: empty file, not {kind}")
    return st


def check_file(path: Path) -> None:
    st = check_regular(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise NvtxsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not head.startswith(_SQLITE_MAGIC):
        if head.lstrip()[:2] in (b'{"', b"{}"):  # JSON lines: what live timing writes
            raise NvtxsimError(f"{path}: a live-timing file (JSON lines), not an nsys export: nvtxsim live {path}")
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
    check_file(path)
    uri = "file:" + urllib.parse.quote(os.fsencode(path.resolve())) + "?mode=ro&immutable=1"  # bytes: any file name
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (
        sqlite3.DatabaseError,
        UnicodeDecodeError,
    ) as exc:  # a corrupt schema can make even the error text undecodable
        raise NvtxsimError(f"{path}: not a readable SQLite export ({exc})") from None
    return conn


def table_names(conn: sqlite3.Connection) -> frozenset[str]:
    # Tables only: nsys writes no views, and a view can compute endless rows (a hostile file would hang us).
    return frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


def columns_of(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (decoded when the connection returns text as bytes): the one question
    every optional table is asked before it is read."""
    return {as_text(r[1]) for r in table_info(conn, table)}


def as_text(v: object) -> str:
    """A text value of an export as ``str``, also when the connection returns bytes (names may hold bad UTF-8)."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def ints(conn: sqlite3.Connection, sql: str, ncols: int, params: Sequence[Any] = ()) -> np.ndarray:
    """Run ``sql`` and return its integer columns as an (n, ncols) int64 array, in one pass."""
    if not params:  # fast path: the same result computed with numpy from the file's pages (None: not applicable)
        fast = select_ints(conn, sql, ncols)
        if fast is not None:
            return fast
    cur = conn.execute(sql, params)
    flat = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64)
    if flat.size % ncols:
        raise NvtxsimError("malformed export: a query returned ragged rows")
    return flat.reshape(-1, ncols)


def read_meta(conn: sqlite3.Connection, tables: frozenset[str]) -> dict[str, str]:
    meta: dict[str, str] = {}
    for t in META_TABLES:
        if t in tables and {"name", "value"} <= columns_of(conn, t):
            for name, value in conn.execute(f"SELECT name, value FROM {t}"):
                meta.setdefault(str(name), str(value))
    # 2025.x spells keys without the EXPORT_ prefix in some releases; normalise both ways.
    for k in list(meta):
        if k.startswith("EXPORT_"):
            meta.setdefault(k[len("EXPORT_") :], meta[k])
        else:
            meta.setdefault("EXPORT_" + k, meta[k])
    return meta


def strings_for(conn: sqlite3.Connection, tables: frozenset[str], ids: np.ndarray) -> dict[int, str]:
    """StringIds values for the given ids (text decoded leniently: exports may hold bad UTF-8)."""
    if STRINGS_TABLE not in tables or ids.size == 0:
        return {}
    wanted = set(distinct(ids[ids >= 0]).tolist())
    out: dict[int, str] = {}
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        for sid, value in conn.execute(f"SELECT id, value FROM {STRINGS_TABLE}"):
            if sid in wanted:
                out[int(sid)] = value if isinstance(value, str) else str(value)
    finally:
        conn.text_factory = str
    return out


def all_strings(conn: sqlite3.Connection, tables: frozenset[str]) -> dict[int, str]:
    """Every StringIds entry (the streamed backend: which ids its columns use is not known up front)."""
    strings: dict[int, str] = {}
    if STRINGS_TABLE not in tables:
        return strings
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        for sid, value in conn.execute(f"SELECT id, value FROM {STRINGS_TABLE}"):
            if isinstance(sid, int):
                strings[sid] = value if isinstance(value, str) else str(value)
    finally:
        conn.text_factory = str
    return strings


# --------------------------------------------------------------------------- NVTX ranges


def read_ranges(
    conn: sqlite3.Connection, tables: frozenset[str]
) -> tuple[Ranges, list[tuple[str, str]], dict[int, str], list[str]]:
    """The NVTX ranges, their (domain, name) labels, the StringIds they use, and warnings about dropped rows."""
    cols = _nvtx_columns(conn, tables)
    warnings: list[str] = []
    key, (row, start, end, no_start, no_end, etype, tid, cross, text_id, domain_id, has_text), join = _range_rows(
        conn, cols, warnings
    )
    keep, end, unclosed = _sane_ranges(start, end, no_start, no_end, warnings)
    if len(row) == 0:
        warnings.extend(_gated_warning(conn))
    texts = _plain_texts(conn, cols, key) if "text" in cols and has_text.any() else {}
    domains = _domain_names(conn, tables, cols)
    strings = strings_for(conn, tables, text_id[keep])
    label, labels = _labels(keep, has_text, tid & PID_MASK, domain_id, text_id, join, domains, strings, texts)
    payload = _read_payloads(conn, cols, key, join[keep]) if len(row) else np.zeros(0)
    style = np.isin(etype, START_END_TYPES).astype(np.int8)
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
    name_ranges(ranges, labels)
    return ranges, labels, strings, warnings


def name_ranges(ranges: Ranges, labels: list[tuple[str, str]]) -> None:
    """Fill the per-range name and domain columns from the labels."""
    if labels:
        ranges.name = np.array([n for _, n in labels], dtype=object)[ranges.label]
        ranges.domain = np.array([d for d, _ in labels], dtype=object)[ranges.label]


def _nvtx_columns(conn: sqlite3.Connection, tables: frozenset[str]) -> set[str]:
    if NVTX_TABLE not in tables:
        raise NvtxsimError(
            "export has no NVTX_EVENTS table: the program emitted no NVTX ranges, or nsys ran without '-t nvtx'"
        )
    cols = columns_of(conn, NVTX_TABLE)
    missing = {"start", "end", "eventType", "globalTid"} - cols
    if missing or not ({"text", "textId"} & cols):
        need = sorted(missing | ({"textId"} if not ({"text", "textId"} & cols) else set()))
        raise NvtxsimError(f"unsupported export: NVTX_EVENTS lacks column(s) {', '.join(need)}")
    return cols


_TYPES = ",".join(str(t) for t in RANGE_TYPES)


def rowid_name(cols: set[str]) -> str | None:
    """A name that reaches the table's true rowid (a real column called ``rowid`` hides it), None if all are taken."""
    taken = {c.lower() for c in cols}
    return next((n for n in ROWID_NAMES if n not in taken), None)


def _unique(a: np.ndarray) -> bool:
    s = np.sort(a)
    return bool(len(s) < 2 or (s[1:] != s[:-1]).all())


def _range_rows(
    conn: sqlite3.Connection, cols: set[str], warnings: list[str]
) -> tuple[str, list[np.ndarray], np.ndarray]:
    """The SQL key that joins texts and payloads, the eleven integer columns of the range rows, and the join key per row.

    Ranges are identified by ``eventId`` (nsys's RangeId) where the table has it, else by rowid;
    unclosed ranges end at the largest timestamp (nsys rule)."""
    rid = rowid_name(cols)
    ids = "ifnull(eventId,-1)" if "eventId" in cols else rid
    if ids is None:
        raise NvtxsimError(
            "unsupported export: NVTX_EVENTS has real columns named rowid, _rowid_ and oid, and no eventId"
        )
    both = rid is not None and ids != rid  # eventId identifies ranges; the true rowid joins texts and payloads
    sane = f"BETWEEN {-MAX_ABS_NS} AND {MAX_ABS_NS}"
    mx = conn.execute(
        f"SELECT max(max(ifnull(start,0)), max(ifnull(end,0))) FROM {NVTX_TABLE} WHERE ifnull(start,0) {sane} AND ifnull(end,0) {sane}"
    ).fetchone()[0]
    max_ts = int(mx) if mx is not None else 0
    sql = (
        f"SELECT {ids}, ifnull(start,0), ifnull(end,0), start IS NULL, end IS NULL, eventType, ifnull(globalTid,0), "
        f"{'(endGlobalTid IS NOT NULL AND endGlobalTid != ifnull(globalTid,0))' if 'endGlobalTid' in cols else '0'}, "
        f"{'ifnull(textId,-1)' if 'textId' in cols else '-1'}, "
        f"{'ifnull(domainId,0)' if 'domainId' in cols else '0'}, "
        f"{'text IS NOT NULL' if 'text' in cols else '0'}{f', {rid}' if both else ''} "
        f"FROM {NVTX_TABLE} WHERE eventType IN ({_TYPES})"
    )
    try:
        a = ints(conn, sql, 12 if both else 11)
    except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError) as exc:
        raise NvtxsimError(f"corrupt NVTX_EVENTS table ({exc})") from None
    out = [a[:, i] for i in range(11)]
    row = out[0]
    key, join = (str(rid), a[:, 11]) if both else (rid or "eventId", row)
    if "eventId" in cols and not _unique(row):  # names and payloads must never be matched to the wrong range
        if not both:
            raise NvtxsimError(
                "unsupported export: NVTX_EVENTS.eventId is not unique and the table has no rowid to tell its rows apart"
            )
        out[0] = join
        warnings.append(
            "NVTX_EVENTS.eventId is not unique (not an nsys export as written?): ranges are identified by rowid"
        )
    for i in (3, 4, 7, 10):  # no_start, no_end, cross_thread, has_text
        out[i] = out[i].astype(bool)
    out[2] = np.where(out[4], max_ts, out[2])
    return key, out, join


def _sane_ranges(
    start: np.ndarray, end: np.ndarray, no_start: np.ndarray, no_end: np.ndarray, warnings: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows to keep (a start, possible times, not reversed), the ends, and the unclosed flags."""
    if no_start.any():
        warnings.append(f"{int(no_start.sum())} range(s) without a start time ignored")
    unclosed = no_end & ~no_start
    wild = ~no_start & ((start < -MAX_ABS_NS) | (start > MAX_ABS_NS) | (end < -MAX_ABS_NS) | (end > MAX_ABS_NS))
    if wild.any():  # durations of such values overflow int64
        warnings.append(f"{int(wild.sum())} range(s) with impossible timestamps (beyond ±2^62 ns) ignored")
    reversed_ = (end < start) & ~no_start & ~wild
    if reversed_.any():
        warnings.append(f"{int(reversed_.sum())} range(s) ending before they start ignored")
    return ~(no_start | reversed_ | wild), end, unclosed


def _gated_warning(conn: sqlite3.Connection) -> list[str]:
    kinds = {r[0] for r in conn.execute(f"SELECT DISTINCT eventType FROM {NVTX_TABLE}")}
    if kinds and kinds <= {DOMAIN_CREATE, DOMAIN_DESTROY}:
        return [
            "NVTX_EVENTS holds only domain create/destroy rows: if the program opened ranges, this nsys refused "
            "those of nvtx>=0.2.12; import nvtxsim before nvtx (it lifts the gate; or run `python -m nvtxsim run SCRIPT`), "
            "use a newer nsys, or pin nvtx<=0.2.11"
        ]
    return []


def _plain_texts(conn: sqlite3.Connection, cols: set[str], key: str) -> dict[int, str]:
    """Texts given as plain strings (torch.cuda.nvtx, NVTXT) instead of registered ones, per row key."""
    texts: dict[int, str] = {}
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        for r, t in conn.execute(
            f"SELECT {key}, text FROM {NVTX_TABLE} WHERE eventType IN ({_TYPES}) AND text IS NOT NULL"
        ):
            texts[int(r)] = t if isinstance(t, str) else str(t)
    finally:
        conn.text_factory = str
    return texts


def _domain_names(conn: sqlite3.Connection, tables: frozenset[str], cols: set[str]) -> dict[tuple[int, int], str]:
    """Domain names per (process, domainId), from the domain-create rows."""
    domains: dict[tuple[int, int], str] = {}
    if "domainId" not in cols:
        return domains
    has_text_id = "textId" in cols
    dsql = f"SELECT ifnull(globalTid,0), domainId, text{', textId' if has_text_id else ''} FROM {NVTX_TABLE} WHERE eventType = {DOMAIN_CREATE}"
    drows = conn.execute(dsql).fetchall()
    dstr_ids = np.array([r[3] for r in drows if len(r) > 3 and r[3] is not None], dtype=np.int64)
    dstrings = strings_for(conn, tables, dstr_ids)
    for r in drows:
        name = r[2] if r[2] is not None else dstrings.get(r[3], "") if len(r) > 3 and r[3] is not None else ""
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        domains.setdefault((int(r[0]) & int(PID_MASK), int(r[1] or 0)), str(name))
    return domains


def _labels(
    keep: np.ndarray,
    has_text: np.ndarray,
    pid_bits: np.ndarray,
    domain_id: np.ndarray,
    text_id: np.ndarray,
    join: np.ndarray,
    domains: dict[tuple[int, int], str],
    strings: dict[int, str],
    texts: dict[int, str],
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Label per row (``texts`` keyed by ``join``) and the unique (domain, name) pairs; vectorised over unique (pid, domain, textId) combinations."""
    label = np.zeros(len(join), dtype=np.int32)
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
        for i in np.nonzero(keep & has_text)[0]:
            d = int(domain_id[i])
            dom = domains.get((int(pid_bits[i]), d), "") if d else ""
            label[i] = intern(dom, texts.get(int(join[i]), ""))
    return label, labels


def _read_payloads(conn: sqlite3.Connection, cols: set[str], key: str, rows: np.ndarray) -> np.ndarray:
    """Scalar payloads as float64 (NaN where absent), aligned with ``rows``."""
    out = np.full(len(rows), np.nan)
    fields = [c for c in PAYLOAD_COLUMNS if c in cols]
    if not fields:
        return out
    expr = "coalesce(" + ",".join(fields) + ")" if len(fields) > 1 else fields[0]
    got = conn.execute(
        f"SELECT {key}, {expr} FROM {NVTX_TABLE} WHERE eventType IN ({_TYPES}) AND {expr} IS NOT NULL"
    ).fetchall()
    if got and len(rows):
        r = np.array([g[0] for g in got], dtype=np.int64)
        v = np.array([float(g[1]) if isinstance(g[1], (int, float)) else np.nan for g in got])
        order = np.argsort(rows, kind="stable")
        pos = np.clip(np.searchsorted(rows, r, sorter=order), 0, len(rows) - 1)
        hit = order[pos]
        match = rows[hit] == r
        out[hit[match]] = v[match]
    return out


# --------------------------------------------------------------------------- CUDA tables

#: Loaded columns of the CUDA tables, in the order the reader selects them.
API_FIELDS = ("start", "end", "global_tid", "correlation_id", "name_id")
GPU_FIELDS = ("start", "end", "global_pid", "correlation_id", "device_id", "stream_id", "bytes", "copy_kind", "name_id")


def api_expr(name: str, cols: set[str]) -> str:
    """SQL of one ApiCalls column (the same text in every backend: the page fast path recognises it)."""
    return {
        "start": "start",
        "end": "end",
        "global_tid": "globalTid",
        "correlation_id": "correlationId",
        "name_id": "ifnull(nameId,-1)" if "nameId" in cols else "-1",
    }[name]


def gpu_expr(name: str, kind: int, cols: set[str]) -> str:
    """SQL of one GpuOps column of the table of ``kind``."""
    return {
        "start": "start",
        "end": "end",
        "global_pid": "globalPid",
        "correlation_id": "correlationId",
        "device_id": "ifnull(deviceId,-1)" if "deviceId" in cols else "-1",
        "stream_id": "ifnull(streamId,-1)" if "streamId" in cols else "-1",
        "bytes": "ifnull(bytes,0)" if "bytes" in cols else "0",
        "copy_kind": "ifnull(copyKind,-1)" if "copyKind" in cols and kind == MEMCPY else "-1",
        "name_id": "ifnull(demangledName,-1)" if "demangledName" in cols and kind == KERNEL else "-1",
    }[name]


def api_sql(names: Sequence[str], cols: set[str]) -> str:
    return f"SELECT {', '.join(api_expr(n, cols) for n in names)} FROM {RUNTIME_TABLE} WHERE {API_WHERE}"


def gpu_sql(names: Sequence[str], kind: int, table: str, cols: set[str]) -> str:
    return f"SELECT {', '.join(gpu_expr(n, kind, cols) for n in names)} FROM {table} WHERE {GPU_WHERE}"


def api_columns(conn: sqlite3.Connection, tables: frozenset[str]) -> set[str] | None:
    """Columns of the runtime table, or None when it is absent or unusable."""
    if RUNTIME_TABLE not in tables:
        return None
    cols = columns_of(conn, RUNTIME_TABLE)
    return cols if API_REQUIRED <= cols else None


def gpu_tables(conn: sqlite3.Connection, tables: frozenset[str]) -> list[tuple[int, str, set[str]]]:
    """(kind, table, columns) of the usable GPU tables, in load order."""
    out = []
    for kind, table in GPU_TABLES.items():
        if table in tables:
            cols = columns_of(conn, table)
            if GPU_REQUIRED <= cols:
                out.append((kind, table, cols))
    return out


def read_api(conn: sqlite3.Connection, tables: frozenset[str]) -> ApiCalls | None:
    cols = api_columns(conn, tables)
    if cols is None:
        return None
    a = ints(conn, api_sql(API_FIELDS, cols), len(API_FIELDS))
    return ApiCalls(*(a[:, i].copy() for i in range(len(API_FIELDS))))


def sane_bytes(values: np.ndarray) -> np.ndarray:
    """Byte counts with the impossible ones (negative, or past :data:`~nvtxsim.schema.MAX_BYTES`) as 0 (every
    backend reads them through this; :func:`wild_bytes_warning` says how many)."""
    bad = (values < 0) | (values > MAX_BYTES)
    return np.where(bad, 0, values) if bad.any() else values


def wild_bytes_warning(conn: sqlite3.Connection, tables: frozenset[str]) -> list[str]:
    """The warning for rows whose byte count is impossible (counted as 0), whichever backend reads them."""
    n = 0
    for table in [*GPU_TABLES.values(), MEMORY_TABLE]:
        if table in tables and "bytes" in columns_of(conn, table):
            n += conn.execute(
                f"SELECT count(*) FROM {table} WHERE bytes IS NOT NULL AND NOT ({SANE_BYTES})"
            ).fetchone()[0]
    return (
        [f"{n} GPU operation(s) with impossible byte counts (negative or beyond 256 GiB) counted as 0 bytes"]
        if n
        else []
    )


def read_gpu(conn: sqlite3.Connection, tables: frozenset[str]) -> GpuOps | None:
    parts = [
        (kind, ints(conn, gpu_sql(GPU_FIELDS, kind, table, cols), len(GPU_FIELDS)))
        for kind, table, cols in gpu_tables(conn, tables)
    ]
    if not parts:
        return None
    a = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    kind = np.concatenate([np.full(len(p[1]), p[0], dtype=np.int8) for p in parts])
    got = {name: a[:, i].copy() for i, name in enumerate(GPU_FIELDS)}
    got["copy_kind"] = got["copy_kind"].astype(np.int16)
    got["bytes"] = sane_bytes(got["bytes"])
    return GpuOps(kind=kind, **got)


def capture_end(conn: sqlite3.Connection, tables: frozenset[str]) -> int | None:
    if ANALYSIS_TABLE in tables and "duration" in columns_of(conn, ANALYSIS_TABLE):
        row = conn.execute(f"SELECT max(duration) FROM {ANALYSIS_TABLE}").fetchone()
        if row and row[0] is not None:
            return int(row[0])
    return None


def flag_open_at_capture_end(ranges: Ranges, end: int | None) -> None:
    """nsys 2022.4 writes a range still open when the capture stops (program killed or exited
    inside it) with ``end`` = capture end (``ANALYSIS_DETAILS.duration``), not NULL: flag those too."""
    if end is not None and len(ranges):
        ranges.unclosed |= ranges.end >= end


def _mark_text(conn: sqlite3.Connection, tables: frozenset[str], op: str) -> tuple[str, str] | None:
    """``(column text, where clause)`` over the marks whose text matches ``op ?`` (``= ?``, ``LIKE ?``), or None."""
    if NVTX_TABLE not in tables:
        return None
    cols = columns_of(conn, NVTX_TABLE)
    strings = "textId" in cols and STRINGS_TABLE in tables
    text = "text" if "text" in cols else ""
    if strings:
        by_id = f"(SELECT value FROM {STRINGS_TABLE} WHERE id = textId)"
        text = f"COALESCE(text, {by_id})" if text else by_id
    if not text:
        return None
    return text, f"eventType = {MARK} AND {text} {op} ?"


def trigger_note(conn: sqlite3.Connection, tables: frozenset[str]) -> str | None:
    """The mark a live trigger placed inside the capture window it opened (which rule, which iteration), or None."""
    found = _mark_text(conn, tables, "LIKE")
    if found is None:
        return None
    text, where = found
    row = conn.execute(f"SELECT {text} FROM {NVTX_TABLE} WHERE {where} LIMIT 1", [TRIGGER_MARK + "%"]).fetchone()
    return str(row[0])[len(TRIGGER_MARK) :] if row and row[0] else None


def unmatched_pop_warning(conn: sqlite3.Connection, tables: frozenset[str]) -> list[str]:
    found = _mark_text(conn, tables, "=")
    if found is None:
        return []
    n = conn.execute(f"SELECT count(*) FROM {NVTX_TABLE} WHERE {found[1]}", [UNMATCHED_POP_MARK]).fetchone()[0] or 0
    if not n:
        return []
    return [
        f"{n} unmatched range_pop() call(s) were ignored by nvtxsim (marks {UNMATCHED_POP_MARK!r}): a range_pop without its range_push on that thread"
    ]
