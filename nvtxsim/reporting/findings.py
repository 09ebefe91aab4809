"""How the findings show: a short block at the top of the table and markdown reports, the
``findings`` and ``overlap`` views, and the HTML section before the plots.

The block is at most ``BLOCK_FINDINGS`` findings of two lines each (what, where, how much; then the
advice), every line at most ``BLOCK_WIDTH`` cells, so it reads in an 80-column terminal whatever
the names are (long phase names are shortened in the middle).
"""

from __future__ import annotations

import html
import re
import textwrap

from nvtxsim.analysis.findings import Finding, Findings, Units, kind
from nvtxsim.analysis.selection import Selection
from nvtxsim.reporting.escaping import markdown_cell, printable
from nvtxsim.reporting.renderers.terminal import fit_width, line_width, one_line, shorten_end, shorten_middle
from nvtxsim.reporting.viewtable import Column, ViewTable, fmt_bytes, fmt_ns

BLOCK_FINDINGS = 5
BLOCK_WIDTH = 80
PHASE_CELLS = 24


def _pct(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{100 * x:.1f} %" if x < 0.01 else f"{100 * x:.0f} %"


#: How evidence text writes its numbers (each kind's ``evidence_text`` says which numbers, in which words).
UNITS = Units(ns=fmt_ns, bytes=fmt_bytes, pct=_pct)


def evidence_text(f: Finding) -> str:
    """The numbers behind a finding in a few words (its kind's text; nothing for a kind this nvtxsim does not know)."""
    k = kind(f.kind)
    text = k.evidence_text(f.evidence, UNITS) if k is not None else ""
    return ("side thread: " if f.evidence.get("off_loop_thread") else "") + text


def _cost(f: Finding) -> str:
    return f"{fmt_ns(f.cost_per_iteration_ns)}/it" if f.cost_per_iteration_ns is not None else fmt_ns(f.cost_ns)


def _fit(text: str, cells: int) -> str:
    """``text`` cut at its end to ``cells`` (the start says what it is about), never inside a number."""
    return fit_width(text, cells, shorten_end)


def _with_evidence(head: str, evidence: str, cells: int, sep: str = "; ") -> str:
    """``head; evidence`` in ``cells``, keeping as many of the evidence's facts as fit whole: a cut
    inside a fact reads as another number (all of it: ``--view findings``). A list of numbers
    (``iterations 3, 5, 7``) is one fact."""
    facts = _FACTS.split(evidence)
    for n in range(len(facts), 0, -1):
        line = f"{head}{sep}{', '.join(facts[:n])}"
        if line_width(line) <= cells:
            return line
    if not head.strip():  # the facts on a line of their own: the first one, cut at its end
        return _fit(head + evidence, cells)
    return _fit(head, cells)


def _finding_lines(head: str, evidence: str, cells: int) -> list[str]:
    """The finding's facts: on its head line where all of them fit, else on a line of their own under it
    (the evidence, such as the outlier iterations' numbers, is what makes a finding checkable)."""
    if not evidence or line_width(f"{head}; {evidence}") <= cells:
        return [_with_evidence(head, evidence, cells) if evidence else _fit(head, cells)]
    return [_fit(head, cells), _with_evidence(_INDENT, evidence, cells, sep="")]


_INDENT = " " * 7  # under the kind, past the severity


_FACTS = re.compile(r", (?!\d+(?:[,:…]|$))")  # not inside a list of bare numbers


def finding_line(f: Finding) -> str:
    """One finding in one line of plain text: severity, kind, phase, cost, share, evidence."""
    return f"{f.severity} {f.kind} in {one_line(f.phase)}: {_cost(f)} ({_pct(f.evidence.get('share_of_time'))}) · {one_line(evidence_text(f))}"


def fit_line(text: str, width: int | None) -> str:
    """``text`` printable and cut to the block's width (80 cells, or a narrower terminal)."""
    return _fit(printable(text), min(width or BLOCK_WIDTH, BLOCK_WIDTH))


def block_lines(fs: Findings, width: int | None = None) -> list[str]:
    """The terminal block: a title, then per finding its facts (one line, or two when the evidence does not fit
    beside them) and its advice, never wider than 80 cells."""
    w = min(width or BLOCK_WIDTH, BLOCK_WIDTH)
    shown = fs.items[:BLOCK_FINDINGS]
    more = f"; all {len(fs.items)}: --view findings" if len(fs.items) > len(shown) else ""
    notes = [  # what was not looked for: a "none" says nothing without it; wrapped to two lines at most
        _fit(line, w)
        for n in fs.notes
        for line in textwrap.wrap(
            f"note: {n}", w - 1, subsequent_indent="      ", max_lines=2, placeholder=" …", break_on_hyphens=False
        )
    ]
    if not fs.items:
        return [
            _fit("Findings: none over the thresholds" + ("" if notes else " (sync, copy, launch, CPU, GPU)"), w)
        ] + notes
    lines = [_fit(f"Findings (most costly first{more})", w)]
    for f in shown:
        phase = shorten_middle(one_line(f.phase), PHASE_CELLS)
        head = f"{f.severity:<6} {f.kind} in {phase}: {_cost(f)} ({_pct(f.evidence.get('share_of_time'))})"
        lines += _finding_lines(head, printable(evidence_text(f)), w)
        lines.append(_fit(f"{_INDENT}→ {f.advice}", w))
    return lines + notes


def block_markdown(fs: Findings) -> str:
    """The block as a markdown list: ``### Findings`` then one item per finding (facts, then the advice)."""
    lines = ["### Findings", ""]
    if not fs.items:
        lines.append("None over the thresholds.")
    for i, f in enumerate(fs.items[:BLOCK_FINDINGS], 1):
        lines.append(
            f"{i}. **{f.severity}** {f.kind} in {markdown_cell(f.phase)}: {markdown_cell(_cost(f))} ({_pct(f.evidence.get('share_of_time'))})"
        )
        lines.append(f"   {markdown_cell(evidence_text(f))} → {markdown_cell(f.advice)}")
    if len(fs.items) > BLOCK_FINDINGS:
        lines.append(f"\n({len(fs.items) - BLOCK_FINDINGS} more: --view findings)")
    lines += [f"\n> {markdown_cell(n)}" for n in fs.notes]
    return "\n".join(lines) + "\n\n"


# --------------------------------------------------------------------------- views

FINDING_COLUMNS = [
    Column("severity", "Severity"),
    Column("kind", "Kind"),
    Column("phase", "Phase", shared_prefix=":"),
    Column("cost_per_iteration_ns", "per iter", "ns"),
    Column("cost_ns", "cost", "ns"),
    Column("share", "of time", "pct"),
    Column("evidence_text", "Evidence", prose=True),
    Column("advice", "Advice", prose=True),
]


def findings_table(fs: Findings) -> ViewTable:
    rows = [
        {**f.as_dict(), "share": f.evidence.get("share_of_time"), "evidence_text": evidence_text(f)} for f in fs.items
    ]
    base = (
        f"per iteration over {fs.iterations} iterations"
        if fs.iterations
        else "iterations unknown: cost over the capture"
    )
    notes = [
        f"cost: time the problem costs ({base}); of time: share of the wall time inside the phases ({fmt_ns(fs.reference_ns)})"
    ]
    return ViewTable(
        "findings",
        "Findings: what is slow, why, and what to do (most costly first)",
        FINDING_COLUMNS,
        rows,
        notes + fs.notes,
    )


def overlap_table(d: Selection, *, by: str | None = None, skip_first: int | None = 0) -> ViewTable:
    """Other threads' GPU work by the phase open at launch: a time-overlap attribution beside nsys's columns."""
    from nvtxsim.analysis.findings import OUTSIDE, OUTSIDE_LOOP, Context, overlap_rows

    busy = {p.label: p.gpu_busy_total_ns for p in d.report.phases}
    rows = [
        {
            "phase": r.phase,
            "gpu_busy_nsys_ns": busy.get(r.phase, 0),
            "other_gpu_ns": r.gpu_busy_ns,
            "launches": r.launches,
            "ops": r.ops,
            "threads": r.threads,
            "threads_text": ", ".join(f"{t} ×{n}" for t, n in r.threads.items()),
        }
        for r in overlap_rows(d, Context(d, by, skip_first))
    ]
    cols = [
        Column("phase", "Phase (open at launch)"),
        Column("gpu_busy_nsys_ns", "GPU busy (nsys)", "ns"),
        Column("other_gpu_ns", "other threads (overlap)", "ns"),
        Column("launches", "launches", "int"),
        Column("ops", "ops", "int"),
        Column("threads_text", "Threads", prose=True),
    ]
    notes = [
        "time-overlap attribution, not nsys's: GPU work launched outside every range of its own thread, counted for the innermost "
        f"phase open on another thread of the process at launch time ({OUTSIDE}: none open; {OUTSIDE_LOOP}: setup or teardown, "
        "no finding); the summary's GPU columns stay nsys-exact"
    ]
    return ViewTable(
        "overlap", "GPU work of other threads by the phase open at launch (time overlap)", cols, rows, notes
    )


# --------------------------------------------------------------------------- html


def phase_anchor(phase: str, phases: list[str]) -> str:
    """The id of a phase's row in the summary table (by position: names are data)."""
    return f"phase-{phases.index(phase)}" if phase in phases else "v-summary"


def findings_html(fs: Findings, phases: list[str]) -> str:
    """The section before the plots: one line per finding, linking to its phase's row and to the timeline,
    where that phase's ranges and the GPU ops they launched are then highlighted."""
    if not fs.items:
        return '<section id="findings"><h2>Findings</h2><p class="note">None over the thresholds.</p></section>'
    items = []
    for f in fs.items:
        link = f'<a href="#{phase_anchor(f.phase, phases)}">{html.escape(f.phase)}</a>'
        on_timeline = f'<a href="#timeline" class="tl-phase" data-phase="{html.escape(f.phase)}">timeline</a>'
        items.append(
            f'<li class="f-{html.escape(f.severity)}"><b>{html.escape(f.severity)}</b> {html.escape(f.kind)} in {link}: '
            f"{html.escape(_cost(f))} ({html.escape(_pct(f.evidence.get('share_of_time')))}) · {html.escape(evidence_text(f))}"
            f' · {on_timeline}<br><span class="adv">→ {html.escape(f.advice)}</span></li>'
        )
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in fs.notes)
    return f'<section id="findings"><h2>Findings</h2><p class="sub">most costly first; details: the Findings table below</p><ol class="findings">{"".join(items)}</ol>{notes}</section>'
