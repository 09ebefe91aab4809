"""Property tests: projection and per-phase statistics agree with a small, obviously-correct reference
on random range/op streams (hypothesis).

The streams are lists of small tuples (so failures shrink to a handful of rows) on a tiny time axis (so
ties and boundary cases are common): nested and overlapping ranges, push/pop and start/end, ranges ending
on another thread, unclosed ranges (end NULL, or end = capture end as nsys 2022.4 writes it), reversed
ranges, several processes whose correlation ids collide, CUDA calls that nest, GPU ops on several
streams that overlap, ops whose launch is missing. Each stream is written as a 2022.4-schema export and
read back through load → project → summarize.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synth import DDL, global_tid

from nvtxsim.analysis.projection import project, summarize
from nvtxsim.export.reader import load

pytestmark = pytest.mark.slow  # about 45 s of hypothesis examples: `-m 'not slow'` leaves it out locally; CI runs it

# Threads: (process, thread). Three processes so correlation ids collide.
THREADS = [(1000, 1000), (1000, 1001), (1001, 1001), (1001, 1002), (1002, 1002)]
NAMES = ["a", "b", "c", "päy|load"]
COPY = {1: "htod", 2: "dtoh", 8: "dtod"}

t = st.integers(0, 40)
dur = st.integers(0, 40)
thread = st.sampled_from([0, 0, 0, 2, 2, 1, 3, 4])  # mostly two threads of two processes: more attribution

# (thread, start, duration, name, domain 0/1, style 59/60, registered, fate)
fates = st.sampled_from(["closed"] * 6 + ["null_end", "capture_end", "reversed", "cross_thread"])
range_st = st.tuples(
    thread, t, dur, st.sampled_from(NAMES), st.integers(0, 1), st.sampled_from([59, 60]), st.booleans(), fates
)
# (thread, start, duration, reversed?)
call_st = st.tuples(thread, t, st.integers(0, 8), st.integers(0, 20).map(lambda x: x == 0))
# (call index (modulo the number of calls) or -1 for an orphan, kind, start offset, duration, stream, bytes, copy kind, reversed?)
op_st = st.tuples(
    st.integers(-1, 30),
    st.sampled_from(["k", "k", "m", "s"]),
    st.integers(0, 30),
    st.integers(0, 15),
    st.integers(1, 3),
    st.integers(1, 1000),
    st.sampled_from([1, 2, 8, 10, 3]),
    st.integers(0, 25).map(lambda x: x == 0),
)
stream_st = st.tuples(
    st.lists(range_st, min_size=1, max_size=25),
    st.lists(call_st, min_size=1, max_size=25),
    st.lists(op_st, min_size=1, max_size=40),
)


@dataclass
class Row:
    row: int
    start: int
    end: int | None  # as written
    tid: int
    end_tid: int | None
    name: str
    domain: str


def write_export(path: Path, stream) -> tuple[list[Row], list[dict], list[dict], int]:
    """Write the stream as an export; returns what was written (ranges, calls, ops, capture end)."""
    ranges, calls, ops = stream
    con = sqlite3.connect(path)
    con.executescript(DDL)
    strings = {n: i + 1 for i, n in enumerate(NAMES)}
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, n) for n, i in strings.items()])
    tids = [global_tid(p, q) for p, q in THREADS]
    for pid in sorted({p for p, _ in THREADS}):
        con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text, domainId) VALUES (0, NULL, 75, ?, 'nvtxsim', 1)",
            (global_tid(pid, pid),),
        )

    # Calls: correlation ids count per process from 1, so they collide across processes.
    next_corr: dict[int, int] = {}
    call_rows = []
    for th, start, d, rev in calls:
        pid = THREADS[th][0]
        corr = next_corr.get(pid, 1)
        next_corr[pid] = corr + 1
        end = start - 1 - d if rev else start + d
        call_rows.append({"start": start, "end": end, "tid": tids[th], "pid": pid, "corr": corr})
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES (?, ?, 0, ?, ?, 1, 0)",
        [(c["start"], c["end"], c["tid"], c["corr"]) for c in call_rows],
    )
    op_rows = []
    for ci, kind, off, d, stream, nbytes, ck, rev in ops:
        if ci >= 0 and call_rows:
            c = call_rows[ci % len(call_rows)]
            gpid, corr, base = global_tid(c["pid"], 0), c["corr"], c["start"]
        else:  # orphan: a correlation id no call of that process has
            gpid, corr, base = global_tid(1002, 0), 10_000 + len(op_rows), 0
        start = base + off
        end = start - 1 - d if rev else start + d
        op = {"start": start, "end": end, "gpid": gpid, "corr": corr, "kind": kind, "bytes": 0, "copy": None}
        if kind == "k":
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,1,?,?,?,1,1,NULL,0,0,32,1,1,1,128,1,1,0,0,0,0,0,NULL,NULL,NULL)",
                (start, end, stream, corr, gpid),
            )
        elif kind == "m":
            op["bytes"], op["copy"] = nbytes, ck
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind) VALUES (?,?,0,1,?,?,?,?,?)",
                (start, end, stream, corr, gpid, nbytes, ck),
            )
        else:
            op["bytes"] = nbytes
            con.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes) VALUES (?,?,0,1,?,?,?,0,?)",
                (start, end, stream, corr, gpid, nbytes),
            )
        op_rows.append(op)

    closed_ends = [s + d for _, s, d, *_ in ranges] + [c["end"] for c in call_rows] + [o["end"] for o in op_rows]
    capture_end = max(closed_ends + [0]) + 100  # strictly after everything that ended
    written = []
    for th, start, d, name, dom, style, registered, fate in ranges:
        tid = tids[th]
        end: int | None = start + d
        end_tid = None
        if fate == "null_end":
            end = None
        elif fate == "capture_end":
            end = capture_end
        elif fate == "reversed":
            end = start - 1 - d
        elif fate == "cross_thread" and style == 60:
            end_tid = tids[(th + 1) % len(tids)]
        cur = con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, endGlobalTid, textId, text, domainId) VALUES (?,?,?,?,?,?,?,?)",
            (start, end, style, tid, end_tid, strings[name] if registered else None, None if registered else name, dom),
        )
        written.append(Row(cur.lastrowid, start, end, tid, end_tid, name, "nvtxsim" if dom else ""))
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (capture_end, capture_end))
    con.commit()
    con.close()
    return written, call_rows, op_rows, capture_end


# --------------------------------------------------------------------------- the reference


def union_length(intervals: list[tuple[int, int]]) -> int:
    covered = set()
    for s, e in intervals:
        covered.update(range(s, e))
    return len(covered)


def quantile(values: list[int], q: Fraction) -> Fraction:
    """Linear interpolation between closest ranks (numpy's default, nsys's median)."""
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def reference(written: list[Row], calls: list[dict], ops: list[dict], capture_end: int):
    """Per range and per name, computed the plain way: loops over everything, no sorting tricks."""
    ops = [o for o in ops if o["end"] >= o["start"]]
    calls = [c for c in calls if c["end"] >= c["start"]]
    all_ts = [0] + [x for r in written for x in (r.start, r.end) if x is not None]
    max_ts = max(all_ts)
    per_range = {}
    kept = []
    for r in written:
        end = r.end if r.end is not None else max_ts
        if end < r.start:
            continue  # reversed: ignored
        unclosed = r.end is None or r.end >= capture_end
        cross = r.end_tid is not None and r.end_tid != r.tid
        kept.append((r, end, unclosed, cross))
        if cross:
            continue
        launches = []
        for c in calls:
            if c["tid"] == r.tid and r.start <= c["start"] and c["end"] <= end:
                mine = [o for o in ops if o["gpid"] == global_tid(c["pid"], 0) and o["corr"] == c["corr"]]
                if mine:
                    launches.append(mine)
        if not launches:
            continue
        mine = [o for group in launches for o in group]
        copies = {"htod": 0, "dtoh": 0, "dtod": 0, "other": 0}
        for o in mine:
            if o["kind"] == "m":
                copies[COPY.get(o["copy"], "other")] += o["bytes"]
        per_range[r.row] = {
            "proj_start": min(o["start"] for o in mine),
            "proj_end": max(o["end"] for o in mine),
            "ops": len(launches),
            "kernels": sum(o["kind"] == "k" for o in mine),
            "busy": union_length([(o["start"], o["end"]) for o in mine]),
            **copies,
        }
    per_name: dict[tuple[str, str], dict] = {}
    for r, end, unclosed, cross in kept:
        p = per_name.setdefault(
            (r.domain, r.name), {"d": [], "g": [], "unclosed": 0, "cross": 0, "tids": set(), "rows": []}
        )
        p["d"].append(end - r.start)
        p["unclosed"] += unclosed
        p["cross"] += cross
        p["tids"].add(r.tid)
        p["rows"].append(r.row)
        if r.row in per_range:
            g = per_range[r.row]
            p["g"].append(g["proj_end"] - g["proj_start"])
    return per_range, per_name


def close(ours: int, exact: Fraction | float) -> bool:
    """Ours is the exact value rounded to an integer ns."""
    return abs(ours - exact) <= 0.5 + 1e-9 * abs(exact)


# --------------------------------------------------------------------------- the properties


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream_st)
def test_projection_and_statistics_match_reference(stream):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.sqlite"
        written, calls, ops, capture_end = write_export(path, stream)
        ex = load(path)
        gpu = project(ex)
        rep = summarize(ex, gpu, domain=None)
    ref_ranges, ref_names = reference(written, calls, ops, capture_end)

    ours = {}
    for i in range(len(ex.ranges)):
        if gpu.ops[i] > 0:
            ours[int(ex.ranges.row[i])] = {
                "proj_start": int(gpu.proj_start[i]),
                "proj_end": int(gpu.proj_end[i]),
                "ops": int(gpu.ops[i]),
                "kernels": int(gpu.kernels[i]),
                "busy": int(gpu.busy[i]),
                **{d: int(gpu.copy_bytes[d][i]) for d in ("htod", "dtoh", "dtod", "other")},
            }
    assert ours == ref_ranges

    got = {(p.domain, p.name): p for p in rep.phases}
    assert set(got) == set(ref_names)
    for key, ref in ref_names.items():
        p = got[key]
        d, g = ref["d"], ref["g"]
        n = len(d)
        assert p.instances == n and p.cpu_total_ns == sum(d)
        assert p.cpu_min_ns == min(d) and p.cpu_max_ns == max(d)
        assert close(p.cpu_mean_ns, Fraction(sum(d), n))
        assert close(p.cpu_median_ns, quantile(d, Fraction(1, 2)))
        assert close(p.cpu_p90_ns, quantile(d, Fraction(9, 10)))
        assert close(p.cpu_p99_ns, quantile(d, Fraction(99, 100)))
        assert close(p.cpu_stddev_ns, statistics.stdev(d) if n > 1 else 0)  # sample stddev (ddof=1)
        assert p.unclosed == ref["unclosed"] and p.cross_thread == ref["cross"] and p.threads == len(ref["tids"])
        assert p.gpu_instances == len(g) and p.gpu_proj_total_ns == sum(g)
        if g:
            assert close(p.gpu_proj_mean_ns, Fraction(sum(g), len(g)))
            assert close(p.gpu_proj_median_ns, quantile(g, Fraction(1, 2)))
        rows = [ref_ranges[r] for r in ref["rows"] if r in ref_ranges]
        assert p.gpu_ops == sum(r["ops"] for r in rows)
        assert p.gpu_kernels == sum(r["kernels"] for r in rows)
        assert p.gpu_busy_total_ns == sum(r["busy"] for r in rows)
        assert (p.memcpy_htod_bytes, p.memcpy_dtoh_bytes, p.memcpy_dtod_bytes, p.memcpy_other_bytes) == tuple(
            sum(r[k] for r in rows) for k in ("htod", "dtoh", "dtod", "other")
        )


# Statistics alone, on larger and wider-valued samples (the export round trip is not needed here).
durations = st.lists(st.integers(0, 10**12), min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(NAMES), durations.map(tuple)), min_size=1, max_size=4, unique_by=lambda x: x[0])
)
def test_statistics_match_reference_on_wide_values(groups):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.sqlite"
        con = sqlite3.connect(path)
        con.executescript(DDL)
        tid = global_tid(1000, 1000)
        con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text, domainId) VALUES (0, NULL, 75, ?, 'nvtxsim', 1)",
            (tid,),
        )
        con.executemany(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text, domainId) VALUES (0, ?, 59, ?, ?, 1)",
            [(d, tid, name) for name, ds in groups for d in ds],
        )
        con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (10**13, 10**13))
        con.commit()
        con.close()
        rep = summarize(load(path), domain=None)
    got = {p.name: p for p in rep.phases}
    for name, ds in groups:
        p, d = got[name], list(ds)
        assert p.instances == len(d) and p.cpu_total_ns == sum(d)
        assert close(p.cpu_median_ns, quantile(d, Fraction(1, 2)))
        assert close(p.cpu_p90_ns, quantile(d, Fraction(9, 10)))
        assert close(p.cpu_p99_ns, quantile(d, Fraction(99, 100)))
        # float64 sums of squares lose a few ulps on 1e12-sized values: relative 1e-9
        ref_sd = statistics.stdev(d) if len(d) > 1 else 0.0
        assert abs(p.cpu_stddev_ns - ref_sd) <= 0.5 + 1e-9 * ref_sd
