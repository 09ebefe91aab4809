"""Terminal, Markdown, CSV and JSON renderings of view tables.

The ``summary`` view goes through :mod:`nvtxsim.reporting.summary` unchanged, so the default
report looks the same whether or not other views are asked for. Machine formats
keep raw values (integer ns, bytes, fractions); human formats pick units.
"""

from __future__ import annotations

from typing import Any, Optional

from nvtxsim.analysis.projection import Report
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.escaping import csv_table, json_text
from nvtxsim.reporting.summary import fmt_bytes, fmt_ns, json_document, markdown_cell, render_csv, render_markdown, render_table
from nvtxsim.reporting.viewtable import Column, ViewTable


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


def _plain_rows(t: ViewTable) -> list[list[str]]:
    return [[cell(c, r) for c in t.columns] for r in t.rows]


def table_text(t: ViewTable, *, width: Optional[int] = None, color: bool = False) -> str:
    """``t`` for a terminal ``width`` columns wide (None: whole, as wide as it needs)."""
    from nvtxsim.reporting.renderers import terminal

    return terminal.render(t.columns, _plain_rows(t), heading=terminal.fit_text(t.title, width), width=width, color=color, notes=t.notes)


def markdown_text(t: ViewTable) -> str:
    esc = markdown_cell
    lines = [f"### {esc(t.title)}", ""]
    if t.rows:
        lines.append("| " + " | ".join(esc(c.header) for c in t.columns) + " |")
        lines.append("|" + "|".join(" --- " if c.unit in ("str", "tree") else " ---: " for c in t.columns) + "|")
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


def render_views(report: Report, tables: list[ViewTable], fmt: str, *, width: Optional[int] = None, color: bool = False) -> str:
    """All requested views in one text (csv: exactly one view)."""
    if fmt == "json":
        doc = json_document(report)
        doc["views"] = {t.name: t.as_dict() for t in tables}
        return json_text(doc, indent=2) + "\n"
    if fmt == "csv":
        if len(tables) != 1:
            raise NvtxsimError("csv holds one table: ask for one --view (or use json, markdown or html for several)")
        t = tables[0]
        return render_csv(report) if t.name == "summary" else csv_text(t)
    from nvtxsim.reporting.findings import before_markdown, before_table, block_lines, block_markdown

    parts = []
    if report.findings is not None and fmt in ("table", "markdown") and not any(t.name == "summary" for t in tables):
        parts.append("\n".join(block_lines(report.findings, width)) + "\n" if fmt == "table" else block_markdown(report.findings))
    for t in tables:
        if fmt == "table":
            parts.append(render_table(report, width=width, color=color, before=before_table(report, width)) if t.name == "summary" else table_text(t, width=width, color=color))
        elif fmt == "markdown":
            parts.append(render_markdown(report, before=before_markdown(report)) if t.name == "summary" else markdown_text(t))
        else:
            raise NvtxsimError(f"format {fmt!r} does not render views")
    return "\n".join(parts)
