"""The package's stages import one way, and no module imports another in a circle.

Every import counts, those inside functions too: a lazy import still ties two modules
together. The rule (docs/architecture.md):

    export → analysis → reporting → cli        capture → cli        emit → isaaclab

Root modules: ``errors``, ``phases``, ``envflags``, ``files``, ``schema`` (the facts of nsys's export format,
which capture's doctor reads too), ``live_record`` (the live-timing line, written by emit and read by analysis)
and ``_version`` are vocabulary every stage may use;
``__init__`` (the public API facade) and ``__main__`` may import anything; nothing inside
the package imports the facade.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "nvtxsim"
SHARED = {"errors", "phases", "_version", "files", "envflags", "schema", "live_record"}
#: stage → the stages it may import (besides itself and the shared root modules).
ALLOWED: dict[str, set[str]] = {
    "emit": set(),
    "isaaclab": {"emit"},
    "capture": set(),
    "export": {"capture"},  # an .nsys-rep is converted by the nsys that capture finds
    "analysis": {"export"},
    "reporting": {"analysis", "export"},
    "cli": {"reporting", "analysis", "export", "capture", "emit", "isaaclab"},
}
MAX_ROOT_MODULES = 9


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("nvtxsim",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path, source: str | None = None) -> set[str]:
    """Modules of the package that ``name`` imports anywhere in its body."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found.update(t for t in targets if t.split(".")[0] == "nvtxsim")
    return {_owner(t) for t in found} - {name}


def _owner(dotted: str) -> str:
    """The longest module of the package that ``dotted`` names (a module or a name inside one)."""
    parts = dotted.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or "nvtxsim"


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_root_holds_few_modules() -> None:
    root = [p.name for p in PACKAGE.glob("*.py")]
    assert len(root) <= MAX_ROOT_MODULES, sorted(root)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_stage_rule(module: str) -> None:
    stage = _stage(module)
    if module in ("nvtxsim", "nvtxsim.__main__"):
        return
    bad = []
    for target in sorted(GRAPH[module]):
        other = _stage(target)
        if target == "nvtxsim":
            bad.append(f"{target} (the public facade)")
        elif other in SHARED or other == stage:
            continue
        elif stage in SHARED or other not in ALLOWED.get(stage, set()):
            bad.append(target)
    assert not bad, f"{module} ({stage or 'root'}) imports against the rule: {bad}"


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over the module graph; every one must be a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_walker_sees_lazy_and_relative_imports() -> None:
    """A lazy import inside a function, and a relative one, are edges like any other."""
    src = "def f():\n    from nvtxsim.reporting import views\n\nclass C:\n    def g(self):\n        from ..cli import output\n"
    path = PACKAGE / "analysis" / "gpu.py"
    assert _imports("nvtxsim.analysis.gpu", path, src) == {"nvtxsim.reporting.views", "nvtxsim.cli.output"}


# --------------------------------------------------------------------------- analysis does no I/O but reading

#: Calls that write, move or delete files (any receiver: ``path.write_text``, ``shutil.rmtree``, ``np.savez`` ...).
WRITE_CALLS = frozenset(
    {
        "write_text",
        "write_bytes",
        "touch",
        "mkdir",
        "makedirs",
        "unlink",
        "rmdir",
        "rmtree",
        "rename",
        "copyfile",
        "copy2",
        "copytree",
        "copyfileobj",
        "savez",
        "savez_compressed",
        "tofile",
        "to_csv",
        "to_parquet",
        "mkstemp",
        "mkdtemp",
        "TemporaryDirectory",
        "NamedTemporaryFile",
        "replace_via_temp",
        "symlink_to",
    }
)
OS_WRITES = frozenset({"replace", "remove", "rename", "unlink", "truncate", "ftruncate", "write", "link", "symlink"})
#: Standard modules that exist to write or talk SQL: the export stage reads the file, analysis reads columns.
IO_MODULES = frozenset({"sqlite3", "shutil", "tempfile"})
#: The export stage's one entry point: ``load()`` may write the export's own cache and private copies, which
#: is export's persistence, decided there; an analysis that takes a path (ranks, frames) loads through it.
ENTRY_POINT = "nvtxsim.export.reader"


def _writes(source: str) -> list[str]:
    """The calls in ``source`` that write files: WRITE_CALLS, ``os.replace`` and the like, an ``open`` for writing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
        if (
            name in WRITE_CALLS
            or (owner == "os" and name in OS_WRITES)
            or (owner in ("np", "numpy") and name == "save")
        ):
            found.append(f"{name} (line {node.lineno})")
        elif name in ("open", "fdopen"):
            for arg in node.args[1:2] + [k.value for k in node.keywords if k.arg in ("mode", "flags")]:
                text = ast.unparse(arg)
                if (isinstance(arg, ast.Constant) and set(str(arg.value)) & set("wax+")) or any(
                    flag in text for flag in ("O_WRONLY", "O_RDWR", "O_CREAT")
                ):
                    found.append(f"{name}({text}) (line {node.lineno})")
    return found


WRITERS = {name for name, path in MODULES.items() if _writes(path.read_text(encoding="utf-8"))}


def _reached(module: str) -> set[str]:
    """The package modules ``module`` imports, directly or through others (not past the export's entry point)."""
    seen, todo = set(), [module]
    while todo:
        for target in GRAPH.get(todo.pop(), ()):
            if target not in seen and target != ENTRY_POINT:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_writer_check_finds_the_modules_that_write() -> None:
    assert {"nvtxsim.files", "nvtxsim.export.cache", "nvtxsim.export.private_copy", "nvtxsim.cli.output"} <= WRITERS
    src = "import os\ndef f(p):\n    open(p, 'ab').close()\n    os.replace(p, p)\n    with open(p) as fh:\n        fh.read()\n"
    assert sorted(w.split(" ")[0] for w in _writes(src)) == ["open('ab')", "replace"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _stage(m) == "analysis"))
def test_analysis_writes_no_file_and_imports_no_module_that_does(module: str) -> None:
    """Analysis is a function of the loaded columns: persistence (the cache) is the export stage's."""
    assert not _writes(MODULES[module].read_text(encoding="utf-8")), f"{module} writes files"
    writers = sorted(_reached(module) & WRITERS)
    assert not writers, f"{module} imports modules that write files: {writers}"
    stdlib = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            stdlib.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            stdlib.add(node.module.split(".")[0])
    assert not stdlib & IO_MODULES, f"{module} imports {sorted(stdlib & IO_MODULES)}: SQL and files are export's"
