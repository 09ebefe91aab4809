"""The markdown format: the summary and each requested view as a markdown table, the Findings block first."""

from __future__ import annotations

from nvtxsim.analysis.projection import Report
from nvtxsim.reporting.escaping import markdown_cell
from nvtxsim.reporting.findings import before_markdown, block_markdown
from nvtxsim.reporting.model import ReportModel
from nvtxsim.reporting.renderers.tables import markdown_text
from nvtxsim.reporting.summary import ranks_text, render_markdown


def render(model: ReportModel, *, width: int | None = None, color: bool = False) -> str:
    report = model.summary
    names = [t.name for t in model.views]
    parts = []
    if report.findings is not None and "summary" not in names:
        parts.append(block_markdown(report.findings))
    for t in model.views:
        parts.append(
            render_markdown(report, before=before_markdown(report)) if t.name == "summary" else markdown_text(t)
        )
    text = "\n".join(parts)
    if "summary" not in names and report.warnings:
        text += "".join(f"\n> warning: {markdown_cell(w)}\n" for w in report.warnings)
    return text


def render_ranks(
    reports: list[Report], merged: Report, spread: list[dict], *, width: int | None = None, color: bool = False
) -> str:
    return ranks_text(reports, merged, spread, markdown=True)
