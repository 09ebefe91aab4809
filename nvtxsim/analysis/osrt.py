"""Time a phase spends blocked in the OS, from the calls nsys traces with ``-t osrt`` (``OSRT_API``).

Why: a phase that is slow but not busy is waiting on something - a sleep, a file, a socket, a
lock held by another thread, the GIL, a child process. nsys records every such libc call longer
than ``--osrt-threshold`` (1 µs) with its thread and function name; no other tool says which
*phase* made it. Each call belongs to the **innermost selected range open around it on the same
thread** (the rule the findings use for CUDA calls), so a sleep in ``reset`` counts for ``reset``
and not again for the ``iteration`` around it; calls outside every phase are summed apart.
Calls nested in another traced call (``nestingLevel`` > 0) are left out by the loader, so no time
counts twice. The category of a call comes from its function name (:data:`nvtxsim.schema.OSRT_CATEGORIES`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nvtxsim.analysis.launches import innermost
from nvtxsim.export.columns import Export
from nvtxsim.export.extras import OsrtCalls
from nvtxsim.schema import OSRT_CATEGORIES, OSRT_OTHER, osrt_category

#: Categories in the order the view lists them.
CATEGORIES: tuple[str, ...] = tuple(c for c, _ in OSRT_CATEGORIES) + (OSRT_OTHER,)
#: Categories in which the thread waits (sleeps or blocks); ``memory`` (mmap/munmap) and ``other`` are
#: work the kernel does for the thread, listed but never called a wait.
WAIT_CATEGORIES: tuple[str, ...] = ("sleep", "file", "socket", "poll", "lock", "process")
OUTSIDE = "(outside phases)"
TOP_FUNCTIONS = 3


def os_calls(export: Export) -> OsrtCalls | None:
    """The export's traced OS calls, or None when it has none (no ``-t osrt``, or an unreadable table)."""
    calls = getattr(getattr(export, "extras", None), "osrt", None)
    return calls if calls is not None and len(calls) else None


def osrt_note(export: Export) -> str | None:
    """One line saying why there are no OS calls to show, None when there are."""
    extras = getattr(export, "extras", None)
    problem = getattr(extras, "osrt_problem", "")
    if problem:
        return f"{problem}: OS waits are not shown"
    if os_calls(export) is None:
        return "export has no OS runtime trace (OSRT_API): profile with nsys -t osrt (nvtxsim profile does by default)"
    return None


def call_categories(calls: OsrtCalls) -> np.ndarray:
    """Per call: index into CATEGORIES (from its function name; unknown names are ``other``)."""
    ids = np.unique(calls.name_id)
    code = np.array([CATEGORIES.index(osrt_category(calls.names.get(int(i), ""))) for i in ids], dtype=np.int8)
    return code[np.searchsorted(ids, calls.name_id)]


def function_name(calls: OsrtCalls, name_id: int) -> str:
    return calls.names.get(int(name_id)) or f"(unknown call #{int(name_id)})"


@dataclass
class PhaseOsWait:
    """One phase's time in one category of OS calls (its own calls: not those of child phases)."""

    phase: str
    category: str
    calls: int
    total_ns: int
    per_instance_ns: int | None  # None for calls outside phases
    phase_share: float | None  # of the phase's time (all its instances); None for calls outside phases
    top: str  # the functions that took most of it, e.g. "clock_nanosleep 3× 156 ms"
    wait: bool  # a category in which the thread blocks (WAIT_CATEGORIES)


def owners(detail) -> np.ndarray:  # detail: a Selection
    """Per OS call: the index (into ``Export.ranges``) of the innermost selected range around it on its thread, or -1."""
    calls = os_calls(detail.export)
    if calls is None:
        return np.zeros(0, dtype=np.int64)
    nest = detail.nesting
    pos = innermost(detail.export, nest, calls.start, calls.end, calls.global_tid)
    if not len(nest.ranges):
        return pos
    return np.where(pos >= 0, nest.ranges[np.maximum(pos, 0)], -1)


def _top(calls: OsrtCalls, sel: np.ndarray, fmt) -> str:
    dur = calls.end[sel] - calls.start[sel]
    ids, inv = np.unique(calls.name_id[sel], return_inverse=True)
    tot = np.bincount(inv, weights=dur)
    cnt = np.bincount(inv)
    order = np.argsort(-tot, kind="stable")[:TOP_FUNCTIONS]
    return ", ".join(f"{function_name(calls, int(ids[k]))} {int(cnt[k])}× {fmt(int(tot[k]))}" for k in order)


def phase_waits(detail, fmt=lambda ns: f"{ns / 1e6:.1f} ms") -> list[PhaseOsWait]:
    """Per selected phase and category, the OS calls the phase made itself; calls outside every
    selected range on their thread as one OUTSIDE phase. Largest first. ``fmt`` writes a duration."""
    calls = os_calls(detail.export)
    if calls is None:
        return []
    own = owners(detail)
    cats = call_categories(calls)
    dur = calls.end - calls.start
    r = detail.export.ranges
    label = np.where(own >= 0, r.label[np.maximum(own, 0)], -1)
    out = []
    for lab in np.unique(label):
        mine_ranges = detail.selected[r.label[detail.selected] == lab] if lab >= 0 else None
        phase_ns = int(r.duration[mine_ranges].sum()) if mine_ranges is not None else 0
        n_inst = len(mine_ranges) if mine_ranges is not None else 0
        for c in np.unique(cats[label == lab]):
            sel = np.flatnonzero((label == lab) & (cats == c))
            total = int(dur[sel].sum())
            out.append(
                PhaseOsWait(
                    phase=str(detail.label_names[lab]) if lab >= 0 else OUTSIDE,
                    category=CATEGORIES[int(c)],
                    calls=len(sel),
                    total_ns=total,
                    per_instance_ns=int(round(total / max(n_inst, 1))) if lab >= 0 else None,
                    phase_share=round(total / phase_ns, 4) if phase_ns > 0 else None,
                    top=_top(calls, sel, fmt),
                    wait=CATEGORIES[int(c)] in WAIT_CATEGORIES,
                )
            )
    out.sort(key=lambda w: (w.phase == OUTSIDE, -w.total_ns, w.phase, w.category))
    return out
