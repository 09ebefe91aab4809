"""Emit stage, live timing: a cost budget for CUPTI's GPU times (a duty cycle over the iterations).

Why: while CUPTI's activity kinds are on, every launch pays for its record (0.7 µs on the H200's launch-only
loop, about 2-4 µs in a real Isaac Lab 3.0 training, reports/live-cupti-h200.md): 4-20 % of an iteration, far
above what a tool left on during training may cost. CPU times cost nothing like that, so they stay on for every
measured iteration; CUPTI is switched on only for a share of them, sized so that what GPU timing is estimated to
cost (the ops CUPTI recorded × the per-op cost, plus the markers' own time, measured as they are placed) stays
within ``NVTXSIM_LIVE_GPU_BUDGET`` percent of the iterations' wall time (default 2).

CUPTI is switched in *blocks* of consecutive iterations, each started at random: a *lead* iteration with the
kinds on and no markers, the *timed* ones, a *trail* iteration with the kinds on and no markers, then off. Why
the lead and the trail: on the H200, switching the kinds on and off at every iteration inflated the busy time of
Isaac Lab's CUDA-graph physics step 10-15× (sim_step read 3.5-5 ms per range where nsys has 0.27 ms): the
iterations next to a switch are not measured as they ran. Why at random and not every k-th iteration: a rollout
of k env steps and one update per learning iteration aliases with a fixed period (and with a budget that cuts
and resumes at a threshold, which alternated on/off at every step and never timed the update).

The record says which iterations carried GPU times (``gpu_measured``, and per phase ``gpu_count``), and the
readers divide GPU sums by those.
"""

from __future__ import annotations

import os
import random
from collections import deque

from nvtxsim.emit.notices import report

ENV_BUDGET = "NVTXSIM_LIVE_GPU_BUDGET"  # percent of wall time; 0/off: GPU times on every measured iteration
ENV_OP_NS = "NVTXSIM_LIVE_CUPTI_OP_NS"  # CUPTI's cost per recorded op, ns (default: the H200 probe's)
DEFAULT_PERCENT = 2.0
#: CUPTI's cost per recorded kernel/copy while the kinds are on: the estimate's per-op term. The H200 launch-only
#: probe paid 0.7 µs (13.59 µs per launch with CUPTI off, 14.29 µs with the mode's kinds); a real Isaac Lab 3.0
#: Cartpole training (rsl_rl, 4096 envs) paid 2.0 µs: its env steps with CUPTI on and no markers lasted 8.60 ms
#: against 7.95 ms off, 317 ops each (the budget's own random on/off steps; reports/live-cupti-h200.md).
DEFAULT_OP_NS = 2000
HISTORY = 64  # steps the rate and the check look back over
#: After a GPU-timed iteration, how long its records may take to arrive (CUPTI delivers every 100 ms): the first
#: estimate waits for them, so it is not made of the markers alone.
SETTLE_NS = 300_000_000
OVERSPEND = 1.5  # past this many times the budget over the last HISTORY steps, blocks start less often
ENV_BLOCK = "NVTXSIM_LIVE_GPU_BLOCK"  # LEAD,TIMED,TRAIL iterations of a block (default 1,4,1)
DEFAULT_BLOCK = (1, 4, 1)
OFF, QUIET, TIMED = 0, 1, 2  # an iteration's GPU state: CUPTI off; CUPTI on, no markers; CUPTI on and timed
OUTLIER = 20  # a step longer than this many medians (a first call compiling kernels) is left out of the rate


def budget_from_env() -> float | None:
    """The budget as a share of wall time (0.02), or None for none (``0``/``off``); a bad value: one line, the default."""
    raw = os.environ.get(ENV_BUDGET, "").strip().lower()
    if not raw:
        return DEFAULT_PERCENT / 100
    if raw in ("0", "off", "no", "false", "none"):
        return None
    try:
        value = float(raw.rstrip("%"))
        if 0 < value <= 100:
            return value / 100
    except ValueError:
        pass
    report(f"{ENV_BUDGET}={raw!r} ignored (expected a percent in (0, 100], or off); using {DEFAULT_PERCENT:g}")
    return DEFAULT_PERCENT / 100


def op_ns_from_env() -> int:
    raw = os.environ.get(ENV_OP_NS, "").strip()
    if raw:
        try:
            value = int(raw)
            if 0 <= value <= 1_000_000:
                return value
        except ValueError:
            pass
        report(f"{ENV_OP_NS}={raw!r} ignored (expected ns per op, 0 to 1000000); using {DEFAULT_OP_NS}")
    return DEFAULT_OP_NS


def block_from_env() -> tuple[int, int, int]:
    """``NVTXSIM_LIVE_GPU_BLOCK=LEAD,TIMED,TRAIL`` (iterations; default 1,4,1); a bad value: one line, the default."""
    raw = os.environ.get(ENV_BLOCK, "").strip()
    if raw:
        try:
            lead, timed, trail = (int(x) for x in raw.split(","))
            if 0 <= lead <= 16 and 1 <= timed <= 1000 and 0 <= trail <= 16:
                return lead, timed, trail
        except ValueError:
            pass
        report(f"{ENV_BLOCK}={raw!r} ignored (expected LEAD,TIMED,TRAIL iterations, e.g. 1,4,1); using 1,4,1")
    return DEFAULT_BLOCK


class GpuBudget:
    """Decides, at each step, the GPU state of the iteration starting (training thread only): :data:`OFF`,
    :data:`QUIET` (CUPTI on, no markers: a block's lead or trail) or :data:`TIMED`."""

    def __init__(self, share: float, seed: int, block: tuple[int, int, int] = DEFAULT_BLOCK) -> None:
        self.share = share
        self.lead, self.timed, self.trail = block
        self.rng = random.Random(seed)
        self.last_ns: int | None = None  # the previous step
        self.durations: deque[int] = deque(maxlen=HISTORY)  # wall ns of the last steps
        self.spent: deque[int] = deque(maxlen=HISTORY + 1)  # the cost estimate at each of those steps
        self.on_steps = 0  # iterations that ran with CUPTI on (lead, timed, trail), ended
        self.gpu_steps = 0  # of those, the timed ones
        self.state = OFF  # the iteration running now
        self.plan: deque[int] = deque()  # the rest of the current block
        self.first_end: int | None = None  # when the probe block ended
        self.rate = 1.0  # the share of iterations with CUPTI on, as sized now (for tests and the docs' numbers)

    def decide(self, now_ns: int, spent_ns: int, allowed: bool = True) -> int:
        """At every step (``now_ns``: perf_counter_ns), with GPU timing's estimated cost so far: the state of the
        iteration starting (never on when not ``allowed``: not measured, or GPU timing failed; the block ends)."""
        if self.last_ns is not None:
            self.durations.append(now_ns - self.last_ns)
            if self.state != OFF:
                self.on_steps += 1
                self.gpu_steps += self.state == TIMED
        self.last_ns = now_ns
        self.spent.append(spent_ns)
        if not allowed:
            self.plan.clear()
            self.state = OFF
        else:
            self.state = self._next(now_ns, spent_ns)
        return self.state

    def _next(self, now_ns: int, spent_ns: int) -> int:
        if self.on_steps == 0 and self.state == OFF and self.first_end is None:
            self.plan.extend([TIMED] * self.timed + [QUIET] * self.trail)  # the probe: CUPTI was on since the start
        if self.plan:
            return self.plan.popleft()
        if self.first_end is None:
            self.first_end = now_ns
        if now_ns - self.first_end < SETTLE_NS and self.gpu_steps <= self.timed:
            return OFF  # the probe's records are still on their way: the estimate would hold only the markers
        step_ns = self._typical_step()
        if step_ns <= 0 or self.on_steps == 0:
            return OFF
        per_on_step = spent_ns / self.on_steps
        self.rate = 1.0 if per_on_step <= 0 else min(1.0, self.share * step_ns / per_on_step)
        room = self._room()
        if self.state != OFF and self.rate >= 1.0 and room >= 1.0:
            return TIMED  # everything fits and CUPTI is on: stay on, no switch, no lead or trail
        length = self.lead + self.timed + self.trail
        if self.rate >= 1.0:
            start = 1.0
        else:  # off gaps of mean 1/p between blocks of `length`: on for length / (length + 1/p) = rate
            start = min(1.0, self.rate / (length * (1.0 - self.rate)))
        if self.rng.random() >= start * room:
            return OFF
        self.plan.extend([QUIET] * self.lead + [TIMED] * self.timed + [QUIET] * self.trail)
        return self.plan.popleft()

    def _room(self) -> float:
        """1 while the last steps spent within OVERSPEND × the budget; less, in proportion, past it (a smooth
        throttle: a cut-off at a threshold alternates on and off with a period of its own)."""
        if len(self.spent) < 2:
            return 1.0
        recent = sum(self.durations)
        spent = self.spent[-1] - self.spent[0]
        if recent <= 0 or spent <= 0:
            return 1.0
        return min(1.0, OVERSPEND * self.share * recent / spent)

    def _typical_step(self) -> float:
        """The mean of the recent steps, without the outliers (kernels compiled on a first call)."""
        if not self.durations:
            return 0.0
        ordered = sorted(self.durations)
        median = ordered[len(ordered) // 2]
        kept = [d for d in self.durations if d <= OUTLIER * median]
        return sum(kept) / len(kept)


__all__ = [
    "GpuBudget",
    "budget_from_env",
    "block_from_env",
    "op_ns_from_env",
    "ENV_BUDGET",
    "ENV_BLOCK",
    "ENV_OP_NS",
    "OFF",
    "QUIET",
    "TIMED",
]
