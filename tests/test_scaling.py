"""nvtxsim scaling: classes of phases with known costs in N, bad input, formats (synthetic sweeps)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from committed import committed
from synth import LoopPhase, make_loop_export

from nvtxsim.analysis.scaling import PowerFit, classify, fit_power, memory_budget, parse_runs, parse_size, predict
from nvtxsim.cli.main import main
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.scaling import as_dict, scaling_document
from nvtxsim.reporting.scaling import sweep as scaling_sweep

NS = (1024, 2048, 4096, 8192, 16384)
HOSTILE = "<img src=x onerror=alert(1)>|x"


def phases(n: int, hostile: bool = False) -> list[LoopPhase]:
    """A launch-latency floor everywhere: GPU time of the N² phase is flat at small N."""
    return [
        LoopPhase("pairwise", 20_000 + 2e-4 * n * n, 5_000 + 3e-5 * n * n, 4 * n * n),
        LoopPhase("physics", 10_000 + 3 * n, 4_000 + 0.5 * n, 64 * n, per_iteration=2),
        LoopPhase("policy", 30_000, 8_000, 1 << 20),
        LoopPhase(HOSTILE if hostile else "log", 5_000),
    ]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("sweep")
    out = []
    for n in NS:
        p = d / f"run_{n}.sqlite"
        make_loop_export(p, phases(n, hostile=True), iterations=10, seed=n, resident_bytes=1000 * n)
        out.append(f"{p}={n}")
    return out


def run_json(args: list[str], capsys) -> tuple[int, dict]:
    rc = main(["scaling", *args, "-f", "json"])
    return rc, json.loads(capsys.readouterr().out)


def test_classes_of_known_costs(sweep, capsys):
    rc, doc = run_json([*sweep, "--param", "num_envs", "--skip-first", "1"], capsys)
    assert rc == 0
    assert doc["param"] == "num_envs" and doc["values"] == list(map(float, NS))
    by = {p["phase"]: p for p in doc["phases"]}
    pw, ph, po, lg = by["nvtxsim:pairwise"], by["nvtxsim:physics"], by["nvtxsim:policy"], by[f"nvtxsim:{HOSTILE}"]
    assert (pw["cpu_class"], pw["gpu_class"], pw["memory_class"]) == ("superlinear",) * 3
    assert abs(pw["gpu_exponent"] - 2) < 0.2 and abs(pw["memory_exponent"] - 2) < 0.05
    assert (ph["cpu_class"], ph["gpu_class"], ph["memory_class"]) == ("linear",) * 3
    assert (po["cpu_class"], po["gpu_class"], po["memory_class"]) == ("constant",) * 3
    assert (lg["cpu_class"], lg["gpu_class"], lg["memory_class"]) == ("constant", "none", "none")
    # The floor hides the N² phase's growth from a plain log-log slope; the floor fit does not.
    assert pw["fit"]["gpu"]["loglog_slope"] < 1 < pw["gpu_exponent"]
    lo, hi = pw["fit"]["gpu"]["exponent_interval"]
    assert lo <= pw["gpu_exponent"] <= hi
    run = pw["per_run"][-1]
    assert run["value"] == 16384 and run["iterations"] == 9 and run["memory_bytes"] == 4 * 16384**2
    assert run["steps_per_s_cost"] > 0
    assert by["nvtxsim:iteration"]["per_run"][0]["steps_per_s"] > 0
    # Deterministic: same inputs, same output.
    assert run_json([*sweep, "--param", "num_envs", "--skip-first", "1"], capsys)[1]["phases"] == doc["phases"]


def test_predict_and_memory_budget(sweep, capsys):
    rc, doc = run_json([*sweep, "--param", "num_envs", "--predict", "32768", "--memory-budget", "80GiB"], capsys)
    assert rc == 0
    pred = {p["phase"]: p for p in doc["predict"]["phases"]}
    assert pred["nvtxsim:pairwise"]["memory_bytes"] == pytest.approx(4 * 32768**2, rel=0.02)
    assert pred["nvtxsim:policy"]["cpu_ns"] == pytest.approx(30_000, rel=0.05)
    assert doc["predict"]["extrapolated"] is True
    budget = doc["memory_budget"]
    assert budget["budget_bytes"] == 80 << 30
    # peak ≈ 4 N² + 1000 N bytes: 80 GiB fits about 146k envs
    assert 140_000 < budget["largest_value"] < 152_000 and budget["peak_at_largest_bytes"] <= 80 << 30


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "html"])
def test_formats_show_the_classes(sweep, fmt, capsys, tmp_path):
    out = tmp_path / f"s.{fmt}"
    assert main(["scaling", *sweep, "--param", "num_envs", "-f", fmt, "-o", str(out)]) == 0
    text = out.read_text()
    assert "superlinear" in text and "linear" in text and "constant" in text
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == 5 * len(NS)  # (phase, run) rows
        assert {r["gpu_class"] for r in rows if r["phase"] == "nvtxsim:pairwise"} == {"superlinear"}
    if fmt == "html":
        assert "<svg" in text and "<script" not in text and "<img" not in text
        assert "&lt;img src=x onerror=alert(1)&gt;" in text
    if fmt == "table":
        assert "\x1b" not in text


def test_fewer_than_three_runs_shows_the_table_and_refuses_classes(sweep, capsys):
    rc = main(["scaling", *sweep[:2], "--param", "num_envs"])
    cap = capsys.readouterr()
    assert rc == 2
    assert "nvtxsim:pairwise" in cap.out
    assert cap.err.strip().count("\n") == 0 and "at least 3 runs" in cap.err
    rc, doc = run_json([*sweep[:2], "--param", "num_envs"], capsys)
    assert rc == 2 and all(p["cpu_class"] is None for p in doc["phases"])
    assert doc["phases"][0]["fit"]["cpu"]["loglog_slope"] is not None


@pytest.mark.parametrize(
    "args, message",
    [
        (["{0}"], "RUN=VALUE"),
        (["{0}=abc"], "not a number"),
        (["{0}=1024", "{1}=1024"], "given twice"),
        (["{0}=0"], "positive"),
        (["{0}=1", "{1}=2", "{2}=3", "--memory-budget", "lots"], "--memory-budget"),
        (["{0}=1", "{1}=2", "{2}=3", "--predict", "x"], "--predict"),
        (["{0}=1", "{1}=2", "{2}=3", "--memory-budget", "0"], "--memory-budget"),
        (["{0}=1", "{1}=2", "{2}=3", "--memory-budget=-80GiB"], "--memory-budget"),
        (["{0}=1", "{1}=2", "{2}=3", "--memory-budget", "-80GiB"], "--memory-budget"),
        (["{0}=1", "{1}=2", "{2}=3", "--predict", "nan"], "--predict"),
        (["{0}=1", "{1}=2", "{2}=3", "--param", " "], "--param"),
        (["{0}=1", "/nonexistent/x.sqlite=2", "{2}=3"], "no such file"),
    ],
)
def test_bad_input_is_one_line_exit_2(sweep, args, message, capsys):
    paths = [s.rsplit("=", 1)[0] for s in sweep]
    rc = main(["scaling", "--param", "n", *[a.format(*paths) for a in args]])  # a later --param wins
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1


def test_different_phase_sets_name_what_is_missing_where(sweep, tmp_path, capsys):
    other = tmp_path / "other.sqlite"
    make_loop_export(other, [LoopPhase("pairwise", 1e5, 1e4), LoopPhase("reset", 1e4)], iterations=4)
    rc = main(["scaling", *sweep[:2], f"{other}=99999", "--param", "n"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "nvtxsim:reset missing in run_1024.sqlite (n=1024), run_2048.sqlite (n=2048)" in err
    assert "nvtxsim:policy missing in other.sqlite (n=99999)" in err


def test_memory_budget_without_memory_events(tmp_path, capsys):
    runs = []
    for n in (1, 2, 4):
        p = tmp_path / f"r{n}.sqlite"
        make_loop_export(p, [LoopPhase("a", 10_000 * n)], iterations=4, memory=False)
        runs.append(f"{p}={n}")
    rc = main(["scaling", *runs, "--param", "n", "--memory-budget", "1GiB"])
    assert rc == 2 and "--memory" in capsys.readouterr().err
    rc, doc = run_json([*runs, "--param", "n"], capsys)
    assert rc == 0 and doc["phases"][1]["memory_class"] is None and doc["phases"][1]["cpu_class"] == "linear"


def test_parse_size_units():
    assert parse_size("80GiB") == 80 << 30 and parse_size("80G") == 80 << 30 and parse_size("80GB") == 80 * 10**9
    assert (
        parse_size("512MiB") == 512 << 20
        and parse_size("1.5TiB") == int(1.5 * (1 << 40))
        and parse_size("1000") == 1000
    )
    for bad in ("", "GiB", "80 XB", "-1GiB", "80iB"):
        with pytest.raises(NvtxsimError):
            parse_size(bad)


def test_parse_runs_keeps_equals_signs_in_paths():
    (r,) = parse_runs(["a=b.sqlite=12"])
    assert r.path == "a=b.sqlite" and r.value == 12


def test_fit_power_recovers_floor_and_exponent():
    x = np.array([1e3, 2e3, 4e3, 8e3, 1.6e4])
    for k in (0.5, 1.0, 2.0):
        y = 50.0 + 1e-3 * x**k
        p = fit_power(x, y, np.full(5, 0.01))
        assert abs(p.exponent - k) < 0.03 and abs(p.floor - 50) / 50 < 0.05
    assert classify(PowerFit(floor=1.0, coef=1e-9, exponent=2.0, growth=0.1)) == "constant"
    assert classify(PowerFit(floor=0.0, coef=1.0, exponent=0.5, growth=3.0)) == "sublinear"


def test_report_envs_adds_env_steps_per_second(sweep, capsys):
    path = sweep[0].rsplit("=", 1)[0]
    assert main(["report", path, "--envs", "1024", "-f", "json"]) == 0
    view = json.loads(capsys.readouterr().out)["views"]["iterations"]
    rows = {r["phase"]: r for r in view["rows"]}
    it = rows["nvtxsim:iteration"]
    assert it["env_steps_per_s"] == pytest.approx(1024e9 / it["mean_ns"], rel=1e-6)
    pw = rows["nvtxsim:pairwise"]
    assert pw["env_steps_per_s_cost"] == pytest.approx(
        1024e9 / (it["mean_ns"] - pw["mean_ns"]) - 1024e9 / it["mean_ns"], rel=1e-3
    )
    assert any("env-steps/s" in n for n in view["notes"])
    assert main(["report", path, "--envs", "1024"]) == 0
    assert "env-steps/s" in capsys.readouterr().out
    assert main(["report", path, "--envs", "-3"]) == 2


SLEEPER = """
import sys, time
import nvtxsim
n = int(sys.argv[1])
for _ in range(6):
    nvtxsim.step()
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("grows"):
            time.sleep(n * 2e-5)
        with nvtxsim.phase("fixed"):
            time.sleep(0.004)
time.sleep(0.3)  # nsys 2022.4 may drop the last ranges of a process that exits at once
"""


@pytest.mark.nsys
@pytest.mark.skipif(__import__("shutil").which("nsys") is None, reason="Nsight Systems (nsys) is not installed")
def test_profile_sweep_records_each_value_and_prints_the_table(tmp_path, monkeypatch, capsys):
    """The expected-not-required end to end: one capture per value under the real nsys, then the classes."""
    script = tmp_path / "loop.py"
    script.write_text(SLEEPER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    rc = main(
        [
            "profile",
            "--sweep",
            "n=100,400,1600",
            "-o",
            "sw",
            "--format",
            "json",
            "--",
            sys.executable,
            str(script),
            "{n}",
        ]
    )
    assert rc == 0
    assert all((tmp_path / f"sw_{v}.sqlite").exists() for v in (100, 400, 1600))
    doc = json.loads((tmp_path / "sw.report.json").read_text())
    by = {p["phase"]: p for p in doc["phases"]}
    assert (
        doc["param"] == "n"
        and doc["values"] == [100, 400, 1600]
        and set(by) == {"nvtxsim:iteration", "nvtxsim:grows", "nvtxsim:fixed"}
    )
    # Classes of real timings are not asserted (a loaded machine): only that they were computed.
    assert all(p["cpu_class"] in ("constant", "sublinear", "linear", "superlinear") for p in doc["phases"])
    assert all(4 <= r["iterations"] <= 6 for r in by["nvtxsim:grows"]["per_run"])


def test_profile_sweep_bad_input(tmp_path, capsys):
    for args, message in (
        (["--sweep", "n"], "NAME=V1,V2"),
        (["--sweep", "n=1,x"], "not a number"),
        (["--sweep", "n=1,1"], "twice"),
        (["--sweep", "n=1,2,3"], "never mentions {n}"),
    ):
        rc = main(["profile", *args, "-o", str(tmp_path / "s"), "--", "python3", "-c", "pass"])
        err = capsys.readouterr().err
        assert rc == 2 and message in err, (args, err)


# --------------------------------------------------------------------------- the H200 sweep (scripts/gpu/scaling.sh)

GPU_DIR = Path(__file__).resolve().parent / "data" / "gpu" / "scaling"
GPU_NS = (1024, 2048, 4096, 8192, 16384)
GiB = 1 << 30


@pytest.fixture(scope="module")
def h200() -> dict:
    for n in GPU_NS:
        committed(GPU_DIR / f"scaling_{n}.sqlite.gz")
    sc = scaling_sweep([f"{GPU_DIR / f'scaling_{n}.sqlite.gz'}={n}" for n in GPU_NS], "num_envs", skip_first=2)
    sc.prediction = predict(sc, 65536)
    sc.budget = memory_budget(sc, 80 * GiB)
    return as_dict(sc)


def by_run(doc: dict, phase: str) -> list[dict]:
    return next(p["per_run"] for p in doc["phases"] if p["phase"] == phase)


def test_h200_gpu_and_memory_classes(h200):
    """Known costs: pairwise N² (time and memory), physics and reward linear, policy fixed-size."""
    by = {p["phase"]: p for p in h200["phases"]}
    expected = {
        "nvtxsim:pairwise": ("superlinear", 2.0),
        "nvtxsim:physics": ("linear", 1.0),
        "nvtxsim:reward": ("linear", 1.0),
        "nvtxsim:policy": ("constant", 0.0),
    }
    for phase, (cls, k) in expected.items():
        p = by[phase]
        assert (p["gpu_class"], p["memory_class"]) == (cls, cls), phase
        assert abs(p["gpu_exponent"] - k) < 0.15 and abs(p["memory_exponent"] - k) < 0.05, phase
        assert not p["fit"]["gpu"]["class_uncertain"] and not p["fit"]["memory"]["class_uncertain"], phase
    # At 1,024 envs the N² phase sits near its launch floor: the raw log-log slope is well below 2.
    assert by["nvtxsim:pairwise"]["fit"]["gpu"]["loglog_slope"] < 1.8
    assert by["nvtxsim:pairwise"]["per_run"][-1]["memory_bytes"] == pytest.approx(4 * 16384**2, rel=0.01)
    assert by["nvtxsim:physics"]["per_run"][-1]["memory_bytes"] == pytest.approx(16384 * 4096 * 4 * 2, rel=0.01)
    assert all(r["iterations"] == 10 for r in by["nvtxsim:pairwise"]["per_run"])


def test_h200_memory_budget_and_prediction(h200):
    b = h200["memory_budget"]
    # pairwise holds 4·N² bytes (N×N float32) plus 32 KiB per env of state: 80 GiB fit about 142,400 envs.
    assert 138_000 < b["largest_value"] < 147_000 and b["limited_by"] == "nvtxsim:pairwise"
    pred = {p["phase"]: p for p in h200["predict"]["phases"]}
    assert pred["nvtxsim:pairwise"]["memory_bytes"] == pytest.approx(4 * 65536**2, rel=0.02)
    assert pred["nvtxsim:policy"]["gpu_ns"] == pytest.approx(by_run(h200, "nvtxsim:policy")[-1]["gpu_ns"], rel=0.1)


def test_h200_report_memory_view(capsys):
    path = committed(GPU_DIR / "scaling_16384.sqlite.gz")
    assert main(["report", str(path), "--view", "memory", "-f", "json"]) == 0
    rows = {r["phase"]: r for r in json.loads(capsys.readouterr().out)["views"]["memory"]["rows"]}
    assert rows["nvtxsim:pairwise"]["rise_max_bytes"] == pytest.approx(GiB, rel=0.01)
    assert rows["nvtxsim:physics"]["rise_median_bytes"] == pytest.approx(512 << 20, rel=0.01)
    assert abs(rows["nvtxsim:physics"]["net_mean_bytes"]) < (1 << 20)  # frees what it allocates


# --------------------------------------------------------------------------- review fixes (polish)


def test_runs_at_zero_are_fitted_without_nan(tmp_path, capsys, recwarn):
    """A phase with no GPU work and no allocation at small N (a cache hit, a branch): zero runs are
    weighted, not infinitely (which turned the fit's sums into inf/NaN with RuntimeWarnings)."""
    runs = []
    for n in (1024, 2048, 4096, 8192):
        big = n > 2048
        p = tmp_path / f"z{n}.sqlite"
        make_loop_export(
            p,
            [
                LoopPhase("late", 10_000, 3_000 if big else 0, (1 << 20) if big else 0),
                LoopPhase("fixed", 20_000, 5_000, 1 << 20),
            ],
            iterations=5,
            seed=n,
        )
        runs.append(f"{p}={n}")
    rc, doc = run_json([*runs, "--param", "n", "--predict", "16384", "--memory-budget", "1GiB"], capsys)
    assert rc == 0
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    late = next(p for p in doc["phases"] if p["phase"] == "nvtxsim:late")
    assert late["gpu_class"] == "superlinear" and late["memory_class"] == "superlinear"
    assert "left out of the log-log slope" in late["fit"]["gpu"]["note"]
    assert json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("text", ["0", "0.5", "1e400GiB", "1e400"])
def test_parse_size_refuses_zero_and_overflow(text):
    with pytest.raises(NvtxsimError, match="--memory-budget"):
        parse_size(text)


def test_memory_budget_overflow_is_one_line_exit_2(sweep, capsys):
    assert main(["scaling", *sweep[:3], "--param", "n", "--memory-budget", "1e400GiB"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--memory-budget" in err and "internal error" not in err


def test_same_export_twice_is_refused(sweep, capsys):
    path = sweep[0].rsplit("=", 1)[0]
    assert main(["scaling", f"{path}=1", f"{path}=2", sweep[2], "--param", "n"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "given twice" in err


def test_budget_line_is_escaped_and_fits_80_columns(tmp_path):
    """The budget line names the limiting phase (text from the export): escaped per format, wrapped on a terminal."""
    from nvtxsim.reporting.renderers import render

    runs = []
    evil = "<script>x</script>\u202eevil\nname"
    for n in (1, 2, 4):
        p = tmp_path / f"e{n}.sqlite"
        make_loop_export(p, [LoopPhase(evil, 1000 * n, 500 * n, 1000 * n * n)], iterations=4, seed=n)
        runs.append(f"{p}={n}")
    sc = scaling_sweep(runs, "n")
    sc.budget = memory_budget(sc, 1 << 20)
    assert sc.budget["limited_by"].endswith(evil)
    table = render(scaling_document(sc), "table", width=80)
    assert all(len(line) <= 80 for line in table.splitlines())
    assert "\u202e" not in table and "<script>x</script>\\u202eevil" in table
    whole = render(scaling_document(sc), "table")
    assert "\u202e" not in whole and "\\u202eevil\\x0aname" in whole
    md = render(scaling_document(sc), "markdown")
    assert "<script" not in md and "\u202e" not in md
    page = render(scaling_document(sc), "html")
    assert "<script" not in page and f"<bdi>nvtxsim:{evil.replace('<', '&lt;').replace('>', '&gt;')}</bdi>" in page


def test_classes_do_not_depend_on_the_parameters_unit(sweep, capsys):
    """N^k is fitted relative to the largest value: tiny or huge units (1e-90 × N) give the same
    classes and the same budget in those units (they used to underflow to 'constant' or overflow)."""
    rc, doc = run_json([*sweep, "--param", "n", "--memory-budget", "80GiB"], capsys)
    scaled = [f"{s.rsplit('=', 1)[0]}={int(s.rsplit('=', 1)[1])}e-90" for s in sweep]
    rc2, tiny = run_json([*scaled, "--param", "n", "--memory-budget", "80GiB"], capsys)
    assert rc == rc2 == 0
    classes = lambda d: [(p["cpu_class"], p["gpu_class"], p["memory_class"], p["gpu_exponent"]) for p in d["phases"]]  # noqa: E731
    assert classes(tiny) == classes(doc)
    assert tiny["memory_budget"]["largest_value"] == pytest.approx(
        doc["memory_budget"]["largest_value"] * 1e-90, rel=1e-3
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--predict", "1e300"], "out of range"),
        (["--predict", "1e9"], "1000× beyond"),
        (["--predict", "1"], "1000× beyond"),
    ],
)
def test_predict_far_outside_the_sweep_is_refused(sweep, args, message, capsys):
    assert main(["scaling", *sweep, "--param", "n", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "internal error" not in err


def test_default_key_is_the_reports_step_where_steps_were_recorded(tmp_path, capsys):
    """Runs of an instrumented RL runner are keyed on ``step``, as the report keys them; ``--by`` still overrides."""
    runs = []
    for n in (1, 2, 4):
        p = tmp_path / f"rl{n}.sqlite"
        make_loop_export(
            p,
            [LoopPhase("policy", 1000 * n, 500 * n), LoopPhase("iteration", 3000 * n)],
            iterations=4,
            seed=n,
            key="step",
        )
        runs.append(f"{p}={n}")
    rc, doc = run_json([*runs, "--param", "n"], capsys)
    assert rc == 0 and doc["key"] == "nvtxsim:step"
    assert {p["phase"] for p in doc["phases"]} == {"nvtxsim:step", "nvtxsim:policy", "nvtxsim:iteration"}
    rc, doc = run_json([*runs, "--param", "n", "--by", "iteration"], capsys)
    assert rc == 0 and doc["key"] == "nvtxsim:iteration"


# --------------------------------------------------------------------------- fits that admit doubt (issue 22)


def _samples(values, rng, spread=0.02, n=30):
    return [v * np.exp(rng.normal(0, spread, n)) for v in values]


def test_an_exponent_at_the_grids_bound_is_uncertain_and_shown_with_its_slope():
    """All the growth in the last run: the fit asks for k > 3 and gets the grid's end. That is a
    bound, not an estimate: marked, with the log-log slope beside it (as numpy.polyfit gives it)."""
    from nvtxsim.analysis.fits import fit_metric
    from nvtxsim.reporting.scaling import _exp

    x = np.array([1024.0, 4096.0, 16384.0, 49152.0])
    rng = np.random.default_rng(1)
    f = fit_metric("cpu", x, _samples([100.0, 100.0, 101.0, 200.0], rng), np.random.default_rng(0))
    assert f.cls == "superlinear" and f.exponent == 3.0
    assert f.uncertain and "upper bound" in f.doubt and f.as_dict()["exponent_at_bound"] == "upper"
    assert _exp(f) == f"≥3.00 (slope {f.slope:.2f})"
    assert f.slope == pytest.approx(np.polyfit(np.log(x), np.log(f.centres), 1, w=1 / np.array(f.rel))[0])


def test_a_zero_width_bootstrap_interval_is_uncertain_but_agreeing_runs_are_not():
    """One sample per run: every resample is the same, the bootstrap interval has no width and says
    nothing. The same values as exact per-run numbers (memory), left out one run at a time, agree."""
    from nvtxsim.analysis.fits import fit_exact, fit_metric

    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = 10.0 * x
    f = fit_metric("gpu", x, [np.array([v]) for v in y], np.random.default_rng(0))
    assert f.cls == "linear" and f.exponent_low == f.exponent_high and "zero width" in f.doubt
    m = fit_exact("memory", x, y)
    assert m.cls == "linear" and abs(m.exponent - 1) < 1e-3 and m.interval_from == "runs" and not m.uncertain


def test_a_well_measured_exponent_is_certain_and_not_rounded_to_the_grid():
    from nvtxsim.analysis.fits import fit_metric

    x = np.array([1024.0, 2048.0, 4096.0, 8192.0])
    rng = np.random.default_rng(2)
    f = fit_metric("gpu", x, _samples(3e-3 * x**1.5, rng, spread=0.01), np.random.default_rng(0))
    assert f.cls == "superlinear" and not f.uncertain and f.doubt == ""
    assert f.exponent_low < f.exponent < f.exponent_high and abs(f.exponent - 1.5) < 0.02
    assert f.exponent_high - f.exponent_low < 0.05


def test_a_single_run_is_one_line_exit_2(sweep, capsys):
    assert main(["scaling", sweep[0], "--param", "n"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and "two values or more" in cap.err
    assert main(["profile", "--sweep", "n=5", "-o", "s", "--", "python3", "x.py", "{n}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "two or more" in err


def test_runs_missing_memory_events_are_one_line_exit_2(sweep, tmp_path, capsys):
    bare = tmp_path / "bare.sqlite"
    make_loop_export(bare, phases(512, hostile=True), iterations=10, seed=1, memory=False)
    assert main(["scaling", *sweep[:2], f"{bare}=512", "--param", "n"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GPU memory events missing in bare.sqlite (n=512)" in err


def test_a_note_about_every_run_is_said_once(sweep):
    """A domain none of the runs has: the widening note once, for every run, not once per run."""
    sc = scaling_sweep(sweep, "num_envs", domain="gone")
    widened = [n for n in sc.notes if "gone" in n]
    assert len(widened) == 1 and widened[0].startswith("every run: ") and "run_1024" not in widened[0]
    some = scaling_sweep(sweep[:2], "num_envs", domain="gone")  # two runs: the same, said once
    assert len([n for n in some.notes if "gone" in n]) == 1


def test_a_phase_that_runs_in_some_iterations_is_scaled_by_what_it_costs_when_it_runs(tmp_path, capsys):
    """A reset every third step: the median over all iterations is 0 (it used to read as no work);
    the samples are the iterations in which it ran, and how often that is goes beside them."""
    import sqlite3

    runs = []
    for n in (1024, 2048, 4096, 8192):
        p = tmp_path / f"rare{n}.sqlite"
        make_loop_export(
            p, [LoopPhase("rare", 10 * n, 4 * n), LoopPhase("every", 20_000, 5_000)], iterations=12, seed=n
        )
        with sqlite3.connect(p) as con:
            rare = con.execute("SELECT id FROM StringIds WHERE value = 'rare'").fetchone()[0]
            ids = [r[0] for r in con.execute("SELECT rowid FROM NVTX_EVENTS WHERE textId = ? ORDER BY start", (rare,))]
            con.executemany("DELETE FROM NVTX_EVENTS WHERE rowid = ?", [(i,) for k, i in enumerate(ids) if k % 3])
        runs.append(f"{p}={n}")
    rc, doc = run_json([*runs, "--param", "n"], capsys)
    assert rc == 0
    rare = next(p for p in doc["phases"] if p["phase"] == "nvtxsim:rare")
    assert rare["cpu_class"] == "linear" and abs(rare["cpu_exponent"] - 1) < 0.1
    for r, n in zip(rare["per_run"], (1024, 2048, 4096, 8192)):
        assert r["ran_in_iterations"] == pytest.approx(4 / 12) and r["cpu_ns"] == pytest.approx(10 * n, rel=0.1)


def test_a_phase_inside_the_iterations_in_some_runs_only_is_scaled_per_call(tmp_path, capsys):
    """At the smallest N the phase ran only after the loop (moved there): its iterations do not
    compare across the runs, its calls do; every run is then sampled per call, with a note."""
    import sqlite3

    runs = []
    for n in (1024, 2048, 4096):
        p = tmp_path / f"mixed{n}.sqlite"
        make_loop_export(p, [LoopPhase("late", 10 * n), LoopPhase("every", 20_000)], iterations=6, seed=n)
        if n == 1024:
            with sqlite3.connect(p) as con:
                late = con.execute("SELECT id FROM StringIds WHERE value = 'late'").fetchone()[0]
                end = con.execute("SELECT MAX(end) FROM NVTX_EVENTS").fetchone()[0]
                con.execute(
                    "UPDATE NVTX_EVENTS SET start = start + ?, end = end + ? WHERE textId = ?", (end, end, late)
                )
        runs.append(f"{p}={n}")
    rc, doc = run_json([*runs, "--param", "n"], capsys)
    assert rc == 0 and any("scaled per call: nvtxsim:late" in n for n in doc["notes"])
    late = next(p for p in doc["phases"] if p["phase"] == "nvtxsim:late")
    assert late["per"] == "call" and late["cpu_class"] == "linear"
    assert [r["calls"] for r in late["per_run"]] == [6, 6, 6]
    assert [r["cpu_ns"] for r in late["per_run"]] == pytest.approx([10240, 20480, 40960], rel=0.1)
