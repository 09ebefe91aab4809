#!/usr/bin/env python3
"""Planted bottlenecks: an Isaac-Lab-shaped loop with one known problem per phase, for `nvtxsim report`'s findings.

Why: the findings (issue 14) must be shown to name the right phase and the right cause on a real
capture. Each iteration runs, under nvtxsim phases::

    sim_step -> render -> camera_readout -> policy -> reward -> reset -> observation

and every ``--update-every`` iterations a ``policy_update`` follows, between iterations. One
problem is planted per phase (``--clean`` leaves them all out):

=================  ==================  =====================================================
phase              finding kind        what the planted code does
=================  ==================  =====================================================
sim_step           launch_bound        hundreds of tiny elementwise kernels (clean: one fused op)
render             gpu_bound           a large fp32 matmul (kept in the clean run: informational)
camera_readout     pageable_copy       ``image.cpu()`` of a 24 MiB tensor into pageable memory
                                       (clean: copy into a pinned buffer, ``non_blocking=True``)
reward             sync                ``.item()`` and ``nonzero()`` after the reward math
reset              cpu_bound           a Python loop with no GPU work (clean: a tensor op)
observation        outlier_iterations  ``time.sleep`` in a few iterations (``--outliers``)
policy_update      other_thread_gpu    ``loss.backward()``: on CUDA, PyTorch's autograd thread
                                       launches the backward kernels (clean: no backward)
(none)             unattributed_gpu    a logging matmul between iterations, outside every phase
=================  ==================  =====================================================

    python scripts/gpu/findings_workload.py --device cpu --iterations 8      # a dry run anywhere
    nsys profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --export=sqlite -o planted \\
        python3 scripts/gpu/findings_workload.py --device cuda
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

# the import order matters here (nvtxsim first): not sorted
# isort: off
import nvtxsim  # noqa: E402  (first: under old nsys it makes nvtx>=0.2.12 ranges visible)
import torch  # noqa: E402
# isort: on

NAMES = (
    "iteration",
    "sim_step",
    "render",
    "camera_readout",
    "policy",
    "reward",
    "reset",
    "observation",
    "policy_update",
)
PH = {n: nvtxsim.phase(n) for n in NAMES}


class World:
    """The tensors and the model of the loop (sizes chosen for a few ms per phase on an H200)."""

    def __init__(self, args: argparse.Namespace) -> None:
        dev = torch.device(args.device)
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        n = args.num_envs
        self.dev, self.args = dev, args
        self.state = torch.randn(n, 32, generator=g).to(dev)
        self.scene = torch.randn(args.matmul, args.matmul, generator=g).to(dev)
        self.image = torch.zeros(n, 3, args.camera, args.camera, device=dev)
        self.pinned = torch.empty(self.image.shape, pin_memory=dev.type == "cuda")
        self.weights = torch.randn(32, 32, generator=g).to(dev)
        h = args.hidden
        self.policy = torch.nn.Sequential(
            torch.nn.Linear(32, h), torch.nn.ELU(), torch.nn.Linear(h, h), torch.nn.ELU(), torch.nn.Linear(h, 8)
        ).to(dev)
        self.optim = torch.optim.Adam(self.policy.parameters(), lr=1e-4)
        self.buffer: list[torch.Tensor] = []
        self.total_reward = 0.0


def sim_step(w: World, clean: bool) -> None:
    if clean:
        w.state.mul_(0.999).add_(0.001)  # the same update, two kernels instead of hundreds
        return
    for _ in range(w.args.tiny_ops):  # tiny elementwise kernels, one launch each
        w.state.mul_(0.99999)
        w.state.add_(1e-5)


def render(w: World) -> None:
    frame = w.scene @ w.scene  # large fp32 matmul: the GPU is the limit
    n = min(w.image.numel(), frame.numel())
    w.image.view(-1)[:n].copy_(frame.view(-1)[:n])


def camera_readout(w: World, clean: bool) -> torch.Tensor:
    if clean:
        return w.pinned.copy_(w.image, non_blocking=True)  # pinned, asynchronous
    return w.image.cpu()  # pageable: the host waits for the copy (and for all the work before it)


def policy(w: World) -> torch.Tensor:
    with torch.inference_mode():
        return w.policy(w.state).tanh()


def reward(w: World, actions: torch.Tensor, clean: bool) -> None:
    r = (w.state @ w.weights).pow(2).mean(dim=1) - 0.01 * actions.pow(2).sum(dim=1)
    for _ in range(w.args.reward_work):
        r = r + (w.scene[:1024] @ w.scene[:, :1024]).mean() * 1e-9  # GPU work the sync below waits for
    if clean:
        w.buffer.append(r)
        return
    w.total_reward += r.mean().item()  # sync: .item()
    done = (r > r.median()).nonzero()  # sync: nonzero() must know its output size
    w.state[done[:, 0]] *= 0.5


def reset(w: World, clean: bool) -> None:
    if clean:
        w.state.clamp_(-10, 10)
        return
    acc = 0.0
    for i in range(w.args.python_loop):  # per-env Python bookkeeping, no GPU work
        acc += math.sin(i) * math.cos(i)
    w.total_reward += acc * 1e-12


def observation(w: World, i: int, clean: bool) -> torch.Tensor:
    if not clean and i in w.args.outliers:
        time.sleep(w.args.outlier_s)  # a stall: compilation, GC, I/O
    return torch.cat([w.state, w.state.abs()], dim=1)


def policy_update(w: World, clean: bool) -> None:
    obs = w.state.detach().repeat(w.args.update_batch, 1)  # the rollout buffer
    if clean:
        with torch.no_grad():  # no backward: every kernel from this thread, inside the phase
            for p in w.policy.parameters():
                p.mul_(0.9999)
        return
    for _ in range(w.args.epochs):
        loss = w.policy(obs).pow(2).mean()
        w.optim.zero_grad(set_to_none=True)
        loss.backward()  # on CUDA: launched from PyTorch's autograd thread (pt_autograd_0)
        w.optim.step()


def log_outside_phases(w: World) -> None:
    """Logging statistics between iterations, outside every phase (unattributed GPU work)."""
    stats = w.scene @ w.scene[:, :2048]
    w.buffer.append(stats.std())
    if len(w.buffer) > 64:
        w.buffer.clear()


def run(args: argparse.Namespace) -> None:
    w = World(args)
    clean = args.clean
    for i in range(args.iterations):
        nvtxsim.step()
        with PH["iteration"]:
            with PH["sim_step"]:
                sim_step(w, clean)
            with PH["render"]:
                render(w)
            with PH["camera_readout"]:
                camera_readout(w, clean)
            with PH["policy"]:
                actions = policy(w)
            with PH["reward"]:
                reward(w, actions, clean)
            with PH["reset"]:
                reset(w, clean)
            with PH["observation"]:
                observation(w, i, clean)
        if not clean:
            log_outside_phases(w)
        if (i + 1) % args.update_every == 0:
            with PH["policy_update"]:
                policy_update(w, clean)
    if w.dev.type == "cuda":
        torch.cuda.synchronize()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--clean", action="store_true", help="leave every planted problem out")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--update-every", type=int, default=20)
    ap.add_argument("--num-envs", type=int, default=512)
    ap.add_argument("--camera", type=int, default=64, help="camera side in pixels (3 channels, fp32)")
    ap.add_argument("--matmul", type=int, default=4096, help="side of render's square matmul")
    ap.add_argument("--tiny-ops", type=int, default=150, help="sim_step: pairs of tiny kernels per step")
    ap.add_argument("--reward-work", type=int, default=4, help="reward: matmuls queued before the sync")
    ap.add_argument("--python-loop", type=int, default=20000, help="reset: Python loop length")
    ap.add_argument("--outliers", default="9,27,45", help="observation: iterations that stall")
    ap.add_argument("--outlier-s", type=float, default=0.05)
    ap.add_argument("--epochs", type=int, default=4, help="policy_update: backward passes")
    ap.add_argument("--hidden", type=int, default=1024, help="policy MLP width")
    ap.add_argument("--update-batch", type=int, default=128, help="policy_update: rollout buffer = num_envs × this")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.outliers = {int(x) for x in args.outliers.split(",") if x.strip()}
    return args


if __name__ == "__main__":
    t0 = time.perf_counter()
    a = parse()
    run(a)
    print(
        f"findings_workload: {'clean' if a.clean else 'planted'}, {a.iterations} iterations on {a.device} in {time.perf_counter() - t0:.2f} s"
    )
