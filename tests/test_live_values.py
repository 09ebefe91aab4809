"""Live timing's aggregation as values: one window's record from what the session measured, and the
totals and series over a file's windows, against numbers worked out by hand (scripts/mutate.py)."""

from __future__ import annotations

from nvtxsim.analysis.live import series, totals
from nvtxsim.emit.live.gpu import GpuTiming, PhaseGpu
from nvtxsim.emit.live.writer import FlushedWindow
from nvtxsim.live_record import LiveWindow, PhaseTimes


class FakeTiming(GpuTiming):
    mode = "cupti"

    @classmethod
    def attach(cls):
        return cls()

    def begin(self):
        return None

    def end(self, opening):
        return None

    def resolve(self, spans):
        return {"sim": 500}

    def resolve_phases(self, spans):
        return {"sim": PhaseGpu(500, kernels=3, copies=1, copy_bytes=64)}

    def release(self, spans):
        return None

    def dropped(self):
        return 2


def _window(gpu, spans, fired=None, dropped=0) -> LiveWindow:
    cpu = {"sim": [10, 30, 20, 40, 50, 60, 70, 80, 90, 100, 110], "idle": [], "reset": [7]}
    return FlushedWindow((3, 13), 11, 1, 42, cpu, spans, gpu, fired, dropped, 0.0, False).summary()


def test_a_window_record_from_its_measured_times_and_gpu_marks():
    w = _window(FakeTiming(), [object()], fired={"rule": "sim>2x"}, dropped=4)
    assert sorted(w.phases) == ["nvtxsim:reset", "nvtxsim:sim"]  # a phase with no range this window: left out
    assert w.phases["nvtxsim:sim"] == PhaseTimes(11, 660, 60, 100, 500, 3, 1, 64)  # p90: the 10th of 11 (nearest rank)
    assert w.phases["nvtxsim:reset"] == PhaseTimes(1, 7, 7, 7, None)  # no GPU mark resolved for it
    assert (w.iterations, w.measured, w.pid) == ((3, 13), 11, 42)
    assert (w.trigger, w.dropped_windows, w.gpu_mode, w.gpu_dropped) == ({"rule": "sim>2x"}, 4, "cupti", 2)


def test_a_window_without_gpu_times_says_so():
    plain = _window(None, [object()])
    assert plain.phases["nvtxsim:sim"].gpu_ns is None and plain.phases["nvtxsim:sim"].kernels is None
    assert (plain.trigger, plain.dropped_windows, plain.gpu_mode, plain.gpu_dropped) == (None, None, None, None)
    no_spans = _window(FakeTiming(), [])  # timing attached, no range measured on the GPU: no mode claimed
    assert no_spans.phases["nvtxsim:sim"].gpu_ns is None and no_spans.gpu_mode is None and no_spans.gpu_dropped == 2


def _lw(iterations, measured, phases) -> LiveWindow:
    return LiveWindow(iterations, measured, 1, 1, 0.0, phases)


WINDOWS = [
    _lw((0, 9), 10, {"nvtxsim:sim": PhaseTimes(2, 100, 50, 200, None), "nvtxsim:reset": PhaseTimes(1, 7, 7, 7, None)}),
    _lw((10, 19), 5, {"nvtxsim:sim": PhaseTimes(4, 400, 100, 150, 80, 2, 1, 10)}),
    _lw(None, 0, {"nvtxsim:sim": PhaseTimes(0, 0, None, None, None)}),
]


def test_totals_over_windows():
    t = totals(WINDOWS)
    sim = t["nvtxsim:sim"]
    assert (sim["count"], sim["cpu_ns"], sim["windows"], sim["gpu_ns"]) == (6, 500, 3, 80)
    assert sim["cpu_p90_max_ns"] == 200  # the largest window p90, whatever the order
    # the GPU mean is over the ranges the GPU numbers cover (4: the first window's 2 had none), not all 6
    assert (sim["cpu_mean_ns"], sim["gpu_mean_ns"], sim["per_iteration_ns"]) == (500 // 6, 80 // 4, 500 // 15)
    assert sim["gpu_count"] == 4
    assert (sim["kernels"], sim["copies"], sim["copy_bytes"], sim["launches"]) == (2, 1, 10, 3)
    assert sim["busy_per_iteration_ns"] == 80 // 5 and sim["launches_per_iteration"] == 0.6  # of the CUPTI window
    reset = t["nvtxsim:reset"]
    assert reset == {
        "count": 1,
        "cpu_ns": 7,
        "gpu_ns": None,
        "gpu_count": 0,  # no range with GPU numbers
        "cpu_p90_max_ns": 7,
        "windows": 1,
        "cpu_mean_ns": 7,
        "gpu_mean_ns": None,
        "per_iteration_ns": 0,  # 7 ns over 15 measured iterations
    }


def test_series_per_window_mean_skips_empty_and_unmeasured():
    assert series(WINDOWS, "nvtxsim:sim") == [(9, 50.0), (19, 100.0)]  # the empty third window left out
    assert series(WINDOWS, "nvtxsim:sim", "gpu") == [(19, 20.0)]  # no GPU time in the first
    assert series(WINDOWS, "nvtxsim:reset") == [(9, 7.0)]
    unstepped = [_lw(None, 1, {"nvtxsim:sim": PhaseTimes(2, 10, 5, 6, None)})]
    assert series(unstepped, "nvtxsim:sim") == [(0, 5.0)]  # no iterations: the window's position


def test_launches_are_the_kernels_when_a_window_counted_no_copies():
    t = totals([_lw((0, 3), 4, {"nvtxsim:sim": PhaseTimes(4, 40, 10, 12, 30, 3, None, None)})])["nvtxsim:sim"]
    assert (t["kernels"], t["copies"], t["launches"], t["launches_per_iteration"]) == (3, 0, 3, 0.8)
