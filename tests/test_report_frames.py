"""nvtxsim.load_frames: pandas DataFrames consistent with the report; a clear error without pandas."""

from __future__ import annotations

import subprocess
import sys

import pytest
from synth import make_export

import nvtxsim
from nvtxsim.analysis.projection import project
from nvtxsim.export.reader import load

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def frames_and_export(tmp_path_factory):
    path = tmp_path_factory.mktemp("fr") / "s.sqlite"
    make_export(path, 17, graphs="graph", syncs=True, extras=True)
    return nvtxsim.load_frames(path), load(path), path


def test_frames_match_the_export_and_the_report(frames_and_export):
    f, ex, _ = frames_and_export
    assert dict(f).keys() == {"ranges", "gpu_ops", "api_calls", "phases", "iterations"}
    assert len(f.ranges) == len(ex.ranges) and set(f.ranges.index) == set(ex.ranges.row.tolist())
    assert len(f.gpu_ops) == len(ex.gpu) + len(ex.extras.graph_execs) and (f.gpu_ops.kind == "graph").sum() == len(
        ex.extras.graph_execs
    )
    assert len(f.api_calls) == len(ex.api)
    # Per phase totals equal the report's.
    total = f.ranges.groupby("phase").duration_ns.sum()
    for _, row in f.phases.iterrows():
        assert total[row["phase"]] == row["cpu_total_ns"]
    g = project(ex)
    busy = dict(zip(ex.ranges.row.tolist(), g.busy.tolist()))
    assert (f.ranges.gpu_busy_ns == f.ranges.index.map(busy)).all()
    # Nesting: parents are ranges of the same thread that contain the child.
    child = f.ranges[f.ranges.parent.notna()]
    par = f.ranges.loc[child.parent.astype(int)]
    assert (par.start_ns.values <= child.start_ns.values).all() and (par.end_ns.values >= child.end_ns.values).all()
    assert (par.tid.values == child.tid.values).all()
    assert (f.ranges.cpu_self_ns <= f.ranges.duration_ns).all()
    # GPU ops know the phase that launched them, and the queue delay is never negative.
    launched = f.gpu_ops[f.gpu_ops.range_id.notna()]
    assert len(launched) and (launched.phase != "").all() and (launched.queue_ns >= 0).all()
    assert set(f.api_calls.name) >= {"cudaGraphLaunch", "cudaStreamSynchronize"}
    assert f.ranges.thread.str.startswith("main (").any()


def test_iterations_frame_long_format(frames_and_export):
    f, _, _ = frames_and_export
    it = f.iterations
    assert list(it.columns) == ["iteration", "range_id", "tid", "phase", "cpu_ns", "gpu_busy_ns", "instances"]
    per = it.groupby("range_id")
    assert len(it) and per.phase.count().nunique() == 1 and (per.iteration.nunique() == 1).all()
    key = it[it.phase == it.phase.iloc[0]]
    assert (key.instances == 1).all() and key.range_id.is_unique


def test_clear_error_without_pandas(frames_and_export):
    _, _, path = frames_and_export
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "import nvtxsim\n"
        "from nvtxsim.errors import NvtxsimError\n"
        "try:\n"
        f"    nvtxsim.load_frames({str(path)!r})\n"
        "except ImportError as e:\n"
        "    assert isinstance(e, NvtxsimError); print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'nvtxsim[pandas]'" in proc.stdout
    assert "pandas" not in subprocess.run(
        [sys.executable, "-c", "import nvtxsim, sys; print(sorted(m for m in sys.modules if m.startswith('pandas')))"],
        capture_output=True,
        text=True,
    ).stdout.replace("[]", "")
