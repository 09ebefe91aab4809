"""Values of the core's building blocks against brute-force references, the edge cases included (empty
inputs, a group with no member, graph-level executions): each test here kills mutants that the end-to-end
tests let through (scripts/mutate.py, reports/mutation.md)."""

from __future__ import annotations

import sqlite3

import numpy as np
from committed import committed
from synth import make_export

from nvtxsim.analysis.launches import call_windows, contained, gpu_activity, launches
from nvtxsim.analysis.projection import _group_quantiles
from nvtxsim.export.reader import load
from nvtxsim.schema import KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, PID_MASK

EMPTY = np.zeros(0, dtype=np.int64)


def _brute_contained(rs, re_, rt, cs, ce, ct) -> set[tuple[int, int]]:
    return {
        (i, j) for i in range(len(rs)) for j in range(len(cs)) if rt[i] == ct[j] and rs[i] <= cs[j] and ce[j] <= re_[i]
    }


def test_contained_is_every_call_wholly_inside_a_range_of_its_thread():
    rng = np.random.default_rng(7)
    for _ in range(30):
        n, m = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        rs = rng.integers(0, 50, n)
        re_ = rs + rng.integers(0, 30, n)
        rt = rng.integers(1, 4, n)
        cs = rng.integers(0, 80, m)
        ce = cs + rng.integers(0, 10, m)
        ct = rng.integers(1, 4, m)
        ri, ci = contained(rs, re_, rt, cs, ce, ct)
        assert len(ri) == len(ci)
        assert set(zip(ri.tolist(), ci.tolist())) == _brute_contained(rs, re_, rt, cs, ce, ct)
        assert len(set(zip(ri.tolist(), ci.tolist()))) == len(ri)  # each pair once
        assert np.all(np.diff(ri) >= 0)  # sorted by range


def test_contained_and_call_windows_on_empty_inputs():
    one = np.array([5])
    for args in [(EMPTY, EMPTY, EMPTY, one, one, one), (one, one + 3, one, EMPTY, EMPTY, EMPTY)]:
        ri, ci = contained(*args)
        assert len(ri) == 0 and len(ci) == 0
    lo, hi = call_windows(one, one + 3, one, EMPTY, EMPTY)  # a range, no calls: an empty window
    assert lo.tolist() == [0] and hi.tolist() == [0]
    lo, hi = call_windows(EMPTY, EMPTY, EMPTY, one, one)
    assert len(lo) == 0 and len(hi) == 0
    # ranges on threads with no call, above and below every calling thread: empty windows, no pair
    lo, hi = call_windows(np.array([0, 0]), np.array([99, 99]), np.array([9, 0]), np.array([1, 2]), np.array([10, 10]))
    assert lo.tolist() == hi.tolist()
    ri, ci = contained(
        np.array([0, 0]), np.array([99, 99]), np.array([9, 1]), np.array([10]), np.array([20]), one * 0 + 1
    )
    assert ri.tolist() == [1] and ci.tolist() == [0]


def test_group_quantiles_match_numpy_and_an_empty_group_is_zero():
    group = np.array([0, 0, 0, 0, 2, 2, 3])
    values = np.array([5, 1, 4, 10, 7, 3, 9])
    got = _group_quantiles(group, values, 5, [0.0, 0.5, 0.9, 1.0])
    for q, per in got.items():
        for g in range(5):
            members = values[group == g]
            want = float(np.quantile(members, q)) if len(members) else 0.0
            assert per[g] == want, (q, g)
    nothing = _group_quantiles(EMPTY, EMPTY, 2, [0.5])
    assert nothing[0.5].tolist() == [0.0, 0.0]


def test_gpu_activity_is_every_op_and_graph_execution(tmp_path):
    ex = load(committed("gpu/demo_h200_graphlevel.sqlite.gz"))
    ops, gx = gpu_activity(ex), ex.extras.graph_execs
    assert ex.gpu is not None and gx is not None and len(gx) > 0
    assert len(ops) == len(ex.gpu) + len(gx)
    assert np.array_equal(ops.start, np.r_[ex.gpu.start, gx.start])
    assert np.array_equal(ops.correlation_id, np.r_[ex.gpu.correlation_id, gx.correlation_id])
    plain = load(committed("gpu/demo_h200.sqlite.gz"))
    assert plain.extras.graph_execs is None and len(gpu_activity(plain)) == len(plain.gpu)
    path = tmp_path / "no_ops.sqlite"  # CUDA calls but no GPU row at all: every column empty
    make_export(path, 3)
    with sqlite3.connect(path) as con:
        for table in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE):
            con.execute(f"DELETE FROM {table}")
    empty = gpu_activity(load(path))
    assert {f: len(getattr(empty, f)) for f in ("start", "kind", "name_id", "bytes")} == dict.fromkeys(
        ("start", "kind", "name_id", "bytes"), 0
    )


def test_launches_join_calls_to_ops_on_process_and_correlation_id(tmp_path):
    path = tmp_path / "three.sqlite"
    make_export(path, 11, processes=3)  # correlation ids repeat across the processes
    ex = load(path)
    ops, api = gpu_activity(ex), ex.api
    link = launches(ex, ops)
    call_pid = api.global_tid & PID_MASK
    by_key: dict[tuple[int, int], set[int]] = {}
    for j in range(len(ops)):
        by_key.setdefault((int(ops.global_pid[j]), int(ops.correlation_id[j])), set()).add(j)
    assert len({k[1] for k in by_key}) < len(by_key)  # the same id in two processes: the process matters
    for c in range(len(api)):
        want = by_key.get((int(call_pid[c]), int(api.correlation_id[c])), set())
        assert set(link.op_order[link.lo[c] : link.hi[c]].tolist()) == want, c
        assert (link.launch_id[c] == -1) == (not want)
    assert link.group_start[-1] == len(link.op_order) == len(ops)
    with sqlite3.connect(path) as con:
        for table in (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE):
            con.execute(f"DELETE FROM {table}")
    bare = load(path)
    none = launches(bare, gpu_activity(bare))
    assert len(none.op_order) == 0 and none.group_start.tolist() == [0]
    assert len(none.launch_id) == len(bare.api) > 0 and set(none.launch_id.tolist()) == {-1}
    assert none.count.tolist() == [0] * len(bare.api)


def test_projection_of_a_single_range_with_a_single_kernel(tmp_path):
    """The smallest export with GPU work: one range, one launch (one (range, launch) pair in the only chunk)."""
    from synth import CudaLoop

    from nvtxsim.analysis.projection import project

    b = CudaLoop(cuda=True)
    b.phase("only", lambda: b.kernel("k", 7_000))
    path = tmp_path / "one.sqlite"
    b.write(path)
    ex = load(path)
    g = project(ex)
    (i,) = np.flatnonzero(ex.ranges.name.astype(str) == "only")
    k = ex.gpu
    assert g.ops[i] == 1 and g.kernels[i] == 1
    assert (g.proj_start[i], g.proj_end[i]) == (k.start[0], k.end[0]) and k.end[0] - k.start[0] == 7_000


def test_a_launch_matched_by_two_calls_of_a_range_counts_once(tmp_path):
    """Two calls with one (process, correlation id) inside one range, and another launch: each op once."""
    from synth import CudaLoop

    from nvtxsim.analysis.projection import project
    from nvtxsim.schema import RUNTIME_TABLE

    b = CudaLoop(cuda=True)
    b.phase("p", lambda: (b.kernel("a", 5_000), b.kernel("b", 5_000), b.kernel("c", 5_000)))
    path = tmp_path / "dup.sqlite"
    b.write(path)
    with sqlite3.connect(path) as con:
        a, second = con.execute(f"SELECT min(correlationId), min(correlationId) + 1 FROM {KERNEL_TABLE}").fetchone()
        con.execute(f"DELETE FROM {KERNEL_TABLE} WHERE correlationId = ?", (second,))
        con.execute(f"UPDATE {RUNTIME_TABLE} SET correlationId = ? WHERE correlationId = ?", (a, second))
    ex = load(path)
    (i,) = np.flatnonzero(ex.ranges.name.astype(str) == "p")
    assert len(ex.gpu) == 2 and project(ex).ops[i] == 2
