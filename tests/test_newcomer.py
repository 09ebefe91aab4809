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
    rows = {r["phase"]: r for r in nvtxsim.report(IL3, views="iterations").view("iterations").rows}
    share = rows["nvtxsim:sim_step"]["share"]
    assert 0.05 < share < 0.5 and next(ln for ln in lines if ln.startswith("sim_step ")).endswith(
        f"{100 * share:.1f} %"
    )


def test_findings_block_at_80_keeps_the_evidence():
    """Every finding of the block shows its evidence (the iteration numbers of a warm-up or an outlier)."""
    from nvtxsim.reporting.findings import evidence_text

    lines = _at80()
    shown = nvtxsim.report(IL3).findings[:5]
    assert any("iterations 0" in evidence_text(f) for f in shown)  # what the block must not drop
    for f in shown:
        k = next(i for i, ln in enumerate(lines) if ln.startswith(f"{f.severity:<6} {f.kind} in {f.phase}: "))
        first_fact = evidence_text(f).split(", ")[0]
        on_head = first_fact in lines[k]
        assert on_head or lines[k + 1].startswith("       " + first_fact), (f.kind, lines[k : k + 3])
        assert lines[k + 1 + (not on_head)].startswith("       → ")


def test_findings_view_at_80_keeps_evidence_and_advice_and_shows_the_findings_once():
    from nvtxsim.reporting.findings import evidence_text

    lines = _at80(views="findings")
    found = nvtxsim.report(IL3).findings
    assert not any(ln.startswith("Findings (most costly first") for ln in lines)  # the short block: not again
    rows = [k for k, ln in enumerate(lines) if ln.startswith(("high ", "medium ", "low "))]
    assert len(rows) == len(found) > 3
    for k, f in zip(rows, found):
        assert lines[k].split()[:2] == [f.severity, f.kind]
        assert lines[k + 1].startswith("  Evidence: " + evidence_text(f).split(", ")[0])
        advice = next(ln for ln in lines[k + 1 : k + 5] if ln.startswith("  Advice: "))
        assert advice.startswith("  Advice: " + f.advice[:40])
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
