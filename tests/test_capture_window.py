"""Capture windows: parsing A:B and the edges nvtxsim.step() opens and closes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import nvtxsim
from nvtxsim.emit import window
from nvtxsim.errors import NvtxsimError

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "text,start,stop",
    [("5:10", 5, 10), (" 0:1 ", 0, 1), ("7:", 7, None), (":3", 0, 3)],
)
def test_parse(text, start, stop):
    w = window.parse_iterations(text)
    assert (w.start, w.stop) == (start, stop)
    assert window.parse_iterations(str(w)) == w


@pytest.mark.parametrize("text", ["5", "a:b", "10:5", "3:3", "-1:4", "", "1:2:3"])
def test_parse_rejects(text):
    with pytest.raises(NvtxsimError, match="iterations"):
        window.parse_iterations(text)


def test_describe():
    assert window.Window(10, 20).describe() == "iterations 10..19 (10 iterations)"
    assert "to the end" in window.Window(3).describe()


@pytest.fixture
def edges(monkeypatch):
    """Replace the NVTX start/end with a recorder: (event, iteration) tuples."""
    log: list[tuple[str, int]] = []

    def start():
        log.append(("open", window.iteration()))
        return lambda: log.append(("close", window.iteration()))

    monkeypatch.setattr(window, "_start_nvtx", start)
    yield log
    window.configure(None)


def test_step_counts_and_opens_the_window_at_a_and_closes_it_at_b(edges):
    window.configure("5:10")
    seen = [nvtxsim.step() for _ in range(15)]
    assert seen == list(range(15))
    assert edges == [("open", 5), ("close", 10)]


def test_open_ended_window_closes_at_exit(edges):
    window.configure("2:")
    for _ in range(4):
        nvtxsim.step()
    assert edges == [("open", 2)]
    window._close()  # what the atexit hook does
    assert edges == [("open", 2), ("close", 3)]


def test_without_window_step_only_counts(edges):
    window.configure(None)
    assert [nvtxsim.step() for _ in range(3)] == [0, 1, 2]
    assert edges == [] and window.current() is None


def test_reconfigure_restarts_the_count(edges):
    window.configure("0:1")
    nvtxsim.step()
    window.configure("1:2")
    assert window.iteration() == -1
    for _ in range(3):
        nvtxsim.step()
    # the open window is closed by configure(), then the new one runs from a fresh count
    assert edges == [("open", 0), ("close", 0), ("open", 1), ("close", 2)]


def test_no_profiler_attached_opens_nothing():
    # No NVTX_INJECTION64_PATH in the test process: the window has nothing to trigger.
    assert window._start_nvtx() is None


def test_bad_environment_variable_warns_and_is_ignored(tmp_path):
    env = {**os.environ, "NVTXSIM_ITERATIONS": "ten:twenty", "PYTHONPATH": str(REPO)}
    env.pop("NVTX_INJECTION64_PATH", None)
    code = "import nvtxsim; from nvtxsim.emit import window; print(window.current(), nvtxsim.step())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert out.stdout.split() == ["None", "0"]
    assert "NVTXSIM_ITERATIONS='ten:twenty' ignored" in out.stderr


def test_environment_variable_sets_the_window():
    env = {**os.environ, "NVTXSIM_ITERATIONS": "3:4", "NVTXSIM_WINDOW_API": "nvtx", "PYTHONPATH": str(REPO)}
    code = "from nvtxsim.emit import window; print(window.current())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "3:4", out.stderr
