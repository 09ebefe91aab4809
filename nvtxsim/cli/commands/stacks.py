"""``nvtxsim stacks FILE.stacks.jsonl``: the hot Python functions per phase that ``NVTXSIM_STACKS`` sampled, without
an export (a run without nsys); beside an export the report's ``--view stacks`` shows the same.

Exit codes: 0 done, 2 the file cannot be read or the output cannot be written.
"""

from __future__ import annotations

import argparse

from nvtxsim.cli.output import add_output_arguments, check_writable, deliver_document
from nvtxsim.errors import int_option


def run(args: argparse.Namespace) -> int:
    from nvtxsim.reporting.stacks import stacks_document

    if args.output is not None:
        check_writable(args.output, force=args.force, protect=[args.file])
    doc = stacks_document(args.file, args.top)
    deliver_document(doc, args.format, args.output, wide=args.wide, force=args.force, protect=[args.file])
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from nvtxsim.reporting.renderers import formats_for

    p = sub.add_parser(
        "stacks",
        help="the hot Python functions per phase from a stacks file (NVTXSIM_STACKS=FILE), with or without nsys",
        description="The most sampled Python functions inside each phase, with their self and total share and "
        "file:line, from the file NVTXSIM_STACKS (nvtxsim profile --stacks) wrote. See docs/cpu.md.",
        epilog="examples:\n  NVTXSIM_STACKS=run.stacks.jsonl python train.py\n  nvtxsim stacks run.stacks.jsonl --top 5",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", metavar="FILE.stacks.jsonl", help="the file the stack sampler wrote")
    p.add_argument("--top", type=int_option("--top", low=1), default=10, help="functions per phase (default: 10)")
    add_output_arguments(p, formats_for("stacks"))
    p.set_defaults(func=run)
