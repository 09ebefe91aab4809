"""Renderers: one module per output format, each with ``render(model, *, width, color) -> str``.

``FORMATS`` is the one place a format name maps to its module; a module is imported only
when its format is asked for (start-up time of a small report matters). A renderer only
formats: what it shows is computed before, into the :class:`~nvtxsim.reporting.model.ReportModel`.
A module may also say what the pipeline must prepare for it: ``views_shown(asked) -> views``
(HTML shows every view), ``NEEDS_PAGE`` (the HTML plots' data), ``SHOWS_FINDINGS = False``; and
render several exports at once: ``render_ranks(reports, merged, spread, *, width, color)``.

Other modules here are shared pieces, not formats: ``tables`` (one view table as
terminal/markdown/csv text), ``terminal`` (fitting tables to the terminal), and the renderers
of the other commands (``compare``, ``live``, ``scaling``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: Format name → module (in this package) that renders it.
FORMATS = {
    "table": "table",
    "csv": "csv",
    "json": "json",
    "markdown": "markdown",
    "html": "html",
    "perfetto": "perfetto",
}
#: Formats that show every view whatever is asked for, and cannot show several exports.
PAGE_FORMATS = ("html", "perfetto")


def renderer(fmt: str) -> ModuleType:
    """The module that renders ``fmt``."""
    try:
        name = FORMATS[fmt]
    except KeyError:
        from nvtxsim.errors import NvtxsimError

        raise NvtxsimError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}") from None
    return importlib.import_module(f"{__name__}.{name}")


def render(model: Any, fmt: str, *, width: int | None = None, color: bool = False) -> str:
    """``model`` (a :class:`~nvtxsim.reporting.model.ReportModel`) in ``fmt``; ``width``: a terminal's columns (None: unbounded), ``color``: for a terminal."""
    return renderer(fmt).render(model, width=width, color=color)


def render_ranks(
    fmt: str, reports: list, merged: Any, spread: list[dict], *, width: int | None = None, color: bool = False
) -> str:
    """Several exports (one per rank) in ``fmt``: per rank, merged, and the spread (formats with ``render_ranks``)."""
    module = renderer(fmt)
    if not hasattr(module, "render_ranks"):
        from nvtxsim.errors import NvtxsimError

        raise NvtxsimError(
            f"format {fmt!r} shows one export; with several use one of: {', '.join(f for f in FORMATS if f not in PAGE_FORMATS)}"
        )
    return module.render_ranks(reports, merged, spread, width=width, color=color)
