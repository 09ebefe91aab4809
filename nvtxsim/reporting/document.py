"""The output model: what every command's output is made of, whatever format it is rendered in.

``report``, ``compare``, ``scaling`` and ``live`` (and a report of several ranks) each build one
:class:`Document`: sections of blocks — :class:`~nvtxsim.reporting.viewtable.ViewTable`\\ s and
:class:`Prose` (headings, notes, warnings), the findings, and figures for pages that draw — plus
what a page's header shows, the JSON document and the one flat table of single-table formats.
A renderer (:mod:`nvtxsim.reporting.renderers`) turns any document into text: it decides how a
block looks in its format, never what the document says.

Layout, the same for every format that has it: a section's blocks follow each other line by line,
sections are set apart by a blank line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from nvtxsim.reporting.viewtable import ViewTable

if TYPE_CHECKING:
    from nvtxsim.analysis.findings import Findings
    from nvtxsim.analysis.selection import Selection

#: What built a document: renderers say which of these they render.
DocumentKind = Literal["report", "ranks", "compare", "scaling", "live", "stacks"]
KINDS: tuple[DocumentKind, ...] = ("report", "ranks", "compare", "scaling", "live", "stacks")


@dataclass(frozen=True)
class Phrase:
    """A line of nvtxsim's own words around data (names from an export): ``Phrase(("rank 0: ", name))``.

    ``parts`` alternate: nvtxsim's words, data, words, data, ... Formats with markup escape the data
    only, so the words keep their punctuation; a plain ``str`` line is data throughout."""

    parts: tuple[str, ...]

    def text(self, escape: Callable[[str], str] = str) -> str:
        return "".join(p if i % 2 == 0 else escape(p) for i, p in enumerate(self.parts))


Line = str | Phrase


def line_text(line: Line, escape: Callable[[str], str] = str) -> str:
    """``line`` as text, its data escaped by ``escape`` (a plain ``str`` is data throughout)."""
    return escape(line) if isinstance(line, str) else line.text(escape)


#: source: what the output is about (export, nsys version, counts), one line made of ``lines`` as parts;
#: heading: a heading per line; warning, note: under what they qualify; remark: a plain line under a table;
#: items: a list, one item per line.
ProseKind = Literal["source", "headline", "heading", "warning", "note", "remark", "items"]


@dataclass
class Prose:
    """Sentences: a heading, warnings, notes, a list."""

    kind: ProseKind
    lines: Sequence[Line]


@dataclass
class FindingsBlock:
    """The report's short Findings block (what is slow, why, what to do); ``phases``: the summary's phase
    labels, which a page links each finding to."""

    findings: Findings
    phases: list[str] = field(default_factory=list)
    #: The same document holds the findings view (every finding, with its evidence and advice): text formats
    #: leave this short block out rather than print the findings twice; a page keeps it (its links).
    in_view: bool = False


@dataclass
class ChangeList:
    """What changed between two runs, one item per change: ``(what, text)`` such as ``("appeared", ...)``."""

    title: str
    summary: str
    items: list[tuple[str, str]]


#: forest: compare's change per phase with its interval; loglog: scaling's fits per phase;
#: over_training: live timing's time per phase over the run.
FigureKind = Literal["forest", "loglog", "over_training"]


@dataclass
class Figure:
    """A plot, drawn by formats that draw (the HTML page) from ``data``; text formats leave it out."""

    kind: FigureKind
    title: str
    subtitle: str
    data: Any


Block = ViewTable | Prose | FindingsBlock | ChangeList | Figure
Section = list[Block]


@dataclass(frozen=True)
class SourcePart:
    """One part of the line under a page's heading: ``label: text``; ``isolated``: the text is data whose
    bidi controls must not reorder the other parts (a file name)."""

    text: str
    label: str | None = None
    isolated: bool = True


@dataclass
class PageHead:
    """What a page's header shows: its title, heading, the source line and notes (text formats show
    the document's own prose instead)."""

    title: str
    heading: str
    source: list[SourcePart] = field(default_factory=list)
    notes: list[Prose] = field(default_factory=list)


@dataclass
class Document:
    """One command's output."""

    kind: DocumentKind
    sections: list[Section]
    head: PageHead
    data: Callable[[], dict]  # the JSON document (its schema is the command's own, docs/*.md)
    flat: ViewTable | None = None  # the one table of formats that hold one (csv); None: there is none
    plots: dict | None = None  # the data an interactive page draws its plots from (the report's HTML)
    detail: Selection | None = field(default=None, repr=False)  # the analysed export (the Perfetto trace)

    def blocks(self) -> Iterator[Block]:
        for section in self.sections:
            yield from section

    def tables(self) -> list[ViewTable]:
        return [b for b in self.blocks() if isinstance(b, ViewTable)]
