"""``nvtxsim run SCRIPT [ARGS...]``: run an unmodified Isaac Lab script with nvtxsim phases.

The script runs as ``python SCRIPT ARGS...`` would run it (``runpy``, ``__name__ ==
"__main__"``, ``sys.argv``, ``sys.path[0]`` = the script's folder) after an import
hook is installed that instruments Isaac Lab envs and rsl_rl / skrl / rl_games
runners as the script creates them (:mod:`nvtxsim.isaaclab.auto`). Nothing is
imported up front. The exit code is the script's. Under a profiler::

    nsys profile -t nvtx,cuda,osrt --sample=none --cpuctxsw=none -o run \\
        python -m nvtxsim run scripts/reinforcement_learning/rsl_rl/train.py --task Isaac-Cartpole-v0 --headless
    nvtxsim profile -o run -- python -m nvtxsim run train.py --task ...
"""

from __future__ import annotations

import argparse
import builtins
import os
import runpy
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

from nvtxsim.errors import NvtxsimError
from nvtxsim.phases import ENV_STACKS


def _exit_code(code: Any) -> int:
    """What the interpreter would exit with for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code & 0xFF if code >= 0 else code % 256
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def execute(argv: list[str], *, module: bool = False) -> int:
    """Run ``argv`` (a script path or, with ``module``, a module name, then its arguments) as ``__main__``."""
    target, rest = argv[0], argv[1:]
    saved_argv, saved_path0 = sys.argv[:], (sys.path[0] if sys.path else None)
    runner: Callable[[], object]
    try:
        if module:
            sys.argv = [target, *rest]  # runpy replaces argv[0] with the module's file
            runner = lambda: runpy.run_module(target, run_name="__main__", alter_sys=True)  # noqa: E731
        else:
            path = os.path.abspath(target)
            sys.argv = [target, *rest]
            folder = (
                path if os.path.isdir(path) or _is_zip(path) else os.path.dirname(path)
            )  # as Python sets sys.path[0]
            path = os.path.join(os.getcwd(), target)  # __file__ as Python makes it: joined, not normalised
            if sys.path:
                sys.path[0] = folder
            else:
                sys.path.insert(0, folder)
            runner = lambda: _run_path(path, target)  # noqa: E731
        try:
            runner()
        except SystemExit as exc:
            return _exit_code(exc.code)
        except KeyboardInterrupt as exc:  # Python shows it, then dies by SIGINT once it has finished exiting
            _print_program_error()
            _quiet_excepthook(exc)
            raise  # out of nvtxsim's main, to the interpreter: atexit handlers run, then the signal
        except BaseException:  # the program's own error: show it like Python would
            _print_program_error()
            return 1
        return 0
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0


def _print_program_error() -> None:
    """The exception being handled, without nvtxsim's frames, shown as Python shows an uncaught one:
    through ``sys.excepthook`` (the program's own, when it set one)."""
    etype, value, tb = sys.exc_info()
    while tb is not None and _is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    assert etype is not None and value is not None
    value.__traceback__ = tb  # the default hook prints the exception's own traceback
    try:
        sys.excepthook(etype, value, tb)
    except Exception:  # as Python: a failing hook, then the original traceback
        traceback.print_exception(etype, value, tb)


def _quiet_excepthook(shown: BaseException) -> None:
    """The interpreter prints an uncaught exception with ``sys.excepthook``: ``shown`` was printed already."""
    previous = sys.excepthook

    def hook(etype: type[BaseException], value: BaseException, tb: types.TracebackType | None) -> None:
        if value is not shown:
            previous(etype, value, tb)

    sys.excepthook = hook


def _refuse(message: str, code: int) -> NvtxsimError:
    """An error before the program starts, with the exit status Python gives for the same mistake."""
    err = NvtxsimError(message)
    err.exit_code = code
    return err


def _run_path(path: str, argv0: str) -> None:
    """Run the script at ``path`` as ``__main__`` with ``sys.argv[0]`` left as typed, as ``python SCRIPT``.

    runpy would set ``sys.argv[0]`` to the path it was given; ``__file__`` and ``sys.path[0]`` must be
    absolute (as Python makes them) but ``sys.argv[0]`` is what the user typed, so the script sees
    the same values under ``nvtxsim run`` as without it. A directory or zip file runs its
    ``__main__`` module, found through the absolute path (``sys.path[0]``, set by the caller).
    """
    if os.path.isfile(path) and not _is_zip(path):
        with open(path, "rb") as fh:  # like runpy: the source decides its encoding
            code = compile(fh.read(), path, "exec", dont_inherit=True)
        _exec_main(code, __file__=path, __cached__=None, __loader__=None, __package__=None, __spec__=None)
        return
    import pkgutil

    importer = pkgutil.get_importer(path)
    spec = importer.find_spec("__main__") if importer is not None else None
    if spec is None or spec.loader is None:
        raise NvtxsimError(f"{argv0}: no __main__ module to run (a script, or a folder or zip file with __main__.py)")
    code = spec.loader.get_code("__main__")  # type: ignore[attr-defined]
    _exec_main(
        code, __file__=spec.origin, __cached__=spec.cached, __loader__=spec.loader, __package__="", __spec__=spec
    )


def _exec_main(code: types.CodeType, **dunders: object) -> None:
    """Execute ``code`` in a fresh ``__main__`` module with ``dunders``, as Python runs a script."""
    main = types.ModuleType("__main__")
    main.__dict__.update(dunders, __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _is_zip(path: str) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def _is_ours(filename: str) -> bool:
    return filename == __file__ or filename == runpy.__file__ or filename.startswith("<frozen runpy")


def run(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise NvtxsimError("nothing to run: nvtxsim run SCRIPT [ARGS...] or nvtxsim run -m MODULE [ARGS...]")
    if args.module:
        import importlib.util

        try:
            found = importlib.util.find_spec(argv[0]) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise _refuse(f"-m {argv[0]}: no module of that name", 1)  # python -m: "No module named", 1
    else:
        _check_script(argv[0])
    if os.environ.get(ENV_STACKS, "").strip():  # the program runs in this process: sample it (import skipped ours)
        from nvtxsim.emit import stacks

        stacks.start_from_env()  # before the instrumentation, so its wrappers track the phases too
    if not args.no_instrument:
        from nvtxsim.isaaclab import auto
        from nvtxsim.isaaclab.patching import set_verbose

        set_verbose(args.verbose)
        auto.install(count_steps=not args.no_count_steps, quiet=True if args.quiet else None)
    from nvtxsim.emit import live

    live.claim()  # NVTXSIM_LIVE: the file is the program's now, before it can start workers
    return execute(argv, module=args.module)


def _check_script(target: str) -> None:
    """What ``python SCRIPT`` refuses before running anything, with Python's exit status: a file it cannot
    open (2), a folder or zip file without ``__main__`` (1)."""
    if os.path.isdir(target) or (os.path.isfile(target) and _is_zip(target)):
        if os.path.isdir(target) and not os.path.isfile(os.path.join(target, "__main__.py")):
            raise _refuse(f"{target}: is a directory without __main__.py", 1)
        return
    try:
        with open(target, "rb"):
            pass
    except FileNotFoundError:
        raise _refuse(f"{target}: no such file", 2) from None
    except OSError as exc:
        raise _refuse(f"{target}: cannot open ({exc.strerror or exc})", 2) from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run an unmodified Isaac Lab script with phases on its envs and RL runners",
        description="Run SCRIPT (or -m MODULE) like 'python SCRIPT ARGS...', instrumenting Isaac Lab envs "
        "(DirectRLEnv, ManagerBasedRLEnv, ManagerBasedEnv, DirectMARLEnv) and rsl_rl / skrl / rl_games runners "
        "as they are created. Exit code: the script's. Put nvtxsim's own options before SCRIPT.",
        epilog="examples:\n"
        "  python -m nvtxsim run scripts/reinforcement_learning/rsl_rl/train.py --task Isaac-Cartpole-v0 --headless\n"
        "  nvtxsim profile -o cartpole -- python -m nvtxsim run train.py --task Isaac-Cartpole-v0 --headless\n"
        "  nvtxsim profile --iterations 100:120 -- python -m nvtxsim run train.py ...   # env steps 100..119\n"
        "  NVTXSIM_LIVE=live.jsonl python -m nvtxsim run train.py ...   # live per-phase timing, one line per 100 env steps",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-m", dest="module", action="store_true", help="run a module (like python -m MODULE)")
    p.add_argument(
        "--no-count-steps",
        action="store_true",
        help="do not count env steps as iterations for capture windows (nvtxsim profile --iterations)",
    )
    p.add_argument("--no-instrument", action="store_true", help="run without instrumentation (for comparisons)")
    p.add_argument("-q", "--quiet", action="store_true", help="no 'nvtxsim: instrumented ...' lines on stderr")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also name the phase-map entries this Isaac Lab lacks (nvtxsim isaaclab check lists them all)",
    )
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]", help="the program and its arguments")
    p.set_defaults(func=run)
