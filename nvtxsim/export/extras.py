"""Side tables of an export that only the detailed report views need.

Read once by :func:`nvtxsim.export.reader.load` while the export is open, so views never
reopen (or re-inflate) the file: OS thread names, process names, GPU names,
graph-level CUDA graph executions (``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``, newer
nsys), whether kernels carry CUDA-graph node ids (``--cuda-graph-trace=node``),
GPU memory allocations and frees (``CUDA_GPU_MEMORY_USAGE_EVENTS``, nsys
``--cuda-memory-usage=true``) and the memory kinds of host↔device copies (pageable or
pinned, for the findings) and the OS runtime calls (``OSRT_API``, nsys ``-t osrt``: the OS-wait view).
Every table is optional; absent ones leave empty fields.
"""

from __future__ import annotations

import itertools
import sqlite3
from dataclasses import dataclass, field

import numpy as np

from nvtxsim.export.tables import as_text, columns_of
from nvtxsim.schema import (
    COPY_DTOH,
    COPY_HTOD,
    DEVICE_MEMORY_KINDS,
    GPU_INFO_TABLE,
    GRAPH_TABLE_PREFIX,
    GRAPH_TRACE_TABLE,
    MEMCPY_TABLE,
    MEMORY_ALLOC,
    MEMORY_FREE,
    MEMORY_TABLE,
    OSRT_CALL_CLASS,
    OSRT_REQUIRED,
    OSRT_TABLE,
    PAGEABLE,
    PINNED,
    PROCESSES_TABLE,
    SANE_BYTES,
    SANE_TIMES,
    STRINGS_TABLE,
    THREAD_NAMES_TABLE,
)


@dataclass
class GraphExecs:
    """Whole-graph executions traced graph-level: one row per graph launch on the GPU."""

    start: np.ndarray
    end: np.ndarray
    global_pid: np.ndarray
    correlation_id: np.ndarray
    device_id: np.ndarray
    stream_id: np.ndarray
    graph_id: np.ndarray

    def __len__(self) -> int:
        return len(self.start)


@dataclass(eq=False)  # numpy fields: compared by identity (an element-wise == has no truth value)
class HostCopies:
    """H→D and D→H memcpys with the memory kind of each side (0 pageable, 1 pinned, 2 device; -1 unknown).

    The loader's GPU columns leave the kinds out; only the findings need them, and host copies
    are few next to kernels, so they are read here once."""

    start: np.ndarray
    end: np.ndarray
    global_pid: np.ndarray
    correlation_id: np.ndarray
    bytes: np.ndarray
    copy_kind: np.ndarray  # 1 H→D, 2 D→H
    src_kind: np.ndarray
    dst_kind: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    @property
    def pageable(self) -> np.ndarray:
        return (self.src_kind == PAGEABLE) | (self.dst_kind == PAGEABLE)

    @property
    def pinned(self) -> np.ndarray:
        return ((self.src_kind == PINNED) | (self.dst_kind == PINNED)) & ~self.pageable


@dataclass
class MemoryEvents:
    """GPU allocations (+bytes) and frees (-bytes) in time order (``CUDA_GPU_MEMORY_USAGE_EVENTS``)."""

    start: np.ndarray
    global_pid: np.ndarray
    device_id: np.ndarray
    delta: np.ndarray  # signed bytes: + allocation, - free

    def __len__(self) -> int:
        return len(self.start)


@dataclass(eq=False)
class OsrtCalls:
    """Traced OS runtime calls (outermost ones: a call nested in another traced call is left out, so
    no time counts twice), with their function names."""

    start: np.ndarray
    end: np.ndarray
    global_tid: np.ndarray
    name_id: np.ndarray
    names: dict[int, str] = field(default_factory=dict)  # nameId → function name

    def __len__(self) -> int:
        return len(self.start)


@dataclass
class Extras:
    thread_names: dict[int, str] = field(default_factory=dict)  # globalTid → OS thread name
    process_names: dict[int, str] = field(default_factory=dict)  # globalPid → process name
    gpu_names: dict[int, str] = field(default_factory=dict)  # deviceId → GPU name
    graph_execs: GraphExecs | None = None  # graph-level executions, when traced that way
    graph_tables: tuple[str, ...] = ()  # CUDA graph tables present (CUDA_GRAPH_EVENTS, ...)
    memory: MemoryEvents | None = None  # GPU memory allocations/frees, when captured
    host_copies: HostCopies | None = None  # H→D / D→H memcpys with memory kinds, when the export has them
    osrt: OsrtCalls | None = None  # OS runtime calls, when traced (-t osrt) and readable
    osrt_problem: str = ""  # why the OS calls could not be read (table present but unusable); "" otherwise


def _names_by_id(conn: sqlite3.Connection, sql: str) -> dict[int, str]:
    """``sql`` yields (key, StringIds id or text): resolve ids through StringIds."""
    rows = conn.execute(sql).fetchall()
    ids = {int(r[1]) for r in rows if isinstance(r[1], int)}
    strings: dict[int, str] = {}
    if ids:
        for sid, value in conn.execute(f"SELECT id, value FROM {STRINGS_TABLE}"):
            if sid in ids:
                strings[int(sid)] = as_text(value)
    out: dict[int, str] = {}
    for key, v in rows:
        if key is None or v is None:
            continue
        out.setdefault(int(key), strings.get(int(v), "") if isinstance(v, int) else as_text(v))
    return out


def _read_memory(conn: sqlite3.Connection) -> MemoryEvents | None:
    """Allocations and frees of GPU memory; None when the table lacks the needed columns."""
    cols = columns_of(conn, MEMORY_TABLE)
    if not {"start", "bytes", "memoryOperationType"} <= cols:
        return None
    kinds = ", ".join(str(k) for k in DEVICE_MEMORY_KINDS)
    where = f" AND (memKind IS NULL OR memKind IN ({kinds}))" if "memKind" in cols else ""
    pid = "ifnull(globalPid,0)" if "globalPid" in cols else "0"
    dev = "ifnull(deviceId,-1)" if "deviceId" in cols else "-1"
    cur = conn.execute(
        f"SELECT start, {pid}, {dev}, CASE WHEN NOT ({SANE_BYTES}) THEN 0 WHEN memoryOperationType = {MEMORY_ALLOC} THEN bytes "
        f"WHEN memoryOperationType = {MEMORY_FREE} THEN -bytes ELSE 0 END "
        f"FROM {MEMORY_TABLE} WHERE start IS NOT NULL AND bytes IS NOT NULL{where} ORDER BY start"
    )
    a = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64).reshape(-1, 4)
    return MemoryEvents(*(a[:, i].copy() for i in range(4)))


def _host_copies(conn: sqlite3.Connection, tables: frozenset[str]) -> HostCopies | None:
    if MEMCPY_TABLE not in tables:
        return None
    cols = columns_of(conn, MEMCPY_TABLE)
    if not {"start", "end", "globalPid", "correlationId", "bytes", "copyKind", "srcKind", "dstKind"} <= cols:
        return None
    cur = conn.execute(
        f"SELECT start, end, globalPid, correlationId, CASE WHEN {SANE_BYTES} THEN bytes ELSE 0 END, copyKind, ifnull(srcKind,-1), ifnull(dstKind,-1) FROM {MEMCPY_TABLE} "
        f"WHERE copyKind IN ({COPY_HTOD}, {COPY_DTOH}) AND start IS NOT NULL AND end IS NOT NULL AND globalPid IS NOT NULL AND correlationId IS NOT NULL"
    )
    a = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64).reshape(-1, 8)
    return HostCopies(*(a[:, i].copy() for i in range(8)))


def _read_osrt(conn: sqlite3.Connection, tables: frozenset[str]) -> OsrtCalls | None:
    """The outermost traced OS calls of an export, in start order; None without the table."""
    if OSRT_TABLE not in tables:
        return None
    cols = columns_of(conn, OSRT_TABLE)
    if not OSRT_REQUIRED <= cols:
        raise ValueError(f"{OSRT_TABLE} lacks {', '.join(sorted(OSRT_REQUIRED - cols))}")
    where = [f"start IS NOT NULL AND end IS NOT NULL AND globalTid IS NOT NULL AND nameId IS NOT NULL AND {SANE_TIMES}"]
    if "eventClass" in cols:
        where.append(f"eventClass = {OSRT_CALL_CLASS}")
    if "nestingLevel" in cols:
        where.append("ifnull(nestingLevel, 0) = 0")
    cur = conn.execute(
        f"SELECT start, end, globalTid, nameId FROM {OSRT_TABLE} WHERE {' AND '.join(where)} ORDER BY start"
    )
    a = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64).reshape(-1, 4)
    calls = OsrtCalls(*(a[:, i].copy() for i in range(4)))
    wanted = set(np.unique(calls.name_id).tolist())
    if wanted and STRINGS_TABLE in tables:
        calls.names = {
            int(sid): as_text(v) for sid, v in conn.execute(f"SELECT id, value FROM {STRINGS_TABLE}") if sid in wanted
        }
    return calls


def read_extras(conn: sqlite3.Connection, tables: frozenset[str], *, cuda: bool = True) -> Extras:
    """Everything optional the detail views use; never fails on a missing or odd table."""
    ex = Extras()
    conn.text_factory = bytes  # names may hold bad UTF-8
    try:
        if (
            THREAD_NAMES_TABLE in tables
            and {"nameId", "globalTid"} <= columns_of(conn, THREAD_NAMES_TABLE)
            and STRINGS_TABLE in tables
        ):
            order = " ORDER BY priority DESC" if "priority" in columns_of(conn, THREAD_NAMES_TABLE) else ""
            ex.thread_names = _names_by_id(conn, f"SELECT globalTid, nameId FROM {THREAD_NAMES_TABLE}{order}")
        if PROCESSES_TABLE in tables and {"globalPid", "name"} <= columns_of(conn, PROCESSES_TABLE):
            ex.process_names = {
                int(k): as_text(v)
                for k, v in conn.execute(f"SELECT globalPid, name FROM {PROCESSES_TABLE}")
                if k is not None and v is not None
            }
        if GPU_INFO_TABLE in tables and {"id", "name"} <= columns_of(conn, GPU_INFO_TABLE):
            ex.gpu_names = {
                int(k): as_text(v)
                for k, v in conn.execute(f"SELECT id, name FROM {GPU_INFO_TABLE}")
                if k is not None and v is not None
            }
        try:
            ex.osrt = _read_osrt(conn, tables)
        except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError) as exc:
            ex.osrt_problem = f"{OSRT_TABLE} unreadable ({exc})"
        if not cuda:
            return ex
        ex.graph_tables = tuple(sorted(t for t in tables if t.startswith(GRAPH_TABLE_PREFIX)))
        if GRAPH_TRACE_TABLE in tables:
            cols = columns_of(conn, GRAPH_TRACE_TABLE)
            if {"start", "end", "globalPid", "correlationId"} <= cols:
                sel = ["start", "end", "globalPid", "correlationId"] + [
                    f"ifnull({c},-1)" if c in cols else "-1" for c in ("deviceId", "streamId", "graphId")
                ]
                cur = conn.execute(
                    f"SELECT {', '.join(sel)} FROM {GRAPH_TRACE_TABLE} WHERE start IS NOT NULL AND end IS NOT NULL "
                    "AND globalPid IS NOT NULL AND correlationId IS NOT NULL"
                )
                a = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64).reshape(-1, 7)
                ex.graph_execs = GraphExecs(*(a[:, i].copy() for i in range(7)))
        if MEMORY_TABLE in tables:
            ex.memory = _read_memory(conn)
        ex.host_copies = _host_copies(conn, tables)
    except (sqlite3.DatabaseError, ValueError, TypeError, OverflowError):
        pass  # side tables are best effort: the core report must still work
    finally:
        conn.text_factory = str
    return ex
