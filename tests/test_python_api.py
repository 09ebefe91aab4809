"""``nvtxsim.report()`` / ``nvtxsim.load()``: the CLI's report from Python, and the pipeline's one path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed

import nvtxsim

GPU = Path(__file__).resolve().parent / "data" / "gpu"
DEMO = GPU / "demo_h200.sqlite.gz"
GRAPHS = GPU / "demo_h200_graphlevel.sqlite.gz"


def _cli_json(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", *args, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize("views", [None, "tree,kernels"])
def test_report_model_json_is_the_cli_json(views):
    committed(DEMO)
    model = nvtxsim.report(DEMO, **({"views": views} if views else {}))
    cli = _cli_json(str(DEMO), *(["--view", views] if views else []))
    assert json.loads(model.to_json()) == cli
    assert ("views" in cli) == bool(views)


def test_load_returns_the_columns():
    committed(DEMO)
    export = nvtxsim.load(DEMO)
    assert len(export.ranges) and export.has_cuda
    assert nvtxsim.report(DEMO).source["ranges"] == len(export.ranges)


def test_import_stays_light():
    code = "import sys, nvtxsim; print(sorted(m for m in sys.modules if m.startswith(('nvtxsim.reporting', 'nvtxsim.export', 'nvtxsim.analysis', 'numpy'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("views", ["summary", "summary,tree", "tree", "all"])
def test_cuda_graph_warning_on_every_view(views):
    """One warning for graph-level CUDA graphs, whatever the views (it used to vanish with --view summary,tree)."""
    committed(GRAPHS)
    warnings = nvtxsim.report(GRAPHS, views=views).warnings
    assert sum("graph-level" in w for w in warnings) == 1, warnings


def test_findings_are_a_sequence_most_costly_first():
    """``model.findings[:1]`` (docs/report.md) works: the findings are a sequence of Finding."""
    fs = nvtxsim.report(DEMO).findings
    assert fs is not None and len(fs) == len(fs.items) > 0
    assert fs[:1] == fs.items[:1] and fs[0] is fs.items[0] and list(fs) == fs.items
    costs = [f.cost_ns for f in fs]
    assert costs == sorted(costs, reverse=True)
    assert nvtxsim.report(DEMO, findings=False).findings is None


def test_a_view_not_asked_for_is_computed_and_a_wrong_name_is_one_clear_error():
    model = nvtxsim.report(DEMO)  # the summary only
    tree = model.view("tree")
    assert tree.rows == nvtxsim.report(DEMO, views="tree").view("tree").rows
    assert [t.name for t in model.views] == ["summary"] and "views" not in json.loads(model.to_json())
    with pytest.raises(nvtxsim.errors.NvtxsimError, match="did you mean 'tree'"):
        model.view("tre")


def test_a_cpu_export_says_it_has_no_cuda():
    export = nvtxsim.load(Path(__file__).resolve().parent / "data" / "reliability" / "cpu_loop_2022_4.sqlite.gz")
    assert not export.has_cuda and export.gpu is None and export.api is None and len(export.ranges.start) > 0
