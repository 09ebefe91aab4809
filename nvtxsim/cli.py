"""Command-line front end: ``nvtxsim <command> ...``.

Each command lives in its own module exposing ``add_parser(subparsers)`` (which
registers the command and sets ``func``); ``_COMMANDS`` lists them in help order.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Optional, Sequence

from .errors import NvtxsimError

_COMMANDS = (
    "nvtxsim.commands.report",
    "nvtxsim.commands.compare",
    "nvtxsim.commands.profile",
    "nvtxsim.commands.doctor",
    "nvtxsim.commands.run",
    "nvtxsim.commands.isaaclab",
)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="nvtxsim",
        description="Per-phase CPU/GPU timing of simulation and RL loops from Nsight Systems exports.",
    )
    parser.add_argument("--version", action="version", version=f"nvtxsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except NvtxsimError as exc:
        print(f"nvtxsim: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("nvtxsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug of ours: still one line, the traceback only on request
        if os.environ.get("NVTXSIM_DEBUG"):
            raise
        print(f"nvtxsim: internal error: {type(exc).__name__}: {exc} (set NVTXSIM_DEBUG=1 for the traceback; please report it)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
