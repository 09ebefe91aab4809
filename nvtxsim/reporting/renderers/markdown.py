"""The markdown format: every block as markdown, set apart by blank lines; text from an export is escaped."""

from __future__ import annotations

from typing import Any

from nvtxsim.reporting.document import ChangeList, Document, FindingsBlock, Prose, line_text
from nvtxsim.reporting.escaping import markdown_cell
from nvtxsim.reporting.renderers.base import Renderer
from nvtxsim.reporting.viewtable import Column, ViewTable, cell


class MarkdownRenderer(Renderer):
    suffixes = (".md", ".markdown")

    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        return "\n".join(text for block in doc.blocks() if (text := block_markdown(block)) is not None)


def block_markdown(block: object) -> str | None:
    """One block as markdown (None for a figure: markdown has no drawing)."""
    if isinstance(block, ViewTable):
        return table_markdown(block)
    if isinstance(block, Prose):
        return prose_markdown(block)
    if isinstance(block, FindingsBlock):
        if block.in_view:
            return None
        from nvtxsim.reporting.findings import block_markdown as findings_markdown

        return findings_markdown(block.findings)
    if isinstance(block, ChangeList):
        items = [f"- **{what}** {markdown_cell(text)}" for what, text in block.items]
        return "\n".join([f"### {block.title}", "", block.summary, ""] + items) + "\n"
    return None


def table_markdown(t: ViewTable) -> str:
    """Its title as a heading, the table (or what an empty one says) and its notes as quotes."""
    esc = markdown_cell
    lines = [f"### {esc(t.title)}", ""] if t.headed else []
    if t.rows:
        lines.append("| " + " | ".join(esc(c.header) for c in t.columns) + " |")
        lines.append("|" + "|".join(" --- " if c.text else " ---: " for c in t.columns) + "|")
        for row in t.rows:
            vals = [_tree_cell(row, c) if c.unit == "tree" else esc(cell(c, row)) for c in t.columns]
            lines.append("| " + " | ".join(vals) + " |")
    else:
        lines.append(t.empty)
    for n in t.notes:
        if n:
            lines += ["", f"> {esc(n)}"]
    return "\n".join(lines) + "\n"


def _tree_cell(row: dict[str, Any], col: Column) -> str:
    """A tree cell: the name escaped, then indented with non-breaking spaces (markdown collapses spaces)."""
    return "&nbsp;&nbsp;" * int(row.get("depth", 0)) + markdown_cell(str(row.get(col.key, "")))


#: How each kind of prose line starts (a source line is one bold line of its parts).
_LEADS = {"heading": "## ", "warning": "> warning: ", "note": "> ", "remark": "> ", "items": "- "}


def prose_markdown(p: Prose) -> str:
    if p.kind == "source":
        return f"**{markdown_cell(' · '.join(line_text(line) for line in p.lines))}**\n"
    if p.kind == "headline":
        return f"{markdown_cell(' · '.join(line_text(line) for line in p.lines))}\n"
    lines = [f"{_LEADS[p.kind]}{text}" for line in p.lines if (text := line_text(line, markdown_cell))]
    if p.kind in ("heading", "items"):
        return "".join(f"{ln}\n" for ln in lines)
    return "\n".join(f"{ln}\n" for ln in lines)  # quotes: a paragraph each
