#!/usr/bin/env python3
"""What NVIDIA's cupti-python costs and delivers on this host, before live GPU timing relies on it.

Measures, in one process and interleaved (blocks of iterations with each configuration in turn):
  off        no CUPTI activity
  kernels    CONCURRENT_KERNEL + MEMCPY + MEMSET records
  extcorr    the same + EXTERNAL_CORRELATION, an external id pushed/popped around each of 8 phases
  runtime    the same as kernels + RUNTIME records of the launch/copy calls only (activity_enable_runtime_api)
on a loop of LAUNCHES tiny kernels per iteration split into 8 phases, and for each: ms per iteration, records
per iteration, the Python callback's time per record, dropped records, and whether every kernel of a phase
came back with that phase's external id. Also tries the same under nsys (--under-nsys) to see what a second
CUPTI client meets. Prints JSON lines ``probe: {...}``.

    python3 scripts/gpu/probes/cupti_probe.py [--launches 5000] [--iterations 30] [--block 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

import torch


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--launches", type=int, default=5000)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--block", type=int, default=5)
    p.add_argument("--autograd", action="store_true", help="also run a backward() (autograd-thread launches)")
    return p.parse_args()


def say(**kw: object) -> None:
    print("probe: " + json.dumps(kw, default=str), flush=True)


class Collector:
    """Buffers from CUPTI, counted and attributed in the completion callback (a CUPTI thread)."""

    def __init__(self, cupti: object) -> None:
        self.c = cupti
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.records = 0
        self.kernels = 0
        self.by_kind: dict[str, int] = {}
        self.ext: dict[int, int] = {}  # correlation id -> external id
        self.kernel_corr: list[tuple[int, int, int]] = []  # (correlation id, start, end)
        self.callback_s = 0.0
        self.buffers = 0

    def requested(self) -> tuple[int, int]:
        return 8 * 1024 * 1024, 0

    def completed(self, activities: list) -> None:
        t0 = time.perf_counter()
        c = self.c
        k_kernel, k_ext = c.ActivityKind.CONCURRENT_KERNEL, c.ActivityKind.EXTERNAL_CORRELATION
        with self.lock:
            self.buffers += 1
            for a in activities:
                self.records += 1
                kind = a.kind
                if kind == k_kernel:
                    self.kernels += 1
                    self.kernel_corr.append((a.correlation_id, a.start, a.end))
                elif kind == k_ext:
                    self.ext[a.correlation_id] = a.external_id
                else:
                    name = str(kind)
                    self.by_kind[name] = self.by_kind.get(name, 0) + 1
            self.callback_s += time.perf_counter() - t0


def main() -> int:
    args = _args()
    say(step="env", torch=torch.__version__, cuda=torch.version.cuda, gpu=torch.cuda.get_device_name())
    try:
        from cupti import cupti
    except Exception as exc:  # noqa: BLE001 - the probe reports whatever happens
        say(step="import", ok=False, error=f"{type(exc).__name__}: {exc}")
        return 1
    say(
        step="import",
        ok=True,
        version=getattr(cupti, "__version__", None),
        cupti_version=_safe(getattr(cupti, "get_version", lambda: None)),
    )
    col = Collector(cupti)
    try:
        cupti.activity_register_callbacks(col.requested, col.completed)
    except Exception as exc:  # noqa: BLE001
        say(step="register", ok=False, error=f"{type(exc).__name__}: {exc}")
        return 1
    x = torch.zeros(1024, device="cuda")
    net = torch.nn.Linear(256, 256).cuda()
    inp = torch.randn(512, 256, device="cuda")
    per_phase = max(args.launches // 8, 1)
    ext_kind = cupti.ExternalCorrelationKind.CUSTOM0

    def iteration(push: bool) -> None:
        for ph in range(8):
            if push:
                cupti.activity_push_external_correlation_id(ext_kind, ph + 1)
            for _ in range(per_phase):
                x.add_(1.0)
            if push:
                cupti.activity_pop_external_correlation_id(ext_kind)
        if args.autograd:
            net(inp).sum().backward()

    kinds = {
        "kernels": [cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET],
    }
    kinds["extcorr"] = kinds["kernels"] + [cupti.ActivityKind.EXTERNAL_CORRELATION]
    kinds["runtime"] = kinds["kernels"]
    results: dict[str, dict[str, list[float]]] = {}
    for _ in range(3):
        iteration(False)
    torch.cuda.synchronize()
    configs = ["off", "kernels", "extcorr", "runtime"]
    for rnd in range(max(args.iterations // args.block, 1)):
        for cfg in configs:
            enabled = _enable(cupti, kinds.get(cfg, []), runtime=cfg == "runtime")
            col.reset()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.block):
                iteration(cfg == "extcorr")
            torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / args.block * 1e3
            t_flush = time.perf_counter()
            if enabled:
                cupti.activity_flush_all(1)
            flush_ms = (time.perf_counter() - t_flush) * 1e3
            _disable(cupti, kinds.get(cfg, []), runtime=cfg == "runtime")
            r = results.setdefault(cfg, {"ms": [], "records": [], "cb_us_per_record": [], "flush_ms": []})
            r["ms"].append(round(dt, 3))
            r["records"].append(col.records / args.block)
            r["cb_us_per_record"].append(round(col.callback_s / max(col.records, 1) * 1e6, 3))
            r["flush_ms"].append(round(flush_ms, 2))
            if cfg == "extcorr" and rnd == 0:
                attributed = sum(1 for cid, _, _ in col.kernel_corr if cid in col.ext)
                say(
                    step="extcorr-attribution",
                    kernels=col.kernels,
                    with_external_id=attributed,
                    distinct_ids=sorted(set(col.ext.values()))[:12],
                    other_kinds=col.by_kind,
                )
    for cfg, r in results.items():
        say(step="cost", config=cfg, **r)
    try:
        dropped = cupti.activity_get_num_dropped_records(0, 0)
    except Exception as exc:  # noqa: BLE001
        dropped = f"{type(exc).__name__}: {exc}"
    say(step="dropped", value=dropped)
    t = time.perf_counter()
    for _ in range(100000):
        cupti.activity_push_external_correlation_id(ext_kind, 7)
        cupti.activity_pop_external_correlation_id(ext_kind)
    say(step="push_pop_us", value=round((time.perf_counter() - t) / 100000 * 1e6, 3))
    return 0


def _safe(fn: object) -> object:
    try:
        return fn()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


LAUNCH_CBIDS = (
    "cudaLaunchKernel_v7000",
    "cudaLaunchKernelExC_v11060",
    "cudaMemcpyAsync_v3020",
    "cudaGraphLaunch_v10000",
)


def _enable(cupti: object, kinds: list, *, runtime: bool) -> bool:
    try:
        for k in kinds:
            cupti.activity_enable(k)
        if runtime:
            for name in LAUNCH_CBIDS:
                cbid = getattr(cupti.runtime_api_trace_cbid, name, None)
                if cbid is not None:
                    cupti.activity_enable_runtime_api(cbid, 1)
        return bool(kinds)
    except Exception as exc:  # noqa: BLE001
        say(step="enable", ok=False, error=f"{type(exc).__name__}: {exc}", kinds=[str(k) for k in kinds])
        return False


def _disable(cupti: object, kinds: list, *, runtime: bool) -> None:
    try:
        if runtime:
            for name in LAUNCH_CBIDS:
                cbid = getattr(cupti.runtime_api_trace_cbid, name, None)
                if cbid is not None:
                    cupti.activity_enable_runtime_api(cbid, 0)
        for k in kinds:
            cupti.activity_disable(k)
    except Exception as exc:  # noqa: BLE001
        say(step="disable", ok=False, error=f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
