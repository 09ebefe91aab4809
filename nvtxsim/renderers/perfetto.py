"""Chrome/Perfetto trace JSON: NVTX phases on their threads, GPU ops on per-stream tracks.

Open the file in https://ui.perfetto.dev (or chrome://tracing). Push/pop ranges
are complete ("X") slices, which nest per thread; start/end ranges may overlap or
end on another thread, so they become async slices ("b"/"e"). Each GPU is a
process of its own with one track per CUDA stream; every op carries the phase
that launched it (the innermost selected range around its launch call).
Timestamps are microseconds from the first event, with nanosecond decimals.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..attribution import GRAPH, copy_direction
from ..detail import Detail, pid_of, tid_of
from ..load import KERNEL, MEMCPY, MEMSET

GPU_PID_BASE = 1 << 30  # keeps GPU "processes" apart from real pids (< 2^22 on Linux)


def _us(ns: np.ndarray, t0: int) -> list[float]:
    return np.round((ns - t0) / 1000.0, 3).tolist()


def trace_events(d: Detail) -> dict[str, Any]:
    from ..gpu_detail import short_kernel_name
    from ..render import fmt_bytes
    from ..tree import innermost

    ex = d.export
    r = ex.ranges
    sel = d.selected
    ops = d.ops
    starts = [r.start[sel].min()] if len(sel) else []
    if len(ops):
        starts.append(ops.start.min())
    t0 = int(min(starts)) if starts else 0
    events: list[dict[str, Any]] = []
    names = d.label_names
    seen_threads: set[int] = set()
    ts, te = _us(r.start[sel], t0), _us(r.end[sel], t0)
    for k, i in enumerate(sel.tolist()):
        gtid = int(r.global_tid[i])
        seen_threads.add(gtid)
        pid, tid = pid_of(gtid), tid_of(gtid)
        name = str(r.name[i]) if len(r.name) else str(names[r.label[i]])
        cat = str(r.domain[i]) if len(r.domain) and r.domain[i] else "nvtx"
        args: dict[str, Any] = {"phase": str(names[r.label[i]])}
        if not np.isnan(r.payload[i]):
            args["payload"] = float(r.payload[i])
        if r.unclosed[i]:
            args["unclosed"] = True
        if r.style[i] == 0:
            events.append({"ph": "X", "name": name, "cat": cat, "ts": ts[k], "dur": round(te[k] - ts[k], 3), "pid": pid, "tid": tid, "args": args})
        else:
            rid = f"r{int(r.row[i])}"
            if r.cross_thread[i]:
                args["ends_on_other_thread"] = True
            events.append({"ph": "b", "name": name, "cat": cat, "id": rid, "ts": ts[k], "pid": pid, "tid": tid, "args": args})
            events.append({"ph": "e", "name": name, "cat": cat, "id": rid, "ts": te[k], "pid": pid, "tid": tid})
    meta: list[dict[str, Any]] = []
    for gtid in sorted(seen_threads):
        pid, tid = pid_of(gtid), tid_of(gtid)
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": d.thread_name(gtid)}})
    for gpid in sorted({g & ~0xFFFFFF for g in seen_threads}):
        meta.append({"ph": "M", "name": "process_name", "pid": pid_of(gpid), "args": {"name": d.process_name(gpid)}})

    if len(ops):
        api = ex.api
        phase_of_op = np.full(len(ops), -1, dtype=np.int64)
        if api is not None and len(api) and len(sel):
            link = d.link
            calls = np.flatnonzero(link.hi > link.lo)
            nest = d.tree.nesting
            owner = innermost(ex, nest, api.start[calls], api.end[calls], api.global_tid[calls])
            cnt = link.count[calls]
            firsts = np.cumsum(cnt) - cnt
            pos = np.repeat(link.lo[calls], cnt) + (np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(firsts, cnt))
            own = np.repeat(owner, cnt)
            ok = own >= 0
            phase_of_op[link.op_order[pos[ok]]] = nest.ranges[own[ok]]
        direction = copy_direction(ops)
        os_, oe = _us(ops.start, t0), _us(ops.end, t0)
        kname_cache: dict[int, tuple[str, str]] = {}
        for j in range(len(ops)):
            kind = int(ops.kind[j])
            args = {"correlation_id": int(ops.correlation_id[j])}
            if kind == KERNEL:
                nid = int(ops.name_id[j])
                if nid not in kname_cache:
                    full = ex.string(nid) or f"kernel #{nid}"
                    kname_cache[nid] = (short_kernel_name(full), full)
                name, full = kname_cache[nid]
                args["kernel"] = full
                cat = "kernel"
            elif kind == MEMCPY:
                name = f"memcpy {direction[j]} {fmt_bytes(ops.bytes[j])}"
                args["bytes"] = int(ops.bytes[j])
                cat = "memcpy"
            elif kind == MEMSET:
                name = f"memset {fmt_bytes(ops.bytes[j])}"
                args["bytes"] = int(ops.bytes[j])
                cat = "memset"
            else:
                name = f"CUDA graph {int(ops.name_id[j])}"
                cat = "graph"
            p = int(phase_of_op[j])
            if p >= 0:
                args["launched_in"] = str(names[r.label[p]])
            events.append(
                {"ph": "X", "name": name, "cat": cat, "ts": os_[j], "dur": round(oe[j] - os_[j], 3), "pid": GPU_PID_BASE + int(ops.device_id[j]),
                 "tid": int(ops.stream_id[j]), "args": args}
            )
        for dev in np.unique(ops.device_id).tolist():
            meta.append({"ph": "M", "name": "process_name", "pid": GPU_PID_BASE + int(dev), "args": {"name": d.gpu_name(int(dev))}})
            meta.append({"ph": "M", "name": "process_sort_index", "pid": GPU_PID_BASE + int(dev), "args": {"sort_index": 1000 + int(dev)}})
        for dev, stream in np.unique(np.stack([ops.device_id, ops.stream_id], axis=1), axis=0).tolist():
            meta.append({"ph": "M", "name": "thread_name", "pid": GPU_PID_BASE + int(dev), "tid": int(stream), "args": {"name": f"stream {int(stream)}"}})
    return {
        "traceEvents": meta + events,
        "displayTimeUnit": "ns",
        "otherData": {"source": str(ex.path), "nsys_version": ex.nsys_version, "t0_ns": t0, "generator": "nvtxsim report --format perfetto"},
    }


def render_perfetto(d: Detail) -> str:
    return json.dumps(trace_events(d), ensure_ascii=False, separators=(",", ":")) + "\n"
