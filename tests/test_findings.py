"""Findings on exports with planted bottlenecks: each problem found at its phase, with its kind."""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path

import pytest
from committed import committed
from synth import OUTLIER_ITERATIONS, PLANTED, SLOW_ITERATIONS, make_planted

from nvtxsim.analysis.findings import ADVICE, CUDA_CAUSES, KINDS, OUTSIDE, SEVERITIES, analyse
from nvtxsim.analysis.findings.os_calls import ADVICE as OS_ADVICE
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load
from nvtxsim.reporting.viewtable import fmt_ns


def find(detail: Selection, **options) -> list:
    """The findings of ``detail``, most costly first."""
    return analyse(detail, **options).items


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    p = tmp_path_factory.mktemp("findings") / "planted.sqlite"
    make_planted(p)
    return find(Selection(load(p)))


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    p = tmp_path_factory.mktemp("findings") / "clean.sqlite"
    make_planted(p, clean=True)
    return find(Selection(load(p)))


def _kinds(found, phase):
    return [f.kind for f in found if f.phase == phase]


@pytest.mark.parametrize("name,kind", sorted(PLANTED.items()))
def test_each_planted_problem_is_found_at_its_phase(planted, name, kind):
    assert kind in _kinds(planted, f"nvtxsim:{name}")


def test_gpu_work_outside_every_phase(planted):
    (f,) = [f for f in planted if f.kind == "unattributed_gpu"]
    assert f.phase == OUTSIDE and f.evidence["launches"] == 200


def test_problems_are_reported_once_at_the_innermost_phase(planted):
    assert "sync" not in _kinds(planted, "nvtxsim:iteration")
    assert "pageable_copy" not in _kinds(planted, "nvtxsim:iteration")
    # A sync or a pageable copy is not also a CPU- or GPU-bound phase.
    assert {"cpu_bound", "gpu_bound"}.isdisjoint(_kinds(planted, "nvtxsim:reward"))
    assert "gpu_bound" not in _kinds(planted, "nvtxsim:camera_readout")


def test_evidence(planted):
    by = {(f.phase, f.kind): f for f in planted}
    sync = by[("nvtxsim:reward", "sync")]
    assert sync.evidence["calls"] == 30 and sync.evidence["apis"] == {
        "cudaStreamSynchronize": 30,
        "cudaMemcpyAsync D→H pageable": 30,
    }
    assert (
        sync.evidence["calls_per_iteration"] == 1.0 and sync.cost_per_iteration_ns == 1_520_000
    )  # the 1.5 ms sync and the 20 µs .item() copy
    copy = by[("nvtxsim:camera_readout", "pageable_copy")]
    assert copy.evidence["bytes"] == 30 * (8 << 20) and copy.evidence["directions"]["D→H"]["copies"] == 30
    stall = by[("nvtxsim:observation", "phase_stalls")]
    assert stall.evidence["iterations"] == list(OUTLIER_ITERATIONS) and stall.evidence["stall_ns"] >= 40_000_000
    assert ("nvtxsim:observation", "outlier_iterations") not in by  # the stall is named once, at its phase
    assert by[("nvtxsim:reset", "outlier_iterations")].evidence["iterations"] == list(SLOW_ITERATIONS)
    other = by[("nvtxsim:policy_update", "other_thread_gpu")]
    assert other.evidence["threads"] == {"pt_autograd_0 (2001)": 300}
    assert by[("nvtxsim:sim_step", "launch_bound")].evidence["launches_per_range"] == 300


def _iteration_durations(path: Path) -> list[int]:
    """The key range's durations straight from the export's SQL, in start order (the test's own truth)."""
    con = sqlite3.connect(path)
    rows = con.execute(
        "SELECT e.end - e.start FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId"
        " WHERE s.value = 'iteration' ORDER BY e.start"
    ).fetchall()
    con.close()
    return [r[0] for r in rows]


def test_outlier_cost_is_the_time_above_the_median(tmp_path):
    p = tmp_path / "planted.sqlite"
    make_planted(p)
    durations = _iteration_durations(p)
    median = statistics.median(durations)
    assert all(durations[i] > 2 * median for i in SLOW_ITERATIONS)
    want = sum(durations[i] - median for i in SLOW_ITERATIONS)
    (out,) = [f for f in find(Selection(load(p))) if f.kind == "outlier_iterations"]
    assert out.phase == "nvtxsim:reset" and out.evidence["iterations"] == list(SLOW_ITERATIONS)
    assert out.evidence["median_ns"] == int(median)
    assert out.evidence["max_ns"] == max(durations[i] for i in SLOW_ITERATIONS)
    assert out.cost_ns == round(want)
    assert out.cost_per_iteration_ns == round(want / len(durations))
    # The planted 12 ms minus the ordinary 3 ms of reset, per slow iteration: the median is subtracted.
    assert abs(out.cost_ns - len(SLOW_ITERATIONS) * (12_000_000 - 3_000_000)) < 5_000


def test_outlier_evidence_gives_the_phases_own_median(tmp_path):
    """The reset finding's "median" is reset's own (3 ms), not the iteration's: read from the export's SQL."""
    from nvtxsim.reporting.findings import evidence_text

    p = tmp_path / "planted.sqlite"
    make_planted(p)
    con = sqlite3.connect(p)
    reset = [
        r[0]
        for r in con.execute(
            "SELECT e.end - e.start FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId"
            " WHERE s.value = 'reset' ORDER BY e.start"
        )
    ]
    con.close()
    assert len(reset) == len(_iteration_durations(p))  # one reset per iteration
    (out,) = [f for f in find(Selection(load(p))) if f.kind == "outlier_iterations"]
    assert out.evidence["phase_median_ns"] == int(statistics.median(reset))
    assert out.evidence["phase_max_ns"] == max(reset[i] for i in SLOW_ITERATIONS)
    text = evidence_text(out)
    own = f"up to {fmt_ns(max(reset[i] for i in SLOW_ITERATIONS))} (median {fmt_ns(statistics.median(reset))})"
    assert text.startswith(f"iterations {', '.join(map(str, SLOW_ITERATIONS))}: {own}") and "12.0" in own
    assert text.endswith(
        f"iteration up to {fmt_ns(out.evidence['max_ns'])} (median {fmt_ns(out.evidence['median_ns'])})"
    )


def test_shape_of_findings(planted):
    costs = [(f.kind == "gpu_bound", -f.cost_ns) for f in planted]
    assert costs == sorted(costs)  # most costly first, the informational gpu_bound after the rest
    for f in planted:
        assert f.kind in KINDS and f.severity in SEVERITIES and f.advice and f.cost_ns > 0
        json.dumps(f.as_dict(), ensure_ascii=False)


def test_clean_run_has_no_sync_or_pageable_copy(clean):
    kinds = {f.kind for f in clean}
    assert not kinds & {
        "sync",
        "pageable_copy",
        "launch_bound",
        "cpu_bound",
        "other_thread_gpu",
        "unattributed_gpu",
        "outlier_iterations",
    }


def test_skip_first_and_no_iterations(tmp_path):
    p = tmp_path / "planted.sqlite"
    make_planted(p)
    d = Selection(load(p))
    skipped = {(f.phase, f.kind): f for f in find(d, skip_first=10)}
    assert skipped[("nvtxsim:reward", "sync")].evidence["calls"] == 20
    # Without the key range the findings still come, without per-iteration costs.
    no_it = find(d, by="no_such_range")
    assert no_it and all(f.cost_per_iteration_ns is None for f in no_it)
    assert "sync" in _kinds(no_it, "nvtxsim:reward")


# --------------------------------------------------------------------------- real H200 captures (scripts/gpu/findings.sh)

GPU_DATA = Path(__file__).parent / "data" / "gpu"
REAL = {  # (phase, kind) planted by scripts/gpu/findings_workload.py
    ("nvtxsim:sim_step", "launch_bound"),
    ("nvtxsim:render", "gpu_bound"),
    ("nvtxsim:camera_readout", "pageable_copy"),
    ("nvtxsim:reward", "sync"),
    ("nvtxsim:reset", "cpu_bound"),
    ("nvtxsim:observation", "phase_stalls"),  # time.sleep in iterations 9, 27, 45: the OS trace names it
    ("nvtxsim:policy_update", "other_thread_gpu"),
    (OUTSIDE, "unattributed_gpu"),
}


@pytest.fixture(scope="module")
def real():
    paths = {v: committed(GPU_DATA / f"findings_{v}.sqlite.gz") for v in ("planted", "clean")}
    return {v: find(Selection(load(path)), skip_first=2) for v, path in paths.items()}


@pytest.mark.parametrize("phase,kind", sorted(REAL))
def test_h200_planted_problem_is_found(real, phase, kind):
    assert kind in _kinds(real["planted"], phase), [(f.phase, f.kind) for f in real["planted"]]


def test_h200_planted_evidence(real):
    by = {(f.phase, f.kind): f for f in real["planted"]}
    stall = by[("nvtxsim:observation", "phase_stalls")]
    assert stall.evidence["iterations"] == [9, 27, 45] and stall.evidence["every"] == 18
    assert stall.evidence["cause"] == "os_wait" and stall.evidence["os_wait_top"]["clock_nanosleep"][0] == 3
    assert ("nvtxsim:observation", "os_wait") not in by  # the stalls' sleeps are not counted twice
    assert list(by[("nvtxsim:policy_update", "other_thread_gpu")].evidence["threads"])[0].startswith("pt_autograd")
    assert by[("nvtxsim:reward", "sync")].evidence["apis"] == {
        "cudaStreamSynchronize": 116
    }  # .item() and nonzero(), 58 iterations
    copy = by[("nvtxsim:camera_readout", "pageable_copy")]
    assert copy.severity == "high" and copy.evidence["directions"]["D→H"]["copies"] == 58
    # Iterations 20 and 40 follow a policy_update: the copy waits for its backward work. That is the copy's
    # finding (its cost holds the wait), not a second, overlapping outlier finding.
    assert copy.evidence["slow_iterations"] == [20, 40] and ("nvtxsim:camera_readout", "outlier_iterations") not in by
    assert stall.advice == OS_ADVICE["sleep"]  # time.sleep: the OS trace holds the sleeps, and the advice fits
    assert by[("nvtxsim:sim_step", "launch_bound")].evidence["launches_per_range"] == 300


def test_h200_clean_run_raises_none_of_the_planted_problems(real):
    kinds = {f.kind for f in real["clean"]}
    assert not kinds & {"sync", "pageable_copy", "launch_bound", "cpu_bound", "other_thread_gpu"}, kinds
    # Its slow policy calls 49… are the CPU blocked in launches once CUDA's queue is full (render's matmul):
    # the advice says so, not "logging, checkpoints".
    (slow,) = [f for f in real["clean"] if f.kind == "phase_stalls"]
    assert slow.phase == "nvtxsim:policy" and slow.evidence["iterations"] == list(range(49, 60))
    assert slow.evidence["cause"] == "launch_queue" and slow.advice == CUDA_CAUSES["launch_queue"][1]


def test_cli_fail_on_json_html_and_compare(tmp_path):
    import subprocess
    import sys

    planted, clean = (str(GPU_DATA / f"findings_{v}.sqlite.gz") for v in ("planted", "clean"))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "nvtxsim", *args], capture_output=True, text=True)

    p = cli("report", planted, "--skip-first", "2", "--fail-on", "sync,pageable_copy", "-f", "json")
    assert (
        p.returncode == 1
        and "--fail-on sync in nvtxsim:reward" in p.stderr
        and "pageable_copy in nvtxsim:camera_readout" in p.stderr
    )
    doc = json.loads(p.stdout)
    assert {"phase", "kind", "severity", "cost_ns", "cost_per_iteration_ns", "evidence", "advice"} <= set(
        doc["findings"][0]
    )
    assert cli("report", clean, "--skip-first", "2", "--fail-on", "sync,pageable_copy").returncode == 0
    assert cli("report", clean, "--fail-on", "nonsense").returncode == 2
    text = cli("report", planted, "--skip-first", "2").stdout.splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("Findings"))  # after the source and headline
    block = text[start : text.index("", start)]
    assert block[0].startswith("Findings") and len(block) <= 16 and all(len(line) <= 80 for line in block)
    page = tmp_path / "r.html"
    assert cli("report", planted, "-f", "html", "-o", str(page)).returncode == 0
    html = page.read_text()
    assert html.index('id="findings"') < html.index('id="plots"') and 'href="#phase-' in html
    # each finding also links to the timeline, naming its phase for the highlight (escaped, as data)
    section = html[html.index('id="findings"') : html.index('id="plots"')]
    assert section.count('class="tl-phase"') == section.count("<li ") > 0
    assert 'data-phase="nvtxsim:reward"' in section and "function lit(" in html
    c = cli("compare", clean, planted, "--by", "iteration", "--skip-first", "2", "--fail-on", "sync", "-f", "json")
    assert c.returncode == 1 and "new finding sync in nvtxsim:reward" in c.stderr
    appeared = {(f["phase"], f["kind"]) for f in json.loads(c.stdout)["findings"]["appeared"]}
    assert {("nvtxsim:reward", "sync"), ("nvtxsim:camera_readout", "pageable_copy")} <= appeared


def test_streamed_export_gives_the_same_findings(tmp_path, monkeypatch):
    """A streamed export: the very same findings as in memory (every kind, cost and evidence, the thread kinds
    included), whatever size picked its backend; the sync and memcpy calls come from one filtered query."""
    p = tmp_path / "planted.sqlite"
    make_planted(p)
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", str(1 << 60))
    ref = analyse(Selection(load(p)))
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", "0")
    ex = load(p)
    got = analyse(Selection(ex))
    from nvtxsim.export.streamed import source_of

    assert source_of(ex) is not None
    assert [f.as_dict() for f in got.items] == [f.as_dict() for f in ref.items]
    assert got.notes == ref.notes and {"other_thread_gpu", "unattributed_gpu"} & {f.kind for f in got.items}


def test_block_fits_80_columns_whatever_the_names(planted):
    from nvtxsim.analysis.findings import Finding, Findings
    from nvtxsim.reporting.findings import block_lines, block_markdown
    from nvtxsim.reporting.renderers.terminal import cell_width

    hostile = "nvtxsim:" + "\x1b[31mred|*x*" + "名前" * 60
    items = [
        Finding(hostile, f.kind, f.severity, f.cost_ns, f.cost_per_iteration_ns, f.evidence, f.advice) for f in planted
    ]
    fs = Findings(items, 30, 1_000_000_000, ["a note " * 20])
    for width in (None, 80, 60):
        lines = block_lines(fs, width)
        assert len(lines) <= 1 + 3 * 5 + 2 and all(cell_width(ln) <= min(width or 80, 80) for ln in lines)
        assert not any("\x1b" in ln for ln in lines)
    md = block_markdown(fs)
    assert md.startswith("### Findings") and "\x1b" not in md and "|" not in md.replace("\\|", "")


def test_cpu_bound_in_allocation_calls_gets_the_allocation_advice():
    """scripts/gpu/scaling.sh runs with PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is a cudaMalloc/cudaFree."""

    found = {
        (f.phase, f.kind): f
        for f in find(Selection(load(committed(GPU_DATA / "scaling" / "scaling_1024.sqlite.gz"))), skip_first=2)
    }
    f = found[("nvtxsim:pairwise", "cpu_bound")]
    assert f.advice == CUDA_CAUSES["alloc"][1] and next(iter(f.evidence["cuda_calls_top"])) == "cudaMalloc"
    assert f.evidence["cuda_calls_share"] >= 0.5


def test_export_without_cuda_trace_gets_no_gpu_diagnoses(tmp_path):
    """CPU-only captures (no CUPTI tables): no CPU-/launch-/GPU-bound guesses from GPU numbers that are 0 for want of a trace."""
    import sqlite3

    p = tmp_path / "planted.sqlite"
    make_planted(p)
    con = sqlite3.connect(p)
    for t in (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    ):
        con.execute(f"DROP TABLE {t}")
    con.commit()
    con.close()
    got = analyse(Selection(load(p)))
    # no GPU kinds; what is left is the CPU side: the stalls, the phases busy on the CPU, the fsync wait in save
    kinds = {f.kind for f in got.items}
    assert kinds == {"phase_stalls", "outlier_iterations", "cpu_bound", "os_wait"} and "no CUDA trace" in got.notes[-1]
    by = {(f.phase, f.kind): f for f in got.items}
    assert ("nvtxsim:save", "os_wait") in by and ("nvtxsim:save", "cpu_bound") not in by  # waiting, not computing
    reset = by[("nvtxsim:reset", "cpu_bound")]  # 30 × (3 ms of Python + a 4 µs launch + 4 µs of range edges)
    assert reset.cost_ns == 30 * (3_000_000 + 4_000 + 4_000 + 500) and reset.evidence["no_cuda"]


# --------------------------------------------------------------------------- other programs, the same classes of problem


def _loop(tmp_path, build, name="loop", **kw):
    """Findings of a :class:`synth.CudaLoop` built by ``build(b, i)`` per iteration (``key``: the range around it)."""
    from synth import CudaLoop

    b = CudaLoop(cuda=kw.pop("cuda", True))
    key = kw.pop("key", "iteration")
    for i in range(kw.pop("iterations", 10)):
        b.phase(key, lambda i=i: build(b, i)) if key else build(b, i)
        b.cpu(10_000)
    p = tmp_path / f"{name}.sqlite"
    b.write(p)
    return analyse(Selection(load(p)), **kw)


def _env_step(b, i, *, some=None):
    """Another Isaac-Lab-shaped step, with other names and the real PyTorch call patterns."""
    b.phase("physx_substeps", lambda: [b.kernel("k", 1_000, 5_000) for _ in range(500)])  # launch-bound

    def reward_terms():
        for _ in range(3):
            b.kernel("gemm", 400_000, 8_000)
        if some is None or i in some:
            b.copy(4, 2, True, 2_000)  # .cpu() of a scalar: the CPU waits in the copy ...
            b.sync()  # ... and the stream sync after it finds the GPU idle

    b.phase("compute_terms", lambda: b.phase("reward_terms", reward_terms))  # nested: found at the inner one
    b.phase("termination", lambda: (b.kernel("g", 300_000), b.copy(16 << 20, 1, True, 1_500_000)))  # pageable H→D
    b.phase("bookkeeping", lambda: (b.cpu(3_000_000), b.kernel("tiny", 3_000)))  # Python
    b.phase(
        "done_mask", lambda: (b.kernel("mask", 500_000), b.copy(8, 2, False, 2_000), b.sync())
    )  # nonzero(): pinned + sync


def test_another_program_same_classes_of_problem(tmp_path):
    got = _loop(tmp_path, _env_step)
    by = {(f.phase, f.kind): f for f in got.items}
    assert {
        ("nvtxsim:physx_substeps", "launch_bound"),
        ("nvtxsim:reward_terms", "sync"),
        ("nvtxsim:termination", "pageable_copy"),
        ("nvtxsim:bookkeeping", "cpu_bound"),
        ("nvtxsim:done_mask", "sync"),
    } <= set(by), sorted(by)
    assert not [
        f for f in got.items if f.phase in ("nvtxsim:iteration", "nvtxsim:compute_terms")
    ]  # once, at the innermost phase
    assert "gpu_bound" not in [
        f.kind for f in got.items if f.phase == "nvtxsim:reward_terms"
    ]  # it waits: a sync, not GPU-bound
    sync = by[("nvtxsim:reward_terms", "sync")]
    assert sync.evidence["calls"] == 10 and sync.evidence["pageable_d2h_copies"] == 10
    assert sync.cost_ns >= 10 * 1_100_000 and sync.cost_per_iteration_ns == round(
        sync.cost_ns / 10
    )  # most of 3 × 400 µs queued
    assert by[("nvtxsim:termination", "pageable_copy")].evidence["directions"]["H→D"]["bytes"] == 10 * (16 << 20)
    assert by[("nvtxsim:physx_substeps", "launch_bound")].evidence["launches_per_range"] == 500
    for f in got.items:  # a cost is never more than the time it is a share of
        assert 0 < f.cost_ns <= got.reference_ns and f.evidence["share_of_time"] <= 1


def test_problem_in_some_iterations_single_iteration_and_no_key_range(tmp_path):
    some = _loop(tmp_path, lambda b, i: _env_step(b, i, some={2, 5}), "some")
    (sync,) = [f for f in some.items if f.phase == "nvtxsim:reward_terms"]
    assert (
        sync.kind == "sync" and sync.evidence["calls"] == 2 and sync.cost_per_iteration_ns == round(sync.cost_ns / 10)
    )  # amortised
    one = _loop(tmp_path, _env_step, "one", iterations=1)
    assert one.iterations == 1 and ("nvtxsim:reward_terms", "sync") in {(f.phase, f.kind) for f in one.items}
    assert all(f.cost_ns == f.cost_per_iteration_ns for f in one.items)
    for key in (None, "env_step"):  # no range named `iteration`: no per-iteration costs, the same findings
        got = _loop(tmp_path, _env_step, f"key{key}", key=key)
        assert got.iterations is None and all(f.cost_per_iteration_ns is None for f in got.items)
        assert ("nvtxsim:reward_terms", "sync") in {(f.phase, f.kind) for f in got.items}


def test_backward_on_another_thread_and_a_stall(tmp_path):
    def step(b, i):
        b.phase("actor", lambda: [b.kernel("mlp", 30_000, 8_000) for _ in range(6)])
        b.phase(
            "apply_actions", lambda: (b.cpu(200_000 + (30_000_000 if i in (4, 9) else 0)), b.kernel("apply", 200_000))
        )
        if i % 4 == 3:

            def learn():
                for _ in range(5):
                    b.kernel("fwd", 50_000, 6_000)
                b.on_thread(7, "pt_autograd_0", b.t, lambda: [b.kernel("bwd", 80_000, 5_000) for _ in range(40)])
                b.cpu(40 * 6_000)

            b.phase("learn", learn)

    got = _loop(tmp_path, step, iterations=12)
    by = {(f.phase, f.kind): f for f in got.items}
    other = by[("nvtxsim:learn", "other_thread_gpu")]
    assert other.evidence["threads"] == {"pt_autograd_0 (3007)": 120} and other.cost_ns == 120 * 80_000
    stall = by[("nvtxsim:apply_actions", "phase_stalls")]  # 30 ms in a 0.2 ms phase: its stall, named once
    assert stall.evidence["iterations"] == [4, 9] and ("nvtxsim:apply_actions", "outlier_iterations") not in by


def test_library_ranges_are_seen_through(tmp_path):
    """Under --domain all, a CUB range inside the program's phase: the finding is the phase's, not CUB's."""

    def step(b, i):
        b.phase(
            "sort_contacts",
            lambda: b.phase(
                "cub::DeviceRadixSort", lambda: [b.kernel("cub", 1_000, 5_000) for _ in range(60)], domain="CCCL"
            ),
        )

    got = _loop(tmp_path, step, "cccl", iterations=8)
    ex = load(tmp_path / "cccl.sqlite")
    every = analyse(Selection(ex, domain=None))
    for fs in (got, every):
        assert [(f.phase, f.kind) for f in fs.items] == [("nvtxsim:sort_contacts", "launch_bound")]


def test_cpu_only_capture(tmp_path):
    got = _loop(tmp_path, _env_step, "cpu", cuda=False)
    assert got.items == [] and "no CUDA trace" in got.notes[-1]


def test_sync_advice_fits_the_call(tmp_path):
    """torch.cuda.synchronize(), event timing and synchronous copies each get their own advice."""
    from nvtxsim.analysis.findings import SYNC_ADVICE

    def step(b, i):
        b.phase("timed", lambda: (b.kernel("a", 300_000), b.sync("cudaDeviceSynchronize_v3020")))
        b.phase("evented", lambda: (b.kernel("b", 300_000), b.sync("cudaEventSynchronize_v3020")))
        b.phase("readback", lambda: (b.kernel("c", 300_000), b.copy(256, 2, False, 2_000, api="cudaMemcpy_v3020")))
        b.phase("item", lambda: (b.kernel("d", 300_000), b.copy(4, 2, False, 2_000), b.sync()))

    by = {f.phase: f for f in _loop(tmp_path, step).items if f.kind == "sync"}
    assert [by[f"nvtxsim:{p}"].advice for p in ("timed", "evented", "readback")] == [a for _, a in SYNC_ADVICE]
    assert by["nvtxsim:item"].advice == ADVICE["sync"]
    assert all(by[p].cost_per_iteration_ns >= 290_000 for p in by)  # each waits for its 300 µs kernel


def test_cpu_bound_in_module_loading_says_so():
    detail = Selection(load(committed(GPU_DATA / "torch_nvtx_h200.sqlite.gz")), domain=None)
    kept = {(f.phase, f.kind): f for f in find(detail, skip_first=0)}  # the warm-up kept: charged, with its cause
    f = kept[("optimizer", "cpu_bound")]
    assert f.evidence["cause"] == "module_load" and f.advice == CUDA_CAUSES["module_load"][1]
    steady = {(f.phase, f.kind): f for f in find(detail)}  # by default the first calls are the warm-up's
    assert ("optimizer", "cpu_bound") not in steady and ("forward", "cpu_bound") not in steady
    wu = steady[("forward", "warm_up")]
    causes = {p: e["cause"] for p, e in wu.evidence["phases"].items()}
    assert {p: causes[p] for p in ("forward", "backward", "optimizer")} == dict.fromkeys(
        ("forward", "backward", "optimizer"), "module_load"
    )


def test_cpu_work_hidden_behind_gpu_work_and_side_threads(tmp_path):
    """CPU-bound costs the GPU's idle time: Python that runs while the GPU works off earlier launches costs
    nothing. A phase only on a side thread runs alongside the loop: low, whatever its size."""

    def step(b, i):
        b.phase("queue_big_gemm", lambda: b.kernel("gemm", 5_000_000, 10_000))  # the GPU is busy 5 ms ...
        b.phase("hidden_python", lambda: (b.cpu(4_900_000), b.kernel("tiny", 2_000)))  # ... while this runs
        b.phase("exposed_python", lambda: (b.cpu(3_000_000), b.kernel("tiny", 2_000)))  # the GPU idles now
        b.on_thread(
            5, "logger", b.t, lambda: b.phase("side_python", lambda: (b.cpu(4_000_000), b.kernel("tiny", 2_000)))
        )
        b.cpu(1_000_000)
        b.sync()

    by = {(f.phase, f.kind): f for f in _loop(tmp_path, step).items}
    assert ("nvtxsim:hidden_python", "cpu_bound") not in by
    exposed = by[("nvtxsim:exposed_python", "cpu_bound")]
    assert (
        exposed.severity == "high"
        and 2_900_000 <= exposed.cost_per_iteration_ns <= exposed.evidence["gpu_idle_ns"] / 10
    )
    side = by[("nvtxsim:side_python", "cpu_bound")]
    assert side.severity == "low" and side.evidence["off_loop_thread"]


@pytest.mark.parametrize("arg", ["bogus", "", " , ", "sync,bogus"])
def test_fail_on_without_a_known_kind_is_an_error(arg):
    """An empty `--fail-on "$KINDS"` in CI must not pass silently; an unknown kind is a one-line error."""
    from nvtxsim.cli.arguments import parse_kinds
    from nvtxsim.errors import NvtxsimError

    with pytest.raises(NvtxsimError, match="^--fail-on: ") as e:
        parse_kinds(arg)
    assert "\n" not in str(e.value)
    assert parse_kinds(None) == ()
    assert [r.kind for r in parse_kinds(" sync , pageable_copy,sync")] == ["sync", "pageable_copy"]


def test_setup_work_before_the_loop_is_no_finding(tmp_path):
    """GPU work before the first phase (model and buffer setup, warm-up) costs the iterations nothing; an
    evaluation between iterations does. --view overlap lists both."""
    from synth import CudaLoop

    from nvtxsim.analysis.findings import OUTSIDE_LOOP, Context, overlap_rows

    b = CudaLoop()
    for _ in range(50):
        b.kernel("setup", 200_000)  # before the loop
    for i in range(10):
        b.phase("iteration", lambda: b.phase("step", lambda: [b.kernel("k", 100_000, 20_000) for _ in range(5)]))
        if i == 4:
            for _ in range(20):
                b.kernel("evaluate", 100_000)  # between iterations
    p = tmp_path / "setup.sqlite"
    b.write(p)
    d = Selection(load(p))
    (f,) = [f for f in analyse(d).items if f.kind == "unattributed_gpu"]
    assert f.phase == OUTSIDE and f.evidence["launches"] == 20
    rows = {r.phase: r.launches for r in overlap_rows(d, Context(d))}
    assert rows == {OUTSIDE: 20, OUTSIDE_LOOP: 50}


def test_block_without_findings_keeps_its_notes(tmp_path):
    """'none' on a capture without a CUDA trace must say that only warm-up, stalls and outliers were looked for."""
    from nvtxsim.reporting.findings import block_lines

    got = _loop(tmp_path, _env_step, "cpu_block", cuda=False)
    lines = block_lines(got)
    notes = " ".join(ln.strip() for ln in lines[1:])
    assert (
        lines[0].startswith("Findings: none")
        and "no CUDA trace" in notes
        and "only warm up and cpu bound and os wait and phase stalls" in notes
    )
    assert all(len(ln) <= 80 for ln in lines)


def test_synchronous_pageable_copy_is_counted_once(tmp_path):
    """A synchronous cudaMemcpy of a large pageable buffer is a pageable_copy, not also a sync (one wait, one
    cost); a small synchronous upload is a sync."""

    def step(b, i):
        b.phase(
            "upload", lambda: (b.kernel("k", 200_000), b.copy(16 << 20, 1, True, 1_500_000, api="cudaMemcpy_v3020"))
        )
        b.phase("small", lambda: (b.kernel("k", 200_000), b.copy(1024, 1, True, 1_000, api="cudaMemcpy_v3020")))

    got = _loop(tmp_path, step)
    assert sorted((f.phase, f.kind) for f in got.items) == [
        ("nvtxsim:small", "sync"),
        ("nvtxsim:upload", "pageable_copy"),
    ]
    assert sum(f.evidence["share_of_time"] for f in got.items) <= 1


def test_a_few_mid_sized_pageable_readbacks_are_syncs(tmp_path):
    """Three 200 KiB .cpu() copies (under the 1 MiB of a copy finding, over the 64 KiB of a scalar) still block: a sync."""

    def step(b, i):
        b.phase("readback", lambda: (b.kernel("k", 500_000), b.copy(200 << 10, 2, True, 20_000)))

    (f,) = _loop(tmp_path, step, iterations=3).items
    assert (f.phase, f.kind) == ("nvtxsim:readback", "sync") and f.evidence["pageable_d2h_copies"] == 3
    assert f.cost_per_iteration_ns >= 450_000
