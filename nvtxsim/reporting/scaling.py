"""``nvtxsim scaling``'s library: a sweep of exports → :class:`~nvtxsim.analysis.scaling.Scaling` → document.

:func:`sweep` loads every run and fits each phase; :func:`forecast` adds ``--predict`` and
``--memory-budget``; :func:`scaling_document` is what every format renders.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from nvtxsim.analysis.fits import at_bound
from nvtxsim.analysis.projection import DEFAULT_DOMAIN, resolve_domain
from nvtxsim.analysis.scaling import (
    METRICS,
    MetricFit,
    Scaling,
    analyse,
    collect_run,
    memory_budget,
    parse_runs,
    predict,
    require_sweep,
)
from nvtxsim.analysis.selection import Selection
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.columns import Export
from nvtxsim.export.reader import load as load_export
from nvtxsim.reporting.document import Document, Figure, PageHead, Prose, Section, SourcePart
from nvtxsim.reporting.viewtable import Column, ViewTable, fmt_bytes, fmt_ns

_UNITS = {"cpu": "ns", "gpu": "ns", "memory": "bytes"}


def sweep(
    items: Sequence[str],
    param: str,
    *,
    by: str | None = None,
    skip_first: int = 0,
    domain: str | None = DEFAULT_DOMAIN,
    domain_given: bool = False,
    match: str | None = None,
    load: Callable[[str | os.PathLike[str]], Export] = load_export,
) -> Scaling:
    """Load every ``RUN=VALUE`` in ``items`` (with ``load``) and fit each phase against ``param``."""
    if skip_first < 0:
        raise NvtxsimError("--skip-first must be >= 0")
    runs = []
    said: dict[str, list[str]] = {}  # note -> the runs it is about
    specs = parse_runs(items)
    require_sweep(specs)
    for spec in specs:
        export = load(spec.path)
        dom, note = resolve_domain(export, domain, given=domain_given)
        if note:
            said.setdefault(note, []).append(str(spec.path))
        runs.append(collect_run(spec, Selection(export, domain=dom, match=match), by=by, skip_first=skip_first))
    sc = analyse(runs, param)
    sc.notes[:0] = [run_note(note, paths, len(specs)) for note, paths in said.items()]
    return sc


def run_note(note: str, paths: list[str], runs: int) -> str:
    """A note about some runs, said once: for every run, or naming the runs it is about."""
    return f"every run: {note}" if len(paths) == runs > 1 else f"{', '.join(paths)}: {note}"


def forecast(sc: Scaling, *, at: float | None = None, budget: int | None = None) -> None:
    """``--predict`` (time and memory per phase ``at`` a value) and ``--memory-budget`` (the largest value
    whose peak fits ``budget`` bytes), when the fits allow them; a budget without any memory data fails."""
    if sc.refused is None:
        if at is not None:
            sc.prediction = predict(sc, at)
        if budget is not None:
            sc.budget = memory_budget(sc, budget)
    elif budget is not None and not sc.has_memory:
        memory_budget(sc, budget)  # the clearer error: no memory events at all


def _fmt(metric: str, v: float | None) -> str:
    if v is None:
        return ""
    return fmt_bytes(v) if _UNITS.get(metric) == "bytes" else fmt_ns(v)


def _exp(f: MetricFit | None) -> str:
    """``k [lo, hi]``: the class-deciding exponent and its interval (empty when no class was fitted);
    an exponent at a bound of the fit is a bound (``≥3.00``), shown with the log-log slope instead
    of an interval, and one with a zero-width interval is shown with the slope too."""
    if f is None or f.exponent is None:
        return ""
    end = at_bound(f.exponent) if f.cls not in ("constant", "none") else None
    text = ("≥" if end == "upper" else "≤" if end == "lower" else "") + f"{f.exponent:.2f}"
    if f.degenerate and f.slope is not None:
        return text + f" (slope {f.slope:.2f})"
    if f.exponent_low is not None and f.exponent_high is not None and f.cls != "none":
        text += f" [{f.exponent_low:.2f}, {f.exponent_high:.2f}]"
    return text


def _slope(f: MetricFit | None) -> str:
    return (
        f"{f.slope:.2f} ± {f.slope_err:.2f}"
        if f is not None and f.slope is not None and f.slope_err is not None
        else ""
    )


# --------------------------------------------------------------------------- tables


def class_table(sc: Scaling, per: str = "iteration") -> ViewTable | None:
    """Per phase: the classes and exponents (what grows worst) and the values at the largest N; the
    phases inside the iterations (``per="iteration"``) or those between them, per call (None: none)."""
    memory = sc.has_memory
    shown = [ph for ph in sc.phases if ph.per == per]
    if not shown:
        return None
    unit = "iter" if per == "iteration" else "call"
    last = _num(sc.values[-1])
    # Everything but the phase is "num": shown whole or left out on a narrow terminal, never shortened.
    # Table order is the priority on a narrow terminal: classes, then exponents, then the rest.
    cols = [Column("phase", "Phase"), Column("cpu_class", "CPU", "num"), Column("gpu_class", "GPU", "num")] + (
        [Column("memory_class", "memory", "num")] if memory else []
    )
    cols += [Column("cpu_exp", "k CPU", "num"), Column("gpu_exp", "k GPU", "num")] + (
        [Column("memory_exp", "k mem", "num")] if memory else []
    )
    cols.append(Column("cpu_slope", "log-log CPU", "num"))
    cols += [Column("cpu_last", f"CPU/{unit} @{last}", "num"), Column("gpu_last", f"GPU/{unit} @{last}", "num")]
    if memory:
        cols += [Column("mem_last", f"mem @{last}", "num"), Column("net_last", f"net @{last}", "num")]
    if per == "call":
        cols.append(Column("li_last", f"CPU/learning iter @{last}", "num"))
    rows = [_class_row(ph, memory) for ph in shown]
    if per == "call":
        title = "Between iterations, per call (learning updates, evaluation)"
        return ViewTable("scaling_calls", title, cols, rows, [_CALL_NOTE] + _doubt_notes(shown))
    notes = list(sc.notes)
    if sc.refused:
        notes.insert(0, sc.refused)
    else:
        notes.append(
            "class from y = a + b·N^k fitted per phase (a: floor such as launch latency); k and its 95 % interval "
            "(time: bootstrap over iterations; memory: leaving one run out); constant: growth over the sweep < 25 %; "
            "sublinear k < 0.75; superlinear k > 1.25; log-log: slope ± error from the per-iteration spread"
        )
        notes += _doubt_notes(shown)
    if memory:
        notes.append(
            "memory: the most the phase added to what the process held when it opened, largest over its calls "
            "(warm-up included: under PyTorch's caching allocator, its first calls' cache growth); "
            "net: allocations minus frees over its calls"
        )
    title = f"Scaling with {sc.param} ({', '.join(_num(v) for v in sc.values)}); per iteration of {sc.runs[0].key}"
    return ViewTable("scaling", title, cols, rows, notes)


def _class_row(ph, memory: bool) -> dict:
    """One phase's row of :func:`class_table`: classes (``?`` in doubt), exponents, values at the largest N."""
    row = {"phase": ph.phase}
    for m, f in ph.fits.items():
        row[f"{m}_class"] = (f.cls or "") + (" ?" if f.uncertain else "")
        row[f"{m}_exp"] = _exp(f)
    row["cpu_slope"] = _slope(ph.fits["cpu"])
    row["cpu_last"] = _fmt("cpu", ph.fits["cpu"].centres[-1])
    row["gpu_last"] = _fmt("gpu", ph.fits["gpu"].centres[-1])
    if memory:
        row["mem_last"] = _fmt("memory", ph.fits["memory"].centres[-1])
        row["net_last"] = _fmt("memory", ph.per_run[-1].get("net_bytes"))
    if ph.per == "call":
        li = ph.fits.get("cpu_per_learning_iteration")
        row["li_last"] = _fmt("cpu", ph.per_run[-1].get("cpu_ns_per_learning_iteration")) + (
            f" ({li.cls}{' ?' if li.uncertain else ''})" if li is not None and li.cls else ""
        )
    return row


_CALL_NOTE = (
    "phases that run only between the loop's iterations: one sample per call; "
    "CPU/learning iter: their time summed over each learning iteration, on average, and its class"
)


def _doubt_notes(shown) -> list[str]:
    if not any(ph.fits[m].uncertain for ph in shown for m in METRICS if m in ph.fits):
        return []
    return [
        "?: not to be trusted: k at a bound of the fit's grid (≥3.00, ≤0.05: a bound, not an estimate) or with a "
        "zero-width interval, shown with the log-log slope in place of the interval; or an interval that reaches "
        "into another class"
    ]


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def run_table(sc: Scaling) -> ViewTable:
    """Per phase and run: the per-iteration values the fits used, and the throughput cost."""
    memory = sc.has_memory
    cols = [
        Column("phase", "Phase"),
        Column("value_text", sc.param, "num"),
        Column("iterations", "iters", "int"),
        Column("calls", "calls", "int"),
        Column("cpu_ns", "CPU/iter", "ns"),
        Column("cpu_err", "±", "num"),
        Column("gpu_ns", "GPU/iter", "ns"),
        Column("share_of_iteration", "of iter", "pct"),
    ]
    if memory:
        cols += [
            Column("memory_bytes", "mem", "bytes"),
            Column("net_bytes", "net", "bytes"),
            Column("high_water_rise_bytes", "high-water +", "bytes"),
            Column("peak_bytes", "peak", "bytes"),
        ]
    cols.append(Column("throughput", f"{sc.param}·steps/s", "num"))
    if any(ph.per == "call" for ph in sc.phases):
        cols.append(Column("per_li", "CPU/learning iter", "num"))
    rows = []
    for ph in sc.phases:
        for r in ph.per_run:
            row = dict(r, phase=ph.phase, value_text=_num(r["value"]), cpu_err=f"{100 * r['cpu_rel_err']:.1f} %")
            if ph.per == "call":
                row["throughput"], row["per_li"] = "", _fmt("cpu", r.get("cpu_ns_per_learning_iteration"))
            elif "steps_per_s" in r:
                row["throughput"] = _rate(r["steps_per_s"])
            else:
                row["throughput"] = ("costs " + _rate(r["steps_per_s_cost"])) if r.get("steps_per_s_cost") else ""
            rows.append(row)
    notes = [
        f"throughput: {sc.param} × iterations per second (env-steps/s when {sc.param} is the number of environments); "
        "a phase's cost: how much higher it would be if the phase took no time; "
        "a phase between iterations: CPU/iter is per call; CPU/learning iter: its calls' time per learning iteration, on average"
    ]
    if memory:
        notes.append(
            "mem: the largest rise over the phase's calls; net: allocations minus frees; high-water +: how much "
            "it raised the process's high-water mark; peak: the most the process held while it was open"
        )
    return ViewTable("runs", "Per run (median per iteration, ± its relative standard error)", cols, rows, notes)


def _rate(v: float | None) -> str:
    if v is None:
        return ""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.2f} {unit}/s"
    return f"{v:.1f} /s"


def prediction_table(sc: Scaling) -> ViewTable | None:
    """``--predict``: per phase, time and memory at the asked value (None when not asked)."""
    p = sc.prediction
    if not p:
        return None
    memory = sc.has_memory
    calls = any(r.get("per") == "call" for r in p["phases"])
    cols = [Column("phase", "Phase")] + ([Column("per", "per", "num")] if calls else [])
    cols += [Column("cpu_ns", "CPU", "ns"), Column("gpu_ns", "GPU", "ns")]
    cols += [Column("memory_bytes", "mem", "bytes")] if memory else []
    notes = ["CPU, GPU: per iteration" + ("; per call for the phases between iterations (per: call)" if calls else "")]
    if "phases_sum_cpu_ns" in p:
        notes.append(
            f"{p['phases'][0]['phase']}: its own fit; its phases' predictions add up to {fmt_ns(p['phases_sum_cpu_ns'])} CPU, "
            f"{fmt_ns(p['phases_sum_gpu_ns'])} GPU (each curve extrapolates on its own; nested phases count in both)"
        )
    if "peak_bytes" in p:
        notes.append(f"peak GPU memory (the process's and the phases' fitted peaks): {fmt_bytes(p['peak_bytes'])}")
    if p.get("extrapolated"):
        notes.append("outside the measured range: an extrapolation of the fits")
    return ViewTable("predict", f"Predicted at {sc.param}={_num(p['value'])}", cols, p["phases"], notes)


def budget_lines(sc: Scaling) -> list[str]:
    """``--memory-budget``: one line with the largest value that fits and the phase that limits it."""
    b = sc.budget
    if not b:
        return []
    head = f"memory budget {fmt_bytes(b['budget_bytes'])}: "
    if b.get("largest_value") is None:
        return [head + b.get("note", "no value fits")]
    extra = " (extrapolated)" if b.get("extrapolated") else ""
    limit = f", limited by {b['limited_by']}" if b.get("limited_by") else ""
    measured = (
        f"; measured peak {fmt_bytes(b['measured_peak_bytes'])} at {sc.param}={_num(sc.values[-1])}"
        if b.get("measured_peak_bytes")
        else ""
    )
    return [
        head
        + f"largest {sc.param} = {_num(b['largest_value'])}{extra}, fitted peak {fmt_bytes(b['peak_at_largest_bytes'])}"
        + f"{limit}{measured}"
    ]


# --------------------------------------------------------------------------- documents


def as_dict(sc: Scaling) -> dict:
    """The JSON document (docs/scaling.md, Output): raw numbers, classes and fits per phase."""
    from nvtxsim._version import __version__

    phases = []
    for ph in sc.phases:
        d: dict = {"phase": ph.phase, "per": ph.per}
        for m in METRICS:
            f = ph.fits.get(m)
            d[f"{m}_class"] = f.cls if f else None
            d[f"{m}_exponent"] = f.exponent if f else None
        d["fit"] = {m: f.as_dict() for m, f in ph.fits.items()}
        d["per_run"] = ph.per_run
        phases.append(d)
    doc = {
        "param": sc.param,
        "values": sc.values,
        "key": sc.runs[0].key,
        "runs": [
            {
                "path": r.spec.path,
                "value": r.spec.value,
                "iterations": r.iterations,
                "process_peak_bytes": r.process_peak if r.has_memory else None,
            }
            for r in sc.runs
        ],
        "phases": phases,
        "peak_memory_fit": sc.process_peak.as_dict() if sc.process_peak else None,
        "notes": ([sc.refused] if sc.refused else []) + sc.notes,
        "nvtxsim_version": __version__,
    }
    if sc.prediction:
        doc["predict"] = sc.prediction
    if sc.budget:
        doc["memory_budget"] = sc.budget
    return doc


def short_value(x: float) -> str:
    """A parameter value in few characters (16384 → 16k, 2000000 → 2M)."""
    if x >= 1e6 and float(x / 1e6).is_integer():
        return f"{x / 1e6:g}M"
    if x >= 1e4 and float(x / 1e3).is_integer():
        return f"{x / 1e3:g}k"
    return f"{x:g}"


def scaling_document(sc: Scaling) -> Document:
    """The log-log plots (a figure on a page), the class, per-run and prediction tables, and the budget line."""
    tables = [t for t in (class_table(sc), class_table(sc, "call"), run_table(sc)) if t is not None]
    pred = prediction_table(sc)
    if pred is not None:
        tables.append(pred)
    plots = Figure(
        "loglog",
        "Per phase, log-log",
        "dots: median per iteration with its ± relative standard error; dashed: the fit that predicts "
        "(time: a + b·N^k; memory: a + b·N + c·N², all terms ≥ 0)",
        sc,
    )
    first: Section = [plots, tables[0]]
    sections: list[Section] = [first] + [[t] for t in tables[1:]]
    lines = budget_lines(sc)
    if lines:  # under the last table
        sections[-1].append(Prose("remark", list(lines)))
    head = PageHead(
        "nvtxsim scaling",
        f"nvtxsim scaling: {sc.param}",
        [SourcePart(r.spec.path, label=short_value(r.spec.value)) for r in sc.runs],
        [Prose("note", ([sc.refused] if sc.refused else []) + lines)],
    )
    return Document("scaling", sections, head, data=lambda: as_dict(sc), flat=_csv_table(sc))


def _csv_table(sc: Scaling) -> ViewTable:
    """One row per (phase, run) with the phase's classes and exponents repeated: one flat table."""
    rows = []
    for ph in sc.phases:
        head: dict = {"param": sc.param, "phase": ph.phase, "per": ph.per}
        for m in METRICS:
            f = ph.fits.get(m)
            head[f"{m}_class"] = f.cls if f else ""
            head[f"{m}_class_uncertain"] = f.uncertain if f else ""
            head[f"{m}_exponent"] = f.exponent if f and f.exponent is not None else ""
            head[f"{m}_loglog_slope"] = f.slope if f and f.slope is not None else ""
            head[f"{m}_loglog_slope_err"] = f.slope_err if f and f.slope_err is not None else ""
        for r in ph.per_run:
            rows.append({**head, **r})
    return ViewTable("scaling", "", [], rows)
