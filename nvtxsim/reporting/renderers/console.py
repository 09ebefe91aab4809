"""The table format: a document for a terminal, every table and line fitted to its width (:mod:`.terminal`)."""

from __future__ import annotations

from nvtxsim.reporting.document import ChangeList, Document, FindingsBlock, Prose, line_text
from nvtxsim.reporting.renderers import terminal
from nvtxsim.reporting.renderers.base import Renderer
from nvtxsim.reporting.viewtable import ViewTable, cell


class ConsoleRenderer(Renderer):
    """Sections set apart by a blank line; ``width``: the terminal's columns (None: every column, whole names)."""

    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        texts = []
        for section in doc.sections:
            lines = [ln for block in section for ln in block_lines(block, width, color)]
            if lines:
                texts.append("\n".join(lines) + "\n")
        return "\n".join(texts)


def block_lines(block: object, width: int | None, color: bool = False) -> list[str]:
    """One block's lines (none for a figure: a terminal does not draw)."""
    if isinstance(block, ViewTable):
        return table_lines(block, width, color)
    if isinstance(block, Prose):
        return prose_lines(block, width)
    if isinstance(block, FindingsBlock):
        if block.in_view:
            return []
        from nvtxsim.reporting.findings import block_lines as findings_lines

        return findings_lines(block.findings, width)
    if isinstance(block, ChangeList):
        from nvtxsim.reporting.findings import fit_line

        return [f"{block.title}: {block.summary}"] + [
            fit_line(f"{what:<8} {text}", width) for what, text in block.items
        ]
    return []


def table_lines(t: ViewTable, width: int | None, color: bool = False) -> list[str]:
    """Its title (parts split at " · ", each whole on a line where it fits), the fitted table (or what an
    empty one says) and its notes; bold header when ``color``."""
    heading = terminal.fit_parts(t.title.split(" · "), width) if t.headed else []
    rows = [[cell(c, r) for c in t.columns] for r in t.rows]
    body = terminal.table_lines(t.columns, rows, width=width, color=color) if rows else [t.empty]
    return heading + body + terminal.notes_lines(t.notes, width, prefix="note: ")


def prose_lines(p: Prose, width: int | None) -> list[str]:
    texts = [line_text(line) for line in p.lines]
    if p.kind in ("source", "headline"):
        return terminal.fit_parts(texts, width)
    if p.kind in ("warning", "note"):
        return terminal.notes_lines(texts, width, prefix=f"{p.kind}: ")
    if p.kind == "items":
        return [f"  {ln}" for t in texts for ln in terminal.fit_text(t, width - 2 if width else None)]
    return [ln for t in texts for ln in terminal.fit_text(t, width)]  # heading, remark
