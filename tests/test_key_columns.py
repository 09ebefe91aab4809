"""Exports whose key columns are not what nsys writes (issue 13): a duplicated ``eventId``, a real column
named ``rowid``: read correctly (names matched to the right ranges) or refused — never names mixed silently."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth import make_export  # noqa: E402

from nvtxsim.analysis.projection import summarize  # noqa: E402
from nvtxsim.errors import NvtxsimError  # noqa: E402
from nvtxsim.export.reader import load  # noqa: E402


def report(path: Path) -> dict:
    return summarize(load(path, cache=False), domain=None).as_dict()["phases"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("keys") / "base.sqlite"
    make_export(p, 31, processes=2, threads=2, calls_per_thread=40)
    con = sqlite3.connect(p)
    # Half the ranges named by plain text (the texts are joined to their rows by key), with payloads.
    con.execute(
        "UPDATE NVTX_EVENTS SET text = 'T' || (_rowid_ % 7), textId = NULL WHERE eventType = 59 AND _rowid_ % 2 = 0"
    )
    con.execute("UPDATE NVTX_EVENTS SET doubleValue = _rowid_ WHERE eventType = 59")
    con.commit()
    con.close()
    return p


def variant(base: Path, tmp_path: Path, *sql: str) -> Path:
    p = tmp_path / "v.sqlite"
    shutil.copy(base, p)
    con = sqlite3.connect(p)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()
    return p


CASES = {
    "rowid_column_constant": ("ALTER TABLE NVTX_EVENTS ADD COLUMN rowid INTEGER", "UPDATE NVTX_EVENTS SET rowid = 1"),
    "rowid_column_reversed": (
        "ALTER TABLE NVTX_EVENTS ADD COLUMN rowid INTEGER",
        "UPDATE NVTX_EVENTS SET rowid = 100000 - _rowid_",
    ),
    "rowid_column_null": ("ALTER TABLE NVTX_EVENTS ADD COLUMN ROWID TEXT",),
    "event_id_duplicated": (
        "ALTER TABLE NVTX_EVENTS ADD COLUMN eventId INTEGER",
        "UPDATE NVTX_EVENTS SET eventId = _rowid_ % 3",
    ),
    "event_id_null": ("ALTER TABLE NVTX_EVENTS ADD COLUMN eventId INTEGER",),
    "event_id_shuffled_unique": (
        "ALTER TABLE NVTX_EVENTS ADD COLUMN eventId INTEGER",
        "UPDATE NVTX_EVENTS SET eventId = 1000000 - 7 * _rowid_",
    ),
    "rowid_and_oid_columns_with_duplicate_event_id": (
        "ALTER TABLE NVTX_EVENTS ADD COLUMN rowid INTEGER",
        "ALTER TABLE NVTX_EVENTS ADD COLUMN oid INTEGER",
        "ALTER TABLE NVTX_EVENTS ADD COLUMN eventId INTEGER",
        "UPDATE NVTX_EVENTS SET rowid = 5, oid = 6, eventId = _rowid_ % 2",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_names_stay_with_their_ranges(base, tmp_path, case):
    assert report(variant(base, tmp_path, *CASES[case])) == report(base)


def test_no_way_to_tell_rows_apart_is_refused(base, tmp_path):
    p = variant(
        base,
        tmp_path,
        *(f"ALTER TABLE NVTX_EVENTS ADD COLUMN {c} INTEGER" for c in ("rowid", "_rowid_", "oid", "eventId")),
        "UPDATE NVTX_EVENTS SET eventId = 1",
    )
    with pytest.raises(NvtxsimError, match="not unique"):
        load(p, cache=False)


def test_payloads_follow_their_ranges(base, tmp_path):
    ref = load(base, cache=False).ranges
    got = load(variant(base, tmp_path, *CASES["rowid_column_reversed"]), cache=False).ranges
    assert (ref.payload[~(ref.payload != ref.payload)] == got.payload[~(got.payload != got.payload)]).all()
