"""GPU memory per phase, from the allocations and frees nsys records with ``--cuda-memory-usage=true``.

Why: the question after "how long" is "how much VRAM", and which phase needs it. nsys writes
one row per allocation and per free (``CUDA_GPU_MEMORY_USAGE_EVENTS``); summed in time order
per process they give the GPU memory the process holds at any moment (all its devices
together; host memory kinds left out). For each range:

* **peak**: the most the process held at any moment while the range was open (the level at
  its start included): what the GPU must have free for this phase.
* **rise**: peak minus the level at the range's start: the phase's own transient footprint.
* **net**: allocations minus frees inside the range: what the phase leaves allocated.
* **grow**: how much the process's high-water mark (the most it had held since the capture began)
  rose while the range was open: memory the process had never needed before this range. Under
  PyTorch's default caching allocator the level is the allocator's reserved memory and frees
  rarely reach the driver, so a phase's *rise* is mostly its cache growth in the first calls; the
  largest *grow* over a phase's calls is what the phase added to the process's footprint, the
  number that decides whether a larger run still fits (docs/scaling.md).

Only allocations the driver sees are recorded. PyTorch's caching allocator keeps freed blocks
and asks the driver only when its cache must grow, so without
``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` a phase shows the *growth of the cache* it caused (often
in the first iterations only), not every tensor it creates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.export.columns import Export
from nvtxsim.export.extras import MemoryEvents
from nvtxsim.schema import PID_BITS, PID_MASK, PID_SHIFT


@dataclass
class RangeMemory:
    """Per range (aligned with the ``ranges`` indices asked for), bytes."""

    peak: np.ndarray
    rise: np.ndarray
    net: np.ndarray
    grow: np.ndarray  # rise of the process's high-water mark while the range was open


def memory_events(export: Export) -> MemoryEvents | None:
    """The export's memory events, or None when it has none (capture without ``--cuda-memory-usage``)."""
    mem = getattr(getattr(export, "extras", None), "memory", None)
    return mem if mem is not None and len(mem) else None


def has_memory(export: Export) -> bool:
    """Whether the memory column and view have anything to show (the capture had ``--cuda-memory-usage``)."""
    return memory_events(export) is not None


def range_memory(export: Export, ranges: np.ndarray) -> RangeMemory | None:
    """Peak, rise and net GPU memory of each range in ``ranges``; None without memory events."""
    mem = memory_events(export)
    if mem is None:
        return None
    ranges = np.asarray(ranges, dtype=np.int64)
    r = export.ranges
    n = len(ranges)
    peak, rise, net, grow = (np.zeros(n, dtype=np.int64) for _ in range(4))
    ev_pid, rng_pid = _process_keys(mem.global_pid, r.global_tid[ranges])
    one_group = not np.any(ev_pid)  # no globalPid column: every event belongs to every range
    for pid in np.unique(ev_pid):
        ev = np.flatnonzero(ev_pid == pid)
        sel = np.arange(n) if one_group else np.flatnonzero(rng_pid == pid)
        if len(sel) == 0:
            continue
        order = np.argsort(mem.start[ev], kind="stable")
        t = mem.start[ev][order]
        level = np.cumsum(mem.delta[ev][order])
        p, s, d, g = _window_levels(t, level, r.start[ranges[sel]], r.end[ranges[sel]])
        peak[sel], rise[sel], net[sel], grow[sel] = p, s, d, g
    return RangeMemory(peak=peak, rise=rise, net=net, grow=grow)


def _process_keys(event_gpid: np.ndarray, range_gtid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys that tie memory events to the ranges' processes: the full serialized globalPid, or the
    bare PID bits when no event matches that way (a writer that leaves the host/VM bits out)."""
    ev, rg = event_gpid & PID_MASK, range_gtid & PID_MASK
    if len(ev) and len(rg) and not np.isin(ev, rg).any():
        return (event_gpid >> PID_SHIFT) & PID_BITS, (range_gtid >> PID_SHIFT) & PID_BITS
    return ev, rg


def _window_levels(
    t: np.ndarray, level: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per window [start, end]: peak level, peak minus level at start, level change and rise of the
    high-water mark (events at ``start`` count inside)."""
    i0 = np.searchsorted(t, start, side="left")  # first event inside
    i1 = np.searchsorted(t, end, side="right")  # one past the last event inside
    padded = np.r_[0, level]
    high = np.maximum.accumulate(padded)  # high[i]: the high-water mark after the first i events
    at_start = padded[i0]
    at_end = padded[i1]
    inside_max = at_start.copy()
    has = i1 > i0
    if has.any() and len(level):
        # Range maxima of level[i0:i1] in one pass: reduceat over (i0, i1) pairs, every other result.
        # A sentinel element keeps every end index valid (b may equal len(level)); b > a holds for these windows.
        a, b = i0[has], i1[has]
        idx = np.empty(2 * len(a), dtype=np.int64)
        idx[0::2], idx[1::2] = a, b
        red = np.maximum.reduceat(np.r_[level, level[-1]], idx)[0::2]
        inside_max[has] = np.maximum(at_start[has], red)
    return inside_max, inside_max - at_start, at_end - at_start, high[i1] - high[i0]


@dataclass
class PhaseMemory:
    """One phase's GPU memory over its instances."""

    phase: str
    instances: int
    rise_max_bytes: int  # what the phase needs: the most it added to the level it opened at, over its calls
    net_total_bytes: int
    grow_max_bytes: int  # the most one call raised the process's high-water mark
    peak_bytes: int  # largest level while any instance was open
    peak_median_bytes: int
    rise_median_bytes: int
    net_mean_bytes: int  # allocations minus frees per instance, on average


def phase_memory(detail) -> list[PhaseMemory]:  # detail: a Selection (selection imports this module's importers)
    """Per selected phase, the rise/net/peak GPU memory of its ranges (empty without memory events),
    the phase that needs the most first: its largest rise over its calls (with a caching allocator,
    the first call that made the cache grow; a median over calls is 0 there)."""
    idx = detail.selected
    m = range_memory(detail.export, idx)
    if m is None or len(idx) == 0:
        return []
    labels = detail.export.ranges.label[idx]
    out = []
    for lab in np.unique(labels):
        k = labels == lab
        out.append(
            PhaseMemory(
                phase=str(detail.label_names[lab]),
                instances=int(k.sum()),
                rise_max_bytes=int(m.rise[k].max()),
                net_total_bytes=int(m.net[k].sum()),
                grow_max_bytes=int(m.grow[k].max()),
                peak_bytes=int(m.peak[k].max()),
                peak_median_bytes=int(np.median(m.peak[k])),
                rise_median_bytes=int(np.median(m.rise[k])),
                net_mean_bytes=int(round(float(m.net[k].mean()))),
            )
        )
    out.sort(key=lambda p: (-p.rise_max_bytes, -p.peak_bytes, p.phase))
    return out


def process_peak(export: Export) -> int:
    """The most GPU memory any one process held during the capture (0 without memory events)."""
    mem = memory_events(export)
    if mem is None:
        return 0
    best = 0
    ev_pid = mem.global_pid & PID_MASK
    for pid in np.unique(ev_pid):
        ev = np.flatnonzero(ev_pid == pid)
        order = np.argsort(mem.start[ev], kind="stable")
        best = max(best, int(np.cumsum(mem.delta[ev][order]).max(initial=0)))
    return best
