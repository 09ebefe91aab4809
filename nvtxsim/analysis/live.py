"""Analysis stage: the JSON lines that live timing (``NVTXSIM_LIVE``) writes, read back and summed.

Each line is one window of iterations, a :class:`~nvtxsim.live_record.LiveWindow` (the record type the
writer writes, with its checks of every number). A line that is not one (a run killed mid-write) is
skipped and counted, never fatal: the file is a log of a run that may still be going on.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from nvtxsim.errors import NvtxsimError
from nvtxsim.export.tables import check_regular
from nvtxsim.live_record import LiveWindow


@dataclass
class LiveLog:
    """The windows of a live-timing file, in file order."""

    path: str
    windows: list[LiveWindow] = field(default_factory=list)
    skipped: int = 0  # lines that were not a window (truncated, foreign)

    @property
    def pids(self) -> list[int]:
        return sorted({w.pid for w in self.windows if w.pid is not None})


# A window line is at most a few kB per phase; a longer line is not one (and reading it whole could
# take all memory: a file of one endless line).
MAX_LINE = 64 << 20


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
            rec = LiveWindow.from_json(line) if line is not None else None
            if rec is not None:
                log.windows.append(rec)
            else:
                log.skipped += 1
    return log


COUNTS = ("kernels", "copies", "copy_bytes")  # what CUPTI windows add per phase


def totals(windows: Iterable[LiveWindow]) -> dict[str, dict[str, Any]]:
    """Per phase key (``domain:name``) over all windows: count, cpu_ns, gpu_ns (None when never measured) and
    gpu_count (the ranges it covers: fewer than count under a GPU cost budget), the largest window p90, and the
    number of measured iterations it ran in. From CUPTI windows also kernels, copies, copy_bytes, launches
    (kernels + copies) and the GPU busy time and launches per iteration that carried GPU times (keys left out
    where no window had them). Means divide GPU sums by what they cover, so a budget's sampling does not dilute them."""
    out: dict[str, dict[str, Any]] = {}
    measured = 0
    counted: dict[str, int] = {}  # phase -> measured iterations of the windows that counted its ops
    for w in windows:
        measured += w.measured or 0
        for key, p in w.phases.items():
            t = out.setdefault(key, _empty())
            t["count"] += p.count or 0
            t["cpu_ns"] += p.cpu_ns or 0
            t["windows"] += 1
            if p.gpu_ns is not None:
                t["gpu_ns"] = (t["gpu_ns"] or 0) + p.gpu_ns
                t["gpu_count"] += p.gpu_ranges
            if p.cpu_p90_ns is not None and (t["cpu_p90_max_ns"] is None or p.cpu_p90_ns > t["cpu_p90_max_ns"]):
                t["cpu_p90_max_ns"] = p.cpu_p90_ns
            if p.kernels is not None:
                counted[key] = counted.get(key, 0) + w.gpu_iterations
                t["busy_ns"] = (t["busy_ns"] or 0) + (p.gpu_ns or 0)
                for c in COUNTS:
                    t[c] = (t[c] or 0) + (getattr(p, c) or 0)
    for key, t in out.items():
        n = t["count"] or 1
        t["cpu_mean_ns"] = t["cpu_ns"] // n
        t["gpu_mean_ns"] = None if t["gpu_ns"] is None or not t["gpu_count"] else t["gpu_ns"] // t["gpu_count"]
        t["per_iteration_ns"] = t["cpu_ns"] // measured if measured else None
        its = counted.get(key)
        t["launches"] = None if t["kernels"] is None else t["kernels"] + (t["copies"] or 0)
        busy = t.pop("busy_ns")
        t["busy_per_iteration_ns"] = busy // its if its and busy is not None else None
        t["launches_per_iteration"] = round(t["launches"] / its, 1) if its and t["launches"] is not None else None
        if t["kernels"] is None:  # no CUPTI window: the phase's totals as before these keys existed
            for k in (*COUNTS, "launches", "busy_per_iteration_ns", "launches_per_iteration"):
                del t[k]
    return out


def _empty() -> dict[str, Any]:
    return {
        "count": 0,
        "cpu_ns": 0,
        "gpu_ns": None,
        "gpu_count": 0,
        "cpu_p90_max_ns": None,
        "windows": 0,
        "busy_ns": None,
    } | dict.fromkeys(COUNTS)


def gpu_modes(windows: Iterable[LiveWindow]) -> list[str]:
    """How the file's GPU times were measured ("cupti", "events"); a window from before ``gpu_mode`` with GPU
    times counts as "events" (the only mode there was)."""
    modes = set()
    for w in windows:
        if w.gpu_mode:
            modes.add(w.gpu_mode)
        elif any(p.gpu_ns is not None for p in w.phases.values()):
            modes.add("events")
    return sorted(modes)


def series(windows: Iterable[LiveWindow], key: str, what: str = "cpu") -> list[tuple[int, float]]:
    """(last iteration of the window, mean ns per range) of one phase over the run, for plots; ``what``:
    "cpu" or "gpu"."""
    points = []
    for i, w in enumerate(windows):
        p = w.phases.get(key)
        if p is None or not p.count:
            continue
        total, n = (p.cpu_ns, p.count) if what == "cpu" else (p.gpu_ns, p.gpu_ranges)
        if total is not None and n:
            points.append((w.iterations[1] if w.iterations is not None else i, total / n))
    return points


__all__ = ["LiveLog", "load", "totals", "series", "gpu_modes"]
