"""Run-to-run comparison: per phase, the change from the baseline runs to the new runs, and a verdict a CI
can trust.

Samples are per-iteration totals by default (``by``: the phase's summed time in each iteration of the key
range ``iteration``; when the runs have no such range and ``by`` was not asked for, range instances, with a
note) or range instances (``by=None``). Each side is one run or several runs of the same code.

Two kinds of numbers per phase:

* descriptive: the change of the median and of the p99 of the pooled samples, each with a
  percentile-bootstrap interval (both sides resampled independently with a fixed seed, so a comparison is
  reproducible bit for bit). It says how the samples moved; it knows nothing of run-to-run noise.
* the verdict (:mod:`nvtxsim.analysis.compare_runs`): the gated statistic's change beyond the run-wide
  factor (the host's speed), with an interval from the run-to-run noise measured across the runs (or, with
  one run per side, an assumed noise), and its size as a share of the iteration.

A phase is *slower* when that interval lies wholly above 0 and the change is at least ``min_share`` % of the
iteration; it *regresses* when, besides, the change exceeds ``fail_above`` %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from nvtxsim.analysis import compare_runs as cr
from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError

QUANTILES = {"median": 0.5, "p99": 0.99}
MAX_BOOTSTRAP_SAMPLE = 50_000  # larger samples are subsampled for the interval only (wider, never narrower)
RUN_WIDE = "(run-wide factor)"  # the row of the change common to every phase


@dataclass
class CompareSettings:
    metric: str = "cpu"  # cpu: range duration; gpu: GPU busy time of the range
    by: str | None = "iteration"  # None: per instance; else the key range of per-iteration totals
    by_given: bool = False  # False: runs without the key range are compared per instance (with a note)
    skip_first: int = 0
    resamples: int = 2000
    confidence: float = 0.95
    seed: int = 0
    fail_above: float | None = None  # percent
    gate: str = "median"  # median | p99 | both
    min_samples: int = 5
    min_share: float = cr.MIN_SHARE_PCT  # percent of the iteration
    one_run_noise: float = cr.ONE_RUN_NOISE_PCT  # percent, assumed run-to-run noise with one run per side
    factor: bool = True  # take the run-wide factor out (False: absolute times, for a quiet host)


@dataclass
class PhaseDelta:
    phase: str
    status: str  # compared | added | removed | too few samples | run-wide (the factor common to every phase)
    base_n: int
    new_n: int
    base_median_ns: int
    new_median_ns: int
    median_delta_pct: float | None
    median_ci_low_pct: float | None
    median_ci_high_pct: float | None
    base_p99_ns: int
    new_p99_ns: int
    p99_delta_pct: float | None
    p99_ci_low_pct: float | None
    p99_ci_high_pct: float | None
    verdict: str  # slower | faster | no change | — (the gated statistic, beyond noise and min_share)
    regression: bool
    shift_pct: float | None = None  # gated statistic's change beyond the run-wide factor
    shift_low_pct: float | None = None  # its interval, run-to-run noise included
    shift_high_pct: float | None = None
    share_pct: float | None = None  # the change as a share of the iteration's time
    noise_pct: float | None = None  # run-to-run standard deviation used (None: one run per side)


@dataclass
class Comparison:
    base: dict
    new: dict
    settings: CompareSettings
    phases: list[PhaseDelta]
    notes: list[str] = field(default_factory=list)
    findings: Any | None = None  # nvtxsim.analysis.findings.FindingsDiff, when asked for
    base_runs: list[dict] = field(default_factory=list)
    new_runs: list[dict] = field(default_factory=list)
    by: str | None = None  # the key range the samples were taken per iteration of (None: per instance)

    @property
    def regressions(self) -> list[PhaseDelta]:
        return [p for p in self.phases if p.regression]

    @property
    def one_run(self) -> bool:
        """One run per side: run-to-run noise is assumed, not measured."""
        return len(self.base_runs) < 2 and len(self.new_runs) < 2

    def as_dict(self) -> dict:
        return {
            "base": self.base,
            "new": self.new,
            "base_runs": self.base_runs,
            "new_runs": self.new_runs,
            "by": self.by,
            "settings": asdict(self.settings),
            "phases": [asdict(p) for p in self.phases],
            "regressions": [p.phase for p in self.regressions],
            "notes": list(self.notes),
            **({"findings": self.findings.as_dict()} if self.findings is not None else {}),
        }


@dataclass
class _Run:
    """One run's samples per phase, when each phase first started (ns from the run's first range) and the
    ranges outside every iteration."""

    name: str
    samples: dict[str, np.ndarray]
    first: dict[str, int]
    outside: dict[str, int]


def samples(detail: Selection, settings: CompareSettings) -> dict[str, np.ndarray]:
    """Per phase label, the samples to compare (ns, float64)."""
    return _samples(detail, settings, settings.by)[0]


def _samples(
    detail: Selection, settings: CompareSettings, by: str | None
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The samples, and with ``by`` the ranges left out per phase for lying outside every iteration."""
    r = detail.export.ranges
    if settings.metric not in ("cpu", "gpu"):
        raise NvtxsimError(f"--metric {settings.metric!r}: choose cpu or gpu")
    if by:
        from nvtxsim.analysis.iterations import per_iteration

        try:
            it = per_iteration(detail, by, skip_first=settings.skip_first)
        except NvtxsimError as exc:  # several exports: say which one lacks the range
            raise NvtxsimError(f"{detail.export.path.name}: {exc}") from None
        mat = it.cpu if settings.metric == "cpu" else it.gpu
        return {ph: mat[:, j].astype(np.float64) for j, ph in enumerate(it.phases) if (it.count[:, j] > 0).any()}, dict(
            it.unassigned
        )
    sel = detail.selected
    if settings.metric == "cpu":
        values = (r.end - r.start)[sel]
        keep = np.ones(len(sel), dtype=bool)
    else:
        g = detail.gpu
        values = g.busy[sel]
        keep = g.has_gpu[sel]
    labels = r.label[sel]
    out: dict[str, np.ndarray] = {}
    names = detail.label_names
    for lab in np.unique(labels[keep]):
        out[str(names[lab])] = values[keep & (labels == lab)].astype(np.float64)
    return out, {}


def first_starts(detail: Selection) -> dict[str, int]:
    """Per phase label, when its first selected range started (ns after the first one): program order."""
    r, sel = detail.export.ranges, detail.selected
    if not len(sel):
        return {}
    starts = r.start[sel]
    order = np.argsort(starts, kind="stable")
    labels, first = np.unique(r.label[sel][order], return_index=True)
    t0 = int(starts[order[0]])
    names = detail.label_names
    return {str(names[lab]): int(starts[order][i]) - t0 for lab, i in zip(labels, first)}


def _key_present(detail: Selection, by: str) -> bool:
    """Whether the run has selected ranges of the key range ``by`` (without splitting it into iterations)."""
    from nvtxsim.analysis.iterations import _key_label

    try:
        key = _key_label(detail, by)
    except NvtxsimError:
        return False
    return bool((detail.export.ranges.label[detail.selected] == key).any())


def _outside_note(by: str, base: dict[str, int], new: dict[str, int], shown: int = 6) -> str | None:
    """One line naming the phases whose ranges lie outside every iteration (not compared)."""
    names = sorted(set(base) | set(new), key=lambda n: (-(base.get(n, 0) + new.get(n, 0)), n))
    if not names:
        return None
    parts = [f"{n} (base ×{base.get(n, 0)}, new ×{new.get(n, 0)})" for n in names[:shown]]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"ranges outside every '{by}' range, not compared: {', '.join(parts)}{more}"


def _boot_quantile(x: np.ndarray, q: float | None, reps: int, rng: np.random.Generator) -> np.ndarray:
    """Quantile ``q`` (None: the mean) of ``reps`` bootstrap resamples of ``x``."""
    if len(x) > MAX_BOOTSTRAP_SAMPLE:
        x = rng.choice(x, MAX_BOOTSTRAP_SAMPLE, replace=False)
    n = len(x)
    out = np.empty(reps)
    batch = max(1, 4_000_000 // max(n, 1))
    for a in range(0, reps, batch):
        b = min(reps, a + batch)
        idx = rng.integers(0, n, size=(b - a, n))
        out[a:b] = np.quantile(x[idx], q, axis=1) if q is not None else x[idx].mean(axis=1)
    return out


def _delta(
    base: np.ndarray, new: np.ndarray, q: float | None, s: CompareSettings, rng: np.random.Generator
) -> tuple[float, float, float]:
    stat = (lambda x: float(np.quantile(x, q))) if q is not None else (lambda x: float(x.mean()))
    qb, qn = stat(base), stat(new)
    point = (qn / qb - 1) * 100 if qb > 0 else (0.0 if qn == 0 else float("inf"))
    bb = _boot_quantile(base, q, s.resamples, rng)
    bn = _boot_quantile(new, q, s.resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bb > 0, bn / bb - 1, np.where(bn == 0, 0.0, np.inf)) * 100
    alpha = (1 - s.confidence) / 2
    finite = np.isfinite(ratio).all()  # an infinite ratio: no interpolation (inf - inf is nan)
    lo, hi = np.quantile(ratio, [alpha, 1 - alpha], method="linear" if finite else "inverted_cdf")
    return point, float(lo), float(hi)


def _check(s: CompareSettings) -> None:
    if not 0 < s.confidence < 1:
        raise NvtxsimError("--confidence must be between 0 and 1 (e.g. 0.95)")
    if s.resamples < 100:
        raise NvtxsimError("--resamples must be at least 100")
    if s.gate not in ("median", "p99", "both"):
        raise NvtxsimError(f"--gate {s.gate!r}: choose median, p99 or both")
    if not s.min_share >= 0:
        raise NvtxsimError("--min-share must be >= 0")


def _runs(side: Sequence[Selection], s: CompareSettings, by: str | None, what: str) -> list[_Run]:
    """Each run's samples; the runs of one side must have the same phases (they are runs of one program)."""
    runs = []
    for d in side:
        got, outside = _samples(d, s, by)
        runs.append(_Run(d.export.path.name, got, first_starts(d), outside))
    for r in runs[1:]:
        extra, lacking = sorted(set(r.samples) - set(runs[0].samples)), sorted(set(runs[0].samples) - set(r.samples))
        if extra or lacking:
            ph, a, b = (extra[0], r.name, runs[0].name) if extra else (lacking[0], runs[0].name, r.name)
            raise NvtxsimError(
                f"{what} runs differ: {a} has phase {ph!r} that {b} lacks (runs of one side must run the same "
                "phases; --match picks the ones to compare)"
            )
    return runs


def _order(bases: list[_Run], news: list[_Run], key: str | None) -> list[str]:
    """Every phase in program order: when it first started in the first baseline run (else the first new run)."""
    first = {**news[0].first, **bases[0].first}
    names = set().union(*(r.samples for r in bases + news))
    return sorted(names, key=lambda p: (first.get(p, 1 << 62), p != key, p))


def _pool(runs: list[_Run], ph: str) -> np.ndarray | None:
    parts = [r.samples[ph] for r in runs if ph in r.samples]
    return np.concatenate(parts) if parts else None


def _describe(ph: str, b: np.ndarray | None, n: np.ndarray | None, s: CompareSettings) -> PhaseDelta:
    """The descriptive row: pooled medians, p99s and their bootstrap changes."""
    bn, nn = (len(b) if b is not None else 0), (len(n) if n is not None else 0)
    med = lambda x: int(round(float(np.median(x)))) if x is not None and len(x) else 0  # noqa: E731
    p99 = lambda x: int(round(float(np.quantile(x, 0.99)))) if x is not None and len(x) else 0  # noqa: E731
    row = PhaseDelta(
        ph, "compared", bn, nn, med(b), med(n), None, None, None, p99(b), p99(n), None, None, None, "—", False
    )
    if b is None or n is None or not bn or not nn:
        row.status = "added" if b is None or not bn else "removed"
    elif bn < s.min_samples or nn < s.min_samples:
        row.status = "too few samples"
    else:
        # One generator per phase, seeded by the phase name too: results do not depend on which other phases exist.
        rng = np.random.default_rng(np.random.SeedSequence([s.seed, *ph.encode("utf-8")]))
        row.median_delta_pct, row.median_ci_low_pct, row.median_ci_high_pct = _delta(b, n, 0.5, s, rng)
        row.p99_delta_pct, row.p99_ci_low_pct, row.p99_ci_high_pct = _delta(b, n, 0.99, s, rng)
    return row


def _run_stat(runs: list[_Run], phases: list[str], q: float, use_mean: np.ndarray) -> np.ndarray:
    """runs × phases: each run's quantile ``q`` of each phase's samples (its mean in the ``use_mean``
    columns), log ns; -inf where 0."""
    out = np.array([[np.quantile(r.samples[p], q) for p in phases] for r in runs], dtype=np.float64).reshape(
        len(runs), len(phases)
    )
    means = np.array([[r.samples[p].mean() for p in phases] for r in runs], dtype=np.float64).reshape(out.shape)
    out = np.where(use_mean, means, out)
    with np.errstate(divide="ignore"):
        return np.log(out)


def _mean_columns(runs: list[_Run], phases: list[str], q: float) -> np.ndarray:
    """Per phase: whether its quantile ``q`` is 0 in some run (a phase absent from most iterations): such a
    phase is compared by its mean."""
    return np.array([any(np.quantile(r.samples[p], q) <= 0 for r in runs) for p in phases], dtype=bool)


def _shifts(
    bases: list[_Run], news: list[_Run], rows: list[PhaseDelta], key: str | None, q: float, s: CompareSettings
) -> tuple[dict[str, cr.Shift], cr.Shift | None]:
    """Per compared phase its :class:`~compare_runs.Shift` for quantile ``q``, and the run-wide factor's."""
    cols = [p.phase for p in rows if p.status == "compared"]
    if not cols:
        return {}, None
    use_mean = _mean_columns(bases + news, cols, q)
    lb, ln = _run_stat(bases, cols, q, use_mean), _run_stat(news, cols, q, use_mean)
    ok = np.isfinite(lb).all(axis=0) & np.isfinite(ln).all(axis=0)
    usable = ok & np.array([p != key for p in cols])
    fb, fn = cr.run_factors(lb, ln, usable if s.factor else np.zeros_like(usable))
    zb, zn = lb - fb[:, None], ln - fn[:, None]
    whole = math.exp(zb[:, cols.index(key)].mean()) if key in cols and ok[cols.index(key)] else None
    out: dict[str, cr.Shift] = {}
    for j, ph in enumerate(cols):
        if not ok[j]:
            continue
        part = math.exp(zb[:, j].mean())
        if len(bases) + len(news) > 2:
            d, lo, hi, sd = cr.run_shift(zb[:, j], zn[:, j], s.confidence)
            out[ph] = cr.as_shift(d, lo, hi, sd, part, whole)
        else:
            stat = None if use_mean[j] else q
            out[ph] = _one_run(bases[0].samples[ph], news[0].samples[ph], stat, float(fn[0] - fb[0]), s, part, whole)
    factor = None
    if s.factor and usable.sum() >= cr.MIN_FACTOR_PHASES:
        if len(bases) + len(news) > 2:
            d, lo, hi, sd = cr.run_shift(fb, fn, s.confidence)
            factor = cr.as_shift(d, lo, hi, sd, 1.0, 1.0 if whole else None)
        else:
            d = float(fn[0] - fb[0])
            factor = cr.as_shift(d, d, d, None, 1.0, 1.0 if whole else None)
    return out, factor


def _one_run(
    b: np.ndarray, n: np.ndarray, q: float | None, factor: float, s: CompareSettings, part: float, whole: float | None
) -> cr.Shift:
    """One run per side: the bootstrap interval of the run's own samples (quantile ``q``, None: the mean), the
    factor taken out, widened by the assumed run-to-run noise."""
    rng = np.random.default_rng(np.random.SeedSequence([s.seed, 1, *f"{q}".encode()]))
    point, lo, hi = _delta(b, n, q, s, rng)
    log = lambda v: math.log1p(v / 100) if v > -100 else -math.inf  # noqa: E731
    d, lo2, hi2 = cr.one_run_shift(log(point) - factor, log(lo) - factor, log(hi) - factor, s.one_run_noise)
    return cr.as_shift(d, lo2, hi2, None, part, whole)


def _mode(bases: Sequence[Selection], news: Sequence[Selection], s: CompareSettings) -> tuple[str | None, str | None]:
    """The key range the runs are compared per iteration of (None: per instance), and a note when the default
    one is missing from a run (then every run is compared per instance)."""
    if not s.by or s.by_given:
        return s.by, None
    lacking = [d.export.path.name for d in [*bases, *news] if not _key_present(d, s.by)]
    if not lacking:
        return s.by, None
    return None, (
        f"{lacking[0]} has no '{s.by}' range: compared per range instance, without the share-of-iteration rule "
        "(--by NAME names the loop's range)"
    )


def _apply(row: PhaseDelta, shifts: list[cr.Shift], s: CompareSettings) -> None:
    """The verdict of the gated statistics: slower/faster beyond noise and min_share; a regression when also
    above fail_above."""
    first = shifts[0]
    row.shift_pct, row.shift_low_pct, row.shift_high_pct = first.pct, first.low_pct, first.high_pct
    row.share_pct, row.noise_pct = first.share_pct, first.noise_pct
    verdicts = [cr.verdict(x, s.min_share) for x in shifts]
    row.verdict = (
        "slower" if "slower" in verdicts else "faster" if all(v == "faster" for v in verdicts) else "no change"
    )
    if s.fail_above is not None:
        row.regression = any(v == "slower" and x.pct > s.fail_above for v, x in zip(verdicts, shifts))


def compare(
    base: Selection | Sequence[Selection], new: Selection | Sequence[Selection], settings: CompareSettings | None = None
) -> Comparison:
    """Per-phase deltas of the ``new`` run(s) against the ``base`` run(s)."""
    s = settings or CompareSettings()
    _check(s)
    bsel = [base] if isinstance(base, Selection) else list(base)
    nsel = [new] if isinstance(new, Selection) else list(new)
    if not bsel or not nsel:
        raise NvtxsimError("compare needs at least one run on each side")
    by, fallback = _mode(bsel, nsel, s)
    bases, news = _runs(bsel, s, by, "BASE"), _runs(nsel, s, by, "NEW")
    key = next((p for p in bases[0].samples if by is not None), None)  # the key range's column comes first
    rows = [_describe(ph, _pool(bases, ph), _pool(news, ph), s) for ph in _order(bases, news, key)]
    gated = [QUANTILES[g] for g in ("median", "p99") if s.gate in (g, "both")]
    per_q = [_shifts(bases, news, rows, key, q, s) for q in gated]
    for row in rows:
        got = [sh[row.phase] for sh, _ in per_q if row.phase in sh]
        if got:
            _apply(row, got, s)
    factors = [f for _, f in per_q if f is not None]
    if factors:
        frow = PhaseDelta(
            RUN_WIDE, "run-wide", len(bases), len(news), 0, 0, None, None, None, 0, 0, None, None, None, "—", False
        )
        _apply(frow, factors, s)
        frow.regression = False  # never gated: on a shared host it is the host's speed (see compare_runs)
        if len(bases) + len(news) <= 2:  # no interval to judge it by
            frow.verdict = "—"
        rows.insert(0, frow)
    notes = _notes(s, by, bases, news, factors[0] if factors else None)
    if fallback:
        notes.insert(0, fallback)
    result = Comparison(bsel[0].report.source, nsel[0].report.source, s, rows, notes)
    result.base_runs, result.new_runs = [d.report.source for d in bsel], [d.report.source for d in nsel]
    result.by = by
    return result


def _notes(
    s: CompareSettings, by: str | None, bases: list[_Run], news: list[_Run], factor: cr.Shift | None
) -> list[str]:
    """What the numbers are, and how much one can conclude from them."""
    unit = f"per-iteration totals of '{by}'" if by else "per range instance"
    notes = [
        f"{s.metric.upper()} time {unit}; {len(bases)} base run(s), {len(news)} new run(s); Δ = new / base − 1 "
        f"of the pooled samples, {int(s.confidence * 100)} % bootstrap interval ({s.resamples} resamples, seed {s.seed})"
    ]
    if factor is not None:
        notes.append(
            f"run-wide factor: every phase changed by {factor.pct:+.1f} % together (host speed, or a change "
            "everywhere; shown, never gated); 'beyond' is each phase's change with it taken out (--no-factor: "
            "absolute times, for a quiet host)"
        )
    if len(bases) + len(news) <= 2:
        notes.append(
            f"one run per side: run-to-run noise cannot be measured, so the verdict assumes ±{s.one_run_noise:g} % "
            "on top of each run's own interval (a conservative rule: it misses smaller changes, and a phase noisier "
            "than that between runs can still be flagged); give 3+ runs per side (BASE... --vs NEW...) for a "
            "verdict that measures the noise"
        )
    else:
        notes.append(
            f"interval of 'beyond': Student-t from the run-to-run noise measured across the runs ({int(s.confidence * 100)} %)"
        )
    share = f" and at least {s.min_share:g} % of the iteration's time" if by else ""
    gate = f", and regressed when also above {s.fail_above:g} %" if s.fail_above is not None else ""
    notes.append(f"slower/faster: the {s.gate} beyond the factor, interval wholly on one side of 0{share}{gate}")
    if by and s.skip_first:
        notes.append(f"first {s.skip_first} iterations of each run skipped")
    outside = _outside_note(by, _sum_outside(bases), _sum_outside(news)) if by else None
    if outside:
        notes.append(outside)
    return notes


def _sum_outside(runs: list[_Run]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in runs:
        for k, v in r.outside.items():
            out[k] = out.get(k, 0) + v
    return out
