"""Sums are bounded like timestamps: impossible byte counts never wrap a total.

Copies, memsets and allocations whose byte count is negative or past 256 GiB (twenty copies of
INT64_MAX, one of -1) are counted as 0 bytes, with one warning, on both backends: the report is then
exactly that of the same export with those rows at 0 bytes, plus the warning.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from nvtxsim.export.reader import load
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.pipeline import analyse, render
from nvtxsim.reporting.views import VIEWS

PLANTED = Path(__file__).parent / "data" / "gpu" / "findings_planted.sqlite.gz"
INT64_MAX = 2**63 - 1


def _copy(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    out = tmp_path / name / "x.sqlite"  # the same file name: the reports' source lines match
    with gzip.open(PLANTED) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _doc(path: Path, backend: str, monkeypatch) -> dict:
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", "0" if backend == "streamed" else str(1 << 60))
    out = {}
    for views in (["summary"], list(VIEWS)):
        out[",".join(views)] = json.loads(
            render(analyse(load(path, cache=False), ReportRequest(views=views, domain=None)), "json")
        )
    return out


def _without_warning(doc: dict) -> tuple[dict, int]:
    n = 0
    for part in doc.values():
        ws = part.get("warnings", [])
        n += sum("impossible byte counts" in w for w in ws)
        part["warnings"] = [w for w in ws if "impossible byte counts" not in w]
    return doc, n


@pytest.mark.parametrize("backend", ["memory", "streamed"])
@pytest.mark.parametrize("value", [INT64_MAX, -1, -INT64_MAX - 1, (1 << 38) + 1, 1 << 62])
def test_impossible_byte_counts_count_as_zero(tmp_path, monkeypatch, backend, value):
    hostile, truth = _copy(tmp_path, "hostile"), _copy(tmp_path, "truth")
    for path, v in ((hostile, value), (truth, 0)):
        con = sqlite3.connect(path)
        rows = con.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY rowid LIMIT 20").fetchall()
        assert len(rows) == 20
        con.executemany("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = ? WHERE rowid = ?", [(v, r) for (r,) in rows])
        con.commit()
        con.close()
    monkeypatch.chdir(hostile.parent)
    got, warned = _without_warning(_doc(Path("x.sqlite"), backend, monkeypatch))
    monkeypatch.chdir(truth.parent)
    want, none = _without_warning(_doc(Path("x.sqlite"), backend, monkeypatch))
    assert warned >= 1 and none == 0
    assert got == want, _diff(got, want)[:5]


def _diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in set(a) | set(b) for d in _diff(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, str(a)[:200], str(b)[:200])]
