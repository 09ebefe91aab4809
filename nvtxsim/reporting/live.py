"""``nvtxsim live``'s library: a live-timing file → its document (the per-phase totals, and each phase
over training on a page).

Phase names come from the file and are data: escaped in every format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from nvtxsim.analysis.live import LiveLog, gpu_modes, load, series, totals
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.document import Document, Figure, PageHead, Prose, SourcePart
from nvtxsim.reporting.viewtable import Column, ViewTable

PLOT_MAX = 24  # phases plotted on the HTML page (the table has them all)


def read_live(path: str | os.PathLike[str]) -> LiveLog:
    """The windows of a live-timing file; a file that holds none (an export, a script, a log) is an error."""
    log = load(path)
    if not log.windows and log.skipped:
        if _is_sqlite(path):
            raise NvtxsimError(f"{path}: an nsys export, not a live-timing file: nvtxsim report {path}")
        raise NvtxsimError(
            f"{path}: no live-timing window in its {log.skipped} line(s) (NVTXSIM_LIVE=live.jsonl python train.py writes them)"
        )
    return log


def _is_sqlite(path: str | os.PathLike[str]) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


COLUMNS = [
    Column("phase", "Phase"),
    Column("count", "N", "int"),
    Column("cpu_ns", "CPU total", "ns"),
    Column("per_iteration_ns", "CPU / iteration", "ns"),
    Column("cpu_mean_ns", "CPU mean", "ns", priority=0),  # a narrow terminal keeps the mean per range first
    Column("cpu_p90_max_ns", "CPU p90 (max window)", "ns"),
    Column("gpu_ns", "GPU total", "ns"),
    Column("gpu_mean_ns", "GPU mean", "ns"),
    Column("windows", "windows", "int"),
]
#: From CUPTI windows only (NVTXSIM_LIVE_GPU=cupti): a table of a file without any has the columns above alone.
CUPTI_COLUMNS = [
    Column("busy_per_iteration_ns", "GPU busy / iteration", "ns", default=None),
    Column("launches_per_iteration", "launches / iteration", "num", default=None),
    Column("kernels", "kernels", "int", default=None),
    Column("copies", "copies", "int", default=None),
    Column("copy_bytes", "copied", "bytes", default=None),
]
PLOT_GPU = {"events": "CUDA events on the launching stream", "cupti": "CUPTI busy time"}
GPU_MODE_TEXT = {
    "events": "GPU: CUDA events on the launching stream (a stream span: for a short phase that waits on the CPU's launches it reads about its CPU time)",
    "cupti": "GPU: CUPTI busy time (per range, the union of the kernels and copies launched while it was open, by any thread)",
}


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
    notes.extend(GPU_MODE_TEXT[m] for m in gpu_modes(log.windows))
    budgeted = [w for w in log.windows if w.gpu_measured is not None]
    if budgeted:
        covered = sum(w.gpu_iterations for w in budgeted) + sum(
            w.measured or 0 for w in log.windows if w.gpu_measured is None
        )
        measured = sum(w.measured or 0 for w in log.windows)
        notes.append(
            f"GPU times from {covered} of {measured} measured iterations (a GPU cost budget, NVTXSIM_LIVE_GPU_BUDGET): "
            "GPU total sums those; GPU mean, busy and launches per iteration are per range and iteration measured"
        )
    lost = sum(w.gpu_dropped or 0 for w in log.windows)
    if lost:
        notes.append(f"{lost} CUPTI record(s) were dropped (buffers full): GPU busy times of those windows read low")
    for w in log.windows:
        t = w.trigger
        if t is not None:
            notes.append(f"trigger {t.get('rule')} fired at iteration {t.get('at')}: capture window {t.get('window')}")
    return notes


def live_table(log: LiveLog) -> ViewTable:
    """One row per phase, the busiest (CPU total) first."""
    rows = [{"phase": key, **t} for key, t in totals(log.windows).items()]
    rows.sort(key=lambda r: (-r["cpu_ns"], r["phase"]))
    cols = COLUMNS + CUPTI_COLUMNS if any("kernels" in r for r in rows) else COLUMNS
    return ViewTable("live", _heading(log), cols, rows, _notes(log), page_title="Totals")


@dataclass
class TrainingLines:
    """The plotted phases' mean times per window, worked out only when a page draws them."""

    log: LiveLog
    phases: list[str]  # the busiest first, at most PLOT_MAX
    more: int  # phases in the table but not plotted

    def lines(self) -> list[tuple[str, list[tuple[int, float]], list[tuple[int, float]]]]:
        """(phase, CPU points, GPU points) per plotted phase, from the first process in the file (one line per
        process would zigzag)."""
        main_pid = self.log.windows[0].pid if self.log.windows else None
        windows = [w for w in self.log.windows if w.pid == main_pid]
        return [(p, series(windows, p, "cpu"), series(windows, p, "gpu")) for p in self.phases]


def live_document(log: LiveLog) -> Document:
    """Each phase over training (a figure on a page), then the totals table."""
    t = live_table(log)
    plotted = [r["phase"] for r in t.rows[:PLOT_MAX]]
    over_training = Figure(
        "over_training",
        "Each phase over training",
        "mean time per range in each window of iterations (CPU: perf_counter; GPU: "
        + " / ".join(PLOT_GPU[m] for m in gpu_modes(log.windows) or ["events"])
        + ")",
        TrainingLines(log, plotted, len(t.rows) - len(plotted)),
    )
    notes = list(t.notes)
    if len(log.pids) > 1:
        main_pid = log.windows[0].pid if log.windows else None
        notes.append(f"plots: process {main_pid} (the first in the file)")
    head = PageHead(
        "nvtxsim live", "nvtxsim live timing", [SourcePart(t.title, isolated=False)], [Prose("note", notes)]
    )
    return Document("live", [[over_training, t]], head, data=lambda: _json(log, t), flat=t)


def _json(log: LiveLog, t: ViewTable) -> dict:
    return {
        "source": log.path,
        "windows": len(log.windows),
        "skipped": log.skipped,
        "pids": log.pids,
        "notes": t.notes,
        "phases": {r["phase"]: {k: v for k, v in r.items() if k != "phase"} for r in t.rows},
    }
