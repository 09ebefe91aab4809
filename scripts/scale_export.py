#!/usr/bin/env python3
"""Scale an Nsight Systems SQLite export ×N by replaying its activity rows.

Why: report speed has to be measured on exports with millions of kernels, and a real
capture that large takes far longer to record than to read. Replaying a real capture
keeps its shape (range nesting, launch density, op mix) while the row counts grow.

Copy k (k = 0 … N-1) of every replayed row is shifted by ``k × period`` on the time
axis (period = the span of the base rows plus a gap), so copies never overlap, and
gets fresh ids: correlation ids are shifted by ``k × (max correlation id + 1)`` in the
runtime table and in every GPU table alike (so each launch still joins to its ops,
per process), NVTX ``rangeId`` likewise, and row keys (the implicit ``rowid`` of
2022.4, the ``eventId`` primary key of newer exports) are assigned by SQLite.

Replayed tables: NVTX_EVENTS (ranges and marks only: domain, category and naming
rows stay single, as in a real capture), the CUPTI runtime, kernel, memcpy, memset,
synchronization and graph-trace tables and CUDA_GRAPH_* events (``--also OSRT_API``
adds more). Every other table (StringIds, ThreadNames, PROCESSES, TARGET_INFO_*,
metadata, OS runtime calls) is copied once,
so ``nsys stats`` and ``nvtxsim report`` both read the result. ANALYSIS_DETAILS
gets the longer capture duration.

Everything is bulk SQL (``INSERT INTO t SELECT … FROM src.t CROSS JOIN copies``):
SQLite streams the rows, memory stays bounded whatever N is. The source export is
opened read-only and never modified; ``.sqlite.gz`` sources are inflated first.

    python scripts/scale_export.py demo.sqlite.gz demo_x100.sqlite --times 100
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

# Tables whose rows are replayed N times. Time columns are shifted; id columns get fresh values.
REPLAYED = (
    "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "CUDA_GRAPH_EVENTS",
    "CUDA_GRAPH_NODE_EVENTS",
)
TIME_COLUMNS = ("start", "end", "timestamp")
CORRELATED = ("correlationId",)  # shared between runtime calls and GPU rows: one stride for all tables
# NVTX rows that are replayed: marks and ranges (push/pop, start/end, and their NVTXT forms).
NVTX_REPLAYED_TYPES = (34, 59, 60, 70, 71)
MAX_ID = (1 << 31) - 1  # CUPTI correlation ids are 32-bit; stay clear of the sign bit


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[tuple[str, bool]]:
    """(name, is INTEGER PRIMARY KEY) for each column."""
    rows = conn.execute(f'PRAGMA {schema}.table_info("{table}")').fetchall()
    pk = [r for r in rows if r[5]]
    return [(r[1], len(pk) == 1 and r[5] == 1 and (r[2] or "").upper() == "INTEGER") for r in rows]


def _tables(conn: sqlite3.Connection, schema: str) -> set[str]:
    return {r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type='table'")}


def _scalar(conn: sqlite3.Connection, sql: str) -> int | None:
    v = conn.execute(sql).fetchone()[0]
    return None if v is None else int(v)


def scale(src: Path, dst: Path, times: int, *, gap_ns: int = 1000, also: tuple[str, ...] = ()) -> dict:
    """Write ``dst``: ``src`` with its activity rows replayed ``times`` times. Returns row counts."""
    if times < 1:
        raise ValueError("--times must be >= 1")
    t0 = time.perf_counter()
    shutil.copyfile(src, dst)  # copy 0: the export itself, every table and any index
    conn = sqlite3.connect(dst, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")  # a scratch file: no journal, no fsync
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")  # 256 MiB page cache for the writer
    uri = "file:" + urllib.parse.quote(str(src.resolve())) + "?mode=ro&immutable=1"
    conn.execute("ATTACH DATABASE ? AS src", (uri,))
    present = [t for t in REPLAYED + tuple(also) if t in _tables(conn, "src")]
    cols = {t: _columns(conn, "src", t) for t in present}

    # Period: span of all replayed time columns, plus a gap.
    lo, hi = None, None
    for t in present:
        for c, _ in cols[t]:
            if c in TIME_COLUMNS:
                a = _scalar(conn, f'SELECT min("{c}") FROM src."{t}"')
                b = _scalar(conn, f'SELECT max("{c}") FROM src."{t}"')
                lo = a if lo is None or (a is not None and a < lo) else lo
                hi = b if hi is None or (b is not None and b > hi) else hi
    if lo is None or hi is None:
        raise SystemExit(f"{src}: no timestamped activity rows to replay")
    period = hi - min(lo, 0) + gap_ns
    corr_stride = (
        1
        + max(
            (_scalar(conn, f'SELECT max("correlationId") FROM src."{t}"') or 0)
            for t in present
            if "correlationId" in dict(cols[t])
        )
        if any("correlationId" in dict(cols[t]) for t in present)
        else 0
    )
    range_stride = (
        1 + (_scalar(conn, "SELECT max(rangeId) FROM src.NVTX_EVENTS") or 0)
        if "NVTX_EVENTS" in present and "rangeId" in dict(cols["NVTX_EVENTS"])
        else 0
    )
    if corr_stride * times > MAX_ID:
        raise SystemExit(f"--times {times} would push correlation ids past 2^31 (base max {corr_stride - 1})")

    conn.execute("CREATE TEMP TABLE copies (k INTEGER PRIMARY KEY)")
    conn.executemany("INSERT INTO temp.copies VALUES (?)", [(k,) for k in range(1, times)])
    counts: dict[str, int] = {}
    conn.execute("BEGIN")
    for t in present:
        names, exprs = [], []
        for c, is_key in cols[t]:
            if is_key:
                continue  # eventId etc.: SQLite assigns fresh keys
            q = f'"{c}"'
            if c in TIME_COLUMNS:
                e = f"s.{q} + k.k * {period}"
            elif c in CORRELATED:
                e = f"s.{q} + k.k * {corr_stride}"
            elif c == "rangeId" and t == "NVTX_EVENTS":
                e = f"s.{q} + k.k * {range_stride}"
            else:
                e = f"s.{q}"
            names.append(q)
            exprs.append(e)
        where = ""
        if t == "NVTX_EVENTS":
            where = f" WHERE s.eventType IN ({','.join(map(str, NVTX_REPLAYED_TYPES))})"
        # CROSS JOIN keeps `copies` as the outer loop: rows come out copy by copy, in time order.
        conn.execute(
            f'INSERT INTO main."{t}" ({", ".join(names)}) SELECT {", ".join(exprs)} '
            f'FROM temp.copies AS k CROSS JOIN src."{t}" AS s{where} ORDER BY k.k'
        )
        counts[t] = _scalar(conn, f'SELECT count(*) FROM main."{t}"') or 0
    if "ANALYSIS_DETAILS" in _tables(conn, "main"):
        acols = dict(_columns(conn, "main", "ANALYSIS_DETAILS"))
        sets = [f"{c} = {c} + {(times - 1) * period}" for c in ("duration", "stopTime") if c in acols]
        if sets:
            conn.execute(f"UPDATE main.ANALYSIS_DETAILS SET {', '.join(sets)}")
    conn.commit()
    conn.execute("DETACH DATABASE src")
    conn.close()
    counts["seconds"] = round(time.perf_counter() - t0, 2)
    counts["period_ns"] = period
    return counts


def _inflate(src: Path, tmp: str) -> Path:
    out = Path(tmp) / src.name[: -len(".gz")]
    with gzip.open(src) as a, open(out, "wb") as b:
        shutil.copyfileobj(a, b, 1 << 20)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path, help="export to replay (.sqlite or .sqlite.gz); never modified")
    ap.add_argument("dst", type=Path, help="scaled export to write (.sqlite)")
    ap.add_argument("--times", "-n", type=int, required=True, help="number of copies (1 = plain copy)")
    ap.add_argument("--gap-ns", type=int, default=1000, help="idle time between copies (default 1000 ns)")
    ap.add_argument(
        "--also", action="append", default=[], metavar="TABLE", help="replay this table too (e.g. OSRT_API)"
    )
    ap.add_argument("--force", action="store_true", help="overwrite dst if it exists")
    args = ap.parse_args(argv)
    if args.dst.exists() and not args.force:
        print(f"scale_export: {args.dst} exists (use --force)", file=sys.stderr)
        return 2
    if args.dst.resolve() == args.src.resolve():
        print("scale_export: dst must differ from src", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="scale-", dir=args.dst.parent) as tmp:
        src = _inflate(args.src, tmp) if args.src.suffix == ".gz" else args.src
        part = Path(tmp) / args.dst.name
        counts = scale(src, part, args.times, gap_ns=args.gap_ns, also=tuple(args.also))
        os.replace(part, args.dst)
    print(f"{args.dst}: ×{args.times} " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
