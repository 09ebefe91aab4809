"""A report of several exports (one per rank): each rank's summary, the merged one, and the spread across ranks."""

from __future__ import annotations

from collections.abc import Sequence

from nvtxsim.analysis.findings import Findings
from nvtxsim.analysis.projection import PhaseSummary
from nvtxsim.analysis.ranks import CollectiveWaits
from nvtxsim.reporting.document import Document, FindingsBlock, Line, PageHead, Phrase, Prose, Section
from nvtxsim.reporting.summary import json_document, record_keys, summary_sections, summary_table
from nvtxsim.reporting.viewtable import ViewTable, fmt_ns


def ranks_document(
    reports: list[PhaseSummary],
    merged: PhaseSummary,
    spread: list[dict],
    *,
    notes: Sequence[str] = (),
    waits: CollectiveWaits | None = None,
    findings: Findings | None = None,
) -> Document:
    """The job's findings (``rank_skew``), per rank a heading and its summary, the merged summary, a line
    per phase of the spread and per rank of its waits in collectives.

    ``notes``: nvtxsim's own lines on how the ranks were found (``--ranks``: in pid order), first."""
    names = _names(reports)
    sections: list[Section] = [[Prose("note", [Phrase((n,)) for n in notes])]] if notes else []
    if findings is not None:
        sections.append([FindingsBlock(findings, [p.label for p in merged.phases])])
    for i, r in enumerate(reports):
        sections.append([Prose("heading", [Phrase((f"rank {i}: ", names[i]))])])
        sections += summary_sections(r, summary_table(r))
    sections.append([Prose("heading", [Phrase((f"all {len(reports)} ranks merged",))])])
    sections += summary_sections(merged, summary_table(merged))
    sections.append([Prose("heading", [Phrase(("spread across ranks (CPU total per rank)",))])])
    sections.append([Prose("items", [_spread_line(row) for row in spread])])
    sections.append([Prose("heading", [Phrase(("waits in collectives (matched call by call across ranks)",))])])
    if waits is None:
        sections.append(
            [
                Prose(
                    "note",
                    [Phrase(("no collective range (allreduce, all_gather, broadcast, barrier ...) on every rank",))],
                )
            ]
        )
    else:
        sections.append([Prose("items", _wait_lines(waits))])

    def data() -> dict:
        """The merged report's document with every rank's report, the spread, the waits and the findings added
        (built only when a machine format asks for it)."""
        doc = json_document(merged)
        doc["collective_waits"] = waits.as_dict() if waits is not None else None
        if findings is not None:
            doc["findings"] = findings.as_list()
        if notes:
            doc["notes"] = list(notes)
        doc["ranks"] = [{"rank": i, **r.as_dict()} for i, r in enumerate(reports)]
        doc["spread"] = spread
        return doc

    return Document(
        "ranks",
        sections,
        PageHead("nvtxsim report", "nvtxsim report"),
        data=data,
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


def _wait_lines(w: CollectiveWaits) -> list[Line]:
    """Per rank: its wait, the phases it was charged to (data), the calls it came last to."""
    lines: list[Line] = []
    for r in range(w.ranks):
        parts: list[str] = [f"rank {r}: waited {fmt_ns(w.wait_ns[r])}"]
        for ph, ns in sorted(w.phase_wait_ns[r].items(), key=lambda kv: -kv[1]):
            if ns:
                parts += [" in ", ph, f" {fmt_ns(ns)}"]
        parts.append(f"; last at {w.last[r]}/{w.calls} calls, the others waited {fmt_ns(w.caused_ns[r])} for it")
        lines.append(Phrase(tuple(_alternate(parts))))
    if w.skipped:
        lines.append(Phrase((f"{w.skipped} warm-up call(s) left out",)))
    if w.mismatched:
        lines.append(
            Phrase(("called a different number of times on some rank (first calls matched): ", ", ".join(w.mismatched)))
        )
    return lines


def _alternate(parts: list[str]) -> list[str]:
    """``parts`` as words, data, words, ...: a leading words part, data at odd positions (merged words)."""
    out: list[str] = [parts[0]]
    for i in range(1, len(parts), 3):  # " in ", phase, " ns" triples and the closing words
        chunk = parts[i : i + 3]
        if len(chunk) == 3:
            out[-1] += chunk[0]
            out += [chunk[1], chunk[2]]
        else:
            out[-1] += "".join(chunk)
    return out


def _flat(reports: list[PhaseSummary], merged: PhaseSummary) -> ViewTable:
    """Every rank's phases, then the merged ones (rank "all"), as one table."""
    names = _names(reports)
    rows = [{"rank": i, "path": names[i], **p.as_dict()} for i, r in enumerate(reports) for p in r.phases]
    rows += [{"rank": "all", "path": "", **p.as_dict()} for p in merged.phases]
    keys = ("rank", "path", *record_keys(merged))  # the merged report carries no memory columns
    return ViewTable("ranks", "Phases per rank", [], rows, record_keys=keys)
