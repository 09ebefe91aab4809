"""``nvtxsim live FILE.jsonl``: what live timing (``NVTXSIM_LIVE``) wrote, per phase, or over training (HTML).

Exit codes: 0 done, 2 the file cannot be read or the output cannot be written.
"""

from __future__ import annotations

import argparse

from nvtxsim.cli.output import add_output_arguments, check_writable, deliver_document


def run(args: argparse.Namespace) -> int:
    from nvtxsim.reporting.live import live_document, read_live

    if args.output is not None:
        check_writable(args.output, force=args.force, protect=[args.file])
    doc = live_document(read_live(args.file))
    deliver_document(doc, args.format, args.output, wide=args.wide, force=args.force, protect=[args.file])
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from nvtxsim.reporting.renderers import formats_for

    p = sub.add_parser(
        "live",
        help="per-phase CPU/GPU time from a live-timing file (NVTXSIM_LIVE=FILE), or each phase over training (html)",
        description="Sum the JSON lines that live timing wrote during a run (NVTXSIM_LIVE=FILE or nvtxsim.live.start) "
        "per phase, or plot each phase's time over training (--format html). See docs/live.md.",
        epilog="examples:\n  NVTXSIM_LIVE=live.jsonl python train.py\n  nvtxsim live live.jsonl\n"
        "  nvtxsim live live.jsonl --format html -o live.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", metavar="FILE.jsonl", help="the file live timing wrote")
    add_output_arguments(p, formats_for("live"))
    p.set_defaults(func=run)
