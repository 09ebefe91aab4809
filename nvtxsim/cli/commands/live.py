"""``nvtxsim live FILE.jsonl``: what live timing (``NVTXSIM_LIVE``) wrote, per phase, or over training (HTML).

Exit codes: 0 done, 2 the file cannot be read or the output cannot be written.
"""

from __future__ import annotations

import argparse

from nvtxsim.cli.output import add_output_arguments, check_writable, deliver, layout
from nvtxsim.errors import NvtxsimError


def run(args: argparse.Namespace) -> int:
    from nvtxsim.analysis.live import load
    from nvtxsim.reporting.renderers.live import render_live

    if args.output is not None:
        check_writable(args.output, force=args.force, protect=[args.file])
    log = load(args.file)
    if not log.windows and log.skipped:  # an export, a script, a log: not a live-timing file
        if _is_sqlite(args.file):
            raise NvtxsimError(f"{args.file}: an nsys export, not a live-timing file: nvtxsim report {args.file}")
        raise NvtxsimError(
            f"{args.file}: no live-timing window in its {log.skipped} line(s) (NVTXSIM_LIVE=live.jsonl python train.py writes them)"
        )
    to = layout(args.output, wide=args.wide)
    text = render_live(log, args.format, width=to.width, color=to.color)
    deliver(text, args.output, force=args.force, protect=[args.file])
    return 0


def _is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from nvtxsim.reporting.renderers.live import FORMATS

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
    add_output_arguments(p, FORMATS)
    p.set_defaults(func=run)
