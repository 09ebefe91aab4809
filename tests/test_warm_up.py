"""Warm-up apart from the steady state, and a phase's own stalls, on real H200 exports whose truth is known.

``tests/data/gpu/diagnosis/``: one sim-shaped loop recorded with planted first-call costs (lazy CUDA
module loading, ``torch.compile``, CUDA graphs) and stalls; each ``.truth.txt`` says what was planted
(scripts/gpu/diagnosis_workload.py). ``tests/data/isaaclab3/``: real Isaac Lab 3.0 trainings, whose
first calls capture CUDA graphs and load kernels.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from committed import committed
from nsys_util import needs_nsys, profile_python

from nvtxsim.analysis.findings import ADVICE, CUDA_CAUSES, analyse
from nvtxsim.analysis.findings.phase_stalls import period
from nvtxsim.analysis.selection import Selection
from nvtxsim.analysis.warmup import leading_run, threshold
from nvtxsim.export.reader import load

DATA = Path(__file__).resolve().parent / "data"
DIAG = DATA / "gpu" / "diagnosis"
LOOP = ("sim_step", "render", "camera_readout", "policy", "reward", "reset", "observation")
LOADING = ("cuModuleLoad", "cuLibraryLoad")


def truth(name: str) -> dict:
    line = committed(DIAG / f"{name}.truth.txt").read_text(encoding="utf-8").strip()
    return json.loads(line.removeprefix("truth:"))


@pytest.fixture(scope="module")
def diag():
    return {
        n: analyse(Selection(load(committed(DIAG / f"{n}.sqlite.xz"))))
        for n in ("diag_clean", "diag_compile", "diag_graphs", "diag_lazy_stalls")
    }


def _by(found):
    return {(f.phase, f.kind): f for f in found.items}


def _charges_loading(f) -> bool:
    """A finding other than warm_up that charges first-call costs: its cause, or its top CUDA call, is loading."""
    top = next(iter(f.evidence.get("cuda_calls_top", {})), "")
    return f.kind != "warm_up" and (
        f.evidence.get("cause") in ("module_load", "graph_capture", "compile") or top.startswith(LOADING)
    )


@pytest.mark.parametrize(
    "name, cause",
    [("diag_compile", "compile"), ("diag_graphs", "graph_capture"), ("diag_lazy_stalls", "module_load")],
)
def test_each_planted_warm_up_is_found_at_its_phase_with_its_cause(diag, name, cause):
    t = truth(name)
    assert t["warmup"] != "none"
    (wu,) = [f for f in diag[name].items if f.kind == "warm_up"]
    phases = wu.evidence["phases"]
    wanted = (
        [f"nvtxsim:{p}" for p in LOOP] if t["warmup_phase"] == "(every phase)" else [f"nvtxsim:{t['warmup_phase']}"]
    )
    for phase in wanted:
        assert phases[phase]["cause"] == cause and phases[phase]["iterations"][0] == 0, (phase, phases.get(phase))
    assert 0 in wu.evidence["iterations"] and wu.severity == "high" and wu.advice == ADVICE["warm_up"]
    assert diag[name].items[0] is wu  # a large warm-up leads the list: it is what the capture's totals are


@pytest.mark.parametrize("name", ["diag_compile", "diag_graphs", "diag_lazy_stalls"])
def test_no_other_finding_charges_the_warm_up(diag, name):
    found = diag[name]
    assert not [f"{f.kind} in {f.phase}" for f in found.items if _charges_loading(f)]
    assert not [f for f in found.items if f.kind == "outlier_iterations" and 0 in f.evidence["iterations"]]
    assert any(n.startswith("steady state: iteration") for n in found.notes), found.notes
    assert found.iterations < truth(name)["iterations"]


def test_the_clean_loop_raises_no_warm_up_no_stall_and_no_loading(diag):
    found = diag["diag_clean"]
    assert {f.kind for f in found.items}.isdisjoint({"warm_up", "phase_stalls", "outlier_iterations"})
    assert not [f for f in found.items if _charges_loading(f)]
    assert found.iterations == truth("diag_clean")["iterations"] and not found.notes  # nothing left out


def test_periodic_stall_and_spikes_are_found_at_their_phases(diag):
    t = truth("diag_lazy_stalls")
    by = _by(diag["diag_lazy_stalls"])
    per, spikes = t["periodic_stall"], t["spikes"]
    stall = by[(f"nvtxsim:{per['phase']}", "phase_stalls")]
    assert stall.evidence["iterations"] == per["iterations"] and stall.evidence["every"] == per["every"]
    assert abs(stall.evidence["stall_ns"] - per["ms"] * 1e6) < 0.1 * per["ms"] * 1e6
    spike = by[(f"nvtxsim:{spikes['phase']}", "phase_stalls")]
    assert spike.evidence["iterations"] == spikes["iterations"] and spike.evidence["every"] is None
    assert abs(spike.evidence["stall_ns"] - spikes["ms"] * 1e6) < 0.1 * spikes["ms"] * 1e6
    # Named once: not again as outlier iterations, and not as CPU-bound time of their phases.
    for phase in (per["phase"], spikes["phase"]):
        assert {(f"nvtxsim:{phase}", k) for k in ("outlier_iterations", "cpu_bound")}.isdisjoint(by)


def test_keep_warm_up_charges_it_again_with_advice_that_fits_the_cause():
    kept = analyse(Selection(load(committed(DIAG / "diag_lazy_stalls.sqlite.xz"))), skip_first=0)
    assert kept.iterations == 120 and not any(n.startswith("steady state") for n in kept.notes)
    loading = [f for f in kept.items if f.kind == "cpu_bound" and _charges_loading(f)]
    assert loading, [(f.kind, f.phase) for f in kept.items]
    for f in loading:  # module loading is never called Python-bound
        assert f.evidence["cause"] == "module_load" and f.advice == CUDA_CAUSES["module_load"][1], f.phase
    (wu,) = [f for f in kept.items if f.kind == "warm_up"]  # still named, with everything kept
    assert wu.evidence["left_out"] is False


def test_an_explicit_skip_names_only_the_warm_up_it_kept():
    detail = Selection(load(committed(DIAG / "diag_graphs.sqlite.xz")))
    f = analyse(detail, skip_first=5)
    assert f.iterations == 115 and not any(n.startswith("steady state") for n in f.notes)
    wu = [x for x in f.items if x.kind == "warm_up"]  # only the first policy_update (between iterations 9 and 10)
    assert [list(w.evidence["phases"]) for w in wu] in ([], [["nvtxsim:policy_update"]])


IL3 = {  # export → the phase whose first call is the costliest warm-up (graph capture and kernel loading)
    "il3_direct_rsl_rl": "nvtxsim:sim_step",
    "il3_manager_rsl_rl": "nvtxsim:sim_step",
    "il3_direct_skrl": "nvtxsim:sim_step",
    "il3_camera_rsl_rl": "nvtxsim:render",
}


@pytest.mark.parametrize("name", sorted(IL3))
def test_isaac_lab_runs_name_their_warm_up_and_no_other_finding_charges_it(name):
    found = analyse(Selection(load(committed(DATA / "isaaclab3" / f"{name}.sqlite.xz"))))
    (wu,) = [f for f in found.items if f.kind == "warm_up"]
    assert wu.phase == IL3[name] and wu.evidence["phases"][IL3[name]]["cause"] == "graph_capture"
    assert wu.evidence["phases"][IL3[name]]["iterations"] in ([0], []) and wu.severity == "high"  # [] before it
    assert not [f"{f.kind} in {f.phase}" for f in found.items if _charges_loading(f)]
    assert not [f for f in found.items if 0 in f.evidence.get("iterations", []) and f.kind != "warm_up"]


def test_warm_up_threshold_and_run():
    steady = np.array([100_000, 110_000, 90_000, 100_000, 105_000])
    assert threshold(steady) == max(100_000 + 8 * 1.4826 * 5_000, 200_000, 200_000)
    assert leading_run(np.array([True, True, False, True])).tolist() == [0, 1]
    assert leading_run(np.array([False, True, True, False])).tolist() == [1, 2]  # a branch first taken in call 1
    assert leading_run(np.array([False, False, True])).tolist() == []  # a later slow call is a stall, not warm-up


def test_period():
    assert period([25, 50, 75, 100]) == 25
    assert period([9, 27, 45]) == 18
    assert period([30, 62, 95]) is None
    assert period([10, 20]) is None  # two stalls make no period
    assert period([10, 20, 50, 60]) is None  # 10 apart, but most multiples between them did not stall


def test_keep_warm_up_and_skip_first_together_is_one_line_and_exit_2():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "nvtxsim",
            "report",
            str(committed(DIAG / "diag_clean.sqlite.xz")),
            "--keep-warm-up",
            "--skip-first",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--keep-warm-up" in r.stderr


def test_other_thread_gpu_is_raised_when_it_is_much_of_the_phases_own_gpu_work(tmp_path):
    """2 µs of GPU work launched by autograd's thread beside 2 µs of the phase's own: far under 0.1 % of the
    loop's time, but half of what the phase's nsys GPU columns should hold."""
    from test_findings import _loop

    def step(b, i):
        b.phase("big_python", lambda: (b.cpu(20_000_000), b.kernel("k", 5_000)))

        def learn():
            b.kernel("fwd", 2_000, 6_000)
            b.on_thread(7, "pt_autograd_0", b.t, lambda: b.kernel("bwd", 2_000, 5_000))
            b.cpu(20_000)

        b.phase("learn", learn)

    got = _loop(tmp_path, step, iterations=10)
    (f,) = [f for f in got.items if f.kind == "other_thread_gpu"]
    assert f.phase == "nvtxsim:learn" and f.evidence["share_of_time"] < 0.001
    assert f.evidence["phase_gpu_share"] == 0.5 and f.cost_ns == 10 * 2_000


STALLED_LOOP = """
import time
import nvtxsim

for i in range(60):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("setup_cache"):
            time.sleep(0.2 if i == 0 else 0.005)  # a first call that builds a cache: warm-up
        with nvtxsim.phase("log"):
            time.sleep(0.08 if i % 10 == 5 else 0.005)  # logging every 10 iterations: a periodic stall
"""


@needs_nsys
@pytest.mark.nsys
def test_a_real_capture_names_its_warm_up_and_its_periodic_stall(tmp_path):
    """A CPU-only nsys capture of a Python loop: the first call's cost is warm-up (first-call CPU work, no CUDA),
    left out of the rest; the logging every 10 iterations is a stall of ``log``, every 10, from iteration 5."""
    found = analyse(Selection(load(profile_python(tmp_path, STALLED_LOOP, name="stalled"))))
    by = _by(found)
    wu = by[("nvtxsim:setup_cache", "warm_up")]
    assert wu.evidence["phases"]["nvtxsim:setup_cache"]["iterations"] == [0]
    assert wu.evidence["phases"]["nvtxsim:setup_cache"]["cause"] is None  # no CUDA call, no child process
    assert found.iterations == 59 and "steady state: iteration 0 set aside" in found.notes[-1]
    stall = by[("nvtxsim:log", "phase_stalls")]
    assert stall.evidence["iterations"] == [5, 15, 25, 35, 45, 55] and stall.evidence["every"] == 10
    assert ("nvtxsim:log", "outlier_iterations") not in by


def test_the_html_plot_shades_the_warm_up_it_was_asked_to_keep():
    """Kept (--keep-warm-up), the first iterations the findings take for warm-up are shaded on the per-iteration
    plot; by default they are left out of it and said to be; --skip-first N leaves out N and shades nothing."""
    from types import SimpleNamespace

    from nvtxsim.reporting.page import page_data

    detail = Selection(load(committed(DATA / "isaaclab3" / "il3_direct_rsl_rl.sqlite.xz")))
    kept = page_data(detail, SimpleNamespace(by=None, skip_first=0))["iterations"]
    steady = page_data(detail, SimpleNamespace(by=None, skip_first=None))["iterations"]
    chosen = page_data(detail, SimpleNamespace(by=None, skip_first=5))["iterations"]
    assert kept["warm_up_kept"] == steady["skipped"] == 2 and steady["warm_up"] and kept["skipped"] == 0
    assert kept["count"] == steady["count"] + 2 and kept["index"][0] == 0 and steady["index"][0] == 2
    assert steady["warm_up_kept"] == 0 and chosen["warm_up_kept"] == 0 and not chosen["warm_up"]
