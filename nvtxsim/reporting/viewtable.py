"""A view's result as a plain table: named columns with units, rows of plain values.

Every table nvtxsim shows (the summary, the detail views, compare, scaling, live) is a
:class:`ViewTable`, so one set of renderers serves all of them. Values stay raw (integer ns,
bytes, fractions); units only matter for display. What a renderer needs to know about a table
or a column beyond its values (its headings, which columns a narrow terminal keeps first, what
an empty table says) is declared here, on the table or the column, never in a renderer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Column:
    """One column: the row key it shows, its header, and the unit its values are shown in."""

    key: str
    header: str
    unit: str = "str"  # str | int | ns | bytes | pct | ratio | float | num | tree (indented by the row's "depth")
    #: Where a narrow terminal has no room for every column, number columns are kept lowest priority first;
    #: those without one follow in table order. Names (str, tree) are always kept.
    priority: int | None = None
    #: Sentences (a finding's evidence, its advice): shown after every number where there is room, and cut
    #: at their end (their start says what they are about), never inside a number.
    prose: bool = False
    #: Shown for a row that lacks the key (a phase without memory data in a report with memory: 0).
    default: Any = ""
    #: A fitted terminal table leaves the column out when no row has a value (every cell empty or 0): it
    #: would say nothing in the room a column with something to say needs.
    drop_if_empty: bool = False
    #: A fitted terminal table writes a prefix that every row shares, up to and including this separator
    #: (``nvtxsim:`` of a report on one domain), once in the header instead of in every row.
    shared_prefix: str | None = None
    #: A fitted terminal table whose rows all hold the same value here says it once, on a line above the
    #: table (``Thread: main (740)``), instead of spending the column's width on it in every row.
    once: bool = False

    @property
    def text(self) -> bool:
        """A column of names or sentences (left-aligned, shortened where room is short) rather than numbers."""
        return self.unit in TEXT_UNITS


#: Units of text columns: left-aligned, and shortened rather than left out on a narrow terminal.
TEXT_UNITS = ("str", "tree")


@dataclass
class ViewTable:
    """A table and what its renderers show around it."""

    name: str  # view name (tree, iterations, ...), the key in JSON
    title: str  # above the table in text formats, its subtitle on the HTML page, "title" in JSON
    columns: list[Column]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)  # under the table in every format, "notes" in JSON
    page_title: str = ""  # its heading on an HTML page (and in the page's navigation); empty: the title
    headed: bool = True  # text formats show the title above it (the summary: the report's source line is there)
    empty: str = "(nothing to show)"  # what text formats show instead of a table without rows
    #: The keys a machine table (csv) holds, in order; None: every key of the rows.
    record_keys: tuple[str, ...] | None = None
    sortable: bool = True  # an HTML page sorts it by a clicked header (the tree: no, its order is the nesting)
    row_anchor: str | None = None  # HTML rows get the id "<row_anchor>-<index>" (findings link to their phase's row)

    def as_dict(self) -> dict:
        return {"title": self.title, "rows": self.rows, "notes": list(self.notes)}

    @property
    def heading(self) -> str:
        """Its heading on an HTML page."""
        return self.page_title or self.title


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
    v = row.get(col.key, col.default)
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
