"""Live phase timing (issue 16): JSONL lines during the run, without a profiler; never breaks the program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import nvtxsim
from nvtxsim.emit import live, ranges, window
from nvtxsim.emit.live import cuda_events, sinks
from nvtxsim.emit.live import session as live_session

ROOT = Path(__file__).resolve().parents[1]

LOOP = textwrap.dedent(
    """
    import sys, threading, nvtxsim
    ph = nvtxsim.phase("sim_step")

    @nvtxsim.phase("policy")
    def policy():
        return sum(range(100))

    def side():
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):
            with nvtxsim.phase("side_work"):
                sum(range(50))

    t = threading.Thread(target=side)
    t.start()
    for i in range(int(sys.argv[1])):
        nvtxsim.step()
        with nvtxsim.phase("iteration"):
            policy()
            for _ in range(2):
                with ph:
                    sum(range(200))
    t.join()
    print("done")
    """
)


def _script(tmp_path: Path, body: str = LOOP) -> Path:
    p = tmp_path / "loop.py"
    p.write_text(body)
    return p


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, env=e, cwd=tmp_path)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_schema(rec: dict) -> None:
    assert set(rec) >= {"iterations", "phases", "measured", "sample", "pid"}
    for key, p in rec["phases"].items():
        domain, _, name = key.partition(":")
        assert domain == "nvtxsim" and name
        assert set(p) == {"count", "cpu_ns", "cpu_mean_ns", "cpu_p90_ns", "gpu_ns"}
        assert p["count"] >= 1 and p["cpu_ns"] >= p["cpu_mean_ns"] >= 0
        assert p["cpu_mean_ns"] == p["cpu_ns"] // p["count"]
        assert p["gpu_ns"] is None  # CPU-only program


@pytest.mark.parametrize("via_run", [False, True])
def test_env_var_cpu_program(tmp_path, via_run):
    script = _script(tmp_path)
    out = tmp_path / "live.jsonl"
    args = ["-m", "nvtxsim", "run", str(script), "25"] if via_run else [str(script), "25"]
    r = _run(args, tmp_path, NVTXSIM_LIVE=str(out), NVTXSIM_LIVE_EVERY="10")
    assert r.returncode == 0, r.stderr
    assert "done" in r.stdout and r.stderr == ""
    recs = _lines(out)
    assert [rec["iterations"] for rec in recs] == [[0, 9], [10, 19], [20, 24]]
    assert [rec["measured"] for rec in recs] == [10, 10, 5]
    for rec in recs:
        _check_schema(rec)
    phases = recs[1]["phases"]
    assert phases["nvtxsim:iteration"]["count"] == 10
    assert phases["nvtxsim:sim_step"]["count"] == 20
    assert phases["nvtxsim:policy"]["count"] == 10  # the decorated function, decorated while no profiler is attached


def test_threads_are_measured(tmp_path):
    out = tmp_path / "live.jsonl"
    r = _run([str(_script(tmp_path)), "5", "30"], tmp_path, NVTXSIM_LIVE=str(out))
    assert r.returncode == 0, r.stderr
    recs = _lines(out)
    assert sum(rec["phases"].get("nvtxsim:side_work", {}).get("count", 0) for rec in recs) == 30
    assert sum(rec["phases"]["nvtxsim:sim_step"]["count"] for rec in recs) == 10


def test_sampling_measures_every_kth_iteration(tmp_path):
    out = tmp_path / "live.jsonl"
    r = _run(
        [str(_script(tmp_path)), "20"],
        tmp_path,
        NVTXSIM_LIVE=str(out),
        NVTXSIM_LIVE_EVERY="10",
        NVTXSIM_LIVE_SAMPLE="4",
    )
    assert r.returncode == 0, r.stderr
    recs = _lines(out)
    assert [rec["iterations"] for rec in recs] == [[0, 9], [10, 19]]
    assert [rec["measured"] for rec in recs] == [3, 2]  # 0, 4, 8 | 12, 16
    assert [rec["phases"]["nvtxsim:iteration"]["count"] for rec in recs] == [3, 2]
    assert all(rec["sample"] == 4 for rec in recs)


def test_unwritable_path_one_line_then_off(tmp_path):
    out = tmp_path / "missing" / "live.jsonl"
    r = _run([str(_script(tmp_path)), "30"], tmp_path, NVTXSIM_LIVE=str(out), NVTXSIM_LIVE_EVERY="5")
    assert r.returncode == 0 and "done" in r.stdout
    lines = [line for line in r.stderr.splitlines() if line]
    assert len(lines) == 1 and "cannot write" in lines[0] and "turned off" in lines[0]


def test_full_disk_one_line_then_off(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    r = _run([str(_script(tmp_path)), "30"], tmp_path, NVTXSIM_LIVE="/dev/full", NVTXSIM_LIVE_EVERY="5")
    assert r.returncode == 0 and "done" in r.stdout
    lines = [line for line in r.stderr.splitlines() if line]
    assert len(lines) == 1 and "No space left" in lines[0]


def test_bad_settings_do_not_break(tmp_path):
    out = tmp_path / "live.jsonl"
    r = _run(
        [str(_script(tmp_path)), "3"],
        tmp_path,
        NVTXSIM_LIVE=str(out),
        NVTXSIM_LIVE_EVERY="zero",
        NVTXSIM_LIVE_TRIGGER="nonsense",
    )
    assert r.returncode == 0 and "done" in r.stdout
    assert "NVTXSIM_LIVE_EVERY" in r.stderr and "not started" in r.stderr
    assert not out.exists()


FORK = textwrap.dedent(
    """
    import os, sys, nvtxsim
    for i in range(12):
        nvtxsim.step()
        with nvtxsim.phase("iteration"):
            if i == 6:
                pid = os.fork()
                if pid == 0:
                    for _ in range(5):
                        nvtxsim.step()
                        with nvtxsim.phase("child_work"):
                            pass
                    print("child live", nvtxsim.live.is_on(), flush=True)
                    os._exit(0)
                os.waitpid(pid, 0)
    print("parent done", flush=True)
    """
)


def test_fork_child_turns_live_off(tmp_path):
    out = tmp_path / "live.jsonl"
    r = _run([str(_script(tmp_path, FORK))], tmp_path, NVTXSIM_LIVE=str(out), NVTXSIM_LIVE_EVERY="4")
    assert r.returncode == 0, r.stderr
    assert "child live False" in r.stdout and "parent done" in r.stdout
    recs = _lines(out)
    assert {rec["pid"] for rec in recs} == {recs[0]["pid"]}
    assert sum(rec["phases"]["nvtxsim:iteration"]["count"] for rec in recs) == 12
    assert all("nvtxsim:child_work" not in rec["phases"] for rec in recs)


# --------------------------------------------------------------------------- in process


@pytest.fixture
def clean_live():
    yield
    live.stop()
    assert not ranges.is_measuring() or ranges.is_recording()


def test_start_stop_writer_and_callback(tmp_path, clean_live):
    scalars: list[tuple] = []
    records: list[dict] = []

    class Writer:
        def add_scalar(self, tag, value, step):
            scalars.append((tag, value, step))

    out = tmp_path / "api.jsonl"
    window.configure(None)
    live.start(out, every=3, writer=Writer(), callback=records.append)
    ph = nvtxsim.phase("sim_step")
    for _ in range(7):
        nvtxsim.step()
        with ph:
            pass
    live.stop()
    recs = _lines(out)
    assert recs == records
    assert [rec["iterations"] for rec in recs] == [[0, 2], [3, 5], [6, 6]]
    tags = {t for t, _, _ in scalars}
    assert tags == {"nvtxsim/sim_step/cpu_ms"}  # no GPU: no gpu_ms
    assert [s for _, _, s in scalars] == [2, 5, 6]
    # off again: phases are back on the idle (or recording) methods
    assert type(ph).__enter__ is not live_session._live_enter


def test_generator_and_coroutine_phases_are_timed(tmp_path, clean_live):
    """One live count per resumption of a @phase generator or coroutine, as one range per resumption."""
    import asyncio

    out = tmp_path / "gen.jsonl"
    window.configure(None)
    live.start(out, every=10)

    @nvtxsim.phase("rollout_gen")
    def gen(n):
        yield from range(n)

    @nvtxsim.phase("async_step")
    async def coro():
        await asyncio.sleep(0)
        return 1

    nvtxsim.step()
    assert list(gen(3)) == [0, 1, 2]
    assert asyncio.run(coro()) == 1
    live.stop()
    phases = _lines(out)[0]["phases"]
    assert phases["nvtxsim:rollout_gen"]["count"] == 4  # three yields and the final resumption
    assert phases["nvtxsim:async_step"]["count"] == 2  # before and after the await


def test_failing_callback_is_dropped_once(tmp_path, clean_live, capsys):
    def bad(record):
        raise RuntimeError("logger down")

    window.configure(None)
    live.start(None, every=1, callback=bad)
    for _ in range(4):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            pass
    live.stop()
    err = capsys.readouterr().err
    assert err.count("callback failed") == 1


def test_trigger_rule_parsing():
    t = live.Trigger("sim_step>1.5x", 7)
    assert (t.name, t.factor, t.run, t.iterations) == ("sim_step", 1.5, 1, 7)
    assert live.Trigger("camera_readout > 2").factor == 2.0
    assert (live.Trigger("nvtxsim:sim_step>2x for 3").name, live.Trigger("sim_step>2x for 3").run) == ("sim_step", 3)
    for bad in (
        "sim_step",
        ">2x",
        "sim_step>x",
        "sim_step>0x",
        "sim_step>2x for",
        "sim_step>2x for 0",
        "sim_step>2x for y",
    ):
        with pytest.raises(ValueError):
            live.Trigger(bad)


def test_trigger_arms_a_capture_window(tmp_path, clean_live, capsys):
    window.configure(None)
    live.start(None, every=1000, trigger="sim_step>20x for 3", trigger_iterations=4)
    for i in range(40):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            sum(range(20000 if i >= 30 else 100))
    w = window.current()
    live.stop()
    window.configure(None)
    assert w is not None and w.stop - w.start == 4 and 30 < w.start <= 40
    assert "live trigger sim_step>20x for 3" in capsys.readouterr().err


def _feed(trigger: live.Trigger, times: list[int]) -> list[int]:
    """Drive ``trigger`` as on_step does, one iteration per time; the iterations at which it fired."""
    fired = []
    for i, ns in enumerate(times):
        window._count = i + 1  # the step() of the next iteration observes iteration i
        if trigger.observe(ns, i) is not None:
            fired.append(i)
    return fired


@pytest.fixture
def no_window():
    window.configure(None)
    yield
    window.configure(None)


def test_trigger_one_slow_iteration_fires_after_ten(no_window, capsys):
    # the checker's report: one iteration 4x slower in a short loop never fired (needed 25 iterations and 3 slow of 5)
    t = live.Trigger("sim_step>1.5x", 5)
    assert _feed(t, [1000] * 12 + [4000] + [1000] * 10) == [12]
    w = window.current()
    assert (w.start, w.stop) == (13, 18) and t.fired["window"] == [13, 17] and t.fired["baseline_ns"] == 1000
    assert "4.00x the baseline at iteration 12; capture window: iterations 13..17" in capsys.readouterr().err


def test_trigger_baseline_needs_ten_iterations(no_window):
    assert _feed(live.Trigger("sim_step>1.5x"), [1000] * 9 + [9000] + [1000] * 5) == []  # the 10th is baseline
    assert _feed(live.Trigger("sim_step>1.5x"), [1000] * 10 + [9000]) == [10]
    assert _feed(live.Trigger("sim_step>1.5x"), [1000] * 10 + [1500]) == []  # over means strictly over


def test_trigger_for_n_needs_a_run_and_fires_once(no_window):
    t = live.Trigger("sim_step>2x for 3", 4)
    times = [1000] * 20 + [5000, 5000, 1000] + [5000] * 3 + [1000] * 5 + [9000] * 5
    assert _feed(t, times) == [25]  # the interrupted pair does not count; the second slowdown is ignored
    assert window.current().start == 26


def test_trigger_baseline_is_rolling_and_robust(no_window):
    t = live.Trigger("sim_step>1.5x")
    # a slow start (compilation) and a few spikes under the factor do not move the median
    assert _feed(t, [50_000, 40_000] + [1000] * 150 + [1400, 1000] * 20) == []
    assert t.baseline.maxlen == 100 and len(t.baseline) == 100 and _feed(t, [1600]) == [0]


def test_trigger_window_refused_while_another_is_set(no_window):
    window.configure("100:110")
    t = live.Trigger("sim_step>1.5x")
    assert _feed(t, [1000] * 10 + [5000]) == [] and t.fired is None


def test_disable_pauses_live_timing(tmp_path, clean_live):
    records: list[dict] = []
    window.configure(None)
    live.start(None, every=100, callback=records.append)
    nvtxsim.disable()
    try:
        for _ in range(3):
            with nvtxsim.phase("warmup"):
                pass
    finally:
        nvtxsim.enable()
    for _ in range(2):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            pass
    live.stop()
    assert set(records[0]["phases"]) == {"nvtxsim:sim_step"}


# --------------------------------------------------------------------------- nvtxsim live FILE


def _write_log(path: Path) -> Path:
    hostile = "<script>alert(1)</script>|*x*=cmd"
    windows = [
        {
            "iterations": [0, 9],
            "measured": 10,
            "sample": 1,
            "pid": 7,
            "time": 1.0,
            "phases": {
                "nvtxsim:sim_step": {
                    "count": 20,
                    "cpu_ns": 2_000_000,
                    "cpu_mean_ns": 100_000,
                    "cpu_p90_ns": 120_000,
                    "gpu_ns": 1_600_000,
                },
                f"nvtxsim:{hostile}": {
                    "count": 10,
                    "cpu_ns": 50_000,
                    "cpu_mean_ns": 5_000,
                    "cpu_p90_ns": 6_000,
                    "gpu_ns": None,
                },
            },
        },
        {
            "iterations": [10, 19],
            "measured": 10,
            "sample": 1,
            "pid": 7,
            "time": 2.0,
            "trigger": {"rule": "sim_step>1.5x", "at": 15, "window": [16, 25]},
            "phases": {
                "nvtxsim:sim_step": {
                    "count": 20,
                    "cpu_ns": 4_000_000,
                    "cpu_mean_ns": 200_000,
                    "cpu_p90_ns": 250_000,
                    "gpu_ns": 3_000_000,
                }
            },
        },
    ]
    path.write_text("".join(json.dumps(w) + "\n" for w in windows) + '{"iterations": [20, 2')  # last line cut off
    return path


def _nvtxsim(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _run(["-m", "nvtxsim", *args], cwd)


def test_live_command_table_and_machine_formats(tmp_path):
    log = _write_log(tmp_path / "run.jsonl")
    r = _nvtxsim("live", str(log), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "nvtxsim:sim_step" in r.stdout and "40" in r.stdout and "2 windows" in r.stdout
    assert "1 line(s)" in r.stdout and "trigger sim_step>1.5x" in r.stdout
    doc = json.loads(_nvtxsim("live", str(log), "--format", "json", cwd=tmp_path).stdout)
    ss = doc["phases"]["nvtxsim:sim_step"]
    assert (ss["count"], ss["cpu_ns"], ss["gpu_ns"], ss["cpu_mean_ns"], ss["per_iteration_ns"]) == (
        40,
        6_000_000,
        4_600_000,
        150_000,
        300_000,
    )
    assert doc["skipped"] == 1 and doc["pids"] == [7]
    csv = _nvtxsim("live", str(log), "--format", "csv", cwd=tmp_path).stdout.splitlines()
    assert csv[0].startswith("phase,count,cpu_ns") and len(csv) == 3
    md = _nvtxsim("live", str(log), "--format", "markdown", cwd=tmp_path).stdout
    assert "<script>" not in md and "&lt;script&gt;" in md and "sim\\_step" in md


def test_live_command_html_is_self_contained_and_escaped(tmp_path):
    log = _write_log(tmp_path / "run.jsonl")
    out = tmp_path / "live.html"
    r = _nvtxsim("live", str(log), "--format", "html", "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.count("<svg") == 2 and "<script" not in page and "&lt;script&gt;" in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert _nvtxsim("live", str(log), "--format", "html", "-o", str(out), cwd=tmp_path).returncode == 2  # exists


def test_live_command_missing_file(tmp_path):
    r = _nvtxsim("live", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr  # as report says it


def test_live_command_reads_what_live_wrote(tmp_path):
    out = tmp_path / "live.jsonl"
    assert _run([str(_script(tmp_path)), "12"], tmp_path, NVTXSIM_LIVE=str(out), NVTXSIM_LIVE_EVERY="5").returncode == 0
    # NVTXSIM_LIVE still set for the command itself: it must not truncate the file it reads
    r = _run(["-m", "nvtxsim", "live", str(out), "--format", "json"], tmp_path, NVTXSIM_LIVE=str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["phases"]["nvtxsim:sim_step"]["count"] == 24
    assert len(out.read_text().splitlines()) == 3


# --------------------------------------------------------------------------- nvtxsim profile --trigger

SLOWDOWN = textwrap.dedent(
    """
    import time, nvtxsim
    for i in range(80):
        nvtxsim.step()
        with nvtxsim.phase("iteration"):
            with nvtxsim.phase("sim_step"):
                time.sleep(0.006 if 50 <= i < 70 else 0.001)
    print("done")
    """
)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--trigger", "sim_step"], "PHASE>FACTORx"),
        (["--trigger", "sim_step>1.5x", "--iterations", "1:3"], "pick one"),
        (["--trigger", "sim_step>1.5x", "--trigger-iterations", "0"], "--trigger-iterations"),
    ],
)
def test_profile_trigger_bad_options_fail_before_running(tmp_path, argv, message):
    r = _nvtxsim("profile", *argv, "-o", str(tmp_path / "x"), "--", sys.executable, "-c", "print('ran')", cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "ran" not in r.stdout


def test_profile_trigger_records_the_slow_iterations(tmp_path):
    from tests.nsys_util import NSYS

    if NSYS is None:
        pytest.skip("nsys not installed")
    script = _script(tmp_path, SLOWDOWN)
    r = _nvtxsim(
        "profile",
        "--trigger",
        "sim_step>2x",
        "--trigger-iterations",
        "5",
        "--trace",
        "nvtx",
        "--format",
        "json",
        "--report",
        "-",
        "-o",
        str(tmp_path / "trig"),
        "--",
        sys.executable,
        str(script),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "live trigger sim_step>2x" in r.stderr
    doc = json.loads(r.stdout[r.stdout.index("{") :])
    counts = {p["name"]: p["instances"] for p in doc["phases"]}
    assert counts["iteration"] == 5 and counts["sim_step"] == 5


# --------------------------------------------------------------------------- the GPU path, with a stand-in for torch


class _FakeEvent:
    clock = 0
    created = 0  # reset by the test

    def __init__(self, enable_timing=False):
        assert enable_timing
        _FakeEvent.created += 1
        self.t = None

    def record(self, stream=None):
        _FakeEvent.clock += 1000  # 1 µs of GPU time per record
        self.t = _FakeEvent.clock

    def query(self):
        return True

    def elapsed_time(self, end):
        return (end.t - self.t) / 1e6  # ms


class _FakeCuda:
    Event = _FakeEvent
    capturing = False

    @staticmethod
    def is_initialized():
        return True

    @classmethod
    def is_current_stream_capturing(cls):
        return cls.capturing


class _FakeTorch:
    cuda = _FakeCuda


class _FakeStream:
    def __init__(self, stream_id=7, device_index=0, device_type=1):
        self.stream_id, self.device_index, self.device_type = stream_id, device_index, device_type


class _FakeCudaWithStreams(_FakeCuda):
    Stream = _FakeStream

    @staticmethod
    def current_stream():
        return _FakeStream()


class _FakeC:
    """torch._C's functions that live timing calls directly when they exist."""

    records: list = []

    @staticmethod
    def _cuda_getDevice():
        return 0

    @staticmethod
    def _cuda_getCurrentStream(device):
        return (7, device, 1)

    @staticmethod
    def _cuda_isCurrentStreamCapturing():
        return _FakeCuda.capturing

    class _CudaEventBase:
        @staticmethod
        def record(event, stream):
            _FakeC.records.append(stream.stream_id)
            event.record(stream)


class _FakeTorchC:
    cuda = _FakeCudaWithStreams
    _C = _FakeC


@pytest.mark.parametrize("fake", [_FakeTorch, _FakeTorchC], ids=["public-api", "c-functions"])
def test_gpu_events_paired_pooled_and_skipped_while_capturing(monkeypatch, clean_live, fake):
    monkeypatch.setitem(sys.modules, "torch", fake)
    _FakeC.records.clear()
    cuda_events.POOL.clear()  # events of an earlier test
    _FakeEvent.created = 0
    records: list[dict] = []
    window.configure(None)
    live.start(None, every=2, callback=records.append)
    outer, inner = nvtxsim.phase("iteration"), nvtxsim.phase("sim_step")
    created = []
    for i in range(6):
        nvtxsim.step()
        if i == 2:  # the first window went to the writer: wait until its events are back in the pool
            for _ in range(1000):
                if records:
                    break
                time.sleep(0.01)
            created.append(_FakeEvent.created)
        _FakeCuda.capturing = i == 5  # a CUDA graph captured in the last iteration: no events there
        with outer:
            with inner:
                pass
    _FakeCuda.capturing = False
    live.stop()
    assert [r["iterations"] for r in records] == [[0, 1], [2, 3], [4, 5]]
    first = records[0]["phases"]
    # events: outer-enter, inner-enter, inner-exit, outer-exit -> inner 1 µs, outer 3 µs per iteration
    assert first["nvtxsim:sim_step"]["gpu_ns"] == 2 * 1000 and first["nvtxsim:iteration"]["gpu_ns"] == 2 * 3000
    last = records[2]["phases"]
    assert last["nvtxsim:sim_step"]["count"] == 2 and last["nvtxsim:sim_step"]["gpu_ns"] == 1000  # iteration 5 left out
    assert created == [8] and 8 <= _FakeEvent.created <= 12  # resolved events are reused (20 without the pool)
    assert len(_FakeC.records) == (20 if fake is _FakeTorchC else 0) and set(_FakeC.records) <= {7}


def test_off_leaves_the_fast_path_as_it_was(tmp_path, clean_live):
    """Started and stopped: the phase class has its C-level no-op methods again (no profiler here)."""
    assert not ranges.is_recording()
    before = (ranges.phase.__dict__["__enter__"], ranges.phase.__dict__["__exit__"])
    window.configure(None)
    live.start(None, every=2, sample=3)
    for _ in range(5):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            pass
    live.stop()
    assert (ranges.phase.__dict__["__enter__"], ranges.phase.__dict__["__exit__"]) == before
    assert before[0] is ranges._IDLE_ENTER and not ranges.is_measuring() and window.on_step is None


SPAWNS = textwrap.dedent(
    """
    import subprocess, sys, nvtxsim
    for i in range(6):
        nvtxsim.step()
        with nvtxsim.phase("iteration"):
            if i == 1:  # a worker started with exec inherits NVTXSIM_LIVE: it appends, never truncates
                subprocess.run([sys.executable, "-c", "import nvtxsim\\nfor _ in range(3):\\n    nvtxsim.step()\\n"
                                "    with nvtxsim.phase('worker'): pass"], check=True)
    """
)


def test_exec_children_append_to_the_same_file(tmp_path):
    out = tmp_path / "live.jsonl"
    stale = {"iterations": [0, 9], "measured": 10, "sample": 1, "pid": 1, "phases": {"nvtxsim:old": {"count": 1}}}
    out.write_text(json.dumps(stale) + "\n")  # a live file of an earlier run
    r = _run([str(_script(tmp_path, SPAWNS))], tmp_path, NVTXSIM_LIVE=str(out), NVTXSIM_LIVE_EVERY="100")
    assert r.returncode == 0, r.stderr
    recs = _lines(out)  # the earlier run's line is gone (emptied when the parent started)
    by_pid = {rec["pid"]: rec for rec in recs}
    assert len(recs) == 2 and len(by_pid) == 2
    assert sorted(next(iter(rec["phases"])) for rec in recs) == ["nvtxsim:iteration", "nvtxsim:worker"]


# --------------------------------------------------------------------------- zero-edit Isaac Lab script


def test_nvtxsim_run_isaaclab_script_writes_live_lines(tmp_path):
    """``NVTXSIM_LIVE=FILE python -m nvtxsim run train.py``: env steps are the iterations, hooks are the phases."""
    sys.path.insert(0, str(ROOT / "tests" / "isaaclab_support"))
    try:
        import deps
    finally:
        sys.path.pop(0)
    if deps.missing_reason():
        pytest.skip(deps.missing_reason())
    out = tmp_path / "live.jsonl"
    proc = deps.run(
        "3.0.0",
        [
            "-m",
            "nvtxsim",
            "run",
            ROOT / "tests" / "isaaclab_support" / "train_light.py",
            "--steps",
            "4",
            "--iterations",
            "2",
        ],
        extra_env={"NVTXSIM_LIVE": str(out), "NVTXSIM_LIVE_EVERY": "3"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = _lines(out)
    assert [rec["iterations"] for rec in recs] == [[0, 2], [3, 5], [6, 7]]  # 8 env steps
    assert sum(rec["phases"]["nvtxsim:iteration"]["count"] for rec in recs) == 8
    assert {"nvtxsim:sim_step", "nvtxsim:policy"} <= {k for rec in recs for k in rec["phases"]}


def test_gpu_off_records_no_events(monkeypatch, clean_live):
    monkeypatch.setitem(sys.modules, "torch", _FakeTorch)
    _FakeEvent.created = 0
    cuda_events.POOL.clear()
    records: list[dict] = []
    window.configure(None)
    live.start(None, every=2, callback=records.append, gpu=False)
    for _ in range(3):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            pass
    live.stop()
    assert _FakeEvent.created == 0 and all(r["phases"]["nvtxsim:sim_step"]["gpu_ns"] is None for r in records)


def test_trigger_window_opens_at_the_next_step(no_window, clean_live, monkeypatch):
    """Through step(): the slow iteration k is seen at step k+1, and that same step opens the window."""
    clock = [0]
    cost = {"fast": 1000, "slow": 4000}

    def now() -> int:
        return clock[0]

    monkeypatch.setattr(live_session, "_now", now)
    opened: list[int] = []
    monkeypatch.setattr(window, "_start_nvtx", lambda: opened.append(window.iteration()) or (lambda: opened.append(-1)))
    live.start(None, every=1000, trigger="sim_step>1.5x", trigger_iterations=3)
    for i in range(20):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            clock[0] += cost["slow" if i == 12 else "fast"]
    live.stop()
    assert opened == [13, -1]  # opened at iteration 13's step, closed at 16's


def test_stop_waits_for_a_full_queue_and_keeps_the_drop_count(tmp_path, clean_live):
    """A writer kept from running (busy threads) filled the queue: stop() used to drop the last window, and the
    count of dropped windows with it, silently."""
    import threading

    release = threading.Event()
    out = tmp_path / "live.jsonl"
    window.configure(None)
    live.start(out, every=1, callback=lambda rec: release.wait(10))
    for _ in range(80):
        nvtxsim.step()
        with nvtxsim.phase("sim_step"):
            pass
    threading.Timer(1.0, release.set).start()  # after stop() began: its last window must wait, not be dropped
    live.stop(timeout=10)
    recs = _lines(out)
    assert recs[-1]["iterations"] == [79, 79]
    assert len(recs) + sum(r.get("dropped_windows", 0) for r in recs) == 80


def test_late_ranges_of_other_threads_are_counted(tmp_path, clean_live):
    """Ranges ending on other threads while step() swaps the window land in a window, never lost."""
    import threading

    records: list[dict] = []
    live.start(None, every=1, callback=records.append)

    def worker():
        for _ in range(5000):
            with nvtxsim.phase("side"):
                pass

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        nvtxsim.step()
    live.stop(timeout=30)
    total = sum(r["phases"].get("nvtxsim:side", {}).get("count", 0) for r in records)
    dropped = sum(r.get("dropped_windows", 0) for r in records)
    assert total == 20000 or dropped


MP_CHILDREN = textwrap.dedent(
    """
    import sys, multiprocessing as mp, nvtxsim

    def child(k):
        for i in range(12):
            nvtxsim.step()
            with nvtxsim.phase("child_work"):
                pass

    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        ps = [ctx.Process(target=child, args=(k,)) for k in range(2)]
        for p in ps:
            p.start()
        for p in ps:
            p.join()
    """
)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_multiprocessing_children_write_their_last_window(tmp_path, method):
    """forkserver children leave through os._exit (no atexit): their last partial window was lost."""
    out = tmp_path / "live.jsonl"
    r = _run([str(_script(tmp_path, MP_CHILDREN)), method], tmp_path, NVTXSIM_LIVE=str(out), NVTXSIM_LIVE_EVERY="5")
    assert r.returncode == 0, r.stderr
    recs = _lines(out)
    assert sum(rec["phases"]["nvtxsim:child_work"]["count"] for rec in recs) == 24
    assert len({rec["pid"] for rec in recs}) == 2


def test_a_line_cut_by_a_full_disk_is_taken_back(tmp_path, monkeypatch):
    path = tmp_path / "live.jsonl"
    f = sinks.open_append(str(path), truncate=True)
    sinks.write_line(f, '{"a":1}\n')
    real_write = os.write
    monkeypatch.setattr(sinks.os, "write", lambda fd, data: real_write(fd, data[:5]))  # ENOSPC after 5 bytes
    with pytest.raises(OSError, match="No space left"):
        sinks.write_line(f, '{"b":2222222}\n')
    monkeypatch.undo()
    f.close()
    assert path.read_text() == '{"a":1}\n'


def test_long_lines_are_one_write(tmp_path, monkeypatch):
    """Lines over the 8 KiB buffer went out in pieces: other processes' lines could land in between."""
    path = tmp_path / "live.jsonl"
    f = sinks.open_append(str(path), truncate=True)
    calls = []
    real_write = os.write
    monkeypatch.setattr(sinks.os, "write", lambda fd, data: calls.append(len(data)) or real_write(fd, data))
    line = json.dumps({"phases": {f"p{i}": i for i in range(3000)}}) + "\n"
    sinks.write_line(f, line)
    monkeypatch.undo()
    f.close()
    assert calls == [len(line.encode())] and path.read_text() == line


def test_live_html_stays_small_for_long_runs(tmp_path):
    from nvtxsim.analysis.live import load
    from nvtxsim.reporting.live import live_document
    from nvtxsim.reporting.renderers import render
    from nvtxsim.reporting.renderers.figures import PLOT_POINTS

    log = tmp_path / "long.jsonl"
    with log.open("w") as fh:
        for i in range(5000):
            cpu = 9_000_000 if i == 4321 else 1_000_000
            fh.write(
                json.dumps(
                    {
                        "iterations": [i * 10, i * 10 + 9],
                        "measured": 10,
                        "pid": 1,
                        "phases": {
                            "nvtxsim:sim_step": {
                                "count": 10,
                                "cpu_ns": cpu,
                                "cpu_mean_ns": cpu // 10,
                                "cpu_p90_ns": cpu // 10,
                                "gpu_ns": None,
                            }
                        },
                    }
                )
                + "\n"
            )
    page = render(live_document(load(log)), "html")
    assert page.count("<circle") <= PLOT_POINTS and "900.0 µs" in page  # the spike is kept
    assert "the slowest of 10 windows" in page


def test_live_heading_spans_all_processes(tmp_path):
    from nvtxsim.analysis.live import load
    from nvtxsim.reporting.live import live_document
    from nvtxsim.reporting.renderers import render

    log = tmp_path / "mp.jsonl"

    def rec(pid, a, b):
        x = {"count": 1, "cpu_ns": 10, "cpu_mean_ns": 10, "cpu_p90_ns": 10, "gpu_ns": None}
        return json.dumps(
            {"iterations": [a, b], "measured": b - a + 1, "sample": 2, "pid": pid, "phases": {"nvtxsim:x": x}}
        )

    log.write_text("\n".join([rec(1, 0, 99), rec(2, 0, 49), rec(1, 100, 199), rec(2, 50, 59)]) + "\n")
    head = render(live_document(load(log)), "table", width=200).splitlines()[0]
    assert "iterations 0..199" in head and "(1 in 2)" in head  # was 0..59: the last line's process
