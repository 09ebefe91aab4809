"""A loop whose phases scale in known ways with the number of environments N (proof for `nvtxsim scaling`).

Per iteration (marked with nvtxsim.step() and an ``iteration`` range):

* ``pairwise`` — N² in time and memory: all pairwise distances of N positions (an N×N matrix), then
  the nearest neighbour of each env.
* ``physics`` and ``reward`` — linear: elementwise work on N envs × ``--per-env`` floats, each with one
  N-sized temporary.
* ``policy`` — independent of N: a fixed 256×512 MLP forward pass.

Each phase ends with a device synchronize, so its CPU time includes its GPU work. Run with
``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` for every allocation to reach the driver (and the nsys memory
trace); the driver script sets it.

    python3 scripts/gpu/scaling_workload.py --n 4096 --iterations 12 [--device cpu]
"""

from __future__ import annotations

import argparse

import torch

import nvtxsim


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, required=True, help="number of environments")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--per-env", type=int, default=4096, help="floats of state per env (linear phases)")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    dev = torch.device(args.device)
    g = torch.Generator(device="cpu").manual_seed(0)
    n, d = args.n, args.per_env
    pos = torch.rand(n, 3, generator=g).to(dev)
    state = torch.rand(n, d, generator=g).to(dev)
    vel = torch.zeros(n, d, device=dev)
    weights = [torch.rand(512, 512, generator=g).to(dev) / 512 for _ in range(3)]
    obs = torch.rand(256, 512, generator=g).to(dev)
    sync(dev)
    total = 0.0
    for _ in range(args.iterations):
        nvtxsim.step()
        with nvtxsim.phase("iteration"):
            with nvtxsim.phase("policy"):  # fixed size: does not depend on N
                h = obs
                for w in weights:
                    h = torch.relu(h @ w)
                action = h.mean()
                sync(dev)
            with nvtxsim.phase("physics"):  # linear in N
                accel = torch.sin(state) * action  # one N×D temporary
                vel.add_(accel, alpha=0.01)
                state.add_(vel, alpha=0.01)
                del accel
                sync(dev)
            with nvtxsim.phase("pairwise"):  # N² time and memory
                dist = torch.cdist(pos, pos)  # N×N
                dist.fill_diagonal_(float("inf"))
                nearest = dist.min(dim=1).values
                del dist
                pos.add_(0.001 * nearest.unsqueeze(1))
                sync(dev)
            with nvtxsim.phase("reward"):  # linear in N
                r = torch.exp(-state.square()).sum(dim=1)  # N×D temporary, N result
                total += float(r.mean())
                sync(dev)
    print(f"n={n} iterations={args.iterations} checksum={total:.4f}")


if __name__ == "__main__":
    main()
