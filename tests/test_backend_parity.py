"""One answer whatever the backend, on hostile CUDA tables.

The streamed backend (picked by an export's size) and the in-memory one must give the same views and
the same findings, to the last field, on CUDA tables no nsys writes but a damaged or edited export can
hold: GPU work whose correlation id matches no call, calls or ops sharing a correlation id, rows in
random order, negative thread ids, and all of them at once.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from synth import make_export, make_planted

from nvtxsim.export import streamed
from nvtxsim.export.reader import load
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.pipeline import analyse, render
from nvtxsim.reporting.views import VIEWS

DATA = Path(__file__).resolve().parent / "data" / "gpu"
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
API = "CUPTI_ACTIVITY_KIND_RUNTIME"


def _gpu(con: sqlite3.Connection) -> list[str]:
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return [t for t in GPU_TABLES if t in have]


def _shuffle(con: sqlite3.Connection, table: str) -> None:
    con.executescript(
        f"CREATE TABLE _t AS SELECT * FROM {table} ORDER BY random(); DELETE FROM {table};"
        f"INSERT INTO {table} SELECT * FROM _t; DROP TABLE _t;"
    )


def orphan_ops(con):
    for t in _gpu(con):
        con.execute(f"UPDATE {t} SET correlationId = correlationId + 1000000000 WHERE rowid % 7 = 0")


def duplicate_call_ids(con):
    con.execute(f"UPDATE {API} SET correlationId = correlationId - 1 WHERE rowid % 5 = 0")


def duplicate_op_ids(con):
    for t in _gpu(con):
        con.execute(f"UPDATE {t} SET correlationId = correlationId - 1 WHERE rowid % 5 = 0")


def shuffled_rows(con):
    for t in [*_gpu(con), API, "NVTX_EVENTS"]:
        _shuffle(con, t)


def negative_call_tids(con):
    con.execute(f"UPDATE {API} SET globalTid = -globalTid WHERE rowid % 3 = 0")


def negative_tids_everywhere(con):
    con.execute(f"UPDATE {API} SET globalTid = -globalTid")
    con.execute("UPDATE NVTX_EVENTS SET globalTid = -globalTid")


def zero_ids(con):
    for t in _gpu(con):
        con.execute(f"UPDATE {t} SET correlationId = 0 WHERE rowid % 4 = 0")
    con.execute(f"UPDATE {API} SET correlationId = 0 WHERE rowid % 4 = 0")


def one_id_across_processes(con):
    con.execute(f"UPDATE {API} SET correlationId = (SELECT min(correlationId) FROM {API}) WHERE rowid % 6 = 0")


def negative_ids(con):
    for t in [*_gpu(con), API]:
        con.execute(f"UPDATE {t} SET correlationId = -correlationId WHERE rowid % 3 = 0")


def negative_op_pids(con):
    for t in _gpu(con):
        con.execute(f"UPDATE {t} SET globalPid = -globalPid WHERE rowid % 2 = 0")


def ids_past_32_bits(con):
    for t in [*_gpu(con), API]:
        con.execute(f"UPDATE {t} SET correlationId = correlationId + 4294967296 WHERE rowid % 3 = 0")


def duplicated_rows(con):
    for t in [*_gpu(con), API]:
        con.execute(f"INSERT INTO {t} SELECT * FROM {t} WHERE rowid % 5 = 0")


def everything(con):
    for damage in (orphan_ops, duplicate_call_ids, duplicate_op_ids, negative_call_tids, shuffled_rows):
        damage(con)


DAMAGES = [
    orphan_ops,
    duplicate_call_ids,
    duplicate_op_ids,
    shuffled_rows,
    negative_call_tids,
    negative_tids_everywhere,
    zero_ids,
    one_id_across_processes,
    negative_ids,
    negative_op_pids,
    ids_past_32_bits,
    duplicated_rows,
    everything,
]


def _base(kind: str, path: Path) -> None:
    if kind == "h200":
        with gzip.open(DATA / "findings_planted.sqlite.gz") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
    elif kind == "planted":
        make_planted(path)
    else:
        make_export(path, 23, processes=2, threads=3, calls_per_thread=80, syncs=True)


def _doc(path: Path, backend: str, monkeypatch) -> dict:
    """The classic summary (with its warnings and findings) and every view, each on a fresh load: a view
    computed first must not hand its in-memory columns to the next."""
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", "0" if backend == "streamed" else str(1 << 60))
    out = {}
    for views in (["summary"], list(VIEWS)):
        ex = load(path, cache=False)
        assert (streamed.source_of(ex) is not None) == (backend == "streamed")
        out[",".join(views)] = json.loads(render(analyse(ex, ReportRequest(views=views, domain=None)), "json"))
    return out


@pytest.mark.parametrize("base", ["h200", "planted", "random"])
@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__)
def test_backends_agree_on_hostile_cuda_tables(tmp_path, monkeypatch, base, damage):
    path = tmp_path / "x.sqlite"
    _base(base, path)
    con = sqlite3.connect(path)
    damage(con)
    con.commit()
    con.close()
    mem, st = _doc(path, "memory", monkeypatch), _doc(path, "streamed", monkeypatch)
    assert mem["summary"]["findings"] and st == mem
