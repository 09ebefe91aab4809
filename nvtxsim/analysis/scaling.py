"""Scaling: how each phase's time and GPU memory grow with a parameter, from a sweep of runs.

Why: users size runs (``num_envs``, batch size, resolution) by trial and error. Given a few runs at
different values of one parameter, this says per phase whether its CPU time, GPU busy time and GPU
memory are constant, sublinear, linear or superlinear in it, predicts them at another value and
finds the largest value whose peak memory fits a budget. docs/scaling.md explains the method; in short:

* per run and phase, time samples: per iteration of the key (the iterations in which the phase
  ran, as the ``iterations`` view counts them; warm-up dropped with ``skip_first``), or per call for
  a phase that runs only between iterations (a learning update, an evaluation; its time per
  learning iteration beside it). They give a centre (median) and a relative spread;
* GPU memory, one number per run and phase over every call (warm-up included): its largest rise,
  with net allocations and the high-water-mark rise beside it (PyTorch's caching allocator grows
  only in the first calls, so a per-iteration median is 0);
* the fits (:mod:`nvtxsim.analysis.fits`): log-log slope, non-negative quadratic, and the
  floor-plus-power fit y = a + b·N^k that gives the class, with an interval (bootstrap over
  iterations for times, one run left out for memory) and a doubt when k sits at the grid's bound
  or its interval has no width.
"""

from __future__ import annotations

import math
import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nvtxsim import phases as loop_levels
from nvtxsim.analysis.fits import (
    BOOTSTRAP,
    CONSTANT_GROWTH,
    K_GRID,
    MIN_REL_SPREAD,
    MIN_RUNS,
    SUBLINEAR_BELOW,
    SUPERLINEAR_ABOVE,
    Centre,
    MetricFit,
    PowerFit,
    centre,
    class_of_exponent,
    classify,
    fit_exact,
    fit_metric,
    fit_power,
    loglog_slope,
    quadratic,
    solve_quadratic,
)
from nvtxsim.analysis.iterations import per_iteration, steps_cost, steps_per_s
from nvtxsim.analysis.memory import has_memory, process_peak, range_memory
from nvtxsim.errors import NvtxsimError

__all__ = [  # the fits are re-exported: callers (and tests) import them from here, as before the split
    "BOOTSTRAP",
    "CONSTANT_GROWTH",
    "K_GRID",
    "MIN_REL_SPREAD",
    "MIN_RUNS",
    "SUBLINEAR_BELOW",
    "SUPERLINEAR_ABOVE",
    "Centre",
    "MetricFit",
    "PowerFit",
    "centre",
    "class_of_exponent",
    "classify",
    "fit_power",
    "loglog_slope",
    "quadratic",
    "solve_quadratic",
]

SEED = 0
METRICS = ("cpu", "gpu", "memory")
VALUE_RANGE = (1e-100, 1e100)  # parameter values: squares and cubes stay finite floats
PREDICT_REACH = 1000.0  # --predict at most this factor beyond the measured values (further says nothing)


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


def require_sweep(runs: Sequence[RunSpec]) -> None:
    """A sweep is runs at two values or more (classes need three): one run scales against nothing."""
    if len(runs) < 2:
        raise NvtxsimError(
            f"one run ({runs[0].path if runs else 'none'}): scaling needs runs at two values or more "
            f"(classes need {MIN_RUNS}), as RUN=VALUE each"
        )


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
    """One phase in one run: its time samples and its GPU memory.

    ``per`` is ``"iteration"`` for a phase that runs inside the loop's iterations (one sample per
    iteration, summed over its ranges there) and ``"call"`` for one that runs only between them (a
    learning update, an evaluation: one sample per call). Memory is one number per run, over every
    call of the phase (warm-up included: with a caching allocator the first calls are the ones that
    allocate)."""

    per: str
    cpu: np.ndarray  # ns
    gpu: np.ndarray  # ns (GPU busy)
    calls: int = 0
    memory: float | None = None  # bytes: the largest rise over its calls (peak while open minus the level at its start)
    grow: float | None = None  # bytes: the largest rise of the process's high-water mark over its calls
    net: float | None = None  # bytes: allocations minus frees over all its calls
    peak: float | None = None  # bytes: the most the process held while any call was open
    per_learning_iteration: tuple[float, float] | None = None  # (CPU ns, GPU ns) per learning iteration, mean
    ran_in: float = 1.0  # the share of the iterations in which it ran (its samples come from those)
    by_call: tuple[np.ndarray, np.ndarray] | None = None  # a phase inside iterations: (CPU, GPU) per call


@dataclass
class RunData:
    spec: RunSpec
    key: str
    iterations: int
    phases: dict[str, PhaseSamples]
    has_memory: bool
    process_peak: int  # bytes, whole capture
    notes: list[str] = field(default_factory=list)
    learning_iterations: int = 0


def collect_run(spec: RunSpec, detail, *, by: str | None = None, skip_first: int = 0) -> RunData:
    """Time samples and GPU memory of every phase of one run (``detail``: a Selection; ``by`` None:
    the report's default key, ``step`` where an RL runner's steps were recorded). Phases inside the
    iterations are sampled per iteration; phases only between them (a learning update), per call."""
    try:
        it = per_iteration(detail, by, skip_first=skip_first)
    except NvtxsimError as exc:
        raise NvtxsimError(f"{spec.path}: {exc}") from None
    if len(it) == 0:
        raise NvtxsimError(f"{spec.path}: no iterations of {it.key!r} left (after --skip-first {skip_first})")
    ex = detail.export
    r = ex.ranges
    phases: dict[str, PhaseSamples] = {}
    present = it.present()
    for j, name in enumerate(it.phases):
        if j == 0 or present[j]:
            # Samples from the iterations in which the phase ran: a reset every few steps is scaled by
            # what it costs when it runs, not by a median of mostly zeros; how often it runs is kept.
            ran = it.column(j, "count") > 0 if j else np.ones(len(it), dtype=bool)
            phases[name] = PhaseSamples(
                "iteration",
                it.column(j)[ran].astype(np.float64),
                it.column(j, "gpu")[ran].astype(np.float64),
                ran_in=float(ran.mean()),
            )
    start = int(it.start[0])  # calls between iterations that end before the first kept one are warm-up
    outside = it.members[(it.member_row < 0) & (skip_first == 0 or r.end[it.members] >= start)]
    li = _learning_iterations(detail, start if skip_first else None)
    for name in sorted(set(it.unassigned) - set(phases)):
        calls = outside[_of_phase(detail, outside, name)]
        if len(calls):
            phases[name] = _per_call(detail, calls, li)
    for name, ph in phases.items():
        if ph.per == "iteration" and name != it.key:
            calls = detail.selected[_of_phase(detail, detail.selected, name)]
            calls = calls[r.end[calls] >= start] if skip_first else calls
            ph.by_call = ((r.end[calls] - r.start[calls]).astype(np.float64), detail.gpu.busy[calls].astype(np.float64))
    _add_memory(detail, phases)
    notes = []
    skipped = sorted(set(it.unassigned) - set(phases))
    if skipped:
        notes.append(f"{spec.path}: only in the warm-up, not scaled: {', '.join(skipped)}")
    return RunData(
        spec=spec,
        key=it.key,
        iterations=len(it),
        phases=phases,
        has_memory=has_memory(ex),
        process_peak=process_peak(ex),
        notes=notes,
        learning_iterations=len(li),
    )


def _learning_iterations(detail, after: int | None) -> np.ndarray:
    """The selection's nvtxsim ``learning_iteration`` ranges in time order (those ending after
    ``after``: the warm-up's are dropped with --skip-first)."""
    r = detail.export.ranges
    labels = [
        i
        for i, (dom, n) in enumerate(detail.export.labels)
        if dom == loop_levels.DOMAIN and n == loop_levels.LEARNING_ITERATION
    ]
    li = detail.selected[np.isin(r.label[detail.selected], labels)] if labels else detail.selected[:0]
    if after is not None:
        li = li[r.end[li] >= after]
    return li[np.argsort(r.start[li], kind="stable")]


def _per_call(detail, calls: np.ndarray, li: np.ndarray) -> PhaseSamples:
    """A phase that runs only between iterations: one sample per call, and what it costs per
    learning iteration (its calls inside learning iterations, summed, over their number)."""
    r = detail.export.ranges
    cpu = (r.end[calls] - r.start[calls]).astype(np.float64)
    gpu = detail.gpu.busy[calls].astype(np.float64)
    per_li = None
    if len(li):
        j = np.searchsorted(r.start[li], r.start[calls], side="right") - 1
        inside = (j >= 0) & (r.start[calls] <= r.end[li[np.maximum(j, 0)]])
        per_li = (float(cpu[inside].sum()) / len(li), float(gpu[inside].sum()) / len(li))
    return PhaseSamples("call", cpu, gpu, calls=len(calls), per_learning_iteration=per_li)


def _of_phase(detail, idx: np.ndarray, name: str) -> np.ndarray:
    """Which of the ranges ``idx`` belong to the phase shown as ``name`` (by label id: no string
    comparison per range)."""
    return np.isin(detail.export.ranges.label[idx], np.flatnonzero(detail.label_names == name))


def _add_memory(detail, phases: dict[str, PhaseSamples]) -> None:
    """Per phase, over every selected call (warm-up included): the largest rise, the largest rise of
    the process's high-water mark, the net allocations and the most held while open."""
    idx = detail.selected
    of = {name: _of_phase(detail, idx, name) for name in phases}
    for name, ph in phases.items():
        ph.calls = ph.calls or int(of[name].sum())
    m = range_memory(detail.export, idx)
    if m is None:
        return
    for name, ph in phases.items():
        k = of[name]
        if k.any():
            ph.memory, ph.grow = float(m.rise[k].max()), float(m.grow[k].max())
            ph.net, ph.peak = float(m.net[k].sum()), float(m.peak[k].max())
        else:
            ph.memory = ph.grow = ph.net = ph.peak = 0.0


def check_phase_sets(runs: Sequence[RunData], param: str) -> None:
    """All runs must have the same phases (and GPU memory events in all or none): name which are missing where."""
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
    with_memory = [r for r in runs if r.has_memory]
    if with_memory and len(with_memory) < len(runs):
        without = ", ".join(f"{Path(r.spec.path).name} ({param}={r.spec.text})" for r in runs if not r.has_memory)
        raise NvtxsimError(
            f"GPU memory events missing in {without} (the other runs have them): profile every run with nvtxsim profile --memory"
        )


# --------------------------------------------------------------------------- the sweep


@dataclass
class PhaseScaling:
    phase: str
    fits: dict[str, MetricFit]  # cpu, gpu; with memory events memory (rise, max over calls) and peak
    per_run: list[dict]
    per: str = "iteration"  # "iteration": samples per iteration of the key; "call": per call, between iterations


@dataclass
class Scaling:
    param: str
    runs: list[RunData]
    phases: list[PhaseScaling]
    process_peak: MetricFit | None  # the runs' whole-capture peaks (None without memory events)
    notes: list[str] = field(default_factory=list)
    refused: str | None = None  # why classes were not computed (fewer than three runs)
    prediction: dict | None = None
    budget: dict | None = None

    @property
    def values(self) -> list[float]:
        """The parameter's values, one per run, ascending (the x axis of every fit)."""
        return [r.spec.value for r in self.runs]

    @property
    def has_memory(self) -> bool:
        """Whether every run had GPU memory events (then memory is fitted)."""
        return self.process_peak is not None


def analyse(runs: Sequence[RunData], param: str) -> Scaling:
    """Fit every phase's CPU, GPU and memory against the parameter."""
    runs = sorted(runs, key=lambda r: r.spec.value)
    check_phase_sets(runs, param)
    mixed = _sample_mixed_per_call(runs)
    x = np.array([r.spec.value for r in runs], dtype=np.float64)
    memory = all(r.has_memory for r in runs)
    out = []
    names = list(runs[0].phases)
    names.sort(key=lambda n: runs[0].phases[n].per == "call")  # the iteration's phases first (stable)
    for name in names:
        ps = [r.phases[name] for r in runs]
        fits = {
            "cpu": fit_metric("cpu", x, [p.cpu for p in ps], _rng(name, "cpu")),
            "gpu": fit_metric("gpu", x, [p.gpu for p in ps], _rng(name, "gpu")),
        }
        if memory:
            fits["memory"] = fit_exact("memory", x, np.array([p.memory or 0.0 for p in ps]))
            fits["peak"] = fit_exact("peak", x, np.array([p.peak or 0.0 for p in ps]))
            fits["high_water"] = fit_exact("memory", x, np.array([p.grow or 0.0 for p in ps]))  # JSON only
        fits.update(_per_learning_iteration_fits(x, ps))
        out.append(PhaseScaling(phase=name, fits=fits, per_run=_per_run(runs, name, fits), per=ps[0].per))
    peak = fit_exact("peak", x, np.array([float(r.process_peak) for r in runs], dtype=np.float64)) if memory else None
    sc = Scaling(param=param, runs=runs, phases=out, process_peak=peak)
    sc.notes = [n for r in runs for n in r.notes]
    if mixed:
        sc.notes.append(
            f"inside the iterations in some runs, only between them in others, so scaled per call: {', '.join(mixed)}"
        )
    if len(runs) < MIN_RUNS:
        sc.refused = f"classes need at least {MIN_RUNS} runs (got {len(runs)}): per-run values shown, no classes"
    return sc


def _sample_mixed_per_call(runs: Sequence[RunData]) -> list[str]:
    """A phase that runs inside the iterations in some runs and only between them in others (a reset
    that, at small N, no env needs after the first) is sampled per call in every run: its calls
    compare, its iterations do not. Returns those phases."""
    mixed = sorted(n for n in runs[0].phases if len({r.phases[n].per for r in runs}) > 1)
    for r in runs:
        for name in mixed:
            ph = r.phases[name]
            if ph.per == "iteration" and ph.by_call is not None:
                ph.cpu, ph.gpu = ph.by_call
                ph.per, ph.ran_in = "call", 1.0
    return mixed


def _per_learning_iteration_fits(x: np.ndarray, ps: list[PhaseSamples]) -> dict[str, MetricFit]:
    """A phase between iterations, scaled per learning iteration too: its calls' time per learning
    iteration (one mean per run: an update every iteration, an evaluation every tenth spread over
    them), fitted as exact per-run values. Empty unless every run recorded learning iterations."""
    li = [p.per_learning_iteration for p in ps]
    if ps[0].per != "call" or any(v is None for v in li):
        return {}
    return {
        f"{m}_per_learning_iteration": fit_exact(m, x, np.array([v[i] for v in li if v is not None]))
        for i, m in enumerate(("cpu", "gpu"))
    }


def _rng(phase: str, metric: str) -> np.random.Generator:
    """The bootstrap's generator for one phase and metric, seeded from their names: a phase's
    interval is the same whatever other phases the runs hold (``--match``) or how many samples they have."""
    return np.random.default_rng([SEED, zlib.crc32(f"{phase}\0{metric}".encode("utf-8", "surrogatepass"))])


def _per_run(runs: Sequence[RunData], name: str, fits: dict[str, MetricFit]) -> list[dict]:
    """Per run: the centres, spreads, memory and what the phase costs in throughput (param·iterations
    per second; a phase between iterations: its time per learning iteration instead)."""
    key = runs[0].key
    rows = []
    for i, r in enumerate(runs):
        ph = r.phases[name]
        iter_ns = fits["cpu"].centres[i] if name == key else centre(r.phases[key].cpu).value
        t = fits["cpu"].centres[i]
        row = {
            "value": r.spec.value,
            "path": r.spec.path,
            "iterations": r.iterations,
            "calls": ph.calls,
            "cpu_ns": t,
            "cpu_rel_err": fits["cpu"].rel[i],
            "gpu_ns": fits["gpu"].centres[i],
            "gpu_rel_err": fits["gpu"].rel[i],
            "ran_in_iterations": ph.ran_in if ph.per == "iteration" else None,
            "share_of_iteration": t * ph.ran_in / iter_ns if iter_ns and ph.per == "iteration" else None,
        }
        if "memory" in fits:
            row.update(memory_bytes=ph.memory, high_water_rise_bytes=ph.grow, net_bytes=ph.net, peak_bytes=ph.peak)
        if ph.per == "call":
            li = ph.per_learning_iteration
            row["learning_iterations"] = r.learning_iterations
            row["cpu_ns_per_learning_iteration"] = li[0] if li else None
            row["gpu_ns_per_learning_iteration"] = li[1] if li else None
        elif name == key:
            row["steps_per_s"] = steps_per_s(r.spec.value, iter_ns)
        else:
            row["steps_per_s_cost"] = steps_cost(r.spec.value, iter_ns, t * ph.ran_in)
        rows.append(row)
    return rows


def predict(sc: Scaling, value: float) -> dict:
    """Time per iteration (or call) per phase and memory at ``value`` from the fits."""
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
        row: dict = {"phase": ph.phase, "per": ph.per}
        for m, f in ph.fits.items():
            row[f"{m}_{'bytes' if f.metric in ('memory', 'peak') else 'ns'}"] = f.at(value)
        phases.append(row)
    doc: dict = {"value": value, "phases": phases, "extrapolated": value > max(sc.values) or value < min(sc.values)}
    others = [r for r in phases[1:] if r["per"] == "iteration"]
    if others:
        # The phases are fitted one by one, the iteration on its own: far out their curves disagree.
        # The phases' sum is what the iteration's time would be if it were nothing but its phases.
        doc["phases_sum_cpu_ns"] = sum(r["cpu_ns"] for r in others)
        doc["phases_sum_gpu_ns"] = sum(r["gpu_ns"] for r in others)
    peaks = _peak_fits(sc)
    if peaks:
        doc["peak_bytes"] = max(f.at(value) for _, f in peaks)
    return doc


PROCESS = "the process"  # what bounds a budget when the whole capture's peak does


def _peak_fits(sc: Scaling) -> list[tuple[str, MetricFit]]:
    """The absolute-peak fits that bound the memory a run needs: the process's whole-capture peak
    and each phase's (the most held while it was open). Each is its own a + b·N + c·N²: the peak
    moves from one phase to another as N grows, which one polynomial cannot follow."""
    fits = [(PROCESS, sc.process_peak)] if sc.process_peak is not None and sc.process_peak.quadratic else []
    return fits + [
        (ph.phase, ph.fits["peak"]) for ph in sc.phases if "peak" in ph.fits and ph.fits["peak"].quadratic is not None
    ]


def memory_budget(sc: Scaling, budget: int) -> dict:
    """The largest parameter value whose fitted peak memory fits ``budget`` bytes, and the phase that
    needs the most memory there (the largest fitted rise)."""
    if not sc.has_memory:
        raise NvtxsimError(
            "--memory-budget needs GPU memory events in every run (profile with nvtxsim profile --memory)"
        )
    if sc.refused:
        raise NvtxsimError(f"--memory-budget: {sc.refused}")
    doc: dict = {
        "budget_bytes": budget,
        "largest_value": None,
        "peak_at_largest_bytes": None,
        "model": "a + b·N + c·N² (a, b, c ≥ 0) per peak: the process's and each phase's",
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
    doc["bound_by"] = peaks[limits.index(min(limits))][0]
    needs = [(ph.fits["memory"].at(v), ph.phase) for ph in sc.phases[1:] if "memory" in ph.fits and not _loop(ph.phase)]
    doc["limited_by"] = max(needs)[1] if needs and max(needs)[0] > 0 else None
    doc["measured_peak_bytes"] = sc.runs[-1].process_peak
    doc["extrapolated"] = v > max(sc.values)
    return doc


def _loop(label: str) -> bool:
    """A loop level (iteration, step, rollout, learning iteration): it holds the other phases, so its
    rise is theirs and it never names the phase that needs the memory."""
    dom, sep, name = label.partition(":")
    return bool(sep) and dom == loop_levels.DOMAIN and loop_levels.style_for(name).category == "loop"
