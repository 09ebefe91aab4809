"""Arguments shared by the commands that report on exports (report, compare, profile, scaling)."""

from __future__ import annotations

import argparse

from nvtxsim.analysis.findings.gate import FailRule
from nvtxsim.analysis.projection import DEFAULT_DOMAIN
from nvtxsim.analysis.selection import compile_match
from nvtxsim.errors import NvtxsimError
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
        action="append",
        metavar="VIEWS",
        help=f"comma-separated views: {', '.join(VIEWS)}, or all (default: summary; html always shows all); "
        "may be repeated",
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
        default=None,
        metavar="N",
        help="leave out the first N iterations (default: the findings leave out the warm-up they find, "
        "the per-iteration views nothing)",
    )
    g.add_argument(
        "--keep-warm-up",
        action="store_true",
        help="keep the warm-up in the findings (--skip-first 0): by default they are computed on the steady state",
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
        action="append",
        metavar="KINDS",
        help=f"exit with status 1 when a finding of one of these comma-separated kinds is found (CI): {', '.join(KINDS)}, "
        "or all; KIND:SEVERITY fails only from that severity up (sync:medium, all:high)",
    )


def _skip_first(args: argparse.Namespace) -> int | None:
    """--skip-first N, 0 for --keep-warm-up, None (the steady state) for neither; both is refused."""
    given = getattr(args, "skip_first", None)
    if getattr(args, "keep_warm_up", False):
        if given is not None:
            raise NvtxsimError("--keep-warm-up and --skip-first: choose one (--skip-first 0 keeps everything)")
        return 0
    return None if given is None else options.count(given, "--skip-first")


def request_from_args(args: argparse.Namespace) -> ReportRequest:
    """The :class:`ReportRequest` the arguments ask for (--by/--envs alone add the iterations view).

    Every value goes through the parser :func:`nvtxsim.report` uses (:mod:`nvtxsim.reporting.options`),
    also when ``args`` was built by hand rather than by argparse."""
    by = options.text(getattr(args, "by", None), "--by")
    envs = options.envs(getattr(args, "envs", None))
    opts = ViewOptions(
        by=by,
        by_given=by is not None,
        skip_first=_skip_first(args),
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


def parse_kinds(text: str | list[str] | None) -> tuple[FailRule, ...]:
    """``--fail-on``: ``sync,pageable_copy:medium`` → the rules; ``all`` → every kind; unknown kinds are an error.
    Given several times (a list), every one counts: a second ``--fail-on`` never drops the first."""
    if isinstance(text, list) and not text:
        return options.fail_on("")  # argparse gives a list only when the option was given
    return options.fail_on(text)
