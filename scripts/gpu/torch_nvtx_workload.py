"""A PyTorch loop annotated the ways users already annotate, none of them nvtxsim's domain (issue 12).

``torch.cuda.nvtx.range_push/pop`` around each iteration and its forward/backward/optimizer parts
(default domain), ``nvtx.annotate(..., domain="data")`` around the batch preparation, and, for the
last iterations, ``torch.autograd.profiler.emit_nvtx(record_shapes=True)``, whose per-op range
names are long and dict-like. ``nvtxsim report`` of such an export must show every domain without
flags, with every name on one line in a terminal.

    python3 scripts/gpu/torch_nvtx_workload.py --device cuda      # under nsys on the GPU host
    python3 scripts/gpu/torch_nvtx_workload.py --device cpu       # CPU: nvtx.annotate stands in for torch.cuda.nvtx
"""

from __future__ import annotations

import argparse
import contextlib

import torch


def ranges(device: str):
    """(push, pop) for default-domain ranges: torch.cuda.nvtx on CUDA, the nvtx package on a CPU build."""
    if device == "cuda":
        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    import nvtx

    return (lambda name: nvtx.push_range(name)), (lambda: nvtx.pop_range())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--emit-nvtx", type=int, default=2, help="last N iterations under emit_nvtx (0: none)")
    a = p.parse_args()
    if a.device == "cpu":
        import nvtxsim  # noqa: F401  (under old nsys, lifts nvtx>=0.2.12's enabled-gate; records no range itself)
    import nvtx

    push, pop = ranges(a.device)
    dev = torch.device(a.device)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for i in range(a.iterations):
        emit = a.device == "cuda" and i >= a.iterations - a.emit_nvtx
        ctx = torch.autograd.profiler.emit_nvtx(record_shapes=True) if emit else contextlib.nullcontext()
        with ctx:
            push("train_step")
            with nvtx.annotate("make_batch", domain="data"):
                x = torch.randn(1024, 256, device=dev)
                y = torch.randn(1024, 64, device=dev)
            push("forward")
            loss = torch.nn.functional.mse_loss(model(x), y)
            pop()
            push("backward")
            loss.backward()
            pop()
            push("optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)
            pop()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            pop()
    print(f"done: {a.iterations} iterations on {a.device}, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
