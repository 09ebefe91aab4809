"""The H200 capture of rsl-rl-lib 5.5.1 training a 4096-env torch task (issue 17, scripts/gpu/rsl_rl.sh).

``tests/data/gpu/rsl_rl_4096.sqlite.gz``: nsys 2025.3.1, CUDA trace, 5 learning iterations of 24 steps,
instrumented with ``nvtxsim.isaaclab.instrument_runner``. The structure nvtxsim recorded on the real
GPU run, and the report's step / learning-iteration views of it (docs/isaaclab.md shows them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from committed import committed

SUPPORT = Path(__file__).parent / "isaaclab_support"
sys.path.insert(0, str(SUPPORT))

from nesting import Span, children_count, inside, names, parents  # noqa: E402

from nvtxsim.analysis.iterations import loop_rates, per_iteration  # noqa: E402
from nvtxsim.analysis.selection import Selection  # noqa: E402
from nvtxsim.export.reader import load  # noqa: E402
from nvtxsim.reporting.views import ViewOptions, iterations, slowest  # noqa: E402

PATH = Path(__file__).parent / "data" / "gpu" / "rsl_rl_4096.sqlite.gz"
ENVS, STEPS, ITERATIONS = 4096, 24, 5


@pytest.fixture(scope="module")
def export():
    return load(committed(PATH))


def _spans(export) -> list[Span]:
    r = export.ranges
    keep = [i for i in range(len(r)) if r.domain[i] == "nvtxsim"]
    spans = [Span(str(r.name[i]), int(r.start[i]), int(r.end[i]), int(r.global_tid[i])) for i in keep]
    return sorted(spans, key=lambda s: (s.start, -s.end))


def test_structure_recorded_on_the_h200(export):
    spans = _spans(export)
    par = parents(spans)
    count = names(spans)
    n = STEPS * ITERATIONS
    assert count["learning_iteration"] == ITERATIONS and count["rollout"] == ITERATIONS and count["step"] == n
    assert children_count(spans, par, "rollout", "step", direct=True) == [STEPS] * ITERATIONS
    for inner in ("policy", "iteration", "process_env_step"):
        assert children_count(spans, par, "step", inner, direct=True) == [1] * n, inner
    assert children_count(spans, par, "iteration", "sim_step", direct=True) == [4] * n  # decimation
    assert inside(spans, par, "policy_update", "learning_iteration") == (ITERATIONS, ITERATIONS)
    assert inside(spans, par, "compute_returns", "rollout") == (0, ITERATIONS)
    r = export.ranges
    loop = np.isin(r.name.astype(str), ["step", "rollout", "learning_iteration"])
    assert set(r.style[loop].tolist()) == {1} and set(r.payload[loop].tolist()) == {float(ENVS)}


def test_step_view_is_the_default_and_sees_the_gpu(export):
    d = Selection(export, domain="nvtxsim")
    everything = iterations(d, ViewOptions(skip_first=0)).as_dict()["rows"][0]
    assert everything["phase"] == "nvtxsim:step" and everything["iterations"] == STEPS * ITERATIONS
    view = iterations(d, ViewOptions()).as_dict()  # the steady state: the first step's CUDA warm-up set aside
    rows = {row["phase"]: row for row in view["rows"]}
    (note,) = [n for n in view["notes"] if "set aside as warm-up" in n]
    skipped = int(note.split("first ")[1].split(" ")[0])
    assert view["rows"][0]["phase"] == "nvtxsim:step" and 1 <= skipped < STEPS
    assert view["rows"][0]["iterations"] == STEPS * ITERATIONS - skipped
    assert (
        rows["nvtxsim:policy"]["per_iteration_count"] == 1.0 and rows["nvtxsim:sim_step"]["per_iteration_count"] == 4.0
    )
    assert rows["nvtxsim:policy"]["gpu_p50_ns"] > 0 and rows["nvtxsim:iteration"]["gpu_p50_ns"] > 0  # CUDA traced
    assert any(f"{ENVS} envs per iteration (recorded by nvtxsim)" in note for note in view["notes"])


def test_learning_iteration_view(export):
    d = Selection(export, domain="nvtxsim")
    it = per_iteration(d, "learning_iteration")
    rates = loop_rates(d, it)
    assert len(it) == ITERATIONS and rates.envs == ENVS and rates.steps.tolist() == [STEPS] * ITERATIONS
    assert np.all(rates.rollout_ns + rates.update_ns < it.duration) and np.all(rates.rollout_ns > 0)
    assert np.allclose(rates.env_steps_per_s, ENVS * STEPS * 1e9 / it.duration)
    o = ViewOptions(by="learning_iteration", by_given=True, skip_first=1)  # the first one warms CUDA up
    view = iterations(d, o).as_dict()
    assert view["rows"][0]["iterations"] == ITERATIONS - 1
    notes = " | ".join(view["notes"])
    assert (
        f"{ENVS} envs × {STEPS} steps per iteration (recorded by nvtxsim)" in notes
        and "per iteration: rollout " in notes
    )
    rows = slowest(d, o).as_dict()["rows"]
    assert len(rows) == ITERATIONS - 1
    assert all(row["rollout_ns"] > 0 and row["update_ns"] > 0 and row["env_steps_per_s"] > 0 for row in rows)


def test_compare_by_a_range_one_export_lacks_names_that_export(tmp_path, capsys):
    """compare --by step against an export without steps: one line naming the export that lacks them."""
    committed(PATH)
    from synth import LoopPhase, make_loop_export

    from nvtxsim.cli.main import main

    other = tmp_path / "no_steps.sqlite"
    make_loop_export(other, [LoopPhase("physics", 10_000)], iterations=3)
    assert main(["compare", str(PATH), str(other), "--by", "step"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nvtxsim: error: no_steps.sqlite: --by 'step'")
