"""Per-phase GPU detail (kernels, copies, syncs, idle, queue delay, per GPU, CUDA graphs).

References: the real `nsys stats` (nvtxkernsum, kernexectrace) on synthetic exports, and
obviously-correct Python re-computations from what the generator wrote.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from kernsum_check import check_kernels_against_kernsum
from nsys_util import needs_nsys, nsys_stats
from synth import make_export

from nvtxsim.analysis.gpu import (
    by_device,
    copies,
    graph_hints,
    is_sync_api,
    kernels,
    overview,
    short_kernel_name,
    syncs,
)
from nvtxsim.analysis.launches import api_name, queue_delay
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load


def _label(r: dict) -> str:
    return f"{r['domain']}:{r['name']}" if r["domain"] else r["name"]


def _end(synth, r):
    return r["end"] if r["end"] is not None else max(max(x["start"], x["end"] or 0) for x in synth.ranges)


def _calls_in(synth, r):
    """Calls wholly inside range ``r`` on its thread (the nsys rule); none for cross-thread ranges."""
    if r["end_tid"] is not None:
        return []
    end = _end(synth, r)
    return [c for c in synth.calls if c["tid"] == r["tid"] and r["start"] <= c["start"] and c["end"] <= end]


def _ops_of(synth, calls, graph=False):
    src = synth.graph_execs if graph else synth.ops
    keys = {(c["tid"] & ~0xFFFFFF, c["corr"]) for c in calls}
    return [o for o in src if (o["gpid"], o["corr"]) in keys]


def _union(iv):
    iv = sorted(iv)
    total, cur = 0, None
    for s, e in iv:
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0)


@pytest.fixture(scope="module", params=["node", "graph"])
def rich_export(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("gd") / f"s_{request.param}.sqlite"
    synth = make_export(path, 4, graphs=request.param, syncs=True, devices=2, extras=True)
    return path, synth, request.param


def test_kernels_copies_syncs_match_brute_force(rich_export):
    path, synth, mode = rich_export
    d = Selection(load(path), domain=None)
    k_ref = defaultdict(set)
    c_ref = defaultdict(set)
    s_ref = defaultdict(lambda: [0, 0])
    for r in synth.ranges:
        calls = _calls_in(synth, r)
        lab = _label(r)
        for o in _ops_of(synth, calls):
            if o["kind"] == "k":
                k_ref[(lab, o["name"])].add((o["start"], o["end"], o["corr"], o["gpid"]))
            else:
                direction = "memset" if o["kind"] == "s" else {1: "htod", 2: "dtoh", 8: "dtod"}[o["copy_kind"]]
                c_ref[(lab, direction)].add((o["start"], o["end"], o["corr"], o["gpid"], o["bytes"]))
        for g in _ops_of(synth, calls, graph=True):
            k_ref[(lab, f"[CUDA graph {g['graph_id']}]")].add((g["start"], g["end"], g["corr"], g["gpid"]))
        for c in calls:
            if is_sync_api(c["name"]):
                s_ref[(lab, api_name(c["name"]))][0] += 1
                s_ref[(lab, api_name(c["name"]))][1] += c["end"] - c["start"]
    ours_k = {(k.phase, k.kernel): [k.count, k.total_ns] for k in kernels(d, top=None)}
    assert ours_k == {k: [len(v), sum(e - s for s, e, _, _ in v)] for k, v in k_ref.items()}
    ours_c = {(c.phase, c.direction): [c.count, c.bytes, c.total_ns] for c in copies(d)}
    assert ours_c == {k: [len(v), sum(x[4] for x in v), sum(x[1] - x[0] for x in v)] for k, v in c_ref.items()}
    ours_s = {(s.phase, s.api): [s.calls, s.total_ns] for s in syncs(d)}
    assert ours_s == dict(s_ref)
    assert {a for _, a in ours_s} >= {
        "cudaStreamSynchronize",
        "cuStreamSynchronize",
        "cudaMemcpy",
        "cudaDeviceSynchronize",
    }
    if mode == "graph":
        assert any(k.startswith("[CUDA graph") for _, k in ours_k)
    else:
        assert any(k.startswith("graph_kern") for _, k in ours_k)


def test_overview_matches_brute_force(rich_export):
    path, synth, mode = rich_export
    d = Selection(load(path), domain=None)
    rows = {r.phase: r for r in overview(d)}
    per_pid_ops = defaultdict(list)
    for o in synth.ops + synth.graph_execs:
        per_pid_ops[o["gpid"]].append((o["start"], o["end"]))
    ref = defaultdict(lambda: defaultdict(int))
    queue = defaultdict(list)
    for r in synth.ranges:
        lab = _label(r)
        end = _end(synth, r)
        calls = _calls_in(synth, r)
        ops = _ops_of(synth, calls) + _ops_of(synth, calls, graph=True)
        x = ref[lab]
        x["launches"] += len({c["corr"] for c in calls if _ops_of(synth, [c]) or _ops_of(synth, [c], graph=True)})
        x["busy"] += _union([(o["start"], o["end"]) for o in ops])
        if ops:
            x["gaps"] += (
                max(o["end"] for o in ops)
                - min(o["start"] for o in ops)
                - _union([(o["start"], o["end"]) for o in ops])
            )
        clipped = [
            (max(s, r["start"]), min(e, end))
            for s, e in per_pid_ops[r["tid"] & ~0xFFFFFF]
            if e > r["start"] and s < end
        ]
        x["idle"] += (end - r["start"]) - _union(clipped)
        x["sync"] += _union([(c["start"], c["end"]) for c in calls if is_sync_api(c["name"])])
        graph_calls = [c for c in calls if api_name(c["name"]) == "cudaGraphLaunch"]
        x["graphs"] += len(graph_calls)
        x["graph_gpu"] += _union(
            [(o["start"], o["end"]) for o in _ops_of(synth, graph_calls) + _ops_of(synth, graph_calls, graph=True)]
        )
        by_corr = {c["corr"]: c for c in calls}
        for o in ops:
            queue[lab].append(max(o["start"] - by_corr[o["corr"]]["end"], 0))
    for lab, row in rows.items():
        x = ref[lab]
        assert (
            row.launches,
            row.gpu_busy_ns,
            row.span_gaps_ns,
            row.gpu_idle_ns,
            row.sync_wait_ns,
            row.graph_launches,
            row.graph_gpu_ns,
        ) == (x["launches"], x["busy"], x["gaps"], x["idle"], x["sync"], x["graphs"], x["graph_gpu"]), lab
        q = queue[lab]
        assert row.queue_max_ns == (max(q) if q else 0)
        assert row.queue_p50_ns == (int(round(float(np.quantile(q, 0.5)))) if q else 0)
    assert sum(r.graph_launches for r in rows.values()) > 0
    assert sum(r.sync_wait_ns for r in rows.values()) > 0


def test_per_device_split_adds_up(rich_export):
    path, synth, _ = rich_export
    d = Selection(load(path), domain=None)
    rows = by_device(d)
    assert {r.device for r in rows} == {0, 1}
    assert all(r.gpu.startswith(f"GPU {r.device}: Synthetic GPU") for r in rows)
    kern_total = defaultdict(int)
    for k in kernels(d, top=None):
        kern_total[k.phase] += k.total_ns
    dev_total = defaultdict(int)
    for r in rows:
        dev_total[r.phase] += r.kernel_ns
    assert dict(kern_total) == {p: v for p, v in dev_total.items() if v}


def test_graph_hints_per_trace_mode(tmp_path):
    hints = {}
    for mode in ("node", "graph", "missing"):
        path = tmp_path / f"{mode}.sqlite"
        make_export(path, 9, graphs=mode)
        hints[mode] = " ".join(graph_hints(Selection(load(path), domain=None)))
    assert hints["node"] == ""
    assert "graph-level" in hints["graph"] and "--cuda-graph-trace=node" in hints["graph"]
    assert "no GPU activity" in hints["missing"] and "--cuda-graph-trace=node" in hints["missing"]
    # The default summary carries the hint as a warning too.
    from nvtxsim.reporting.pipeline import report

    assert any("no GPU activity" in w for w in report(tmp_path / "missing.sqlite", findings=False).warnings)
    assert not any("graph" in w for w in report(tmp_path / "node.sqlite", findings=False).warnings)
    path = tmp_path / "plain.sqlite"
    make_export(path, 9)
    assert graph_hints(Selection(load(path), domain=None)) == []


def test_graph_level_rows_stay_out_of_the_nsys_compatible_summary(tmp_path):
    """nsys's projection ignores graph-level traces; the summary keeps doing so, the gpu view adds them."""
    path = tmp_path / "g.sqlite"
    synth = make_export(path, 6, graphs="graph")
    d = Selection(load(path), domain=None)
    summary_busy = sum(p.gpu_busy_total_ns for p in d.report.phases)
    view_busy = sum(r.gpu_busy_ns for r in overview(d))
    assert synth.graph_execs and view_busy > summary_busy


def test_short_kernel_names():
    assert (
        short_kernel_name(
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1> >(int, at::native::FillFunctor<float>, std::array<char*, 1>)"
        )
        == "vectorized_elementwise_kernel"
    )
    assert short_kernel_name("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn"
    assert (
        short_kernel_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(T1::Params)")
        == "Kernel2"
    )


def test_queue_delay_definition():
    """Queue delay clips at 0 when the GPU started before the launch call returned (as nsys)."""
    from types import SimpleNamespace

    from nvtxsim.analysis.launches import OpPairs

    ex = SimpleNamespace(api=SimpleNamespace(end=np.array([100, 100])))
    ops = SimpleNamespace(start=np.array([150, 90]))
    pairs = OpPairs(range=np.array([0, 0]), op=np.array([0, 1]), call=np.array([0, 1]))
    assert queue_delay(ex, ops, pairs).tolist() == [50, 0]


@needs_nsys
@pytest.mark.nsys
@pytest.mark.parametrize("seed", [2, 8])
def test_kernels_per_range_agree_with_nsys_nvtxkernsum(tmp_path, seed):
    path = tmp_path / "k.sqlite"
    make_export(path, seed, graphs="node", syncs=True)
    rows = nsys_stats(path, "nvtxkernsum")
    assert rows
    check_kernels_against_kernsum(Selection(load(path), domain=None), rows)


@needs_nsys
@pytest.mark.nsys
def test_queue_delay_agrees_with_nsys_kernexectrace(tmp_path):
    path = tmp_path / "q.sqlite"
    make_export(path, 3, graphs="node")
    rows = nsys_stats(path, "kernexectrace")
    theirs = sorted(
        (
            int(r["API Start (ns)"]),
            int(r["Kernel Start (ns)"]),
            int(r["Queue Dur (ns)"]) if r["Queue Dur (ns)"] not in ("", "None") else 0,
        )
        for r in rows
    )
    ex = load(path)
    d = Selection(ex, domain=None)
    link = d.link
    ours = []
    for c in np.flatnonzero(link.hi > link.lo):
        for j in link.op_order[link.lo[c] : link.hi[c]]:
            if d.ops.kind[j] == 0:
                ours.append(
                    (int(ex.api.start[c]), int(d.ops.start[j]), max(int(d.ops.start[j]) - int(ex.api.end[c]), 0))
                )
    assert sorted(ours) == theirs
    assert any(q for _, _, q in theirs)
