#!/usr/bin/env python3
"""Distributed PPO-shaped training with one planted slow rank: per-phase rank skew and collective waits.

Why: in data-parallel RL each rank steps its own envs, and the gradient all-reduce in the update makes
every rank wait for the slowest. One rank is made slow on purpose (more envs in ``sim_step``, or an extra
CPU phase ``logging``), so a report can be checked to name the slow rank and phase, and the time the others
wait in the all-reduce. Each iteration, under nvtxsim phases::

    iteration > sim_step, policy, reward, [logging on the slow rank], policy_update > allreduce

Launch with torchrun (one process a rank; gloo works with CPU and CUDA tensors, also with two ranks on
one GPU; nccl needs a GPU a rank)::

    python3 -m torch.distributed.run --nproc_per_node=2 scripts/gpu/ranks_workload.py --device cpu
    nsys profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --export=sqlite -o ranks \\
        python3 -m torch.distributed.run --nproc_per_node=2 scripts/gpu/ranks_workload.py --device cuda

Every rank prints one JSON line starting ``truth:`` (its rank, pid, envs, what was planted).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

# isort: off
import nvtxsim  # noqa: E402  (first: under old nsys it makes nvtx>=0.2.12 ranges visible)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
# isort: on

PH = {n: nvtxsim.phase(n) for n in ("iteration", "sim_step", "policy", "reward", "logging", "policy_update")}
ALLREDUCE = nvtxsim.phase("allreduce")


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    p.add_argument("--iterations", type=int, default=60)
    p.add_argument("--num-envs", type=int, default=4096, help="envs per rank")
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--slow-envs", type=float, default=2.0, help="the slow rank steps this many times the envs")
    p.add_argument("--slow-cpu-ms", type=float, default=3.0, help="the slow rank's extra CPU phase (logging)")
    return p.parse_args()


def main() -> int:
    args = _args()
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        dev = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    else:
        dev = torch.device("cpu")
    slow = rank == args.slow_rank
    n = int(args.num_envs * (args.slow_envs if slow else 1.0))
    torch.manual_seed(rank)
    state = torch.randn(n, 64, device=dev)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ELU(), torch.nn.Linear(256, 8)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    for _ in range(args.iterations):
        nvtxsim.step()
        with PH["iteration"]:
            with PH["sim_step"]:
                for _ in range(6):
                    state = state * 0.999 + torch.sin(state) * 1e-3
            with PH["policy"]:
                with torch.no_grad():
                    actions = net(state)
            with PH["reward"]:
                reward = (actions**2).mean(dim=1)
            if slow and args.slow_cpu_ms > 0:
                with PH["logging"]:  # CPU work on this rank only (formatting, a logger, a video writer)
                    end = time.perf_counter() + args.slow_cpu_ms / 1e3
                    while time.perf_counter() < end:
                        pass
            with PH["policy_update"]:
                loss = (net(state.detach()) ** 2).mean() + reward.mean() * 0
                opt.zero_grad(set_to_none=True)
                loss.backward()
                with ALLREDUCE:
                    for p in net.parameters():
                        dist.all_reduce(p.grad)
                        p.grad /= world
                opt.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    print(
        "truth: "
        + json.dumps(
            {
                "rank": rank,
                "world": world,
                "pid": os.getpid(),
                "envs": n,
                "slow": slow,
                "slow_cpu_ms": args.slow_cpu_ms if slow else 0.0,
                "backend": args.backend,
                "device": str(dev),
            }
        ),
        flush=True,
    )
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
