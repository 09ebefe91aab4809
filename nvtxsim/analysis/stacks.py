"""The hot Python functions per phase, from the stacks sidecar that ``nvtxsim profile --stacks`` (``NVTXSIM_STACKS``)
writes beside the export: ``NAME.stacks.jsonl``, one JSON line per sampled process (:mod:`nvtxsim.emit.stacks`).

Per phase: how many samples landed in it (its innermost open phase on the sampled thread), and per function
the *self* share (samples where it was running) and the *total* share (samples where it was on the stack:
it or what it called), with its file and first line; functions of equal shares are listed nearest the running
function first (its callers in call order, from the mean distance the sampler recorded). Processes are summed; a function is one (file, line,
name). A line that is not a stacks record, or a function index out of range, is counted and named in one
note; the rest is shown.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from nvtxsim.schema import STACKS_FORMAT as FORMAT
from nvtxsim.schema import STACKS_SUFFIX as SUFFIX

MAX_BYTES = 256 << 20  # a sidecar larger than this is not read (one note)
EXPORT_SUFFIXES = (".sqlite.gz", ".sqlite.xz", ".sqlite", ".nsys-rep")
DOMAIN = "nvtxsim"  # the domain of nvtxsim.phase: the sidecar's phase names are in it


@dataclass
class HotFunction:
    """One function's samples inside one phase."""

    phase: str
    function: str
    location: str  # file:first line of the function
    self_samples: int
    total_samples: int
    self_share: float  # of the phase's samples
    total_share: float


@dataclass
class Stacks:
    """Everything a sidecar holds, summed over its processes."""

    path: Path
    hz: int = 0
    mechanism: str = ""
    processes: int = 0
    samples: dict[str, int] = field(default_factory=dict)  # phase → samples
    self_: dict[str, dict[tuple[str, int, str], int]] = field(default_factory=dict)
    total: dict[str, dict[tuple[str, int, str], int]] = field(default_factory=dict)
    depth: dict[str, dict[tuple[str, int, str], int]] = field(default_factory=dict)  # sum of distances to the innermost
    problems: list[str] = field(default_factory=list)


def sidecar_for(export: str | os.PathLike[str]) -> Path:
    """``run.sqlite`` (``.sqlite.gz``, ``.sqlite.xz``, ``.nsys-rep``) → ``run.stacks.jsonl`` beside it."""
    p = Path(export)
    name = p.name
    for suffix in EXPORT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return p.with_name(name[: -len(suffix)] + SUFFIX)
    return p.with_name(name + SUFFIX)


def _function(fns: list, i: object) -> tuple[str, int, str]:
    try:
        k = int(str(i))
        f = fns[k] if 0 <= k < len(fns) else None
        if f is not None:
            return (str(f[0]), int(f[1]), str(f[2]))
    except (TypeError, ValueError, IndexError):
        pass
    return ("", 0, f"(unknown function #{str(i)[:20]})")


def _add(into: dict[tuple[str, int, str], int], per: object, fns: list, *, keep_zero: bool = False) -> int:
    unknown = 0
    if not isinstance(per, dict):
        return 0
    for i, n in per.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0 or (n == 0 and not keep_zero):
            continue
        key = _function(fns, i)
        unknown += key[0] == "" and key[2].startswith("(unknown")
        into[key] = into.get(key, 0) + n
    return unknown


def _merge(st: Stacks, rec: dict) -> int:
    """Add one process's record; the count of function indices it names but does not list."""
    got = rec.get("functions")
    fns: list = got if isinstance(got, list) else []
    st.processes += 1
    st.hz = st.hz or int(rec.get("hz") or 0)
    st.mechanism = st.mechanism or str(rec.get("mechanism") or "")[:20]
    unknown = 0
    listed = rec.get("phases")
    phases: dict = listed if isinstance(listed, dict) else {}
    for name, v in phases.items():
        if not isinstance(v, dict) or not isinstance(v.get("samples"), int):
            continue
        phase = f"{DOMAIN}:{name}"
        st.samples[phase] = st.samples.get(phase, 0) + max(int(v["samples"]), 0)
        unknown += _add(st.self_.setdefault(phase, {}), v.get("self"), fns)
        _add(st.total.setdefault(phase, {}), v.get("total"), fns)
        _add(st.depth.setdefault(phase, {}), v.get("depth"), fns, keep_zero=True)
    return unknown


def read_stacks(path: str | os.PathLike[str]) -> Stacks | None:
    """The sidecar at ``path`` summed over its processes; None when there is no such file."""
    p = Path(path)
    st = Stacks(p)
    try:
        size = p.stat().st_size
    except OSError:
        return None
    if size > MAX_BYTES:
        st.problems.append(f"{p.name}: {size >> 20} MiB, over {MAX_BYTES >> 20} MiB: not read")
        return st
    bad = unknown = 0
    try:
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        st.problems.append(f"{p.name} unreadable ({exc.strerror or exc})")
        return st
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(rec, dict) or rec.get("format") != FORMAT:
            bad += 1
            continue
        unknown += _merge(st, rec)
    if bad:
        st.problems.append(f"{p.name}: {bad} of {len(lines)} lines are not stack records (skipped)")
    if unknown:
        st.problems.append(f"{p.name}: {unknown} samples name a function the file does not list: (unknown function)")
    return st


def _order(k: tuple[str, int, str], selfs: dict, totals: dict, depth: dict) -> tuple:
    """Most self samples first, then most total, then the nearest caller of the running function."""
    return (-selfs.get(k, 0), -totals.get(k, 0), depth.get(k, 0) / max(totals.get(k, 0), 1), k)


def hot_functions(st: Stacks, top: int = 10) -> list[HotFunction]:
    """Per phase (most samples first), its ``top`` functions by self samples, then total samples."""
    out: list[HotFunction] = []
    for phase, n in sorted(st.samples.items(), key=lambda kv: (-kv[1], kv[0])):
        if n <= 0:
            continue
        selfs, totals, depth = st.self_.get(phase, {}), st.total.get(phase, {}), st.depth.get(phase, {})
        keys = sorted(set(selfs) | set(totals), key=lambda k: _order(k, selfs, totals, depth))
        for k in keys[:top]:
            file, line, name = k
            out.append(
                HotFunction(
                    phase,
                    name,
                    f"{file}:{line}" if file else "?",
                    selfs.get(k, 0),
                    totals.get(k, 0),
                    round(selfs.get(k, 0) / n, 4),
                    round(min(totals.get(k, 0) / n, 1.0), 4),
                )
            )
    return out
