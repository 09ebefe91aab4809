"""Nesting, inclusive and self time: against nsys's nvtxpptrace, the nsys projection, and real captures."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from nsys_util import needs_nsys, nsys_stats, profile_python
from synth import make_export

from nvtxsim.analysis.launches import gpu_activity, launches
from nvtxsim.analysis.projection import project
from nvtxsim.analysis.selection import Selection
from nvtxsim.analysis.tree import aggregate, build
from nvtxsim.export.reader import load


@pytest.mark.parametrize("seed", [1, 4, 7])
def test_gpu_inclusive_equals_nsys_projection_busy_for_push_pop(tmp_path, seed):
    """For properly nested push/pop ranges the subtree's busy time is exactly the nsys-rule busy time."""
    path = tmp_path / "s.sqlite"
    make_export(path, seed)
    ex = load(path)
    ops = gpu_activity(ex)
    tree = build(ex, np.flatnonzero(ex.ranges.style == 0), ops, launches(ex, ops))
    idx = tree.nesting.ranges
    assert np.array_equal(tree.gpu_incl, project(ex).busy[idx])
    assert (tree.gpu_self <= tree.gpu_incl).all() and (tree.cpu_self <= tree.cpu_incl).all()
    assert tree.gpu_self.sum() > 0 and (tree.gpu_self < tree.gpu_incl).any()


def test_gpu_self_matches_innermost_brute_force(tmp_path):
    path = tmp_path / "s.sqlite"
    synth = make_export(path, 5, graphs="node")
    ex = load(path)
    pp = np.flatnonzero(ex.ranges.style == 0)
    ops = gpu_activity(ex)
    tree = build(ex, pp, ops, launches(ex, ops))
    idx = tree.nesting.ranges
    rows = {int(ex.ranges.row[i]): k for k, i in enumerate(idx)}
    max_ts = max(max(r["start"], r["end"] or 0) for r in synth.ranges)
    push_pop = [dict(r, end=r["end"] if r["end"] is not None else max_ts) for r in synth.ranges if r["style"] == 59]
    own: dict[int, list] = {}
    for c in synth.calls:
        around = [r for r in push_pop if r["tid"] == c["tid"] and r["start"] <= c["start"] and c["end"] <= r["end"]]
        if not around:
            continue
        # Innermost = tightest (least slack), ties to the later row (nested deeper).
        inner = min(around, key=lambda r: ((c["start"] - r["start"]) + (r["end"] - c["end"]), -r["row"]))
        own.setdefault(inner["row"], []).extend(
            (o["start"], o["end"]) for o in synth.ops if o["gpid"] == c["tid"] & ~0xFFFFFF and o["corr"] == c["corr"]
        )

    def union(iv):
        total, cur = 0, None
        for s, e in sorted(iv):
            if cur is None or s > cur[1]:
                total += (cur[1] - cur[0]) if cur else 0
                cur = [s, e]
            else:
                cur[1] = max(cur[1], e)
        return total + ((cur[1] - cur[0]) if cur else 0)

    ref = {row: union(iv) for row, iv in own.items() if iv}
    ours = {row: int(tree.gpu_self[k]) for row, k in rows.items() if tree.gpu_self[k]}
    assert ours == ref and len(ref) > 10


@needs_nsys
@pytest.mark.nsys
@pytest.mark.parametrize("seed", [2, 3])
def test_parents_and_self_time_agree_with_nsys_nvtxpptrace(tmp_path, seed):
    path = tmp_path / "s.sqlite"
    make_export(path, seed)
    ex = load(path)
    tree = build(ex, np.flatnonzero(ex.ranges.style == 0))
    idx, parent = tree.nesting.ranges, tree.nesting.parent
    r = ex.ranges
    # Identical intervals on one thread make "the tightest parent" ambiguous (each contains the other): leave them out.
    key = list(zip(r.global_tid[idx].tolist(), r.start[idx].tolist(), r.end[idx].tolist()))
    dup = {k for k in key if key.count(k) > 1}
    rows = nsys_stats(path, "nvtxpptrace")
    theirs = {int(t["RangeId"]): t for t in rows}
    checked = 0
    for k, i in enumerate(idx):
        rid = int(r.row[i])
        t = theirs[rid]
        kids = np.flatnonzero(parent == k)
        if key[k] in dup or any(key[c] in dup for c in kids):
            continue
        if parent[k] >= 0 and key[parent[k]] in dup:
            continue
        their_parent = int(t["ParentId"]) if t["ParentId"] not in ("", "None") else -1
        assert their_parent == (int(r.row[idx[parent[k]]]) if parent[k] >= 0 else -1), rid
        assert int(tree.cpu_self[k]) == int(t["DurNonChild (ns)"]), rid
        assert int(t["Lvl"]) == int(tree.nesting.depth[k]), rid
        checked += 1
    assert checked > 100


PROGRAM = """
import threading, time
import nvtxsim

tokens = []

def worker():
    with nvtxsim.phase("render"):
        time.sleep(0.002)
    # A range started on this thread and ended on the main thread (nsys drops these from projections).
    tokens.append(nvtxsim.start_range("camera_readout"))

for i in range(6):
    with nvtxsim.phase("iteration"):
        for _ in range(2):
            with nvtxsim.phase("sim_step"):
                time.sleep(0.001)
                with nvtxsim.phase("physics"):
                    time.sleep(0.001)
        with nvtxsim.phase("policy"):
            time.sleep(0.0005)
t = threading.Thread(target=worker)
t.start()
t.join()
time.sleep(0.001)
nvtxsim.end_range(tokens[0])
"""


@needs_nsys
@pytest.mark.nsys
def test_tree_of_a_real_capture(tmp_path):
    path = profile_python(tmp_path, PROGRAM)
    d = Selection(load(path))
    nodes = aggregate(d.export, d.tree)
    by_path = {n.path: n for n in nodes}
    it = by_path[("nvtxsim:iteration",)]
    step = by_path[("nvtxsim:iteration", "nvtxsim:sim_step")]
    phys = by_path[("nvtxsim:iteration", "nvtxsim:sim_step", "nvtxsim:physics")]
    assert (it.count, step.count, phys.count) == (6, 12, 12)
    assert by_path[("nvtxsim:iteration", "nvtxsim:policy")].count == 6
    # Self = inclusive minus children; the 1 ms sleeps really sit in the children.
    assert step.cpu_self_ns == step.cpu_incl_ns - phys.cpu_incl_ns
    assert (
        it.cpu_self_ns
        == it.cpu_incl_ns - step.cpu_incl_ns - by_path[("nvtxsim:iteration", "nvtxsim:policy")].cpu_incl_ns
    )
    assert phys.cpu_incl_ns >= 12 * 1_000_000
    # The cross-thread range is kept, on the thread that started it, next to that thread's render range.
    cam = by_path[("nvtxsim:camera_readout",)]
    assert cam.cross_thread == 1 and cam.global_tid == by_path[("nvtxsim:render",)].global_tid != it.global_tid
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--view", "tree", "-f", "json"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = doc["views"]["tree"]["rows"]
    assert [r["depth"] for r in rows if r["phase"] == "nvtxsim:physics"] == [2]
    assert len({r["tid"] for r in rows}) == 2 and any(r["thread"].endswith(f"main ({r['tid']})") for r in rows)


def test_very_deep_nesting(tmp_path):
    """Thousands of nested ranges (never-closed ranges nest like this): linear time, no recursion limit."""
    import sqlite3

    from synth import DDL, global_tid

    path = tmp_path / "deep.sqlite"
    con = sqlite3.connect(path)
    con.executescript(DDL)
    tid = global_tid(7, 7)
    n = 5000
    con.execute("INSERT INTO StringIds VALUES (1, 'level')")
    con.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES (?, ?, 59, ?, 1)", (0, None, tid)
    )
    con.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES (?, ?, 59, ?, 1)",
        [(i, 10 * n - i, tid) for i in range(1, n)],
    )
    con.commit()
    con.close()
    d = Selection(load(path), domain=None)
    assert int(d.tree.nesting.depth.max()) == n - 1
    nodes = aggregate(d.export, d.tree)
    assert [nd.depth for nd in nodes] == list(range(33)) and all(nd.count == 1 for nd in nodes)
    assert nodes[0].cpu_self_ns == 1  # unclosed: ends at the last timestamp (10n - 1), its child covers all but [0, 1)
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--domain", "all", "--view", "tree"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "nesting deeper than 32 levels is not listed" in out.stdout
