"""``nvtxsim compare``'s library: loaded exports (one or several runs per side) →
:class:`~nvtxsim.analysis.compare.Comparison` → document.

:func:`compare_exports` picks the domain the runs are compared in, compares them phase by phase and
diffs the findings of each side's first run; :func:`compare_document` is what every format renders. The
page's verdict line is built from the rows (:func:`verdict_line`), so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from nvtxsim.analysis.compare import CompareSettings, Comparison, PhaseDelta, compare
from nvtxsim.analysis.projection import resolve_domain
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.columns import Export
from nvtxsim.reporting.document import ChangeList, Document, Figure, PageHead, Prose, Section, SourcePart
from nvtxsim.reporting.viewtable import Column, ViewTable


def compare_exports(
    base: Export | Sequence[Export],
    new: Export | Sequence[Export],
    settings: CompareSettings,
    *,
    domain: str | None,
    domain_given: bool = False,
    match: str | None = None,
    findings: bool = True,
    names: tuple[str, str] = ("BASE", "NEW"),
) -> Comparison:
    """The ``new`` run(s) against the ``base`` run(s), phase by phase (``names``: how the notes call the first
    run of each side); ``findings``: also which findings appeared or went away (first run of each side)."""
    bases = [base] if isinstance(base, Export) else list(base)
    news = [new] if isinstance(new, Export) else list(new)
    domain, widened = common_domain(bases[0], news[0], domain, domain_given, names)
    bsel = [Selection(e, domain=domain, match=match) for e in bases]
    nsel = [Selection(e, domain=domain, match=match) for e in news]
    result = compare(bsel, nsel, settings)
    result.notes[:0] = [widened] if widened else []
    if findings:
        from nvtxsim.analysis.findings import analyse, diff

        found = [analyse(d, by=result.by, skip_first=settings.skip_first) for d in (bsel[0], nsel[0])]
        result.findings = diff(*found)
        if len(bases) + len(news) > 2:
            result.notes.append("findings: those of the first run of each side")
    return result


def common_domain(
    base: Export, new: Export, domain: str | None, given: bool, names: tuple[str, str]
) -> tuple[str | None, str | None]:
    """The domain both runs are compared in (every domain when the default one is in neither) and a note when
    only one run lacks it."""
    picked = [resolve_domain(e, domain, given=given) for e in (base, new)]
    if picked[0][0] == picked[1][0]:
        return picked[0]
    lacking = names[0] if picked[0][1] else names[1]  # the run whose default domain is empty
    return (
        domain,
        f"{lacking} has no range in domain {domain!r}: every phase shows as added or removed; --domain all compares every domain",
    )


def pct(v: float | None) -> str:
    """A change in percent with its sign (an infinite one: ∞); empty when unknown."""
    if v is None:
        return ""
    if v in (float("inf"), float("-inf")):
        return "∞" if v > 0 else "−∞"
    return f"{v:+.1f} %"


def interval(lo: float | None, hi: float | None) -> str:
    """``[lo, hi]`` in percent; empty when unknown."""
    if lo is None or hi is None:
        return ""
    return f"[{pct(lo)}, {pct(hi)}]"


def _row(p: PhaseDelta) -> dict:
    d = asdict(p)
    d["median_delta"] = pct(p.median_delta_pct)
    d["median_ci"] = interval(p.median_ci_low_pct, p.median_ci_high_pct)
    d["p99_delta"] = pct(p.p99_delta_pct)
    d["p99_ci"] = interval(p.p99_ci_low_pct, p.p99_ci_high_pct)
    d["shift"] = pct(p.shift_pct)
    d["shift_ci"] = interval(p.shift_low_pct, p.shift_high_pct)
    d["share"] = pct(p.share_pct)
    d["noise"] = f"{p.noise_pct:.1f} %" if p.noise_pct is not None else ""
    d["flag"] = flag(p)
    if p.status == "run-wide":  # a factor, not a phase: no medians or samples of its own
        d.update(base_median_ns=None, new_median_ns=None, base_n=None, new_n=None)
    return d


def flag(p: PhaseDelta) -> str:
    """The verdict cell: REGRESSION, slower, faster, no change, or the status of a phase not compared."""
    return "REGRESSION" if p.regression else (p.verdict if p.status in ("compared", "run-wide") else p.status)


def comparison_table(c: Comparison) -> ViewTable:
    # The verdict and its numbers first, then the descriptive changes; a narrow terminal keeps them in that order.
    cols = [
        Column("phase", "Phase"),
        Column("base_median_ns", "median base", "ns", priority=3),
        Column("new_median_ns", "median new", "ns", priority=4),
        Column("shift", f"Δ {c.settings.gate} beyond", "num", priority=0),
        Column("shift_ci", "interval", "num", priority=1),
        Column("share", "of iteration", "num", priority=2),
        Column("flag", "verdict"),
        Column("median_delta", "Δ median", "num", priority=5),
        Column("median_ci", "CI", "num", priority=8),
        Column("p99_delta", "Δ p99", "num", priority=9),
        Column("p99_ci", "CI", "num", priority=12),
        Column("noise", "run noise", "num", priority=7),
        Column("base_n", "N base", "int", priority=10),
        Column("new_n", "N new", "int", priority=11),
    ]
    title = f"{_side(c.base_runs, c.base)} → {_side(c.new_runs, c.new)}"
    notes = list(c.notes)
    notes.append(verdict_line(c))
    return ViewTable("compare", title, cols, [_row(p) for p in c.phases], notes, page_title="All phases")


def _side(runs: list[dict], first: dict) -> str:
    name = first.get("path", "")
    return f"{name} (+{len(runs) - 1} more)" if len(runs) > 1 else name


def verdict_line(c: Comparison) -> str:
    """One line of what the rows say: the regressions (with a gate) or the phases slower and faster."""
    rows = [p for p in c.phases if p.status in ("compared", "run-wide")]
    slower = [p.phase for p in rows if p.verdict == "slower" and not p.regression]
    faster = [p.phase for p in rows if p.verdict == "faster"]
    parts = []
    if c.settings.fail_above is not None:
        reg = [p.phase for p in c.regressions]
        parts.append(f"regressed: {', '.join(reg)}" if reg else f"no regression (gate: {c.settings.fail_above:g} %)")
    else:
        parts.append("no gate (--fail-above not given)")
    if slower:
        parts.append(f"slower{' but under the gate' if c.settings.fail_above is not None else ''}: {', '.join(slower)}")
    if faster:
        parts.append(f"faster: {', '.join(faster)}")
    if not slower and not faster and not c.regressions:
        parts.append("no phase slower or faster beyond the noise")
    return "; ".join(parts)


def compare_document(c: Comparison) -> Document:
    """The change per phase beyond the run-wide factor (a figure on a page), the table, and the findings that
    appeared or went away."""
    t = comparison_table(c)
    dashed = "; dashed: --fail-above" if c.settings.fail_above is not None else ""
    forest = Figure(
        "forest",
        f"Change of the {c.settings.gate} per phase, beyond the run-wide factor",
        f"dot: Δ beyond the factor; bar: its {int(c.settings.confidence * 100)} % interval (run-to-run noise included)"
        f"{dashed}; ◀ ▶: beyond the axis, value written",
        c,
    )
    sections: list[Section] = [[forest, t]]
    if c.findings is not None:
        sections.append([_findings_change(c)])
    line = verdict_line(c)
    verdict = Prose("warning" if c.regressions else "note", [line])
    head = PageHead("nvtxsim compare", "nvtxsim compare", [SourcePart(t.title, isolated=False)], [verdict])
    flat = ViewTable("compare", "", [], [asdict(p) for p in c.phases])  # raw values, every field
    return Document("compare", sections, head, data=lambda: _json(c), flat=flat)


def _findings_change(c: Comparison) -> ChangeList:
    """One line per finding that appeared in the new run or went away."""
    from nvtxsim.reporting.findings import finding_line

    d = c.findings
    assert d is not None  # the caller checked
    summary = f"{len(d.appeared)} appeared, {len(d.gone)} went away, {len(d.kept)} in both"
    items = [("appeared", finding_line(f)) for f in d.appeared] + [("gone", finding_line(f)) for f in d.gone]
    return ChangeList("Findings", summary, items)


def _json(c: Comparison) -> dict:
    from nvtxsim._version import __version__

    doc = c.as_dict()
    doc["nvtxsim_version"] = __version__
    return doc
