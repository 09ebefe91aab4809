"""``nvtxsim scaling RUN=VALUE ... --param NAME``: how each phase grows with a parameter, from a sweep of runs.

Exit codes: 0 done, 2 bad input (one run; also when two runs: the table is still printed, the
classes are refused with one line on stderr).
"""

from __future__ import annotations

import argparse
import re
import sys

from nvtxsim.analysis.scaling import parse_runs, parse_size, parse_value, require_sweep
from nvtxsim.cli.arguments import domain_from_args
from nvtxsim.cli.output import add_output_arguments, check_writable, deliver_document
from nvtxsim.cli.progress import load_with_progress
from nvtxsim.errors import NvtxsimError, int_option
from nvtxsim.reporting.renderers import formats_for


def run(args: argparse.Namespace) -> int:
    """``nvtxsim scaling``: every argument checked before any export is loaded (a typo fails at once)."""
    from nvtxsim.reporting.scaling import forecast, scaling_document, sweep

    specs = parse_runs(args.runs)  # bad RUN=VALUE arguments fail before anything is loaded
    require_sweep(specs)
    if not args.param.strip():
        raise NvtxsimError("--param: give the name of the parameter that differs between the runs (e.g. num_envs)")
    value = parse_value(args.predict, "--predict") if args.predict is not None else None
    budget = parse_size(args.memory_budget) if args.memory_budget is not None else None
    protect = [s.path for s in specs]
    if args.output is not None:
        check_writable(args.output, force=args.force, protect=protect)
    domain, given = domain_from_args(args)
    sc = sweep(
        args.runs,
        args.param,
        by=args.by,
        skip_first=args.skip_first,
        domain=domain,
        domain_given=given,
        match=args.match,
        load=load_with_progress,
    )
    forecast(sc, at=value, budget=budget)
    deliver_document(scaling_document(sc), args.format, args.output, wide=args.wide, force=args.force, protect=protect)
    if sc.refused:
        print(f"nvtxsim: error: {sc.refused}", file=sys.stderr)
        return 2
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``nvtxsim scaling``."""
    p = sub.add_parser(
        "scaling",
        help="how each phase's time and GPU memory grow with a parameter (e.g. num_envs), from a sweep of runs",
        description="Fit each phase's CPU time, GPU busy time and GPU memory per iteration against a parameter "
        "(one export per value) and classify them constant, sublinear, linear or superlinear. See docs/scaling.md.",
        epilog="example:\n  nvtxsim scaling run_1024.sqlite=1024 run_4096.sqlite=4096 run_16384.sqlite=16384 --param num_envs --skip-first 5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN=VALUE",
        help="an export (.sqlite, .sqlite.gz, .sqlite.xz or .nsys-rep) and the parameter's value in that run",
    )
    p.add_argument(
        "--param",
        required=True,
        metavar="NAME",
        help="name of the parameter that differs between the runs (e.g. num_envs)",
    )
    add_output_arguments(p, formats_for("scaling"))
    p.add_argument(
        "--by",
        metavar="NAME",
        help="range that marks one loop iteration (default: step where an RL runner's steps were recorded, else iteration; as the report)",
    )
    p.add_argument(
        "--skip-first",
        type=int_option("--skip-first"),
        default=0,
        metavar="N",
        help="leave out the first N iterations of each run (warm-up)",
    )
    p.add_argument("--predict", metavar="VALUE", help="time per iteration per phase and memory at this parameter value")
    p.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="largest parameter value whose peak GPU memory fits SIZE (80GiB, 80GB, 512MiB)",
    )
    p.add_argument(
        "--domain",
        metavar="NAME",
        help="NVTX domain: a name, 'default' or 'all' (default: nvtxsim; every domain when a run has no range in nvtxsim)",
    )
    p.add_argument(
        "--match", metavar="REGEX", help="only phases whose name matches REGEX (the iteration range is always kept)"
    )
    # "-80GiB" is a (bad) size, not an option: argparse only takes "-80" or "-0.5" as values, so a
    # negative size with a unit got a usage block instead of the one-line --memory-budget error.
    p._negative_number_matcher = re.compile(r"^-\.?\d")
    p.set_defaults(func=run)
