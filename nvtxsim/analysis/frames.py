"""pandas DataFrames of an export, for notebooks and custom analysis.

``nvtxsim.load_frames("run.sqlite")`` gives the same data the report uses, one
row per range / GPU op / CUDA call, already joined: ranges carry their nesting,
self time and GPU attribution; GPU ops carry the phase that launched them. pandas
is an optional dependency (``pip install 'nvtxsim[pandas]'``), imported only here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from nvtxsim.errors import NvtxsimError
from nvtxsim.schema import KIND_NAMES, PID_BITS, PID_SHIFT, TID_MASK


class MissingDependency(NvtxsimError, ImportError):
    """An optional dependency is not installed (also an ImportError, for code that expects one)."""


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependency(
            "nvtxsim.load_frames needs pandas: pip install 'nvtxsim[pandas]' (or pip install pandas)"
        ) from None
    return pd


def _nullable(pd: Any, values: np.ndarray, valid: np.ndarray) -> Any:
    """Int64 column with <NA> where ``valid`` is False."""
    out = pd.array(np.where(valid, values, 0).astype(np.int64), dtype="Int64")
    out[~np.asarray(valid, dtype=bool)] = pd.NA
    return out


@dataclass
class Frames:
    """DataFrames of one export (times in integer ns on the capture timeline)."""

    ranges: Any  # one row per NVTX range
    gpu_ops: Any  # kernels, memcpys, memsets, graph-level graph executions
    api_calls: Any  # CUDA runtime/driver calls
    phases: Any  # the report's per-phase summary
    iterations: Any  # long format: iteration, range_id, tid, phase, cpu_ns, gpu_busy_ns, instances (empty without an iteration range)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        for f in fields(self):
            yield f.name, getattr(self, f.name)


def load_frames(path: str | os.PathLike[str], *, domain: str | None = None, by: str = "iteration") -> Frames:
    """Load an export (.sqlite, .sqlite.gz or .sqlite.xz, .nsys-rep) as pandas DataFrames.

    ``domain`` limits the ranges, like ``nvtxsim report --domain`` (default: every domain);
    ``by`` names the range that marks one loop iteration, for the ``iterations`` frame.
    """
    pd = _pandas()
    from nvtxsim.analysis.selection import Selection
    from nvtxsim.export.reader import load

    export = load(path)
    return frames_of(Selection(export, domain=None if domain in (None, "all") else domain), by=by, pd=pd)


def frames_of(d: Any, *, by: str = "iteration", pd: Any = None) -> Frames:
    """DataFrames of an already loaded :class:`~nvtxsim.analysis.selection.Selection`."""
    pd = pd or _pandas()
    api_names = _api_names(d.export)
    return Frames(
        ranges=_ranges_frame(d, pd),
        gpu_ops=_gpu_ops_frame(d, pd, api_names),
        api_calls=_api_calls_frame(d, pd, api_names),
        phases=pd.DataFrame([{"phase": p.label, **p.as_dict()} for p in d.report.phases]),
        iterations=_iterations_frame(d, pd, by),
    )


def _api_names(ex: Any) -> dict[int, str]:
    """CUDA API name (suffix stripped) per StringIds id of the export's calls."""
    from nvtxsim.analysis.launches import api_name

    api = ex.api
    return {int(i): api_name(ex.string(int(i))) for i in np.unique(api.name_id)} if api is not None and len(api) else {}


def _ranges_frame(d: Any, pd: Any) -> Any:
    """One row per selected range: times, thread, nesting, self time and GPU attribution."""
    ex = d.export
    r = ex.ranges
    sel = d.selected
    g = d.gpu
    tree = d.tree
    nest = tree.nesting
    pos_of = np.full(len(r), -1, dtype=np.int64)
    pos_of[nest.ranges] = np.arange(len(nest.ranges))
    p = pos_of[sel]
    parent_pos = nest.parent[p]
    parent_row = np.where(parent_pos >= 0, r.row[nest.ranges[np.maximum(parent_pos, 0)]], -1)
    names = d.label_names
    tids = r.global_tid[sel]
    return pd.DataFrame(
        {
            "phase": names[r.label[sel]].astype(str),
            "name": r.name[sel].astype(str) if len(r.name) else names[r.label[sel]].astype(str),
            "domain": r.domain[sel].astype(str) if len(r.domain) else "",
            "start_ns": r.start[sel],
            "end_ns": r.end[sel],
            "duration_ns": (r.end - r.start)[sel],
            "pid": (tids >> PID_SHIFT) & PID_BITS,
            "tid": tids & TID_MASK,
            "thread": [d.thread_name(int(t)) for t in tids],
            "style": np.where(r.style[sel] == 0, "pushpop", "startend"),
            "cross_thread": r.cross_thread[sel],
            "unclosed": r.unclosed[sel],
            "payload": r.payload[sel],
            "depth": nest.depth[p],
            "parent": _nullable(pd, parent_row, parent_row >= 0),
            "cpu_self_ns": tree.cpu_self[p],
            "gpu_ops": g.ops[sel],
            "gpu_kernels": g.kernels[sel],
            "gpu_proj_start_ns": _nullable(pd, g.proj_start[sel], g.ops[sel] > 0),
            "gpu_proj_end_ns": _nullable(pd, g.proj_end[sel], g.ops[sel] > 0),
            "gpu_busy_ns": g.busy[sel],
            "gpu_self_ns": tree.gpu_self[p],
        },
        index=pd.Index(r.row[sel], name="range_id"),
    )


def _gpu_ops_frame(d: Any, pd: Any, api_names: dict[int, str]) -> Any:
    """One row per GPU op: kind, name, times, device, stream, bytes, launching call and the range that launched it."""
    from nvtxsim.analysis.launches import copy_direction

    ex = d.export
    r = ex.ranges
    names = d.label_names
    ops = d.ops
    api = ex.api
    link = d.link
    n_ops = len(ops)
    call_of = link.op_call(n_ops)
    has_call = call_of >= 0
    owner_range = d.op_owner
    launch_tid = np.zeros(n_ops, dtype=np.int64)
    queue = np.zeros(n_ops, dtype=np.int64)
    if has_call.any():
        c = call_of[has_call]
        launch_tid[has_call] = api.global_tid[c] & TID_MASK
        queue[has_call] = np.maximum(ops.start[has_call] - api.end[c], 0)
    kind_names = np.array([KIND_NAMES.get(k, "?") for k in range(4)], dtype=object)
    op_name = np.empty(n_ops, dtype=object)
    kernel_names: dict[int, str] = {}
    for j in range(n_ops):
        k = int(ops.kind[j])
        if k == 0:
            nid = int(ops.name_id[j])
            op_name[j] = kernel_names.setdefault(nid, ex.string(nid))
        elif k == 3:
            op_name[j] = f"CUDA graph {int(ops.name_id[j])}"
        else:
            op_name[j] = kind_names[k]
    return pd.DataFrame(
        {
            "kind": kind_names[ops.kind.astype(np.int64)] if n_ops else np.zeros(0, dtype=object),
            "name": op_name,
            "start_ns": ops.start,
            "end_ns": ops.end,
            "duration_ns": ops.end - ops.start,
            "device": ops.device_id,
            "stream": ops.stream_id,
            "bytes": ops.bytes,
            "direction": copy_direction(ops),
            "pid": (ops.global_pid >> PID_SHIFT) & PID_BITS,
            "correlation_id": ops.correlation_id,
            "launch_tid": _nullable(pd, launch_tid, has_call),
            "launch_api": [api_names.get(int(api.name_id[c]), "") if c >= 0 else "" for c in call_of]
            if api is not None
            else [""] * n_ops,
            "queue_ns": _nullable(pd, queue, has_call),
            "phase": [str(names[r.label[i]]) if i >= 0 else "" for i in owner_range],
            "range_id": _nullable(pd, r.row[np.maximum(owner_range, 0)] if len(r) else owner_range, owner_range >= 0),
        }
    )


def _api_calls_frame(d: Any, pd: Any, api_names: dict[int, str]) -> Any:
    """One row per CUDA runtime/driver call, with the number of GPU ops it launched."""
    api, link = d.export.api, d.link
    if api is not None and len(api):
        return pd.DataFrame(
            {
                "name": [api_names.get(int(i), "") for i in api.name_id],
                "start_ns": api.start,
                "end_ns": api.end,
                "duration_ns": api.end - api.start,
                "pid": (api.global_tid >> PID_SHIFT) & PID_BITS,
                "tid": api.global_tid & TID_MASK,
                "correlation_id": api.correlation_id,
                "gpu_ops": link.count,
            }
        )
    else:
        return pd.DataFrame(
            {c: [] for c in ("name", "start_ns", "end_ns", "duration_ns", "pid", "tid", "correlation_id", "gpu_ops")}
        )


def _iterations_frame(d: Any, pd: Any, by: str) -> Any:
    """Long format: per iteration and phase, CPU time, GPU busy time and instances (empty without iterations)."""
    from nvtxsim.analysis.iterations import per_iteration

    r = d.export.ranges
    try:
        it = per_iteration(d, by)
        n_ph = len(it.phases)
        recs = {
            "iteration": np.repeat(it.index, n_ph),
            "range_id": np.repeat(r.row[it.key_range], n_ph),  # the key range of the iteration
            "tid": np.repeat(r.global_tid[it.key_range] & TID_MASK, n_ph),
            "phase": np.tile(np.array(it.phases, dtype=object), len(it)),
            "cpu_ns": it.cpu.reshape(-1),
            "gpu_busy_ns": it.gpu.reshape(-1),
            "instances": it.count.reshape(-1),
        }
        return pd.DataFrame(recs)
    except NvtxsimError:
        return pd.DataFrame(
            {c: [] for c in ("iteration", "range_id", "tid", "phase", "cpu_ns", "gpu_busy_ns", "instances")}
        )
