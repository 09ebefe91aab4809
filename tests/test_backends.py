"""The two loader backends (in memory, streamed) give the same report on the same exports.

The streamed backend reads CUDA columns lazily and projects in one bounded-memory pass; it
falls back to the in-memory projection when a precondition fails. These tests make sure it
really streams the committed exports and that every view agrees to the last field."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from committed import committed_glob

from nvtxsim.analysis.projection import project_stream
from nvtxsim.export import streamed
from nvtxsim.export.reader import load
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.pipeline import analyse, render
from nvtxsim.reporting.views import VIEWS

DATA = Path(__file__).resolve().parent / "data"
EXPORTS = committed_glob("gpu", "*.sqlite.gz", at_least=7) + committed_glob("reliability", "*.sqlite.gz")


def _inflate(gz: Path, folder: Path) -> Path:
    out = folder / gz.name[: -len(".gz")]
    with gzip.open(gz) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _all_views(export) -> dict:
    """Every view as JSON, the findings included: one answer whatever the backend."""
    return json.loads(render(analyse(export, ReportRequest(views=list(VIEWS), domain=None)), "json"))


@pytest.mark.parametrize("gz", EXPORTS, ids=lambda p: p.name)
def test_streamed_and_in_memory_backends_agree(gz, tmp_path):
    path = _inflate(gz, tmp_path)
    mem = load(path, backend="memory", cache=False)
    assert streamed.source_of(mem) is None
    st = load(path, backend="streamed", cache=False)
    if streamed.source_of(st) is None:
        assert mem.api is None or mem.gpu is None  # no CUDA tables: nothing to stream
    else:
        assert project_stream(st) is not None, "the streamed projection fell back (run with NVTXSIM_DEBUG=1 for why)"
    assert _all_views(st) == _all_views(mem)


def test_unknown_backend_is_an_error(tmp_path):
    from nvtxsim.errors import NvtxsimError

    with pytest.raises(NvtxsimError, match="backend"):
        load(tmp_path / "x.sqlite", backend="fast")  # type: ignore[arg-type]


def test_fallback_is_logged_under_debug(tmp_path, monkeypatch, capsys):
    """A streamed pass that cannot run says why on stderr when NVTXSIM_DEBUG is set, and the numbers stay right."""
    import nvtxsim.analysis.stream as stream
    from nvtxsim.analysis.projection import project

    gz = next(p for p in EXPORTS if p.name.startswith("demo_h200"))
    path = _inflate(gz, tmp_path)
    mem = project(load(path, backend="memory", cache=False))

    def broken(self):
        raise IndexError("simulated bug")

    monkeypatch.setattr(stream._Projector, "run", broken)
    monkeypatch.setenv("NVTXSIM_DEBUG", "1")
    got = project(load(path, backend="streamed", cache=False))
    assert "streamed projection failed (IndexError: simulated bug)" in capsys.readouterr().err
    assert (got.busy == mem.busy).all() and (got.ops == mem.ops).all()
