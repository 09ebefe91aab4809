"""The scaling page: one self-contained HTML file with a log-log plot per phase (static inline SVG) and the tables.

Everything from the exports (phase names, paths) is escaped; the page has no script and loads nothing.
"""

from __future__ import annotations

import html
import math

from nvtxsim.analysis.scaling import MetricFit, Scaling
from nvtxsim.reporting.viewtable import ViewTable, fmt_bytes, fmt_ns

W, H, L, R, T, B = 420, 250, 64, 14, 14, 36
SERIES = (("cpu", "CPU", "#2f6fdf"), ("gpu", "GPU busy", "#e07b00"))
MEMORY = ("memory", "memory", "#1f9d55")


def _ticks(lo: float, hi: float, binary: bool = False) -> list[float]:
    """Powers of ten (and 2, 5 between them when the range is short) inside [lo, hi]; bytes: powers of two."""
    if binary:
        a, b = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        step = max(1, math.ceil((b - a) / 6))
        return [2.0**e for e in range(a, b + 1) if e % step == 0 and lo <= 2.0**e <= hi]
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if b - a <= 2 else (1,)
    return [m * 10**e for e in range(a, b + 1) for m in steps if lo <= m * 10**e <= hi]


def _plot(title: str, values: list[float], series: list[tuple[MetricFit, str, str]], fmt, x_extra: float | None) -> str:
    """One log-log SVG: median per run with its ± relative error, and the fitted a + b·N^k curve."""
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
    for y in _ticks(y0, y1, binary=fmt is fmt_bytes):
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


def _short(x: float) -> str:
    if x >= 1e6 and float(x / 1e6).is_integer():
        return f"{x / 1e6:g}M"
    if x >= 1e4 and float(x / 1e3).is_integer():
        return f"{x / 1e3:g}k"
    return f"{x:g}"


def render_scaling_html(sc: Scaling, tables: list[ViewTable], lines: list[str]) -> str:
    """One self-contained page: a log-log plot per phase (the shape of the growth at a glance), then the tables."""
    from nvtxsim.reporting.renderers.html import standalone_page, table_html

    extra = sc.prediction["value"] if sc.prediction else None
    figs = []
    for ph in sc.phases:
        time_plot = _plot(
            "time per iteration", sc.values, [(ph.fits[m], name, col) for m, name, col in SERIES], fmt_ns, extra
        )
        mem = ph.fits.get("memory")
        mem_plot = (
            _plot("GPU memory (own, while open)", sc.values, [(mem, MEMORY[1], MEMORY[2])], fmt_bytes, extra)
            if mem
            else ""
        )
        figs.append(
            f'<div class="ph"><h3><bdi>{html.escape(ph.phase)}</bdi></h3><div class="row">{time_plot}{mem_plot}</div></div>'
        )
    notes = "".join(f'<p class="sub">{html.escape(line)}</p>' for line in ([sc.refused] if sc.refused else []) + lines)
    sections = "".join(f"<section><h2>{html.escape(t.title)}</h2>{table_html(t)}</section>" for t in tables)
    css = ".ph{margin:0 0 18px}.ph h3{font-size:14px;margin:0 0 4px}.row{display:flex;flex-wrap:wrap;gap:18px}figure.sp{margin:0}figcaption{font-size:12px;color:var(--mut)}"
    # A bidi override in one path must not reorder the others: each path is isolated.
    src = " · ".join(f"{html.escape(_short(r.spec.value))}: <bdi>{html.escape(r.spec.path)}</bdi>" for r in sc.runs)
    main = (
        f'<section><h2>Per phase, log-log</h2><p class="sub">dots: median per iteration with its ± relative standard error; dashed: the fit that predicts (time: a + b·N^k; memory: a + b·N + c·N², all terms ≥ 0)</p>{"".join(figs)}</section>'
        f"{sections}"
    )
    return standalone_page("nvtxsim scaling", f"nvtxsim scaling: {html.escape(sc.param)}", src, notes, main, css)
