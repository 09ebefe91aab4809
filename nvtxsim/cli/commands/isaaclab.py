"""``nvtxsim isaaclab check|nsys-json``: the Isaac Lab phase map against the installed Isaac Lab, and as an nsys file.

``check`` resolves every entry of the map (env hooks, sim, scene, managers, sensors,
renderers, RL libraries) against what is installed: by import, or from the source
where importing needs Kit (``carb``, ``omni``, ``usdrt``). Exit 0 when every required
entry resolves, 1 when not. ``nsys-json`` writes the same map as a
``--python-functions-trace`` file for nsys's own Python injection.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from nvtxsim.errors import NvtxsimError

_VERSIONS = ("auto", "2", "3", "all")


def _version(text: str, *, need_install: bool) -> int | None:
    """``auto`` -> the installed Isaac Lab's major version; ``all`` -> None (every entry)."""
    if text == "all":
        return None
    if text in ("2", "3"):
        return int(text)
    from nvtxsim.isaaclab.resolve import detect_version

    version = detect_version()
    if version is None and need_install:
        raise NvtxsimError(
            "Isaac Lab not found in this Python (import isaaclab failed and no 'isaaclab' distribution is installed); "
            "run inside Isaac Lab's Python, or pass --version 2|3"
        )
    return version


def run_check(args: argparse.Namespace) -> int:
    from nvtxsim.isaaclab.check import check
    from nvtxsim.isaaclab.phasemap import describe

    with contextlib.redirect_stdout(sys.stderr):  # imported modules may print (warp does): keep stdout clean
        version = _version(args.version, need_install=True)
        result = check(version)
    failures = result.failures(strict=args.strict)
    if args.json:
        rows = [
            {
                "entry": r.target.dotted,
                "range": None if r.target.kind == "loop" else r.target.phase,
                "records": describe(r.target),
                "status": r.status,
                "detail": r.detail,
                "optional": r.target.optional,
            }
            for r in result.results
        ]
        json.dump({"version": version, "entries": rows, "ok": not failures}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        if args.verbose or failures:
            width = max(len(r.target.dotted) for r in result.results) if result.results else 0
            for r in result.results:
                status = r.status + (" (optional)" if r.target.optional and r.status in ("missing", "property") else "")
                print(
                    f"{status:<24} {r.target.dotted:<{width}}  -> {describe(r.target)}"
                    + (f"  [{r.detail}]" if r.detail else "")
                )
        print(result.summary())
        for r in failures:
            print(f"unresolved: {r.target.dotted}: {r.detail}")
    return 1 if failures else 0


def run_nsys_json(args: argparse.Namespace) -> int:
    from nvtxsim.cli.output import check_writable, write_atomic
    from nvtxsim.isaaclab import nsys_json

    if args.output != "-":
        check_writable(args.output, force=args.force)
    version = _version(args.version, need_install=False)
    value = nsys_json.build(version, domain=args.domain, runners=not args.no_runners, tasks=args.task or ())
    if args.check:
        from nvtxsim.isaaclab.check import check

        written = nsys_json.entries(version, runners=not args.no_runners, tasks=args.task or ())
        failures = check(version, written).failures()
        if failures:
            raise NvtxsimError(
                f"{len(failures)} entries do not resolve against the installed Isaac Lab: "
                + ", ".join(f.target.dotted for f in failures[:8])
                + (" ..." if len(failures) > 8 else "")
            )
    text = nsys_json.dumps(value)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    path = write_atomic(args.output, text, force=args.force)
    count = sum(len(b["functions"]) for b in value)
    print(
        f"wrote {path}: {count} functions in {len(value)} blocks"
        + (f" (Isaac Lab {version})" if version else " (all versions)")
        + f"\nuse: nsys profile -t nvtx,cuda --python-functions-trace={path} python train.py ...",
        file=sys.stderr,
    )
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "isaaclab",
        help="Isaac Lab phase map: check it against the installed Isaac Lab, or write it as an nsys trace file",
        description="The Isaac Lab phase map used by nvtxsim.isaaclab.instrument and 'nvtxsim run'.",
    )
    isub = p.add_subparsers(dest="isaaclab_command", metavar="SUBCOMMAND")

    def show_help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=show_help)

    c = isub.add_parser(
        "check",
        help="verify that every entry of the map resolves against the installed Isaac Lab",
        description="Resolve every entry of the phase map against the installed Isaac Lab and RL libraries "
        "(by import; from the source where the import needs Kit). Exit 0 when every required entry resolves.",
    )
    c.add_argument(
        "--version",
        choices=_VERSIONS,
        default="auto",
        help="Isaac Lab major version whose entries to check (default: the installed one)",
    )
    c.add_argument(
        "--strict",
        action="store_true",
        help="also fail on optional entries (backends, RL libraries) that are installed but do not resolve",
    )
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument("-v", "--verbose", action="store_true", help="print the table even when everything resolves")
    c.set_defaults(func=run_check)

    j = isub.add_parser(
        "nsys-json",
        help="write the map as an nsys --python-functions-trace JSON file",
        description="Write the phase map as a JSON file for 'nsys profile --python-functions-trace=FILE' "
        "(nsys 2023.x and newer). Ranges are named after the functions, coloured by phase.",
    )
    j.add_argument("-o", "--output", required=True, help="output file ('-' for stdout)")
    j.add_argument("--force", action="store_true", help="overwrite OUTPUT if it exists")
    j.add_argument(
        "--version",
        choices=_VERSIONS,
        default="auto",
        help="Isaac Lab major version (default: the installed one, else all entries)",
    )
    j.add_argument("--domain", default="nvtxsim-isaaclab", help="NVTX domain of the ranges (default: %(default)s)")
    j.add_argument(
        "--task",
        action="append",
        metavar="MODULE:CLASS",
        help="add a task class's own hooks (_get_rewards, ...), read from its source; repeatable",
    )
    j.add_argument("--no-runners", action="store_true", help="leave out rsl_rl / skrl / rl_games entries")
    j.add_argument("--check", action="store_true", help="fail unless every written entry resolves here")
    j.set_defaults(func=run_nsys_json)
