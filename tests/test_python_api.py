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
