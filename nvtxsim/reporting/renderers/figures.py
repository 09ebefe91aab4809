"""The HTML pages' figures: static inline SVG drawn from a :class:`~nvtxsim.reporting.document.Figure`'s data.

``forest``: compare's change per phase beyond the run-wide factor with its interval (clipped values marked); ``loglog``: scaling's log-log plot per
phase with the fitted curve; ``over_training``: live timing's mean time per range of each phase over the
run. Text from an export (phase names, paths) is escaped; nothing is loaded from anywhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

from nvtxsim.analysis.compare import Comparison, PhaseDelta
from nvtxsim.analysis.scaling import MetricFit, Scaling
from nvtxsim.reporting.compare import flag, interval, pct
from nvtxsim.reporting.document import Figure
from nvtxsim.reporting.scaling import short_value as _short
from nvtxsim.reporting.viewtable import fmt_bytes, fmt_ns


def draw(fig: Figure) -> str:
    """The figure's HTML."""
    return _DRAW[fig.kind](fig.data)


def figure_css(fig: Figure) -> str:
    """The style a page with this figure adds to its own."""
    return _CSS.get(fig.kind, "")


# --------------------------------------------------------------------------- compare: forest


def forest(c: Comparison) -> str:
    """Static SVG: per phase, the change beyond the run-wide factor with its interval, and the threshold line.

    The axis spans the points (and the threshold), at most ±:data:`AXIS_MAX` %; an interval end or a point
    beyond it is drawn at the edge as a triangle with its value written beside it, never cut silently."""
    rows = [p for p in c.phases if p.shift_pct is not None]
    if not rows:
        return '<p class="note">No phase present in both runs with enough samples.</p>'
    thr = c.settings.fail_above
    points = [abs(p.shift_pct or 0.0) for p in rows if math.isfinite(p.shift_pct or 0.0)]
    lim = _nice(min(max(points + ([thr * 1.2] if thr else []) + [5.0]) * 1.15, AXIS_MAX))
    W, L, R, rh = 900, 230, 70, 22
    H = len(rows) * rh + 40
    sx = lambda v: L + (W - L - R) * (max(min(v, lim), -lim) + lim) / (2 * lim)  # noqa: E731
    out = [f'<svg width="{W}" height="{H}" role="img">']
    for k in range(-4, 5):
        v = lim * k / 4
        out.append(f'<line class="grid" x1="{sx(v):.1f}" x2="{sx(v):.1f}" y1="10" y2="{H - 20}"/>')
        out.append(f'<text x="{sx(v):.1f}" y="{H - 6}" text-anchor="middle">{v:+.0f} %</text>')
    out.append(f'<line x1="{sx(0):.1f}" x2="{sx(0):.1f}" y1="6" y2="{H - 20}" stroke="#444"/>')
    if thr is not None and thr <= lim:
        out.append(
            f'<line x1="{sx(thr):.1f}" x2="{sx(thr):.1f}" y1="6" y2="{H - 20}" stroke="#c0392b" stroke-dasharray="4 3"/>'
        )
    for i, p in enumerate(rows):
        out.extend(_forest_row(p, 20 + i * rh, lim, sx))
    out.append("</svg>")
    return "".join(out)


def _clip_label(mid: float, end: float, edge: float) -> str:
    """The value drawn at the edge: the point when it lies beyond (with the interval's end), else the end."""
    beyond = mid > edge if edge > 0 else mid < edge
    return f"{pct(mid)} (to {pct(end)})" if beyond else f"interval to {pct(end)}"


def _nice(lim: float) -> float:
    """The axis half-width: 4 ticks of 1, 2, 2.5 or 5 × 10^k, at least ``lim`` (at most :data:`AXIS_MAX`)."""
    step = lim / 4
    mag = 10 ** math.floor(math.log10(step))
    nice = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= step - 1e-9)
    return min(nice * 4, AXIS_MAX)


AXIS_MAX = 200.0  # percent: a wider axis would squash every ordinary change into a few pixels


def _forest_row(p: PhaseDelta, y: int, lim: float, sx: Callable[[float], float]) -> list[str]:
    """One phase's line: name, interval, point, and a clipped marker at each edge a value lies beyond."""
    col = (
        "#c0392b"
        if p.regression
        else "#2f6fdf"
        if p.verdict == "faster"
        else "#d35400"
        if p.verdict == "slower"
        else "#555"
    )
    lo, hi, mid = p.shift_low_pct or 0.0, p.shift_high_pct or 0.0, p.shift_pct or 0.0
    tip = f"{html.escape(p.phase)}: {pct(mid)} {interval(lo, hi)} ({flag(p)})"
    out = [
        f'<text x="6" y="{y + 4}">{html.escape(p.phase[:34])}</text>',
        f'<line x1="{sx(lo):.1f}" x2="{sx(hi):.1f}" y1="{y}" y2="{y}" stroke="{col}" stroke-width="2"/>',
        f'<circle cx="{sx(mid):.1f}" cy="{y}" r="4" fill="{col}"><title>{tip}</title></circle>',
    ]
    beyond_hi = [v for v in (hi, mid) if v > lim]
    beyond_lo = [v for v in (lo, mid) if v < -lim]
    if beyond_hi:
        x = sx(lim)
        out.append(f'<path class="clipped" d="M{x - 7:.1f},{y - 5} L{x:.1f},{y} L{x - 7:.1f},{y + 5} Z" fill="{col}"/>')
        out.append(f'<text class="clipped" x="{x + 4:.1f}" y="{y + 4}">{_clip_label(mid, hi, lim)}</text>')
    if beyond_lo:
        x = sx(-lim)
        out.append(f'<path class="clipped" d="M{x + 7:.1f},{y - 5} L{x:.1f},{y} L{x + 7:.1f},{y + 5} Z" fill="{col}"/>')
        out.append(f'<text class="clipped" x="{x + 10:.1f}" y="{y - 5}">{_clip_label(mid, lo, -lim)}</text>')
    return out


# --------------------------------------------------------------------------- scaling: log-log per phase

LOGLOG_FRAME = (420, 250, 64, 14, 14, 36)  # width, height, left, right, top, bottom margins
SERIES = (("cpu", "CPU", "#2f6fdf"), ("gpu", "GPU busy", "#e07b00"))
MEMORY = ("memory", "memory", "#1f9d55")


def loglog(sc: Scaling) -> str:
    """Per phase: time per iteration and, when recorded, its own GPU memory, each on log-log axes."""
    extra = sc.prediction["value"] if sc.prediction else None
    figs = []
    for ph in sc.phases:
        time_plot = _loglog_plot(
            "time per call" if ph.per == "call" else "time per iteration",
            sc.values,
            [(ph.fits[m], name, col) for m, name, col in SERIES],
            fmt_ns,
            extra,
        )
        mem = ph.fits.get("memory")
        mem_plot = (
            _loglog_plot(
                "GPU memory (largest rise over its calls)", sc.values, [(mem, MEMORY[1], MEMORY[2])], fmt_bytes, extra
            )
            if mem
            else ""
        )
        figs.append(
            f'<div class="ph"><h3><bdi>{html.escape(ph.phase)}</bdi></h3><div class="row">{time_plot}{mem_plot}</div></div>'
        )
    return "".join(figs)


def _log_ticks(lo: float, hi: float, binary: bool = False) -> list[float]:
    """Powers of ten (and 2, 5 between them when the range is short) inside [lo, hi]; bytes: powers of two."""
    if binary:
        a, b = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        step = max(1, math.ceil((b - a) / 6))
        return [2.0**e for e in range(a, b + 1) if e % step == 0 and lo <= 2.0**e <= hi]
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if b - a <= 2 else (1,)
    return [m * 10**e for e in range(a, b + 1) for m in steps if lo <= m * 10**e <= hi]


def _loglog_plot(
    title: str, values: list[float], series: list[tuple[MetricFit, str, str]], fmt, x_extra: float | None
) -> str:
    """One log-log SVG: median per run with its ± relative error, and the fitted a + b·N^k curve."""
    W, H, L, R, T, B = LOGLOG_FRAME
    xs = list(values) + ([x_extra] if x_extra else [])
    pts = [(f, name, col) for f, name, col in series if any(v > 0 for v in f.centres)]
    if not pts:
        return f'<figure class="sp"><figcaption>{html.escape(title)}</figcaption><p class="note">nothing above zero to plot</p></figure>'
    ys = [v * math.exp(s * f.rel[i]) for f, _, _ in pts for i, v in enumerate(f.centres) if v > 0 for s in (-1, 1)]
    for f, _, _ in pts:
        if f.power is not None:
            ys += [y for y in (f.at(x) for x in xs) if y > 0]
    x0, x1 = min(xs) / 1.3, max(xs) * 1.3
    y0, y1 = min(ys) / 1.5, max(ys) * 1.5
    sx = lambda x: L + (W - L - R) * (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))  # noqa: E731
    sy = lambda y: H - B - (H - T - B) * (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0))  # noqa: E731
    out = [f'<figure class="sp"><figcaption>{html.escape(title)}</figcaption><svg width="{W}" height="{H}" role="img">']
    for y in _log_ticks(y0, y1, binary=fmt is fmt_bytes):
        out.append(
            f'<line class="grid" x1="{L}" x2="{W - R}" y1="{sy(y):.1f}" y2="{sy(y):.1f}"/><text x="{L - 4}" y="{sy(y) + 4:.1f}" text-anchor="end">{html.escape(fmt(y))}</text>'
        )
    for x in xs:
        out.append(
            f'<line class="grid" x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{T}" y2="{H - B}"/><text x="{sx(x):.1f}" y="{H - B + 14}" text-anchor="middle">{html.escape(_short(x))}</text>'
        )
    out.append(
        f'<line class="ax" x1="{L}" x2="{L}" y1="{T}" y2="{H - B}"/><line class="ax" x1="{L}" x2="{W - R}" y1="{H - B}" y2="{H - B}"/>'
    )
    for k, (f, name, col) in enumerate(pts):
        if f.power is not None:
            grid = [x0 * (x1 / x0) ** (i / 60) for i in range(61)]
            path = " ".join(
                f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(f.at(x)):.1f}" for i, x in enumerate(grid) if f.at(x) > 0
            )
            out.append(
                f'<path d="{path}" fill="none" stroke="{col}" stroke-width="1.5" stroke-dasharray="5 3" opacity="0.8"/>'
            )
        for i, (x, v) in enumerate(zip(values, f.centres)):
            if v <= 0:
                continue
            lo, hi = v * math.exp(-f.rel[i]), v * math.exp(f.rel[i])
            tip = html.escape(f"{name} at {_short(x)}: {fmt(v)} ± {100 * f.rel[i]:.1f} %")
            out.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{sy(lo):.1f}" y2="{sy(hi):.1f}" stroke="{col}"/>')
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(v):.1f}" r="3.5" fill="{col}"><title>{tip}</title></circle>')
        label = f"{name}: {f.cls or '–'}" + (f" (k={f.exponent:.2f})" if f.exponent is not None else "")
        out.append(
            f'<rect x="{L + 8}" y="{T + 4 + 15 * k}" width="10" height="10" fill="{col}"/><text x="{L + 22}" y="{T + 13 + 15 * k}">{html.escape(label)}</text>'
        )
    out.append("</svg></figure>")
    return "".join(out)


# --------------------------------------------------------------------------- live: each phase over training

TRAINING_FRAME = (560, 190, 70, 14, 12, 30)  # width, height, left, right, top, bottom margins
CPU_COLOR, GPU_COLOR = "#2f6fdf", "#e07b00"


def over_training(data: Any) -> str:
    """A line per phase (the :class:`~nvtxsim.reporting.live.TrainingLines` of a live-timing file)."""
    lines = [(phase, cpu, gpu) for phase, cpu, gpu in data.lines() if cpu or gpu]
    if lines and all(len({x for x, _ in cpu + gpu}) < 2 for _, cpu, gpu in lines):
        # One window: a line over training needs two points; a lone dot on a made-up axis says nothing.
        return (
            '<p class="note">One window of iterations: nothing to draw over training (the table below holds its '
            "times). With <code>every=</code> below the run's iterations, each phase is drawn over several windows.</p>"
        )
    figs = [_training_plot(phase, cpu, gpu) for phase, cpu, gpu in lines]
    more = f'<p class="note">{data.more} more phases in the table.</p>' if data.more else ""
    plots = "".join(figs) or '<p class="note">Nothing to plot.</p>'
    return f'<div class="grid2">{plots}</div>{more}'


def _linear_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(n + 2) if first + i * step <= hi + 1e-9]


#: Points per line at most: about one per pixel of the plot. Past that, each point is the slowest window of
#: a run of neighbours (spikes stay visible) and the page stays small (100k windows: 54 MB before).
PLOT_POINTS = 500


def _thin(data: list[tuple[int, float]], most: int = PLOT_POINTS) -> list[tuple[int, float, int]]:
    """(x, y, windows): ``data`` as is when short enough, else the slowest of each run of consecutive windows."""
    if len(data) <= most:
        return [(x, y, 1) for x, y in data]
    size = -(-len(data) // most)
    out = []
    for i in range(0, len(data), size):
        chunk = data[i : i + size]
        x, y = max(chunk, key=lambda p: p[1])
        out.append((x, y, len(chunk)))
    return out


def _training_plot(key: str, cpu: list[tuple[int, float]], gpu: list[tuple[int, float]]) -> str:
    """Mean time per range of one phase over the run: x = last iteration of the window."""
    W, H, L, R, T, B = TRAINING_FRAME
    pts = cpu + gpu
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = max(ys) * 1.25 or 1.0  # headroom: the top of the line stays clear of the legend
    sx = lambda x: L + (W - L - R) * (x - x0) / (x1 - x0)  # noqa: E731
    sy = lambda y: H - B - (H - T - B) * y / y1  # noqa: E731
    out = [f'<figure class="lp"><figcaption>{html.escape(key)}</figcaption><svg width="{W}" height="{H}" role="img">']
    for y in _linear_ticks(0.0, y1):
        out.append(
            f'<line class="grid" x1="{L}" x2="{W - R}" y1="{sy(y):.1f}" y2="{sy(y):.1f}"/>'
            f'<text x="{L - 4}" y="{sy(y) + 4:.1f}" text-anchor="end">{html.escape(fmt_ns(y))}</text>'
        )
    for x in dict.fromkeys(int(x) for x in _linear_ticks(float(x0), float(x1)) if float(x).is_integer()):
        out.append(f'<text x="{sx(x):.1f}" y="{H - B + 14}" text-anchor="middle">{int(x)}</text>')
    out.append(
        f'<line class="ax" x1="{L}" x2="{L}" y1="{T}" y2="{H - B}"/><line class="ax" x1="{L}" x2="{W - R}" y1="{H - B}" y2="{H - B}"/>'
    )
    for name, data, col in (("CPU", cpu, CPU_COLOR), ("GPU", gpu, GPU_COLOR)):
        if not data:
            continue
        thin = _thin(data)
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y, _n) in enumerate(thin))
        out.append(f'<path d="{path}" fill="none" stroke="{col}" stroke-width="1.5"/>')
        for x, y, n in thin:
            of = f" (the slowest of {n} windows)" if n > 1 else ""
            tip = html.escape(f"{key} {name} mean at iteration {x}: {fmt_ns(y)}{of}")
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{col}"><title>{tip}</title></circle>')
    out.append(
        f'<text x="{W - R}" y="{T + 10}" text-anchor="end"><tspan fill="{CPU_COLOR}">CPU</tspan>'
        + (f' · <tspan fill="{GPU_COLOR}">GPU</tspan>' if gpu else "")
        + "</text></svg></figure>"
    )
    return "".join(out)


_DRAW: dict[str, Callable[[Any], str]] = {"forest": forest, "loglog": loglog, "over_training": over_training}
_CSS = {
    "loglog": ".ph{margin:0 0 18px}.ph h3{font-size:14px;margin:0 0 4px}.row{display:flex;flex-wrap:wrap;gap:18px}"
    "figure.sp{margin:0}figcaption{font-size:12px;color:var(--mut)}",
    "over_training": ".grid2{display:flex;flex-wrap:wrap;gap:10px 24px}figure.lp{margin:0;max-width:"
    + str(TRAINING_FRAME[0])
    + "px}figcaption{font-size:12.5px;font-weight:600;overflow-wrap:anywhere}",
}
