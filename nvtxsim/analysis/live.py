"""Analysis stage: the JSON lines that live timing (``NVTXSIM_LIVE``) writes, read back and summed.

Each line is one window of iterations (see :mod:`nvtxsim.emit.live`). A line that does not parse
(a run killed mid-write) is skipped and counted, never fatal: the file is a log of a run that may
still be going on.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from nvtxsim.errors import NvtxsimError


@dataclass
class LiveLog:
    """The windows of a live-timing file, in file order."""

    path: str
    windows: list[dict] = field(default_factory=list)
    skipped: int = 0  # lines that were not a window (truncated, foreign)

    @property
    def pids(self) -> list[int]:
        return sorted({w.get("pid") for w in self.windows if isinstance(w.get("pid"), int)})


def _is_window(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("phases"), dict)


def load(path: str | "os.PathLike[str]") -> LiveLog:
    """Read a live-timing JSONL file (``-``: not supported; a file that cannot be read is an error)."""
    log = LiveLog(os.fspath(path))
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise NvtxsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                log.skipped += 1
                continue
            if _is_window(rec):
                log.windows.append(rec)
            else:
                log.skipped += 1
    return log


def _num(v: Any) -> float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def totals(windows: Iterable[dict]) -> dict[str, dict[str, Any]]:
    """Per phase key (``domain:name``) over all windows: count, cpu_ns, gpu_ns (None when never measured),
    the largest window p90, and the number of measured iterations it ran in."""
    out: dict[str, dict[str, Any]] = {}
    measured = 0
    for w in windows:
        measured += int(_num(w.get("measured")) or 0)
        for key, p in w["phases"].items():
            if not isinstance(p, dict):
                continue
            t = out.setdefault(str(key), {"count": 0, "cpu_ns": 0, "gpu_ns": None, "cpu_p90_max_ns": None, "windows": 0})
            t["count"] += int(_num(p.get("count")) or 0)
            t["cpu_ns"] += int(_num(p.get("cpu_ns")) or 0)
            t["windows"] += 1
            gpu = _num(p.get("gpu_ns"))
            if gpu is not None:
                t["gpu_ns"] = (t["gpu_ns"] or 0) + int(gpu)
            p90 = _num(p.get("cpu_p90_ns"))
            if p90 is not None and (t["cpu_p90_max_ns"] is None or p90 > t["cpu_p90_max_ns"]):
                t["cpu_p90_max_ns"] = int(p90)
    for t in out.values():
        n = t["count"] or 1
        t["cpu_mean_ns"] = t["cpu_ns"] // n
        t["gpu_mean_ns"] = None if t["gpu_ns"] is None else t["gpu_ns"] // n
        t["per_iteration_ns"] = t["cpu_ns"] // measured if measured else None
    return out


def series(windows: Iterable[dict], key: str, what: str = "cpu") -> list[tuple[int, float]]:
    """(last iteration of the window, mean ns per range) of one phase over the run, for plots."""
    points = []
    for i, w in enumerate(windows):
        p = w["phases"].get(key)
        its = w.get("iterations")
        x = its[1] if isinstance(its, list) and len(its) == 2 and isinstance(its[1], int) else i
        if not isinstance(p, dict) or not _num(p.get("count")):
            continue
        total = _num(p.get(f"{what}_ns"))
        if total is not None:
            points.append((x, total / p["count"]))
    return points


__all__ = ["LiveLog", "load", "totals", "series"]
