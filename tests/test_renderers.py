"""One output model, one renderer protocol: every command's document renders through the registry.

A format's name means something in one place only (the registry): everything else reads what a
renderer declares. Per-table facts (titles, which columns a narrow terminal keeps) live on the table
and its columns, so a renderer shows what the document says rather than rebuilding it.
"""

from __future__ import annotations

import ast
import csv
import html
import io
from pathlib import Path

import pytest

from nvtxsim.analysis.compare import CompareSettings
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.reader import load
from nvtxsim.reporting import renderers
from nvtxsim.reporting.compare import compare_document, compare_exports
from nvtxsim.reporting.document import Document
from nvtxsim.reporting.pipeline import analyse, render, report, request
from nvtxsim.reporting.renderers import FORMATS, formats_for, renderer, terminal
from nvtxsim.reporting.renderers.base import Renderer
from nvtxsim.reporting.viewtable import Column, ViewTable, cell

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nvtxsim"
REGISTRY = PACKAGE / "reporting" / "renderers" / "__init__.py"
GPU = ROOT / "tests" / "data" / "gpu"
DEMO = GPU / "demo_h200.sqlite.gz"


# --------------------------------------------------------------------------- format names: the registry only


def _format_names(node: ast.AST) -> list[str]:
    """The format names a constant, or a tuple/list/set of constants, spells."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str) and i.value in FORMATS]


def format_branches(source: str, where: str = "<source>") -> list[str]:
    """Each place ``source`` asks for a format by name: a comparison with one (``fmt == "html"``,
    ``fmt in ("csv", "json")``), a match on one, a lookup by one, or a literal list or table of several."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Compare):
            names = [n for operand in (node.left, *node.comparators) for n in _format_names(operand)]
            if names:
                found.append(f"{line}: compares with {names}")
        elif isinstance(node, ast.MatchValue) and _format_names(node.value):
            found.append(f"{line}: matches {_format_names(node.value)}")
        elif isinstance(node, ast.Subscript) and _format_names(node.slice):
            found.append(f"{line}: looks up {_format_names(node.slice)}")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(_format_names(node)) > 1:
            found.append(f"{line}: lists {_format_names(node)}")
        elif isinstance(node, ast.Dict) and len([k for k in node.keys if k is not None and _format_names(k)]) > 1:
            found.append(f"{line}: a table keyed by format")
    return found


def test_no_format_name_is_branched_on_outside_the_registry() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != REGISTRY
        for hit in format_branches(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, "ask the registry (nvtxsim.reporting.renderers) what a format does instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        'if fmt == "json":\n    pass',
        'ok = "html" != fmt',
        'if fmt in ("csv", "markdown"):\n    pass',
        'if fmt not in PAGE:\n    pass\nPAGE = ["html", "perfetto"]',
        'match fmt:\n    case "table":\n        pass',
        'SUFFIX = {"html": ".html", "csv": ".csv"}',
        'x = SUFFIXES["perfetto"]',
    ],
)
def test_the_check_sees_every_way_of_branching(source: str) -> None:
    assert format_branches(source)


def test_the_check_leaves_other_words_alone() -> None:
    assert not format_branches('if kind == "report" or unit in ("str", "tree") or name == "summary":\n    pass')
    assert REGISTRY.exists() and format_branches(REGISTRY.read_text(encoding="utf-8"))  # the one place they are


# --------------------------------------------------------------------------- the protocol


def test_every_format_is_a_typed_renderer() -> None:
    for fmt in FORMATS:
        r = renderer(fmt)
        assert isinstance(r, Renderer) and r.kinds, fmt
        assert all(s.startswith(".") for s in r.suffixes), fmt
    assert "perfetto" not in formats_for("compare") and "perfetto" in formats_for("report")
    assert renderers.format_of_file("out.HTML") == "html" and renderers.format_of_file("x.perfetto.json") == "json"
    assert renderers.file_suffix(renderers.DEFAULT_FORMAT) is None  # the terminal's format: standard output


def _documents() -> dict[str, Document]:
    from nvtxsim.analysis.live import load as load_live
    from nvtxsim.analysis.ranks import rank_spread, report_many
    from nvtxsim.reporting.live import live_document
    from nvtxsim.reporting.ranks import ranks_document
    from nvtxsim.reporting.scaling import scaling_document, sweep

    clean, planted = load(GPU / "findings_clean.sqlite.gz"), load(GPU / "findings_planted.sqlite.gz")
    comparison = compare_exports(clean, planted, CompareSettings(resamples=100), domain="nvtxsim")
    runs = [f"{GPU / 'scaling' / f'scaling_{n}.sqlite.gz'}={n}" for n in (1024, 4096, 16384)]
    per, merged = report_many([GPU / "findings_clean.sqlite.gz", GPU / "findings_planted.sqlite.gz"], workers=1)
    live = sorted((ROOT / "reports" / "raw" / "live").glob("*.jsonl"))[0]
    return {
        "report": report(DEMO, views="summary").document(),
        "ranks": ranks_document(per, merged, rank_spread(per)),
        "compare": compare_document(comparison),
        "scaling": scaling_document(sweep(runs, "num_envs")),
        "live": live_document(load_live(live)),
    }


def test_every_document_renders_in_every_format_that_declares_it() -> None:
    docs = _documents()
    for kind, doc in docs.items():
        assert doc.kind == kind
        for fmt in FORMATS:
            r = renderer(fmt)
            if not r.renders(doc.kind):
                with pytest.raises(NvtxsimError, match="cannot show"):
                    renderers.render(doc, fmt)
                continue
            if r.needs_plots and doc.kind == "report":
                continue  # the report's page needs the plots' data: below, through the pipeline
            text = renderers.render(doc, fmt, width=80)
            assert text.endswith("\n"), (kind, fmt)
    page = render(report(DEMO, views="summary", fmt="html"), "html")
    assert page.startswith("<!DOCTYPE html>") and "Per thread" in page


# --------------------------------------------------------------------------- the summary: one table


def test_the_summary_table_is_what_every_tabular_format_shows() -> None:
    """A change to the summary's view table shows in the table, markdown, csv and html output: no format
    rebuilds the summary from the per-phase numbers."""
    model = analyse(load(DEMO), request(findings=False))
    t = model.view("summary")
    t.columns = [c if c.key != "instances" else Column("instances", "COUNT", "int") for c in t.columns]
    t.rows[0]["instances"] = 987654
    t.rows[0]["cpu_total_ns"] = 31_000_000_000
    assert "987,654" in render(model, "table") and "31.000 s" in render(model, "table")
    assert "| COUNT |" in render(model, "markdown") and "987,654" in render(model, "markdown")
    rows = list(csv.DictReader(io.StringIO(render(model, "csv"))))
    assert rows[0]["instances"] == "987654" and rows[0]["cpu_total_ns"] == "31000000000"
    assert "phase" not in rows[0] and list(rows[0])[:2] == ["domain", "name"]  # its record keys: the fields


def test_a_bare_report_renders_as_its_summary() -> None:
    model = report(DEMO, findings=False)
    assert render(model.summary, "table") == render(model, "table")
    assert render(model.summary, "json") == model.to_json()


# --------------------------------------------------------------------------- facts on the table and column


def test_a_narrow_terminal_keeps_columns_by_their_priority() -> None:
    """Room for two of three numbers: the two with a priority, whatever their keys, in table order."""
    cols = [
        Column("name", "Name"),
        Column("a", "aaaaaaaa", "int"),
        Column("b", "bbbbbbbb", "int", priority=1),
        Column("c", "cccccccc", "int", priority=0),
    ]
    lines = terminal.table_lines(cols, [["x", "1", "2", "3"]], width=24)
    assert lines[0].split() == ["Name", "bbbbbbbb", "cccccccc"]
    assert " ".join(lines[2:]).startswith("left out: aaaaaaaa")
    narrower = terminal.table_lines(cols, [["x", "1", "2", "3"]], width=16)
    assert narrower[0].split() == ["Name", "cccccccc"]


def test_a_column_that_may_be_dropped_when_empty() -> None:
    cols = [Column("name", "Name"), Column("gpu", "GPU busy", "ns", drop_if_empty=True), Column("cpu", "CPU", "ns")]
    t = ViewTable("t", "t", cols, [{"name": "a", "gpu": 0, "cpu": 5}, {"name": "b", "gpu": None, "cpu": 7}])
    rows = [[cell(c, r) for c in t.columns] for r in t.rows]
    fitted = terminal.table_lines(t.columns, rows, width=80)
    assert "GPU busy" not in fitted[0] and "CPU" in fitted[0] and not any("left out" in ln for ln in fitted)
    assert "GPU busy" in terminal.table_lines(t.columns, rows, width=None)[0]  # a pipe, --wide: every column
    rows[1][1] = "3 ns"
    assert "GPU busy" in terminal.table_lines(t.columns, rows, width=80)[0]


def test_each_view_declares_its_page_heading() -> None:
    from nvtxsim.reporting.views import VIEWS

    model = report(DEMO, fmt="html")
    page = render(model, "html")
    for t in model.views:
        assert t.page_title == VIEWS[t.name].page_title
        assert f'<section id="v-{t.name}"><h2>{html.escape(t.page_title)}</h2>' in page


# --------------------------------------------------------------------------- library, not cli


def test_compare_picks_one_domain_for_both_runs_and_says_why() -> None:
    """The default domain in one run only: both are compared in it, and the note names the run that lacks it."""
    demo, torch = load(DEMO), load(GPU / "torch_nvtx_h200.sqlite.gz")
    c = compare_exports(demo, torch, CompareSettings(resamples=100), domain="nvtxsim", names=("A", "B"))
    assert c.notes[0].startswith("B has no range in domain 'nvtxsim'")
    assert {p.status for p in c.phases} == {"removed"} and c.findings is not None  # the findings were diffed
    assert (
        compare_exports(demo, torch, CompareSettings(resamples=100), domain="nvtxsim", findings=False).findings is None
    )
