"""The live-timing line: one record type (nvtxsim.live_record) written by live timing and read by ``nvtxsim live``,
and the seam behind which live timing measures GPU time (nvtxsim.emit.live.gpu)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import nvtxsim
from nvtxsim.emit import live, window
from nvtxsim.emit.live.gpu import GpuTiming
from nvtxsim.emit.live.session import Session
from nvtxsim.emit.live.sinks import CallbackSink, FileSink
from nvtxsim.live_record import LiveWindow, PhaseTimes

#: Written by hand, key order and spacing included: the format of every live-timing file.
LINE = (
    '{"iterations":[10,19],"measured":5,"sample":2,"pid":77,"time":1700000000.125,'
    '"phases":{"nvtxsim:sim_step":{"count":10,"cpu_ns":1000,"cpu_mean_ns":100,"cpu_p90_ns":180,"gpu_ns":null},'
    '"nvtxsim:\\u00e9 <x>":{"count":1,"cpu_ns":7,"cpu_mean_ns":7,"cpu_p90_ns":7,"gpu_ns":3}},'
    '"trigger":{"rule":"sim_step>1.5x","at":15,"ns":900,"baseline_ns":400,"window":[16,18]},"dropped_windows":2}'
)
WINDOW = LiveWindow(
    iterations=(10, 19),
    measured=5,
    sample=2,
    pid=77,
    time=1700000000.125,
    phases={
        "nvtxsim:sim_step": PhaseTimes(10, 1000, 100, 180, None),
        "nvtxsim:\u00e9 <x>": PhaseTimes(1, 7, 7, 7, 3),
    },
    trigger={"rule": "sim_step>1.5x", "at": 15, "ns": 900, "baseline_ns": 400, "window": [16, 18]},
    dropped_windows=2,
)


def test_to_json_is_the_line_byte_for_byte():
    assert WINDOW.to_json() == LINE


def test_from_json_reads_the_line_back():
    assert LiveWindow.from_json(LINE) == WINDOW
    assert LiveWindow.from_json(WINDOW.to_json()) == WINDOW


def test_trigger_and_drops_appear_only_when_there_is_something_to_say():
    quiet = LiveWindow(iterations=None, measured=0, sample=1, pid=1, time=2.5, phases={})
    assert quiet.to_json() == '{"iterations":null,"measured":0,"sample":1,"pid":1,"time":2.5,"phases":{}}'
    assert LiveWindow.from_json(quiet.to_json()) == quiet


@pytest.mark.parametrize(
    "line",
    ['{"iterations": [20, 2', "[1, 2]", '"text"', '{"phases": [1]}', '{"iterations": [1, 2]}', "", "{" * 100_000],
)
def test_a_line_that_is_no_window_is_none(line):
    assert LiveWindow.from_json(line) is None


def test_every_number_is_checked():
    raw = {
        "iterations": [1, True],
        "measured": -1,
        "sample": "2",
        "pid": float("nan"),
        "time": float("inf"),
        "dropped_windows": [1],
        "trigger": "fired",
        "phases": {
            "a": {"count": 2.9, "cpu_ns": None, "cpu_mean_ns": False, "cpu_p90_ns": 1e400, "gpu_ns": 10**30},
            "b": "not a phase",
        },
    }
    w = LiveWindow.from_json(json.dumps(raw))
    # gpu_ns beyond 2**62 is ignored, as a 400-digit integer is
    assert w == LiveWindow(None, None, None, None, None, {"a": PhaseTimes(2, None, None, None, None)}, None, None)


@pytest.mark.parametrize(
    "times, p90",
    [([5], 5), ([3, 1], 3), (list(range(1, 11)), 9), (list(range(20, 0, -1)), 18), (list(range(1, 12)), 10)],
)
def test_phase_summary_nearest_rank_p90(times, p90):
    """p90 by the nearest rank: the ceil(0.9 n)-th smallest."""
    p = PhaseTimes.of(times, None)
    assert (p.count, p.cpu_ns, p.cpu_mean_ns, p.cpu_p90_ns) == (len(times), sum(times), sum(times) // len(times), p90)


def test_what_live_timing_writes_is_the_record_type(tmp_path):
    """Each line of a live session parses as a LiveWindow and writes back to the same bytes."""
    out = tmp_path / "live.jsonl"
    window.configure(None)
    live.start(out, every=3, trigger="sim_step>100x")
    try:
        for _ in range(7):
            nvtxsim.step()
            with nvtxsim.phase("sim_step"):
                pass
    finally:
        live.stop()
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        w = LiveWindow.from_json(line)
        assert w is not None and w.to_json() == line and w.phases["nvtxsim:sim_step"].count >= 1


class _Ticks(GpuTiming):
    """A second GPU timing behind the seam: marks are integers, each range takes (closing - opening) * 1000 ns."""

    what = "ticks"
    clock = 0
    released: list = []

    @classmethod
    def attach(cls) -> _Ticks:
        return cls()

    def begin(self) -> int:
        _Ticks.clock += 1
        return _Ticks.clock

    def end(self, opening: int) -> int:
        _Ticks.clock += 1
        return _Ticks.clock

    def resolve(self, spans):
        totals: dict[str, int] = {}
        for name, a, b in spans:
            totals[name] = totals.get(name, 0) + (b - a) * 1000
        return totals

    def release(self, spans):
        _Ticks.released.extend(spans)


def test_a_second_gpu_timing_is_one_class():
    """The session asks its GpuTiming for marks and the writer for totals: nested phases get their own spans."""
    records: list[dict] = []
    window.configure(None)
    s = Session(every=2, sample=1, trigger=None, sinks=[CallbackSink(records.append)], gpu=_Ticks)
    s.activate()
    try:
        outer, inner = nvtxsim.phase("iteration"), nvtxsim.phase("sim_step")
        for _ in range(4):
            nvtxsim.step()
            with outer:
                with inner:
                    pass
    finally:
        assert s.deactivate()
        s.finish(5.0)
    assert [r["iterations"] for r in records] == [[0, 1], [2, 3]]
    for r in records:  # marks: outer 1, inner 2, inner 3, outer 4 -> inner 1 tick, outer 3 ticks per iteration
        assert r["phases"]["nvtxsim:sim_step"]["gpu_ns"] == 2 * 1000
        assert r["phases"]["nvtxsim:iteration"]["gpu_ns"] == 2 * 3000


def test_a_dropped_window_releases_its_gpu_marks(tmp_path):
    """A window the writer cannot take gives its marks back to the GPU timing (pooled events are not lost)."""
    window.configure(None)
    _Ticks.released = []
    s = Session(every=1, sample=1, trigger=None, sinks=[FileSink(str(tmp_path / "x.jsonl"), append=False)], gpu=_Ticks)
    s.activate()
    try:
        s.writer.submit = lambda window, wait=0.0: False  # type: ignore[method-assign]  # the queue is always full
        for _ in range(3):
            nvtxsim.step()
            with nvtxsim.phase("sim_step"):
                pass
        assert s.dropped == 2 and len(_Ticks.released) == 2
    finally:
        s.deactivate()
        del s.writer.submit
        s.finish(5.0)
    last = LiveWindow.from_json((tmp_path / "x.jsonl").read_text().splitlines()[-1])
    assert last is not None and last.dropped_windows == 2


def _nearest_rank_p90(times) -> int:
    """numpy's own nearest-rank percentile (inverted CDF): the test's independent truth."""
    return int(np.percentile(np.asarray(times), 90, method="inverted_cdf"))


@pytest.mark.parametrize("seed", range(20))
def test_phase_summary_agrees_with_numpy(seed):
    rng = np.random.default_rng(seed)
    times = rng.integers(0, 10**9, size=int(rng.integers(1, 200))).tolist()
    p = PhaseTimes.of(times, None)
    assert p.cpu_p90_ns == _nearest_rank_p90(times)
    assert (p.count, p.cpu_ns, p.cpu_mean_ns) == (len(times), sum(times), int(np.sum(times)) // len(times))


def test_live_session_writes_numpy_statistics_of_known_durations(monkeypatch):
    """End to end through the session and the writer, the clock scripted: each window's count, total, mean
    and p90 are numpy's of the durations the ranges were given."""
    from nvtxsim.emit.live import session as live_session

    durations = [[(7 * i * i + 3 * w) % 1000 + 1 for i in range(10)] for w in range(3)]
    flat = [d for window_durations in durations for d in window_durations]
    clock = iter(np.cumsum([x for d in flat for x in (1_000, d)]).tolist())
    monkeypatch.setattr(live_session, "_now", lambda: next(clock))
    records: list[dict] = []
    window.configure(None)
    s = Session(every=10, sample=1, trigger=None, sinks=[CallbackSink(records.append)], gpu=None)
    s.activate()
    try:
        for _ in range(30):
            nvtxsim.step()
            with nvtxsim.phase("sim_step"):
                pass
    finally:
        assert s.deactivate()
        s.finish(5.0)
    assert [r["iterations"] for r in records] == [[0, 9], [10, 19], [20, 29]]
    for r, want in zip(records, durations):
        got = r["phases"]["nvtxsim:sim_step"]
        assert got == {
            "count": 10,
            "cpu_ns": int(np.sum(want)),
            "cpu_mean_ns": int(np.sum(want)) // 10,
            "cpu_p90_ns": _nearest_rank_p90(want),
            "gpu_ns": None,
        }
