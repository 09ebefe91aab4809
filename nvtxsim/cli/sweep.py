"""``nvtxsim profile --sweep NAME=V1,V2,... -o STEM -- COMMAND ... {NAME} ...``: one capture per value, then the scaling table.

Why: a scaling study is the same command run at several values of one parameter; writing the loop
by hand (and naming the exports consistently) is what this saves. ``{NAME}`` in the command is
replaced by each value; the exports are ``STEM_<value>.sqlite``; GPU memory is recorded
(``--cuda-memory-usage=true``) so the table has memory classes.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from nvtxsim.analysis.scaling import parse_value
from nvtxsim.capture import nsys as capture
from nvtxsim.cli.output import check_writable, deliver_document
from nvtxsim.errors import NvtxsimError, comma_list
from nvtxsim.reporting.renderers import formats_for, renderer


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """``num_envs=1024,4096,16384`` → ("num_envs", ["1024", "4096", "16384"]): numbers, no repeats."""
    name, eq, values = text.partition("=")
    name = name.strip()
    if not eq or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise NvtxsimError(f"--sweep {text!r}: expected NAME=V1,V2,... (e.g. num_envs=1024,4096,16384)")
    if not values.strip():
        raise NvtxsimError(f"--sweep {text!r}: no values after '='")
    items = comma_list(values, f"--sweep {name}")
    if len(items) < 2:
        raise NvtxsimError(
            f"--sweep {name}: one value ({values.strip()}): a sweep needs two or more (classes need three)"
        )
    seen: set[float] = set()
    for v in items:
        x = parse_value(v, f"--sweep {name}:")
        if x in seen:
            raise NvtxsimError(f"--sweep {name}: value {v} given twice")
        seen.add(x)
    return name, items


def sweep_requests(base: capture.ProfileRequest, name: str, values: list[str]) -> list[capture.ProfileRequest]:
    """One request per value: ``{name}`` replaced in the command, ``STEM_<value>`` as output, memory on."""
    mark = "{" + name + "}"
    if not any(mark in arg for arg in base.command):
        raise NvtxsimError(
            f"--sweep {name}: the command never mentions {mark}, so every run would be the same (e.g. -- python train.py --num_envs {mark})"
        )
    return [
        dataclasses.replace(
            base,
            command=[arg.replace(mark, v) for arg in base.command],
            output=base.output.with_name(f"{base.output.name}_{v}"),
            memory=True,
        )
        for v in values
    ]


def run_sweep(
    args: argparse.Namespace, base: capture.ProfileRequest, say: Callable[[str], None], out: Path | None
) -> int:
    """Capture every value in turn (stopping at a failed program, whose exit code is returned), then
    print the scaling table (to ``out`` when given: profile's report file). Fewer than three values:
    the table, then the refusal as ``nvtxsim scaling`` gives it (one line, exit 2)."""
    from nvtxsim.cli.arguments import domain_from_args

    name, values = parse_sweep(args.sweep)
    if not renderer(args.format).renders("scaling"):
        raise NvtxsimError(
            f"--sweep prints the scaling table: --format {args.format} is not one of {', '.join(formats_for('scaling'))}"
        )
    reqs = sweep_requests(base, name, values)
    for r in reqs:
        capture.check_outputs(r.output, force=r.force)
    if out is not None:
        check_writable(out, force=base.force)
    nsys = capture.find_nsys()
    runs = []
    for value, req in zip(values, reqs):
        say(f"sweep {name}={value}: $ " + shlex.join(capture.build_profile_command(nsys, req)))
        result = capture.run_profile(nsys, req)
        if result.sqlite is None or result.returncode != 0:
            say(result.problem or f"{name}={value}: the program exited with status {result.returncode}")
            return result.returncode or 1
        say(f"wrote {result.sqlite}")
        runs.append(f"{result.sqlite}={value}")
    if args.no_report:
        return 0
    from nvtxsim.cli.progress import load_with_progress
    from nvtxsim.reporting.scaling import scaling_document, sweep

    domain, given = domain_from_args(args)
    sc = sweep(runs, name, domain=domain, domain_given=given, load=load_with_progress)
    sys.stdout.flush()
    deliver_document(scaling_document(sc), args.format, out, force=True)
    if sc.refused:
        print(f"nvtxsim: error: {sc.refused}", file=sys.stderr)
        return 2
    return 0
