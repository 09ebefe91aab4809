"""The detailed report: views, filters and the html/perfetto formats, for ``nvtxsim report``.

Kept apart from :mod:`nvtxsim.cli.commands.report` so the command stays a thin CLI layer
and the classic summary path stays exactly as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from nvtxsim.analysis.projection import resolve_domain
from nvtxsim.analysis.selection import Detail
from nvtxsim.errors import float_option, int_option
from nvtxsim.export.reader import Export, load
from nvtxsim.cli.progress import progress_after
from nvtxsim.reporting.summary import outside_warnings
from nvtxsim.reporting.views import ViewOptions, build, parse_views

DETAIL_FORMATS = ("html", "perfetto")


@dataclass
class DetailRequest:
    """What a detailed report asks for (defaults = the classic summary)."""

    views: list[str] = field(default_factory=lambda: ["summary"])
    options: ViewOptions = field(default_factory=ViewOptions)
    match: Optional[str] = None
    findings: bool = True  # the Findings block / JSON "findings" / HTML section
    fail_on: tuple[str, ...] = ()  # finding kinds that make the command fail (CI)
    found: Optional[Any] = field(default=None, repr=False)  # set by the pipeline: the Findings it computed

    @property
    def is_classic(self) -> bool:
        return self.views == ["summary"] and not self.match


def load_with_progress(path: "str | Path", *, progress: Optional[bool] = None) -> Export:
    with progress_after(f"loading {Path(path).name}", enabled=progress):
        return load(path)


def render_detail(
    export: Export,
    fmt: str,
    request: DetailRequest,
    *,
    domain: Optional[str] = "nvtxsim",
    domain_given: bool = False,
    color: bool = False,
    width: Optional[int] = None,
    progress: Optional[bool] = None,
) -> str:
    """Render ``export`` in ``fmt`` with the requested views (html includes every view)."""
    from nvtxsim.reporting.renderers.tables import render_views

    domain, widened = resolve_domain(export, domain, given=domain_given)
    detail = Detail(export, domain=domain, match=request.match)
    with progress_after("analysing", enabled=progress):
        if widened:
            detail.report.warnings.insert(0, widened)
        if fmt != "perfetto":
            detail.report.warnings.extend(outside_warnings(detail))
        attach_findings(detail, request)
        if fmt == "perfetto":
            from nvtxsim.reporting.renderers.perfetto import render_perfetto

            return render_perfetto(detail)
        if fmt == "html":
            from nvtxsim.reporting.renderers.html import render_html

            return render_html(detail, request.options)
        tables = build(detail, request.views, request.options)
        report = detail.report
        text = render_views(report, tables, fmt, width=width, color=color)
        if "summary" not in request.views and report.warnings and fmt == "table":
            from nvtxsim.reporting.renderers.terminal import notes_lines

            text += "".join(f"\n{ln}" for ln in notes_lines(report.warnings, width, prefix="warning: ")) + "\n"
        elif "summary" not in request.views and report.warnings and fmt == "markdown":
            from nvtxsim.reporting.escaping import markdown_cell

            text += "".join(f"\n> warning: {markdown_cell(w)}\n" for w in report.warnings)
        return text


def attach_findings(detail: Detail, request: DetailRequest) -> None:
    """Compute the findings when asked for (or needed by --fail-on) and hang them on the report."""
    if not (request.findings or request.fail_on) or len(detail.selected) == 0:
        return
    from nvtxsim.analysis.findings import for_detail, prefetch

    prefetch(detail)  # a streamed export: its few sync/memcpy calls are read while the projection runs
    fs = for_detail(detail, by=request.options.by, skip_first=request.options.skip_first)
    request.found = fs
    if request.findings:
        detail.report.findings = fs


def failed_findings(request: DetailRequest) -> list[str]:
    """``--fail-on``: one line per finding of a listed kind ("kind in phase: cost")."""
    from nvtxsim.reporting.summary import fmt_ns

    fs = request.found
    if not request.fail_on or fs is None:
        return []
    return [f"{f.kind} in {f.phase}: {fmt_ns(f.cost_ns)} ({f.severity})" for f in fs.items if f.kind in request.fail_on]


__all__ = ["DetailRequest", "ViewOptions", "parse_views", "render_detail", "load_with_progress", "DETAIL_FORMATS"]


# --------------------------------------------------------------------------- CLI glue


def add_detail_arguments(p: "argparse.ArgumentParser") -> None:
    """The report options beyond the classic summary (shared by ``report``; ``compare`` reuses some)."""
    from nvtxsim.reporting.views import VIEWS

    g = p.add_argument_group("views and filters")
    g.add_argument(
        "--view",
        default="summary",
        metavar="VIEWS",
        help=f"comma-separated views: {', '.join(VIEWS)}, or all (default: summary; html always shows all)",
    )
    g.add_argument("--by", metavar="NAME", help="range that marks one loop iteration, for the iterations/slowest views: e.g. step, learning_iteration, "
                   "iteration (default: step where an instrumented RL runner recorded steps, else iteration)")
    g.add_argument("--skip-first", type=int_option("--skip-first"), default=0, metavar="N", help="leave out the first N iterations (warm-up)")
    g.add_argument("--match", metavar="REGEX", help="only phases whose name (domain:name) matches REGEX (Python re.search)")
    g.add_argument("--top", type=int_option("--top", low=1), default=10, metavar="N", help="kernels per phase and slowest iterations to list (default: 10)")
    g.add_argument("--envs", type=float_option("--envs", low_open=True), metavar="N", help="environments stepped per env step (default: as recorded by nvtxsim.isaaclab, if at all): the iterations view "
                   "gains env-steps/s and each phase's cost in env-steps/s; a learning iteration counts its steps")
    from nvtxsim.analysis.findings import KINDS

    f = p.add_argument_group("findings")
    f.add_argument("--findings", action=argparse.BooleanOptionalAction, default=True, help="the Findings block first (what is slow, why, what to do; default: on)")
    f.add_argument("--fail-on", metavar="KINDS", help=f"exit with status 1 when a finding of one of these comma-separated kinds is found (CI): {', '.join(KINDS)}, or all")


def request_from_args(args: "argparse.Namespace") -> DetailRequest:
    from nvtxsim.errors import NvtxsimError

    if getattr(args, "top", 10) < 1:
        raise NvtxsimError("--top must be at least 1")
    if getattr(args, "skip_first", 0) < 0:
        raise NvtxsimError("--skip-first must be >= 0")
    envs = getattr(args, "envs", None)
    if envs is not None and not envs > 0:
        raise NvtxsimError("--envs must be a positive number")
    by = getattr(args, "by", None)
    opts = ViewOptions(by=by, by_given=by is not None, skip_first=getattr(args, "skip_first", 0), top=getattr(args, "top", 10), envs=envs)
    views = parse_views(getattr(args, "view", None))
    if (by is not None or envs is not None) and not ({"iterations", "slowest"} & set(views)) and getattr(args, "format", "") not in DETAIL_FORMATS:
        views = list(dict.fromkeys(views + ["iterations"])) if views != ["summary"] else ["iterations"]
    return DetailRequest(views=views, options=opts, match=getattr(args, "match", None), findings=getattr(args, "findings", True), fail_on=parse_kinds(getattr(args, "fail_on", None)))


def parse_kinds(text: Optional[str]) -> tuple[str, ...]:
    """``sync,pageable_copy`` → the kinds; ``all`` → every kind; unknown kinds are an error."""
    from nvtxsim.analysis.findings import KINDS
    from nvtxsim.errors import NvtxsimError

    if not text:
        return ()
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if kinds == ["all"]:
        return KINDS
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise NvtxsimError(f"--fail-on: unknown finding kind {bad[0]!r}; choose from {', '.join(KINDS)} or all")
    return tuple(dict.fromkeys(kinds))


import argparse  # noqa: E402  (typing only)
