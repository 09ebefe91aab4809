"""Terminal, Markdown and CSV renderings of one view table (shared by the report's formats, compare and live).

Machine formats keep raw values (integer ns, bytes, fractions); human formats pick units.
"""

from __future__ import annotations

from typing import Any

from nvtxsim.reporting.escaping import csv_table, json_text, markdown_cell
from nvtxsim.reporting.viewtable import Column, ViewTable, cell

__all__ = ["cell", "table_text", "markdown_text", "csv_text"]


def _plain_rows(t: ViewTable) -> list[list[str]]:
    return [[cell(c, r) for c in t.columns] for r in t.rows]


def table_text(t: ViewTable, *, width: int | None = None, color: bool = False) -> str:
    """``t`` for a terminal ``width`` columns wide (None: whole, as wide as it needs)."""
    from nvtxsim.reporting.renderers import terminal

    return terminal.render(
        t.columns,
        _plain_rows(t),
        heading=terminal.fit_parts(t.title.split(" · "), width),
        width=width,
        color=color,
        notes=t.notes,
    )


def markdown_text(t: ViewTable) -> str:
    esc = markdown_cell
    lines = [f"### {esc(t.title)}", ""]
    if t.rows:
        lines.append("| " + " | ".join(esc(c.header) for c in t.columns) + " |")
        lines.append("|" + "|".join(" --- " if c.text else " ---: " for c in t.columns) + "|")
        for row in t.rows:
            vals = [_markdown_tree(row, c) if c.unit == "tree" else esc(cell(c, row)) for c in t.columns]
            lines.append("| " + " | ".join(vals) + " |")
    else:
        lines.append("(nothing to show)")
    for n in t.notes:
        if n:
            lines += ["", f"> {esc(n)}"]
    return "\n".join(lines) + "\n"


def _markdown_tree(row: dict[str, Any], col: Column) -> str:
    """A tree cell: the name escaped, then indented with non-breaking spaces (markdown collapses spaces)."""
    return "&nbsp;&nbsp;" * int(row.get("depth", 0)) + markdown_cell(str(row.get(col.key, "")))


def csv_text(t: ViewTable) -> str:
    keys: list[str] = []
    for row in t.rows:
        for k in row:
            if k not in keys:
                keys.append(k)
    if not keys:
        keys = [c.key for c in t.columns]
    as_cell = lambda v: json_text(v) if isinstance(v, (list, dict)) else v  # noqa: E731
    return csv_table(keys, ([as_cell(row.get(k, "")) for k in keys] for row in t.rows))
