"""The report model: what one report of one export holds, whatever it is rendered as.

:func:`nvtxsim.reporting.pipeline.analyse` builds it (request → export → analyses → views);
``nvtxsim.report()`` returns it. Its :meth:`ReportModel.document` is what every renderer
renders; the JSON output is its serialisation (:meth:`ReportModel.to_json`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nvtxsim.analysis.findings.gate import FailRule
from nvtxsim.analysis.projection import DEFAULT_DOMAIN, PhaseStats, PhaseSummary
from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.document import Document, FindingsBlock, PageHead, Prose, Section, SourcePart
from nvtxsim.reporting.escaping import json_text
from nvtxsim.reporting.summary import heading_parts, headline_parts, json_document, summary_sections
from nvtxsim.reporting.views import ViewOptions
from nvtxsim.reporting.viewtable import ViewTable, fmt_ns


@dataclass
class ReportRequest:
    """What a report asks for (the defaults: the classic per-phase summary of the nvtxsim domain)."""

    views: list[str] = field(default_factory=lambda: ["summary"])
    options: ViewOptions = field(default_factory=ViewOptions)
    match: str | None = None  # only phases whose name matches this regular expression
    domain: str | None = DEFAULT_DOMAIN  # None: every domain
    domain_given: bool = False  # the user named the domain: its absence is an error, not a widening
    findings: bool = True  # the Findings block / JSON "findings" / HTML section
    fail_on: tuple[FailRule, ...] = ()  # the findings that make the command fail (CI): --fail-on

    @property
    def is_classic(self) -> bool:
        """Only the summary, unfiltered: the JSON has no "views" object."""
        return self.views == ["summary"] and not self.match


@dataclass
class ReportModel:
    """One report: the per-phase summary (with warnings and findings), the requested views and, for
    the HTML page, the plots' data. ``detail`` keeps the analysed export for the Perfetto trace."""

    summary: PhaseSummary
    request: ReportRequest = field(default_factory=ReportRequest)
    views: list[ViewTable] = field(default_factory=list)
    detail: Selection | None = field(default=None, repr=False)
    page: dict | None = field(default=None, repr=False)
    found: Any = field(default=None, repr=False)  # the Findings computed (also when only --fail-on asked for them)
    _extra_views: dict[str, ViewTable] = field(default_factory=dict, repr=False, compare=False)

    @property
    def source(self) -> dict:
        return self.summary.source

    @property
    def phases(self) -> list[PhaseStats]:
        return self.summary.phases

    @property
    def warnings(self) -> list[str]:
        return self.summary.warnings

    @property
    def headline(self) -> Any:
        """The :class:`~nvtxsim.analysis.headline.Headline` above the summary (None without the summary view)."""
        return self.summary.headline

    @property
    def findings(self) -> Any:
        return self.summary.findings

    def view(self, name: str) -> ViewTable:
        """The view ``name`` of this report. One the report did not ask for is computed here, on the same
        ranges and options (it joins neither :attr:`views` nor the JSON); an unknown name is one
        :class:`~nvtxsim.errors.NvtxsimError` naming the closest view."""
        for t in self.views:
            if t.name == name:
                return t
        from nvtxsim.reporting.options import views as parse_views
        from nvtxsim.reporting.views import build

        names = parse_views([name] if isinstance(name, str) else name, "view()")
        if len(names) != 1:
            raise NvtxsimError(f"view(): one view name, got {name!r}")
        known = names[0]
        if self.detail is None:
            asked = ", ".join(t.name for t in self.views) or "none"
            raise NvtxsimError(
                f"view {known!r} is not in this report (it has: {asked}) and its export is not kept to compute it;"
                f" ask for it with nvtxsim.report(path, views={known!r})"
            )
        if known not in self._extra_views:
            self._extra_views[known] = build(self.detail, [known], self.request.options)[0]
        return self._extra_views[known]

    def as_dict(self) -> dict:
        """The JSON document: source (with nvtxsim's version and the schema), phases, warnings,
        findings, and the views unless only the plain summary was asked for."""
        doc = json_document(self.summary)
        if not self.request.is_classic:
            doc["views"] = {t.name: t.as_dict() for t in self.views}
        return doc

    def to_json(self) -> str:
        return json_text(self.as_dict(), indent=2) + "\n"

    def document(self) -> Document:
        """The report as a document: the views in the order asked for, the summary under the report's source
        line with the Findings block and the warnings (without the summary: the block first, the warnings last)."""
        names = [t.name for t in self.views]
        fs = self.summary.findings
        block = FindingsBlock(fs, [p.label for p in self.phases]) if fs is not None else None
        if block is not None and "findings" in names:  # the view lists every finding: text leaves the block out
            block.in_view = True
        sections: list[Section] = [[block]] if block is not None and "summary" not in names else []
        for t in self.views:
            sections += summary_sections(self.summary, t, block) if t.name == "summary" else [[t]]
        if "summary" not in names and self.warnings:
            sections.append([Prose("warning", list(self.warnings))])
        return Document(
            "report",
            sections,
            self._page_head(),
            data=self.as_dict,
            flat=self.views[0] if len(self.views) == 1 else None,
            plots=self.page,
            detail=self.detail,
        )

    def _page_head(self) -> PageHead:
        warnings = [Prose("warning", list(self.warnings))] if self.warnings else []
        if self.summary.headline is not None:
            warnings.insert(0, Prose("remark", [" · ".join(headline_parts(self.summary.headline))]))
        parts = [SourcePart(p) for p in heading_parts(self.source, counts_sep=" · ")]
        return PageHead(f"nvtxsim report · {self.source.get('path', '')}", "nvtxsim report", parts, warnings)

    def failed_findings(self, fail_on: object = None) -> list[str]:
        """The CI gate: one line per finding that fails it ("kind in phase: cost (severity)"), most costly first.

        ``fail_on``: the kinds (as for ``nvtxsim.report(..., fail_on=...)``: ``"all"``, ``"sync:medium"``,
        a list); by default those the request gave. With neither, there is no gate to pass and this is
        an error rather than an empty list: ``assert not model.failed_findings()`` must never pass
        because no kind was named. The findings are computed here when the report did not compute them."""
        from nvtxsim.analysis import findings as analysis
        from nvtxsim.analysis.findings.gate import failing, parse_fail_on

        rules = parse_fail_on(fail_on, option="fail_on=") if fail_on is not None else self.request.fail_on
        if not rules:
            raise NvtxsimError(
                "failed_findings: no finding kind to fail on; pass fail_on='all' (or kinds) here or to report()"
            )
        found = self.found
        if found is None and self.detail is not None and len(self.detail.selected):
            o = self.request.options
            found = self.found = analysis.analyse(self.detail, by=o.by, skip_first=o.skip_first)
        items = found.items if found is not None else []
        return [f"{f.kind} in {f.phase}: {fmt_ns(f.cost_ns)} ({f.severity})" for f in failing(rules, items)]
