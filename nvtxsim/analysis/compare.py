"""Run-to-run comparison: per-phase change of the median and p99, with bootstrap confidence intervals.

Samples are per range instance (default) or per iteration (``by``: the phase's
summed time in each iteration of the key range). For each phase present in both
exports the relative change ``new / base - 1`` of the median and of the p99 gets
a percentile-bootstrap confidence interval: both samples are resampled
independently with a fixed seed, so a comparison is reproducible bit for bit.
A phase *regresses* when its change exceeds the threshold and the interval lies
wholly above zero (the slowdown is both large and not noise).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError

QUANTILES = {"median": 0.5, "p99": 0.99}
MAX_BOOTSTRAP_SAMPLE = 50_000  # larger samples are subsampled for the interval only (wider, never narrower)


@dataclass
class CompareSettings:
    metric: str = "cpu"  # cpu: range duration; gpu: GPU busy time of the range
    by: str | None = None  # None: per instance; else the key range of per-iteration totals
    skip_first: int = 0
    resamples: int = 2000
    confidence: float = 0.95
    seed: int = 0
    fail_above: float | None = None  # percent
    gate: str = "median"  # median | p99 | both
    min_samples: int = 5


@dataclass
class PhaseDelta:
    phase: str
    status: str  # compared | added | removed | too few samples
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
    verdict: str  # slower | faster | no change | — (significance of the gated statistic)
    regression: bool


@dataclass
class Comparison:
    base: dict
    new: dict
    settings: CompareSettings
    phases: list[PhaseDelta]
    notes: list[str] = field(default_factory=list)
    findings: Any | None = None  # nvtxsim.analysis.findings.FindingsDiff, when asked for

    @property
    def regressions(self) -> list[PhaseDelta]:
        return [p for p in self.phases if p.regression]

    def as_dict(self) -> dict:
        return {
            "base": self.base,
            "new": self.new,
            "settings": asdict(self.settings),
            "phases": [asdict(p) for p in self.phases],
            "regressions": [p.phase for p in self.regressions],
            "notes": list(self.notes),
            **({"findings": self.findings.as_dict()} if self.findings is not None else {}),
        }


def samples(detail: Selection, settings: CompareSettings) -> dict[str, np.ndarray]:
    """Per phase label, the samples to compare (ns, float64)."""
    return _samples(detail, settings)[0]


def _samples(detail: Selection, settings: CompareSettings) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The samples, and with ``by`` the ranges left out per phase for lying outside every iteration."""
    r = detail.export.ranges
    if settings.metric not in ("cpu", "gpu"):
        raise NvtxsimError(f"--metric {settings.metric!r}: choose cpu or gpu")
    if settings.by:
        from nvtxsim.analysis.iterations import per_iteration

        try:
            it = per_iteration(detail, settings.by, skip_first=settings.skip_first)
        except NvtxsimError as exc:  # two exports: say which one lacks the range
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


def _outside_note(by: str, base: dict[str, int], new: dict[str, int], shown: int = 6) -> str | None:
    """One line naming the phases whose ranges lie outside every iteration (not compared)."""
    names = sorted(set(base) | set(new), key=lambda n: (-(base.get(n, 0) + new.get(n, 0)), n))
    if not names:
        return None
    parts = [f"{n} (base ×{base.get(n, 0)}, new ×{new.get(n, 0)})" for n in names[:shown]]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"ranges outside every '{by}' range, not compared: {', '.join(parts)}{more}"


def _boot_quantile(x: np.ndarray, q: float, reps: int, rng: np.random.Generator) -> np.ndarray:
    """Quantile ``q`` of ``reps`` bootstrap resamples of ``x``."""
    if len(x) > MAX_BOOTSTRAP_SAMPLE:
        x = rng.choice(x, MAX_BOOTSTRAP_SAMPLE, replace=False)
    n = len(x)
    out = np.empty(reps)
    batch = max(1, 4_000_000 // max(n, 1))
    for a in range(0, reps, batch):
        b = min(reps, a + batch)
        idx = rng.integers(0, n, size=(b - a, n))
        out[a:b] = np.quantile(x[idx], q, axis=1)
    return out


def _delta(
    base: np.ndarray, new: np.ndarray, q: float, s: CompareSettings, rng: np.random.Generator
) -> tuple[float, float, float]:
    qb, qn = float(np.quantile(base, q)), float(np.quantile(new, q))
    point = (qn / qb - 1) * 100 if qb > 0 else (0.0 if qn == 0 else float("inf"))
    bb = _boot_quantile(base, q, s.resamples, rng)
    bn = _boot_quantile(new, q, s.resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bb > 0, bn / bb - 1, np.where(bn == 0, 0.0, np.inf)) * 100
    alpha = (1 - s.confidence) / 2
    lo, hi = np.quantile(ratio, [alpha, 1 - alpha])
    return point, float(lo), float(hi)


def compare(base: Selection, new: Selection, settings: CompareSettings | None = None) -> Comparison:
    """Per-phase deltas of ``new`` against ``base``."""
    s = settings or CompareSettings()
    if not 0 < s.confidence < 1:
        raise NvtxsimError("--confidence must be between 0 and 1 (e.g. 0.95)")
    if s.resamples < 100:
        raise NvtxsimError("--resamples must be at least 100")
    if s.gate not in ("median", "p99", "both"):
        raise NvtxsimError(f"--gate {s.gate!r}: choose median, p99 or both")
    (sb, outside_b), (sn, outside_n) = _samples(base, s), _samples(new, s)
    rows: list[PhaseDelta] = []
    notes: list[str] = []
    order = {p.label: i for i, p in enumerate(base.report.phases)}
    for ph in sorted(set(sb) | set(sn), key=lambda p: (order.get(p, 1 << 30), p)):
        b, n = sb.get(ph), sn.get(ph)
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
            seed = np.random.SeedSequence([s.seed, *ph.encode("utf-8")])
            rng = np.random.default_rng(seed)
            row.median_delta_pct, row.median_ci_low_pct, row.median_ci_high_pct = _delta(b, n, 0.5, s, rng)
            row.p99_delta_pct, row.p99_ci_low_pct, row.p99_ci_high_pct = _delta(b, n, 0.99, s, rng)
            gated = (
                [("median", row.median_delta_pct, row.median_ci_low_pct, row.median_ci_high_pct)]
                if s.gate in ("median", "both")
                else []
            )
            if s.gate in ("p99", "both"):
                gated.append(("p99", row.p99_delta_pct, row.p99_ci_low_pct, row.p99_ci_high_pct))
            lows = [g[2] for g in gated]
            highs = [g[3] for g in gated]
            row.verdict = (
                "slower" if any(lo > 0 for lo in lows) else "faster" if all(hi < 0 for hi in highs) else "no change"
            )
            if s.fail_above is not None:
                row.regression = any(d > s.fail_above and lo > 0 for _, d, lo, _ in gated)
        rows.append(row)
    unit = f"per-iteration totals of '{s.by}'" if s.by else "per range instance"
    notes.append(
        f"{s.metric.upper()} time {unit}; Δ = new / base − 1; {int(s.confidence * 100)} % bootstrap interval "
        f"({s.resamples} resamples, seed {s.seed})"
    )
    if s.fail_above is not None:
        notes.append(f"regression: {s.gate} Δ above {s.fail_above:g} % with the interval wholly above 0")
    if s.by and s.skip_first:
        notes.append(f"first {s.skip_first} iterations of each run skipped")
    outside = _outside_note(s.by, outside_b, outside_n) if s.by else None
    if outside:
        notes.append(outside)
    return Comparison(base.report.source, new.report.source, s, rows, notes)
