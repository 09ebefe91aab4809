"""Large exports: the streamed projection equals the in-memory one, and scripts/scale_export.py makes valid big exports."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from committed import committed_glob
from nsys_util import needs_nsys, nsys_stats, sum_by_name
from synth import make_export

import nvtxsim.analysis.stream as stream
import nvtxsim.export.streamed as streamed
from nvtxsim.analysis.projection import project, project_stream, summarize
from nvtxsim.export.reader import load

REPO = Path(__file__).resolve().parents[1]
GPU_DATA = REPO / "tests" / "data" / "gpu"
FIELDS = ("proj_start", "proj_end", "ops", "kernels", "busy")


def _scale_module():
    spec = importlib.util.spec_from_file_location("scale_export", REPO / "scripts" / "scale_export.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sort_by_start(path: Path) -> None:
    """Rewrite the CUDA tables in start order, as nsys writes them."""
    con = sqlite3.connect(path)
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'CUPTI%'").fetchall():
        con.executescript(
            f'CREATE TABLE _t AS SELECT * FROM "{t}" ORDER BY start; DELETE FROM "{t}"; INSERT INTO "{t}" SELECT * FROM _t; DROP TABLE _t;'
        )
    con.commit()
    con.close()


@pytest.fixture
def tiny_windows(monkeypatch):
    """Small batches and windows, so that every code path of the stream runs on small files."""
    monkeypatch.setattr(stream, "_CALL_BATCH_BYTES", 4096)
    monkeypatch.setattr(stream, "_GPU_BATCH_BYTES", 4096)
    monkeypatch.setattr(stream, "_WINDOW_CALLS", 40)


def _streamed(path, monkeypatch):
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", "0")
    ex = load(path)
    assert isinstance(ex.api, streamed.LazyApiCalls)
    return ex, project_stream(ex)


def _in_memory(path, monkeypatch):
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", str(1 << 60))
    ex = load(path)
    assert not isinstance(ex.api, streamed.LazyApiCalls)
    return ex, project(ex)


def _assert_same(a, b):
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for d in b.copy_bytes:
        assert np.array_equal(a.copy_bytes[d], b.copy_bytes[d]), d


SHAPES = [
    (1, {}),
    (2, dict(processes=3, threads=2, calls_per_thread=150)),
    (3, dict(graphs="node", syncs=True, devices=2, calls_per_thread=150)),
    (4, dict(graphs="graph", syncs=True)),
    (5, dict(graphs="missing", threads=4)),
]


@pytest.mark.parametrize("seed,kw", SHAPES, ids=[str(s) for s, _ in SHAPES])
def test_streamed_projection_equals_in_memory(tmp_path, monkeypatch, tiny_windows, seed, kw):
    path = tmp_path / "s.sqlite"
    make_export(path, seed, **kw)
    sort_by_start(path)
    ex, streamed = _streamed(path, monkeypatch)
    assert streamed is not None, "sorted export should stream"
    ex2, ref = _in_memory(path, monkeypatch)
    _assert_same(streamed, ref)
    assert (ref.ops > 0).sum() > 10
    # The whole report too (lazy CUDA columns give the counts of the eager ones).
    assert summarize(ex, domain=None).as_dict() == summarize(ex2, domain=None).as_dict()


@pytest.mark.parametrize("gz", committed_glob(GPU_DATA, "*.sqlite.gz", at_least=7), ids=lambda p: p.name.split(".")[0])
def test_streamed_projection_on_h200_exports(tmp_path, monkeypatch, tiny_windows, gz):
    import gzip

    path = tmp_path / "e.sqlite"
    with gzip.open(gz) as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    ex, streamed = _streamed(path, monkeypatch)
    assert streamed is not None
    ex2, ref = _in_memory(path, monkeypatch)
    _assert_same(streamed, ref)
    # Lazy columns read exactly what load() reads eagerly.
    for obj, eager in ((ex.api, ex2.api), (ex.gpu, ex2.gpu)):
        for name in obj._FIELDS:
            assert np.array_equal(getattr(obj, name), getattr(eager, name)), name
        assert len(obj) == len(eager)


def test_unsorted_tables_fall_back_to_the_in_memory_projection(tmp_path, monkeypatch):
    path = tmp_path / "u.sqlite"
    make_export(path, 7)  # synthetic rows are per thread, not in global start order
    ex, streamed = _streamed(path, monkeypatch)
    assert streamed is None
    _assert_same(project(ex), _in_memory(path, monkeypatch)[1])


def test_op_before_its_call_falls_back(tmp_path, monkeypatch, tiny_windows):
    path = tmp_path / "skew.sqlite"
    make_export(path, 8)
    con = sqlite3.connect(path)
    # The kernel of a call that a range contains now starts before the call does.
    ref_ex, ref = _in_memory(path, monkeypatch)
    corr = con.execute(
        "SELECT k.rowid, r.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON k.correlationId = r.correlationId AND k.globalPid = (r.globalTid & -16777216) ORDER BY r.start LIMIT 1 OFFSET 200"
    ).fetchone()
    # Far enough back that the stream meets the op windows before it meets the call.
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ? WHERE rowid = ?", (corr[1] - 200_000, corr[0]))
    con.commit()
    con.close()
    sort_by_start(path)
    ex, streamed = _streamed(path, monkeypatch)
    assert streamed is None
    _assert_same(project(ex), _in_memory(path, monkeypatch)[1])


def test_two_calls_with_one_launch_key_fall_back(tmp_path, monkeypatch):
    path = tmp_path / "dup.sqlite"
    make_export(path, 9)
    con = sqlite3.connect(path)
    row = con.execute(
        "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN "
        "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL) LIMIT 1"
    ).fetchone()
    con.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start,end,eventClass,globalTid,correlationId,nameId,returnValue) VALUES (?,?,0,?,?,?,0)",
        (row[0] + 5, row[1] - 5, row[2], row[3], row[4]),
    )
    con.commit()
    con.close()
    sort_by_start(path)
    ex, streamed = _streamed(path, monkeypatch)
    assert streamed is None
    _assert_same(project(ex), _in_memory(path, monkeypatch)[1])


# ----------------------------------------------------------------------------- scale_export.py


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_scale_export_replays_rows_with_fresh_ids(tmp_path):
    scale = _scale_module()
    src = tmp_path / "base.sqlite"
    make_export(src, 11, processes=2)
    before = _digest(src)
    dst = tmp_path / "x3.sqlite"
    counts = scale.scale(src, dst, 3)
    assert _digest(src) == before, "the source export must not change"
    con_s, con_d = sqlite3.connect(src), sqlite3.connect(dst)
    for t in (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ):
        n = con_s.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        assert con_d.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 3 * n == counts[t]
        keys = (
            f"SELECT count(DISTINCT globalPid || ':' || correlationId) FROM {t}"
            if t != "CUPTI_ACTIVITY_KIND_RUNTIME"
            else f"SELECT count(DISTINCT globalTid || ':' || correlationId) FROM {t}"
        )
        assert con_d.execute(keys).fetchone()[0] == 3 * con_s.execute(keys).fetchone()[0]
    ranges = "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"
    assert con_d.execute(ranges).fetchone()[0] == 3 * con_s.execute(ranges).fetchone()[0]
    domains = "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 75"
    assert con_d.execute(domains).fetchone()[0] == con_s.execute(domains).fetchone()[0]
    # Per phase: three times the instances and the launches (closed ranges are copied whole).
    base = {p.label: p for p in summarize(load(src), domain=None).phases}
    big = {p.label: p for p in summarize(load(dst), domain=None).phases}
    assert set(base) == set(big)
    for label, p in base.items():
        assert big[label].instances == 3 * p.instances
        if not p.unclosed:
            assert big[label].cpu_total_ns == 3 * p.cpu_total_ns
            assert big[label].gpu_ops == 3 * p.gpu_ops


def test_scale_export_cli_refuses_to_overwrite(tmp_path):
    scale = _scale_module()
    src = tmp_path / "b.sqlite"
    make_export(src, 12)
    dst = tmp_path / "o.sqlite"
    dst.write_text("keep me")
    assert scale.main([str(src), str(dst), "--times", "2"]) == 2
    assert dst.read_text() == "keep me"
    assert scale.main([str(src), str(dst), "--times", "2", "--force"]) == 0
    assert sqlite3.connect(dst).execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()[0] > 0


@needs_nsys
@pytest.mark.nsys
def test_scaled_export_agrees_with_nsys(tmp_path):
    scale = _scale_module()
    src = tmp_path / "b.sqlite"
    make_export(src, 13)
    dst = tmp_path / "x4.sqlite"
    scale.scale(src, dst, 4)
    rows = nsys_stats(dst, "nvtxgpuproj")
    assert rows
    ours = {p.label: p for p in summarize(load(dst), domain=None).phases}
    proj = sum_by_name(rows, "Name", "Projected Duration (ns)")
    nops = sum_by_name(rows, "Name", "NumGPUOps")
    for name, total in proj.items():
        assert ours[name].gpu_proj_total_ns == total, name
        assert ours[name].gpu_ops == nops[name], name
