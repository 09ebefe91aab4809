"""Reports stay linear in the number of distinct range names (issue 13): ``phase(f"step_{i}")``.

No timing here (scripts/bench_names.py measures 1k against 100k names). Two checks that do not
depend on the machine: the work, counted as Python function calls (cProfile), grows like the
names (10× names → well under 20× calls; a loop over phases inside a loop over phases would give
~100×); and no view, the HTML page or the findings build the dense iterations × phases matrices
(their size is the product of the two, 10^10 cells for 100k names).
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json

import pytest
from synth import make_names_export

from nvtxsim.analysis import iterations
from nvtxsim.cli.main import main

SMALL, LARGE = 150, 1500
COMMANDS = {
    "table": [],
    "all views json": ["--view", "all", "-f", "json"],
    "html": ["-f", "html"],
    "csv": ["-f", "csv"],
    "markdown all": ["--view", "all", "-f", "markdown"],
}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    out = {}
    for n in (SMALL, LARGE):
        out[n] = tmp / f"names_{n}.sqlite"
        make_names_export(out[n], n)
    return out


def _run(path, args, out) -> int:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = main(["report", str(path), *args, "--no-cache", "-o", str(out), "--force"])
    assert code == 0, sink.getvalue()[-2000:]
    return code


def _calls(path, args, out) -> int:
    prof = cProfile.Profile()
    prof.enable()
    try:
        _run(path, args, out)
    finally:
        prof.disable()
    return sum(entry.callcount for entry in prof.getstats())


@pytest.mark.parametrize("case", list(COMMANDS))
def test_work_grows_linearly_with_names(exports, tmp_path, case):
    args = COMMANDS[case]
    _run(exports[SMALL], args, tmp_path / "warm")  # imports and caches outside the count
    small = _calls(exports[SMALL], args, tmp_path / "small")
    large = _calls(exports[LARGE], args, tmp_path / "large")
    print(case, small, large, large / small)
    assert large / small < 2 * LARGE / SMALL, (case, small, large)


def test_views_html_and_findings_never_build_dense_iteration_matrices(exports, tmp_path, monkeypatch):
    def refuse(self, what):
        raise AssertionError(f"dense iterations × phases matrix ({what}) built for a report")

    monkeypatch.setattr(iterations.Iterations, "_dense", refuse)
    for args in (["-f", "html"], []):
        _run(exports[LARGE], args, tmp_path / "out")
    _run(exports[LARGE], ["--view", "all", "-f", "json"], tmp_path / "doc.json")
    views = json.loads((tmp_path / "doc.json").read_text())["views"]
    rows = {r["phase"]: r for r in views["iterations"]["rows"]}
    assert len(rows) == 2 * LARGE + 1  # the key and every step_i / render_i
    assert rows["nvtxsim:step_7"]["iterations"] == 1 and rows["nvtxsim:step_7"]["max_ns"] > 0
    assert rows["nvtxsim:step_7"]["p99_ns"] == 0  # absent from all other iterations
    slow = views["slowest"]["rows"][0]
    assert len(slow["phases"]) == 3  # the key and the two phases of that iteration, not every phase
