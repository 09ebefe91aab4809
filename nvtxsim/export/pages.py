"""Read integer columns of an SQLite table straight from its b-tree pages, vectorised with numpy.

Why: ``sqlite3`` hands every value to Python as an object, which costs ~200 ns a value;
an export with 10M kernels and 20M CUDA calls holds ~10^8 values. Parsing the file's
pages with numpy (cells, varints and big-endian integers, a batch of pages at a time)
is 5-10× faster and allocates only the requested columns.

This reader is a fast path, not a second SQLite: it handles plain rowid tables whose
requested columns hold integers or NULL, in a database that is not in WAL mode. On
anything else (WITHOUT ROWID, overflow pages, REAL/TEXT values in a requested column,
short records from ALTER TABLE, a page that does not look like a table b-tree page)
it raises :class:`Unsupported` and the caller reads through ``sqlite3`` instead, which
also reports real corruption properly. Pages are read with ``pread`` into a reusable
buffer (no mmap), so resident memory stays at one batch of pages plus the output.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

_MAGIC = b"SQLite format 3\x00"
_BATCH_BYTES = 4 << 20  # pages parsed at once (per thread)
_MAX_DEPTH = 24

# Serial type → payload size, for one-byte serial types (0..127). Text/blob (>= 12) sizes are
# computed; 10 and 11 are reserved (invalid).
_SIZE = np.zeros(256, dtype=np.int64)
_SIZE[:12] = [0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1]
_t = np.arange(12, 256)
_SIZE[12:] = np.where(_t % 2 == 0, (_t - 12) // 2, (_t - 13) // 2)
del _t


def _threads() -> int:
    """Parser threads: NVTXSIM_THREADS, else the usable cores (at most 8)."""
    try:
        n = int(os.environ.get("NVTXSIM_THREADS", "0"))
    except ValueError:
        n = 0
    if n <= 0:
        try:
            n = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n = os.cpu_count() or 1
    return max(1, min(n, 8))


_ARENA_SET = False


def _one_arena() -> None:
    """Let parser threads share glibc's main malloc arena: per-thread arenas keep hundreds of MB
    of freed numpy temporaries resident (seen: 746 vs 603 MB peak on a 56M-call export)."""
    global _ARENA_SET
    if _ARENA_SET:
        return
    _ARENA_SET = True
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 1)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


class Unsupported(Exception):
    """The fast path cannot read this table; read it through sqlite3 instead."""


@dataclass
class Column:
    values: np.ndarray  # int64 (0 where NULL)
    null: np.ndarray  # bool


@dataclass
class _Header:
    page_size: int
    usable: int
    pages: int


def _header(fd: int, size: int) -> _Header:
    head = os.pread(fd, 100, 0)
    if len(head) < 100 or not head.startswith(_MAGIC):
        raise Unsupported("not an SQLite file")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise Unsupported("bad page size")
    if head[18] == 2 or head[19] == 2:
        raise Unsupported("WAL database")
    if head[56:60] not in (b"\x00\x00\x00\x00", b"\x00\x00\x00\x01"):
        raise Unsupported("text encoding other than UTF-8")
    usable = page_size - head[20]
    if usable < 480:
        raise Unsupported("bad reserved size")
    return _Header(page_size, usable, size // page_size)


def _varint(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode SQLite varints at ``pos`` (vectorised): (value int64, length in bytes)."""
    b = buf[pos]
    val = (b & 0x7F).astype(np.int64)
    ln = np.ones(len(pos), dtype=np.int64)
    more = np.flatnonzero(b >= 0x80)
    k = 1
    while len(more):
        b = buf[pos[more] + k]
        if k < 8:
            val[more] = (val[more] << 7) | (b & 0x7F)
        else:  # the ninth byte contributes all 8 bits
            val[more] = (val[more] << 8) | b
        ln[more] += 1
        more = more[b >= 0x80] if k < 8 else more[:0]
        k += 1
    return val, ln


class TableReader:
    """Integer columns of rowid tables of one SQLite file (opened for reading only)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_RDONLY)
        try:
            self._size = os.fstat(self._fd).st_size
            self.h = _header(self._fd, self._size)
        except BaseException:
            os.close(self._fd)
            raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> TableReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ b-tree walk

    def _page(self, pgno: int) -> bytes:
        if not 1 <= pgno <= self.h.pages:
            raise Unsupported(f"page {pgno} out of range")
        data = os.pread(self._fd, self.h.page_size, (pgno - 1) * self.h.page_size)
        if len(data) != self.h.page_size:
            raise Unsupported("short read")
        return data

    def leaf_pages(self, root: int) -> np.ndarray:
        """Leaf page numbers of the table b-tree rooted at ``root``, in key (rowid) order."""
        level = [root]
        seen = 0
        for _ in range(_MAX_DEPTH):
            first = self._page(level[0])
            kind = first[100 if level[0] == 1 else 0]
            if kind == 0x0D:
                return np.asarray(level, dtype=np.int64)
            if kind != 0x05:
                raise Unsupported(f"page {level[0]} is not a table b-tree page")
            children: list[int] = []
            for pgno in level:
                page = first if pgno == level[0] else self._page(pgno)
                off = 100 if pgno == 1 else 0
                if page[off] != 0x05:
                    raise Unsupported("unbalanced b-tree")
                n = int.from_bytes(page[off + 3 : off + 5], "big")
                arr = np.frombuffer(page, dtype=np.uint8)
                ptr_pos = off + 12 + 2 * np.arange(n)
                if n and ptr_pos[-1] + 1 >= self.h.usable:
                    raise Unsupported("bad cell count")
                ptrs = (arr[ptr_pos].astype(np.int64) << 8) | arr[ptr_pos + 1]
                if n and (ptrs.max() + 4 > self.h.usable):
                    raise Unsupported("bad cell pointer")
                kids = (
                    (arr[ptrs].astype(np.int64) << 24)
                    | (arr[ptrs + 1].astype(np.int64) << 16)
                    | (arr[ptrs + 2].astype(np.int64) << 8)
                    | arr[ptrs + 3]
                )
                children.extend(kids.tolist())
                children.append(int.from_bytes(page[off + 8 : off + 12], "big"))
            seen += len(level)
            if seen + len(children) > self.h.pages:
                raise Unsupported("b-tree larger than the file")
            level = children
        raise Unsupported("b-tree too deep")

    # ------------------------------------------------------------------ leaves

    def _read_batch(self, pages: np.ndarray, buf: np.ndarray) -> np.ndarray:
        """Read ``pages`` (in order) into ``buf``; consecutive page numbers in one read each."""
        ps = self.h.page_size
        if pages.min() < 1 or pages.max() > self.h.pages:
            raise Unsupported("page out of range")
        view = buf.data  # memoryview(buf); numpy's stubs do not declare ndarray a Buffer
        breaks = np.flatnonzero(np.diff(pages) != 1) + 1
        starts = np.r_[0, breaks]
        ends = np.r_[breaks, len(pages)]
        for a, b in zip(starts.tolist(), ends.tolist()):
            want = (b - a) * ps
            got = os.preadv(self._fd, [view[a * ps : a * ps + want]], (int(pages[a]) - 1) * ps)
            if got != want:
                raise Unsupported("short read")
        return buf[: len(pages) * ps + 8]

    def read(
        self,
        root: int,
        ncols: int,
        wanted: Sequence[int],
        *,
        rowid_alias: int | None = None,
        presence: int | None = None,
    ) -> list[Column]:
        """Columns ``wanted`` (indices into the table's ``ncols`` columns; -1 = rowid) of every row, in rowid order.

        ``wanted[presence:]`` are only tested for NULL (any type allowed, values left 0)."""
        parts = list(self.batches(root, ncols, wanted, rowid_alias=rowid_alias, presence=presence))
        if not parts:
            return [Column(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)) for _ in wanted]
        if len(parts) == 1:
            return parts[0]
        return [
            Column(np.concatenate([p[j].values for p in parts]), np.concatenate([p[j].null for p in parts]))
            for j in range(len(wanted))
        ]

    def batches(
        self,
        root: int,
        ncols: int,
        wanted: Sequence[int],
        *,
        rowid_alias: int | None = None,
        presence: int | None = None,
        batch_bytes: int = _BATCH_BYTES,
        post: Callable[[list[Column]], Any] | None = None,
    ) -> Iterator[Any]:
        """Like :meth:`read`, one batch of leaf pages at a time (bounded memory for streaming).

        Batches are parsed by a few threads (numpy and pread release the GIL) and yielded in
        order; ``post`` (run in the worker too) turns a batch's columns into what is yielded."""
        leaves = self.leaf_pages(root)
        ps = self.h.page_size
        per_batch = max(1, batch_bytes // ps)
        need = max([c for c in wanted if c >= 0] + [-1]) + 1
        if need > ncols:
            raise Unsupported("column index beyond the table")
        chunks = [leaves[i : i + per_batch] for i in range(0, len(leaves), per_batch)]
        local = threading.local()

        def work(pages: np.ndarray) -> Any:
            buf = getattr(local, "buf", None)
            if buf is None or len(buf) < len(pages) * ps + 8:
                buf = local.buf = np.zeros(per_batch * ps + 8, dtype=np.uint8)
            cols = self._parse(pages, buf, ncols, need, wanted, rowid_alias, presence)
            return post(cols) if post is not None else cols

        threads = _threads()
        if threads > 1 and len(chunks) > 1:
            _one_arena()
        if threads <= 1 or len(chunks) <= 1:
            for pages in chunks:
                yield work(pages)
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="nvtxsim-pages") as pool:
            pending: deque = deque()
            todo = iter(chunks)
            try:
                for pages in itertools.islice(todo, 2 * threads):
                    pending.append(pool.submit(work, pages))
                while pending:
                    out = pending.popleft().result()
                    nxt = next(todo, None)
                    if nxt is not None:
                        pending.append(pool.submit(work, nxt))
                    yield out
            finally:
                for f in pending:
                    f.cancel()

    def _parse(self, pages, buf, ncols, need, wanted, rowid_alias, presence) -> list[Column]:
        ps, usable = self.h.page_size, self.h.usable
        max_local = usable - 35
        data = self._read_batch(pages, buf)
        k = len(pages)
        base = np.arange(k, dtype=np.int64) * ps
        if np.any(data[base] != 0x0D):
            raise Unsupported("not a leaf table page")
        ncell = (data[base + 3].astype(np.int64) << 8) | data[base + 4]
        total = int(ncell.sum())
        page_of = np.repeat(np.arange(k, dtype=np.int64), ncell)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(ncell) - ncell, ncell)
        pp = base[page_of] + 8 + 2 * within
        if total and int((8 + 2 * ncell).max()) > usable:
            raise Unsupported("bad cell count")
        ptr = (data[pp].astype(np.int64) << 8) | data[pp + 1]
        if total and (ptr.min() < 8 or ptr.max() >= usable):
            raise Unsupported("bad cell pointer")
        cell = base[page_of] + ptr
        # Bound every read inside the batch buffer: varints and values are taken from `data`.
        limit = len(data) - 9
        payload, l1 = _varint(data, np.minimum(cell, limit))
        if total and payload.max() > max_local:
            raise Unsupported("overflow pages")
        rowid, l2 = _varint(data, np.minimum(cell + l1, limit))
        rec = cell + l1 + l2
        hsize, l3 = _varint(data, np.minimum(rec, limit))
        if total and (np.any(hsize < l3) or np.any(hsize > payload) or np.any(ptr + l1 + l2 + payload > usable)):
            raise Unsupported("malformed record")
        return self._columns(data, rec, hsize, l3, ncols, need, wanted, rowid, rowid_alias, limit, presence)

    @staticmethod
    def _columns(data, rec, hsize, l3, ncols, need, wanted, rowid, rowid_alias, limit, presence=None) -> list[Column]:
        n = len(rec)
        count = hsize - l3  # bytes of serial types
        pos = rec + l3  # serial type of column 0
        # Serial type and body offset of each needed column, column by column (1-D gathers only).
        # Fast path: one-byte serial types (integers, NULLs, short text) and exactly ncols of them.
        one_byte = bool(n) and bool(np.all(count == ncols))
        types: dict[int, np.ndarray] = {}
        offs: dict[int, np.ndarray] = {}
        off = rec + hsize
        wanted_set = set(wanted)
        for c in range(need):
            if one_byte:
                t = data[pos + c]  # uint8
                if n and t.max() >= 0x80:
                    one_byte = False
                    pos = pos + c  # continue with varints from here
            if not one_byte:
                if n and np.any(pos > rec + hsize - 1):
                    raise Unsupported("short records (columns added by ALTER TABLE)")
                t, ln = _varint(data, np.minimum(pos, limit))
                pos = pos + ln
                if n and t.max() > 255:
                    size = np.where(t % 2 == 0, (t - 12) // 2, (t - 13) // 2)
                    size[t < 12] = _SIZE[t[t < 12]]
                else:
                    size = _SIZE[t]
            else:
                size = _SIZE[t]
            if n and size.min() < 0:
                raise Unsupported("reserved serial type")
            if c in wanted_set:
                types[c], offs[c] = t, off
            off = off + size
        # Overlapping int64 windows over the buffer: one gather per column, then big-endian → native.
        win = np.ndarray(shape=(len(data) - 7,), dtype="<i8", buffer=data, strides=(1,))
        out = []
        for j, c in enumerate(wanted):
            if presence is not None and j >= presence:
                out.append(Column(np.zeros(n, dtype=np.int64), types[c] == 0))
                continue
            if c < 0:
                out.append(Column(rowid.copy(), np.zeros(n, dtype=bool)))
                continue
            t = types[c].astype(np.int64)
            if c == rowid_alias and not np.any(t):  # INTEGER PRIMARY KEY: stored as NULL, value is the rowid
                out.append(Column(rowid.copy(), np.zeros(n, dtype=bool)))
                continue
            if np.any((t == 7) | (t >= 12)):
                raise Unsupported("non-integer value in an integer column")
            sz = _SIZE[t]
            v = win[np.minimum(offs[c], limit)].byteswap() >> (8 * (8 - np.maximum(sz, 1)))
            small = sz == 0
            if small.any():
                v[small] = t[small] == 9
            out.append(Column(v, t == 0))
        return out


# --------------------------------------------------------------------------- schema helpers

_WITHOUT_ROWID = re.compile(r"\)\s*WITHOUT\s+ROWID\s*;?\s*$", re.IGNORECASE)


def table_layout(conn, table: str) -> tuple[int, list[str], int | None]:
    """(root page, column names in order, index of the INTEGER PRIMARY KEY column or None)."""
    row = conn.execute("SELECT rootpage, sql FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()
    if row is None or not row[0] or row[1] is None:
        raise Unsupported(f"{table}: not a plain table")
    if _WITHOUT_ROWID.search(row[1]):
        raise Unsupported(f"{table}: WITHOUT ROWID")
    info = table_info(conn, table)
    names = [r[1] for r in info]
    pks = [r for r in info if r[5]]
    alias = None
    if len(pks) == 1 and (pks[0][2] or "").upper() == "INTEGER":
        alias = int(pks[0][0])
    return int(row[0]), names, alias


def table_info(conn, table: str) -> list[tuple]:
    """SQLite's rows describing ``table``'s columns: (cid, name, declared type, notnull, default, pk)."""
    return conn.execute(f'PRAGMA table_info("{table}")').fetchall()


def database_file(conn) -> str | None:
    """Path of the main database file behind ``conn`` (None for in-memory/temporary databases)."""
    try:
        for _, name, file in conn.execute("PRAGMA database_list"):
            if name == "main":
                return file or None
    except Exception:
        return None
    return None


ROWID_NAMES = ("rowid", "_rowid_", "oid")


def read_columns(conn, table: str, names: Sequence[str], *, presence: Sequence[str] = ()) -> dict[str, Column] | None:
    """Integer columns ``names`` ("rowid" allowed) and NULL-ness of ``presence`` columns of ``table``.

    Returns None when the fast path does not apply; the caller then runs its SQL query.
    Values of ``presence`` columns are not decoded (any type); only their ``null`` mask is set.
    """
    parts = []
    try:
        for got in iter_columns(conn, table, names, presence=presence):
            parts.append(got)
    except (Unsupported, KeyError, OSError, ValueError, IndexError, MemoryError):
        return None
    keys = list(names) + list(presence)
    if not parts:
        return {k: Column(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)) for k in keys}
    return {
        k: Column(np.concatenate([p[k].values for p in parts]), np.concatenate([p[k].null for p in parts]))
        for k in keys
    }


def iter_columns(
    conn,
    table: str,
    names: Sequence[str],
    *,
    presence: Sequence[str] = (),
    batch_bytes: int = _BATCH_BYTES,
    post: Callable | None = None,
) -> Iterator[Any]:
    """Batches of :func:`read_columns` (raises :class:`Unsupported` where the fast path does not apply)."""
    path = database_file(conn)
    if path is None:
        raise Unsupported("no database file")
    root, cols, alias = table_layout(conn, table)
    index = {c.lower(): i for i, c in enumerate(cols)}  # SQLite names are case-insensitive
    # rowid/_rowid_/oid reach the true rowid only when no real column has that name (as in SQL).
    wanted = [index[n.lower()] if n.lower() in index or n.lower() not in ROWID_NAMES else -1 for n in names]
    present = [index[n.lower()] for n in presence]
    keys = list(names) + list(presence)
    with TableReader(path) as reader:
        yield from reader.batches(
            root,
            len(cols),
            wanted + present,
            rowid_alias=alias,
            presence=len(wanted),
            batch_bytes=batch_bytes,
            post=lambda got: post(dict(zip(keys, got))) if post is not None else dict(zip(keys, got)),
        )


# --------------------------------------------------------------------------- the loader's queries

_ID = r'"?([A-Za-z_][A-Za-z0-9_]*)"?'
_INT = r"(-?\d+)"
_EXPRS = [
    ("const", re.compile(rf"^{_INT}$")),
    ("col", re.compile(rf"^{_ID}$")),
    ("ifnull", re.compile(rf"^ifnull\(\s*{_ID}\s*,\s*{_INT}\s*\)$", re.IGNORECASE)),
    ("isnull", re.compile(rf"^{_ID}\s+IS\s+NULL$", re.IGNORECASE)),
    ("notnull", re.compile(rf"^{_ID}\s+IS\s+NOT\s+NULL$", re.IGNORECASE)),
    # (a IS NOT NULL AND a != ifnull(b, d)): a start/end range that ended on another thread
    (
        "differs",
        re.compile(
            rf"^\(\s*{_ID}\s+IS\s+NOT\s+NULL\s+AND\s+{_ID}\s*!=\s*ifnull\(\s*{_ID}\s*,\s*{_INT}\s*\)\s*\)$",
            re.IGNORECASE,
        ),
    ),
]
_SELECT = re.compile(rf"^\s*SELECT\s+(.*?)\s+FROM\s+{_ID}(?:\s+WHERE\s+(.*?))?\s*$", re.IGNORECASE | re.DOTALL)
_OPERAND = rf"(?:{_ID}|{_INT})"
_WHERE_TERMS = [
    ("notnull", re.compile(rf"^{_ID}\s+IS\s+NOT\s+NULL", re.IGNORECASE)),
    ("in", re.compile(rf"^{_ID}\s+IN\s*\(\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*\)", re.IGNORECASE)),
    ("between", re.compile(rf"^{_ID}\s+BETWEEN\s+{_INT}\s+AND\s+{_INT}", re.IGNORECASE)),
    ("cmp", re.compile(rf"^{_OPERAND}\s*(>=|<=|!=|<>|=|<|>)\s*{_OPERAND}", re.IGNORECASE)),
]
_AND = re.compile(r"^\s+AND\s+", re.IGNORECASE)


def _where_terms(where: str) -> list[tuple] | None:
    """``a IS NOT NULL``, ``a IN (..)``, ``a BETWEEN k AND k``, ``a >= b`` terms joined by AND; None otherwise."""
    terms, rest = [], where.strip()
    while rest:
        for kind, rx in _WHERE_TERMS:
            m = rx.match(rest)
            if m:
                terms.append((kind, m.groups()))
                rest = rest[m.end() :]
                break
        else:
            return None
        if rest:
            m = _AND.match(rest)
            if not m:
                return None
            rest = rest[m.end() :]
    return terms


_OPS = {
    ">=": np.greater_equal,
    "<=": np.less_equal,
    ">": np.greater,
    "<": np.less,
    "=": np.equal,
    "!=": np.not_equal,
    "<>": np.not_equal,
}


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside parentheses."""
    out: list[str] = []
    cur: list[str] = []
    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if depth == 0 and text.startswith(sep, i):
            out.append("".join(cur).strip())
            cur = []
            i += len(sep)
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur).strip())
    return out


class Select:
    """One of the loader's simple queries, compiled for evaluation over the file's pages.

    Understands ``SELECT`` lists of columns, integer constants, ``ifnull(c, k)``,
    ``c IS [NOT] NULL`` and the cross-thread test, over one table, with a ``WHERE`` of
    ``c IS NOT NULL`` / ``c IN (k, ...)`` / ``c BETWEEN k AND k`` / ``a >= b`` terms joined
    by AND. :meth:`compile` returns None for anything else.
    """

    def __init__(self, table: str, parsed: list, filters: list, ints: list[str], nulls_only: list[str]) -> None:
        self.table, self.parsed, self.filters, self.ints, self.nulls_only = table, parsed, filters, ints, nulls_only

    @classmethod
    def compile(cls, sql: str, ncols: int) -> Select | None:
        m = _SELECT.match(" ".join(sql.split()))
        if not m:
            return None
        exprs = _split_top(m.group(1), ",")
        if len(exprs) != ncols:
            return None
        table, where = m.group(2), m.group(3)
        parsed = []
        for e in exprs:
            for kind, rx in _EXPRS:
                mm = rx.match(e)
                if mm:
                    parsed.append((kind, mm.groups()))
                    break
            else:
                return None
        filters = _where_terms(where) if where else []
        if filters is None:
            return None
        needed: list[str] = []
        for kind, g in parsed:
            if kind == "differs" and g[0] != g[1]:
                return None
            needed += [] if kind == "const" else [g[0], g[2]] if kind == "differs" else [g[0]]
        for kind, g in filters:
            needed += [
                x for x in (g if kind == "cmp" else g[:1]) if x is not None and not re.fullmatch(r"-?\d+|[<>=!]+", x)
            ]
        ints = [n for n in dict.fromkeys(needed) if n.lower() not in ("text", "jsontext", "binarydata")]
        nulls_only = [n for n in dict.fromkeys(needed) if n not in ints]
        # Text columns may only be tested for NULL.
        for kind, g in parsed:
            if kind not in ("isnull", "notnull", "const") and any(n in nulls_only for n in g):
                return None
        if any(kind != "notnull" and any(x in nulls_only for x in g if x) for kind, g in filters):
            return None
        return cls(table, parsed, filters, ints, nulls_only)

    def batches(self, conn, *, batch_bytes: int = _BATCH_BYTES) -> Iterator[np.ndarray]:
        """(n, ncols) int64 results, one page batch at a time. Raises :class:`Unsupported`."""
        names = list(self.ints)
        yield from iter_columns(
            conn, self.table, names, presence=self.nulls_only, batch_bytes=batch_bytes, post=self._evaluate
        )

    def _evaluate(self, got: dict[str, Column]) -> np.ndarray:
        n = len(next(iter(got.values())).null) if got else 0
        keep = np.ones(n, dtype=bool)
        for kind, g in self.filters:  # SQL: a comparison with NULL is not true, so NULL rows drop out
            if kind == "cmp":
                (ca, ka, op, cb, kb) = g
                a_null, a = (got[ca].null, got[ca].values) if ca else (False, int(ka))
                b_null, b = (got[cb].null, got[cb].values) if cb else (False, int(kb))
                keep &= ~(a_null | b_null) & _OPS[op](a, b)
                continue
            col = got[g[0]]
            if kind == "notnull":
                keep &= ~col.null
            elif kind == "in":
                keep &= ~col.null & np.isin(col.values, [int(x) for x in g[1].split(",")])
            else:  # between
                keep &= ~col.null & (col.values >= int(g[1])) & (col.values <= int(g[2]))
        out = np.empty((int(keep.sum()), len(self.parsed)), dtype=np.int64)
        for j, (kind, g) in enumerate(self.parsed):
            if kind == "const":
                out[:, j] = int(g[0])
                continue
            col = got[g[0]]
            if kind == "col":
                if col.null[keep].any():
                    raise Unsupported("NULL in a plain column")  # SQL would return NULL: let the caller see it
                out[:, j] = col.values[keep]
            elif kind == "ifnull":
                out[:, j] = np.where(col.null, int(g[1]), col.values)[keep]
            elif kind == "isnull":
                out[:, j] = col.null[keep]
            elif kind == "notnull":
                out[:, j] = ~col.null[keep]
            else:  # differs: (a IS NOT NULL AND a != ifnull(b, d))
                other = got[g[2]]
                out[:, j] = (~col.null & (col.values != np.where(other.null, int(g[3]), other.values)))[keep]
        return out


def select_ints(conn, sql: str, ncols: int) -> np.ndarray | None:
    """The (n, ncols) int64 result of one of the loader's simple queries, computed from the pages;
    None where the fast path does not apply (the caller then runs the SQL)."""
    plan = Select.compile(sql, ncols)
    if plan is None:
        return None
    try:
        parts = list(plan.batches(conn))
    except (Unsupported, KeyError, OSError, ValueError, IndexError, MemoryError):
        return None
    if not parts:
        return np.zeros((0, ncols), dtype=np.int64)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]
