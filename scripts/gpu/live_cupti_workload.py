#!/usr/bin/env python3
"""Live GPU timing with CUPTI (issue 25) on the H200: what it costs, and how close it is to nsys.

A training-shaped loop of ``--launches`` CUDA launches per iteration in 7 phases: short launch-bound ones
(observation, action, reward, reset: the GPU waits for the CPU's launches, where CUDA events read the CPU
time), a GPU-heavy one (sim_step: large matmuls), the policy, and learn (forward + backward: autograd's
device thread launches the backward kernels, other-thread work) with copies (H2D, D2D).

    cost     one process, modes interleaved block by block: plain (live timing off), events (NVTXSIM_LIVE,
             CUDA events), cupti (NVTXSIM_LIVE_GPU=cupti), cupti-s10 (the same, 1 iteration in 10),
             cupti+runtime (runtime API records too, NVTXSIM_LIVE_CUPTI_RUNTIME=1): ms per
             iteration, the median per mode and its overhead against plain (the goal: at most 2 %)
    run      the loop alone (``--live MODE FILE`` with live timing; under nsys without it) for the accuracy runs
    compare  live busy time per range (the live file) against ``nvtxsim report --view overlap --format json`` of the
             nsys run: per phase, its GPU busy per range plus the overlap view's other-thread work (autograd), the
             attribution live timing makes; the ratio (goal: 0.9..1.1 for every phase), the ratio to the nsys-exact
             busy alone, and an events-mode live file's ratio for contrast (``--all-phases``: every phase of
             both, for a real training's files: scripts/gpu/isaaclab3/live_cupti_il3.sh)

(the pieces the CUPTI mode relies on are checked one by one by scripts/gpu/live_cupti_probe.py)

``--dry-run`` runs on the CPU (torch CPU tensors, fewer launches): the script's plumbing only, no GPU numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import nvtxsim  # noqa: E402
from nvtxsim.emit import live  # noqa: E402
from nvtxsim.emit.live.cupti import RUNTIME_ENV  # noqa: E402

PHASES = ("observation", "policy", "action", "sim_step", "reward", "learn", "reset")


def say(**kw: object) -> None:
    print("live_cupti: " + json.dumps(kw, default=str), flush=True)


class Loop:
    """The training-shaped loop; ``launches`` per iteration, about (counted by the shares below)."""

    def __init__(self, launches: int, device: str) -> None:
        import torch

        self.torch, self.dev = torch, device
        self.cuda = device == "cuda"
        self.x = torch.zeros(4096, device=device)
        side = 2048 if self.cuda else 64  # a dry run on the CPU stays quick
        self.big = torch.randn(side, side, device=device) / side**0.5
        self.net = torch.nn.Sequential(
            torch.nn.Linear(256, 512),
            torch.nn.ELU(),
            torch.nn.Linear(512, 512),
            torch.nn.ELU(),
            torch.nn.Linear(512, 16),
        ).to(device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-4)
        rows = 4096 if self.cuda else 64
        self.obs = torch.randn(rows, 256, device=device)
        self.host = torch.randn(rows, 16).pin_memory() if self.cuda else torch.randn(rows, 16)
        self.dst = torch.empty(rows, 256, device=device)
        n = max(launches, 70)
        self.tiny = {
            "observation": n * 15 // 100,
            "action": n * 10 // 100,
            "reward": n * 15 // 100,
            "reset": n * 5 // 100,
        }
        self.policy_reps = max(n * 10 // 100 // 5, 1)  # ~5 kernels per forward
        self.sim_tiny, self.sim_mm = n * 25 // 100 // 4, 2  # per substep: tiny kernels + 2 large matmuls
        self.learn_reps = max(n * 20 // 100 // 60, 1)  # ~60 launches per forward+backward+step

    def iteration(self) -> None:
        t, x = self.torch, self.x
        with nvtxsim.phase("observation"):
            for _ in range(self.tiny["observation"]):
                x.add_(1.0)
        with nvtxsim.phase("policy"), t.no_grad():
            for _ in range(self.policy_reps):
                act = self.net(self.obs)
        with nvtxsim.phase("action"):
            self.dst[:, :16].copy_(self.host, non_blocking=True)  # H2D
            for _ in range(self.tiny["action"]):
                x.mul_(0.999)
        for _ in range(4):
            with nvtxsim.phase("sim_step"):
                for _ in range(self.sim_mm):
                    self.big = t.tanh(self.big @ self.big)
                for _ in range(self.sim_tiny):
                    x.add_(0.5)
        with nvtxsim.phase("reward"):
            for _ in range(self.tiny["reward"]):
                x.sub_(0.25)
        with nvtxsim.phase("learn"):
            for _ in range(self.learn_reps):
                loss = (self.net(self.obs) - act).pow(2).mean()
                self.opt.zero_grad(set_to_none=True)
                loss.backward()  # autograd's device thread launches these kernels
                self.opt.step()
        with nvtxsim.phase("reset"):
            self.dst.copy_(self.obs)  # D2D
            for _ in range(self.tiny["reset"]):
                x.zero_()

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()


#: mode -> (gpu=, sample=, CUDA runtime API records too) of live.start; None: live timing off
MODES = {
    "plain": None,
    "events": (True, 1, False),
    "cupti": ("cupti", 1, False),
    "cupti-s10": ("cupti", 10, False),
    "cupti+runtime": ("cupti", 1, True),
}


def cost(args: argparse.Namespace, loop: Loop) -> int:
    out = Path(tempfile.mkdtemp()) / "cost.jsonl"
    for _ in range(args.warmup):
        loop.iteration()
    loop.sync()
    ms: dict[str, list[float]] = {m: [] for m in MODES}
    it = 0
    for rnd in range(args.rounds):
        order = list(MODES) if rnd % 2 == 0 else list(reversed(MODES))  # ABCD DCBA: drifts cancel
        for mode in order:
            spec = MODES[mode]
            if spec is not None:
                os.environ.pop(RUNTIME_ENV, None)
                if spec[2]:
                    os.environ[RUNTIME_ENV] = "1"
                live.start(out, every=args.block, sample=spec[1], gpu=spec[0], append=True)
            loop.sync()
            t0 = time.perf_counter()
            for _ in range(args.block):
                nvtxsim.step()
                loop.iteration()
                it += 1
            loop.sync()
            ms[mode].append((time.perf_counter() - t0) / args.block * 1e3)
            if spec is not None:
                live.stop(timeout=30)
    base = statistics.median(ms["plain"])
    for mode, values in ms.items():
        med = statistics.median(values)
        say(
            step="cost",
            mode=mode,
            ms_per_iteration=round(med, 3),
            overhead_pct=round(100 * (med - base) / base, 2),
            blocks=[round(v, 2) for v in values],
        )
    lines = [json.loads(ln) for ln in out.read_text().splitlines() if ln.strip()] if out.exists() else []
    modes = sorted({ln.get("gpu_mode") for ln in lines if ln.get("gpu_mode")})
    say(step="cost-records", windows=len(lines), gpu_modes=modes, dropped=sum(ln.get("gpu_dropped", 0) for ln in lines))
    return 0


def run(args: argparse.Namespace, loop: Loop) -> int:
    nvtxsim.disable()  # warm-up: no ranges (under nsys), so the report and live timing count the same iterations
    try:
        for _ in range(args.warmup):
            loop.iteration()
        loop.sync()
    finally:
        nvtxsim.enable()
    if args.live:
        mode, path = args.live
        live.start(path, every=args.every, gpu={"events": True, "cupti": "cupti"}[mode])
    t0 = time.perf_counter()
    for _ in range(args.iterations):
        nvtxsim.step()
        loop.iteration()
    loop.sync()
    say(
        step="run",
        live=args.live,
        iterations=args.iterations,
        ms_per_iteration=round((time.perf_counter() - t0) / args.iterations * 1e3, 3),
    )
    if args.live:
        live.stop(timeout=60)
        if args.live[0] == "cupti":
            _attribution(args.live[1])
    return 0


def _attribution(path: str) -> None:
    """Ops (kernels + copies) the collector received vs those attributed to a phase in the live file (all the
    loop's phases are top-level: no op counts twice); the collector's counters; why CUPTI was refused, if so."""
    from nvtxsim.emit.live import cupti as cm

    col = cm._collector
    lv, modes = _live_phases(path)
    attributed = sum(t.get("launches") or 0 for t in lv.values())
    received = col.received if col is not None else 0
    say(
        step="attribution",
        gpu_modes=modes,
        ops_received=received,
        ops_in_a_phase=attributed,
        fraction=round(attributed / received, 4) if received else None,
        buffers_walked_slowly=col.unreadable if col else None,
        dropped=col.dropped if col else None,
        markers_paired_by=col.pairing if col else None,
        runtime_records=col.runtime if col else None,
        refused=cm._refused,
    )


def _live_phases(path: str) -> tuple[dict[str, dict], list[str]]:
    from nvtxsim.analysis.live import gpu_modes, load, totals

    log = load(path)
    return totals(log.windows), gpu_modes(log.windows)


def compare(args: argparse.Namespace) -> int:
    doc = json.loads(Path(args.report).read_text())
    rep = {f"{p['domain']}:{p['name']}": p for p in doc.get("phases", [])}
    # other threads' GPU work (autograd's backward) by the phase open at launch: what live timing attributes too
    other = {r["phase"]: r.get("other_gpu_ns") or 0 for r in doc.get("views", {}).get("overlap", {}).get("rows", [])}
    lv, modes = _live_phases(args.live_file)
    ev = _live_phases(args.events)[0] if args.events else {}
    say(step="compare", live=args.live_file, gpu_modes=modes, report=args.report)
    print(
        f"{'phase':22} {'ranges live/nsys':>17} {'live busy/range':>16} {'nsys busy':>12} {'+overlap':>12} "
        f"{'ratio':>7} {'ratio(nsys)':>11} {'events/nsys':>11} {'launches/range':>15}"
    )
    keys = [k for k in sorted(set(lv) | set(rep)) if k.startswith("nvtxsim:")]
    if not args.all_phases:
        keys = [k for k in keys if k.split(":", 1)[1] in PHASES]
    ratios: list[float] = []
    wanted, counts_differ, only = 0, [], []
    for key in keys:
        name, a, r = key.split(":", 1)[1], lv.get(key), rep.get(key)
        if a is None or r is None:
            print(f"{name:22} only in {'report' if a is None else 'live'}")
            only.append(name)
            continue
        line, ratio, gpu_work = _compare_row(name, a, r, other.get(key, 0), ev.get(key))
        print(line)
        wanted += gpu_work  # --all-phases: the phases with GPU work in the report are the ones to match
        counts_differ += [name] if a["count"] != r.get("instances") else []
        ratios += [ratio] if ratio is not None else []
    worst = max((abs(x - 1) for x in ratios), default=0.0)
    wanted = wanted if args.all_phases else len(PHASES)
    say(
        step="compare-verdict",
        phases=wanted,
        compared=len(ratios),
        worst_abs_ratio_error=round(worst, 4),
        within_10pct=wanted > 0 and len(ratios) == wanted and worst <= 0.10,
        range_counts_differ=counts_differ,
        only_in_one=only,
    )
    return 0


def _compare_row(name: str, a: dict, r: dict, other_ns: float, e: dict | None) -> tuple[str, float | None, bool]:
    """One phase's line; its live/nsys ratio (None where either has no GPU number); whether nsys saw GPU work."""
    n_r = r.get("gpu_instances") or r.get("instances") or 0
    busy_r = r["gpu_busy_total_ns"] / n_r if n_r and r.get("gpu_busy_total_ns") is not None else None
    n_l = a.get("gpu_count") or a["count"]  # the ranges GPU-timed (fewer than all under a cost budget)
    busy_l = a["gpu_ns"] / n_l if a.get("gpu_ns") is not None and n_l else None
    both = busy_r + other_ns / n_r if busy_r is not None else None  # same thread + other threads
    ratio = busy_l / both if busy_l is not None and both else None
    exact = busy_l / busy_r if busy_l is not None and busy_r else None
    ev_ratio = e["gpu_ns"] / e["count"] / both if e and e.get("gpu_ns") is not None and e["count"] and both else None
    launches = a["launches"] / n_l if a.get("launches") is not None and n_l else None
    line = (
        f"{name:22} {a['count']:>8}/{r.get('instances', 0):<8} {_us(busy_l):>16} {_us(busy_r):>12} "
        f"{_us(both):>12} {_r(ratio):>7} {_r(exact):>11} {_r(ev_ratio):>11} "
        f"{'-' if launches is None else f'{launches:,.1f}':>15}"
    )
    return line, ratio, bool(both)


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.1f} µs"


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("cost", "run"):
        s = sub.add_parser(name)
        s.add_argument("--launches", type=int, default=10_000, help="CUDA launches per iteration, about")
        s.add_argument("--warmup", type=int, default=5)
        s.add_argument("--dry-run", action="store_true", help="CPU tensors, 1/20 of the launches: plumbing only")
    c = sub.choices
    c["cost"].add_argument("--block", type=int, default=10, help="iterations per block (one mode)")
    c["cost"].add_argument("--rounds", type=int, default=6)
    c["run"].add_argument("--iterations", type=int, default=60)
    c["run"].add_argument("--every", type=int, default=20)
    c["run"].add_argument("--live", nargs=2, metavar=("MODE", "FILE"), help="events|cupti and the JSONL file")
    cmp = sub.add_parser("compare")
    cmp.add_argument("live_file")
    cmp.add_argument("report", help="nvtxsim report --view overlap --format json of the nsys run")
    cmp.add_argument("--events", help="a live file of the same loop with CUDA events, for contrast")
    cmp.add_argument(
        "--all-phases", action="store_true", help="every nvtxsim phase of both (a real training), not only this loop's"
    )
    args = p.parse_args()
    if args.cmd == "compare":
        return compare(args)
    device = "cpu" if args.dry_run else "cuda"
    launches = args.launches // 20 if args.dry_run else args.launches
    loop = Loop(launches, device)
    say(step="env", cmd=args.cmd, device=device, launches=launches, torch=loop.torch.__version__)
    return cost(args, loop) if args.cmd == "cost" else run(args, loop)


if __name__ == "__main__":
    sys.exit(main())
