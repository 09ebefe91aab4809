"""``nvtxsim live FILE.jsonl``: the per-phase totals of a live-timing file, and each phase's time over training.

Table, markdown and CSV go through the view-table renderers; HTML is one self-contained page with
a static inline SVG line per phase (mean CPU and GPU time per range, one point per window).
Phase names come from the file and are data: escaped in every format.
"""

from __future__ import annotations

import html
import math

from nvtxsim.analysis.live import LiveLog, series, totals
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.escaping import json_text
from nvtxsim.reporting.renderers.tables import csv_text, markdown_text, table_text
from nvtxsim.reporting.summary import fmt_ns
from nvtxsim.reporting.viewtable import Column, ViewTable

FORMATS = ("table", "json", "csv", "markdown", "html")
PLOT_MAX = 24  # phases plotted in the HTML page (the table has them all)

COLUMNS = [
    Column("phase", "Phase"),
    Column("count", "N", "int"),
    Column("cpu_ns", "CPU total", "ns"),
    Column("per_iteration_ns", "CPU / iteration", "ns"),
    Column("cpu_mean_ns", "CPU mean", "ns"),
    Column("cpu_p90_max_ns", "CPU p90 (max window)", "ns"),
    Column("gpu_ns", "GPU total", "ns"),
    Column("gpu_mean_ns", "GPU mean", "ns"),
    Column("windows", "windows", "int"),
]


def _heading(log: LiveLog) -> str:
    ends = [w.iterations for w in log.windows if w.iterations is not None]
    span = (
        f"iterations {min(a for a, _ in ends)}..{max(b for _, b in ends)}" if ends else "no iterations marked"
    )  # lines of several processes interleave
    measured = sum(w.measured or 0 for w in log.windows)
    samples = sorted({w.sample for w in log.windows if w.sample is not None})
    sample = f" (1 in {samples[0]})" if samples and samples != [1] else ""
    windows = f"{len(log.windows)} window{'s' if len(log.windows) != 1 else ''}"
    return f"{log.path} · {windows} · {span} · {measured} measured{sample}"


def _notes(log: LiveLog) -> list[str]:
    notes = []
    if log.skipped:
        notes.append(f"{log.skipped} line(s) that are not live-timing windows were skipped")
    if len(log.pids) > 1:
        notes.append(f"lines from {len(log.pids)} processes (pids {', '.join(map(str, log.pids[:8]))}) are summed")
    dropped = sum(w.dropped_windows or 0 for w in log.windows)
    if dropped:
        notes.append(f"{dropped} window(s) were dropped during the run (the writer fell behind)")
    for w in log.windows:
        t = w.trigger
        if t is not None:
            notes.append(f"trigger {t.get('rule')} fired at iteration {t.get('at')}: capture window {t.get('window')}")
    return notes


def live_table(log: LiveLog) -> ViewTable:
    """One row per phase, the busiest (CPU total) first."""
    rows = [{"phase": key, **t} for key, t in totals(log.windows).items()]
    rows.sort(key=lambda r: (-r["cpu_ns"], r["phase"]))
    return ViewTable("live", _heading(log), COLUMNS, rows, _notes(log))


def render_live(log: LiveLog, fmt: str, *, width: int | None = None, color: bool = False) -> str:
    t = live_table(log)
    if fmt == "table":
        return table_text(t, width=width, color=color)
    if fmt == "markdown":
        return markdown_text(t)
    if fmt == "csv":
        return csv_text(t)
    if fmt == "json":
        doc = {
            "source": log.path,
            "windows": len(log.windows),
            "skipped": log.skipped,
            "pids": log.pids,
            "notes": t.notes,
            "phases": {r["phase"]: {k: v for k, v in r.items() if k != "phase"} for r in t.rows},
        }
        return json_text(doc, indent=2) + "\n"
    if fmt == "html":
        return render_live_html(log, t)
    raise NvtxsimError(f"live has no format {fmt!r}")


# --------------------------------------------------------------------------- html

W, H, L, R, T, B = 560, 190, 70, 14, 12, 30
CPU_COLOR, GPU_COLOR = "#2f6fdf", "#e07b00"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
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


def _plot(key: str, cpu: list[tuple[int, float]], gpu: list[tuple[int, float]]) -> str:
    """Mean time per range of one phase over the run: x = last iteration of the window."""
    pts = cpu + gpu
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = max(ys) * 1.25 or 1.0  # headroom: the top of the line stays clear of the legend
    sx = lambda x: L + (W - L - R) * (x - x0) / (x1 - x0)  # noqa: E731
    sy = lambda y: H - B - (H - T - B) * y / y1  # noqa: E731
    out = [f'<figure class="lp"><figcaption>{html.escape(key)}</figcaption><svg width="{W}" height="{H}" role="img">']
    for y in _ticks(0.0, y1):
        out.append(
            f'<line class="grid" x1="{L}" x2="{W - R}" y1="{sy(y):.1f}" y2="{sy(y):.1f}"/>'
            f'<text x="{L - 4}" y="{sy(y) + 4:.1f}" text-anchor="end">{html.escape(fmt_ns(y))}</text>'
        )
    for x in _ticks(float(x0), float(x1)):
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


def render_live_html(log: LiveLog, t: ViewTable) -> str:
    from nvtxsim.reporting.renderers.html import standalone_page, table_html

    main_pid = log.windows[0].pid if log.windows else None
    windows = [w for w in log.windows if w.pid == main_pid]  # one line per process would zigzag
    figs = []
    for row in t.rows[:PLOT_MAX]:
        cpu, gpu = series(windows, row["phase"], "cpu"), series(windows, row["phase"], "gpu")
        if cpu or gpu:
            figs.append(_plot(row["phase"], cpu, gpu))
    more = f'<p class="note">{len(t.rows) - PLOT_MAX} more phases in the table.</p>' if len(t.rows) > PLOT_MAX else ""
    notes = "".join(f'<p class="sub">{html.escape(n)}</p>' for n in t.notes)
    if len(log.pids) > 1:
        notes += f'<p class="sub">plots: process {html.escape(str(main_pid))} (the first in the file)</p>'
    css = (
        ".grid2{display:flex;flex-wrap:wrap;gap:10px 24px}figure.lp{margin:0;max-width:"
        + str(W)
        + "px}figcaption{font-size:12.5px;font-weight:600;overflow-wrap:anywhere}"
    )
    plots = "".join(figs) or '<p class="note">Nothing to plot.</p>'
    main = (
        f'<section><h2>Each phase over training</h2><p class="sub">mean time per range in each window of iterations '
        f'(CPU: perf_counter; GPU: CUDA events on the launching stream)</p><div class="grid2">{plots}</div>{more}</section>'
        f"<section><h2>Totals</h2>{table_html(t)}</section>"
    )
    return standalone_page("nvtxsim live", "nvtxsim live timing", html.escape(t.title), notes, main, css)


__all__ = ["FORMATS", "live_table", "render_live", "render_live_html"]
