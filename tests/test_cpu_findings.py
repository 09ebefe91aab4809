"""The CPU side of the findings: ``os_wait`` (a phase that waits in the OS), ``cpu_bound`` without a CUDA
trace, and slow iterations that name the OS wait behind them. Synthetic timelines with known waits, and
the real H200 captures whose stalls were planted as ``time.sleep`` (their truth files say where)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from committed import committed
from synth import CudaLoop

from nvtxsim.analysis.findings import analyse
from nvtxsim.analysis.findings.os_calls import ADVICE as OS_ADVICE
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load
from nvtxsim.reporting.findings import evidence_text

GPU_DATA = Path(__file__).parent / "data" / "gpu"
MS = 1_000_000


def _find(tmp_path, build, *, cuda=False, iterations=10, name="loop", **kw):
    b = CudaLoop(cuda=cuda)
    for i in range(iterations):
        b.phase("iteration", lambda i=i: build(b, i))
        b.cpu(10_000)
    p = tmp_path / f"{name}.sqlite"
    b.write(p)
    got = analyse(Selection(load(p)), **kw)
    return got, {(f.phase, f.kind): f for f in got.items}


def _cpu_loop(b, i, *, lock_at=None):
    """A CPU-only training loop: Python work in reward (4 ms) and policy (0.5 ms), a sleep in reset, an fsync in save."""
    b.phase("policy", lambda: (b.cpu(MS // 2), b.os_call("sem_wait", 40 * MS) if i == lock_at else None))
    b.phase("reward", lambda: b.cpu(4 * MS))
    b.phase("reset", lambda: (b.cpu(100_000), b.os_call("clock_nanosleep", 2 * MS)))
    b.phase("save", lambda: (b.cpu(50_000), b.os_call("write", 100_000), b.os_call("fsync", 1 * MS)))


def test_os_waits_are_named_at_their_phase_with_category_calls_and_advice(tmp_path):
    got, by = _find(tmp_path, _cpu_loop)
    sleep = by[("nvtxsim:reset", "os_wait")]
    assert sleep.cost_ns == 10 * 2 * MS and sleep.evidence["os_wait_category"] == "sleep"
    assert sleep.evidence["os_wait_top"] == {"clock_nanosleep": [10, 20 * MS]} and sleep.advice == OS_ADVICE["sleep"]
    io = by[("nvtxsim:save", "os_wait")]
    assert io.cost_ns == 10 * 1_100_000 and io.evidence["os_wait_top"] == {"fsync": [10, 10 * MS], "write": [10, MS]}
    assert io.advice == OS_ADVICE["file"] and "fsync 10×" in evidence_text(io)
    assert ("nvtxsim:reset", "cpu_bound") not in by and ("nvtxsim:save", "cpu_bound") not in by  # asleep, not busy


def test_cpu_bound_without_cuda_is_the_phase_own_cpu_work(tmp_path):
    """reward's 4 ms of Python per iteration is a finding in a capture without a CUDA trace; policy's 0.5 ms is not
    (under a tenth of the loop's time), nor is iteration (its self time is the gaps between phases)."""
    got, by = _find(tmp_path, _cpu_loop)
    reward = by[("nvtxsim:reward", "cpu_bound")]
    assert reward.cost_ns == 10 * (4 * MS + 4_000) and reward.evidence["no_cuda"]  # 4 µs: the range's own edges
    assert "profile --stacks" in reward.advice and "no GPU traced" in evidence_text(reward)
    assert {p for p, k in by if k == "cpu_bound"} == {"nvtxsim:reward"}
    assert any("no CUDA trace" in n and "cpu bound" in n for n in got.notes)


def test_cpu_bound_without_cuda_or_os_trace_is_not_guessed(tmp_path):
    """No OSRT_API: a phase asleep looks like one computing, so no cpu_bound claim, and a note says why."""

    def loop(b, i):
        b.phase("reward", lambda: b.cpu(4 * MS))
        b.phase("reset", lambda: b.cpu(2 * MS))  # a sleep, but nothing traced it

    got, by = _find(tmp_path, loop)
    assert not [k for _, k in by if k in ("cpu_bound", "os_wait")]
    assert [n for n in got.notes if "osrt" in n] == [
        "export has no OS runtime trace (OSRT_API): profile with nsys -t osrt (nvtxsim profile does by default); "
        "os_wait and cpu_bound not looked for (a phase asleep would look busy)"
    ]


def test_a_stall_that_is_a_lock_wait_names_it(tmp_path):
    """Another thread holds the lock policy takes in iteration 6: one phase_stalls finding that names the lock
    wait (category, call, advice), not a second os_wait or outlier_iterations cost for the same 40 ms."""
    got, by = _find(tmp_path, lambda b, i: _cpu_loop(b, i, lock_at=6))
    lock = by[("nvtxsim:policy", "phase_stalls")]
    assert lock.evidence["cause"] == "os_wait" and lock.evidence["os_wait_category"] == "lock"
    assert lock.evidence["iterations"] == [6] and lock.evidence["os_wait_top"] == {"sem_wait": [1, 40 * MS]}
    assert lock.advice == OS_ADVICE["lock"] and "OS lock: sem_wait 1×" in evidence_text(lock)
    assert ("nvtxsim:policy", "os_wait") not in by and not [k for _, k in by if k == "outlier_iterations"]


def test_an_outlier_names_the_os_wait_that_explains_it(tmp_path):
    """A 35 ms sleep in 1 of 20 iterations of a 10 ms phase: no stall (under 5 × the phase's median), under a
    quarter of the phase's time (no os_wait finding), but the iteration's overrun: the outlier says sleep and
    clock_nanosleep, not 'compilation, GC or I/O'."""

    def loop(b, i):
        b.phase("reset", lambda: (b.cpu(10 * MS), b.os_call("clock_nanosleep", 35 * MS) if i == 7 else None))
        b.phase("physics", lambda: b.cpu(20 * MS))

    got, by = _find(tmp_path, loop, iterations=20)
    f = by[("nvtxsim:reset", "outlier_iterations")]
    assert f.evidence["cause"] == "os_wait" and f.evidence["iterations"] == [7]
    assert f.evidence["os_wait_top"] == {"clock_nanosleep": [1, 35 * MS]} and f.advice == OS_ADVICE["sleep"]
    assert "OS sleep: clock_nanosleep 1×" in evidence_text(f)
    assert ("nvtxsim:reset", "os_wait") not in by and ("nvtxsim:reset", "phase_stalls") not in by


def test_an_os_wait_in_every_iteration_is_its_phase_finding(tmp_path):
    """A wait that is part of every iteration (no stall, no outlier) is the os_wait finding, iterations or not."""
    got, by = _find(tmp_path, lambda b, i: _cpu_loop(b, i))
    assert {p for p, k in by if k == "os_wait"} == {"nvtxsim:reset", "nvtxsim:save"}
    assert "slow_iterations" not in by[("nvtxsim:reset", "os_wait")].evidence


def test_os_calls_inside_cuda_calls_are_the_cuda_calls(tmp_path):
    """The driver's ioctl inside cudaMalloc and a poll inside cudaStreamSynchronize are not the program's OS waits."""

    def loop(b, i):
        def alloc():
            s = b.t
            b.call("cudaMalloc_v3020", 3 * MS)
            b.os_call("ioctl", 2 * MS, at=s + 100)
            s = b.t
            b.kernel("k", 4 * MS)
            b.sync()
            b.os_call("poll", 3 * MS, at=s + 10_000)

        b.phase("alloc", alloc)

    got, by = _find(tmp_path, loop, cuda=True)
    assert not [k for _, k in by if k == "os_wait"], by


def test_every_category_advice_fits_the_block():
    assert all(len(a) <= 71 for a in OS_ADVICE.values())


def _truth(name: str) -> dict:
    text = (GPU_DATA / "diagnosis" / f"{name}.truth.txt").read_text()
    return json.loads(text.split("truth:", 1)[1])


def test_h200_sleep_stalls_name_the_os_wait_and_busy_spikes_do_not():
    """diag_lazy_stalls (H200, nsys -t cuda,nvtx,osrt): observation sleeps 30 ms every 25 iterations (its stalls name
    the sleep, clock_nanosleep); reward busy-waits 60 ms in three (Python: stalls with no OS cause, no os_wait)."""
    truth = _truth("diag_lazy_stalls")
    got = analyse(Selection(load(committed(GPU_DATA / "diagnosis" / "diag_lazy_stalls.sqlite.xz"))), skip_first=2)
    by = {(f.phase, f.kind): f for f in got.items}
    stall = by[("nvtxsim:" + truth["periodic_stall"]["phase"], "phase_stalls")]
    assert stall.evidence["iterations"] == truth["periodic_stall"]["iterations"]
    assert stall.evidence["cause"] == "os_wait" and stall.evidence["os_wait_category"] == "sleep"
    n = len(truth["periodic_stall"]["iterations"])
    assert stall.evidence["os_wait_top"]["clock_nanosleep"][0] == n
    ms = truth["periodic_stall"]["ms"]
    assert n * ms * MS <= stall.evidence["os_wait_ns"] <= n * (ms + 5) * MS
    assert ("nvtxsim:" + truth["periodic_stall"]["phase"], "os_wait") not in by  # not counted twice
    spikes = by[("nvtxsim:" + truth["spikes"]["phase"], "phase_stalls")]
    assert spikes.evidence["iterations"] == truth["spikes"]["iterations"] and spikes.evidence.get("cause") != "os_wait"
    assert ("nvtxsim:" + truth["spikes"]["phase"], "os_wait") not in by


def _hot_loop(b, busy_ns, *, gap_ns=0):
    """A CPU-only iteration of 10 ms: ``busy_ns`` of Python in hot, the rest asleep in wait, ``gap_ns`` of the
    iteration's own CPU time between them (the key range's self time)."""
    b.phase("hot", lambda: b.cpu(busy_ns))
    b.cpu(gap_ns)
    b.phase("wait", lambda: b.os_call("clock_nanosleep", 10 * MS - busy_ns - gap_ns))


@pytest.mark.parametrize("busy_ms,found", [(1.15, True), (0.9, False)])
def test_cpu_bound_without_cuda_from_a_tenth_of_the_time_never_the_key_range(tmp_path, busy_ms, found):
    """cpu_work's threshold on both sides (a tenth of the reference: 11.5 % is a finding, 9 % not), and the key
    range's 2 ms of self time (20 % of it, gaps between its phases) is never a cpu_bound finding."""
    busy = int(busy_ms * MS)
    got, by = _find(tmp_path, lambda b, i: _hot_loop(b, busy, gap_ns=2 * MS), name=f"hot{busy_ms}")
    assert {p for p, k in by if k == "cpu_bound"} == ({"nvtxsim:hot"} if found else set())
    if found:
        f = by[("nvtxsim:hot", "cpu_bound")]
        assert f.cost_ns == 10 * (busy + 4_000) == f.evidence["cpu_work_ns"]  # 4 µs: the range's own edges
        assert 0.10 < f.cost_ns / got.reference_ns < 0.125


def test_cpu_bound_without_cuda_or_key_range(tmp_path):
    """No iteration range: the phases at the top are still tested, against the whole capture's time."""
    b = CudaLoop(cuda=False)
    for _ in range(10):
        _hot_loop(b, 4 * MS)
    p = tmp_path / "nokey.sqlite"
    b.write(p)
    got = analyse(Selection(load(p)))
    f = {(f.phase, f.kind): f for f in got.items}[("nvtxsim:hot", "cpu_bound")]
    assert f.cost_ns == 10 * (4 * MS + 4_000)


def test_an_os_wait_names_its_top_three_calls(tmp_path):
    """Four file calls in save: the evidence lists the three longest (calls, total), the cost is all four."""

    def loop(b, i):
        b.phase("work", lambda: b.cpu(20 * MS))
        b.phase(
            "save",
            lambda: (
                b.os_call("openat", MS // 2),
                b.os_call("read", MS),
                b.os_call("write", 2 * MS),
                b.os_call("fsync", 3 * MS),
            ),
        )

    got, by = _find(tmp_path, loop)
    f = by[("nvtxsim:save", "os_wait")]
    assert f.evidence["os_wait_top"] == {"fsync": [10, 30 * MS], "write": [10, 20 * MS], "read": [10, 10 * MS]}
    assert f.cost_ns == f.evidence["os_wait_ns"] == 10 * 6_500_000 and f.evidence["os_wait_categories"] == {
        "file": 10 * 6_500_000
    }


@pytest.mark.parametrize("sleep_us,found", [(2_700, True), (2_300, False)])
def test_os_wait_from_a_quarter_of_the_phase_self_time(tmp_path, sleep_us, found):
    """reset: 7.5 ms of Python and a sleep; 2.7 ms of 10.2 ms (26 %) is its finding, 2.3 of 9.8 (23 %) is not."""

    def loop(b, i):
        b.phase("reset", lambda: (b.cpu(7_500_000), b.os_call("clock_nanosleep", sleep_us * 1_000)))
        b.phase("work", lambda: b.cpu(20 * MS))

    got, by = _find(tmp_path, loop, name=f"q{sleep_us}")
    assert (("nvtxsim:reset", "os_wait") in by) == found
    if found:
        f = by[("nvtxsim:reset", "os_wait")]
        e = f.evidence
        assert f.cost_ns == 10 * sleep_us * 1_000 and e["phase_self_ns"] == 10 * (7_500_000 + sleep_us * 1_000 + 4_500)
        assert e["phase_share"] == round(f.cost_ns / e["phase_self_ns"], 3) and 0.25 < e["phase_share"] < 0.3


@pytest.mark.parametrize(
    "wait_ms,cpu_ns,cause", [(22, 20 * MS, "os_wait"), (21, 21 * MS - 500, "os_wait"), (20, 22 * MS, None)]
)
def test_a_stall_names_its_os_wait_from_half_of_its_excess(tmp_path, wait_ms, cpu_ns, cause):
    """A 42 ms stall of policy in iteration 6: a lock wait of 22 ms (52 % of the excess) is its cause, so is one of
    exactly half (21 ms; the call's 500 ns gap is Python), one of 20 ms (48 %, the rest Python) is not."""

    def loop(b, i):
        stalled = i == 6
        b.phase(
            "policy",
            lambda: (
                b.cpu(MS // 2 + (cpu_ns if stalled else 0)),
                b.os_call("sem_wait", wait_ms * MS) if stalled else None,
            ),
        )
        b.phase("reward", lambda: b.cpu(4 * MS))

    got, by = _find(tmp_path, loop, name=f"half{wait_ms}")
    f = by[("nvtxsim:policy", "phase_stalls")]
    assert f.evidence["iterations"] == [6] and f.evidence.get("cause") == cause
    assert f.cost_ns == cpu_ns + wait_ms * MS + 500  # the excess over the median call
    if cause:
        assert f.evidence["os_wait_ns"] == wait_ms * MS and f.advice == OS_ADVICE["lock"]


def test_a_cuda_export_without_os_trace_has_no_os_wait_note(tmp_path):
    """With CUDA traced, cpu_bound is looked for from the GPU's idle time: no OS trace is no finding's concern."""
    got, by = _find(tmp_path, lambda b, i: b.phase("step", lambda: (b.kernel("k", MS), b.cpu(2 * MS))), cuda=True)
    assert not [n for n in got.notes if "not looked for" in n], got.notes
    assert not [k for _, k in by if k == "os_wait"]


@pytest.mark.parametrize("spike_us,stall", [(1_200, True), (900, False)])
def test_a_stall_is_at_least_a_millisecond_over_the_median(tmp_path, spike_us, stall):
    """A 0.1 ms phase spiking in iteration 4: to 1.2 ms a stall (12x, 1.1 ms over), to 0.9 ms jitter (9x, 0.8 over)."""

    def loop(b, i):
        b.phase("log", lambda: b.cpu(spike_us * 1_000 if i == 4 else 96_000))  # 100 µs with the range's edges
        b.phase("work", lambda: b.cpu(5 * MS))

    got, by = _find(tmp_path, loop, iterations=12, name=f"spike{spike_us}")
    assert (("nvtxsim:log", "phase_stalls") in by) == stall
    if stall:
        f = by[("nvtxsim:log", "phase_stalls")]
        assert f.cost_ns == (spike_us - 96) * 1_000 and f.evidence["median_ns"] == 100_000
