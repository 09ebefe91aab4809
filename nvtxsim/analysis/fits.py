"""The fits behind ``nvtxsim scaling``: a centre per run, the log-log slope, the non-negative
quadratic, the floor-plus-power fit that gives the class, and intervals that admit doubt.

Why a module of its own: the sweep (:mod:`nvtxsim.analysis.scaling`) decides *what* is sampled
(per iteration, per call, per run); this decides what the samples say, and when they say too
little. An exponent at an end of the fit's grid, or one whose interval has no width, is not a
measurement: :attr:`MetricFit.uncertain` says so and the reports show the log-log slope beside it.
docs/scaling.md explains the method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Classification thresholds (documented in docs/scaling.md).
CONSTANT_GROWTH = 0.25  # fitted y(N_max) / y(N_min) - 1 below this: constant over the sweep
SUBLINEAR_BELOW = 0.75
SUPERLINEAR_ABOVE = 1.25
MIN_RUNS = 3
K_GRID = np.round(np.arange(0.05, 3.0001, 0.01), 2)
K_FINE = 0.0005  # the refinement step around the grid's best k
BOOTSTRAP = 200
MIN_REL_SPREAD = 0.01  # a run's relative spread is never taken below 1 % (exact repeats would get all the weight)
STRADDLES = "interval reaches into another class"
ZERO_WIDTH = 1e-6  # an interval narrower than this has no width (the resamples all gave one k)
ZERO_SCALE = 1e-3  # a run at 0 weighs as one at this fraction of the largest run's value


@dataclass
class Centre:
    value: float  # median of the per-iteration samples
    rel: float  # relative standard error of that centre (from the spread of the samples)


def centre(samples: np.ndarray) -> Centre:
    """Median and its relative error: the median resists the odd slow iteration (a GC pause, a
    checkpoint); the error, from the spread of the log of the samples, weights the fits."""
    s = np.asarray(samples, dtype=np.float64)
    med = float(np.median(s)) if len(s) else 0.0
    pos = s[s > 0]
    if med <= 0 or len(pos) < 2:
        return Centre(med, MIN_REL_SPREAD)
    rel = float(np.std(np.log(pos), ddof=1) / math.sqrt(len(pos)))
    return Centre(med, max(rel, MIN_REL_SPREAD))


@dataclass
class PowerFit:
    """y = floor + coef · (N / scale)^exponent with floor, coef ≥ 0 (weighted by relative errors).

    N is taken relative to ``scale`` (the sweep's largest value) so N^k neither overflows nor
    underflows whatever the parameter's unit."""

    floor: float
    coef: float
    exponent: float
    growth: float  # fitted y(N_max) / y(N_min) - 1
    scale: float = 1.0

    def at(self, n: float) -> float:
        """The fitted value at ``n`` (predictions, plotted curves)."""
        try:
            return self.floor + self.coef * (n / self.scale) ** self.exponent
        except OverflowError:
            return math.inf

    @property
    def coef_per_n(self) -> float | None:
        """The coefficient of N^k itself (JSON ``coef``); None where it is not a float."""
        try:
            c = self.coef * self.scale**-self.exponent
        except (OverflowError, ZeroDivisionError):
            return None
        return c if math.isfinite(c) else None


def _weights(y: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """1 / absolute error of each run's centre (relative weights: small and large N count alike).

    A run at 0 (a phase that allocates or launches nothing at small N) has no relative error: it
    is weighted as a run at ``ZERO_SCALE`` of the largest centre, not infinitely (which would turn
    the sums into inf and NaN)."""
    scale = np.maximum(y, ZERO_SCALE * float(np.max(y, initial=0.0)))
    with np.errstate(divide="ignore"):
        w = 1.0 / (np.maximum(rel, MIN_REL_SPREAD) * scale)
    return np.where(np.isfinite(w), w, 0.0)


def _nnls_on_grid(x: np.ndarray, y: np.ndarray, w: np.ndarray, ks: np.ndarray):
    """For each k in ``ks``: the non-negative weighted least squares of y on [1, x^k] and its residual."""
    X = x[None, :] ** ks[:, None]  # (K, n)
    s0, s1, s2 = w.sum(), (w * X).sum(1), (w * X * X).sum(1)
    t0, t1 = (w * y).sum(), (w * X * y).sum(1)
    det = s0 * s2 - s1 * s1
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(det > 0, (s0 * t1 - s1 * t0) / det, 0.0)
        a = np.where(s0 > 0, (t0 - b * s1) / s0, 0.0)
        neg_b = b < 0
        a, b = np.where(neg_b, t0 / s0, a), np.where(neg_b, 0.0, b)
        neg_a = a < 0
        a, b = np.where(neg_a, 0.0, a), np.where(neg_a, t1 / s2, b)
    sse = (w * (y[None, :] - a[:, None] - b[:, None] * X) ** 2).sum(1)
    return a, b, sse


def fit_power(x: np.ndarray, y: np.ndarray, rel: np.ndarray) -> PowerFit:
    """Grid search over k of the non-negative weighted least squares of y on [1, x^k], then a finer
    grid around the best k (step ``K_FINE``): an exponent, and its bootstrap interval, not rounded
    to the coarse grid (an interval of zero width then means the resamples truly agree)."""
    w = _weights(y, rel) ** 2
    scale = float(x.max())
    u = x / scale
    a, b, sse = _nnls_on_grid(u, y, w, K_GRID)
    i = int(np.argmin(sse))
    fine = np.clip(np.arange(K_GRID[i] - 0.01, K_GRID[i] + 0.01 + K_FINE / 2, K_FINE), K_GRID[0], K_GRID[-1])
    fa, fb, fsse = _nnls_on_grid(u, y, w, fine)
    j = int(np.argmin(fsse))
    k, a0, b0 = (float(fine[j]), float(fa[j]), float(fb[j])) if fsse[j] < sse[i] else (float(K_GRID[i]), a[i], b[i])
    y_lo, y_hi = a0 + b0 * float(u.min()) ** k, a0 + b0
    growth = float(y_hi / y_lo - 1) if y_lo > 0 else (math.inf if y_hi > 0 else 0.0)
    return PowerFit(floor=float(a0), coef=float(b0), exponent=k, growth=growth, scale=scale)


def at_bound(k: float | None) -> str | None:
    """``"lower"``/``"upper"`` when ``k`` sits at an end of the fit's grid (the data asked for
    less or more than the grid allows: the fit is a bound, not an estimate), else None."""
    if k is None:
        return None
    if k <= K_GRID[0] + K_FINE / 2:
        return "lower"
    if k >= K_GRID[-1] - K_FINE / 2:
        return "upper"
    return None


def classify(p: PowerFit) -> str:
    """The class of a floor-plus-power fit: growth over the sweep first (a tiny growth term on a
    floor is constant, whatever its exponent), then the exponent."""
    if p.coef <= 0 or p.growth < CONSTANT_GROWTH:
        return "constant"
    return class_of_exponent(p.exponent)


def class_of_exponent(k: float) -> str:
    """The class an exponent alone falls in (also used on the bootstrap interval's ends)."""
    if k <= 0:
        return "constant"
    if k < SUBLINEAR_BELOW:
        return "sublinear"
    if k > SUPERLINEAR_ABOVE:
        return "superlinear"
    return "linear"


def loglog_slope(x: np.ndarray, y: np.ndarray, rel: np.ndarray) -> tuple[float, float]:
    """Weighted least-squares slope of log y on log x and its standard error (inflated by excess scatter)."""
    lx, ly, w = np.log(x), np.log(y), 1.0 / np.maximum(rel, MIN_REL_SPREAD) ** 2
    A = np.stack([np.ones_like(lx), lx], axis=1)
    cov = np.linalg.inv(A.T @ (A * w[:, None]))
    beta = cov @ (A.T @ (w * ly))
    if len(x) > 2:
        chi2 = float((w * (ly - A @ beta) ** 2).sum()) / (len(x) - 2)
        cov = cov * max(1.0, chi2)
    return float(beta[1]), float(math.sqrt(max(cov[1, 1], 0.0)))


def quadratic(x: np.ndarray, y: np.ndarray, rel: np.ndarray) -> list[float]:
    """a + b·N + c·N² with a, b, c ≥ 0: weighted ``numpy.linalg.lstsq`` on every subset of the three
    terms, the best fit whose coefficients are all non-negative (that is the non-negative least
    squares optimum). Relative weights; x scaled for conditioning."""
    scale = float(x.max())
    u = x / scale
    A = np.stack([np.ones_like(u), u, u * u], axis=1)
    sw = _weights(y, rel)
    Aw, yw = A * sw[:, None], y * sw
    best, best_sse = np.zeros(3), float((yw**2).sum())
    for cols in ((0, 1, 2), (0, 1), (0, 2), (1, 2), (0,), (1,), (2,)):
        c, *_ = np.linalg.lstsq(Aw[:, cols], yw, rcond=None)
        if (c < 0).any():
            continue
        sse = float(((yw - Aw[:, cols] @ c) ** 2).sum())
        if sse < best_sse * (1 - 1e-12):
            best, best_sse = np.zeros(3), sse
            best[list(cols)] = c
    return [float(best[0]), float(best[1] / scale), float(best[2] / scale**2)]


def solve_quadratic(q: list[float], target: float) -> float | None:
    """The largest N ≥ 0 with a + b·N + c·N² ≤ target (None: not even at 0; inf: never exceeded)."""
    a, b, c = q
    if a > target:
        return None
    if c > 0:
        return (-b + math.sqrt(b * b + 4 * c * (target - a))) / (2 * c)
    return (target - a) / b if b > 0 else math.inf


@dataclass
class MetricFit:
    """One metric of one phase across the runs."""

    metric: str
    centres: list[float]
    rel: list[float]
    cls: str | None = None
    exponent: float | None = None  # growth exponent k (0 when constant)
    exponent_low: float | None = None
    exponent_high: float | None = None
    power: PowerFit | None = None
    slope: float | None = None  # log-log slope
    slope_err: float | None = None
    quadratic: list[float] | None = None
    note: str = ""
    interval_from: str = "iterations"  # what was resampled: "iterations" (bootstrap) or "runs" (one left out)

    @property
    def model(self) -> str:
        """What predicts this metric: memory adds up constant, per-env and pairwise buffers, so the
        non-negative quadratic; times sit on launch-latency floors, so the floor-plus-power fit."""
        return "quadratic" if self.metric in ("memory", "peak") and self.quadratic is not None else "power"

    def at(self, n: float) -> float:
        """The value at ``n`` from the model that predicts this metric (see :attr:`model`)."""
        if self.model == "quadratic":
            a, b, c = self.quadratic or (0.0, 0.0, 0.0)
            return a + b * n + c * n * n
        return self.power.at(n) if self.power is not None else 0.0

    @property
    def doubt(self) -> str:
        """Why the class or exponent is not to be trusted ("" when nothing says so): an exponent at an
        end of the fit's grid (the data asked for more or less than the grid allows: k is a bound,
        not an estimate), an interval of zero width while the phase grows (every resample landed on
        the same k: too few distinct samples to measure a spread), or an interval that reaches into
        another class (noisy or too few runs)."""
        if self.cls in (None, "none", "constant"):
            return self._straddles()
        end = at_bound(self.exponent)
        if end is not None:
            return f"k at the fit's {end} bound {self.exponent:.2f}: a bound, not an estimate"
        if self.exponent_low is not None and self.exponent_high is not None and self.interval_from == "iterations":
            if self.exponent_high - self.exponent_low < ZERO_WIDTH:
                return "interval of zero width: the resamples cannot tell"
        return self._straddles()

    @property
    def degenerate(self) -> bool:
        """The exponent is a bound of the grid or its interval has no width: the interval says nothing
        (the reports show the log-log slope in its place)."""
        return self.doubt not in ("", STRADDLES)

    def _straddles(self) -> str:
        if self.exponent_low is None or self.exponent_high is None:
            return ""
        if class_of_exponent(self.exponent_low) != class_of_exponent(self.exponent_high):
            return STRADDLES
        return ""

    @property
    def uncertain(self) -> bool:
        """Whether :attr:`doubt` has a reason: the reports mark the class with ``?`` and show the log-log slope."""
        return bool(self.doubt)

    def as_dict(self) -> dict:
        """The JSON ``fit.<metric>`` object (raw numbers; non-finite growth as null)."""
        p = self.power
        return {
            "class": self.cls,
            "class_uncertain": self.uncertain,
            "doubt": self.doubt,
            "exponent_at_bound": at_bound(self.exponent) if self.cls not in (None, "none", "constant") else None,
            "exponent": self.exponent,
            "exponent_interval": [self.exponent_low, self.exponent_high] if self.exponent_low is not None else None,
            "interval_from": self.interval_from,
            "loglog_slope": self.slope,
            "loglog_slope_err": self.slope_err,
            "floor": p.floor if p else None,
            "coef": p.coef_per_n if p else None,
            "growth_exponent": p.exponent if p else None,
            "growth_over_sweep": p.growth if p and math.isfinite(p.growth) else None,
            "quadratic": self.quadratic,
            "predicts_with": self.model if self.power is not None else None,
            "note": self.note,
        }


def fit_metric(
    metric: str, values: np.ndarray, samples: list[np.ndarray], rng: np.random.Generator | None
) -> MetricFit:
    """Every fit of one metric of one phase: the log-log slope from two runs; from three the
    quadratic, the floor-plus-power fit that gives the class, and the exponent's bootstrap interval."""
    cs = [centre(s) for s in samples]
    y = np.array([c.value for c in cs])
    rel = np.array([c.rel for c in cs])
    mf = MetricFit(metric=metric, centres=y.tolist(), rel=rel.tolist())
    if not (y > 0).any():
        mf.cls, mf.exponent = "none", None
        mf.note = {"gpu": "no GPU work", "cpu": "no time"}.get(metric, "no GPU memory allocated")
        return mf
    ok = y > 0
    if ok.sum() >= 2:
        mf.slope, mf.slope_err = loglog_slope(values[ok], y[ok], rel[ok])
    if len(values) < MIN_RUNS:
        return mf
    if ok.sum() < len(y):
        mf.note = f"{int((~ok).sum())} run(s) at 0 left out of the log-log slope"
    mf.quadratic = quadratic(values, y, rel)
    mf.power = fit_power(values, y, rel)
    mf.cls = classify(mf.power)
    mf.exponent = 0.0 if mf.cls == "constant" else mf.power.exponent
    if mf.cls == "constant":  # predict a constant, not a growth term too small to classify
        w = _weights(y, rel) ** 2
        mf.power = PowerFit(floor=float((w * y).sum() / w.sum()), coef=0.0, exponent=0.0, growth=mf.power.growth)
    if rng is not None:  # None: one exact value per run (fit_exact gives the interval)
        mf.exponent_low, mf.exponent_high = _bootstrap_exponent(values, samples, rng)
    return mf


def fit_exact(metric: str, values: np.ndarray, y: np.ndarray) -> MetricFit:
    """The fits of a metric measured once per run (a phase's memory, the process peak): no samples to
    resample, so its interval comes from leaving one run out at a time (with four runs or more; with
    three, a fit on two points says nothing, and the interval is left out)."""
    rel = np.full(len(y), MIN_REL_SPREAD)
    mf = fit_metric(metric, values, [np.array([v]) for v in y], None)
    mf.rel, mf.interval_from = rel.tolist(), "runs"
    if mf.cls in (None, "none") or len(values) <= MIN_RUNS:
        return mf
    ks = []
    for i in range(len(values)):
        keep = np.arange(len(values)) != i
        if not (y[keep] > 0).any():
            ks.append(0.0)
            continue
        p = fit_power(values[keep], y[keep], rel[keep])
        ks.append(0.0 if classify(p) == "constant" else p.exponent)
    mf.exponent_low, mf.exponent_high = float(min(ks)), float(max(ks))
    return mf


def _bootstrap_exponent(
    values: np.ndarray, samples: list[np.ndarray], rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """95 % percentile interval of the growth exponent (0 when a resample is constant), resampling iterations."""
    ks = []
    for _ in range(BOOTSTRAP):
        cs = [centre(s[rng.integers(0, len(s), len(s))]) if len(s) else Centre(0.0, MIN_REL_SPREAD) for s in samples]
        y = np.array([c.value for c in cs])
        if (y <= 0).all():
            continue
        p = fit_power(values, y, np.array([c.rel for c in cs]))
        ks.append(0.0 if classify(p) == "constant" else p.exponent)
    if not ks:
        return None, None
    lo, hi = np.percentile(ks, [2.5, 97.5])
    return float(lo), float(hi)
