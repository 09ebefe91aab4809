"""Command-line front end: ``nvtxsim <command> ...``.

Each command lives in its own module exposing ``add_parser(subparsers)`` (which
registers the command and sets ``func``); ``_COMMANDS`` lists them in help order.
Only the module of the command being run is imported: a small report is start-up
bound, and the other commands pull in subprocess, importlib.metadata and the like.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence

from nvtxsim.errors import NvtxsimError, debugging
from nvtxsim.reporting.escaping import printable

_COMMANDS = (
    "nvtxsim.cli.commands.report",
    "nvtxsim.cli.commands.compare",
    "nvtxsim.cli.commands.scaling",
    "nvtxsim.cli.commands.live",
    "nvtxsim.cli.commands.stacks",
    "nvtxsim.cli.commands.profile",
    "nvtxsim.cli.commands.doctor",
    "nvtxsim.cli.commands.run",
    "nvtxsim.cli.commands.isaaclab",
)
_MODULE_OF = {m.rsplit(".", 1)[1]: m for m in _COMMANDS}  # command name → its module


#: Commands that only read exports: no BLAS work, so OpenBLAS/MKL/OpenMP need not start a
#: thread per core when numpy is imported (0.3 s of a 16-core host's start-up). Never set for
#: ``run``/``profile``, whose child or in-process program is the user's.
_ANALYSIS_COMMANDS = frozenset({"report", "compare", "scaling"})
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _command_in(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` when it is a known one (the first argument not an option)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in _MODULE_OF else None
        if arg in ("-h", "--help", "--version"):
            return None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command ``only`` (what ``main`` needs to run it)."""
    from nvtxsim._version import __version__

    parser = argparse.ArgumentParser(
        prog="nvtxsim",
        description="Per-phase CPU/GPU timing of simulation and RL loops from Nsight Systems exports.",
    )
    parser.add_argument("--version", action="version", version=f"nvtxsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMANDS if only is None else (_MODULE_OF[only],):
        importlib.import_module(module).add_parser(sub)
    return parser


def _unknown_command(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """A first argument that is no command: one line with a close match, or ``report`` for an export's path."""
    import difflib

    for arg in argv:
        if arg in ("-h", "--help", "--version"):
            return
        if not arg.startswith("-"):
            break
    else:
        return
    if arg.endswith((".sqlite", ".sqlite.gz", ".sqlite.xz", ".nsys-rep")) or os.path.isfile(arg):
        parser.error(f"unknown command {arg!r}; to report on an export: nvtxsim report {arg}")
    close = difflib.get_close_matches(arg, list(_MODULE_OF), n=1)
    hint = f" (did you mean {close[0]}?)" if close else f"; commands: {', '.join(_MODULE_OF)}"
    parser.error(f"unknown command {arg!r}{hint}")


def _format_from_file(sub: argparse.ArgumentParser, args: argparse.Namespace, command: str | None) -> None:
    """``-o FILE`` (profile: ``--report FILE``) without ``--format``: the format its suffix names, else the table.
    A table written into ``report.html`` is never what was meant."""
    action = next((a for a in sub._actions if a.dest == "format"), None)
    if action is None or getattr(args, "format", "") is not None:
        return
    from nvtxsim.reporting.renderers import DEFAULT_FORMAT, format_of_file

    target = getattr(args, "report" if command == "profile" else "output", None)
    fmt = format_of_file(target or "") or DEFAULT_FORMAT
    if fmt not in (action.choices or ()):
        sub.error(f"{target}: {command} has no {fmt} format; give --format {{{','.join(action.choices or ())}}}")
    args.format = fmt


def _parse(parser: argparse.ArgumentParser, argv: list[str], command: str | None) -> argparse.Namespace:
    """Parse ``argv``; an unknown option of a command is reported with that command's usage (and a close match)."""
    if command is None:
        _unknown_command(parser, argv)
    subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    sub = subs.choices.get(command) if subs is not None and command else None
    for action in sub._actions if sub is not None else ():
        if action.dest == "format":
            action.default = None  # told apart from a given --format table; resolved below
    args, extra = parser.parse_known_args(argv)
    if sub is not None:
        _format_from_file(sub, args, command)
    if extra:
        import difflib

        owner = sub or parser
        known = [o for a in owner._actions for o in a.option_strings]
        close = difflib.get_close_matches(extra[0].split("=", 1)[0], known, n=1)
        owner.error(f"unrecognized arguments: {' '.join(extra)}" + (f" (did you mean {close[0]}?)" if close else ""))
    return args


def _split_run(argv: list[str]) -> tuple[list[str], list[str]]:
    """``nvtxsim [...] run OPTIONS PROGRAM...``: nvtxsim's own part, and the program's argv untouched.

    The program's arguments are never parsed as nvtxsim's: argparse would take ``--help``, ``--q`` or
    ``--n`` after the script for abbreviations of ``run``'s own options."""
    i = argv.index("run") + 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return argv[:i], argv[i + 1 :]
        if arg == "-m":
            return argv[: i + 1], argv[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            break
        i += 1
    return argv[:i], argv[i:]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_in(argv)
    program: list[str] | None = None
    if command == "run":
        argv, program = _split_run(argv)
    if command != "run":  # NVTXSIM_LIVE in the environment is for the program, not for nvtxsim's own commands
        from nvtxsim.emit import live

        live.stop()
    if command in _ANALYSIS_COMMANDS and "numpy" not in sys.modules:
        for var in _THREAD_VARIABLES:
            os.environ.setdefault(var, "1")
    parser = build_parser(only=command)
    try:
        args = _parse(parser, argv, command)
        if program is not None:
            args.argv = program
    except NvtxsimError as exc:  # a numeric option out of range (errors.int_option/float_option): one line
        print(f"nvtxsim: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = int(args.func(args) or 0)
        if program is None:  # `run`: the program's stdout is the program's, flushed at exit as Python would
            _flush_stdout()  # a full device shows here, not as a traceback at exit
        return rc
    except NvtxsimError as exc:
        print(f"nvtxsim: error: {printable(str(exc))}", file=sys.stderr)  # file names are data too
        return exc.exit_code
    except KeyboardInterrupt:
        if program is not None:
            raise  # the program's: the interpreter dies by SIGINT, as under `python SCRIPT` (run.execute)
        print("nvtxsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno not in _WRITE_ERRNOS:
            return _internal_error(exc)
        _flush_stdout(quiet=True)
        where = f" {printable(str(exc.filename))}" if exc.filename else ""
        print(f"nvtxsim: error: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug of ours: still one line, the traceback only on request
        return _internal_error(exc)


#: Errors of a write to a stream that is full or gone (not of a named file: those are NvtxsimErrors already).
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _flush_stdout(quiet: bool = False) -> None:
    """Flush stdout; when that fails (a full device), point it at /dev/null so that Python's own flush at
    exit does not fail again, and report it as one line (unless ``quiet``)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass
        if not quiet:
            raise NvtxsimError(f"standard output: cannot write: {getattr(exc, 'strerror', None) or exc}") from None


def _internal_error(exc: BaseException) -> int:
    if debugging():
        raise exc
    print(
        f"nvtxsim: internal error: {type(exc).__name__}: {printable(str(exc))} (set NVTXSIM_DEBUG=1 for the traceback; please report it)",
        file=sys.stderr,
    )
    return 3


if __name__ == "__main__":
    sys.exit(main())
