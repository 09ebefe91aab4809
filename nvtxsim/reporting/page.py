"""The data behind the HTML report's plots: phase bars, per-iteration series and the timeline.

Built by the pipeline from the analyses (per-iteration split, nesting, the range that
launched each GPU op), so the HTML renderer only turns it into a page. Everything here is
plain JSON-able data, with times relative to the window's start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nvtxsim.analysis.gpu import DIRECTION_LABELS, short_kernel_name
from nvtxsim.analysis.iterations import Iterations, per_iteration
from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError
from nvtxsim.phases import style_for
from nvtxsim.reporting.views import skip_of
from nvtxsim.schema import KERNEL, MEMCPY, MEMSET, copy_label

TIMELINE_ITERATIONS = 3
TIMELINE_MAX_ITEMS = 20000
SERIES_MAX = 10
ITERATION_POINTS = 3000  # more iterations are plotted as the max of each group of consecutive ones
NO_PHASE_COLOR = "#9e9e9e"


def phase_color(label: str) -> str:
    """The phase's standard colour (nvtxsim.phases) as CSS, from a ``domain:name`` label."""
    name = label.split(":", 1)[1] if ":" in label else label
    return f"#{style_for(name).color:06x}"


def page_data(detail: Selection, options: Any) -> dict:
    """The JSON the page's script draws from."""
    rep = detail.report
    it, it_note = None, ""
    try:
        it = per_iteration(detail, options.by, skip_first=skip_of(detail, options))
    except NvtxsimError as exc:
        if getattr(options, "by_given", False):
            raise
        it_note = str(exc)
    return {
        "source": rep.source,
        "phases": [
            {
                "label": p.label,
                "color": phase_color(p.label),
                "instances": p.instances,
                "cpu_total": p.cpu_total_ns,
                "cpu_median": p.cpu_median_ns,
                "cpu_p99": p.cpu_p99_ns,
                "gpu_busy": p.gpu_busy_total_ns,
                "gpu_proj": p.gpu_proj_total_ns,
            }
            for p in rep.phases
        ],
        "iterations": iteration_series(
            it, warm_up=getattr(options, "skip_first", None) is None, kept_warm_up=_kept_warm_up(detail, options, it)
        ),
        "iterations_note": it_note,
        "timeline": timeline(detail, it),
    }


def _kept_warm_up(detail: Selection, options: Any, it: Iterations | None) -> int:
    """With --keep-warm-up (or --skip-first 0), how many of the first iterations the findings take for warm-up: the
    plot shades them, since a first-call spike is what sets them aside by default; 0 otherwise."""
    if it is None or getattr(options, "skip_first", None) != 0:
        return 0
    from nvtxsim.analysis.findings import steady_skip

    try:
        return int(steady_skip(detail, options.by))
    except NvtxsimError:
        return 0


def iteration_series(it: Iterations | None, *, warm_up: bool = False, kept_warm_up: int = 0) -> dict | None:
    """Per-phase CPU and GPU time per iteration: the key phase and the costliest others."""
    if it is None or len(it) == 0:
        return None
    means = np.bincount(it.cells.col, weights=it.cells.cpu, minlength=len(it.phases)) / len(it)  # from the sparse cells
    order = [0] + (np.argsort(-means[1:], kind="stable") + 1).tolist()[: SERIES_MAX - 1]
    n = len(it)
    step = -(-n // ITERATION_POINTS)  # iterations per plotted point: 1 unless there are very many
    starts = np.arange(0, n, step)

    def points(col: np.ndarray) -> list:
        return (np.maximum.reduceat(col, starts) if step > 1 else col).tolist()

    series = [
        {
            "phase": it.phases[j],
            "color": phase_color(it.phases[j]),
            "cpu": points(it.column(j)),
            "gpu": points(it.column(j, "gpu")),
        }
        for j in order
        if means[j] > 0 or j == 0
    ]
    return {
        "key": it.key,
        "index": it.index[starts].tolist(),
        "series": series,
        "skipped": it.skipped,
        "warm_up": warm_up and it.skipped > 0,  # the skipped ones are the warm-up found (not --skip-first)
        "warm_up_kept": min(kept_warm_up, n),  # --keep-warm-up: the first ones the findings take for warm-up
        "per_point": step,
        "count": n,
    }


class _Names:
    """Strings of the timeline, stored once and referred to by index."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.names)
            self.names.append(s)
        return i


def representative(it: Iterations) -> int:
    """The row of a representative iteration of the steady state: the first one whose duration is the median's
    closest (never a warm-up or a stall, which the slowest would be)."""
    return int(np.argmin(np.abs(it.duration - np.median(it.duration))))


def _window(detail: Selection, it: Iterations | None) -> tuple[int, int, str] | None:
    """The time window shown: a few iterations around a representative one (:func:`representative`), else the
    start of the capture."""
    r, sel = detail.export.ranges, detail.selected
    if it is not None and len(it):
        mid = representative(it)
        a = max(0, min(mid - 1, len(it) - TIMELINE_ITERATIONS))
        b = min(len(it), a + TIMELINE_ITERATIONS)
        t0, t1 = int(it.start[a]), int(it.start[b - 1] + it.duration[b - 1])
        return (
            t0,
            t1,
            f"{it.key} {int(it.index[a])}–{int(it.index[b - 1])} (around {int(it.index[mid])}, a median iteration)",
        )
    if len(sel):
        o = np.sort(r.start[sel])
        t0 = int(o[0])
        t1 = int(o[min(len(o) - 1, 2000)]) if len(o) > 1 else int(r.end[sel].max())
        t1 = max(t1, int(r.end[sel][np.argmin(r.start[sel])]))
        return t0, t1, "start of the capture"
    return None


def timeline(detail: Selection, it: Iterations | None) -> dict:
    """Ranges and GPU ops inside a window of a few iterations (around a representative one)."""
    window = _window(detail, it)
    if window is None:
        return {"lanes": [], "names": [], "t0": 0, "t1": 1, "title": "no ranges"}
    t0, t1, title = window
    nid = _Names()
    lanes = _cpu_lanes(detail, t0, t1, nid) + _gpu_lanes(detail, t0, t1, nid)
    truncated = sum(len(lane["items"]) for lane in lanes) > TIMELINE_MAX_ITEMS
    if truncated:
        for lane in lanes:
            lane["items"] = lane["items"][: max(TIMELINE_MAX_ITEMS // max(len(lanes), 1), 1)]
    return {
        "lanes": lanes,
        "names": nid.names,
        "t0": t0,
        "t1": t1,
        "span": t1 - t0,
        "title": title,
        "truncated": truncated,
    }


def _cpu_lanes(detail: Selection, t0: int, t1: int, nid: _Names) -> list[dict]:
    """One lane per thread: its selected ranges in the window, at their nesting depth."""
    r, nest = detail.export.ranges, detail.nesting
    idx = nest.ranges
    pos = np.flatnonzero((r.end[idx] >= t0) & (r.start[idx] <= t1))
    lanes = []
    for tid in np.unique(r.global_tid[idx[pos]]):
        p = pos[r.global_tid[idx[pos]] == tid]
        items = []
        for k in p.tolist():
            i = int(idx[k])
            lab = detail.range_label(i)
            items.append(
                [int(r.start[i]) - t0, int(r.end[i]) - t0, int(nest.depth[k]), nid(lab), nid(phase_color(lab))]
            )
        lanes.append(
            {
                "label": detail.thread_name(int(tid)),
                "kind": "cpu",
                "depth": int(nest.depth[p].max()) + 1 if len(p) else 1,
                "items": items,
            }
        )
    return lanes


def _op_name(detail: Selection, j: int) -> str:
    ops = detail.ops
    kind = int(ops.kind[j])
    if kind == KERNEL:
        return short_kernel_name(detail.export.string(int(ops.name_id[j])) or "kernel")
    if kind == MEMCPY:
        return f"memcpy {DIRECTION_LABELS[copy_label(int(ops.copy_kind[j]))]} {int(ops.bytes[j]):,} B"
    if kind == MEMSET:
        return f"memset {int(ops.bytes[j]):,} B"
    return f"CUDA graph {int(ops.name_id[j])}"


def _gpu_lanes(detail: Selection, t0: int, t1: int, nid: _Names) -> list[dict]:
    """One lane per (GPU, stream): its ops in the window, coloured by the phase that launched them."""
    ops = detail.ops
    if not len(ops):
        return []
    win = np.flatnonzero((ops.end >= t0) & (ops.start <= t1))
    phase = detail.op_owner[win]  # the range that launched each op, -1: none selected
    streams = np.stack([ops.device_id[win], ops.stream_id[win]], axis=1)
    lanes = []
    for dev, stream in np.unique(streams, axis=0).tolist() if len(win) else []:
        items = []
        for k in np.flatnonzero((streams[:, 0] == dev) & (streams[:, 1] == stream)).tolist():
            j, p = int(win[k]), int(phase[k])
            lab = detail.range_label(p) if p >= 0 else ""
            items.append(
                [
                    int(ops.start[j]) - t0,
                    int(ops.end[j]) - t0,
                    0,
                    nid(_op_name(detail, j)),
                    nid(phase_color(lab) if lab else NO_PHASE_COLOR),
                    nid(lab),
                ]
            )
        lanes.append(
            {
                "label": f"GPU {int(dev)} · stream {int(stream)}",
                "title": detail.gpu_name(int(dev)),
                "kind": "gpu",
                "depth": 1,
                "items": items,
            }
        )
    return lanes
