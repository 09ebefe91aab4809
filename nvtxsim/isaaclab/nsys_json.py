"""The phase map as an nsys ``--python-functions-trace`` file.

Format (Nsight Systems "Python functions trace"; the layout of Isaac Lab's
``scripts/benchmarks/nsys_trace.json``): a JSON list of blocks, each with a ``module``,
a list of ``functions`` (qualified names in that module), and an optional ``domain``
and ``color``. One block per (module, phase) here, coloured like the phase, with the
phase in ``_comment`` (nsys ignores it). nsys names each range after the function, so
the phase survives only as colour and comment: ``nvtxsim.isaaclab.instrument`` gives
phase-named, nested ranges instead.

Limits of nsys's injection (why ``instrument`` exists): only module-level qualified
names, so task overrides need ``--task MODULE:CLASS``; ``__main__`` is unsupported; no
re-entry guard (3.0's ``_compute_observations`` and the task's ``_get_observations``
both appear); abstract base hooks (``DirectRLEnv._get_rewards``) never fire and are
left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from nvtxsim import phases as P
from nvtxsim.errors import NvtxsimError
from nvtxsim.isaaclab import phasemap as M
from nvtxsim.isaaclab.resolve import find_in_source, source_file

#: Hooks the env base classes declare abstract: only task classes define them.
ABSTRACT_TASK_HOOKS = frozenset(
    {"_pre_physics_step", "_apply_action", "_get_dones", "_get_rewards", "_get_observations", "_get_states"}
)
DEFAULT_DOMAIN = "nvtxsim-isaaclab"


def _color(phase: str) -> str:
    return f"0x{P.style_for(phase).color:06X}"


def task_targets(spec: str, version: int | None) -> list[M.Target]:
    """``MODULE:CLASS`` -> entries for the task hooks that CLASS defines itself (read from source, not imported)."""
    module, sep, cls = spec.partition(":")
    if not sep or not module or not cls:
        raise NvtxsimError(
            f"--task {spec!r}: expected MODULE:CLASS, e.g. isaaclab_tasks.direct.cartpole.cartpole_env:CartpoleEnv"
        )
    path = source_file(module)
    if path is None:
        raise NvtxsimError(f"--task {spec}: module {module} not found on sys.path")
    out = []
    seen = set()
    for t in M.ENV_TARGETS:
        if not t.applies_to(version) or t.attr in seen:
            continue
        kind = find_in_source(path, f"{cls}.{t.attr}")
        if kind in ("method", "classmethod", "staticmethod"):
            seen.add(t.attr)
            out.append(M.Target(module, f"{cls}.{t.attr}", t.phase, scope="task"))
    if not out and not _class_in_source(path, cls):
        raise NvtxsimError(f"--task {spec}: no class {cls} in {path}")
    return out


def _class_in_source(path: str, cls: str) -> bool:
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.ClassDef) and n.name == cls for n in tree.body)


def absent_here(t: M.Target) -> bool:
    """True when the installed source of ``t.module`` exists but does not define ``t.qualname`` (read, not imported)."""
    path = source_file(t.module)
    return path is not None and find_in_source(path, t.qualname) is None


def entries(
    version: int | None, *, runners: bool = True, tasks: Iterable[str] = (), installed_only: bool = True
) -> list[M.Target]:
    """The map entries an nsys trace file can express.

    With ``installed_only``, entries whose module is installed here but lacks the name (skrl 1.x's
    ``_update`` next to skrl 2's ``update``) are left out; entries of packages not installed here stay.
    """
    out: list[M.Target] = []
    for t in M.ENV_TARGETS + M.CLASS_TARGETS + (M.RUNNER_TARGETS if runners else ()):
        if not t.applies_to(version) or t.kind in ("policy_factory", "loop"):  # loop: hooks, no range of their own
            continue
        if t.scope == "task" and t.attr in ABSTRACT_TASK_HOOKS:
            continue
        if installed_only and absent_here(t):
            continue
        out.append(t)
    for spec in tasks:
        out.extend(task_targets(spec, version))
    return out


def build(
    version: int | None,
    *,
    domain: str = DEFAULT_DOMAIN,
    runners: bool = True,
    tasks: Iterable[str] = (),
) -> list[dict]:
    """The trace file's JSON value: blocks grouped by (module, phase), in map order."""
    blocks: dict[tuple[str, str], dict] = {}
    for t in entries(version, runners=runners, tasks=tasks):
        phase = t.phase
        key = (t.module, phase)
        block = blocks.get(key)
        if block is None:
            block = blocks[key] = {
                "_comment": f"nvtxsim phase '{phase}'" + (" (events.<mode> in nvtxsim)" if t.kind == "events" else ""),
                "domain": domain,
                "color": _color(phase),
                "module": t.module,
                "functions": [],
            }
        if t.qualname not in block["functions"]:
            block["functions"].append(t.qualname)
    return list(blocks.values())


def dumps(value: list[dict]) -> str:
    return json.dumps(value, indent=2) + "\n"


def read_functions(value: list[dict]) -> list[str]:
    """Dotted ``module.qualname`` of every function in a trace file (what nsys will trace)."""
    names = []
    for block in value:
        for fn in block.get("functions", []):
            if isinstance(fn, dict):
                names.append(f"{fn.get('module', block['module'])}.{fn['function']}")
            else:
                names.append(f"{block['module']}.{fn}")
    return names
