"""A report of several exports (one per rank): each rank's summary, the merged one, and the spread across ranks."""

from __future__ import annotations

from collections.abc import Sequence

from nvtxsim.analysis.projection import PhaseSummary
from nvtxsim.reporting.document import Document, PageHead, Phrase, Prose, Section
from nvtxsim.reporting.summary import json_document, record_keys, summary_sections, summary_table
from nvtxsim.reporting.viewtable import ViewTable, fmt_ns


def ranks_document(
    reports: list[PhaseSummary], merged: PhaseSummary, spread: list[dict], *, notes: Sequence[str] = ()
) -> Document:
    """Per rank: a heading and its summary; then the merged summary and a line per phase of the spread.

    ``notes``: nvtxsim's own lines on how the ranks were found (``--ranks``: in pid order), first."""
    names = _names(reports)
    sections: list[Section] = [[Prose("note", [Phrase((n,)) for n in notes])]] if notes else []
    for i, r in enumerate(reports):
        sections.append([Prose("heading", [Phrase((f"rank {i}: ", names[i]))])])
        sections += summary_sections(r, summary_table(r))
    sections.append([Prose("heading", [Phrase((f"all {len(reports)} ranks merged",))])])
    sections += summary_sections(merged, summary_table(merged))
    sections.append([Prose("heading", [Phrase(("spread across ranks (CPU total per rank)",))])])
    sections.append([Prose("items", [_spread_line(row) for row in spread])])
    return Document(
        "ranks",
        sections,
        PageHead("nvtxsim report", "nvtxsim report"),
        data=lambda: _json(reports, merged, spread, notes),
        flat=_flat(reports, merged),
    )


def _names(reports: list[PhaseSummary]) -> list[str]:
    return [
        str(r.source.get("path", f"rank {i}")).split("#pid")[0]
        + (f" (pid {r.source['pid']})" if "pid" in r.source else "")
        for i, r in enumerate(reports)
    ]


def _spread_line(row: dict) -> Phrase:
    """``phase: totals (slowest: rank N, max/min R)`` (the phase is data)."""
    totals = " ".join(fmt_ns(t) for t in row["cpu_total_ns"])
    ratio = f"{row['max_over_min']:.2f}x" if row["max_over_min"] else "-"
    return Phrase(("", row["phase"], f": {totals} (slowest: rank {row['slowest_rank']}, max/min {ratio})"))


def _flat(reports: list[PhaseSummary], merged: PhaseSummary) -> ViewTable:
    """Every rank's phases, then the merged ones (rank "all"), as one table."""
    names = _names(reports)
    rows = [{"rank": i, "path": names[i], **p.as_dict()} for i, r in enumerate(reports) for p in r.phases]
    rows += [{"rank": "all", "path": "", **p.as_dict()} for p in merged.phases]
    keys = ("rank", "path", *record_keys(merged))  # the merged report carries no memory columns
    return ViewTable("ranks", "Phases per rank", [], rows, record_keys=keys)


def _json(reports: list[PhaseSummary], merged: PhaseSummary, spread: list[dict], notes: Sequence[str] = ()) -> dict:
    """The merged report's document with every rank's report and the spread added."""
    doc = json_document(merged)
    if notes:
        doc["notes"] = list(notes)
    doc["ranks"] = [{"rank": i, **r.as_dict()} for i, r in enumerate(reports)]
    doc["spread"] = spread
    return doc
