#!/usr/bin/env python3
"""Demo workload: a vectorized PyTorch loop shaped like one Isaac Lab step, with nvtxsim phases.

Why: nvtxsim's tests and docs need a real program whose phases look like a robot-learning
loop (many small kernels, a decimation loop, a camera, a GPU->CPU readout, a sync on resets,
a learning update), without Isaac Sim. Each ``iteration`` range holds, in the order of
``DirectRLEnv.step`` plus the runner's policy call::

    policy -> action -> decimation x sim_step -> render -> camera_readout
           -> termination -> reward -> reset -> observation

``reset`` is entered every iteration (it only does work when some env is done), so a capture of
``--iterations N`` holds exactly N ranges of each phase and N * decimation ``sim_step`` ranges.
Every ``--update-every`` iterations a ``policy_update`` range (PPO epochs over the rollout buffer,
backward + Adam) follows the iteration, as a sibling, as in an on-policy runner. Warm-up iterations
run with nvtxsim disabled. ``--side-thread`` adds a thread named ``side_launcher`` that runs one
``side_work`` phase of its own GPU work (own CUDA stream) per iteration, concurrently with the main
thread. ``--cuda-graph-policy`` replays the policy MLP from a ``torch.cuda.CUDAGraph``.

    python scripts/demo_env.py --iterations 30
    nsys profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --export=sqlite -o run \\
        python scripts/demo_env.py --device cuda --num-envs 512
"""

from __future__ import annotations

import argparse
import contextlib
import math
import queue
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

# the import order matters here (nvtxsim first): not sorted
# isort: off
import nvtxsim  # noqa: E402  (first: under old nsys it makes nvtx>=0.2.12 ranges visible)
from nvtxsim import phases as P  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
# isort: on

SIDE_WORK = "side_work"
PH = {
    n: nvtxsim.phase(n)
    for n in (
        P.ITERATION,
        P.POLICY,
        P.ACTION,
        P.SIM_STEP,
        P.RENDER,
        P.CAMERA_READOUT,
        P.TERMINATION,
        P.REWARD,
        P.RESET,
        P.OBSERVATION,
        P.POLICY_UPDATE,
        SIDE_WORK,
    )
}


class ActorCritic(torch.nn.Module):
    """Gaussian MLP policy + value head, as in rsl_rl's PPO."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 128) -> None:
        super().__init__()

        def mlp(out: int) -> torch.nn.Sequential:
            return torch.nn.Sequential(
                torch.nn.Linear(obs_dim, hidden),
                torch.nn.ELU(),
                torch.nn.Linear(hidden, hidden),
                torch.nn.ELU(),
                torch.nn.Linear(hidden, out),
            )

        self.actor, self.critic = mlp(act_dim), mlp(1)
        self.log_std = torch.nn.Parameter(torch.full((act_dim,), -0.5))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.actor(obs), self.critic(obs).squeeze(-1)

    def log_prob(self, action: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        z = (action - mean) * torch.exp(-self.log_std)
        return (-0.5 * z * z - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


class GraphedPolicy:
    """The policy forward captured once in a CUDA graph; replays read the live (in-place updated) weights."""

    def __init__(self, net: ActorCritic, obs: torch.Tensor) -> None:
        self.static_obs = obs.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(3):
                net(self.static_obs)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), torch.cuda.graph(self.graph):
            self.static_out = net(self.static_obs)

    def __call__(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.static_obs.copy_(obs)
        self.graph.replay()
        return self.static_out


class SideLauncher(threading.Thread):
    """A second thread (think logger or data loader) launching its own GPU work in its own phase."""

    def __init__(self, device: torch.device, n: int = 256) -> None:
        super().__init__(name="side_launcher", daemon=True)
        self.jobs: queue.Queue[bool | None] = queue.Queue()
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.x = torch.randn(n, n, device=device)
        self.total = torch.zeros((), device=device)

    def run(self) -> None:
        try:  # the OS thread name is what nsys shows (Linux; harmless elsewhere)
            import ctypes

            ctypes.CDLL(None).prctl(15, self.name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
        except Exception:
            pass
        with torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext():
            while self.jobs.get() is not None:
                with PH[SIDE_WORK]:
                    self.total += torch.tanh(self.x @ self.x.T).mean()
                    if self.stream is not None:
                        self.stream.synchronize()
                self.jobs.task_done()


class DemoEnv:
    """num_envs balls pushed towards goals among spherical obstacles, seen by one depth camera per env."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.dev = args, torch.device(args.device)
        torch.manual_seed(args.seed)
        if self.dev.type == "cpu":
            torch.set_num_threads(1)  # small tensors: intra-op threads only add spin-waits on a busy CI machine
        n, self.H, self.W = args.num_envs, *args.camera
        self.dt, self.radius, self.arena, self.max_depth = 1.0 / 120.0, 0.1, 2.0, 8.0
        f = dict(device=self.dev)
        self.obstacles = torch.rand(n, 4, 3, **f) * torch.tensor([3.0, 3.0, 0.0], **f) - torch.tensor(
            [1.5, 1.5, -0.3], **f
        )
        self.radii = torch.tensor([self.radius] + [0.3] * 4, **f)  # ball first, then the obstacles
        self.pos, self.vel, self.goal = torch.zeros(n, 3, **f), torch.zeros(n, 3, **f), torch.zeros(n, 3, **f)
        self.ep_len = torch.zeros(n, dtype=torch.long, **f)
        self.gravity, self.force_scale = torch.tensor([0.0, 0.0, -9.81], **f), torch.tensor([20.0, 20.0, 5.0], **f)
        self._reset(torch.arange(n, **f))
        self.ep_len = torch.randint(
            0, args.episode_length, (n,), **f
        )  # staggered episodes, as Isaac Lab's random start
        # Camera at (0, -3, 2) in every env's frame, looking at the env origin; pinhole, 90 deg horizontal FOV.
        self.cam = torch.tensor([0.0, -3.0, 2.0], **f)
        fwd = -self.cam / self.cam.norm()
        right = torch.linalg.cross(fwd, torch.tensor([0.0, 0.0, 1.0], **f))
        right = right / right.norm()
        up = torch.linalg.cross(right, fwd)
        v, u = torch.meshgrid(
            torch.linspace(1, -1, self.H, **f) * self.H / self.W, torch.linspace(-1, 1, self.W, **f), indexing="ij"
        )
        d = fwd + u.reshape(-1, 1) * right + v.reshape(-1, 1) * up
        self.rays = d / d.norm(dim=-1, keepdim=True)  # (H*W, 3)
        self.t_plane = torch.where(self.rays[:, 2] < 0, -self.cam[2] / self.rays[:, 2], torch.inf)  # ground z=0
        self.depth = torch.zeros(n, self.H, self.W, **f)
        self.net = ActorCritic(3 + 3 + 3 + 16, 3).to(self.dev)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=3e-4)
        self.obs = self._observe()
        graphed = args.cuda_graph_policy and self.dev.type == "cuda"
        self.policy_fn = GraphedPolicy(self.net, self.obs) if graphed else self.net
        T = args.update_every
        self.buf = {
            k: torch.zeros(T, n, *s, **f)
            for k, s in dict(obs=(self.obs.shape[1],), act=(3,), logp=(), val=(), rew=(), done=()).items()
        }
        self.t, self.resets, self.updates, self.host_depth_sum = 0, 0, 0, 0.0
        self.side = SideLauncher(self.dev) if args.side_thread else None
        if self.side is not None:
            self.side.start()

    def _reset(self, ids: torch.Tensor) -> None:
        k = ids.numel()
        self.pos[ids] = torch.cat(
            [torch.rand(k, 2, device=self.dev) * 3.6 - 1.8, torch.full((k, 1), 0.5, device=self.dev)], 1
        )
        self.vel[ids] = 0.0
        self.goal[ids] = torch.cat(
            [torch.rand(k, 2, device=self.dev) * 3.6 - 1.8, torch.full((k, 1), self.radius, device=self.dev)], 1
        )
        self.ep_len[ids] = 0

    def _observe(self) -> torch.Tensor:
        feat = F.adaptive_avg_pool2d(self.depth[:, None], 4).flatten(1) / self.max_depth
        return torch.cat([self.pos - self.goal, self.vel, self.pos, feat], 1)

    def _physics(self, force: torch.Tensor) -> None:
        """Semi-implicit Euler with gravity, drag, sphere-obstacle and ground/wall contacts."""
        e, r = 0.5, self.radius
        self.vel = self.vel + self.dt * (force - 0.5 * self.vel + self.gravity)
        pos = self.pos + self.dt * self.vel
        d = pos[:, None, :] - self.obstacles
        dist = d.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        n = d / dist
        pen = (self.radii[1:, None] + r - dist).clamp_min(0.0)
        pos = pos + (pen * n).sum(1)
        vn = (self.vel[:, None, :] * n).sum(-1, keepdim=True).clamp_max(0.0) * (pen > 0)
        vel = self.vel - ((1 + e) * vn * n).sum(1)
        below, out = pos[:, 2:] < r, pos[:, :2].abs() > self.arena
        pos = torch.cat([pos[:, :2].clamp(-self.arena, self.arena), torch.where(below, r, pos[:, 2:])], 1)
        self.vel = torch.cat(
            [torch.where(out, -e * vel[:, :2], vel[:, :2]), torch.where(below, -e * vel[:, 2:], vel[:, 2:])], 1
        )
        self.pos = pos

    def _render(self) -> None:
        """Tiled depth camera: analytic ray casts against the ball, the obstacles and the ground, batched."""
        centers = torch.cat([self.pos[:, None, :], self.obstacles], 1)  # (N, S, 3)
        oc = self.cam - centers
        b = torch.einsum("rk,nsk->nsr", self.rays, oc)  # (N, S, R)
        c = (oc * oc).sum(-1) - self.radii**2
        disc = b * b - c[..., None]
        t = -b - disc.clamp_min(0.0).sqrt()
        t = torch.where((disc > 0) & (t > 0), t, torch.inf).amin(1)
        self.depth = torch.minimum(t, self.t_plane).clamp_max(self.max_depth).view(-1, self.H, self.W)

    def step(self) -> None:
        """One env step + policy call, every phase in its own range."""
        args, k = self.args, self.t % self.args.update_every
        with PH[P.ITERATION]:
            if self.side is not None and nvtxsim.is_enabled():
                self.side.jobs.put(True)
            with PH[P.POLICY], torch.inference_mode():
                mean, value = self.policy_fn(self.obs)
                action = mean + torch.exp(self.net.log_std) * torch.randn_like(mean)
                self.buf["obs"][k].copy_(self.obs)
                self.buf["act"][k].copy_(action)
                self.buf["logp"][k].copy_(self.net.log_prob(action, mean))
                self.buf["val"][k].copy_(value)
            with PH[P.ACTION]:
                force = action.clamp(-1.0, 1.0) * self.force_scale
            for _ in range(args.decimation):
                with PH[P.SIM_STEP]:
                    self._physics(force)
            with PH[P.RENDER]:
                self._render()
            with PH[P.CAMERA_READOUT]:
                host = self.depth.to("cpu", copy=True).numpy()  # a real D2H copy on CUDA (pageable memory)
                self.host_depth_sum += float(host[:, ::8, ::8].sum())
            with PH[P.TERMINATION]:
                self.ep_len += 1
                dist = (self.pos - self.goal).norm(dim=-1)
                done = (dist < 0.2) | (self.ep_len >= args.episode_length)
                ids = done.nonzero().squeeze(-1)  # GPU->CPU sync every step, as in Isaac Lab
            with PH[P.REWARD]:
                self.buf["rew"][k].copy_(-dist - 0.01 * (action * action).sum(-1) + 5.0 * (dist < 0.2))
                self.buf["done"][k].copy_(done)
            with PH[P.RESET]:
                if ids.numel():
                    self._reset(ids)
                    self.resets += ids.numel()
            with PH[P.OBSERVATION]:
                self.obs = self._observe()
        self.t += 1
        if self.t % args.update_every == 0:
            self.update(args.update_every)

    def update(self, T: int, gamma: float = 0.99, lam: float = 0.95) -> None:
        """PPO: GAE over the last T steps, 2 epochs x 4 minibatches of clipped-surrogate + value loss."""
        b = {k: v[:T] for k, v in self.buf.items()}
        with PH[P.POLICY_UPDATE]:
            with torch.no_grad():
                next_val = self.net(self.obs)[1]
                adv, gae = torch.zeros_like(b["rew"]), torch.zeros_like(next_val)
                for t in reversed(range(T)):
                    keep = 1.0 - b["done"][t]
                    nv = next_val if t == T - 1 else b["val"][t + 1]
                    gae = b["rew"][t] + gamma * nv * keep - b["val"][t] + gamma * lam * keep * gae
                    adv[t] = gae
                ret = (adv + b["val"]).flatten()
                adv = adv.flatten()
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            obs, act, logp_old = b["obs"].flatten(0, 1), b["act"].flatten(0, 1), b["logp"].flatten()
            for _ in range(2):
                for mb in torch.randperm(obs.shape[0], device=self.dev).chunk(4):
                    mean, value = self.net(obs[mb])
                    ratio = torch.exp(self.net.log_prob(act[mb], mean) - logp_old[mb])
                    a = adv[mb]
                    loss = (
                        -torch.min(ratio * a, ratio.clamp(0.8, 1.2) * a).mean() + 0.5 * (ret[mb] - value).pow(2).mean()
                    )
                    self.opt.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
                    self.opt.step()
        self.updates += 1

    def sync(self) -> None:
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)

    def warmup(self, iterations: int) -> None:
        """Run iterations + one update with nvtxsim disabled, then start the count of rollout steps afresh."""
        if iterations <= 0:
            return
        nvtxsim.disable()
        try:
            for _ in range(iterations):
                self.step()
            self.update(min(self.t, self.args.update_every) or 1)
            self.sync()
        finally:
            nvtxsim.enable()
        self.t = 0

    def run(self, iterations: int) -> float:
        """Time ``iterations`` steps (updates included) in seconds, GPU work finished."""
        self.sync()
        t0 = time.perf_counter()
        for _ in range(iterations):
            nvtxsim.step()  # marks iterations: capture windows (--iterations A:B) and live timing (NVTXSIM_LIVE)
            self.step()
        if self.side is not None:
            self.side.jobs.join()  # its work belongs to these iterations
        self.sync()
        return time.perf_counter() - t0

    def close(self) -> None:
        if self.side is not None:
            self.side.jobs.put(None)
            self.side.join()
            self.sync()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--iterations", type=int, default=30, help="timed, ranged iterations")
    p.add_argument("--warmup", type=int, default=3, help="iterations (+ one update) before, with nvtxsim disabled")
    p.add_argument("--decimation", type=int, default=2, help="sim_step substeps per iteration")
    p.add_argument("--camera", type=_hw, default=(16, 16), metavar="HxW", help="depth tile size per env (>= 4x4)")
    p.add_argument("--update-every", type=int, default=8, help="iterations per rollout / policy_update")
    p.add_argument("--episode-length", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--side-thread", action="store_true", help="second thread with its own GPU work in 'side_work'")
    p.add_argument("--cuda-graph-policy", action="store_true", help="replay the policy from a CUDA graph (cuda only)")
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: this torch build sees no CUDA device")
    if min(args.num_envs, args.iterations + 1, args.decimation, args.update_every) < 1:
        p.error("--num-envs, --decimation and --update-every must be >= 1, --iterations >= 0")
    return args


def _hw(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HxW, e.g. 32x32, got {text!r}") from None
    if h < 4 or w < 4:
        raise argparse.ArgumentTypeError("camera tiles must be at least 4x4")
    return h, w


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    env = DemoEnv(args)
    env.warmup(args.warmup)
    seconds = env.run(args.iterations)
    env.close()
    print(
        f"demo_env: device={args.device} num_envs={args.num_envs} iterations={args.iterations} "
        f"seconds={seconds:.4f} ms_per_iter={1e3 * seconds / max(args.iterations, 1):.3f} updates={env.updates} "
        f"resets={env.resets} side_thread={args.side_thread} "
        f"cuda_graph_policy={args.cuda_graph_policy and args.device == 'cuda'} recording={nvtxsim.is_recording()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
