"""GPU work launched outside every phase (autograd's backward thread): how much, from which threads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nvtxsim.analysis.projection import _union_length, select_ranges
from nvtxsim.analysis.selection import Selection
from nvtxsim.analysis.unattributed import inside_own_ranges, outside_phases
from nvtxsim.export.reader import load
from nvtxsim.reporting.pipeline import report as report_of

DATA = Path(__file__).parent / "data" / "gpu"


def test_inside_own_ranges_nested_and_other_threads():
    r_tid, r_start, r_end = np.array([1, 1, 1, 2]), np.array([0, 10, 50, 0]), np.array([100, 20, 60, 1000])
    tid = np.array([1, 1, 1, 1, 2, 3])
    start = np.array([15, 95, 99, 150, 500, 5])
    end = np.array([18, 99, 101, 160, 600, 6])
    assert inside_own_ranges(tid, start, end, r_tid, r_start, r_end).tolist() == [True, True, False, False, True, False]


def test_autograd_thread_work_matches_brute_force():
    detail = Selection(load(DATA / "demo_h200_threads_graph.sqlite.gz"), domain="nvtxsim")
    o = outside_phases(detail)
    ex, ops, link = detail.export, detail.ops, detail.link
    api, r = ex.api, ex.ranges
    sel = select_ranges(ex, "nvtxsim")
    sel = sel[~r.cross_thread[sel]]
    outside_ops = []
    for c in np.flatnonzero(link.count > 0):
        mine = r.global_tid[sel] == api.global_tid[c]
        if not ((r.start[sel][mine] <= api.start[c]) & (r.end[sel][mine] >= api.end[c])).any():
            outside_ops.extend(link.op_order[link.lo[c] : link.hi[c]].tolist())
    idx = np.array(outside_ops)
    busy = int(_union_length(np.zeros(len(idx), dtype=np.int64), ops.start[idx], ops.end[idx], 1)[0])
    assert o is not None and o.ops == len(idx) and o.gpu_busy_ns == busy
    assert next(iter(o.threads)).startswith("pt_autograd_0") and sum(o.threads.values()) == o.launches


def test_note_under_the_summary():
    report = report_of(DATA / "demo_h200_threads_graph.sqlite.gz", findings=False).summary
    note = [w for w in report.warnings if "outside every phase" in w]
    assert len(note) == 1 and "launches by thread: pt_autograd_0" in note[0] and "% of all" in note[0]


def test_no_note_without_cuda(tmp_path):
    from tests.synth import make_export

    path = tmp_path / "x.sqlite"
    make_export(path, 1)
    detail = Selection(load(path), domain=None)
    o = outside_phases(detail)
    assert o is None or o.gpu_busy_ns <= o.total_busy_ns
