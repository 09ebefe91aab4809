"""Renderings of a :class:`~nvtxsim.analysis.compare.Comparison`: terminal, csv, json, markdown, html."""

from __future__ import annotations

import html
from dataclasses import asdict

from nvtxsim.analysis.compare import Comparison, PhaseDelta
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.escaping import json_text
from nvtxsim.reporting.renderers.tables import csv_text, markdown_text, table_text
from nvtxsim.reporting.viewtable import Column, ViewTable


def _pct(v: float | None) -> str:
    if v is None:
        return ""
    if v in (float("inf"), float("-inf")):
        return "∞" if v > 0 else "−∞"
    return f"{v:+.1f} %"


def _ci(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return ""
    return f"[{_pct(lo)}, {_pct(hi)}]"


def _row(p: PhaseDelta) -> dict:
    d = asdict(p)
    d["median_delta"] = _pct(p.median_delta_pct)
    d["median_ci"] = _ci(p.median_ci_low_pct, p.median_ci_high_pct)
    d["p99_delta"] = _pct(p.p99_delta_pct)
    d["p99_ci"] = _ci(p.p99_ci_low_pct, p.p99_ci_high_pct)
    d["flag"] = "REGRESSION" if p.regression else (p.verdict if p.status == "compared" else p.status)
    return d


def comparison_table(c: Comparison) -> ViewTable:
    # Table order pairs base and new; a narrow terminal keeps the changes first, then the medians, then the rest.
    cols = [
        Column("phase", "Phase"),
        Column("base_n", "N base", "int", priority=8),
        Column("new_n", "N new", "int", priority=9),
        Column("base_median_ns", "median base", "ns", priority=1),
        Column("new_median_ns", "median new", "ns", priority=2),
        Column("median_delta", "Δ median", "num", priority=0),
        Column("median_ci", "CI", "num", priority=3),
        Column("base_p99_ns", "p99 base", "ns", priority=5),
        Column("new_p99_ns", "p99 new", "ns", priority=6),
        Column("p99_delta", "Δ p99", "num", priority=4),
        Column("p99_ci", "CI", "num", priority=7),
        Column("flag", "verdict"),
    ]
    title = f"{c.base.get('path', '')} → {c.new.get('path', '')}"
    notes = list(c.notes)
    if c.regressions:
        notes.append("regressed: " + ", ".join(p.phase for p in c.regressions))
    return ViewTable("compare", title, cols, [_row(p) for p in c.phases], notes)


def render_comparison(c: Comparison, fmt: str, *, width: int | None = None, color: bool = False) -> str:
    if fmt == "json":
        from nvtxsim._version import __version__

        doc = c.as_dict()
        doc["nvtxsim_version"] = __version__
        return json_text(doc, indent=2) + "\n"
    if fmt == "csv":
        return csv_text(ViewTable("compare", "", [], [asdict(p) for p in c.phases]))
    t = comparison_table(c)
    if fmt == "table":
        return table_text(t, width=width, color=color) + _findings_text(c, width)
    if fmt == "markdown":
        return markdown_text(t) + _findings_markdown(c)
    if fmt == "html":
        return _html(c, t)
    raise NvtxsimError(f"compare has no format {fmt!r}")


def _findings_lines(c: Comparison) -> list[tuple[str, str]]:
    """(what, text) per appeared / gone finding: the block under the comparison."""
    from nvtxsim.reporting.findings import finding_line

    d = c.findings
    if d is None:
        return []
    return [("appeared", finding_line(f)) for f in d.appeared] + [("gone", finding_line(f)) for f in d.gone]


def _findings_text(c: Comparison, width: int | None) -> str:
    from nvtxsim.reporting.findings import fit_line

    if c.findings is None:
        return ""
    lines = _findings_lines(c)
    head = f"\nFindings: {len(c.findings.appeared)} appeared, {len(c.findings.gone)} went away, {len(c.findings.kept)} in both"
    return "\n".join([head] + [fit_line(f"{what:<8} {text}", width) for what, text in lines]) + "\n"


def _findings_markdown(c: Comparison) -> str:
    from nvtxsim.reporting.escaping import markdown_cell

    if c.findings is None:
        return ""
    lines = [
        "",
        "### Findings",
        "",
        f"{len(c.findings.appeared)} appeared, {len(c.findings.gone)} went away, {len(c.findings.kept)} in both",
        "",
    ]
    lines += [f"- **{what}** {markdown_cell(text)}" for what, text in _findings_lines(c)]
    return "\n".join(lines) + "\n"


def _findings_html(c: Comparison) -> str:
    if c.findings is None:
        return ""
    items = "".join(f"<li><b>{what}</b> {html.escape(text)}</li>" for what, text in _findings_lines(c))
    return f'<section><h2>Findings</h2><p class="sub">{len(c.findings.appeared)} appeared, {len(c.findings.gone)} went away, {len(c.findings.kept)} in both</p><ul>{items}</ul></section>'


def _forest(c: Comparison) -> str:
    """Static SVG: per phase, the median change with its interval, and the threshold lines."""
    rows = [p for p in c.phases if p.median_delta_pct is not None]
    if not rows:
        return '<p class="note">No phase present in both runs with enough samples.</p>'
    finite = [
        v
        for p in rows
        for v in (p.median_ci_low_pct, p.median_ci_high_pct, p.median_delta_pct)
        if v is not None and abs(v) != float("inf")
    ]
    thr = c.settings.fail_above
    lim = max([abs(v) for v in finite] + ([thr * 1.2] if thr else []) + [5.0])
    lim = min(lim * 1.1, 1000.0)
    W, L, R, rh = 900, 230, 30, 22
    H = len(rows) * rh + 40
    sx = lambda v: L + (W - L - R) * (max(min(v, lim), -lim) + lim) / (2 * lim)  # noqa: E731
    out = [f'<svg width="{W}" height="{H}" role="img">']
    for k in range(-4, 5):
        v = lim * k / 4
        out.append(f'<line class="grid" x1="{sx(v):.1f}" x2="{sx(v):.1f}" y1="10" y2="{H - 20}"/>')
        out.append(f'<text x="{sx(v):.1f}" y="{H - 6}" text-anchor="middle">{v:+.0f} %</text>')
    out.append(f'<line x1="{sx(0):.1f}" x2="{sx(0):.1f}" y1="6" y2="{H - 20}" stroke="#444"/>')
    if thr is not None:
        out.append(
            f'<line x1="{sx(thr):.1f}" x2="{sx(thr):.1f}" y1="6" y2="{H - 20}" stroke="#c0392b" stroke-dasharray="4 3"/>'
        )
    for i, p in enumerate(rows):
        y = 20 + i * rh
        col = "#c0392b" if p.regression else "#2f6fdf" if p.verdict == "faster" else "#555"
        out.append(f'<text x="6" y="{y + 4}">{html.escape(p.phase[:34])}</text>')
        lo, hi = p.median_ci_low_pct or 0.0, p.median_ci_high_pct or 0.0
        out.append(f'<line x1="{sx(lo):.1f}" x2="{sx(hi):.1f}" y1="{y}" y2="{y}" stroke="{col}" stroke-width="2"/>')
        out.append(
            f'<circle cx="{sx(p.median_delta_pct or 0):.1f}" cy="{y}" r="4" fill="{col}"><title>{html.escape(p.phase)}: {_pct(p.median_delta_pct)} {_ci(lo, hi)}</title></circle>'
        )
    out.append("</svg>")
    return "".join(out)


def _html(c: Comparison, t: ViewTable) -> str:
    from nvtxsim.reporting.renderers.html import standalone_page, table_html

    verdict = (
        f'<p class="warn">regressed: {html.escape(", ".join(p.phase for p in c.regressions))}</p>'
        if c.regressions
        else '<p class="sub">no regression</p>'
    )
    main = (
        f'<section><h2>Median change per phase</h2><p class="sub">dot: Δ median; bar: {int(c.settings.confidence * 100)} % bootstrap interval'
        f"{'; dashed: --fail-above' if c.settings.fail_above is not None else ''}</p>{_forest(c)}</section>"
        f"<section><h2>All phases</h2>{table_html(t)}</section>{_findings_html(c)}"
    )
    return standalone_page("nvtxsim compare", "nvtxsim compare", html.escape(t.title), verdict, main)
