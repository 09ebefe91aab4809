"""Chrome/Perfetto trace JSON: NVTX phases on their threads, GPU ops on per-stream tracks.

Open the file in https://ui.perfetto.dev (or chrome://tracing). Push/pop ranges
are complete ("X") slices, which nest per thread; start/end ranges may overlap or
end on another thread, so they become async slices ("b"/"e"). Each GPU is a
process of its own with one track per CUDA stream; every op carries the phase
that launched it (the innermost selected range around its launch call).
Timestamps are microseconds from the first event, with nanosecond decimals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nvtxsim.analysis.gpu import short_kernel_name
from nvtxsim.analysis.launches import copy_direction
from nvtxsim.analysis.selection import Selection, pid_of, tid_of
from nvtxsim.reporting.document import Document
from nvtxsim.reporting.escaping import json_text
from nvtxsim.reporting.renderers.base import Renderer
from nvtxsim.schema import GRAPH, KERNEL, MEMCPY, MEMSET, TID_MASK

GPU_PID_BASE = 1 << 30  # keeps GPU "processes" apart from real pids (< 2^22 on Linux)


def _us(ns: np.ndarray, t0: int) -> list[float]:
    return np.round((ns - t0) / 1000.0, 3).tolist()


def trace_events(d: Selection) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """Metadata and range events (dicts), GPU op events (JSON text) and the trace's otherData."""
    r, sel, ops = d.export.ranges, d.selected, d.ops
    starts = [r.start[sel].min()] if len(sel) else []
    if len(ops):
        starts.append(ops.start.min())
    t0 = int(min(starts)) if starts else 0
    events, threads = _range_events(d, t0)
    meta = _thread_meta(d, threads) + _gpu_meta(d)
    gpu_text = _op_events(d, t0) if len(ops) else []
    other = {
        "source": str(d.export.path),
        "nsys_version": d.export.nsys_version,
        "t0_ns": t0,
        "generator": "nvtxsim report --format perfetto",
    }
    return meta + events, gpu_text, other


def _range_events(d: Selection, t0: int) -> tuple[list[dict[str, Any]], set[int]]:
    """Push/pop ranges as complete slices, start/end ranges as async begin/end pairs; and the threads seen."""
    r, sel, names = d.export.ranges, d.selected, d.label_names
    events: list[dict[str, Any]] = []
    threads: set[int] = set()
    ts, te = _us(r.start[sel], t0), _us(r.end[sel], t0)
    for k, i in enumerate(sel.tolist()):
        gtid = int(r.global_tid[i])
        threads.add(gtid)
        pid, tid = pid_of(gtid), tid_of(gtid)
        name = str(r.name[i]) if len(r.name) else str(names[r.label[i]])
        cat = str(r.domain[i]) if len(r.domain) and r.domain[i] else "nvtx"
        args: dict[str, Any] = {"phase": str(names[r.label[i]])}
        if not np.isnan(r.payload[i]):
            args["payload"] = float(r.payload[i])
        if r.unclosed[i]:
            args["unclosed"] = True
        if r.style[i] == 0:
            events.append(
                {
                    "ph": "X",
                    "name": name,
                    "cat": cat,
                    "ts": ts[k],
                    "dur": round(te[k] - ts[k], 3),
                    "pid": pid,
                    "tid": tid,
                    "args": args,
                }
            )
        else:
            rid = f"r{int(r.row[i])}"
            if r.cross_thread[i]:
                args["ends_on_other_thread"] = True
            events.append(
                {"ph": "b", "name": name, "cat": cat, "id": rid, "ts": ts[k], "pid": pid, "tid": tid, "args": args}
            )
            events.append({"ph": "e", "name": name, "cat": cat, "id": rid, "ts": te[k], "pid": pid, "tid": tid})
    return events, threads


def _thread_meta(d: Selection, threads: set[int]) -> list[dict[str, Any]]:
    meta: list[dict[str, Any]] = []
    for gtid in sorted(threads):
        meta.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": pid_of(gtid),
                "tid": tid_of(gtid),
                "args": {"name": d.thread_name(gtid)},
            }
        )
    for gpid in sorted({g & ~TID_MASK for g in threads}):
        meta.append({"ph": "M", "name": "process_name", "pid": pid_of(gpid), "args": {"name": d.process_name(gpid)}})
    return meta


def _gpu_meta(d: Selection) -> list[dict[str, Any]]:
    """Each GPU a process (sorted after the CPU ones), each of its streams a thread."""
    ops = d.ops
    meta: list[dict[str, Any]] = []
    if not len(ops):
        return meta
    for dev in np.unique(ops.device_id).tolist():
        meta.append(
            {"ph": "M", "name": "process_name", "pid": GPU_PID_BASE + int(dev), "args": {"name": d.gpu_name(int(dev))}}
        )
        meta.append(
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": GPU_PID_BASE + int(dev),
                "args": {"sort_index": 1000 + int(dev)},
            }
        )
    for dev, stream in np.unique(np.stack([ops.device_id, ops.stream_id], axis=1), axis=0).tolist():
        meta.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": GPU_PID_BASE + int(dev),
                "tid": int(stream),
                "args": {"name": f"stream {int(stream)}"},
            }
        )
    return meta


_CATEGORIES = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset"}


def _op_text(d: Selection, kind: int, name_id: int, direction: str) -> str:
    if kind == KERNEL:
        return short_kernel_name(d.export.string(name_id) or f"kernel #{name_id}")
    if kind == MEMCPY:
        return f"memcpy {direction}"
    if kind == MEMSET:
        return "memset"
    return f"CUDA graph {name_id}"


def _op_events(d: Selection, t0: int) -> list[str]:
    """GPU ops are many: serialised straight to JSON text, from Python lists, with cached names."""
    ops, r, names = d.ops, d.export.ranges, d.label_names
    phase_of_op = d.op_owner
    direction = copy_direction(ops).tolist()
    os_, oe = _us(ops.start, t0), _us(ops.end, t0)
    kinds, nids, corr = ops.kind.tolist(), ops.name_id.tolist(), ops.correlation_id.tolist()
    nbytes, dev, stream = ops.bytes.tolist(), ops.device_id.tolist(), ops.stream_id.tolist()
    plabel = (
        np.where(phase_of_op >= 0, r.label[np.maximum(phase_of_op, 0)], -1) if len(r.label) else np.full(len(ops), -1)
    ).tolist()
    name_cache: dict[tuple[int, int, str], str] = {}
    phase_cache: dict[int, str] = {-1: ""}
    out = []
    for j in range(len(kinds)):
        kind = kinds[j]
        key = (kind, nids[j] if kind in (KERNEL, GRAPH) else 0, direction[j])
        name = name_cache.get(key)
        if name is None:
            name = name_cache[key] = json_text(_op_text(d, kind, nids[j], direction[j]))
        lab = plabel[j]
        ph = phase_cache.get(lab)
        if ph is None:
            ph = phase_cache[lab] = ',"launched_in":' + json_text(str(names[lab]))
        extra = f',"bytes":{nbytes[j]}' if kind in (MEMCPY, MEMSET) else ""
        out.append(
            f'{{"ph":"X","name":{name},"cat":"{_CATEGORIES.get(kind, "graph")}","ts":{os_[j]},"dur":{round(oe[j] - os_[j], 3)},'
            f'"pid":{GPU_PID_BASE + dev[j]},"tid":{stream[j]},"args":{{"correlation_id":{corr[j]}{extra}{ph}}}}}'
        )
    return out


class PerfettoRenderer(Renderer):
    """The whole trace of the analysed export (Chrome trace event format, object form): a report only."""

    kinds = frozenset({"report"})
    suffixes = (".perfetto.json",)
    shows_every_view = True
    shows_findings = False  # the findings are computed only for --fail-on
    shows_warnings = False  # a trace has no place for them

    def render(self, doc: Document, *, width: int | None = None, color: bool = False) -> str:
        assert doc.detail is not None  # a report's document keeps its analysed export
        events, gpu_text, other = trace_events(doc.detail)
        dumps = lambda o: json_text(o, separators=(",", ":"))  # noqa: E731
        body = ",".join([dumps(e) for e in events] + gpu_text)
        return f'{{"traceEvents":[{body}],"displayTimeUnit":"ns","otherData":{dumps(other)}}}\n'
