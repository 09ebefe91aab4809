"""Find the objects a phase-map entry names, in the installed Isaac Lab, lazily.

Isaac Lab 2.3 cannot import ``isaaclab.managers`` before ``isaaclab.envs`` (circular
import), so :func:`import_module` always imports ``isaaclab.envs`` first for core
modules. Nothing here is imported eagerly: targets are resolved at patch time.
:func:`find_in_source` answers "is it defined?" without importing, for modules that
need Kit (``carb``, ``omni``, ``usdrt``) where Kit is absent.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any

from nvtxsim.isaaclab.phasemap import Target

_SKIP_OWNER_MODULES = ("builtins", "abc", "typing", "gymnasium", "gym")


def import_module(name: str) -> Any:
    """Import ``name``; core ``isaaclab.*`` modules only after ``isaaclab.envs`` (2.3 circular import)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    if name.startswith("isaaclab.") and not name.startswith("isaaclab.envs") and "isaaclab.envs" not in sys.modules:
        importlib.import_module("isaaclab.envs")
    return importlib.import_module(name)


def lookup(obj: Any, qualname: str) -> Any:
    """Follow ``A.b`` through ``__dict__`` of classes (never triggers properties)."""
    for part in qualname.split("."):
        if isinstance(obj, type):
            for klass in obj.__mro__:
                if part in klass.__dict__:
                    obj = klass.__dict__[part]
                    break
            else:
                raise AttributeError(part)
        else:
            obj = getattr(obj, part)
    return obj


def owner_of(target: Target, module: Any) -> Any:
    """The class (or, for functions, the module) a target patches."""
    return lookup(module, target.owner) if target.owner else module


def defining_class(cls: type, name: str) -> type | None:
    """The class on ``cls.__mro__`` whose ``__dict__`` holds ``name`` (None for object, gym, ABC ...)."""
    for klass in getattr(cls, "__mro__", ()):
        if name in klass.__dict__:
            mod = getattr(klass, "__module__", "") or ""
            if klass is object or mod.split(".", 1)[0] in _SKIP_OWNER_MODULES:
                return None
            return klass
    return None


def package_in_use(package: str) -> bool:
    """An optional backend/library is used only if the program already imported its package."""
    return package in sys.modules


# --------------------------------------------------------------------------- version


def _major(version: str) -> int | None:
    head = version.strip().split(".", 1)[0]
    if not head.isdigit():
        return None
    major = int(head)
    # The core extension's own version (isaaclab.__version__, source installs) is 0.x through Isaac Lab 2.x.
    return 2 if major == 0 else major


def detect_version() -> int | None:
    """Major version of the installed Isaac Lab (2 or 3), or None when it cannot be told."""
    mod = sys.modules.get("isaaclab")
    if mod is None:
        try:
            mod = importlib.import_module("isaaclab")
        except Exception:
            mod = None
    version = getattr(mod, "__version__", None) if mod is not None else None
    if isinstance(version, str) and _major(version):
        return _major(version)
    try:
        from importlib.metadata import version as dist_version

        return _major(dist_version("isaaclab"))
    except Exception:
        pass
    envs = sys.modules.get("isaaclab.envs.direct_rl_env")
    if envs is not None:  # feature test as the last resort
        return 3 if hasattr(getattr(envs, "DirectRLEnv", None), "_reset_envs_from_buffer") else 2
    return None


# --------------------------------------------------------------------------- static check


def source_file(module: str) -> str | None:
    """Path of ``module``'s source on ``sys.path`` without importing it or its parents.

    Also looks inside the Isaac Lab 2.3 pip wheel layout (``isaaclab/source/<pkg>/<pkg>/...``).
    """
    parts = module.split(".")
    rel = os.path.join(*parts)
    candidates = [rel + ".py", os.path.join(rel, "__init__.py")]
    top = parts[0]
    wheel_rel = os.path.join("isaaclab", "source", top, rel)
    candidates += [wheel_rel + ".py", os.path.join(wheel_rel, "__init__.py")]
    for entry in sys.path:
        base = entry or os.getcwd()
        for cand in candidates:
            path = os.path.join(base, cand)
            if os.path.isfile(path):
                return path
    return None


def find_in_source(path: str, qualname: str) -> str | None:
    """What ``qualname`` is in the source file: "method", "classmethod", "staticmethod", "property",
    "function", "assigned" (a module-level name bound by import or assignment), or None."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    owner, _, attr = qualname.rpartition(".")
    if not owner:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
                return "function"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if any((a.asname or a.name.split(".")[0]) == attr for a in node.names):
                    return "assigned"
        return None
    body = tree.body
    for part in owner.split("."):
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if cls is None:
            return None
        body = cls.body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attr:
            decos = {ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in node.decorator_list}
            for kind in ("property", "classmethod", "staticmethod"):
                if kind in decos:
                    return kind
            if any(d.endswith("setter") or d.endswith("getter") for d in decos):
                return "property"
            return "method"
    return None


# --------------------------------------------------------------------------- resolution


@dataclass
class Resolution:
    """Where a target stands in this installation."""

    target: Target
    status: str  # "ok" | "source" | "missing" | "property" | "not-installed"
    detail: str = ""
    obj: Any = None  # the owner (class or module) when imported

    @property
    def resolved(self) -> bool:
        return self.status in ("ok", "source")


def _missing_kit_module(exc: BaseException) -> str | None:
    """The name of a missing module outside the Isaac Lab packages (Kit, Newton ...), if that is what failed."""
    name = getattr(exc, "name", None)
    if isinstance(exc, ModuleNotFoundError) and name and not name.split(".")[0].startswith("isaaclab"):
        return name
    return None


def resolve(
    target: Target, *, import_modules: bool = True, failed_imports: dict[str, BaseException] | None = None
) -> Resolution:
    """Resolve a map entry by import; where the import needs a missing non-Isaac-Lab module, from the source.

    ``failed_imports`` (module -> exception) avoids retrying an import that already failed.
    """
    module = None
    import_error: BaseException | None = None
    if failed_imports is not None and target.module in failed_imports:
        import_error = failed_imports[target.module]
    elif import_modules or target.module in sys.modules:
        try:
            module = import_module(target.module)
        except Exception as exc:  # noqa: BLE001 - any import failure is reported, never raised
            import_error = exc
            if failed_imports is not None:
                failed_imports[target.module] = exc
    if module is not None:
        try:
            owner = owner_of(target, module)
            raw = lookup(owner, target.attr) if target.owner else module.__dict__[target.attr]
        except (AttributeError, KeyError):
            return Resolution(target, "missing", f"{target.qualname} not in {target.module}")
        if isinstance(raw, property):
            return Resolution(target, "property", "a property, never wrapped", owner)
        return Resolution(target, "ok", "", owner)
    path = source_file(target.module)
    if path is None:
        if target.package not in sys.modules and _find_top(target.package) is None:
            return Resolution(target, "not-installed", f"package {target.package} not installed")
        return Resolution(target, "missing", f"module {target.module} not found")
    kind = find_in_source(path, target.qualname)
    if kind is None:
        return Resolution(target, "missing", f"{target.qualname} not defined in {path}")
    if kind == "property":
        return Resolution(target, "property", "a property, never wrapped")
    needs = _missing_kit_module(import_error) if import_error is not None else None
    if import_error is not None and needs is None:
        return Resolution(target, "missing", f"import failed: {type(import_error).__name__}: {import_error}")
    detail = f"defined in source; importing needs {needs}" if needs else "defined in source (not imported)"
    return Resolution(target, "source", detail)


def _find_top(package: str) -> str | None:
    return source_file(package)
