"""Arguments shared by the commands that report on exports (report, compare, profile, scaling)."""

from __future__ import annotations

import argparse

from nvtxsim.analysis.findings.gate import FailRule
from nvtxsim.analysis.projection import DEFAULT_DOMAIN
from nvtxsim.analysis.selection import compile_match
from nvtxsim.reporting import options
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.renderers import renderer
from nvtxsim.reporting.views import ViewOptions


def domain_from_args(args: argparse.Namespace) -> tuple[str | None, bool]:
    """``--domain``: (the domain, None for all; whether it was given)."""
    name = args.domain or DEFAULT_DOMAIN
    return (None if name == "all" else name), args.domain is not None


def add_view_arguments(p: argparse.ArgumentParser) -> None:
    """The report options beyond the classic summary: views, filters, findings."""
    from nvtxsim.analysis.findings import KINDS
    from nvtxsim.reporting.views import VIEWS

    g = p.add_argument_group("views and filters")
    g.add_argument(
        "--view",
        default="summary",
        metavar="VIEWS",
        help=f"comma-separated views: {', '.join(VIEWS)}, or all (default: summary; html always shows all)",
    )
    g.add_argument(
        "--by",
        metavar="NAME",
        help="range that marks one loop iteration, for the iterations/slowest views: e.g. step, learning_iteration, "
        "iteration (default: step where an instrumented RL runner recorded steps, else iteration)",
    )
    g.add_argument(
        "--skip-first",
        type=lambda t: options.count(t, "--skip-first"),
        default=0,
        metavar="N",
        help="leave out the first N iterations (warm-up)",
    )
    g.add_argument(
        "--match", metavar="REGEX", help="only phases whose name (domain:name) matches REGEX (Python re.search)"
    )
    g.add_argument(
        "--top",
        type=lambda t: options.count(t, "--top", low=1),
        default=10,
        metavar="N",
        help="kernels per phase and slowest iterations to list (default: 10)",
    )
    g.add_argument(
        "--envs",
        type=options.envs,
        metavar="N",
        help="environments stepped per env step (default: as recorded by nvtxsim.isaaclab, if at all): the iterations view "
        "gains env-steps/s and each phase's cost in env-steps/s; a learning iteration counts its steps",
    )
    f = p.add_argument_group("findings")
    f.add_argument(
        "--findings",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the Findings block first (what is slow, why, what to do; default: on)",
    )
    f.add_argument(
        "--fail-on",
        metavar="KINDS",
        help=f"exit with status 1 when a finding of one of these comma-separated kinds is found (CI): {', '.join(KINDS)}, "
        "or all; KIND:SEVERITY fails only from that severity up (sync:medium, all:high)",
    )


def request_from_args(args: argparse.Namespace) -> ReportRequest:
    """The :class:`ReportRequest` the arguments ask for (--by/--envs alone add the iterations view).

    Every value goes through the parser :func:`nvtxsim.report` uses (:mod:`nvtxsim.reporting.options`),
    also when ``args`` was built by hand rather than by argparse."""
    by = options.text(getattr(args, "by", None), "--by")
    envs = options.envs(getattr(args, "envs", None))
    opts = ViewOptions(
        by=by,
        by_given=by is not None,
        skip_first=options.count(getattr(args, "skip_first", 0), "--skip-first"),
        top=options.count(getattr(args, "top", 10), "--top", low=1),
        envs=envs,
    )
    views = options.views(getattr(args, "view", None))
    match = options.text(getattr(args, "match", None), "--match")
    compile_match(match)  # a bad pattern is refused before the export is loaded
    fmt = getattr(args, "format", None)
    every_view = fmt is not None and renderer(fmt).shows_every_view  # --by/--envs then add no view
    if (by is not None or envs is not None) and not ({"iterations", "slowest"} & set(views)) and not every_view:
        views = list(dict.fromkeys(views + ["iterations"])) if views != ["summary"] else ["iterations"]
    domain, given = domain_from_args(args) if hasattr(args, "domain") else (DEFAULT_DOMAIN, False)
    return ReportRequest(
        views=views,
        options=opts,
        match=match,
        domain=domain,
        domain_given=given,
        findings=getattr(args, "findings", True),
        fail_on=parse_kinds(getattr(args, "fail_on", None)),
    )


def parse_kinds(text: str | None) -> tuple[FailRule, ...]:
    """``--fail-on``: ``sync,pageable_copy:medium`` → the rules; ``all`` → every kind; unknown kinds are an error."""
    return options.fail_on(text)
