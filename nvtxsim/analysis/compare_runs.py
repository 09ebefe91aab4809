"""compare's verdict across runs: the run-wide factor taken out, run-to-run noise measured, effects in absolute terms.

Why (measured on the 24 identical H200 runs of ``reports/raw/gate-h200/``, four captures at a time on one
host): the median iteration of identical code varied from 0.75 to 1.14 ms between runs (a standard
deviation of 27 % in log terms), and every phase moved with it by nearly the same factor. A change that
common to every phase is the host's speed (clocks, another process, the cache), not the code. Divided by
it, a phase's run-to-run noise fell to 1.4 to 9 %. So, per run and phase, the statistic (the median or p99
of the samples) is divided by the run's *run-wide factor*: the median, over the phases other than the
iteration, of the phase's ratio to the baseline runs. The factor itself is reported, and with several runs
per side gated like a phase (a change in every phase, beyond the factor's own run-to-run noise).

With two or more runs on one side the noise is measured: the pooled run-to-run standard deviation of the
(log) statistic within each side gives a Student-t interval of the difference. With one run per side it
cannot be: the interval is the run's own bootstrap interval widened by an assumed run-to-run noise
(:data:`ONE_RUN_NOISE_PCT`), a conservative rule that says so in the notes.

A phase counts as slower only when its change is also large in absolute terms: at least ``min_share`` % of
the iteration's time (:data:`MIN_SHARE_PCT`): a few microseconds more in a tiny phase are not worth a
failed CI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

MIN_SHARE_PCT = 5.0
"""A change smaller than this share of the iteration is not a regression: a few microseconds more in a tiny
phase are not worth a failed CI (the issue's +41 % of a 29 µs reset was 0.4 % of the iteration). 5 %, because
what a CI gate is for is a change of 10 % of the iteration or more, and below 5 % the side effects of a
change elsewhere are as large: on the H200, 0.15 ms planted in policy moved sim_step by +7 % (3 % of the
iteration) across three runs a side. ``--min-share`` lowers it for a quiet host."""

ONE_RUN_NOISE_PCT = 25.0
"""With one run per side, the run-to-run noise assumed on each side of the interval (in ratio terms). After
the run-wide factor, identical H200 runs differed by up to 35 % in sim_step (a standard deviation of 9 %,
the others 1.4 to 5 %): 25 % kept the false alarms to 2 in 60 identical pairs (15 %: 4 in 60) and still
caught 34 of 40 slowdowns of 9 % of the iteration (``reports/compare-gate.md``)."""

MIN_RUN_NOISE = 0.01
"""Floor of the measured run-to-run standard deviation (log terms): two or three runs can agree by chance
far more closely than the truth."""

MIN_FACTOR_PHASES = 3  # fewer phases than this: no run-wide factor (it would be one phase's own change)


@dataclass
class Shift:
    """One phase's change beyond the run-wide factor, with its interval (percent) and absolute size."""

    pct: float
    low_pct: float
    high_pct: float
    noise_pct: float | None  # run-to-run standard deviation used (percent), None with one run per side
    share_pct: float | None  # the change as a share of the iteration's time, None without an iteration


def t_quantile(p: float, dof: int) -> float:
    """Student-t quantile ``p`` for ``dof`` degrees of freedom (no scipy): exact for 1 and 2, else the
    Cornish-Fisher expansion (within 0.3 % of the table at 3 and beyond)."""
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        return (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    z = NormalDist().inv_cdf(p)
    v = float(dof)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


def run_factors(base: np.ndarray, new: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per run, the log run-wide factor: the median over the ``usable`` phases (columns) of the run's log
    statistic minus the baseline runs' mean. ``base``/``new``: runs × phases, log ns. Zero when fewer
    than :data:`MIN_FACTOR_PHASES` phases are usable."""
    if usable.sum() < MIN_FACTOR_PHASES:
        return np.zeros(len(base)), np.zeros(len(new))
    ref = base[:, usable].mean(axis=0)
    return np.median(base[:, usable] - ref, axis=1), np.median(new[:, usable] - ref, axis=1)


def run_shift(zb: np.ndarray, zn: np.ndarray, confidence: float) -> tuple[float, float, float, float]:
    """Across runs: the log difference of the means of ``zn`` and ``zb`` (factor-free log statistics, one per
    run), its Student-t interval and the pooled run-to-run standard deviation (needs 3 runs in all)."""
    dof = len(zb) + len(zn) - 2
    ss = float(((zb - zb.mean()) ** 2).sum() + ((zn - zn.mean()) ** 2).sum())
    sd = max(math.sqrt(ss / dof), MIN_RUN_NOISE)
    d = float(zn.mean() - zb.mean())
    half = t_quantile(0.5 + confidence / 2, dof) * sd * math.sqrt(1 / len(zb) + 1 / len(zn))
    return d, d - half, d + half, sd


def one_run_shift(d: float, boot_low: float, boot_high: float, noise_pct: float) -> tuple[float, float, float]:
    """One run per side: the log difference ``d`` with the run's own bootstrap interval (log), each end
    moved out by the assumed run-to-run noise ``noise_pct``."""
    m = math.log1p(noise_pct / 100)
    return d, boot_low - m, boot_high + m


def as_shift(d: float, lo: float, hi: float, sd: float | None, part: float | None, whole: float | None) -> Shift:
    """Log difference and interval → percent; ``part``/``whole``: the phase's and the iteration's baseline
    statistic (ns, factor-free), for the change's share of the iteration."""
    rel = math.expm1(d)
    share = rel * part / whole * 100 if part is not None and whole else None
    return Shift(rel * 100, math.expm1(lo) * 100, math.expm1(hi) * 100, sd * 100 if sd is not None else None, share)


def verdict(s: Shift, min_share: float) -> str:
    """slower / faster: the interval wholly on one side of 0 and the change at least ``min_share`` % of the
    iteration; else no change."""
    big = s.share_pct is None or abs(s.share_pct) >= min_share
    if big and s.low_pct > 0:
        return "slower"
    if big and s.high_pct < 0:
        return "faster"
    return "no change"
