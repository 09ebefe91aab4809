"""What a newcomer reads first: hints that blame the right thing, and the report's opening lines."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

import nvtxsim

DATA = Path(__file__).resolve().parent / "data"
DEMO = DATA / "gpu" / "demo_h200.sqlite.gz"
CPU = DATA / "reliability" / "cpu_loop_2022_4.sqlite.gz"


def _without_cuda_tables(tmp: Path) -> Path:
    """The H200 demo export with its CUDA tables dropped: a GPU machine, captured without -t cuda."""
    out = tmp / "nocuda.sqlite"
    with gzip.open(DEMO, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(out)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'CUPTI_%'")]
    for name in names:
        con.execute(f"DROP TABLE {name}")
    con.commit()
    con.close()
    assert names
    return out


def test_no_cuda_hint_names_the_missing_gpu_or_the_trace_flag(tmp_path):
    no_gpu = nvtxsim.report(CPU)  # captured by nsys 2022.4 on a machine without a GPU
    assert "export has no CUDA trace (the capturing machine reported no GPU): GPU columns are 0" in no_gpu.warnings
    assert not any("-t cuda" in w for w in no_gpu.warnings)
    assert no_gpu.findings is not None and "reported no GPU" in no_gpu.findings.notes[-1]
    gpu_box = nvtxsim.report(_without_cuda_tables(tmp_path))
    assert any("no CUDA trace (capture with nsys -t cuda" in w for w in gpu_box.warnings), gpu_box.warnings


IL3 = DATA / "isaaclab3" / "il3_direct_rsl_rl.sqlite.xz"


def _nsys_median(csv_path: Path, name: str) -> float:
    import csv

    with open(csv_path) as f:
        return next(float(r["Med (ns)"]) for r in csv.DictReader(f) if r["Range"] == name)


def _starts(export_path: Path, name: str) -> list[int]:
    """The starts of one range name, read with SQL from a decompressed copy (not through nvtxsim's reader)."""
    import lzma
    import tempfile

    opener = lzma.open if export_path.suffix == ".xz" else gzip.open
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "x.sqlite"
        with opener(export_path, "rb") as src, open(db, "wb") as dst:
            shutil.copyfileobj(src, dst)
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT e.start FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
            "WHERE COALESCE(e.text, s.value) = ? AND e.end IS NOT NULL ORDER BY e.start",
            (name,),
        ).fetchall()
        con.close()
    return [r[0] for r in rows]


def test_headline_of_an_isaac_lab_training_agrees_with_nsys():
    h = nvtxsim.report(IL3).headline
    assert (h.key, h.iterations) == ("nvtxsim:step", 240)
    assert abs(h.median_ns - _nsys_median(IL3.with_name("il3_direct_rsl_rl_nvtx_sum.csv"), "nvtxsim:step")) <= 1
    starts = _starts(IL3, "step")
    assert len(starts) == 240
    assert abs(h.per_s - 239 * 1e9 / (starts[-1] - starts[0])) < 1e-6
    assert abs(h.env_steps_per_s - 4096 * h.per_s) < 1e-3  # 4096 environments, recorded by nvtxsim
    assert h.biggest == "nvtxsim:policy_update" and h.biggest_self_ns == 2887703294  # no child range: self = total


def test_headline_line_fits_80_columns_and_says_what_it_measured():
    from nvtxsim.reporting.pipeline import render

    text = render(nvtxsim.report(IL3), "table", width=80)
    lines = text.splitlines()
    assert all(len(ln) <= 80 for ln in lines)
    i = next(k for k, ln in enumerate(lines) if ln.startswith("240 iterations (step)"))
    assert i < 5 and lines[i] == "240 iterations (step) · median 8.77 ms · 37.6 it/s (153,869 env-steps/s)"
    assert lines[i + 1] == "most self time: policy_update (43 %)"


def test_headline_of_a_cpu_loop():
    h = nvtxsim.report(CPU).headline
    assert (h.key, h.iterations, h.env_steps_per_s) == ("nvtxsim:iteration", 10, None)
    starts = _starts(CPU, "iteration")
    assert abs(h.per_s - 9 * 1e9 / (starts[-1] - starts[0])) < 1e-6
    assert h.biggest == "nvtxsim:reset"  # 300 ms asleep at the end of the program, nothing nested


def _at80(**options) -> list[str]:
    from nvtxsim.reporting.pipeline import render

    lines = render(nvtxsim.report(IL3, **options), "table", width=80).splitlines()
    assert all(len(ln) <= 80 for ln in lines)
    return lines


def test_tree_at_80_says_the_thread_once_and_keeps_self_share():
    lines = _at80(views="tree", findings=False)
    k = lines.index("Thread: python3 (740) / main (740)")
    assert lines[k + 1].split() == ["Phase", "(nvtxsim)", "N", "CPU", "incl", "CPU", "self", "self", "%"]
    row = next(ln for ln in lines if ln.strip().startswith("policy_update"))
    assert row.split() == ["policy_update", "15", "2.888", "s", "2.888", "s", "100.0", "%"]  # no child range
    assert not any("python3 (74" in ln for ln in lines[k + 1 :])


def test_iterations_at_80_keep_the_share_of_the_iteration():
    lines = _at80(views="iterations", findings=False)
    head = next(ln for ln in lines if ln.startswith("Phase"))
    assert head.split()[-2:] == ["of", "iter"]
    assert next(ln for ln in lines if ln.startswith("step ")).endswith("100.0 %")
    # The steady state by default: sim_step's 1.27 s first call (graph capture) set aside, it is 9.8 % of
    # an iteration; with the warm-up kept, that one call makes it 34.3 %.
    assert next(ln for ln in lines if ln.startswith("sim_step ")).endswith("9.8 %")
    kept = _at80(views="iterations", findings=False, skip_first=0)
    assert next(ln for ln in kept if ln.startswith("sim_step ")).endswith("34.3 %")


def test_findings_block_at_80_keeps_the_evidence():
    """Every finding of the block shows its evidence (the iteration numbers of a warm-up or an outlier)."""

    lines = _at80()
    k = lines.index("high   warm_up in nvtxsim:sim_step: 1.800 s (27 %)")
    assert lines[k + 1] == "       CUDA graph capture, iterations 0, 1, phases: 8, 2 calls up to 958.12 ms"
    assert lines[k + 2].startswith("       → warm up before the capture window")
    kept = _at80(skip_first=0)  # the warm-up kept: its iteration 0 is also an outlier iteration
    k = kept.index("high   outlier_iterations in nvtxsim:iteration: 5.25 ms/it (19 %)")
    # the phase's own numbers (nsys: nvtxsim:iteration max 1.035 s, median 6.42 ms), then the loop's key (step)
    assert kept[k + 1] == "       iterations 0: up to 1.035 s (median 6.42 ms)"
    assert kept[k + 2].startswith("       → look for compilation")


def test_findings_view_at_80_keeps_evidence_and_advice_and_shows_the_findings_once():

    lines = _at80(views="findings")
    assert not any(ln.startswith("Findings (most costly first") for ln in lines)  # the short block: not again
    rows = [ln for ln in lines if ln.startswith(("high ", "medium ", "low "))]
    assert len(rows) == 9
    k = lines.index(rows[0])
    assert rows[0].split()[:3] == ["high", "warm_up", "sim_step"]
    assert lines[k + 1] == "  Evidence: CUDA graph capture, iterations 0, 1, phases: 8, 2 calls up to 958.12"
    assert lines[k + 3].startswith("  Advice: warm up before the capture window")
    kept = _at80(views="findings", skip_first=0)
    rows = [ln for ln in kept if ln.startswith(("high ", "medium ", "low "))]
    k = kept.index(rows[2])
    assert len(rows) == 11 and rows[2].split()[:3] == ["high", "outlier_iterations", "iteration"]
    assert kept[k + 1] == "  Evidence: iterations 0: up to 1.035 s (median 6.42 ms), step up to 1.269 s"
    assert kept[k + 2] == "    (median 8.77 ms)"
    k += 1
    assert kept[k + 2].startswith("  Advice: look for compilation, GC or I/O there")
    assert not any(ln.startswith("left out:") for ln in lines)


def test_report_of_the_output_name_finds_the_export(tmp_path, monkeypatch):
    """``nvtxsim profile -o run`` then ``nvtxsim report run``: the export it wrote, whichever form."""
    monkeypatch.chdir(tmp_path)
    truth = nvtxsim.report(CPU).phases
    shutil.copyfile(CPU, tmp_path / "run.sqlite.gz")
    assert nvtxsim.report("run").source["path"] == "run.sqlite.gz" and nvtxsim.report("run").phases == truth
    with gzip.open(CPU, "rb") as src, open(tmp_path / "run.sqlite", "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert nvtxsim.report("run").source["path"] == "run.sqlite"  # .sqlite first
    with pytest.raises(nvtxsim.errors.NvtxsimError, match=r"other: no such file \(nor other\.sqlite, "):
        nvtxsim.report("other")


def test_report_of_a_live_file_points_to_nvtxsim_live(tmp_path):
    import subprocess
    import sys

    live_file = DATA / "isaaclab3" / "il3_direct_live.live.jsonl"
    r = subprocess.run([sys.executable, "-m", "nvtxsim", "report", str(live_file)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().endswith(f"not an nsys export: nvtxsim live {live_file}")


def _live_file(path: Path, windows: list[tuple[int, int]]) -> Path:
    import json

    with open(path, "w") as f:
        for a, b in windows:
            n = b - a + 1
            phases = {
                "nvtxsim:sim_step": {"count": n, "cpu_ns": n * 1_000_000, "cpu_mean_ns": 1_000_000, "gpu_ns": None}
            }
            f.write(json.dumps({"iterations": [a, b], "measured": n, "sample": 1, "pid": 7, "phases": phases}) + "\n")
    return path


def test_live_page_of_one_window_draws_no_lone_dot(tmp_path):
    import re

    from nvtxsim.cli.main import main

    page = tmp_path / "one.html"
    assert main(["live", str(_live_file(tmp_path / "one.jsonl", [(0, 59)])), "-f", "html", "-o", str(page)]) == 0
    text = page.read_text()
    assert "One window of iterations: nothing to draw over training" in text and "<circle" not in text
    page = tmp_path / "three.html"
    three = _live_file(tmp_path / "three.jsonl", [(0, 9), (10, 10), (11, 11)])  # x: 9, 10, 11
    assert main(["live", str(three), "-f", "html", "-o", str(page)]) == 0
    text = page.read_text()
    ticks = re.findall(r'text-anchor="middle">(\d+)</text>', text)
    assert ticks == ["9", "10", "11"] and text.count("<circle") == 3
