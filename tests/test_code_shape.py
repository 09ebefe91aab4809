"""Modules stay under 700 lines and functions under 60: past that, split them into named steps.

An argparse builder (``add_parser``, ``add_*_arguments``) is a list of options, not steps: it may be
longer. ``TOO_LONG`` names what is still over the limit; each entry is a split to make, and a new one
fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "nvtxsim"
MODULE_LINES = 700
FUNCTION_LINES = 60
#: Still over the limit (path relative to the package, or path:function).
TOO_LONG = {
    "analysis/findings.py",
    "analysis/findings.py:bound_findings",
    "capture/doctor.py:check_probe",
    "emit/live.py",
    "emit/ranges.py",
}


def _is_argparse_builder(name: str) -> bool:
    return name == "add_parser" or (name.startswith("add_") and name.endswith("_arguments"))


def _too_long() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > MODULE_LINES:
            found.append(where)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_argparse_builder(node.name):
                if node.end_lineno is not None and node.end_lineno - node.lineno + 1 > FUNCTION_LINES:
                    found.append(f"{where}:{node.name}")
    return found


def test_modules_and_functions_stay_short() -> None:
    new = sorted(set(_too_long()) - TOO_LONG)
    assert not new, f"over {MODULE_LINES} lines (module) or {FUNCTION_LINES} lines (function): {new}"
