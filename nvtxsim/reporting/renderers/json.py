"""The json format: the document's own data (each command keeps its own schema: docs/report.md, docs/scaling.md, docs/live.md)."""

from __future__ import annotations

from nvtxsim.reporting.document import Document
from nvtxsim.reporting.escaping import json_text
from nvtxsim.reporting.renderers.base import Renderer


class JsonRenderer(Renderer):
    suffixes = (".json",)

    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        return json_text(doc.data(), indent=2) + "\n"
