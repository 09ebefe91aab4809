"""Emit stage, live timing: the trigger that opens a capture window when a phase slows down.

A slow iteration is only known to be slow once the phase has run past FACTOR x its baseline; a window
opened at the next ``step()`` would record the iterations after it, and a one-off stall would never be
in the capture. So a watch thread (:class:`Watch`) looks at the phase while it runs: once its time in
the running iteration passes the limit, the window opens there and then, and the rest of the slow
iteration is recorded. The window is marked with :data:`~nvtxsim.phases.TRIGGER_MARK` (which rule,
which iteration), which the report reads.
"""

from __future__ import annotations

import threading
import time
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
        # The running iteration, for the watch thread: its limit (None: this iteration cannot fire), the phase's
        # time in ranges that ended, and the start of the one running (perf_counter_ns; None: none).
        self.limit: float | None = None
        self.base = 0.0
        self.done_ns = 0
        self.t0: int | None = None
        self._lock = threading.Lock()

    def observe(self, ns: int, iteration: int) -> dict | None:
        """Feed one measured iteration's time of the phase; the firing (once) as a dict, else None."""
        with self._lock:
            fired = self._observe(ns, iteration)
            self._next_limit()
            return fired

    def _observe(self, ns: int, iteration: int) -> dict | None:
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
        return self._fire(ns, base, iteration, start, during=False)

    def _next_limit(self) -> None:
        """The running iteration's limit: set when its slowness alone would fire the rule."""
        self.done_ns, ready = 0, self.fired is None and len(self.baseline) >= self.MIN_BASELINE
        self.base = _median(self.baseline) if ready else 0.0
        self.limit = self.factor * self.base if ready and self.slow + 1 >= self.run else None

    def check(self, now: int) -> dict | None:
        """From the watch thread: the firing, when the phase's time in the running iteration is past its limit."""
        limit, t0 = self.limit, self.t0
        if limit is None or self.fired is not None:
            return None
        ns = self.done_ns + (now - t0 if t0 is not None else 0)
        if ns <= limit:
            return None
        with self._lock:
            if self.fired is not None or self.limit is None:
                return None
            at = max(_window.iteration(), 0)
            return self._fire(ns, self.base, at, at, during=True)

    def _fire(self, ns: int, base: float, iteration: int, start: int, *, during: bool) -> dict | None:
        """Open the window: from the iteration starting now for ``iterations`` iterations (``during``: from the
        slow iteration still running, plus ``iterations`` whole ones after it)."""
        last = start + self.iterations - (0 if during else 1)
        ratio = ns / max(base, 1)
        when = "while it ran (the rest of it is recorded)" if during else "after it"
        note = (
            f"{_phases.TRIGGER_MARK}{self.rule} fired at iteration {iteration} ({ratio:.2f}x its baseline "
            f"{base / 1e6:.3g} ms); window: iterations {start}..{last}, opened {when}"
        )
        opened = _window.open_now(last + 1, note) if during else _window.arm(start, last + 1, note)
        if not opened:
            return None
        self.fired = {
            "rule": self.rule,
            "at": iteration,
            "ns": int(ns),
            "baseline_ns": int(base),
            "window": [start, last],
        }
        self.limit = None
        report(
            f"live trigger {self.rule}: {ratio:.2f}x the baseline at iteration {iteration}; "
            f"capture window: iterations {start}..{last}"
        )
        return self.fired


class Watch:
    """The thread that checks a :class:`Trigger` while its phase runs (a daemon: it never holds the program up).

    It polls at a tenth of the limit (1 ms to 50 ms), so it costs a few wake-ups per iteration."""

    def __init__(self, trigger: Trigger, on_fire: Any) -> None:
        self.trigger, self.on_fire = trigger, on_fire
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvtxsim-live-trigger", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t = self.trigger
        while t.fired is None:
            limit = t.limit
            if self._stop.wait(min(max(limit / 10e9, 0.001), 0.05) if limit else 0.05):
                return
            try:
                fired = t.check(time.perf_counter_ns())
                if fired is not None:
                    self.on_fire(fired)
            except Exception:  # never break the program over the trigger
                return

    def stop(self) -> None:
        self._stop.set()


def _median(values: Any) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
