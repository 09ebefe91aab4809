"""``nvtxsim compare``'s library: two loaded exports → :class:`~nvtxsim.analysis.compare.Comparison` → document.

:func:`compare_exports` picks the domain both runs are compared in, compares them phase by phase and
diffs their findings; :func:`compare_document` is what every format renders.
"""

from __future__ import annotations

from dataclasses import asdict

from nvtxsim.analysis.compare import CompareSettings, Comparison, PhaseDelta, compare
from nvtxsim.analysis.projection import resolve_domain
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.columns import Export
from nvtxsim.reporting.document import ChangeList, Document, Figure, PageHead, Prose, Section, SourcePart
from nvtxsim.reporting.viewtable import Column, ViewTable


def compare_exports(
    base: Export,
    new: Export,
    settings: CompareSettings,
    *,
    domain: str | None,
    domain_given: bool = False,
    match: str | None = None,
    findings: bool = True,
    names: tuple[str, str] = ("BASE", "NEW"),
) -> Comparison:
    """``new`` against ``base``, phase by phase (``names``: how the notes call the two runs); ``findings``:
    also which findings appeared or went away."""
    domain, widened = common_domain(base, new, domain, domain_given, names)
    details = [Selection(e, domain=domain, match=match) for e in (base, new)]
    result = compare(details[0], details[1], settings)
    result.notes[:0] = [widened] if widened else []
    if findings:
        from nvtxsim.analysis.findings import analyse, diff

        found = [analyse(d, by=settings.by, skip_first=settings.skip_first) for d in details]
        result.findings = diff(*found)
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
    return ViewTable("compare", title, cols, [_row(p) for p in c.phases], notes, page_title="All phases")


def compare_document(c: Comparison) -> Document:
    """The median change per phase (a figure on a page), the table, and the findings that appeared or went away."""
    t = comparison_table(c)
    dashed = "; dashed: --fail-above" if c.settings.fail_above is not None else ""
    forest = Figure(
        "forest",
        "Median change per phase",
        f"dot: Δ median; bar: {int(c.settings.confidence * 100)} % bootstrap interval{dashed}",
        c,
    )
    sections: list[Section] = [[forest, t]]
    if c.findings is not None:
        sections.append([_findings_change(c)])
    if c.regressions:
        verdict = Prose("warning", [f"regressed: {', '.join(p.phase for p in c.regressions)}"])
    else:
        verdict = Prose("note", ["no regression"])
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
