"""Report views in every format, the stable default output, Perfetto traces, the offline HTML page, progress."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from browser import chromium
from nsys_util import needs_nsys, profile_python
from synth import make_export

from nvtxsim.analysis.selection import Selection
from nvtxsim.cli.progress import progress_after
from nvtxsim.export.reader import load
from nvtxsim.reporting.pipeline import render, report
from nvtxsim.reporting.views import VIEWS


def cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI, in-process (fast); output captured like a subprocess's."""
    import contextlib

    from nvtxsim.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


def test_cli_subprocess(synth_path):
    proc = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(synth_path), "--view", "tree"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "Nesting per thread" in proc.stdout and proc.stderr == ""


@pytest.fixture(scope="module")
def synth_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fmt") / "s.sqlite"
    make_export(path, 21, graphs="node", syncs=True, devices=2, extras=True)
    return path


def test_default_output_and_json_schema_unchanged(synth_path):
    """No view options and --no-findings: exactly the classic summary; --view summary gives the same bytes.
    By default the findings come first (table, markdown) or as a top-level key (json); csv is unchanged."""
    for fmt in ("table", "csv", "json", "markdown"):
        classic = render(report(synth_path, findings=False).summary, fmt)  # a bare PhaseSummary: its summary
        assert cli("report", str(synth_path), "-f", fmt, "--no-findings").stdout == classic
        assert cli("report", str(synth_path), "-f", fmt, "--view", "summary", "--no-findings").stdout == classic
        default = cli("report", str(synth_path), "-f", fmt).stdout
        assert default == cli("report", str(synth_path), "-f", fmt, "--view", "summary").stdout
        assert (default == classic) == (fmt == "csv")
    doc = json.loads(cli("report", str(synth_path), "-f", "json", "--no-findings").stdout)
    assert set(doc) == {"source", "phases", "warnings"}
    doc = json.loads(cli("report", str(synth_path), "-f", "json").stdout)
    assert set(doc) == {"source", "phases", "warnings", "findings"}
    lines = cli("report", str(synth_path)).stdout.splitlines()  # the source line, the headline, then the findings
    assert "iterations" in lines[1] and lines[2] == "" and lines[3].startswith("Findings")
    assert {
        "domain",
        "name",
        "instances",
        "cpu_total_ns",
        "cpu_median_ns",
        "cpu_p99_ns",
        "gpu_proj_total_ns",
        "gpu_busy_total_ns",
        "gpu_ops",
    } <= set(doc["phases"][0])


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_every_view_renders(synth_path, fmt):
    proc = cli("report", str(synth_path), "--domain", "all", "--view", "all", "-f", fmt, "--top", "2")
    assert proc.returncode == 0, proc.stderr
    if fmt == "json":
        doc = json.loads(proc.stdout)
        assert set(doc["views"]) == set(VIEWS) and {"source", "phases", "warnings"} <= set(doc)
        assert all(isinstance(v["rows"], list) for v in doc["views"].values())
        assert doc["views"]["kernels"]["rows"] and doc["views"]["syncs"]["rows"] and doc["views"]["tree"]["rows"]
    else:
        for title in (
            "Nesting per thread",
            "Top kernels per phase",
            "Memory copies",
            "synchronizing CUDA calls",
            "Per phase and GPU",
            "Phases per thread",
        ):
            assert title in proc.stdout


def test_csv_takes_one_view(synth_path):
    one = cli("report", str(synth_path), "--domain", "all", "--view", "kernels", "-f", "csv")
    assert one.returncode == 0
    header = one.stdout.splitlines()[0].split(",")
    assert {"phase", "kernel", "count", "total_ns"} <= set(header)
    two = cli("report", str(synth_path), "--view", "kernels,tree", "-f", "csv")
    assert two.returncode == 2 and two.stderr.startswith("nvtxsim: error: csv holds one table") and two.stdout == ""


def test_match_filter_and_bad_options(synth_path):
    proc = cli(
        "report",
        str(synth_path),
        "--domain",
        "all",
        "--match",
        "^nvtxsim:(sim_step|render)$",
        "-f",
        "json",
        "--view",
        "summary,kernels",
    )
    doc = json.loads(proc.stdout)
    assert {p["name"] for p in doc["phases"]} == {"sim_step", "render"}
    assert {r["phase"] for r in doc["views"]["kernels"]["rows"]} <= {"nvtxsim:sim_step", "nvtxsim:render"}
    for args, needle in (
        (["--match", "("], "not a valid regular expression"),
        (["--view", "nope"], "unknown view 'nope'"),
        (["--top", "0"], "--top: must be at least 1"),
        (["--skip-first", "-1"], "--skip-first: must be at least 0"),
        (["--by", "no_such_range"], "no range of that name"),
    ):
        bad = cli("report", str(synth_path), *args)
        assert bad.returncode == 2 and needle in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)


def test_perfetto_trace(synth_path, tmp_path):
    out = tmp_path / "t.json"
    proc = cli("report", str(synth_path), "--domain", "all", "-f", "perfetto", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(out.read_text())
    ev = trace["traceEvents"]
    ex = load(synth_path)
    r = ex.ranges
    cpu = [e for e in ev if e["ph"] == "X" and e["pid"] < 1 << 30]
    gpu = [e for e in ev if e["ph"] == "X" and e["pid"] >= 1 << 30]
    assert len(cpu) == int((r.style == 0).sum())
    assert sum(e["ph"] == "b" for e in ev) == sum(e["ph"] == "e" for e in ev) == int((r.style == 1).sum())
    assert len(gpu) == len(ex.gpu)
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in cpu + gpu)
    assert {e["tid"] for e in gpu} == set(np.unique(ex.gpu.stream_id).tolist())
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert any(n.startswith("main (") for n in names.values()) and any(n.startswith("stream ") for n in names.values())
    assert any("launched_in" in e["args"] for e in gpu)
    # Timestamps are µs from the first event, with the ns kept as decimals.
    first = min(e["ts"] for e in cpu + gpu)
    assert first == 0


def _page(path: Path, *extra: str) -> str:
    out = path.with_suffix(".html")
    proc = cli("report", str(path), "-f", "html", "-o", str(out), "--force", *extra)
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def _check_self_contained(page: str, phases: list[str]) -> dict:
    assert not re.search(r"https?://", page), re.search(r".{40}https?://.{40}", page)
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert all(v.startswith("#") for v in links), "the page must not load anything"
    for ph in phases:
        assert ph in page
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_html_is_self_contained(synth_path):
    page = _page(synth_path, "--domain", "all")
    data = _check_self_contained(page, ["nvtxsim:sim_step", "Top kernels", "Nesting and self time"])
    assert data["timeline"]["lanes"] and any(lane["kind"] == "gpu" for lane in data["timeline"]["lanes"])
    assert {p["label"] for p in data["phases"]} >= {"nvtxsim:iteration", "nvtxsim:render"}


LOOP = """
import time, threading
import nvtxsim

def side():
    for _ in range(5):
        with nvtxsim.phase("side_work"):
            time.sleep(0.002)

t = threading.Thread(target=side, name="side")
t.start()
for i in range(10):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("sim_step"):
            time.sleep(0.001)
        with nvtxsim.phase("render"):
            time.sleep(0.0005 + (0.004 if i == 6 else 0))
t.join()
"""


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory):
    from nsys_util import NSYS

    if NSYS is None:
        pytest.skip("nsys not installed")
    return profile_python(tmp_path_factory.mktemp("html"), LOOP, name="loop")


@needs_nsys
@pytest.mark.nsys
def test_html_from_a_real_capture(cpu_capture):
    page = _page(cpu_capture)
    data = _check_self_contained(page, ["nvtxsim:iteration", "nvtxsim:render", "nvtxsim:side_work"])
    index = data["iterations"]["index"]  # the steady state: a slow first iteration is set aside as warm-up
    assert index == list(range(10 - len(index), 10)) and len(index) >= 9
    cpu = dict(zip(index, data["iterations"]["series"][0]["cpu"]))
    shown = int(data["timeline"]["title"].split("around ")[1].split(",")[0])
    median = sorted(cpu.values())[len(cpu) // 2] if len(cpu) % 2 else None
    assert shown != 6 and (median is None or cpu[shown] == median)  # a median iteration, not the slow render in 6
    assert {lane["kind"] for lane in data["timeline"]["lanes"]} == {"cpu"}


@pytest.mark.slow
def test_html_runs_in_headless_chromium_without_js_errors(synth_path, tmp_path):
    browser = chromium()  # fails, not skips, in CI
    page = synth_path.with_suffix(".html")
    _page(synth_path, "--domain", "all")
    profile = tempfile.mkdtemp(prefix="nvtxsim-chromium-")
    try:
        proc = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1400,1000",
                "--dump-dom",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert "Uncaught" not in proc.stderr, [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    dom = proc.stdout
    for div in ("bars", "lines", "timeline"):
        assert re.search(rf'<div id="{div}"[^>]*><svg', dom), div  # the script drew every plot
    assert dom.count("<rect") > 50


def _shown_within(buf: io.StringIO, text: str, limit_s: float = 30.0) -> None:
    """Poll until the progress thread has drawn ``text``; the limit only guards against a hang."""
    deadline = time.monotonic() + limit_s
    while text not in buf.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_progress_only_on_terminals():
    buf = io.StringIO()  # not a terminal: never any output
    with progress_after("loading x", delay=0, stream=buf):
        time.sleep(0.05)
    assert buf.getvalue() == ""
    buf = io.StringIO()
    with progress_after("loading x", delay=0, stream=buf, enabled=True) as p:
        _shown_within(buf, "loading x")  # waits for the display thread, not a fixed sleep (a loaded machine is slow)
        p.stage("analysing")
        _shown_within(buf, "analysing")
    assert "loading x" in buf.getvalue() and "analysing" in buf.getvalue()
    buf = io.StringIO()
    with progress_after("quick", delay=30, stream=buf, enabled=True):
        pass  # finished before the delay: nothing shown
    assert buf.getvalue() == ""


def test_views_work_without_cuda(tmp_path):
    """CPU-only exports: every view renders; GPU views say there is no CUDA trace."""
    import sqlite3

    path = tmp_path / "cpu.sqlite"
    make_export(path, 2)
    con = sqlite3.connect(path)
    for t in (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ):
        con.execute(f"DROP TABLE {t}")
    con.commit()
    con.close()
    proc = cli("report", str(path), "--view", "all")
    assert proc.returncode == 0, proc.stderr
    assert "export has no CUDA trace" in proc.stdout
    assert Selection(load(path)).ops.start.size == 0
    assert _page(path)
