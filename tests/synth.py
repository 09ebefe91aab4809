"""Synthetic nsys exports (2022.4 schema 3.0.0 columns) with random NVTX ranges, CUDA calls and GPU ops.

They let the real `nsys stats` scripts act as the reference for nvtxsim's projection on
shapes a CPU-only machine cannot record: several processes with colliding correlation
ids, overlapping streams, launches cut by range boundaries, cross-thread and unclosed
ranges, nested driver calls.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

#: Row inserts every synthetic export shares (the row tuples follow these column lists).
RUNTIME_SQL = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start,end,eventClass,globalTid,correlationId,nameId,returnValue) VALUES (?,?,?,?,?,?,?)"
KERNEL_SQL = (
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,NULL,NULL)"
)
NVTX_SQL = "INSERT INTO NVTX_EVENTS (start,end,eventType,rangeId,category,color,text,globalTid,endGlobalTid,textId,domainId) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
NVTX_SHORT_SQL = (
    "INSERT INTO NVTX_EVENTS (start,end,eventType,rangeId,text,globalTid,textId,domainId) VALUES (?,?,?,?,?,?,?,?)"
)


DDL = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE EXPORT_META_DATA (name TEXT NOT NULL, value TEXT);
CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER,
    color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
    int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
    mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,
    gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
    deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER,
    dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
    graphNodeId INTEGER, memKind INTEGER);
"""

NAMES = ["iteration", "sim_step", "render", "camera_readout", "policy", "reward", "reset", "x|y", "päyload"]
API_NAMES = [
    "cudaLaunchKernel_v7000",
    "cudaMemcpyAsync_v3020",
    "cudaMemsetAsync_v3020",
    "cuLaunchKernel",
    "cudaStreamSynchronize_v3020",
]


@dataclass
class Synth:
    """What was generated, for reference computations in tests."""

    ranges: list[dict] = field(
        default_factory=list
    )  # rowid, start, end(None=unclosed), tid, end_tid, style, domain, name
    calls: list[dict] = field(default_factory=list)  # start, end, tid, corr, name
    ops: list[dict] = field(
        default_factory=list
    )  # start, end, gpid, corr, kind, bytes, copy_kind, device, stream (+ name for kernels)
    graph_execs: list[dict] = field(
        default_factory=list
    )  # graph-level executions: start, end, gpid, corr, graph_id, device, stream


def global_tid(pid: int, tid: int) -> int:
    return (1 << 48) | (pid << 24) | tid


GRAPH_DDL = {
    # nsys 2022.4: node creation events only; graph kernels carry graphNodeId.
    "node": "CREATE TABLE CUDA_GRAPH_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, "
    "correlationId INTEGER, nameId INTEGER, graphNodeId INTEGER, originalGraphNodeId INTEGER);",
    # newer nsys with --cuda-graph-trace=graph: one row per whole-graph execution.
    "graph": "CREATE TABLE CUDA_GRAPH_NODE_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, "
    "correlationId INTEGER, nameId INTEGER, graphNodeId INTEGER, originalGraphNodeId INTEGER);"
    "CREATE TABLE CUDA_GRAPH_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, "
    "correlationId INTEGER, nameId INTEGER, graphId INTEGER, originalGraphId INTEGER, graphExecId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
    "contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
    "graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL);",
    "missing": "",
}
EXTRA_DDL = """
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER,
    totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, uuid TEXT, cuDevice INTEGER);
"""
SYNC_NAMES = [
    "cudaDeviceSynchronize_v3020",
    "cudaEventSynchronize_v3020",
    "cudaStreamSynchronize_v3020",
    "cudaMemcpy_v3020",
]


def make_export(
    path: Path,
    seed: int,
    *,
    processes: int = 2,
    threads: int = 3,
    calls_per_thread: int = 60,
    graphs: str | None = None,
    syncs: bool = False,
    devices: int = 1,
    extras: bool = False,
) -> Synth:
    """A random export. Optional features (all off by default, leaving the default data unchanged):
    ``graphs`` adds cudaGraphLaunch calls traced "node" (kernels with graphNodeId), "graph" (rows in
    CUPTI_ACTIVITY_KIND_GRAPH_TRACE, newer nsys) or "missing" (no GPU rows: 2022.4 graph mode);
    ``syncs`` adds synchronizing calls (some with a nested driver call, cudaMemcpy with its D→H copy);
    ``devices`` spreads GPU ops over several GPUs; ``extras`` adds thread, process and GPU names."""
    rng = random.Random(seed)
    rng2 = random.Random(seed * 7919 + 17)  # optional features draw from here, so defaults stay as they were
    graph_rows: list[tuple] = []
    graph_id = 0
    synth = Synth()
    con = sqlite3.connect(path)
    con.executescript(DDL)
    if graphs:
        con.executescript(GRAPH_DDL[graphs])
    if extras:
        con.executescript(EXTRA_DDL)
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
        return strings[s]

    nvtx_rows: list[tuple] = []
    runtime_rows: list[tuple] = []
    kernel_rows: list[tuple] = []
    memcpy_rows: list[tuple] = []
    memset_rows: list[tuple] = []
    t_end = 0
    for p in range(processes):
        pid = 1000 + p
        gpid = global_tid(pid, 0)
        corr = 1  # per-process counters: ids collide across processes on purpose
        main_tid = global_tid(pid, pid)
        nvtx_rows.append((0, None, 75, None, None, None, "nvtxsim", main_tid, None, None, 1))
        tids = [global_tid(pid, pid + k) for k in range(threads)]
        for tid in tids:
            t = rng.randint(0, 5000)
            for _ in range(calls_per_thread):
                t += rng.randint(0, 4000)
                dur = rng.randint(200, 5000)
                c = {"start": t, "end": t + dur, "tid": tid, "corr": corr}
                synth.calls.append(c)
                c["name"] = rng.choice(API_NAMES)
                runtime_rows.append((c["start"], c["end"], 0, tid, corr, sid(c["name"]), 0))
                for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
                    kind = rng.choice(["k", "k", "k", "m", "s"])
                    s = t + rng.randint(100, 20000)
                    e = s + rng.randint(1, 8000)
                    op = {"start": s, "end": e, "gpid": gpid, "corr": corr, "kind": kind, "bytes": 0, "copy_kind": -1}
                    stream = rng.randint(1, 3)
                    dev = rng2.randrange(devices) if devices > 1 else 0
                    op["device"], op["stream"] = dev, stream
                    if kind == "k":
                        op["name"] = f"kern{rng.randint(0, 4)}"
                        kernel_rows.append(
                            (
                                s,
                                e,
                                dev,
                                1,
                                stream,
                                corr,
                                gpid,
                                sid(op["name"]),
                                sid("k"),
                                None,
                                0,
                                0,
                                32,
                                1,
                                1,
                                1,
                                128,
                                1,
                                1,
                                0,
                                0,
                                0,
                                0,
                                0,
                            )
                        )
                    elif kind == "m":
                        op["bytes"] = rng.randint(1, 1 << 20)
                        op["copy_kind"] = rng.choice([1, 2, 8])
                        memcpy_rows.append((s, e, dev, 1, stream, corr, gpid, op["bytes"], op["copy_kind"]))
                    else:
                        op["bytes"] = rng.randint(1, 1 << 16)
                        memset_rows.append((s, e, dev, 1, stream, corr, gpid, 0, op["bytes"]))
                    synth.ops.append(op)
                    t_end = max(t_end, e)
                corr += 1
                if rng.random() < 0.1:  # a nested driver call inside the runtime call, launching nothing
                    runtime_rows.append((t + 10, t + dur - 10, 1, tid, corr, sid("cuLaunchKernel"), 0))
                    synth.calls.append(
                        {"start": t + 10, "end": t + dur - 10, "tid": tid, "corr": corr, "name": "cuLaunchKernel"}
                    )
                    corr += 1
                t += dur
                if graphs and rng2.random() < 0.2:  # a CUDA graph launch
                    t += rng2.randint(0, 2000)
                    gdur = rng2.randint(300, 3000)
                    runtime_rows.append((t, t + gdur, 0, tid, corr, sid("cudaGraphLaunch_v10000"), 0))
                    synth.calls.append(
                        {"start": t, "end": t + gdur, "tid": tid, "corr": corr, "name": "cudaGraphLaunch_v10000"}
                    )
                    graph_id += 1
                    g0 = t + rng2.randint(100, 10000)
                    dev, stream = (rng2.randrange(devices) if devices > 1 else 0), 7
                    if graphs == "node":
                        s = g0
                        for node in range(rng2.randint(2, 4)):
                            e = s + rng2.randint(50, 3000)
                            name = f"graph_kern{node}"
                            kernel_rows.append(
                                (
                                    s,
                                    e,
                                    dev,
                                    1,
                                    stream,
                                    corr,
                                    gpid,
                                    sid(name),
                                    sid(name),
                                    None,
                                    0,
                                    0,
                                    32,
                                    1,
                                    1,
                                    1,
                                    128,
                                    1,
                                    1,
                                    0,
                                    0,
                                    0,
                                    0,
                                    0,
                                )
                            )
                            synth.ops.append(
                                {
                                    "start": s,
                                    "end": e,
                                    "gpid": gpid,
                                    "corr": corr,
                                    "kind": "k",
                                    "bytes": 0,
                                    "copy_kind": -1,
                                    "device": dev,
                                    "stream": stream,
                                    "name": name,
                                    "graph_node": 100 + node,
                                }
                            )
                            s = e + rng2.randint(0, 500)
                        t_end = max(t_end, s)
                    elif graphs == "graph":
                        e = g0 + rng2.randint(500, 9000)
                        graph_rows.append((g0, e, dev, 1, None, stream, corr, gpid, graph_id % 3, graph_id % 3))
                        synth.graph_execs.append(
                            {
                                "start": g0,
                                "end": e,
                                "gpid": gpid,
                                "corr": corr,
                                "graph_id": graph_id % 3,
                                "device": dev,
                                "stream": stream,
                            }
                        )
                        t_end = max(t_end, e)
                    corr += 1
                    t += gdur
                if syncs and rng2.random() < 0.15:  # a synchronizing call, maybe with its nested driver call
                    t += rng2.randint(0, 2000)
                    sdur = rng2.randint(500, 20000)
                    name = rng2.choice(SYNC_NAMES)
                    runtime_rows.append((t, t + sdur, 0, tid, corr, sid(name), 0))
                    synth.calls.append({"start": t, "end": t + sdur, "tid": tid, "corr": corr, "name": name})
                    if name == "cudaMemcpy_v3020":
                        s = t + rng2.randint(10, sdur // 2)
                        e = s + rng2.randint(1, sdur // 2)
                        nbytes = rng2.randint(1, 1 << 20)
                        memcpy_rows.append((s, e, 0, 1, 1, corr, gpid, nbytes, 2))
                        synth.ops.append(
                            {
                                "start": s,
                                "end": e,
                                "gpid": gpid,
                                "corr": corr,
                                "kind": "m",
                                "bytes": nbytes,
                                "copy_kind": 2,
                                "device": 0,
                                "stream": 1,
                            }
                        )
                    corr += 1
                    if name == "cudaStreamSynchronize_v3020" and rng2.random() < 0.5:
                        runtime_rows.append((t + 5, t + sdur - 5, 1, tid, corr, sid("cuStreamSynchronize"), 0))
                        synth.calls.append(
                            {
                                "start": t + 5,
                                "end": t + sdur - 5,
                                "tid": tid,
                                "corr": corr,
                                "name": "cuStreamSynchronize",
                            }
                        )
                        corr += 1
                    t += sdur
            thread_end = t
            t_end = max(t_end, t)

            # Nested push/pop ranges: a random tree over [0, thread_end].
            def tree(lo: int, hi: int, depth: int, tid: int = tid) -> None:
                if depth > 3 or hi - lo < 500:
                    return
                n = rng.randint(1, 4)
                cuts = sorted(rng.randint(lo, hi) for _ in range(2 * n))
                for a, b in zip(cuts[::2], cuts[1::2]):
                    if b <= a:
                        continue
                    dom = rng.choice([0, 1, 1])
                    name = rng.choice(NAMES)
                    registered = rng.random() < 0.8
                    nvtx_rows.append(
                        (
                            a,
                            b,
                            59,
                            None,
                            None,
                            None,
                            None if registered else name,
                            tid,
                            None,
                            sid(name) if registered else None,
                            dom,
                        )
                    )
                    tree(a, b, depth + 1)

            tree(0, thread_end, 0)
            # Start/end ranges, some ending on another thread, some never ending.
            for _ in range(rng.randint(0, 4)):
                a = rng.randint(0, thread_end)
                b = a + rng.randint(0, 50000)
                other = rng.choice(tids)
                end_tid = other if (other != tid and rng.random() < 0.4) else None
                end = None if rng.random() < 0.1 else b
                nvtx_rows.append(
                    (a, end, 60, None, None, None, None, tid, end_tid, sid(rng.choice(NAMES)), rng.choice([0, 1]))
                )
    # An unclosed push/pop range (program exited inside it).
    nvtx_rows.append((10, None, 59, None, None, None, None, global_tid(1000, 1000), None, sid("iteration"), 1))
    con.executemany(
        NVTX_SQL,
        nvtx_rows,
    )
    con.executemany(
        RUNTIME_SQL,
        runtime_rows,
    )
    con.executemany(
        KERNEL_SQL,
        kernel_rows,
    )
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start,end,deviceId,contextId,streamId,correlationId,globalPid,bytes,copyKind) VALUES (?,?,?,?,?,?,?,?,?)",
        memcpy_rows,
    )
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start,end,deviceId,contextId,streamId,correlationId,globalPid,value,bytes) VALUES (?,?,?,?,?,?,?,?,?)",
        memset_rows,
    )
    if graph_rows:
        con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?,?,?,?,?,?,?,?,?,?)", graph_rows)
    if graphs == "node":
        con.executemany(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = ? WHERE demangledName = ?",
            [(100 + k, sid(f"graph_kern{k}")) for k in range(4) if f"graph_kern{k}" in strings],
        )
    if extras:
        pids = sorted({r[7] & ~0xFFFFFF for r in nvtx_rows if r[7]})
        tids_all = sorted({r[7] for r in nvtx_rows if r[7]} | {r[3] for r in runtime_rows})
        con.executemany(
            "INSERT INTO ThreadNames VALUES (?,?,?)",
            [
                (sid("python" if (g & 0xFFFFFF) == ((g >> 24) & 0xFFFFFF) else f"worker{g & 0xFF}"), 10, g)
                for g in tids_all
            ],
        )
        con.executemany(
            "INSERT INTO PROCESSES VALUES (?,?,?)",
            [(g, (g >> 24) & 0xFFFFFF, f"python{k}") for k, g in enumerate(pids)],
        )
        con.executemany(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name) VALUES (0, ?, ?)",
            [(d, f"Synthetic GPU {d}") for d in range(devices)],
        )
    con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in strings.items()])
    con.executemany(
        "INSERT INTO EXPORT_META_DATA VALUES (?,?)",
        [("EXPORT_PRODUCT_VERSION", "synthetic"), ("EXPORT_SCHEMA_VERSION", "3.0.0")],
    )
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (t_end + 1000, t_end + 1000))
    con.commit()
    for rowid, start, end, etype, tid, end_tid, text, text_id, dom in con.execute(
        "SELECT rowid, start, end, eventType, globalTid, endGlobalTid, text, textId, domainId FROM NVTX_EVENTS WHERE eventType IN (59,60)"
    ):
        name = text if text is not None else next(s for s, i in strings.items() if i == text_id)
        synth.ranges.append(
            {
                "row": rowid,
                "start": start,
                "end": end,
                "tid": tid,
                "end_tid": end_tid,
                "style": etype,
                "domain": "nvtxsim" if dom else "",
                "name": name,
            }
        )
    con.close()
    return synth


# --------------------------------------------------------------------------- loops with GPU memory

MEMORY_DDL = """
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER, deviceId INTEGER, contextId INTEGER, address INTEGER,
    pc INTEGER, bytes INTEGER, memKind INTEGER, memoryOperationType INTEGER, name INTEGER, correlationId INTEGER, streamId INTEGER);
"""


@dataclass
class LoopPhase:
    """A phase of a synthetic loop: per-instance CPU time, GPU kernel time and transient GPU memory."""

    name: str
    cpu_ns: float
    gpu_ns: float = 0.0
    mem_bytes: int = 0
    per_iteration: int = 1  # instances per iteration


def make_loop_export(
    path: Path,
    phases: list[LoopPhase],
    *,
    iterations: int = 8,
    seed: int = 0,
    noise: float = 0.03,
    memory: bool = True,
    resident_bytes: int = 0,
    key: str = "iteration",
) -> None:
    """A loop of ``iterations`` key ranges, each holding ``phases`` one after another (nvtxsim domain).

    Each phase instance launches one kernel of ``gpu_ns`` (times jittered by ``noise``), allocates
    ``mem_bytes`` at its start and frees them at its end. ``resident_bytes`` are allocated before
    the loop and never freed; a pinned host allocation (not GPU memory) is added too. With
    ``memory=False`` the memory table is left out (a capture without --cuda-memory-usage)."""
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(DDL)
    if memory:
        con.executescript(MEMORY_DDL)
    pid = 4242
    gpid, tid = global_tid(pid, 0), global_tid(pid, pid)
    strings = {"nvtxsim": 1, "cudaLaunchKernel_v7000": 2, "kernel": 3, key: 4}
    for ph in phases:
        strings.setdefault(ph.name, len(strings) + 1)
    nvtx = [(0, None, 75, None, "nvtxsim", tid, None, 1)]
    calls, kernels, mem = [], [], []
    t, corr, addr = 1000, 1, 1 << 32

    def alloc(at: int, nbytes: int, kind: int = 2) -> int:
        nonlocal addr
        addr += 1 << 30
        mem.append((at, gpid, 0, 1, addr, 0, nbytes, kind, 0))
        return addr

    if resident_bytes:
        alloc(t, resident_bytes)
    alloc(t + 1, 1 << 30, kind=1)  # pinned host memory: must not count
    t += 10_000
    jitter = lambda v: max(int(v * (1 + rng.uniform(-noise, noise))), 0)  # noqa: E731
    for _ in range(iterations):
        it_start = t
        t += 500
        for ph in phases:
            for _ in range(ph.per_iteration):
                start, dur = t, max(jitter(ph.cpu_ns), 2000)
                end = start + dur
                nvtx.append((start, end, 59, None, None, tid, strings[ph.name], 1))
                if ph.mem_bytes:
                    a = alloc(start + 50, ph.mem_bytes)
                    mem.append((end - 50, gpid, 0, 1, a, 0, ph.mem_bytes, 2, 1))
                if ph.gpu_ns:
                    calls.append((start + 100, start + 600, 0, tid, corr, 2, 0))
                    k0 = start + 700
                    kernels.append(
                        (
                            k0,
                            k0 + max(jitter(ph.gpu_ns), 1),
                            0,
                            1,
                            7,
                            corr,
                            gpid,
                            3,
                            3,
                            None,
                            0,
                            0,
                            32,
                            1,
                            1,
                            1,
                            128,
                            1,
                            1,
                            0,
                            0,
                            0,
                            0,
                            0,
                        )
                    )
                    corr += 1
                t = end + 200
        nvtx.append((it_start, t, 59, None, None, tid, strings[key], 1))
        t += 1000
    con.executemany(
        NVTX_SHORT_SQL,
        nvtx,
    )
    con.executemany(
        RUNTIME_SQL,
        calls,
    )
    con.executemany(
        KERNEL_SQL,
        kernels,
    )
    if memory:
        con.executemany(
            "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start,globalPid,deviceId,contextId,address,pc,bytes,memKind,memoryOperationType) VALUES (?,?,?,?,?,?,?,?,?)",
            mem,
        )
    con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in strings.items()])
    con.executemany(
        "INSERT INTO EXPORT_META_DATA VALUES (?,?)",
        [("EXPORT_PRODUCT_VERSION", "synthetic"), ("EXPORT_SCHEMA_VERSION", "3.0.0")],
    )
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (t + 1000, t + 1000))
    con.commit()
    con.close()


# --------------------------------------------------------------------------- planted bottlenecks (findings)

PLANTED = {  # phase → the finding kind make_planted plants there (unattributed_gpu: outside every phase)
    "sim_step": "launch_bound",
    "render": "gpu_bound",
    "camera_readout": "pageable_copy",
    "reward": "sync",
    "reset": "cpu_bound",
    "observation": "phase_stalls",
    "policy_update": "other_thread_gpu",
}
OUTLIER_ITERATIONS = (7, 19, 23)  # observation stalls 40 ms there: phase_stalls (a phase's own stall)
SLOW_ITERATIONS = (11, 17)  # reset takes 4 × its 3 ms there: an outlier iteration, no phase's stall
WARM_UP_LOAD_NS = 30_000_000  # with warm_up=True: sim_step's first call loads a CUDA module this long
SYNC_DDL = """CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL);"""


OSRT_DDL = """CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER,
callchainId INTEGER);"""
OSRT_SQL = "INSERT INTO OSRT_API VALUES (?,?,27,?,0,?,0,0,NULL)"


def os_call(state: dict, name: str, dur: int, tid: int, sid) -> tuple[int, int, int, int]:
    """One traced OS call (an OSRT_API row) of ``dur`` ns on thread ``tid`` at the synthetic clock, which it advances."""
    s = state["t"]
    state["t"] = s + dur + 500
    return (s, s + dur, tid, sid(name))


def make_planted(
    path: Path, *, clean: bool = False, iterations: int = 30, update_every: int = 10, warm_up: bool = False
) -> None:
    """An Isaac-Lab-shaped loop with one known problem per phase (``clean``: none of them).

    Per iteration: sim_step (300 tiny kernels: launch-bound), render (one 3 ms kernel:
    GPU-bound), camera_readout (8 MiB D→H into pageable memory), policy, reward (a 4-byte
    .item() copy and a 1.5 ms cudaStreamSynchronize), reset (3 ms of Python, no GPU work),
    observation (40 ms more in OUTLIER_ITERATIONS: stalls), reset 4 × longer in SLOW_ITERATIONS
    (outlier iterations), save (a 0.3 ms fsync: an OS wait, OSRT_API); ``warm_up``: sim_step's first call loads a
    CUDA module (WARM_UP_LOAD_NS). Every ``update_every`` iterations a
    policy_update whose backward kernels come from the autograd thread; 200 evaluation kernels
    between two iterations, outside every range. Times are ns on one timeline."""
    con = sqlite3.connect(path)
    con.executescript(DDL + EXTRA_DDL)
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        return strings.setdefault(s, len(strings) + 1)

    pid = 2000
    gpid, main, autograd = global_tid(pid, 0), global_tid(pid, pid), global_tid(pid, pid + 1)
    nvtx, runtime, kernels, memcpys, syncs, osrt = [], [], [], [], [], []
    con.executescript(SYNC_DDL + OSRT_DDL)
    state = {"t": 1_000_000, "gpu": 0, "corr": 1}

    def call(name: str, dur: int, tid: int = main, at: int | None = None) -> tuple[int, int, int]:
        s = state["t"] if at is None else at
        c = state["corr"]
        state["corr"] += 1
        runtime.append((s, s + dur, 0, tid, c, sid(name), 0))
        if name.startswith("cudaStreamSynchronize"):  # CUPTI's synchronization record of the call
            syncs.append((s + 100, s + dur - 100, 0, 1, 7, c, gpid, 3))
        if at is None:
            state["t"] = s + dur + 500
        return s, s + dur, c

    def kernel(name: str, gpu_ns: int, cpu_ns: int = 4_000, tid: int = main, at: int | None = None) -> None:
        s, e, c = call("cudaLaunchKernel_v7000", cpu_ns, tid, at)
        g0 = max(e + 1_000, state["gpu"])
        state["gpu"] = g0 + gpu_ns
        kernels.append(
            (g0, g0 + gpu_ns, 0, 1, 7, c, gpid, sid(name), sid(name), None, 0, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 0)
        )

    def copy(nbytes: int, kind: int, pageable: bool, cpu_ns: int, gpu_ns: int) -> None:
        s, e, c = call("cudaMemcpyAsync_v3020", cpu_ns)
        g0 = max(s + 2_000, state["gpu"])
        state["gpu"] = g0 + gpu_ns
        host = 0 if pageable else 1
        src, dst = (host, 2) if kind == 1 else (2, host)
        memcpys.append((g0, g0 + gpu_ns, 0, 1, 7, c, gpid, nbytes, kind, None, src, dst))

    def phase(name: str, body) -> None:
        s = state["t"]
        state["t"] += 2_000
        body()
        state["t"] += 2_000
        nvtx.append((s, state["t"], 59, None, None, None, None, main, None, sid(name), 1))

    def cpu(ns: int) -> None:
        state["t"] += ns

    for i in range(iterations):
        if i == iterations // 2 and not clean:
            for _ in range(200):  # an evaluation between iterations, outside every range
                kernel("eval_kernel", 100_000)
        it_start = state["t"]
        if i == 0 and warm_up:
            phase("sim_step", lambda: (call("cuModuleLoadData", WARM_UP_LOAD_NS), kernel("physics_kernel", 2_000)))
        else:
            phase("sim_step", lambda: [kernel("physics_kernel", 2_000, 5_000) for _ in range(300 if not clean else 10)])
        phase("render", lambda: kernel("render_gemm", 3_000_000 if not clean else 300_000, 10_000))
        phase(
            "camera_readout",
            lambda: copy(
                8 << 20, 2, not clean, 2_000_000 if not clean else 10_000, 1_500_000 if not clean else 400_000
            ),
        )

        def reward() -> None:
            kernel("reward_kernel", 5_000)
            if not clean:
                copy(4, 2, True, 20_000, 2_000)
                call("cudaStreamSynchronize_v3020", 1_500_000)

        phase("policy", lambda: [kernel("mlp_gemm", 20_000, 8_000) for _ in range(10)])
        phase("reward", reward)
        reset_ns = (12_000_000 if i in SLOW_ITERATIONS else 3_000_000) if not clean else 50_000
        phase("reset", lambda ns=reset_ns: (cpu(ns), kernel("reset_kernel", 5_000)))
        phase(
            "observation",
            lambda i=i: (
                cpu(40_000_000 if (i in OUTLIER_ITERATIONS and not clean) else 50_000),
                kernel("obs_kernel", 10_000),
            ),
        )
        phase(
            "save",
            lambda: osrt.append(
                os_call(state, "fsync" if not clean else "write", 300_000 if not clean else 5_000, main, sid)
            ),
        )
        nvtx.append((it_start, state["t"] + 1_000, 59, None, None, None, None, main, None, sid("iteration"), 1))
        state["t"] += 3_000
        if (i + 1) % update_every == 0:

            def update() -> None:
                for _ in range(20):
                    kernel("forward_gemm", 30_000, 6_000)
                t0 = state["t"]
                for k in range(100):  # backward() on autograd's thread, while policy_update is open
                    kernel(
                        "backward_gemm",
                        50_000,
                        5_000,
                        autograd if not clean else main,
                        at=t0 + k * 6_000 if not clean else None,
                    )
                cpu(700_000 if not clean else 0)

            phase("policy_update", update)
            state["t"] += 3_000
    nvtx.append((0, None, 75, None, None, None, "nvtxsim", main, None, None, 1))
    con.executemany(
        NVTX_SQL,
        nvtx,
    )
    con.executemany(
        RUNTIME_SQL,
        runtime,
    )
    con.executemany(
        KERNEL_SQL,
        kernels,
    )
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start,end,deviceId,contextId,streamId,correlationId,globalPid,bytes,copyKind,deprecatedSrcId,srcKind,dstKind) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        memcpys,
    )
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?)", syncs)
    con.executemany(OSRT_SQL, osrt)
    con.executemany(
        "INSERT INTO ThreadNames VALUES (?,?,?)", [(sid("python3"), 10, main), (sid("pt_autograd_0"), 10, autograd)]
    )
    con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in strings.items()])
    con.executemany(
        "INSERT INTO EXPORT_META_DATA VALUES (?,?)",
        [("EXPORT_PRODUCT_VERSION", "synthetic"), ("EXPORT_SCHEMA_VERSION", "3.0.0")],
    )
    end = max(state["t"], state["gpu"]) + 1_000
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (end, end))
    con.commit()
    con.close()


# --------------------------------------------------------------------------- many distinct names (issue 13)

NAMES_API = {"launch": "cudaLaunchKernel_v7000", "copy": "cudaMemcpyAsync_v3020", "sync": "cudaStreamSynchronize_v3020"}


def make_names_export(path: Path, names: int) -> None:
    """An export with ``2 × names`` distinct range names (``step_i``, ``render_i``) plus ``iteration``."""
    con = sqlite3.connect(path)
    con.executescript(DDL)
    pid = 777
    gpid = global_tid(pid, 0)
    tids = (global_tid(pid, pid), global_tid(pid, pid + 1))
    strings = {"nvtxsim": 1, "iteration": 2, "kernel": 3, **{name: 4 + k for k, name in enumerate(NAMES_API.values())}}
    nvtx = [(0, None, 75, None, "nvtxsim", tids[0], None, 1)]
    calls, kernels, copies = [], [], []
    t, corr = 1_000, 1
    for i in range(names):
        it0 = t
        for tid, label in zip(tids, ("step", "render")):
            name = f"{label}_{i}"
            strings[name] = len(strings) + 1
            s = it0 + 100
            nvtx.append((s, s + 5_000, 59, None, None, tid, strings[name], 1))
            calls.append((s + 100, s + 600, 0, tid, corr, strings[NAMES_API["launch"]], 0))
            kernels.append(
                (s + 700, s + 2_700, 0, 1, 7, corr, gpid, 3, 3, None, 0, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 0)
            )
            corr += 1
            if i % 10 == 0 and label == "step":
                calls.append((s + 1_000, s + 1_500, 0, tid, corr, strings[NAMES_API["copy"]], 0))
                copies.append(
                    (s + 2_800, s + 3_300, 0, 1, 7, corr, gpid, 4096, 1, None, 0, 2, 0, 1, 0, 1, None, None, None)
                )
                corr += 1
                calls.append((s + 1_600, s + 3_400, 0, tid, corr, strings[NAMES_API["sync"]], 0))
                corr += 1
        t = it0 + 6_000
        nvtx.append((it0, t, 59, None, None, tids[0], strings["iteration"], 1))
        t += 500
    con.executemany(
        NVTX_SHORT_SQL,
        nvtx,
    )
    con.executemany(
        RUNTIME_SQL,
        calls,
    )
    con.executemany(
        KERNEL_SQL,
        kernels,
    )
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", copies)
    con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in strings.items()])
    con.executemany(
        "INSERT INTO EXPORT_META_DATA VALUES (?,?)",
        [("EXPORT_PRODUCT_VERSION", "synthetic"), ("EXPORT_SCHEMA_VERSION", "3.0.0")],
    )
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (t + 1_000, t + 1_000))
    con.commit()
    con.close()


# --------------------------------------------------------------------------- CUDA loops built call by call (findings variants)


class CudaLoop:
    """A one-process CUDA timeline built call by call, for findings on shapes of any program.

    ``phase(name, body)`` wraps ``body()`` in a push/pop range of the current thread; ``kernel``,
    ``copy`` and ``sync`` add a CUDA call (and its GPU op) at the current CPU time, ``cpu`` adds
    Python time. The GPU runs one stream: an op starts after the previous one ends. A blocking
    call (a sync, a copy into pageable memory D→H) waits for the GPU to drain, as CUDA does.
    ``cuda=False`` writes no CUPTI table (a CPU-only capture). Times are ns."""

    def __init__(self, pid: int = 3000, *, cuda: bool = True) -> None:
        self.pid, self.cuda = pid, cuda
        self.gpid, self.main = global_tid(pid, 0), global_tid(pid, pid)
        self.tid = self.main
        self.t, self.gpu, self.corr = 1_000_000, 0, 1
        self.strings: dict[str, int] = {}
        self.nvtx: list[tuple] = []
        self.runtime: list[tuple] = []
        self.kernels: list[tuple] = []
        self.memcpys: list[tuple] = []
        self.syncs: list[tuple] = []
        self.osrt: list[tuple] | None = None  # OSRT_API rows once an os_call was made
        self.thread_names = {self.main: "python3"}
        self.domains: dict[str, int] = {}

    def sid(self, s: str) -> int:
        return self.strings.setdefault(s, len(self.strings) + 1)

    def call(self, name: str, dur: int) -> tuple[int, int, int]:
        s, c = self.t, self.corr
        self.corr += 1
        self.runtime.append((s, s + dur, 0, self.tid, c, self.sid(name), 0))
        self.t = s + dur + 500
        return s, s + dur, c

    def kernel(self, name: str, gpu_ns: int, cpu_ns: int = 4_000) -> None:
        _, e, c = self.call("cudaLaunchKernel_v7000", cpu_ns)
        g0 = max(e + 1_000, self.gpu)
        self.gpu = g0 + gpu_ns
        self.kernels.append(
            (
                g0,
                self.gpu,
                0,
                1,
                7,
                c,
                self.gpid,
                self.sid(name),
                self.sid(name),
                None,
                0,
                0,
                32,
                1,
                1,
                1,
                128,
                1,
                1,
                0,
                0,
                0,
                0,
                0,
            )
        )

    def drain(self, name: str, cpu_ns: int = 2_000) -> tuple[int, int, int]:
        """A call that returns when the GPU has finished everything queued (plus ``cpu_ns``)."""
        return self.call(name, max(self.gpu - self.t, 0) + cpu_ns)

    def copy(
        self,
        nbytes: int,
        kind: int,
        pageable: bool,
        gpu_ns: int,
        *,
        api: str = "cudaMemcpyAsync_v3020",
        cpu_ns: int = 5_000,
    ) -> None:
        """An H→D (kind 1) or D→H (2) copy; into/out of pageable memory (or a synchronous ``cudaMemcpy``) it blocks."""
        blocking = (pageable and kind == 2) or not api.startswith("cudaMemcpyAsync")
        s, c = self.t, self.corr
        g0 = max(s + 2_000, self.gpu)
        self.gpu = g0 + gpu_ns
        if blocking or (pageable and kind == 1):
            s, e, c = self.call(api, max(self.gpu - s, 0) + cpu_ns)
        else:
            s, e, c = self.call(api, cpu_ns)
        host = 0 if pageable else 1
        src, dst = (host, 2) if kind == 1 else (2, host)
        self.memcpys.append((g0, g0 + gpu_ns, 0, 1, 7, c, self.gpid, nbytes, kind, None, src, dst))

    def sync(self, name: str = "cudaStreamSynchronize_v3020") -> None:
        s, e, c = self.drain(name)
        sync_type = {"cudaStreamSynchronize": 3, "cudaDeviceSynchronize": 4, "cudaEventSynchronize": 1}.get(
            name.split("_v")[0]
        )
        if sync_type:
            self.syncs.append((s + 100, e - 100, 0, 1, 7, c, self.gpid, sync_type))

    def item(self) -> None:
        """torch's ``.item()`` / ``nonzero()``: a 4-byte D→H copy into pageable memory, then a stream sync."""
        self.copy(4, 2, True, 2_000)
        self.sync()

    def cpu(self, ns: int) -> None:
        self.t += ns

    def os_call(self, name: str, dur: int, *, at: int | None = None) -> None:
        """A traced OS call (an OSRT_API row, nsys -t osrt) of ``dur`` ns on the current thread: at the current
        time (which it advances), or at ``at`` (inside a CUDA call made just before, say; the clock is kept)."""
        if self.osrt is None:
            self.osrt = []
        if at is not None:
            self.osrt.append((at, at + dur, self.tid, self.sid(name)))
            return
        self.osrt.append((self.t, self.t + dur, self.tid, self.sid(name)))
        self.t += dur + 500

    def phase(self, name: str, body=None, *, domain: str = "nvtxsim") -> None:
        """A push/pop range ``name`` around ``body()`` in NVTX domain ``domain``."""
        dom = self.domains.setdefault(domain, len(self.domains) + 1)
        s = self.t
        self.t += 2_000
        if body is not None:
            body()
        self.t += 2_000
        self.nvtx.append((s, self.t, 59, None, None, None, None, self.tid, None, self.sid(name), dom))

    def on_thread(self, tid_offset: int, name: str, at: int, body) -> None:
        """Run ``body`` on another thread of the process from time ``at`` (the main thread's clock is kept)."""
        saved = self.tid, self.t
        self.tid, self.t = global_tid(self.pid, self.pid + tid_offset), at
        self.thread_names[self.tid] = name
        body()
        self.tid, self.t = saved

    def write(self, path: Path) -> None:
        con = sqlite3.connect(path)
        ddl = DDL if self.cuda else DDL.split("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME")[0]
        con.executescript(ddl + EXTRA_DDL + (SYNC_DDL if self.cuda else ""))
        nvtx = self.nvtx + [
            (0, None, 75, None, None, None, d, self.main, None, None, i) for d, i in self.domains.items()
        ]
        con.executemany(
            NVTX_SQL,
            nvtx,
        )
        if self.cuda:
            con.executemany(
                RUNTIME_SQL,
                self.runtime,
            )
            con.executemany(
                KERNEL_SQL,
                self.kernels,
            )
            con.executemany(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start,end,deviceId,contextId,streamId,correlationId,globalPid,bytes,copyKind,deprecatedSrcId,srcKind,dstKind) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                self.memcpys,
            )
            con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?)", self.syncs)
        if self.osrt is not None:
            con.executescript(OSRT_DDL)
            con.executemany(OSRT_SQL, self.osrt)
        con.executemany(
            "INSERT INTO ThreadNames VALUES (?,?,?)", [(self.sid(n), 10, t) for t, n in self.thread_names.items()]
        )
        con.executemany("INSERT INTO StringIds VALUES (?,?)", [(i, s) for s, i in self.strings.items()])
        con.executemany(
            "INSERT INTO EXPORT_META_DATA VALUES (?,?)",
            [("EXPORT_PRODUCT_VERSION", "synthetic"), ("EXPORT_SCHEMA_VERSION", "3.0.0")],
        )
        end = max(self.t, self.gpu) + 1_000
        con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, 0, ?)", (end, end))
        con.commit()
        con.close()
