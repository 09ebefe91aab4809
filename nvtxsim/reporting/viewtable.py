"""A view's result as a plain table: named columns with units, rows of plain values.

Every detail view (tree, iterations, kernels, ...) returns :class:`ViewTable`s, so
one set of renderers (terminal, csv, json, markdown, html) serves all of them.
Values stay raw (integer ns, bytes, fractions); units only matter for display.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    unit: str = "str"  # str | int | ns | bytes | pct | ratio | float | tree (indented by the row's "depth")


@dataclass
class ViewTable:
    name: str  # view name (tree, iterations, ...), the key in JSON
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"title": self.title, "rows": self.rows, "notes": list(self.notes)}
