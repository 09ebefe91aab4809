"""Arguments shared by the commands that report on exports (report, compare, profile, scaling)."""

from __future__ import annotations

import argparse

from nvtxsim.analysis.projection import DEFAULT_DOMAIN
from nvtxsim.errors import NvtxsimError, float_option, int_option
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.renderers import renderer
from nvtxsim.reporting.views import ViewOptions, parse_views


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
        type=int_option("--skip-first"),
        default=0,
        metavar="N",
        help="leave out the first N iterations (warm-up)",
    )
    g.add_argument(
        "--match", metavar="REGEX", help="only phases whose name (domain:name) matches REGEX (Python re.search)"
    )
    g.add_argument(
        "--top",
        type=int_option("--top", low=1),
        default=10,
        metavar="N",
        help="kernels per phase and slowest iterations to list (default: 10)",
    )
    g.add_argument(
        "--envs",
        type=float_option("--envs", low_open=True),
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
        help=f"exit with status 1 when a finding of one of these comma-separated kinds is found (CI): {', '.join(KINDS)}, or all",
    )


def request_from_args(args: argparse.Namespace) -> ReportRequest:
    """The :class:`ReportRequest` the arguments ask for (--by/--envs alone add the iterations view)."""
    if getattr(args, "top", 10) < 1:
        raise NvtxsimError("--top must be at least 1")
    if getattr(args, "skip_first", 0) < 0:
        raise NvtxsimError("--skip-first must be >= 0")
    envs = getattr(args, "envs", None)
    if envs is not None and not envs > 0:
        raise NvtxsimError("--envs must be a positive number")
    by = getattr(args, "by", None)
    opts = ViewOptions(
        by=by,
        by_given=by is not None,
        skip_first=getattr(args, "skip_first", 0),
        top=getattr(args, "top", 10),
        envs=envs,
    )
    views = parse_views(getattr(args, "view", None))
    fmt = getattr(args, "format", None)
    every_view = fmt is not None and renderer(fmt).shows_every_view  # --by/--envs then add no view
    if (by is not None or envs is not None) and not ({"iterations", "slowest"} & set(views)) and not every_view:
        views = list(dict.fromkeys(views + ["iterations"])) if views != ["summary"] else ["iterations"]
    domain, given = domain_from_args(args) if hasattr(args, "domain") else (DEFAULT_DOMAIN, False)
    return ReportRequest(
        views=views,
        options=opts,
        match=getattr(args, "match", None),
        domain=domain,
        domain_given=given,
        findings=getattr(args, "findings", True),
        fail_on=parse_kinds(getattr(args, "fail_on", None)),
    )


def parse_kinds(text: str | None) -> tuple[str, ...]:
    """``sync,pageable_copy`` → the kinds; ``all`` → every kind; unknown kinds are an error."""
    from nvtxsim.analysis.findings import KINDS

    if text is None:
        return ()
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if not kinds:  # `--fail-on "$KINDS"` with an empty variable must not pass CI silently
        raise NvtxsimError(f"--fail-on: no finding kind given; choose from {', '.join(KINDS)} or all")
    if kinds == ["all"]:
        return KINDS
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise NvtxsimError(f"--fail-on: unknown finding kind {bad[0]!r}; choose from {', '.join(KINDS)} or all")
    return tuple(dict.fromkeys(kinds))
