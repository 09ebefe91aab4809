"""The findings' one query on a streamed export runs beside the projection (Source.prefetch_named): the rows
it hands over are the query's own, a failed prefetch leaves the query to run again, and the report is the
same with and without it."""

from __future__ import annotations

import json

import numpy as np
from synth import make_planted

from nvtxsim.analysis.findings import calls
from nvtxsim.analysis.selection import Selection
from nvtxsim.export import streamed
from nvtxsim.export.reader import load
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.pipeline import analyse, render


def _streamed(tmp_path, monkeypatch):
    path = tmp_path / "p.sqlite"
    make_planted(path)
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", "0")
    ex = load(path, cache=False)
    src = streamed.source_of(ex)
    assert src is not None
    return path, ex, src


def test_prefetched_rows_are_the_querys_and_are_taken_once(tmp_path, monkeypatch):
    _, ex, src = _streamed(tmp_path, monkeypatch)
    detail = Selection(ex, domain=None)
    ids = calls._notable_ids(detail)
    assert ids
    direct = src.calls_named(ids)
    assert len(direct) > 0
    calls.prefetch_notable_calls(detail)
    assert src._prefetch is not None and src._prefetch[0] == tuple(ids)
    got = src.calls_named(ids)
    assert src._prefetch is None  # handed over, not kept
    np.testing.assert_array_equal(got, direct)


def test_a_failed_prefetch_falls_back_to_the_query(tmp_path, monkeypatch):
    _, ex, src = _streamed(tmp_path, monkeypatch)
    ids = calls._notable_ids(Selection(ex, domain=None))
    direct = src.calls_named(ids)

    class Failed:
        def result(self):
            raise OSError("disk went away")

    src._prefetch = (tuple(ids), Failed())
    np.testing.assert_array_equal(src.calls_named(ids), direct)
    src._prefetch = (tuple(ids[:-1]), Failed())  # other ids: not its rows, never used
    np.testing.assert_array_equal(src.calls_named(ids), direct)


def test_the_report_is_the_same_with_and_without_the_prefetch(tmp_path, monkeypatch):
    path, ex, _ = _streamed(tmp_path, monkeypatch)
    with_prefetch = json.loads(render(analyse(ex, ReportRequest(domain=None)), "json"))
    monkeypatch.setattr(streamed.Source, "prefetch_named", lambda self, ids: None)
    without = json.loads(render(analyse(load(path, cache=False), ReportRequest(domain=None)), "json"))
    assert with_prefetch["findings"] and with_prefetch == without
