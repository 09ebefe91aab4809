#!/usr/bin/env python3
"""Planted warm-up and stalls: a sim-shaped loop whose first-call costs and slow calls are known.

Why: a report's findings must tell warm-up (first calls that load CUDA modules, compile, capture CUDA
graphs) from the steady state, and find a phase's own stalls whatever the iteration totals do. Each
iteration runs, under nvtxsim phases::

    sim_step -> render -> camera_readout -> policy -> reward -> reset -> observation

and every ``--update-every`` iterations a ``policy_update`` (with ``backward()``: on CUDA its kernels are
launched by PyTorch's autograd thread) follows, between iterations. What is planted:

==================  =====================================================================================
``--warmup lazy``   nothing is warmed up: iteration 0 pays CUDA's lazy module loading in every phase
``--warmup compile``  ``policy`` is ``torch.compile``d: its first call compiles (seconds)
``--warmup graphs``   ``sim_step`` is captured as a CUDA graph in its first call, replayed afterwards
``--warmup none``   the loop runs ``--warmup-iterations`` iterations with nvtxsim off first (a clean run)
``--stall-every K`` every K-th iteration ``observation`` sleeps ``--stall-ms`` (logging, checkpoints)
``--spike-at I,J``  ``reward`` busy-waits ``--spike-ms`` in those iterations (a stall within one phase
                    that leaves the iteration under twice its median)
==================  =====================================================================================

    python scripts/gpu/diagnosis_workload.py --device cpu --iterations 8          # a dry run anywhere
    nsys profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --export=sqlite -o diag \\
        python3 scripts/gpu/diagnosis_workload.py --device cuda --warmup lazy --stall-every 25 --spike-at 30,62,95

The program prints its truth (what was planted, in which iterations) as one JSON line starting ``truth:``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

# the import order matters here (nvtxsim first): not sorted
# isort: off
import nvtxsim  # noqa: E402  (first: under old nsys it makes nvtx>=0.2.12 ranges visible)
import torch  # noqa: E402
# isort: on

NAMES = ("iteration", "sim_step", "render", "camera_readout", "policy", "reward", "reset", "observation")
PH = {n: nvtxsim.phase(n) for n in NAMES + ("policy_update",)}


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--iterations", type=int, default=120)
    p.add_argument("--num-envs", type=int, default=4096)
    p.add_argument("--warmup", choices=("lazy", "compile", "graphs", "none"), default="lazy")
    p.add_argument(
        "--warmup-iterations", type=int, default=5, help="with --warmup none: iterations run first, unrecorded"
    )
    p.add_argument("--stall-every", type=int, default=0)
    p.add_argument("--stall-ms", type=float, default=30.0)
    p.add_argument("--spike-at", default="", help="comma-separated iterations in which reward busy-waits")
    p.add_argument("--spike-ms", type=float, default=60.0)
    p.add_argument("--update-every", type=int, default=10)
    p.add_argument("--slow-policy-ms", type=float, default=0.0, help="policy busy-waits this long every iteration")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


class Loop:
    """The tensors, the model and the phases' work (a few hundred µs to a few ms each on an H200)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        dev = self.dev = torch.device(args.device)
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        n = args.num_envs
        self.state = torch.randn(n, 32, generator=g).to(dev)
        self.scene = torch.randn(1024, 1024, generator=g).to(dev)
        self.image = torch.zeros(n, 3, 16, 16, device=dev)
        self.pinned = torch.empty(self.image.shape, pin_memory=dev.type == "cuda")
        self.policy_net = torch.nn.Sequential(
            torch.nn.Linear(32, 256), torch.nn.ELU(), torch.nn.Linear(256, 256), torch.nn.ELU(), torch.nn.Linear(256, 8)
        ).to(dev)
        self.optim = torch.optim.Adam(self.policy_net.parameters(), lr=1e-4)
        self.act_fn = torch.compile(self.policy_net) if args.warmup == "compile" else self.policy_net
        self.graph: torch.cuda.CUDAGraph | None = None
        self.spikes = {int(x) for x in args.spike_at.split(",") if x.strip()}
        self.actions = torch.zeros(n, 8, device=dev)

    def _physics(self) -> None:
        for _ in range(8):
            self.state.mul_(0.999).add_(torch.sin(self.state) * 1e-3)

    def sim_step(self) -> None:
        if self.args.warmup != "graphs" or self.dev.type != "cuda":
            self._physics()
            return
        if self.graph is None:  # first call: capture (after the side-stream warm-up CUDA graphs need)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self._physics()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self._physics()
        self.graph.replay()

    def render(self) -> None:
        self.scene = torch.tanh(self.scene @ self.scene * 1e-3)

    def camera_readout(self) -> None:
        self.image.copy_(self.state[:, :3, None, None].expand_as(self.image))
        if self.dev.type == "cuda":
            self.pinned.copy_(self.image, non_blocking=True)

    def policy(self) -> None:
        with torch.no_grad():
            self.actions = self.act_fn(self.state)
        if self.args.slow_policy_ms > 0:  # a planted slowdown of this phase in every iteration
            end = time.perf_counter() + self.args.slow_policy_ms / 1e3
            while time.perf_counter() < end:
                pass

    def reward(self, it: int) -> None:
        r = (self.state[:, :8] * self.actions).sum(dim=1)
        self.rew = torch.clamp(r, -1.0, 1.0)
        if it in self.spikes:  # a stall in this phase alone: Python busy-waiting
            end = time.perf_counter() + self.args.spike_ms / 1e3
            while time.perf_counter() < end:
                pass

    def reset(self) -> None:
        done = self.state[:, 0].abs() > 3.0
        self.state = torch.where(done[:, None], torch.zeros_like(self.state), self.state)

    def observation(self, it: int) -> None:
        self.obs = torch.cat([self.state, self.actions], dim=1)
        k = self.args.stall_every
        if k and it > 0 and it % k == 0:  # periodic: the program sleeps (a checkpoint, a log flush)
            time.sleep(self.args.stall_ms / 1e3)

    def policy_update(self) -> None:
        loss = (self.policy_net(self.state.detach()) ** 2).mean()
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        self.optim.step()


def _iteration(loop: Loop, it: int) -> None:
    with PH["iteration"]:
        for name in ("sim_step", "render", "camera_readout", "policy"):
            with PH[name]:
                getattr(loop, name)()
        with PH["reward"]:
            loop.reward(it)
        with PH["reset"]:
            loop.reset()
        with PH["observation"]:
            loop.observation(it)
    if loop.args.update_every and (it + 1) % loop.args.update_every == 0:
        with PH["policy_update"]:
            loop.policy_update()


def main() -> int:
    args = _args()
    loop = Loop(args)
    if args.warmup == "none":  # warm up outside the record: every kernel loaded, allocator filled
        nvtxsim.disable()
        for _ in range(args.warmup_iterations):
            _iteration(loop, -1)
            loop.policy_update()
        nvtxsim.enable()
    if loop.dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for it in range(args.iterations):
        nvtxsim.step()
        _iteration(loop, it)
    if loop.dev.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    stalls = [i for i in range(args.iterations) if args.stall_every and i > 0 and i % args.stall_every == 0]
    truth = {
        "warmup": args.warmup,
        "warmup_phase": {"lazy": "(every phase)", "compile": "policy", "graphs": "sim_step", "none": None}[args.warmup],
        "periodic_stall": {"phase": "observation", "every": args.stall_every, "ms": args.stall_ms, "iterations": stalls}
        if stalls
        else None,
        "spikes": {"phase": "reward", "ms": args.spike_ms, "iterations": sorted(loop.spikes)} if loop.spikes else None,
        "policy_update_every": args.update_every,
        "iterations": args.iterations,
        "seconds": round(seconds, 4),
    }
    print("truth: " + json.dumps(truth), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
