"""The renderer registry: the one place a format's name means something.

``FORMATS`` maps each format name to the :class:`~nvtxsim.reporting.renderers.base.Renderer`
that renders it; everything else asks this module (``renderer(name)``) and reads what the
renderer declares, never the name itself. A renderer's module is imported when its format is
first asked for, so none is imported by ``import nvtxsim``.

The other modules here are the formats' renderers (``console`` for the table format, ``csv``,
``json``, ``markdown``, ``html``, ``perfetto``) and what they share: ``terminal`` (fitting text
to a terminal's width) and ``figures`` (the HTML pages' plots).
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nvtxsim.reporting.document import Document, DocumentKind
    from nvtxsim.reporting.renderers.base import Renderer

#: Format name → ``module:Class`` (in this package) of its renderer, in the order the formats are listed.
FORMATS: dict[str, str] = {
    "table": "console:ConsoleRenderer",
    "csv": "csv:CsvRenderer",
    "json": "json:JsonRenderer",
    "markdown": "markdown:MarkdownRenderer",
    "html": "html:HtmlRenderer",
    "perfetto": "perfetto:PerfettoRenderer",
}
#: The format of a command given none (and of an output file whose name asks for none).
DEFAULT_FORMAT = "table"


@functools.cache
def renderer(fmt: str) -> Renderer:
    """The renderer of format ``fmt``."""
    try:
        module, name = FORMATS[fmt].split(":")
    except KeyError:
        from nvtxsim.errors import NvtxsimError

        raise NvtxsimError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}") from None
    cls: type[Renderer] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return cls()


def formats_for(kind: DocumentKind) -> tuple[str, ...]:
    """The formats a document of ``kind`` can be rendered in (a command's ``--format`` choices)."""
    return tuple(f for f in FORMATS if renderer(f).renders(kind))


def format_of_file(path: str | os.PathLike[str]) -> str | None:
    """The format an output file's name asks for (``report.html``: html), None when it names none."""
    ext = os.path.splitext(str(path))[1].lower()
    return next((f for f in FORMATS if ext and ext in renderer(f).suffixes), None)


def file_suffix(fmt: str) -> str | None:
    """How a file of format ``fmt`` is named (``.html``); None: the format is for a terminal (standard output)."""
    suffixes = renderer(fmt).suffixes
    return suffixes[0] if suffixes else None


def render(doc: Document, fmt: str, *, width: int | None = None, color: bool = False) -> str:
    """``doc`` in format ``fmt``; ``width``: a terminal's columns (None: unbounded), ``color``: for a terminal."""
    r = renderer(fmt)
    if not r.renders(doc.kind):
        from nvtxsim.errors import NvtxsimError

        raise NvtxsimError(f"format {fmt!r} cannot show this; choose from {', '.join(formats_for(doc.kind))}")
    return r.render(doc, width=width, color=color)
