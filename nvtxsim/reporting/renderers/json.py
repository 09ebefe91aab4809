"""The json format: the report model's own serialisation (:meth:`~nvtxsim.reporting.model.ReportModel.to_json`)."""

from __future__ import annotations

from nvtxsim.analysis.projection import Report
from nvtxsim.reporting.model import ReportModel
from nvtxsim.reporting.summary import ranks_json


def render(model: ReportModel, *, width: int | None = None, color: bool = False) -> str:
    return model.to_json()


def render_ranks(
    reports: list[Report], merged: Report, spread: list[dict], *, width: int | None = None, color: bool = False
) -> str:
    return ranks_json(reports, merged, spread)
