#!/usr/bin/env python3
"""cupti-python, second look: what one record costs before any field is read (a callback that only counts),
and whether EXTERNAL_CORRELATION records come with the RUNTIME or DRIVER kinds enabled."""

import json
import time

import torch
from cupti import cupti

n = {"records": 0, "ext": 0, "kernels": 0, "other": {}}


def req():
    return 8 * 1024 * 1024, 0


def done_count(acts):
    n["records"] += len(acts)


def done_read(acts):
    for a in acts:
        n["records"] += 1
        k = a.kind
        if k == cupti.ActivityKind.EXTERNAL_CORRELATION:
            n["ext"] += 1
        elif k == cupti.ActivityKind.CONCURRENT_KERNEL:
            n["kernels"] += 1
        else:
            n["other"][str(k)] = n["other"].get(str(k), 0) + 1


x = torch.zeros(1024, device="cuda")


def work(push):
    for ph in range(8):
        if push:
            cupti.activity_push_external_correlation_id(cupti.ExternalCorrelationKind.CUSTOM0, ph + 1)
        for _ in range(625):
            x.add_(1.0)
        if push:
            cupti.activity_pop_external_correlation_id(cupti.ExternalCorrelationKind.CUSTOM0)


for _ in range(3):
    work(False)
torch.cuda.synchronize()
for mode, cb, kinds in (
    ("count_only", done_count, [cupti.ActivityKind.CONCURRENT_KERNEL]),
    ("read_kind", done_read, [cupti.ActivityKind.CONCURRENT_KERNEL]),
    (
        "ext+runtime",
        done_read,
        [cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.EXTERNAL_CORRELATION, cupti.ActivityKind.RUNTIME],
    ),
    (
        "ext+driver",
        done_read,
        [cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.EXTERNAL_CORRELATION, cupti.ActivityKind.DRIVER],
    ),
):
    n.update(records=0, ext=0, kernels=0, other={})
    cupti.activity_register_callbacks(req, cb)
    for k in kinds:
        cupti.activity_enable(k)
    t0 = time.perf_counter()
    for _ in range(4):
        work(True)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    cupti.activity_flush_all(1)
    t2 = time.perf_counter()
    for k in kinds:
        cupti.activity_disable(k)
    print(
        "probe2: "
        + json.dumps(
            {
                "mode": mode,
                "loop_ms_per_it": round((t1 - t0) / 4 * 1e3, 2),
                "flush_ms": round((t2 - t1) * 1e3, 1),
                "flush_us_per_record": round((t2 - t1) / max(n["records"], 1) * 1e6, 3),
                **n,
            }
        ),
        flush=True,
    )
