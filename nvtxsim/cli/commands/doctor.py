"""``nvtxsim doctor``: can this machine profile, and what will a capture hold?

The checks live in :mod:`nvtxsim.capture.doctor`; this command prints them. Exit 0 when it can
profile, 1 when not.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from nvtxsim.capture.doctor import Diagnosis, diagnose
from nvtxsim.cli.output import layout, write_stream

# --------------------------------------------------------------------------- output


def _wrapped(first: str, text: str, indent: int, columns: int | None) -> list[str]:
    """``first + text`` on lines of ``columns`` (None: one line), the next lines indented under ``text``."""
    if columns is None:
        return [first + text]
    import textwrap

    return textwrap.wrap(
        first + text,
        max(columns, indent + 20),
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
        break_long_words=False,  # a path stays whole: it is copied, not read
    ) or [first.rstrip()]


def render_text(d: Diagnosis, columns: int | None = None) -> str:
    """The checks, then what a capture will and will not hold; ``columns``: the terminal's width (None: no wrap)."""
    width = max(len(c.name) for c in d.checks) if d.checks else 5
    lines = ["nvtxsim doctor"]
    pad = 2 + 4 + 2 + width + 2
    for c in d.checks:
        lines += _wrapped(f"  {c.status:<4}  {c.name:<{width}}  ", c.detail, pad, columns)
        if c.fix:
            lines += _wrapped(" " * pad + "fix: ", c.fix, pad + 5, columns)
    lines.append("")
    lines.append("will capture:")
    lines += [ln for x in d.will_capture for ln in _wrapped("  - ", x, 4, columns)] or ["  - nothing"]
    lines.append("will not capture:")
    lines += [ln for x in d.will_not_capture for ln in _wrapped("  - ", x, 4, columns)] or ["  - nothing notable"]
    lines.append("")
    lines.append("can profile: yes" if d.can_profile else "can profile: no (fix the 'fail' lines above)")
    return "\n".join(lines) + "\n"


def render_json(d: Diagnosis) -> str:
    return (
        json.dumps(
            {
                "can_profile": d.can_profile,
                "checks": [asdict(c) for c in d.checks],
                "will_capture": d.will_capture,
                "will_not_capture": d.will_not_capture,
                "facts": d.facts,
            },
            indent=2,
        )
        + "\n"
    )


def run(args: argparse.Namespace) -> int:
    d = diagnose(quick=args.quick)
    columns = layout().width  # a terminal's width (None: a pipe or a file, whole lines)
    write_stream(sys.stdout, render_json(d) if args.json else render_text(d, columns), "standard output")
    return 0 if d.can_profile else 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        help="check nsys, nvtx, GPU and permissions; say what a capture will hold",
        description="Check that this machine can profile with nvtxsim and say what a capture will and will not hold. "
        "Exit 0 when it can profile, 1 when not.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--quick", action="store_true", help="skip the test capture and the torch check (takes about a second)"
    )
    p.set_defaults(func=run)
