"""Scaling: how each phase's time per iteration and GPU memory grow with a parameter, from a sweep of runs.

Why: users size runs (``num_envs``, batch size, resolution) by trial and error. Given a few runs at
different values of one parameter, this says per phase whether its CPU time, GPU busy time and GPU
memory per iteration are constant, sublinear, linear or superlinear in it, predicts them at another
value and finds the largest value whose peak memory fits a budget. docs/scaling.md explains the
method; in short:

* per run and phase, the per-iteration samples (as the ``iterations`` view counts them; warm-up
  dropped with ``skip_first``) give a centre (median) and a relative spread (standard error of the
  log of the samples);
* a **log-log slope** (weighted least squares of log y on log N, weights from the spread, error
  scaled up when the points scatter more than their spread) and a **quadratic** a + b·N + c·N²
  (weighted ``numpy.linalg.lstsq``) are reported;
* the **class** comes from a floor-plus-power fit y = a + b·N^k (a, b ≥ 0): the floor a absorbs what
  does not grow (launch latency, fixed work), so a phase that sits on a launch-latency floor at
  small N and grows at large N is classified by its growth k, not by the flattened slope. A phase
  whose fitted growth over the sweep is below ``CONSTANT_GROWTH`` is ``constant``; otherwise k
  below ``SUBLINEAR_BELOW`` is ``sublinear``, above ``SUPERLINEAR_ABOVE`` ``superlinear``, else
  ``linear``. k's interval comes from a seeded bootstrap over the iterations of each run.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nvtxsim.analysis.iterations import per_iteration, per_iteration_max, steps_cost, steps_per_s
from nvtxsim.analysis.memory import process_peak, range_memory
from nvtxsim.errors import NvtxsimError

#: Classification thresholds (documented in docs/scaling.md).
CONSTANT_GROWTH = 0.25  # fitted y(N_max) / y(N_min) - 1 below this: constant over the sweep
SUBLINEAR_BELOW = 0.75
SUPERLINEAR_ABOVE = 1.25
MIN_RUNS = 3
K_GRID = np.round(np.arange(0.05, 3.0001, 0.01), 2)
BOOTSTRAP = 200
SEED = 0
MIN_REL_SPREAD = 0.01  # a run's relative spread is never taken below 1 % (exact repeats would get all the weight)
METRICS = ("cpu", "gpu", "memory")
VALUE_RANGE = (1e-100, 1e100)  # parameter values: squares and cubes stay finite floats
PREDICT_REACH = 1000.0  # --predict at most this factor beyond the measured values (further says nothing)
ZERO_SCALE = 1e-3  # a run at 0 weighs as one at this fraction of the largest run's value


# --------------------------------------------------------------------------- inputs


@dataclass
class RunSpec:
    path: str
    value: float
    text: str  # the value as written


def parse_runs(items: Sequence[str]) -> list[RunSpec]:
    """``RUN=VALUE`` arguments → specs; one-line errors for a missing ``=VALUE``, non-numbers, repeats."""
    runs: list[RunSpec] = []
    for item in items:
        path, eq, text = item.rpartition("=")
        if not eq or not path:
            raise NvtxsimError(f"{item!r}: give each run as RUN=VALUE (e.g. run_4096.sqlite=4096)")
        value = parse_value(text, f"{item!r}: value")
        for other in runs:
            if other.value == value:
                raise NvtxsimError(f"value {text} given twice ({other.path} and {path}): one run per value")
            if os.path.realpath(other.path) == os.path.realpath(path):
                raise NvtxsimError(f"{path} given twice (={other.text} and ={text}): one export per value")
        runs.append(RunSpec(path=path, value=value, text=text))
    return sorted(runs, key=lambda r: r.value)


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGTkmgt]?)(i?)([Bb]?)\s*$")


def parse_size(text: str) -> int:
    """``80GiB``, ``80G`` (binary), ``80GB`` (decimal), ``512MiB``, ``1.5TiB``, or plain bytes → bytes."""
    m = _SIZE.match(text)
    if not m:
        raise NvtxsimError(f"--memory-budget {text!r}: expected a size such as 80GiB, 80GB or 512MiB")
    number, prefix, binary, b = float(m.group(1)), m.group(2).upper(), bool(m.group(3)), bool(m.group(4))
    if binary and not prefix:
        raise NvtxsimError(f"--memory-budget {text!r}: expected a size such as 80GiB, 80GB or 512MiB")
    power = "KMGT".index(prefix) + 1 if prefix else 0
    base = 1000 if (prefix and b and not binary) else 1024  # "GB" decimal; "GiB" and a bare "G" binary
    size = number * base**power
    if not math.isfinite(size) or size < 1:
        raise NvtxsimError(f"--memory-budget {text!r}: must be a positive size of at least one byte")
    return int(size)


def parse_value(text: str, what: str) -> float:
    """A positive finite number (the fits are on log scales), else a one-line error naming ``what``."""
    try:
        v = float(text)
    except ValueError:
        raise NvtxsimError(f"{what} {text!r}: not a number") from None
    if not math.isfinite(v) or v <= 0:
        raise NvtxsimError(f"{what} {text!r}: must be a positive number")
    if not VALUE_RANGE[0] <= v <= VALUE_RANGE[1]:
        raise NvtxsimError(f"{what} {text!r}: out of range ({VALUE_RANGE[0]:g} to {VALUE_RANGE[1]:g})")
    return v


# --------------------------------------------------------------------------- per run


@dataclass
class PhaseSamples:
    """One phase in one run: per-iteration samples."""

    cpu: np.ndarray  # ns
    gpu: np.ndarray  # ns (GPU busy)
    memory: np.ndarray | None  # bytes: the phase's own rise while open (max over its ranges in the iteration)
    peak: np.ndarray | None  # bytes: most the process held while the phase was open


@dataclass
class RunData:
    spec: RunSpec
    key: str
    iterations: int
    phases: dict[str, PhaseSamples]
    has_memory: bool
    process_peak: int  # bytes, whole capture
    notes: list[str] = field(default_factory=list)


def collect_run(spec: RunSpec, detail, *, by: str | None = None, skip_first: int = 0) -> RunData:
    """Per-iteration CPU, GPU and memory samples of every phase of one run (``detail``: a Selection;
    ``by`` None: the report's default key, ``step`` where an RL runner's steps were recorded)."""
    try:
        it = per_iteration(detail, by, skip_first=skip_first)
    except NvtxsimError as exc:
        raise NvtxsimError(f"{spec.path}: {exc}") from None
    if len(it) == 0:
        raise NvtxsimError(f"{spec.path}: no iterations of {it.key!r} left (after --skip-first {skip_first})")
    ex = detail.export
    key_mem = range_memory(ex, it.key_range)
    member_mem = range_memory(ex, it.members)
    rise = peak = None
    if key_mem is not None and member_mem is not None:
        rise = per_iteration_max(it, key_mem.rise, member_mem.rise)
        peak = per_iteration_max(it, key_mem.peak, member_mem.peak)
    phases: dict[str, PhaseSamples] = {}
    for j, name in enumerate(it.phases):
        if j and not it.count[:, j].any():
            continue  # ran only outside the kept iterations
        phases[name] = PhaseSamples(
            cpu=it.cpu[:, j].astype(np.float64),
            gpu=it.gpu[:, j].astype(np.float64),
            memory=None if rise is None else rise[:, j].astype(np.float64),
            peak=None if peak is None else peak[:, j].astype(np.float64),
        )
    notes = []
    if it.unassigned:
        outside = ", ".join(sorted(it.unassigned))
        notes.append(f"{spec.path}: ranges outside every iteration are not scaled: {outside}")
    return RunData(
        spec=spec,
        key=it.key,
        iterations=len(it),
        phases=phases,
        has_memory=key_mem is not None,
        process_peak=process_peak(ex),
        notes=notes,
    )


def check_phase_sets(runs: Sequence[RunData], param: str) -> None:
    """All runs must have the same phases: name which are missing where."""
    every = sorted(set().union(*(r.phases for r in runs)))
    missing = []
    for name in every:
        lacking = [f"{Path(r.spec.path).name} ({param}={r.spec.text})" for r in runs if name not in r.phases]
        if lacking:
            missing.append(f"{name} missing in {', '.join(lacking)}")
    if missing:
        raise NvtxsimError(
            "runs have different phases: " + "; ".join(missing) + " (use --match to compare the common ones)"
        )


# --------------------------------------------------------------------------- fits


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


def fit_power(x: np.ndarray, y: np.ndarray, rel: np.ndarray) -> PowerFit:
    """Grid search over k of the non-negative weighted least squares of y on [1, x^k]."""
    w = _weights(y, rel) ** 2
    scale = float(x.max())
    X = (x / scale)[None, :] ** K_GRID[:, None]  # (K, n)
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
    i = int(np.argmin(sse))
    y_lo, y_hi = a[i] + b[i] * float(x.min() / scale) ** K_GRID[i], a[i] + b[i]
    growth = float(y_hi / y_lo - 1) if y_lo > 0 else (math.inf if y_hi > 0 else 0.0)
    return PowerFit(floor=float(a[i]), coef=float(b[i]), exponent=float(K_GRID[i]), growth=growth, scale=scale)


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
    def uncertain(self) -> bool:
        """The exponent's interval reaches into another class: more runs or iterations would settle it."""
        if self.exponent_low is None or self.exponent_high is None:
            return False
        return class_of_exponent(self.exponent_low) != class_of_exponent(self.exponent_high)

    def as_dict(self) -> dict:
        """The JSON ``fit.<metric>`` object (raw numbers; non-finite growth as null)."""
        p = self.power
        return {
            "class": self.cls,
            "class_uncertain": self.uncertain,
            "exponent": self.exponent,
            "exponent_interval": [self.exponent_low, self.exponent_high] if self.exponent_low is not None else None,
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


def fit_metric(metric: str, values: np.ndarray, samples: list[np.ndarray], rng: np.random.Generator) -> MetricFit:
    """Every fit of one metric of one phase: the log-log slope from two runs; from three the
    quadratic, the floor-plus-power fit that gives the class, and the exponent's bootstrap interval."""
    cs = [centre(s) for s in samples]
    y = np.array([c.value for c in cs])
    rel = np.array([c.rel for c in cs])
    mf = MetricFit(metric=metric, centres=y.tolist(), rel=rel.tolist())
    if not (y > 0).any():
        mf.cls, mf.exponent = "none", None
        mf.note = "no GPU work" if metric == "gpu" else "no GPU memory allocated" if metric == "memory" else "no time"
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
    lo, hi = _bootstrap_exponent(values, samples, rng)
    mf.exponent_low, mf.exponent_high = lo, hi
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


# --------------------------------------------------------------------------- the sweep


@dataclass
class PhaseScaling:
    phase: str
    fits: dict[str, MetricFit]  # cpu, gpu, memory (memory only with memory events)
    per_run: list[dict]


@dataclass
class Scaling:
    param: str
    runs: list[RunData]
    phases: list[PhaseScaling]
    loop_peak: MetricFit | None  # the key range's absolute peak memory per iteration
    notes: list[str] = field(default_factory=list)
    refused: str | None = None  # why classes were not computed (fewer than three runs)
    prediction: dict | None = None
    budget: dict | None = None

    @property
    def values(self) -> list[float]:
        """The parameter's values, one per run, ascending (the x axis of every fit)."""
        return [r.spec.value for r in self.runs]


def analyse(runs: Sequence[RunData], param: str) -> Scaling:
    """Fit every phase's CPU, GPU and memory per iteration against the parameter."""
    runs = sorted(runs, key=lambda r: r.spec.value)
    check_phase_sets(runs, param)
    x = np.array([r.spec.value for r in runs], dtype=np.float64)
    rng = np.random.default_rng(SEED)
    memory = all(r.has_memory for r in runs)
    key = runs[0].key
    out = []
    for name in runs[0].phases:
        fits = {
            "cpu": fit_metric("cpu", x, [r.phases[name].cpu for r in runs], rng),
            "gpu": fit_metric("gpu", x, [r.phases[name].gpu for r in runs], rng),
        }
        if memory:
            fits["memory"] = fit_metric("memory", x, [_required(r.phases[name].memory) for r in runs], rng)
            fits["peak"] = fit_metric("peak", x, [_required(r.phases[name].peak) for r in runs], rng)
        out.append(PhaseScaling(phase=name, fits=fits, per_run=_per_run(runs, name, fits)))
    loop_peak = out[0].fits["peak"] if memory and out and out[0].phase == key else None
    sc = Scaling(param=param, runs=runs, phases=out, loop_peak=loop_peak)
    sc.notes = [n for r in runs for n in r.notes]
    if any(r.has_memory for r in runs) and not memory:
        sc.notes.append("some runs have no GPU memory events: memory is not fitted (profile every run with --memory)")
    if len(runs) < MIN_RUNS:
        sc.refused = f"classes need at least {MIN_RUNS} runs (got {len(runs)}): per-run values shown, no classes"
    return sc


def _required(samples: np.ndarray | None) -> np.ndarray:
    """Memory samples of a run known to have memory events."""
    assert samples is not None
    return samples


def _per_run(runs: Sequence[RunData], name: str, fits: dict[str, MetricFit]) -> list[dict]:
    """Per run: the centres, spreads and what the phase costs in throughput (param·iterations per second)."""
    key = runs[0].key
    rows = []
    for i, r in enumerate(runs):
        iter_ns = fits["cpu"].centres[i] if name == key else centre(r.phases[key].cpu).value
        t = fits["cpu"].centres[i]
        row = {
            "value": r.spec.value,
            "path": r.spec.path,
            "iterations": r.iterations,
            "cpu_ns": t,
            "cpu_rel_err": fits["cpu"].rel[i],
            "gpu_ns": fits["gpu"].centres[i],
            "gpu_rel_err": fits["gpu"].rel[i],
            "share_of_iteration": t / iter_ns if iter_ns else None,
        }
        if "memory" in fits:
            row["memory_bytes"] = fits["memory"].centres[i]
            row["peak_bytes"] = float(np.max(_required(r.phases[name].peak)))
        if name == key:
            row["steps_per_s"] = steps_per_s(r.spec.value, iter_ns)
        else:
            row["steps_per_s_cost"] = steps_cost(r.spec.value, iter_ns, t)
        rows.append(row)
    return rows


def predict(sc: Scaling, value: float) -> dict:
    """Time per iteration per phase (and memory) at ``value`` from the floor-plus-power fits."""
    if sc.refused:
        raise NvtxsimError(f"--predict: {sc.refused}")
    lo, hi = min(sc.values), max(sc.values)
    if not lo / PREDICT_REACH <= value <= hi * PREDICT_REACH:
        raise NvtxsimError(
            f"--predict {value:g}: more than {PREDICT_REACH:g}× beyond the measured {sc.param} ({lo:g} to {hi:g}): "
            "an extrapolation that far says nothing"
        )
    phases: list[dict] = []
    for ph in sc.phases:
        row: dict = {"phase": ph.phase}
        for m, f in ph.fits.items():
            row[f"{m}_{'bytes' if m in ('memory', 'peak') else 'ns'}"] = f.at(value)
        phases.append(row)
    doc: dict = {"value": value, "phases": phases, "extrapolated": value > max(sc.values) or value < min(sc.values)}
    others = phases[1:]
    if others:
        # The phases are fitted one by one, the iteration on its own: far out their curves disagree.
        # The phases' sum is what the iteration's time would be if it were nothing but its phases.
        doc["phases_sum_cpu_ns"] = sum(r["cpu_ns"] for r in others)
        doc["phases_sum_gpu_ns"] = sum(r["gpu_ns"] for r in others)
        if "memory_bytes" in phases[0]:  # the iteration holds at least what any phase inside it rises by
            phases[0]["memory_bytes"] = max([phases[0]["memory_bytes"]] + [r["memory_bytes"] for r in others])
    peaks = _peak_fits(sc)
    if peaks:
        doc["peak_bytes"] = max(f.at(value) for _, f in peaks)
    return doc


def _peak_fits(sc: Scaling) -> list[tuple[str, MetricFit]]:
    """The absolute-peak fits that bound an iteration's peak: one per phase inside it (the iteration's
    peak is the largest of theirs; fitting each phase's own a + b·N + c·N² follows a peak that moves
    from one phase to another as N grows, which one polynomial over the iteration cannot)."""
    fits = [
        (ph.phase, ph.fits["peak"])
        for ph in sc.phases[1:]
        if "peak" in ph.fits and ph.fits["peak"].quadratic is not None
    ]
    if not fits and sc.loop_peak is not None and sc.loop_peak.quadratic is not None:
        fits = [(sc.phases[0].phase, sc.loop_peak)]
    return fits


def memory_budget(sc: Scaling, budget: int) -> dict:
    """The largest parameter value whose fitted peak memory per iteration fits ``budget`` bytes."""
    if sc.loop_peak is None:
        raise NvtxsimError(
            "--memory-budget needs GPU memory events in every run (profile with nvtxsim profile --memory)"
        )
    if sc.refused:
        raise NvtxsimError(f"--memory-budget: {sc.refused}")
    doc: dict = {
        "budget_bytes": budget,
        "largest_value": None,
        "peak_at_largest_bytes": None,
        "model": "per phase a + b·N + c·N² (a, b, c ≥ 0)",
    }
    peaks = _peak_fits(sc)
    solved = [solve_quadratic(f.quadratic or [0.0, 0.0, 0.0], budget) for _, f in peaks]
    limits = [v for v in solved if v is not None]
    if not peaks or len(limits) < len(solved):
        doc["note"] = "the fitted peak exceeds the budget at any value"
        return doc
    v = min(limits)
    if math.isinf(v):
        doc["note"] = "peak memory does not grow with the parameter: any value fits"
        return doc
    if all(float(r.spec.value).is_integer() for r in sc.runs):
        v = math.floor(v)
    doc["largest_value"] = v
    doc["peak_at_largest_bytes"] = max(f.at(v) for _, f in peaks)
    doc["limited_by"] = peaks[limits.index(min(limits))][0]
    doc["extrapolated"] = v > max(sc.values)
    return doc
