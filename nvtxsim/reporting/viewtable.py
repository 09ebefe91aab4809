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


def fmt_ns(ns: float) -> str:
    """Nanoseconds in the unit that keeps 3-4 significant digits."""
    ns = float(ns)
    a = abs(ns)
    if a == 0:
        return "0"
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if a < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.3f} s"


def fmt_bytes(n: float) -> str:
    n = float(n)
    if n == 0:
        return "0"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def cell(col: Column, row: dict[str, Any]) -> str:
    """Display text of one value."""
    v = row.get(col.key, "")
    if v is None:
        return ""
    u = col.unit
    if u == "ns":
        return fmt_ns(v)
    if u == "bytes":
        return fmt_bytes(v)
    if u == "int":
        return f"{int(v):,}"
    if u == "pct":
        return f"{100 * float(v):.1f} %" if v else "0"
    if u == "ratio":
        return f"{float(v):.2f}×"
    if u == "float":
        return f"{float(v):,.2f}" if v else "0"
    if u == "tree":
        return "  " * int(row.get("depth", 0)) + str(v)
    return str(v)
