"""Analysis stage: the JSON lines that live timing (``NVTXSIM_LIVE``) writes, read back and summed.

Each line is one window of iterations (see :mod:`nvtxsim.emit.live`). A line that does not parse
(a run killed mid-write) is skipped and counted, never fatal: the file is a log of a run that may
still be going on.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from nvtxsim.errors import NvtxsimError
from nvtxsim.export.tables import check_regular


@dataclass
class LiveLog:
    """The windows of a live-timing file, in file order."""

    path: str
    windows: list[dict] = field(default_factory=list)
    skipped: int = 0  # lines that were not a window (truncated, foreign)

    @property
    def pids(self) -> list[int]:
        return sorted({pid for w in self.windows if isinstance(pid := w.get("pid"), int)})


# A window line is at most a few kB per phase; a longer line is not one (and reading it whole could
# take all memory: a file of one endless line).
MAX_LINE = 64 << 20
_COUNTS = ("count", "cpu_ns", "cpu_mean_ns", "cpu_p90_ns", "gpu_ns")
_WINDOW_COUNTS = ("measured", "sample", "pid", "dropped_windows")


def _window(rec: Any) -> dict | None:
    """A live-timing window with every number the renderers use checked: counts and times are
    non-negative finite numbers (as ints) or None, ``iterations`` a pair of ints or None. The file is
    data written by another process (or anything): NaN, infinities, negative counts, text where a
    number belongs must not reach the arithmetic."""
    if not isinstance(rec, dict) or not isinstance(rec.get("phases"), dict):
        return None
    phases = {str(k): {c: _count(v.get(c)) for c in _COUNTS} for k, v in rec["phases"].items() if isinstance(v, dict)}
    its = rec.get("iterations")
    pair = isinstance(its, list) and len(its) == 2 and all(type(i) is int for i in its)
    out = {**rec, "phases": phases, "iterations": its if pair else None}
    out.update({k: _count(rec.get(k)) for k in _WINDOW_COUNTS})
    out["time"] = rec.get("time") if _count(rec.get("time")) is not None else None
    return out


def _count(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        return None
    return int(v)


def _lines(fh: IO[str]) -> Iterator[str | None]:
    """The file's lines; None for a line longer than :data:`MAX_LINE` (skipped without holding it)."""
    while True:
        line = fh.readline(MAX_LINE)
        if not line:
            return
        if len(line) < MAX_LINE or line.endswith("\n"):
            yield line
            continue
        while line and not line.endswith("\n"):
            line = fh.readline(MAX_LINE)
        yield None


def load(path: str | os.PathLike[str]) -> LiveLog:
    """Read a live-timing JSONL file (``-``: not supported; a file that cannot be read is an error,
    as is a FIFO or device: one could block, the other never end)."""
    log = LiveLog(os.fspath(path))
    check_regular(Path(path), kind="a live-timing file", suffix=".jsonl", empty_ok=True)
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise NvtxsimError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        for line in _lines(fh):
            if line is not None and not line.strip():
                continue
            try:
                rec = _window(json.loads(line)) if line is not None else None
            except (ValueError, RecursionError):
                rec = None
            if rec is not None:
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
            t = out.setdefault(
                str(key), {"count": 0, "cpu_ns": 0, "gpu_ns": None, "cpu_p90_max_ns": None, "windows": 0}
            )
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
