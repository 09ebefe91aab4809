#!/usr/bin/env python3
"""Live CUPTI (issue 25) on a real GPU: does each piece the CUPTI mode relies on hold? One line of JSON per check.

    probe     libcupti found and loaded (which file, its version); buffers delivered through the ctypes callbacks;
              every buffer cut by ``parse_buffer`` agrees with CUPTI's own walk (cuptiActivityGetNextRecord) kind by
              kind; the marker memsets come back with their value and a correlation id; the kernels launched between
              consecutive markers (1, 2, 3, 5, ... of them; and 7 from another thread) are exactly those whose
              correlation id lies between the markers'; cost per launch (µs, CPU) with CUPTI off, with the kinds the
              mode records, and with RUNTIME + EXTERNAL_CORRELATION added (the external-id alternative: how many of
              its external-correlation records carry our pushed ids); cost per marker; a clean detach at the end
    layouts   the record layouts in cupti_records.LAYOUTS against the installed cupti-python's dtypes

From the checkout root: ``python3 scripts/gpu/live_cupti_probe.py probe`` (GPU only).
"""

from __future__ import annotations

import ctypes
import json
import statistics
import struct
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from nvtxsim.emit.live import cupti_lib  # noqa: E402
from nvtxsim.emit.live import cupti_records as recs  # noqa: E402

GAPS = [1, 2, 3, 5, 8, 13, 21, 34] * 3
OTHER = 7  # kernels another thread launches between two markers
KINDS = (recs.CONCURRENT_KERNEL, recs.MEMCPY, recs.MEMSET)
EXT = (recs.RUNTIME, recs.EXTERNAL_CORRELATION)


def say(**kw: object) -> None:
    print("live_cupti_probe: " + json.dumps(kw, default=str), flush=True)


def walk(lib: cupti_lib.CuptiLib, raw: bytes) -> tuple[dict[int, int], list[tuple[int, int, int]]]:
    """CUPTI's own walk of a buffer: records per kind, and (value, bytes, corr) of each memset."""
    mem = ctypes.create_string_buffer(raw, len(raw))
    kinds: dict[int, int] = {}
    memsets = []
    cols = recs.LAYOUTS[recs.MEMSET][1]
    for kind, addr in lib.records(ctypes.addressof(mem), len(raw)):
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == recs.MEMSET:
            rec = ctypes.string_at(addr, recs.LAYOUTS[recs.MEMSET][0])
            memsets.append(
                (
                    struct.unpack_from("<I", rec, cols["value"][0])[0],
                    struct.unpack_from("<Q", rec, cols["bytes"][0])[0],
                    struct.unpack_from("<I", rec, cols["corr"][0])[0],
                )
            )
    return kinds, memsets


def collect(lib: cupti_lib.CuptiLib, raws: list[bytes]) -> recs.Ops:
    """All buffers so far, parsed; and checked against CUPTI's walk (one line)."""
    lib.flush_all(True)
    ops = recs.Ops()
    walked: dict[int, int] = {}
    memsets: list = []
    unreadable = 0
    for raw in list(raws):
        got = recs.parse_buffer(raw)
        if got is None:
            unreadable += 1
            got = recs.parse_buffer(cupti_lib.rewalk(raw, lib, recs.LAYOUTS)) or recs.Ops()
        ops.merge(got)
        k, m = walk(lib, raw)
        for kind, n in k.items():
            walked[kind] = walked.get(kind, 0) + n
        memsets.extend(m)
    raws.clear()
    corr = ops.columns()[0]
    say(
        step="correlation-ids",
        ops=int(corr.size),
        distinct=int(np.unique(corr).size),
        zero=int((corr == 0).sum()),
        lowest=int(corr.min()) if corr.size else None,
        highest=int(corr.max()) if corr.size else None,
        marker_corrs=sorted(ops.tickets.values())[:4],
    )
    say(
        step="parse",
        buffers_unreadable=unreadable,
        kinds_parsed=ops.kinds,
        kinds_cupti_walk=walked,
        agree=ops.kinds == walked,
        memsets_sample=[(hex(v), b, c) for v, b, c in memsets[:3]],
    )
    return ops


def attribution(lib: cupti_lib.CuptiLib, raws: list[bytes], torch: object, extra: tuple = ()) -> None:
    """Markers around 1, 2, 3, 5, ... kernels, then around 7 of another thread; ``extra`` kinds recorded too."""
    marker = cupti_lib.MemsetMarker(torch)
    x = torch.zeros(8, device="cuda")  # type: ignore[attr-defined]
    y = torch.zeros(8, device="cuda")  # type: ignore[attr-defined]
    torch.cuda.synchronize()  # type: ignore[attr-defined]
    kinds = KINDS + extra
    say(step="attribution", kinds=kinds)
    for k in kinds:
        lib.enable(k)
    tickets, t = [], 0x4E560000
    for gap in GAPS:
        rc = marker(t)
        if rc:
            say(step="markers", ok=False, why=f"cuMemsetD32Async returned {rc}")
            return
        tickets.append(t)
        t += 1
        for _ in range(gap):
            x.add_(1.0)
    marker(t)
    tickets.append(t)
    marker(t + 1)
    th = threading.Thread(target=lambda: [y.add_(1.0) for _ in range(OTHER)])
    th.start()
    th.join()
    marker(t + 2)
    torch.cuda.synchronize()  # type: ignore[attr-defined]
    for k in kinds:
        lib.disable(k)
    ops = collect(lib, raws)
    placed = tickets + [t + 1, t + 2]
    back = {v: ops.tickets[v] for v in placed if v in ops.tickets}
    by = "value"
    if len(back) < len(placed) and len(ops.marks) == len(placed):
        back, by = dict(zip(placed, sorted(ops.marks))), "call order (the values did not come back)"
    say(
        step="markers",
        placed=len(placed),
        by_value=len(back) if by == "value" else 0,
        marks=len(ops.marks),
        paired_by=by,
    )
    if len(back) < len(placed):
        say(step="order", ok=False, why="markers missing: attribution cannot be checked")
        return
    spans = [(f"g{i}", back[a], back[b]) for i, (a, b) in enumerate(zip(tickets, tickets[1:]))]
    spans.append(("other", back[t + 1], back[t + 2]))
    busy = recs.attribute(spans, ops)
    got = [busy[f"g{i}"].kernels for i in range(len(GAPS))]
    say(step="order", kernels_between_markers=got, wanted=GAPS, ok=got == GAPS)
    say(step="other-thread", kernels=busy["other"].kernels, wanted=OTHER, ok=busy["other"].kernels == OTHER)
    corrs = sorted(back[v] for v in placed)
    say(step="corr-monotonic", ok=corrs == [back[v] for v in placed])


def cost(lib: cupti_lib.CuptiLib, raws: list[bytes], torch: object) -> None:
    """µs per launch (CPU, 2000 launches, 5 rounds interleaved, median) per configuration; µs per marker."""
    x = torch.zeros(8, device="cuda")  # type: ignore[attr-defined]
    marker = cupti_lib.MemsetMarker(torch)
    configs = {"off": (), "kinds": KINDS, "kinds+runtime+extcorr": KINDS + EXT}
    us: dict[str, list[float]] = {c: [] for c in configs}
    mark_us: list[float] = []
    pushed = 0
    for rnd in range(5):
        for name, kinds in configs.items():
            for k in kinds:
                lib.enable(k)
            torch.cuda.synchronize()  # type: ignore[attr-defined]
            ext = recs.EXTERNAL_CORRELATION in kinds
            t0 = time.perf_counter()
            for i in range(20):
                if ext:
                    lib.push(1000 + rnd * 100 + i)
                    pushed += 1
                for _ in range(100):
                    x.add_(1.0)
                if ext:
                    lib.pop()
            us[name].append((time.perf_counter() - t0) / 2000 * 1e6)
            torch.cuda.synchronize()  # type: ignore[attr-defined]
            for k in kinds:
                lib.disable(k)
        t0 = time.perf_counter()
        for i in range(200):
            marker(0x4E570000 + i)
        mark_us.append((time.perf_counter() - t0) / 200 * 1e6)
    torch.cuda.synchronize()  # type: ignore[attr-defined]
    ops = collect(lib, raws)
    base = statistics.median(us["off"])
    for name, values in us.items():
        med = statistics.median(values)
        say(
            step="cost-per-launch",
            config=name,
            us=round(med, 3),
            over_off_us=round(med - base, 3),
            rounds=[round(v, 3) for v in values],
        )
    say(step="cost-per-marker", us=round(statistics.median(mark_us), 3), note="CUPTI kinds off while timed")
    ours = {e for e in ops.external.values() if 1000 <= e < 2000}
    joined = sum(1 for c in ops.columns()[0].tolist() if c in ops.external)
    say(step="external-ids", pushed=pushed, distinct_ids_back=len(ours), kernels_with_an_external_id=joined)


def probe() -> int:
    before = cupti_lib._loaded("libcupti.so")
    import torch

    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    path = cupti_lib.find_library()
    say(step="env", libcupti=path, loaded_before_torch=before, loaded_after_torch=cupti_lib._loaded("libcupti.so"))
    if not path:
        say(step="env", ok=False, why="no libcupti found")
        return 1
    lib = cupti_lib.CuptiLib(path)
    say(step="env", cupti_api_version=lib.version(), torch=torch.__version__, cuda=torch.version.cuda)
    raws: list[bytes] = []
    lib.register(raws.append)
    steps = (
        lambda: attribution(lib, raws, torch),
        lambda: attribution(lib, raws, torch, (recs.RUNTIME,)),
        lambda: cost(lib, raws, torch),
    )
    for i, step in enumerate(steps):
        try:
            step()
        except Exception as exc:
            say(step=f"step {i}", ok=False, error=f"{type(exc).__name__}: {exc}")
    for k in KINDS + EXT:
        try:
            lib.disable(k)
        except Exception:
            pass
    lib.flush_all(True)
    lib.finalize()
    say(step="detached", ok=True)
    return 0


def layouts() -> int:
    try:
        from cupti import cupti  # type: ignore[import-not-found, unused-ignore]
    except Exception as exc:
        say(step="layouts", cupti_python=None, error=f"{type(exc).__name__}: {exc}")
        return 0
    theirs = recs.layouts(cupti)
    diff = {k: (recs.LAYOUTS[k], theirs[k]) for k in recs.LAYOUTS if theirs[k] != recs.LAYOUTS[k]}
    say(step="layouts", same=not diff, differences=diff)
    return 0


if __name__ == "__main__":
    sys.exit({"probe": probe, "layouts": layouts}[sys.argv[1] if len(sys.argv) > 1 else "probe"]())
