"""``nvtxsim live FILE``: the file is data another process (or anything) wrote (issue 13, round 3).

Not a regular file (a FIFO nobody writes, ``/dev/zero``, a directory) is one error line without
opening it — never a hang or all memory; a line longer than any window is skipped without being held;
numbers that are NaN, infinite, negative, text or booleans never reach the arithmetic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORMATS = ["table", "json", "csv", "markdown", "html"]


def live(*args: str, stdin=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", "live", *args], capture_output=True, env=env, timeout=60, stdin=stdin
    )


def one_line_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("nvtxsim: error: ") and err.count("\n") == 1, (proc.returncode, err)
    assert needle in err, err


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "dev_stdin", "directory"])
def test_not_a_regular_file_is_one_line_without_reading(tmp_path, kind):
    path = {
        "fifo": tmp_path / "w.jsonl",
        "dev_zero": Path("/dev/zero"),
        "dev_stdin": Path("/dev/stdin"),
        "directory": tmp_path,
    }[kind]
    if kind == "fifo":
        os.mkfifo(path)
    with open("/dev/zero", "rb") as zero:
        proc = live(str(path), stdin=zero)
    one_line_error(proc, "is a directory" if kind == "directory" else "not a regular file")


def test_a_line_longer_than_any_window_is_skipped(tmp_path, monkeypatch):
    from nvtxsim.analysis import live as live_mod

    monkeypatch.setattr(live_mod, "MAX_LINE", 1000)
    window = {
        "iterations": [0, 9],
        "measured": 10,
        "sample": 1,
        "pid": 1,
        "time": 1.0,
        "phases": {
            "nvtxsim:step": {"count": 10, "cpu_ns": 1000, "cpu_mean_ns": 100, "cpu_p90_ns": 150, "gpu_ns": None}
        },
    }
    path = tmp_path / "w.jsonl"
    path.write_text("x" * 5000 + "\n" + json.dumps(window) + "\n" + "y" * 2500)
    log = live_mod.load(path)
    assert len(log.windows) == 1 and log.skipped == 2
    assert live_mod.totals(log.windows)["nvtxsim:step"]["cpu_ns"] == 1000


WEIRD = [float("nan"), float("inf"), -float("inf"), -5, "12", True, None, [1], {"a": 1}, 1e308, 10**30]


@pytest.mark.parametrize("fmt", FORMATS)
def test_weird_numbers_render_in_every_format(tmp_path, fmt):
    lines = []
    for i, v in enumerate(WEIRD):
        rec = {
            "iterations": [v, v],
            "measured": v,
            "sample": v,
            "pid": v,
            "time": v,
            "dropped_windows": v,
            "phases": {
                f"nvtxsim:p{i % 3}": {k: v for k in ("count", "cpu_ns", "cpu_mean_ns", "cpu_p90_ns", "gpu_ns")},
                "nvtxsim:ok": {"count": 2, "cpu_ns": 10, "cpu_mean_ns": 5, "cpu_p90_ns": 6, "gpu_ns": 4},
            },
        }
        lines.append(json.dumps(rec))  # NaN/Infinity as Python writes them
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(lines) + "\n")
    proc = live(str(path), "-f", fmt)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    if fmt == "json":
        doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
        assert doc["phases"]["nvtxsim:ok"]["cpu_ns"] == 10 * len(WEIRD)
        assert all(isinstance(v, int) and v >= 0 for p in doc["phases"].values() for v in (p["count"], p["cpu_ns"]))


LOOP = "import nvtxsim\nfor i in range(300):\n    with nvtxsim.phase('iteration'):\n        pass\n    nvtxsim.step()\nprint('done')\n"


@pytest.mark.parametrize("target", ["fifo", "escape"])
def test_live_file_never_stops_the_program(tmp_path, target):
    """NVTXSIM_LIVE at a FIFO nobody reads blocked the program in open() forever: refused with one
    line, the program runs on; file names in the line are shown escaped."""
    path = tmp_path / "w.fifo"
    if target == "fifo":
        os.mkfifo(path)
    else:
        path = tmp_path / "missing" / "w\x1b[2J\u200b.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NVTXSIM_LIVE": str(path)}
    proc = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stdout.decode().strip() == "done", proc.stderr
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "live timing turned off" in err, err
    assert "\x1b" not in err and "\u200b" not in err


def test_live_file_a_fifo_with_a_reader_is_written(tmp_path):
    """A FIFO someone reads (process substitution: NVTXSIM_LIVE=>(jq .)) gets the windows."""
    path = tmp_path / "w.fifo"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there before the program opens it
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO), "NVTXSIM_LIVE": str(path), "NVTXSIM_LIVE_EVERY": "100"}
        proc = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, env=env, timeout=60)
        assert proc.returncode == 0 and proc.stdout.decode().strip() == "done" and not proc.stderr, proc.stderr
        data = b""
        while chunk := os.read(reader, 65536):
            data += chunk
    finally:
        os.close(reader)
    assert [json.loads(line)["phases"] for line in data.decode().splitlines()], data[:200]


HUGE = int("9" * 400)


@pytest.mark.parametrize("field", ["count", "cpu_ns", "cpu_mean_ns", "cpu_p90_ns", "gpu_ns", "measured", "time", "pid"])
@pytest.mark.parametrize("value", [HUGE, -HUGE, 2**63, (1 << 62) + 1, 1e300])
def test_numbers_too_large_for_any_sum_are_ignored(tmp_path, field, value):
    """A valid line holding a 400-digit integer (or one past 2^62) is read, that number left out: never exit 3."""
    from nvtxsim.live_record import LiveWindow

    phase = {"count": 2, "cpu_ns": 4000, "cpu_mean_ns": 2000, "cpu_p90_ns": 3000, "gpu_ns": 1000}
    rec = {"iterations": [0, 9], "measured": 10, "sample": 1, "pid": 1, "time": 1.0, "phases": {"nvtxsim:a": phase}}
    target = phase if field in phase else rec
    target[field] = value
    line = json.dumps(rec)
    w = LiveWindow.from_json(line)
    assert w is not None
    got = getattr(w.phases["nvtxsim:a"], field) if field in phase else getattr(w, field)
    assert got is None
    (tmp_path / "w.jsonl").write_text(line + "\n")
    proc = live(str(tmp_path / "w.jsonl"), "--format", "json")
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    if field == "count":
        assert "nvtxsim:a" not in doc["phases"] or doc["phases"]["nvtxsim:a"]["count"] in (0, None)
    elif field == "cpu_ns":
        assert doc["phases"]["nvtxsim:a"]["count"] == 2 and doc["phases"]["nvtxsim:a"]["cpu_ns"] in (0, None)
