"""``nvtxsim compare BASE NEW`` or ``nvtxsim compare BASE... --vs NEW...``: per-phase change between runs,
with a CI regression gate. Several runs per side (files or globs) let the gate measure run-to-run noise.

Exit codes: 0 no regression, 1 at least one phase regressed (with ``--fail-above``) or a finding of a
``--fail-on`` kind appeared, 2 bad input.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

from nvtxsim.analysis.compare import CompareSettings
from nvtxsim.analysis.compare_runs import MIN_SHARE_PCT, ONE_RUN_NOISE_PCT
from nvtxsim.cli.arguments import domain_from_args, parse_kinds
from nvtxsim.cli.output import add_output_arguments, check_writable, deliver_document
from nvtxsim.cli.progress import load_with_progress
from nvtxsim.errors import NvtxsimError, float_option, int_option
from nvtxsim.reporting.escaping import printable
from nvtxsim.reporting.renderers import formats_for


def run(args: argparse.Namespace) -> int:
    from nvtxsim.analysis.findings.gate import failing
    from nvtxsim.reporting.compare import compare_document, compare_exports

    bases, news = sides(args.runs, args.vs)
    protect = [*bases, *news]
    if args.output is not None:
        check_writable(args.output, force=args.force, protect=protect)
    fail_on = parse_kinds(args.fail_on)
    domain, given = domain_from_args(args)
    result = compare_exports(
        [load_with_progress(p) for p in bases],
        [load_with_progress(p) for p in news],
        _settings(args),
        domain=domain,
        domain_given=given,
        match=args.match,
        findings=bool(args.findings or fail_on),
        names=(bases[0], news[0]),
    )
    deliver_document(
        compare_document(result), args.format, args.output, wide=args.wide, force=args.force, protect=protect
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


def expand(patterns: list[str]) -> list[str]:
    """Each argument as given when it names a file (or has no wildcard), else the files its glob matches
    (sorted); a glob that matches nothing is an error."""
    out: list[str] = []
    for a in patterns:
        if os.path.exists(a) or not glob.has_magic(a):
            out.append(a)
            continue
        hits = sorted(glob.glob(a))
        if not hits:
            raise NvtxsimError(f"{a}: no file matches this pattern")
        out.extend(hits)
    return out


def sides(runs: list[str], vs: list[str] | None) -> tuple[list[str], list[str]]:
    """BASE NEW, or BASE... --vs NEW...: the baseline runs and the new runs."""
    if vs is None:
        got = expand(runs)
        if len(got) != 2:
            raise NvtxsimError(
                f"compare takes BASE NEW (two exports; got {len(got)}) or BASE... --vs NEW... (several runs per side)"
            )
        return got[:1], got[1:]
    if not vs:
        raise NvtxsimError("--vs needs at least one export")
    return expand(runs), expand(vs)


def _settings(args: argparse.Namespace) -> CompareSettings:
    by = None if args.per_instance else args.by or "iteration"
    return CompareSettings(
        metric=args.metric,
        by=by,
        by_given=args.by is not None,
        min_share=args.min_share,
        one_run_noise=args.assumed_noise,
        factor=args.factor,
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
        help="per-phase change between runs (median, p99, run-to-run noise, regression gate)",
        description="Compare nsys exports phase by phase: BASE NEW, or several runs per side (BASE... --vs NEW..., "
        "files or globs) so that run-to-run noise is measured. --fail-above PCT exits 1 when a phase slowed down "
        "by more than PCT percent beyond the noise and by at least --min-share %% of the iteration (CI gate).",
    )
    p.add_argument(
        "runs",
        metavar="BASE",
        nargs="+",
        help="baseline export(s) (.sqlite, .sqlite.gz, .sqlite.xz or .nsys-rep; globs allowed); without --vs: BASE NEW",
    )
    p.add_argument(
        "--vs",
        nargs="+",
        metavar="NEW",
        help="the new run(s) to compare against the BASE runs (several runs of each: the gate measures run-to-run noise)",
    )
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
        help="compare per-iteration totals, iterations keyed on range NAME (default: iteration; runs without "
        "such a range are compared per instance, with a note)",
    )
    p.add_argument(
        "--per-instance",
        action="store_true",
        help="compare range instances instead of per-iteration totals",
    )
    p.add_argument(
        "--min-share",
        type=float_option("--min-share", high=100),
        default=MIN_SHARE_PCT,
        metavar="PCT",
        help=f"a phase is slower only when its change is at least PCT %% of the iteration's time (default: {MIN_SHARE_PCT:g})",
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
        help="exit 1 if a phase's change beyond the run-wide factor exceeds PCT %% with its interval above 0 "
        "(run-to-run noise included) and is at least --min-share %% of the iteration",
    )
    p.add_argument(
        "--assumed-noise",
        type=float_option("--assumed-noise"),
        default=ONE_RUN_NOISE_PCT,
        metavar="PCT",
        help="with one run per side: the run-to-run noise assumed on each side of a phase's interval "
        f"(default: {ONE_RUN_NOISE_PCT:g}; several runs per side measure it instead)",
    )
    p.add_argument(
        "--factor",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="take out the run-wide factor, the change common to every phase (the host's speed); "
        "--no-factor compares absolute times, for a quiet host (default: on)",
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
        action="append",
        metavar="KINDS",
        help="exit 1 when a finding of one of these comma-separated kinds appeared in NEW (or all); "
        "KIND:SEVERITY counts only those of that severity or worse (sync:medium, all:high)",
    )
    p.set_defaults(func=run)
