"""``nvtxsim compare BASE NEW``: per-phase change between two runs, with a CI regression gate.

Exit codes: 0 no regression, 1 at least one phase regressed (with ``--fail-above``) or a finding of a
``--fail-on`` kind appeared, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys

from nvtxsim.analysis.compare import CompareSettings
from nvtxsim.cli.arguments import domain_from_args, parse_kinds
from nvtxsim.cli.output import add_output_arguments, check_writable, deliver, layout
from nvtxsim.cli.progress import load_with_progress
from nvtxsim.errors import float_option, int_option
from nvtxsim.reporting.escaping import printable
from nvtxsim.reporting.renderers import formats_for


def run(args: argparse.Namespace) -> int:
    from nvtxsim.analysis.findings.gate import failing
    from nvtxsim.reporting.compare import compare_document, compare_exports
    from nvtxsim.reporting.renderers import render

    protect = [args.base, args.new]
    if args.output is not None:
        check_writable(args.output, force=args.force, protect=protect)
    fail_on = parse_kinds(args.fail_on)
    domain, given = domain_from_args(args)
    result = compare_exports(
        load_with_progress(args.base),
        load_with_progress(args.new),
        _settings(args),
        domain=domain,
        domain_given=given,
        match=args.match,
        findings=bool(args.findings or fail_on),
        names=(args.base, args.new),
    )
    to = layout(args.output, wide=args.wide)
    deliver(
        render(compare_document(result), args.format, width=to.width, color=to.color),
        args.output,
        force=args.force,
        protect=protect,
    )
    status = 0
    if result.regressions:
        print(
            f"nvtxsim: regression in {len(result.regressions)} phase(s): {printable(', '.join(p.phase for p in result.regressions))}",
            file=sys.stderr,
        )
        status = 1
    appeared = failing(fail_on, result.findings.appeared if result.findings else [])
    for f in appeared:
        print(printable(f"nvtxsim: --fail-on: new finding {f.kind} in {f.phase} ({f.severity})"), file=sys.stderr)
    return 1 if appeared else status


def _settings(args: argparse.Namespace) -> CompareSettings:
    return CompareSettings(
        metric=args.metric,
        by=args.by,
        skip_first=args.skip_first,
        resamples=args.resamples,
        confidence=args.confidence,
        seed=args.seed,
        fail_above=args.fail_above,
        gate=args.gate,
        min_samples=args.min_samples,
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="per-phase change between two exports (median, p99, bootstrap CI, regression gate)",
        description="Compare two nsys exports phase by phase: change of the median and p99 with bootstrap confidence "
        "intervals; --fail-above PCT exits 1 when a phase slowed down by more than PCT percent (CI gate).",
    )
    p.add_argument("base", metavar="BASE", help="baseline export (.sqlite, .sqlite.gz, .sqlite.xz or .nsys-rep)")
    p.add_argument("new", metavar="NEW", help="export to compare against the baseline")
    add_output_arguments(p, formats_for("compare"))
    p.add_argument(
        "--domain",
        metavar="NAME",
        help="NVTX domain: a name, 'default' or 'all' (default: nvtxsim; every domain when neither run has a range in it)",
    )
    p.add_argument("--match", metavar="REGEX", help="only phases whose name matches REGEX")
    p.add_argument(
        "--metric",
        choices=("cpu", "gpu"),
        default="cpu",
        help="cpu: range time; gpu: GPU busy time of the range (default: cpu)",
    )
    p.add_argument(
        "--by",
        metavar="NAME",
        help="compare per-iteration totals, iterations keyed on range NAME (e.g. iteration) instead of instances",
    )
    p.add_argument(
        "--skip-first",
        type=int_option("--skip-first"),
        default=0,
        metavar="N",
        help="with --by: leave out the first N iterations of each run",
    )
    p.add_argument(
        "--fail-above",
        type=float_option("--fail-above"),
        metavar="PCT",
        help="exit 1 if a phase's change exceeds PCT %% with its interval above 0",
    )
    p.add_argument(
        "--gate",
        choices=("median", "p99", "both"),
        default="median",
        help="statistic --fail-above looks at (default: median)",
    )
    p.add_argument(
        "--confidence",
        type=float_option("--confidence", low_open=True, high=1, high_open=True),
        default=0.95,
        help="confidence level of the intervals (default: 0.95)",
    )
    p.add_argument(
        "--resamples",
        type=int_option("--resamples", low=1, high=10_000_000),
        default=2000,
        help="bootstrap resamples (default: 2000)",
    )
    p.add_argument(
        "--seed",
        type=int_option("--seed", high=2**63 - 1),
        default=0,
        help="bootstrap seed (default: 0; same inputs and seed give the same output)",
    )
    p.add_argument(
        "--min-samples",
        type=int_option("--min-samples", low=1),
        default=5,
        metavar="N",
        help="phases with fewer samples in either run are listed, not gated (default: 5)",
    )
    p.add_argument(
        "--findings",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="list the findings that appeared or went away (default: on)",
    )
    p.add_argument(
        "--fail-on",
        metavar="KINDS",
        help="exit 1 when a finding of one of these comma-separated kinds appeared in NEW (or all); "
        "KIND:SEVERITY counts only those of that severity or worse (sync:medium, all:high)",
    )
    p.set_defaults(func=run)
