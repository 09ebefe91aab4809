"""The per-phase summary: its columns, defined once, and the table every format renders it from.

:func:`summary_table` makes a :class:`~nvtxsim.analysis.projection.PhaseSummary` the ``summary`` view
table; :func:`summary_sections` places it in a document under the report's source line, with the
Findings block and the warnings. Machine formats (csv, json) carry every field in integer
nanoseconds, human formats (table, markdown, html) pick units per value.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

import numpy as np

from nvtxsim.analysis.headline import Headline
from nvtxsim.analysis.projection import MEMORY_FIELDS, PhaseStats, PhaseSummary
from nvtxsim.phases import DOMAIN, ITERATION
from nvtxsim.reporting.document import FindingsBlock, Prose, Section
from nvtxsim.reporting.viewtable import Column, ViewTable, fmt_ns

if TYPE_CHECKING:
    from nvtxsim.analysis.selection import Selection
    from nvtxsim.analysis.unattributed import OutsideGpu

JSON_SCHEMA_VERSION = 1


# The summary's columns: keys (csv/json), headers, units (display), in table order; ``priority`` is the order
# a narrow terminal keeps them in: the count, CPU and GPU time side by side, then the median and p99 (one
# warm-up call moves the mean of a phase beyond its p99: the mean comes after them).
SUMMARY_COLUMNS = [
    Column("phase", "Phase", shared_prefix=":"),
    Column("instances", "N", "int", priority=0),
    Column("cpu_total_ns", "CPU total", "ns", priority=1),
    Column("cpu_mean_ns", "mean", "ns", priority=5),
    Column("cpu_median_ns", "median", "ns", priority=3),
    Column("cpu_p90_ns", "p90", "ns", priority=9),
    Column("cpu_p99_ns", "p99", "ns", priority=4),
    Column("cpu_max_ns", "max", "ns", priority=10),
    Column("gpu_proj_total_ns", "GPU proj", "ns", priority=6, drop_if_empty=True),
    Column("gpu_proj_median_ns", "proj median", "ns", priority=12, drop_if_empty=True),
    Column("gpu_busy_total_ns", "GPU busy", "ns", priority=2, drop_if_empty=True),
    Column("gpu_ops", "ops", "int", priority=7, drop_if_empty=True),
    Column("gpu_kernels", "kernels", "int", priority=11, drop_if_empty=True),
    Column("memcpy_htod_bytes", "H→D", "bytes", priority=13, drop_if_empty=True),
    Column("memcpy_dtoh_bytes", "D→H", "bytes", priority=14, drop_if_empty=True),
]

#: Shown only when the export recorded GPU memory (nsys --cuda-memory-usage=true); a phase without memory data shows 0.
MEMORY_SUMMARY_COLUMNS = [
    Column("gpu_mem_peak_bytes", "GPU mem peak", "bytes", priority=7, default=0),
    Column("gpu_mem_net_bytes", "mem net/inst", "bytes", priority=15, default=0),
]


def _has_memory(report: PhaseSummary) -> bool:
    return any(p.gpu_mem_peak_bytes is not None for p in report.phases)


def summary_columns(report: PhaseSummary) -> list[Column]:
    """The summary's columns for this report (the memory ones only when it has memory data)."""
    return SUMMARY_COLUMNS + (MEMORY_SUMMARY_COLUMNS if _has_memory(report) else [])


def phase_record(p: PhaseStats) -> dict:
    """One phase as a row of the summary view: its label as ``phase``, then every field (as in the JSON)."""
    return {"phase": p.label, **p.as_dict()}


def record_keys(report: PhaseSummary) -> tuple[str, ...]:
    """The summary's csv columns: every field of a phase (the memory ones only when recorded)."""
    names = [f.name for f in fields(PhaseStats)]
    return tuple(names if _has_memory(report) else [n for n in names if n not in MEMORY_FIELDS])


def summary_table(report: PhaseSummary) -> ViewTable:
    """The per-phase summary as a view table (the rows as in the JSON: raw values, memory fields only when recorded).

    In text formats the report's source line stands above it instead of its title."""
    return ViewTable(
        "summary",
        "Phases (CPU range time, GPU work launched inside)",
        summary_columns(report),
        [phase_record(p) for p in report.phases],
        headed=False,
        empty="no NVTX ranges in the selected domain"
        if report.source.get("ranges")
        else "no NVTX ranges in this export",
        record_keys=record_keys(report),
        row_anchor="phase",
    )


def summary_sections(report: PhaseSummary, table: ViewTable, findings: FindingsBlock | None = None) -> list[Section]:
    """The summary in a document: the source line and the headline, the Findings block (set apart), the table
    and the warnings."""
    top: list = [Prose("source", list(heading_parts(report.source)))]
    top += [Prose("headline", headline_parts(report.headline))] if report.headline is not None else []
    warnings = [Prose("warning", list(report.warnings))] if report.warnings else []
    if findings is None:
        return [[*top, table, *warnings]]
    return [top, [findings], [table, *warnings]]


def _short(label: str) -> str:
    """A phase label without nvtxsim's own domain (the summary's shared prefix)."""
    return label.removeprefix(f"{DOMAIN}:")


def _per_s(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def headline_parts(h: Headline) -> list[str]:
    """The headline as parts of one line (each kept whole when a terminal wraps it): the iterations, the
    median iteration, iterations/s (and env-steps/s), the phase with the most CPU self time."""
    parts = []
    if h.key is not None:
        key = _short(h.key)
        parts.append(f"{h.iterations:,} iterations" + (f" ({key})" if key != ITERATION else ""))
        parts.append(f"median {fmt_ns(h.median_ns)}")
        if h.per_s is not None:
            steps = f" ({_per_s(h.env_steps_per_s)} env-steps/s)" if h.env_steps_per_s is not None else ""
            parts.append(f"{_per_s(h.per_s)} it/s{steps}")
    else:
        parts.append("no iterations (mark them: nvtxsim.step() or an 'iteration' phase)")
    if h.biggest is not None:
        parts.append(f"most self time: {_short(h.biggest)} ({100 * h.biggest_share:.0f} %)")
    return parts


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
    if source.get("trigger"):
        parts.append(f"captured by the live trigger {source['trigger']}")
    return parts


def outside_note(o: OutsideGpu, *, threads_shown: int = 3) -> str:
    """One line: how much GPU work ran outside every phase (in no row of the table) and from which threads."""
    names = [f"{name} {n:,}" for name, n in list(o.threads.items())[:threads_shown]]
    more = f" and {len(o.threads) - threads_shown} more" if len(o.threads) > threads_shown else ""
    return (
        f"{fmt_ns(o.gpu_busy_ns)} GPU busy ({100 * o.share:.0f} % of all, {o.ops:,} ops) was launched outside every phase "
        f"and is in no row; launches by thread: {', '.join(names)}{more}"
    )


def outside_warnings(detail: Selection) -> list[str]:
    """The :func:`outside_note` line for a report's warnings; none when that work is under 1 % of GPU busy time."""
    from nvtxsim.analysis.unattributed import MIN_SHARE, outside_phases

    o = outside_phases(detail)
    return [outside_note(o)] if o is not None and o.share >= MIN_SHARE else []


def ranks_hint(detail: Selection, *, shown: int = 4) -> list[str]:
    """One line when the phases' ranges come from several processes: this report adds them up, where a job's
    ranks (one torchrun under one nsys) are better compared with ``--ranks`` (spread, collective waits,
    ``rank_skew``, which one export read whole cannot raise)."""
    from nvtxsim.schema import pids_of

    pids = np.unique(pids_of(detail.export.ranges.global_tid[detail.selected])).tolist()
    if len(pids) < 2:
        return []
    named = ", ".join(str(p) for p in pids[:shown]) + (f" and {len(pids) - shown} more" if len(pids) > shown else "")
    return [
        f"the phases' ranges come from {len(pids)} processes (pids {named}) and are added up here; if they are the "
        "ranks of one job, --ranks reports them rank by rank and looks for a slow rank (rank_skew)"
    ]


def json_document(report: PhaseSummary) -> dict:
    """The JSON report as a document (the views are added to it as they are, without a text round trip)."""
    from nvtxsim._version import __version__

    doc = report.as_dict()
    doc["source"] = {**doc["source"], "nvtxsim_version": __version__, "schema": JSON_SCHEMA_VERSION}
    return doc
