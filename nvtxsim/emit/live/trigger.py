"""Emit stage, live timing: the trigger that opens a capture window when a phase slows down."""

from __future__ import annotations

from collections import deque
from typing import Any

from nvtxsim import phases as _phases
from nvtxsim.emit import window as _window
from nvtxsim.emit.notices import report

DEFAULT_TRIGGER_ITERATIONS = 10


class Trigger:
    """``NAME>FACTORx [for N]``: once the phase's CPU time in N measured iterations in a row (default 1; all its
    ranges of an iteration summed) exceeded FACTOR x its baseline, open a capture window of the next
    ``iterations`` iterations. The baseline is the median of the phase's previous measured iterations (the
    last :attr:`BASELINE` under the factor; the rule is checked once :attr:`MIN_BASELINE` are in).
    One firing per run: nsys records one window."""

    BASELINE = 100
    MIN_BASELINE = 10

    def __init__(self, rule: str, iterations: int = DEFAULT_TRIGGER_ITERATIONS) -> None:
        try:
            self.name, self.factor, self.run = _phases.parse_trigger(rule)
        except Exception as exc:
            raise ValueError(str(exc)) from None
        if iterations < 1:
            raise ValueError(f"trigger: the window needs at least 1 iteration, got {iterations}")
        self.name = self.name.removeprefix(f"{_phases.DOMAIN}:")  # the key as the live file writes it
        self.rule, self.iterations = rule.strip(), iterations
        self.baseline: deque = deque(maxlen=self.BASELINE)
        self.slow = 0  # measured iterations in a row over the factor
        self.fired: dict | None = None

    def observe(self, ns: int, iteration: int) -> dict | None:
        """Feed one measured iteration's time of the phase; the firing (once) as a dict, else None."""
        if self.fired is not None:
            return None
        if len(self.baseline) < self.MIN_BASELINE:
            self.baseline.append(ns)
            return None
        base = _median(self.baseline)
        if ns <= self.factor * base:
            self.slow = 0
            self.baseline.append(ns)  # slow iterations stay out: a long slowdown does not raise its own baseline
            return None
        self.slow += 1
        if self.slow < self.run:
            return None
        start = _window.iteration()  # step() calls on_step before it opens windows: the iteration starting now
        if not _window.arm(start, start + self.iterations):
            return None
        self.fired = {
            "rule": self.rule,
            "at": iteration,
            "ns": int(ns),
            "baseline_ns": int(base),
            "window": [start, start + self.iterations - 1],
        }
        report(
            f"live trigger {self.rule}: {ns / max(base, 1):.2f}x the baseline at iteration {iteration}; "
            f"capture window: iterations {start}..{start + self.iterations - 1}"
        )
        return self.fired


def _median(values: Any) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
