"""The json format: the report model's own serialisation (:meth:`~nvtxsim.reporting.model.ReportModel.to_json`)."""

from __future__ import annotations

from nvtxsim.reporting.model import ReportModel


def render(model: ReportModel, *, width: int | None = None, color: bool = False) -> str:
    return model.to_json()
