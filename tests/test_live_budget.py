"""CUPTI's cost budget (issue 25): CPU times on every measured iteration, GPU times on a random share of them, sized
so that GPU timing's estimated cost stays within NVTXSIM_LIVE_GPU_BUDGET percent of wall time."""

from __future__ import annotations

import time

import pytest
from test_live_cupti import fake_cupti  # noqa: F401  (the fixture)

import nvtxsim
from nvtxsim.analysis.live import totals
from nvtxsim.emit import live
from nvtxsim.emit.live import budget as budget_mod
from nvtxsim.live_record import LiveWindow

MS = 1_000_000


def _simulate(cycle_ns, cost_ns, share=0.02, cycles=200, seed=1, block=budget_mod.DEFAULT_BLOCK):
    """A run whose steps last ``cycle_ns`` in turn, each step with CUPTI on (timed or not) costing ``cost_ns``
    (charged at once): per position in the cycle, how often it was GPU-timed; the cost over the wall time; the
    budget; the states in order."""
    b = budget_mod.GpuBudget(share, seed, block)
    now, spent = 0, 0
    hits = [0] * len(cycle_ns)
    states = []
    for _ in range(cycles):
        for pos, dur in enumerate(cycle_ns):
            state = b.decide(now, spent)
            states.append(state)
            hits[pos] += state == budget_mod.TIMED
            on = state != budget_mod.OFF
            now += dur + (cost_ns if on else 0)
            spent += cost_ns if on else 0
    return hits, spent / now, b, states


def test_the_share_of_gpu_timed_steps_keeps_the_cost_within_the_budget():
    # 10 ms steps, 2 ms of GPU timing cost each step CUPTI is on (the full mode would cost 20 %): CUPTI on for
    # 1 step in 10, in blocks of 1 lead + 4 timed + 1 trail, so 4 in 60 timed
    hits, cost, b, states = _simulate([10 * MS], 2 * MS, cycles=6000)
    on = sum(s != budget_mod.OFF for s in states) / 6000
    assert 0.07 < on < 0.13 and 0.045 < sum(hits) / 6000 < 0.09
    assert cost <= 0.025 and b.rate == pytest.approx(0.1, rel=0.02)
    # cheap timing: every step timed but the 30 (300 ms) waiting for the probe's records, and no switching after
    hits, cost, _, states = _simulate([10 * MS], 10_000, cycles=500)
    lost = 300 * MS // (10 * MS) + sum(budget_mod.DEFAULT_BLOCK) - budget_mod.DEFAULT_BLOCK[1]  # the wait, lead, trail
    assert 500 - lost - 2 <= sum(hits) <= 500 - lost and cost < 0.001
    assert all(s == budget_mod.TIMED for s in states[-400:])


def test_blocks_have_a_lead_and_a_trail_and_start_at_random():
    """CUPTI switched next to a timed iteration perturbs it (the H200's CUDA-graph physics step read 10-15x): every
    timed run is preceded and followed by iterations with CUPTI on and no markers, and the gaps between blocks vary
    (a throttle that cut and resumed at a threshold alternated on/off at every step)."""
    _hits, _cost, _b, states = _simulate([10 * MS], 2 * MS, cycles=3000, block=(1, 3, 2))
    s = states[100:]  # after the probe
    runs, gaps, i = [], [], 0
    while i < len(s):
        j = i
        while j < len(s) and (s[j] == budget_mod.OFF) == (s[i] == budget_mod.OFF):
            j += 1
        (gaps if s[i] == budget_mod.OFF else runs).append(s[i:j])
        i = j
    full = runs[1:-1]
    assert len(full) > 20
    T, Q = budget_mod.TIMED, budget_mod.QUIET
    block = [Q, T, T, T, Q, Q]
    assert all(len(r) % 6 == 0 and r == block * (len(r) // 6) for r in full), full[:5]  # blocks back to back
    assert len({len(g) for g in gaps}) > 5  # geometric gaps, not a period


def test_a_rollout_and_its_update_are_both_measured_no_aliasing():
    """24 env steps and one long update per learning iteration: a fixed period would hit the same positions."""
    cycle = [8 * MS] * 24 + [60 * MS]
    hits, cost, _, _ = _simulate(cycle, 1 * MS, cycles=400)
    assert all(h > 0 for h in hits), hits
    assert hits[24] >= 5  # the update
    assert cost <= 0.025


def test_over_the_budget_blocks_start_less_often_not_at_a_threshold():
    """An estimate that lags (cost charged late) must slow the blocks down smoothly: never a strict on/off
    alternation, and the cost stays near the budget."""
    b = budget_mod.GpuBudget(0.02, 5, (0, 1, 0))
    now, spent, states = 0, 0, []
    for i in range(4000):
        state = b.decide(now, spent)
        states.append(state)
        now += 10 * MS + (3 * MS if state else 0)
        if i % 50 == 0:  # an estimate that jumps: the records arrive in bursts
            spent = now * 0.02 * 1.8
    tail = states[500:]
    alternating = sum(1 for a, c in zip(tail, tail[1:]) if a != c)
    assert alternating < 0.6 * len(tail)  # a period-2 pattern would switch at every step


def test_a_long_first_step_does_not_unlock_a_burst():
    """Kernels compiled in the first step (100 s) must not let the next steps all be timed."""
    b = budget_mod.GpuBudget(0.02, 3)
    now, spent = 0, 0
    ons = []
    for i in range(300):
        state = b.decide(now, spent)
        ons.append(state == budget_mod.TIMED)
        on = state != budget_mod.OFF
        now += (100_000 * MS if i == 0 else 10 * MS) + (2 * MS if on else 0)
        spent += 2 * MS if on else 0
    assert ons[0] and sum(ons[budget_mod.DEFAULT_BLOCK[1] + 1 : 100]) < 25  # about 1 in 15, not all of them


def test_not_allowed_is_never_on_and_the_environment_is_read(monkeypatch, capsys):
    b = budget_mod.GpuBudget(0.02, 0)
    assert not any(b.decide(i * MS, 0, allowed=False) for i in range(20))
    monkeypatch.setenv(budget_mod.ENV_BLOCK, "0,2,1")
    assert budget_mod.block_from_env() == (0, 2, 1)
    monkeypatch.setenv(budget_mod.ENV_BLOCK, "2,0,1")
    assert budget_mod.block_from_env() == budget_mod.DEFAULT_BLOCK
    assert "NVTXSIM_LIVE_GPU_BLOCK='2,0,1' ignored" in capsys.readouterr().err
    monkeypatch.setenv(budget_mod.ENV_BUDGET, "off")
    assert budget_mod.budget_from_env() is None
    monkeypatch.setenv(budget_mod.ENV_BUDGET, "5%")
    assert budget_mod.budget_from_env() == pytest.approx(0.05)
    monkeypatch.setenv(budget_mod.ENV_BUDGET, "lots")
    assert budget_mod.budget_from_env() == pytest.approx(0.02)
    assert "NVTXSIM_LIVE_GPU_BUDGET='lots' ignored" in capsys.readouterr().err
    with pytest.raises(ValueError):
        live.start(None, gpu="cupti", gpu_budget=-1)


def test_under_a_budget_gpu_numbers_cover_the_timed_iterations_and_cpu_every_one(fake_cupti, monkeypatch, capsys):  # noqa: F811
    """Fake CUPTI at 0.1 ms per recorded op and 1 ms steps: about 1 iteration in 5 is GPU-timed. Every range's busy
    time is 100 ns, so a mean that divided by all ranges (not the timed ones) would read low. An outer phase spans
    10 steps: one that opened GPU-timed and closes after CUPTI was switched off must not be waited for."""
    monkeypatch.setenv(budget_mod.ENV_OP_NS, "100000")
    monkeypatch.setattr(budget_mod, "SETTLE_NS", 0)
    fc = fake_cupti()
    records: list[dict] = []
    live.start(None, every=50, callback=records.append, gpu="cupti", gpu_budget=2)
    outer = nvtxsim.phase("episode")
    ph = nvtxsim.phase("sim_step")
    n = 300
    for i in range(n):
        if i % 10 == 0:
            if i:
                outer.__exit__(None, None, None)
            outer.__enter__()
        nvtxsim.step()
        with ph:
            fc.launch(i * 1000, i * 1000 + 100)
        time.sleep(0.001)
    outer.__exit__(None, None, None)
    live.stop()
    windows = [LiveWindow.from_dict(r) for r in records]
    assert all(w is not None for w in windows)
    measured = sum(w.measured or 0 for w in windows)
    timed = sum(w.gpu_iterations for w in windows)
    assert measured >= n - 1 and 2 < timed < measured * 0.6, (timed, measured)
    for w in windows:
        p = w.phases["nvtxsim:sim_step"]
        assert p.count == w.measured or p.count == w.measured + 1  # CPU: every iteration
        if p.gpu_ns is not None:
            assert p.gpu_ranges == w.gpu_iterations and p.gpu_ns == 100 * p.gpu_ranges and p.kernels == p.gpu_ranges
    t = totals(windows)["nvtxsim:sim_step"]
    assert t["gpu_mean_ns"] == 100 and t["busy_per_iteration_ns"] == 100 and t["launches_per_iteration"] == 1.0
    assert t["count"] >= n - 1 and t["gpu_count"] == timed
    kernel_switches = [on for on, kind in fc.enable_calls if kind == 10]
    assert kernel_switches.count(False) >= 3 and kernel_switches.count(True) >= 3
    err = capsys.readouterr().err
    assert "did not return the phase markers" not in err and "could not" not in err, err
