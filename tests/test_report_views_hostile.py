"""The detail views and formats on hostile inputs: a report or one clean error line, never a traceback."""

from __future__ import annotations

import contextlib
import io

import pytest

hostile = pytest.importorskip("hostile_corpus")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return [c for c in hostile.build_corpus(tmp_path_factory.mktemp("hostile")) if c.output is None and not c.args]


@pytest.mark.parametrize(
    "extra", [("--view", "all", "-f", "json"), ("-f", "html"), ("-f", "perfetto")], ids=["views", "html", "perfetto"]
)
def test_detail_views_never_crash(corpus, tmp_path, extra):
    from nvtxsim.cli.main import main

    assert len(corpus) > 10
    for c in corpus:
        out, err = io.StringIO(), io.StringIO()
        args = ["report", str(c.path), "--domain", "all", *extra]
        if "-f" in extra and extra[-1] in ("html", "perfetto"):
            args += ["-o", str(tmp_path / f"out.{extra[-1]}"), "--force"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(args)
        lines = err.getvalue().strip().splitlines()
        if c.expect == "report":
            assert rc == 0, (c.kind, err.getvalue())
        assert rc in (0, 2), (c.kind, rc)
        if rc == 2:
            assert len(lines) == 1 and lines[0].startswith("nvtxsim: error: "), (c.kind, err.getvalue())
