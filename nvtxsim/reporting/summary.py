"""Render stage: turn a :class:`~nvtxsim.analysis.projection.Report` into text.

The summary table's columns (defined once, :data:`SUMMARY_COLUMNS`) and its renderings;
the per-format modules of :mod:`nvtxsim.reporting.renderers` use them. Machine formats (csv, json) carry every field in integer nanoseconds, human
formats (table, markdown) pick units per value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING

from nvtxsim.analysis.projection import MEMORY_FIELDS, PhaseStats, Report
from nvtxsim.reporting.escaping import csv_table, json_text, markdown_cell, printable
from nvtxsim.reporting.renderers import terminal
from nvtxsim.reporting.viewtable import Column, cell, fmt_bytes, fmt_ns

__all__ = ["printable", "markdown_cell", "fmt_ns", "fmt_bytes", "heading_parts", "SUMMARY_FORMATS"]

#: Formats the summary alone (and the per-rank reports) can be rendered in.
SUMMARY_FORMATS = ("table", "csv", "json", "markdown")

if TYPE_CHECKING:
    from nvtxsim.analysis.selection import Detail
    from nvtxsim.analysis.unattributed import OutsideGpu

JSON_SCHEMA_VERSION = 1


# The summary's columns: keys (csv/json), headers, units (display), in order (the terminal fitter's priorities).
C = Column
SUMMARY_COLUMNS = [
    C("phase", "Phase"),
    C("instances", "N", "int"),
    C("cpu_total_ns", "CPU total", "ns"),
    C("cpu_mean_ns", "mean", "ns"),
    C("cpu_median_ns", "median", "ns"),
    C("cpu_p90_ns", "p90", "ns"),
    C("cpu_p99_ns", "p99", "ns"),
    C("cpu_max_ns", "max", "ns"),
    C("gpu_proj_total_ns", "GPU proj", "ns"),
    C("gpu_proj_median_ns", "proj median", "ns"),
    C("gpu_busy_total_ns", "GPU busy", "ns"),
    C("gpu_ops", "ops", "int"),
    C("gpu_kernels", "kernels", "int"),
    C("memcpy_htod_bytes", "H→D", "bytes"),
    C("memcpy_dtoh_bytes", "D→H", "bytes"),
]
#: Shown only when the export recorded GPU memory (nsys --cuda-memory-usage=true).
MEMORY_SUMMARY_COLUMNS = [
    C("gpu_mem_peak_bytes", "GPU mem peak", "bytes"),
    C("gpu_mem_net_bytes", "mem net/inst", "bytes"),
]


def _has_memory(report: Report) -> bool:
    return any(p.gpu_mem_peak_bytes is not None for p in report.phases)


def summary_columns(report: Report) -> list[Column]:
    """The summary's columns for this report (the memory ones only when it has memory data)."""
    return SUMMARY_COLUMNS + (MEMORY_SUMMARY_COLUMNS if _has_memory(report) else [])


def phase_record(p: PhaseStats) -> dict:
    """One phase as a row of the summary view: its label as ``phase``, then every field (as in the JSON)."""
    return {"phase": p.label, **p.as_dict()}


def phase_row(p: PhaseStats) -> dict:
    """One phase as a displayed row of the summary (a phase without memory data shows 0)."""
    row = phase_record(p)
    for c in MEMORY_SUMMARY_COLUMNS:
        row[c.key] = row.get(c.key) or 0
    return row


def _cells(report: Report, columns: list[Column]) -> list[list[str]]:
    return [[cell(c, row) for c in columns] for row in map(phase_row, report.phases)]


def _csv_fields(report: Report) -> list[str]:
    names = [f.name for f in fields(PhaseStats)]
    return names if _has_memory(report) else [n for n in names if n not in MEMORY_FIELDS]


def heading_parts(source: dict, *, counts_sep: str = ", ") -> list[str]:
    """The report's one-line heading (export, nsys version, capture, counts) as plain-text parts."""
    parts = [str(source.get("path", ""))]
    if source.get("nsys_version"):
        parts.append(f"nsys {source['nsys_version']}")
    if source.get("capture_ns"):
        parts.append(f"capture {fmt_ns(source['capture_ns'])}")
    parts.append(f"{source.get('ranges', 0):,} ranges")
    if source.get("gpu_ops"):
        counts = (f"{source.get(k, 0):,} {k}" for k in ("kernels", "memcpys", "memsets"))
        parts.append(counts_sep.join(counts))
    return parts


def _heading(report: Report) -> str:
    return " · ".join(heading_parts(report.source))


def outside_note(o: OutsideGpu, *, threads_shown: int = 3) -> str:
    """One line: how much GPU work ran outside every phase (in no row of the table) and from which threads."""
    names = [f"{name} {n:,}" for name, n in list(o.threads.items())[:threads_shown]]
    more = f" and {len(o.threads) - threads_shown} more" if len(o.threads) > threads_shown else ""
    return (
        f"{fmt_ns(o.gpu_busy_ns)} GPU busy ({100 * o.share:.0f} % of all, {o.ops:,} ops) was launched outside every phase "
        f"and is in no row; launches by thread: {', '.join(names)}{more}"
    )


def outside_warnings(detail: Detail, *, in_memory_only: bool = False) -> list[str]:
    """The :func:`outside_note` line for a report's warnings; none when that work is under 1 % of GPU busy time."""
    from nvtxsim.analysis.unattributed import MIN_SHARE, outside_phases

    o = outside_phases(detail, in_memory_only=in_memory_only)
    return [outside_note(o)] if o is not None and o.share >= MIN_SHARE else []


def render_table(
    report: Report, *, width: int | None = None, color: bool | None = None, before: Sequence[str] = ()
) -> str:
    """The summary for a terminal ``width`` columns wide (None: whole, as wide as it needs); bold header when ``color``.

    ``before``: lines between the heading and the table (the Findings block)."""
    columns = summary_columns(report)
    heading = terminal.fit_parts(heading_parts(report.source), width) + list(before)
    empty = "no NVTX ranges in the selected domain" if report.source.get("ranges") else "no NVTX ranges in this export"
    text = terminal.render(
        columns, _cells(report, columns), heading=heading, width=width, color=bool(color), empty=empty
    )
    return text + "".join(f"{ln}\n" for ln in terminal.notes_lines(report.warnings, width, prefix="warning: "))


def render_markdown(report: Report, *, before: str = "") -> str:
    """The summary as a markdown table; ``before``: markdown between the heading and the table (the Findings block)."""
    esc = markdown_cell
    columns = summary_columns(report)
    lines = [f"**{esc(_heading(report))}**", ""]
    if before:
        lines.append(before)
    lines.append("| " + " | ".join(c.header for c in columns) + " |")
    lines.append("|" + "|".join([" --- "] + [" ---: "] * (len(columns) - 1)) + "|")
    for row in _cells(report, columns):
        lines.append("| " + " | ".join(esc(v) for v in row) + " |")
    for w in report.warnings:
        lines.append("")
        lines.append(f"> warning: {esc(w)}")
    return "\n".join(lines) + "\n"


def render_csv(report: Report) -> str:
    names = _csv_fields(report)
    return csv_table(names, ([d[n] for n in names] for d in (p.as_dict() for p in report.phases)))


def json_document(report: Report) -> dict:
    """The JSON report as a document (the views are added to it as they are, without a text round trip)."""
    from nvtxsim._version import __version__

    doc = report.as_dict()
    doc["source"] = {**doc["source"], "nvtxsim_version": __version__, "schema": JSON_SCHEMA_VERSION}
    return doc


def render_json(report: Report) -> str:
    return json_text(json_document(report), indent=2) + "\n"


# --------------------------------------------------------------------------- many ranks


def ranks_text(
    reports: list[Report],
    merged: Report,
    spread: list[dict],
    *,
    markdown: bool,
    color: bool = False,
    width: int | None = None,
) -> str:
    """Per-rank summaries, the merged one and the per-phase spread across ranks, for a terminal or as markdown."""
    names = [str(r.source.get("path", f"rank {i}")) for i, r in enumerate(reports)]
    one = render_markdown if markdown else (lambda r: render_table(r, color=color, width=width))
    text, h = (markdown_cell, "## ") if markdown else (str, "")

    def title(line: str) -> str:  # on a terminal: fitted like the tables (and escaped there)
        return f"{h}{line}\n" if markdown else "".join(f"{ln}\n" for ln in terminal.fit_text(line, width))

    parts = []
    for i, r in enumerate(reports):
        parts.append(title(f"rank {i}: {text(names[i])}"))
        parts.append(one(r))
    parts.append(title(f"all {len(reports)} ranks merged"))
    parts.append(one(merged))
    parts.append(title("spread across ranks (CPU total per rank)"))
    lines = []
    for row in spread:
        totals = " ".join(fmt_ns(t) for t in row["cpu_total_ns"])
        ratio = f"{row['max_over_min']:.2f}x" if row["max_over_min"] else "-"
        line = f"{text(row['phase'])}: {totals} (slowest: rank {row['slowest_rank']}, max/min {ratio})"
        if markdown:
            lines.append(f"- {line}")
        else:
            lines += [f"  {ln}" for ln in terminal.fit_text(line, width - 2 if width else None)]
    parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def ranks_csv(reports: list[Report], merged: Report) -> str:
    """Every rank's phases, then the merged ones (rank "all"), one csv table."""
    names = [str(r.source.get("path", f"rank {i}")) for i, r in enumerate(reports)]
    cols = _csv_fields(merged)  # the merged report carries no memory columns
    rows = [[i, names[i], *(p.as_dict()[c] for c in cols)] for i, r in enumerate(reports) for p in r.phases]
    rows += [["all", "", *(p.as_dict()[c] for c in cols)] for p in merged.phases]
    return csv_table(["rank", "path", *cols], rows)


def ranks_json(reports: list[Report], merged: Report, spread: list[dict]) -> str:
    """The merged report's document with every rank's report and the spread added."""
    doc = json_document(merged)
    doc["ranks"] = [{"rank": i, **r.as_dict()} for i, r in enumerate(reports)]
    doc["spread"] = spread
    return json_text(doc, indent=2) + "\n"
