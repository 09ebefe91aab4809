"""The csv format: one table (the summary, or the one view asked for), raw values."""

from __future__ import annotations

from nvtxsim.analysis.projection import Report
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.model import ReportModel
from nvtxsim.reporting.renderers.tables import csv_text
from nvtxsim.reporting.summary import ranks_csv, render_csv

SHOWS_FINDINGS = False  # the findings are computed only for --fail-on


def render(model: ReportModel, *, width: int | None = None, color: bool = False) -> str:
    if len(model.views) != 1:
        raise NvtxsimError("csv holds one table: ask for one --view (or use json, markdown or html for several)")
    t = model.views[0]
    return render_csv(model.summary) if t.name == "summary" else csv_text(t)


def render_ranks(
    reports: list[Report], merged: Report, spread: list[dict], *, width: int | None = None, color: bool = False
) -> str:
    return ranks_csv(reports, merged)
