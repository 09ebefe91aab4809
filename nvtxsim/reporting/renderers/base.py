"""The renderer protocol: one subclass of :class:`Renderer` per output format.

A renderer turns any :class:`~nvtxsim.reporting.document.Document` it supports into text. It
only formats: what a document says is decided where the document is built. What a format needs
beyond the document, or cannot show, it declares here as class attributes, which the pipeline
and the commands read instead of asking for a format by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from nvtxsim.reporting.document import KINDS, Document, DocumentKind


class Renderer(ABC):
    """One output format."""

    #: The documents it renders (perfetto: a report only).
    kinds: ClassVar[frozenset[DocumentKind]] = frozenset(KINDS)
    #: File name endings that ask for it (``-o report.html``), the first is what nvtxsim names a file of it
    #: (profile's report beside the export); none: the terminal's format, printed to standard output.
    suffixes: ClassVar[tuple[str, ...]] = ()
    #: It shows the whole export whatever views are asked for (a page, a trace): ``--by`` adds no view, and
    #: the report's warnings are worked out on everything.
    shows_every_view: ClassVar[bool] = False
    #: The pipeline computes the data of the interactive page's plots (``Document.plots``) for it.
    needs_plots: ClassVar[bool] = False
    #: It shows the Findings block (the pipeline computes the findings only for ``--fail-on`` otherwise).
    shows_findings: ClassVar[bool] = True
    #: It shows the report's warnings (working out some of them can need every CUDA call).
    shows_warnings: ClassVar[bool] = True

    def views_shown(self, asked: list[str]) -> list[str]:
        """The views it shows when ``asked`` are asked for."""
        return asked

    def renders(self, kind: DocumentKind) -> bool:
        return kind in self.kinds

    @abstractmethod
    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        """``doc`` as text; ``width``: a terminal's columns (None: unbounded), ``color``: styling for a terminal."""
