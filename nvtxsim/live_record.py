"""The live-timing record: one window of iterations, as live timing writes it and ``nvtxsim live`` reads it.

A live-timing file (``NVTXSIM_LIVE=FILE``) holds one JSON object per line, one line per window of
``every`` iterations::

    {"iterations": [first, last], "measured": n, "sample": k, "pid": ..., "time": ...,
     "phases": {"nvtxsim:sim_step": {"count", "cpu_ns", "cpu_mean_ns", "cpu_p90_ns", "gpu_ns"}},
     "trigger": {...}, "dropped_windows": n}

``trigger`` (a live trigger fired in the window) and ``dropped_windows`` (windows before this one the
writer could not keep up with) appear only when there is something to say. ``gpu_mode`` says how
``gpu_ns`` was measured: ``"events"`` (two CUDA events per range: a stream span) or ``"cupti"`` (CUPTI
activity records: GPU busy time, the union of the phase's kernels and copies); a phase measured with
CUPTI also has ``kernels``, ``copies`` (memcpy and memset ops) and ``copy_bytes``, and ``gpu_dropped``
counts records lost to full buffers. Under a GPU cost budget (CUPTI's duty cycle, ``NVTXSIM_LIVE_GPU_BUDGET``)
only some measured iterations carry GPU times: ``gpu_measured`` says how many of the window's iterations did, and a
phase's ``gpu_count`` how many of its ranges its ``gpu_ns`` and counts cover (both left out when all did: per-range
and per-iteration GPU numbers divide by these, never by ``count`` or ``measured``). Files written before these keys existed read as before (their
``gpu_ns`` are CUDA-event spans; ``gpu_mode`` reads None). The writer
(:mod:`nvtxsim.emit.live`) makes a :class:`LiveWindow` and writes :meth:`LiveWindow.to_json`; the reader
(:mod:`nvtxsim.analysis.live`) makes one of each line with :meth:`LiveWindow.from_json`. Nothing else
knows the layout.

The file is data another process (or anything) wrote: :meth:`LiveWindow.from_json` checks every number
the renderers use (non-negative finite numbers, as ints, or None) and gives None for a line that is not
a window, so NaN, infinities, negative counts or text where a number belongs never reach arithmetic.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

GPU_MODES = ("events", "cupti")


@dataclass(slots=True)
class PhaseTimes:
    """One phase's ranges in one window: how many, CPU ns in total, mean and p90, GPU ns in total."""

    count: int | None
    cpu_ns: int | None
    cpu_mean_ns: int | None
    cpu_p90_ns: int | None
    gpu_ns: int | None  # None: not measured (no CUDA, or GPU timing off)
    kernels: int | None = None  # CUPTI only: kernels launched in the phase's ranges
    copies: int | None = None  # CUPTI only: memcpy and memset ops
    copy_bytes: int | None = None  # CUPTI only: their bytes
    gpu_count: int | None = None  # ranges the GPU numbers cover; None: all ``count`` of them

    @classmethod
    def of(
        cls, cpu_times: list[int], gpu_ns: int | None, counts: tuple[int | None, ...] = (), gpu_count: int | None = None
    ) -> PhaseTimes:
        """The summary of one window's CPU times of a phase (at least one); the p90 is the nearest rank.
        ``counts``: (kernels, copies, copy_bytes) where the GPU timing saw the ops; ``gpu_count``: the ranges they
        cover, when fewer than all (a GPU cost budget)."""
        times = sorted(cpu_times)
        n = len(times)
        total = sum(times)
        p90 = times[min(n - 1, max(0, -(-9 * n // 10) - 1))]
        kernels, copies, copy_bytes = (tuple(counts) + (None, None, None))[:3]
        covered = gpu_count if gpu_ns is not None and gpu_count is not None and gpu_count != n else None
        return cls(n, total, total // n, p90, gpu_ns, kernels, copies, copy_bytes, covered)

    @property
    def gpu_ranges(self) -> int:
        """The ranges ``gpu_ns`` covers: per-range GPU numbers divide by this."""
        return self.gpu_count if self.gpu_count is not None else (self.count or 0)

    def to_dict(self) -> dict[str, int | None]:
        out = {
            "count": self.count,
            "cpu_ns": self.cpu_ns,
            "cpu_mean_ns": self.cpu_mean_ns,
            "cpu_p90_ns": self.cpu_p90_ns,
            "gpu_ns": self.gpu_ns,
        }
        for key in ("kernels", "copies", "copy_bytes", "gpu_count"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, raw: dict) -> PhaseTimes:
        get = raw.get
        return cls(
            _count(get("count")),
            _count(get("cpu_ns")),
            _count(get("cpu_mean_ns")),
            _count(get("cpu_p90_ns")),
            _count(get("gpu_ns")),
            _count(get("kernels")),
            _count(get("copies")),
            _count(get("copy_bytes")),
            _count(get("gpu_count")),
        )


@dataclass(slots=True)
class LiveWindow:
    """One line of a live-timing file. Phase keys are ``domain:name`` (``nvtxsim:sim_step``)."""

    iterations: tuple[int, int] | None  # first and last iteration; None when the program never stepped
    measured: int | None  # iterations measured in the window (all of them, or every ``sample``-th)
    sample: int | None
    pid: int | None
    time: float | None  # Unix time the window was written, in seconds
    phases: dict[str, PhaseTimes] = field(default_factory=dict)
    trigger: dict[str, Any] | None = None  # the firing of a live trigger: rule, at, ns, baseline_ns, window
    dropped_windows: int | None = None
    gpu_mode: str | None = None  # "events" or "cupti"; None: no GPU time, or a file from before the key
    gpu_dropped: int | None = None  # CUPTI records lost to full buffers in the window
    gpu_measured: int | None = None  # iterations with GPU times (a GPU cost budget); None: all ``measured`` ones

    @property
    def gpu_iterations(self) -> int:
        """The iterations the GPU numbers cover: per-iteration GPU numbers divide by this."""
        return self.gpu_measured if self.gpu_measured is not None else (self.measured or 0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the line (what a live-timing callback receives)."""
        out: dict[str, Any] = {
            "iterations": None if self.iterations is None else list(self.iterations),
            "measured": self.measured,
            "sample": self.sample,
            "pid": self.pid,
            "time": self.time,
            "phases": {key: p.to_dict() for key, p in self.phases.items()},
        }
        if self.trigger:
            out["trigger"] = self.trigger
        if self.dropped_windows:
            out["dropped_windows"] = self.dropped_windows
        if self.gpu_mode:
            out["gpu_mode"] = self.gpu_mode
        if self.gpu_dropped:
            out["gpu_dropped"] = self.gpu_dropped
        if self.gpu_measured is not None:
            out["gpu_measured"] = self.gpu_measured
        return out

    def to_json(self) -> str:
        """The line, without its newline: compact JSON."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> LiveWindow | None:
        """The window of one line; None for a line that is not one (cut short, foreign, not JSON)."""
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            return None
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: Any) -> LiveWindow | None:
        """The window of a parsed line, every number checked; None when ``raw`` is no window."""
        if not isinstance(raw, dict) or not isinstance(raw.get("phases"), dict):
            return None
        its: Any = raw.get("iterations")
        pair = isinstance(its, list) and len(its) == 2 and all(type(i) is int for i in its)
        trigger = raw.get("trigger")
        mode = raw.get("gpu_mode")
        return cls(
            iterations=(its[0], its[1]) if pair else None,
            measured=_count(raw.get("measured")),
            sample=_count(raw.get("sample")),
            pid=_count(raw.get("pid")),
            time=raw.get("time") if _count(raw.get("time")) is not None else None,
            phases={str(k): PhaseTimes.from_dict(v) for k, v in raw["phases"].items() if isinstance(v, dict)},
            trigger=trigger if isinstance(trigger, dict) else None,
            dropped_windows=_count(raw.get("dropped_windows")),
            gpu_mode=mode if mode in GPU_MODES else None,
            gpu_dropped=_count(raw.get("gpu_dropped")),
            gpu_measured=_count(raw.get("gpu_measured")),
        )


#: The largest number a line may hold (~146 years in ns, as for an export's timestamps): beyond it a number is
#: corrupt, and sums of a few would leave int64 (numpy) or float precision.
MAX_COUNT = 1 << 62


def _count(v: Any) -> int | None:
    """A non-negative finite number up to :data:`MAX_COUNT` as an int; None for anything else (NaN, text, a
    bool, a list, a 400-digit integer: compared as an int, never turned into a float, which would overflow)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if not 0 <= v <= MAX_COUNT:
        return None
    return int(v)


__all__ = ["LiveWindow", "PhaseTimes"]
