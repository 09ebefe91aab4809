"""Emit stage, live timing: a cost budget for CUPTI's GPU times (a duty cycle over the iterations).

Why: while CUPTI's activity kinds are on, every launch pays for its record (about 0.7 µs on the H200,
reports/live-cupti-h200.md): on a launch-bound loop of 5-20k launches per iteration that is 4-15 % of the
iteration, far above what a tool left on during training may cost. CPU times cost nothing like that, so
they stay on for every measured iteration; CUPTI is switched on only for a share of them, chosen at random
at each step, sized so that what GPU timing is estimated to cost (the ops CUPTI recorded × the per-op cost,
plus the markers' own time, measured as they are placed) stays within ``NVTXSIM_LIVE_GPU_BUDGET`` percent
of the iterations' wall time (default 2).

Random and not every k-th iteration: a rollout of k env steps and one update per learning iteration would
alias with a fixed period and leave the update (or one env step of the rollout) never measured. The record
says which iterations carried GPU times (``gpu_measured``, and per phase ``gpu_count``), and the readers
divide GPU sums by those.
"""

from __future__ import annotations

import os
import random
from collections import deque

from nvtxsim.emit.notices import report

ENV_BUDGET = "NVTXSIM_LIVE_GPU_BUDGET"  # percent of wall time; 0/off: GPU times on every measured iteration
ENV_OP_NS = "NVTXSIM_LIVE_CUPTI_OP_NS"  # CUPTI's cost per recorded op, ns (default: the H200 probe's)
DEFAULT_PERCENT = 2.0
#: CUPTI's cost per recorded kernel/copy while the kinds are on (H200 probe, 20k launches: 13.59 µs per launch with
#: CUPTI off, 14.29 µs with the mode's kinds): the estimate's per-op term.
DEFAULT_OP_NS = 700
HISTORY = 64  # steps the rate and the check look back over
#: After a GPU-timed iteration, how long its records may take to arrive (CUPTI delivers every 100 ms): the first
#: estimate waits for them, so it is not made of the markers alone.
SETTLE_NS = 300_000_000
OVERSPEND = 1.5  # past this many times the budget over the last HISTORY steps, GPU timing waits
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


class GpuBudget:
    """Decides, at each step, whether the iteration starting gets GPU times (training thread only)."""

    def __init__(self, share: float, seed: int) -> None:
        self.share = share
        self.rng = random.Random(seed)
        self.last_ns: int | None = None  # the previous step
        self.durations: deque[int] = deque(maxlen=HISTORY)  # wall ns of the last steps
        self.spent: deque[int] = deque(maxlen=HISTORY + 1)  # the cost estimate at each of those steps
        self.gpu_steps = 0  # iterations that ran with GPU times, ended
        self.on = False  # the iteration running now has GPU times
        self.first_end: int | None = None  # when the first GPU-timed iteration ended
        self.rate = 1.0  # the share of iterations timed now (for tests and the docs' numbers)

    def decide(self, now_ns: int, spent_ns: int, allowed: bool = True) -> bool:
        """At every step (``now_ns``: perf_counter_ns), with GPU timing's estimated cost so far: whether the iteration
        starting gets GPU times (never when not ``allowed``: not measured, or GPU timing failed)."""
        if self.last_ns is not None:
            self.durations.append(now_ns - self.last_ns)
            if self.on:
                self.gpu_steps += 1
                if self.first_end is None:
                    self.first_end = now_ns
        self.last_ns = now_ns
        self.spent.append(spent_ns)
        self.on = allowed and self._choose(now_ns, spent_ns)
        return self.on

    def _choose(self, now_ns: int, spent_ns: int) -> bool:
        if self.gpu_steps == 0:
            return not self.on and self.first_end is None  # the first iteration probes what one costs
        if self.first_end is not None and now_ns - self.first_end < SETTLE_NS and self.gpu_steps == 1:
            return False  # its records are still on their way: the estimate would hold only the markers
        step_ns = self._typical_step()
        if step_ns <= 0:
            return False
        per_gpu_step = spent_ns / self.gpu_steps
        self.rate = 1.0 if per_gpu_step <= 0 else min(1.0, self.share * step_ns / per_gpu_step)
        if len(self.spent) > 1:  # the recent past: more than the budget allows (an estimate lagging behind)
            recent = sum(self.durations)
            if recent > 0 and (self.spent[-1] - self.spent[0]) > OVERSPEND * self.share * recent:
                return False
        return self.rng.random() < self.rate

    def _typical_step(self) -> float:
        """The mean of the recent steps, without the outliers (kernels compiled on a first call)."""
        if not self.durations:
            return 0.0
        ordered = sorted(self.durations)
        median = ordered[len(ordered) // 2]
        kept = [d for d in self.durations if d <= OUTLIER * median]
        return sum(kept) / len(kept)


__all__ = ["GpuBudget", "budget_from_env", "op_ns_from_env", "ENV_BUDGET", "ENV_OP_NS"]
