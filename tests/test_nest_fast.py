"""The vectorised nesting (tree.nest_fast) gives exactly the stack sweep's parents and depths, or steps aside."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from committed import committed
from synth import make_export, make_planted

from nvtxsim.analysis import tree
from nvtxsim.analysis.projection import select_ranges
from nvtxsim.export.reader import load

GPU = Path(__file__).parent / "data" / "gpu"
REAL = ["demo_h200", "demo_h200_threads_graph", "rsl_rl_4096", "torch_nvtx_h200", "findings_planted"]


def _both(monkeypatch, ex, sel):
    monkeypatch.setattr(tree, "FAST_NEST_MIN", 1 << 62)
    loop = tree.nest(ex, sel)
    monkeypatch.setattr(tree, "FAST_NEST_MIN", 0)
    return loop, tree.nest(ex, sel)


def _same(a, b):
    return (
        np.array_equal(a.ranges, b.ranges) and np.array_equal(a.parent, b.parent) and np.array_equal(a.depth, b.depth)
    )


@pytest.mark.parametrize("name", REAL)
def test_fast_nesting_equals_the_stack_sweep_on_real_exports(monkeypatch, name):
    ex = load(committed(GPU / f"{name}.sqlite.gz"))
    for domain in (None, "nvtxsim"):
        sel = select_ranges(ex, domain)
        r = ex.ranges
        loop, fast = _both(monkeypatch, ex, sel)
        assert _same(loop, fast)
        assert (
            tree.nest_fast(r.global_tid[loop.ranges], r.start[loop.ranges], r.end[loop.ranges]) is not None
        )  # push/pop: the fast path ran


@pytest.mark.parametrize("seed", range(8))
def test_overlapping_ranges_fall_back_to_the_sweep(tmp_path, monkeypatch, seed):
    p = tmp_path / "x.sqlite"
    make_export(p, seed, threads=2, calls_per_thread=60)  # random start/end ranges overlap partially
    ex = load(p)
    loop, fast = _both(monkeypatch, ex, select_ranges(ex, None))
    assert _same(loop, fast)


def test_planted_synthetic(tmp_path, monkeypatch):
    p = tmp_path / "p.sqlite"
    make_planted(p)
    ex = load(p)
    assert _same(*_both(monkeypatch, ex, select_ranges(ex, None)))
