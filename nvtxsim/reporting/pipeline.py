"""The report pipeline: request → export → analyses → views → document → renderer.

One path for every report of one export, from Python (:func:`report`, ``nvtxsim.report``)
and from the command line (``nvtxsim report`` parses its arguments into a
:class:`~nvtxsim.reporting.model.ReportRequest` and calls :func:`analyse` and :func:`render`):

1. the export is loaded (:func:`nvtxsim.export.reader.load`);
2. :func:`analyse` picks the domain and the ranges, runs the analyses the request needs (the
   per-phase summary and its warnings, the findings, each view, the HTML plots' data) into a
   :class:`~nvtxsim.reporting.model.ReportModel`;
3. :func:`render` hands the model's document to the format's renderer (:mod:`nvtxsim.reporting.renderers`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from nvtxsim.analysis.gpu import graph_hints
from nvtxsim.analysis.projection import DEFAULT_DOMAIN, PhaseSummary, resolve_domain
from nvtxsim.analysis.selection import Selection, compile_match
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import Export
from nvtxsim.export.reader import Backend, load
from nvtxsim.reporting import options, renderers
from nvtxsim.reporting.model import ReportModel, ReportRequest
from nvtxsim.reporting.options import views as parse_views
from nvtxsim.reporting.summary import outside_warnings, ranks_hint, summary_table
from nvtxsim.reporting.views import ViewOptions, build

__all__ = [
    "ReportRequest",
    "ReportModel",
    "ViewOptions",
    "analyse",
    "parse_views",
    "render",
    "report",
    "request",
]


def request(
    *,
    views: str | list[str] | None = None,
    domain: str | None = DEFAULT_DOMAIN,
    match: str | None = None,
    by: str | None = None,
    skip_first: int | None = None,
    top: int = 10,
    envs: float | None = None,
    findings: bool = True,
    fail_on: str | list[str] | tuple[str, ...] | None = (),
) -> ReportRequest:
    """A :class:`ReportRequest` from plain options, through the command line's own parsers
    (:mod:`nvtxsim.reporting.options`): ``views`` and ``fail_on`` as one comma-separated string or a
    list ("all" for every one; ``fail_on`` entries may carry a severity floor, ``"sync:medium"``);
    ``domain`` a name, "default" (the unnamed domain), "all" or None (every domain); a value the command line would
    refuse is the same one-line :class:`~nvtxsim.errors.NvtxsimError`."""
    if not isinstance(findings, bool):
        raise NvtxsimError(f"findings=: expected True or False, got {findings!r}")
    by = options.text(by, "by=")
    options.text(match, "match=")
    compile_match(match)
    dom = options.text(domain, "domain=")
    options_ = ViewOptions(
        by=by,
        by_given=by is not None,
        skip_first=None if skip_first is None else options.count(skip_first, "skip_first="),
        top=options.count(top, "top=", low=1),
        envs=options.envs(envs, "envs="),
    )
    return ReportRequest(
        views=options.views(views, "views="),
        options=options_,
        match=match,
        domain=None if dom == "all" else dom,  # None: every domain, as "all"
        domain_given=dom != DEFAULT_DOMAIN,
        findings=findings,
        fail_on=options.fail_on(fail_on, "fail_on="),
    )


def report(
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    cache: bool | None = None,
    backend: Backend | None = None,
    **options: Any,
) -> ReportModel:
    """Load → analyse one export: the model behind ``nvtxsim report`` (its JSON is ``model.to_json()``).

    ``options`` are those of :func:`request` (views, domain, match, by, skip_first, top, envs, findings,
    fail_on); ``fmt``: the format it will be rendered in, when that needs more (html: every view and
    the plots' data)."""
    return analyse(load(path, cache=cache, backend=backend), request(**options), fmt=fmt)


def analyse(export: Export, req: ReportRequest, *, fmt: str | None = None) -> ReportModel:
    """The analyses ``req`` asks for (and the format ``fmt`` needs) on ``export``, as a :class:`ReportModel`."""
    r = renderers.renderer(fmt) if fmt is not None else None
    shown = r.views_shown(req.views) if r is not None else req.views
    req = replace(req, views=shown) if shown != req.views else req
    if req.findings and r is not None and not r.shows_findings:
        req = replace(req, findings=False)
    domain, widened = resolve_domain(export, req.domain, given=req.domain_given)
    detail = Selection(export, domain=domain, match=req.match)
    want_findings = bool(req.findings or req.fail_on) and len(detail.selected) > 0
    if want_findings:  # a streamed export: the findings' one query runs beside the projection's pass
        from nvtxsim.analysis import findings

        findings.prefetch(detail)
    summary = detail.report
    if widened:
        summary.warnings.insert(0, widened)
    summary.warnings.extend(graph_hints(detail))  # on every view: the summary's GPU columns leave graph-level work out
    if r is None or r.shows_warnings:  # the same on either backend: a streamed export reads the calls this needs
        summary.warnings.extend(outside_warnings(detail))
        summary.warnings.extend(ranks_hint(detail))
    found = None
    if want_findings:
        from nvtxsim.analysis import findings

        found = findings.analyse(detail, by=req.options.by, skip_first=req.options.skip_first)
    if req.findings:
        summary.findings = found
    model = ReportModel(
        summary=summary, request=req, views=build(detail, req.views, req.options), detail=detail, found=found
    )
    if "summary" in req.views:
        from nvtxsim.analysis.headline import headline

        o = req.options
        summary.headline = headline(detail, o.by, skip_first=o.skip_first or 0, envs=o.envs)
    if r is not None and r.needs_plots:
        from nvtxsim.reporting.page import page_data

        model.page = page_data(detail, req.options)
    return model


def render(model: ReportModel | PhaseSummary, fmt: str, *, width: int | None = None, color: bool = False) -> str:
    """``model`` in format ``fmt`` (a bare :class:`PhaseSummary`: its summary alone)."""
    if isinstance(model, PhaseSummary):
        model = ReportModel(summary=model, views=[summary_table(model)])
    return renderers.render(model.document(), fmt, width=width, color=color)
