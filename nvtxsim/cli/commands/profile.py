"""``nvtxsim profile -- COMMAND ...``: run a program under Nsight Systems with the right flags,
export SQLite and print the per-phase report. The program's exit code is returned unchanged."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from nvtxsim.capture import nsys as capture
from nvtxsim.cli.output import check_writable
from nvtxsim.errors import NvtxsimError, int_option
from nvtxsim.phases import ENV_ITERATIONS, parse_iterations, parse_trigger
from nvtxsim.reporting.escaping import printable
from nvtxsim.reporting.renderers import DEFAULT_FORMAT, file_suffix, formats_for


def _say(message: str) -> None:
    sys.stderr.write(f"nvtxsim: {printable(message)}\n")
    sys.stderr.flush()


def _request(args: argparse.Namespace) -> capture.ProfileRequest:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise NvtxsimError("no command to profile: nvtxsim profile [options] -- python train.py ...")
    import shutil

    if shutil.which(command[0]) is None:  # nsys says 'Program not found' among its lines and exits 1
        if os.sep in command[0] and os.path.isfile(command[0]):
            raise NvtxsimError(f"{command[0]}: not executable (nothing was run); e.g. -- python {command[0]}")
        raise NvtxsimError(f"{command[0]}: command not found (nothing was run)")
    trigger = args.trigger
    if trigger is not None:
        parse_trigger(trigger)  # a bad rule fails before anything runs
        if args.iterations is not None:
            raise NvtxsimError("--trigger and --iterations: one capture window per run, pick one")
    spec = args.iterations if args.iterations is not None else os.environ.get(ENV_ITERATIONS, "").strip() or None
    window = parse_iterations(spec) if spec and trigger is None else None
    output = capture.output_stem(args.output) if args.output else capture.default_output()
    return capture.ProfileRequest(
        command=command,
        output=output,
        trace=capture.parse_trace(args.trace) if args.trace else capture.DEFAULT_TRACE,
        window=window,
        window_api=args.window,
        force=args.force,
        nsys_args=tuple(args.nsys_arg or ()),
        memory=args.memory,
        trigger=trigger,
        trigger_iterations=args.trigger_iterations,
        stacks=args.stacks,
    )


def report_file(args: argparse.Namespace, stem: Path) -> Path | None:
    """Where the report goes: ``--report FILE``, else ``NAME.report.EXT`` beside the export for every
    format that names files (a file, never mixed into the program's own stdout); None: stdout."""
    if args.no_report or args.report == "-":
        return None
    if args.report:
        return Path(args.report)
    suffix = file_suffix(args.format)
    return stem.with_name(stem.name + ".report" + suffix) if suffix is not None else None


def _report(path: os.PathLike[str] | str, args: argparse.Namespace, out: Path | None) -> None:
    """Print or write the report; a failure here is reported but never replaces the program's exit code."""
    try:
        from nvtxsim.cli.commands.report import domain_from_args, run_report
        from nvtxsim.reporting.model import ReportRequest
    except ImportError as exc:
        _say(f"report not available ({exc}); run `nvtxsim report {path}` later")
        return
    domain, given = domain_from_args(args)
    try:
        run_report(
            path, fmt=args.format, out=out, force=True, request=ReportRequest(domain=domain, domain_given=given)
        )  # out was checked before the run
        if out is not None:
            _say(f"wrote the {args.format} report to {out}")
    except NvtxsimError as exc:
        _say(f"report failed: {exc}")
    except BrokenPipeError:
        pass
    except Exception as exc:  # the capture is done; never lose the exit code over the report
        _say(f"report failed: {type(exc).__name__}: {exc} (the export is at {path})")


def _nothing_captured(result: capture.CaptureResult) -> int:
    """The program failed before its first NVTX range: the capture holds nothing to report, so its files
    go (files this run wrote, the names checked free or --force given) and the retry needs no --force."""
    gone = []
    for p in (result.report, result.sqlite):
        if p is not None:
            try:
                p.unlink()
                gone.append(str(p))
            except OSError:
                pass
    _say(
        f"the program exited with status {result.returncode} before its first NVTX range: nothing to report"
        + (f" (removed {' and '.join(gone)})" if gone else "")
    )
    return result.returncode


def run(args: argparse.Namespace) -> int:
    req = _request(args)
    if args.sweep:
        from nvtxsim.cli.sweep import run_sweep

        return run_sweep(
            args, req, _say, report_file(args, req.output)
        )  # STEM.report.EXT, as a single capture's report
    nsys = capture.find_nsys()
    capture.check_outputs(req.output, force=req.force)
    out = report_file(args, req.output)
    if out is not None:
        check_writable(out, force=req.force)
    argv = capture.build_profile_command(nsys, req)
    window = f", {req.window.describe()}" if req.window else ""
    if req.trigger:
        window = f", {req.trigger_iterations} iterations once live timing's trigger {req.trigger} fires"
    _say(f"nsys {nsys.version_text} ({nsys.path}){window}")
    _say("$ " + shlex.join(argv))
    result = capture.run_profile(nsys, req)
    if result.report is None:
        # Nothing was captured at all: a failed program keeps its code, a clean exit becomes an error.
        if result.returncode != 0:
            _say(result.problem or "nsys wrote no report")
            return result.returncode
        raise NvtxsimError(result.problem or "nsys wrote no report")
    written = [str(p) for p in (result.report, result.sqlite) if p is not None]
    if result.returncode != 0 and result.sqlite is not None and not capture.holds_nvtx_ranges(result.sqlite):
        return _nothing_captured(result)
    _say("wrote " + " and ".join(written))
    if result.problem:
        _say(result.problem)
    if result.returncode != 0:
        _say(f"the program exited with status {result.returncode}")
    if result.sqlite is not None and not args.no_report:
        sys.stdout.flush()
        _report(result.sqlite, args, out)
    return result.returncode


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "profile",
        help="run a program under Nsight Systems, export SQLite, print the per-phase report",
        description=(
            "Run COMMAND under nsys with flags that work (sampling off, CUDA graphs per node, NVTX, "
            "optional capture window), export SQLite and print the per-phase report. "
            "The exit code is the program's."
        ),
        epilog=(
            "examples:\n"
            "  nvtxsim profile -o runs/train -- python train.py --steps 200\n"
            "  nvtxsim profile --iterations 100:120 -- python train.py   # needs nvtxsim.step() per iteration\n"
            "  nvtxsim profile --nsys-arg=--osrt-threshold=10000 -- ./sim\n"
            "  nvtxsim profile --sweep num_envs=1024,4096,16384 -o sweep -- python train.py --num_envs {num_envs}\n"
            "nsys is taken from $NSYS, else PATH, else /opt/nvidia/nsight-systems*/ and the Nsight Compute folders."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--iterations",
        metavar="A:B",
        help="record only iterations A..B-1, counted by nvtxsim.step() calls (default: $NVTXSIM_ITERATIONS, else all)",
    )
    p.add_argument(
        "--window",
        choices=("nvtx", "cuda"),
        default="nvtx",
        help="how the window starts/stops nsys: an NVTX capture range (default) or cudaProfilerStart/Stop",
    )
    p.add_argument(
        "--trigger",
        metavar="RULE",
        help="record only the --trigger-iterations iterations after a phase slows down: RULE is PHASE>FACTORx, e.g. "
        "'sim_step>1.5x': fires at the first iteration whose sim_step time exceeds FACTOR x the median of its previous "
        "iterations (10 needed first); needs nvtxsim.step() per iteration; see docs/live.md)",
    )
    p.add_argument(
        "--trigger-iterations",
        type=int_option("--trigger-iterations", low=1),
        default=10,
        metavar="K",
        help="iterations recorded once the trigger fires (default: 10)",
    )
    p.add_argument(
        "--trace",
        metavar="LIST",
        help=f"nsys --trace list (default: {','.join(capture.DEFAULT_TRACE)}; must include nvtx)",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="record GPU memory allocations and frees (nsys --cuda-memory-usage=true): the report gains GPU memory per phase",
    )
    p.add_argument(
        "--stacks",
        action="store_true",
        help="sample the program's Python stacks per phase (NVTXSIM_STACKS, 200 Hz) into NAME.stacks.jsonl: "
        "the report's --view stacks lists the hot functions of each phase (docs/cpu.md)",
    )
    p.add_argument(
        "--sweep",
        metavar="NAME=V1,V2,...",
        help="run COMMAND once per value with {NAME} replaced by it (exports NAME_<value>.sqlite, GPU memory recorded), "
        "then print the scaling table (nvtxsim scaling)",
    )
    p.add_argument(
        "-o", "--output", metavar="NAME", help="report name: writes NAME.nsys-rep and NAME.sqlite (default: nvtxsim-N)"
    )
    p.add_argument("--force", action="store_true", help="overwrite NAME.nsys-rep / NAME.sqlite if they exist")
    p.add_argument(
        "--nsys-arg",
        action="append",
        metavar="ARG",
        help="extra nsys profile argument, repeatable; write it with '=' (--nsys-arg=--sample=process-tree); "
        "it replaces nvtxsim's own setting of the same switch",
    )
    p.add_argument("--no-report", action="store_true", help="capture and export only")
    p.add_argument(
        "--format",
        choices=formats_for("report"),
        default=DEFAULT_FORMAT,
        help="report format (default: what --report FILE's extension names, else table, printed; the others are written to a file: NAME.report.html, .json, .perfetto.json, .csv, .md)",
    )
    p.add_argument("--report", metavar="FILE", help="write the report to FILE ('-': stdout) instead of the default")
    p.add_argument(
        "--domain",
        metavar="NAME",
        help="NVTX domain to report, or 'all' (default: nvtxsim; every domain when the export has no range in nvtxsim)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the program and its arguments")
    p.set_defaults(func=run)
