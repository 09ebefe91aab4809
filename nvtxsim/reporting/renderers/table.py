"""The terminal format: the summary and each requested view as a fitted table, the Findings block first."""

from __future__ import annotations

from nvtxsim.analysis.projection import Report
from nvtxsim.reporting.findings import before_table, block_lines
from nvtxsim.reporting.model import ReportModel
from nvtxsim.reporting.renderers import terminal
from nvtxsim.reporting.renderers.tables import table_text
from nvtxsim.reporting.summary import ranks_text, render_table


def render(model: ReportModel, *, width: int | None = None, color: bool = False) -> str:
    """``width``: the terminal's columns (None: every column, whole names); ``color``: bold headers."""
    report = model.summary
    names = [t.name for t in model.views]
    parts = []
    if report.findings is not None and "summary" not in names:
        parts.append("\n".join(block_lines(report.findings, width)) + "\n")
    for t in model.views:
        parts.append(
            render_table(report, width=width, color=color, before=before_table(report, width))
            if t.name == "summary"
            else table_text(t, width=width, color=color)
        )
    text = "\n".join(parts)
    if "summary" not in names and report.warnings:  # the summary carries them; without it they close the output
        text += "".join(f"\n{ln}" for ln in terminal.notes_lines(report.warnings, width, prefix="warning: ")) + "\n"
    return text


def render_ranks(
    reports: list[Report], merged: Report, spread: list[dict], *, width: int | None = None, color: bool = False
) -> str:
    """Several exports (one per rank): each rank's summary, the merged one, the spread across ranks."""
    return ranks_text(reports, merged, spread, markdown=False, color=color, width=width)
