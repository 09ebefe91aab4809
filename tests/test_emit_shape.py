"""The emit stage stays readable: no module over 700 lines, no function over 60 (docs/architecture.md).

Each module of ``nvtxsim/emit`` holds one concern (the NVTX backend, the ranges and their hot path, the
wrapping of callables, live timing's session, writer, sinks, GPU timing ...); a module or a function
that outgrows these bounds is holding two and wants splitting into named steps.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EMIT = Path(__file__).resolve().parent.parent / "nvtxsim" / "emit"
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 60
MODULES = sorted(EMIT.rglob("*.py"))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_the_emit_stage_is_found() -> None:
    names = {p.relative_to(EMIT).as_posix() for p in MODULES}
    assert {"ranges.py", "backend.py", "wrapping.py", "live/session.py"} <= names, sorted(names)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(EMIT).as_posix())
def test_module_and_functions_are_short(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines (at most {MAX_MODULE_LINES})"
    long = [
        f"{f.name} (line {f.lineno}): {f.end_lineno - f.lineno + 1} lines"
        for f in _functions(ast.parse(text))
        if f.end_lineno is not None and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"
