"""The csv format: the document's one flat table, raw values (integer ns, bytes, fractions) under their keys."""

from __future__ import annotations

from typing import Any

from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.document import Document
from nvtxsim.reporting.escaping import csv_table, json_text
from nvtxsim.reporting.renderers.base import Renderer
from nvtxsim.reporting.viewtable import ViewTable


class CsvRenderer(Renderer):
    suffixes = (".csv",)
    shows_findings = False  # the findings are computed only for --fail-on

    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        if doc.flat is None:
            raise NvtxsimError("csv holds one table: ask for one --view (or use json, markdown or html for several)")
        return table_csv(doc.flat)


def table_csv(t: ViewTable) -> str:
    """The table's record keys (default: every key of its rows, in order of appearance) as columns."""
    keys = list(t.record_keys) if t.record_keys is not None else _keys(t)
    return csv_table(keys, ([_value(row.get(k, "")) for k in keys] for row in t.rows))


def _keys(t: ViewTable) -> list[str]:
    keys: dict[str, None] = {}
    for row in t.rows:
        keys.update(dict.fromkeys(row))
    return list(keys) or [c.key for c in t.columns]


def _value(v: Any) -> Any:
    return json_text(v) if isinstance(v, (list, dict)) else v
