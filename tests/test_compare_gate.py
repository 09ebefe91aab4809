"""compare's gate on real runs: identical code passes, a planted slowdown fails at its phase; several runs
per side; program order; bad input; the HTML page's verdict line and its clipped axis.

Truth: ``reports/raw/gate-h200/`` holds real H200 captures of one loop (scripts/gpu/gate_runs.sh):
base_* identical code, slow<MS>_* with MS ms busy-waited in ``policy`` every iteration, nothing else changed.
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import re
import shutil
import sqlite3
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from synth import LoopPhase, make_loop_export

from nvtxsim.cli.main import main

GATE = Path(__file__).resolve().parents[1] / "reports" / "raw" / "gate-h200"
PHASES = ["iteration", "sim_step", "render", "camera_readout", "policy", "reward", "reset", "observation"]


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["compare", *args])
    return rc, out.getvalue(), err.getvalue()


def run(name: str) -> str:
    return str(GATE / f"{name}.sqlite.xz")


def regressed(stderr: str) -> set[str]:
    m = re.search(r"regression in \d+ phase\(s\): (.*)", stderr)
    return {p.strip() for p in m.group(1).split(",")} if m else set()


GATE_ARGS = ("--skip-first", "2", "--fail-above", "5", "--resamples", "300", "--no-findings")


def test_identical_runs_pass_several_per_side():
    rc, out, err = cli(
        *map(run, ("base_01", "base_02", "base_03")), "--vs", *map(run, ("base_04", "base_05", "base_06")), *GATE_ARGS
    )
    assert rc == 0, err
    assert "no regression (gate: 5 %)" in out and "REGRESSION" not in out


def test_planted_slowdown_fails_at_its_phase_and_parent_only():
    """0.08 ms in policy (about 9 % of the 0.89 ms iteration): policy and its parent iteration, no sibling."""
    bases = map(run, ("base_07", "base_08", "base_09"))
    rc, out, err = cli(*bases, "--vs", str(GATE / "slow0.08_[123].sqlite.xz"), *GATE_ARGS, "-f", "json")
    assert rc == 1
    got = regressed(err)
    assert "nvtxsim:policy" in got and got <= {"nvtxsim:policy", "nvtxsim:iteration"}
    doc = json.loads(out)
    assert [Path(r["path"]).name for r in doc["new_runs"]] == [
        f"slow0.08_{i}.sqlite.xz" for i in (1, 2, 3)
    ]  # the glob, sorted
    rows = {r["phase"]: r for r in doc["phases"]}
    # The planted 80 µs against a policy of about 150-210 µs: between +35 and +60 % beyond the factor.
    assert 35 < rows["nvtxsim:policy"]["shift_pct"] < 60 and 5 < rows["nvtxsim:policy"]["share_pct"] < 13
    assert rows["nvtxsim:policy"]["noise_pct"] is not None  # measured across the runs


def test_one_run_per_side_is_conservative_and_says_so():
    rc, out, err = cli(run("base_10"), run("base_11"), *GATE_ARGS)
    assert rc == 0, err
    assert "one run per side: run-to-run noise cannot be measured" in out
    rc, out, err = cli(run("base_10"), run("slow0.3_2"), *GATE_ARGS)
    assert rc == 1 and "nvtxsim:policy" in regressed(err)
    assert regressed(err) <= {"nvtxsim:policy", "nvtxsim:iteration"}


def _first_starts(path: Path) -> list[str]:
    """Phase names by their first start, straight from the export's SQL (the independent truth)."""
    raw = path.parent / (path.name + ".sqlite")
    with lzma.open(path) as src, open(raw, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(raw)
    rows = con.execute(
        "SELECT COALESCE(n.text, s.value) AS nm, MIN(n.start) FROM NVTX_EVENTS n "
        "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59 GROUP BY nm ORDER BY MIN(n.start)"
    ).fetchall()
    con.close()
    return [r[0] for r in rows]


def test_by_iteration_is_the_default_and_phases_are_in_program_order(tmp_path):
    shutil.copy(GATE / "base_01.sqlite.xz", tmp_path / "b.xz")
    truth = _first_starts(tmp_path / "b.xz")
    rc, out, err = cli(run("base_01"), run("base_02"), "--resamples", "200", "--no-findings", "-f", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["by"] == "iteration"
    phases = [r["phase"] for r in doc["phases"] if r["status"] == "compared"]
    assert phases == [f"nvtxsim:{n}" for n in truth]
    assert {r["base_n"] for r in doc["phases"] if r["status"] == "compared"} == {80}  # iterations, not instances


def test_bad_input_is_one_line_exit_2(tmp_path):
    lacking = tmp_path / "lacking.sqlite"
    with lzma.open(GATE / "base_02.sqlite.xz") as src, open(lacking, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(lacking)
    con.execute(
        "DELETE FROM NVTX_EVENTS WHERE text = 'reward' OR textId IN (SELECT id FROM StringIds WHERE value = 'reward')"
    )
    con.commit()
    con.close()
    cases = [
        (
            (run("base_01"), str(lacking), "--vs", run("base_03")),
            "BASE runs differ: base_01.sqlite.xz has phase 'nvtxsim:reward' that lacking.sqlite lacks",
        ),
        ((run("base_01"), run("base_02"), run("base_03")), "compare takes BASE NEW (two exports; got 3)"),
        ((run("base_01"), "--vs", str(tmp_path / "none_*.sqlite")), "no file matches this pattern"),
        ((run("base_01"), run("base_02"), "--min-share", "-1"), "--min-share"),
    ]
    for args, want in cases:
        rc, out, err = cli(*args, "--no-findings")
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and want in lines[0] and "Traceback" not in err, (args, err)


class _Page(HTMLParser):
    """The page head's verdict line, the table's (phase, verdict) cells and the figure's clipped markers."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[tuple[tuple[str, ...], str]] = []
        self.clipped_text: list[str] = []
        self.clipped_shapes = 0
        self._in_clip = False

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        self.stack.append(tag)
        if "clipped" in cls.split():
            self.clipped_shapes += tag == "path"
            self._in_clip = tag == "text"

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()
        self._in_clip = False

    def handle_data(self, data):
        if self._in_clip:
            self.clipped_text.append(data)
        self.text.append((tuple(self.stack), data))


def _clip_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Synthetic loop: ``render`` 12× slower (+1100 %, beyond the figure's ±200 % axis), the rest the same."""
    base, new = tmp_path / "b.sqlite", tmp_path / "n.sqlite"
    make_loop_export(
        base,
        [
            LoopPhase("step", 400_000),
            LoopPhase("render", 40_000),
            LoopPhase("policy", 200_000),
            LoopPhase("reward", 60_000),
        ],
        iterations=30,
        seed=1,
        memory=False,
    )
    make_loop_export(
        new,
        [
            LoopPhase("step", 400_000),
            LoopPhase("render", 480_000),
            LoopPhase("policy", 200_000),
            LoopPhase("reward", 60_000),
        ],
        iterations=30,
        seed=2,
        memory=False,
    )
    return base, new


@pytest.mark.parametrize("gate", [None, "5"])
def test_html_verdict_line_agrees_with_rows_and_clipping_is_marked(tmp_path, gate):
    base, new = _clip_pair(tmp_path)
    out = tmp_path / "c.html"
    extra = ("--fail-above", gate) if gate else ()
    rc, _, err = cli(str(base), str(new), "-f", "html", "-o", str(out), "--resamples", "200", "--no-findings", *extra)
    assert rc == (1 if gate else 0), err
    page = _Page()
    page.feed(out.read_text())
    cells = [d.strip() for _, d in page.text if d.strip()]
    # rows: a phase cell followed (later in the row) by its verdict cell
    verdicts = {
        c: cells[i + j]
        for i, c in enumerate(cells)
        if c.startswith("nvtxsim:")
        for j in range(1, 16)
        if i + j < len(cells) and cells[i + j] in ("REGRESSION", "slower", "faster", "no change")
    }
    flagged = {p for p, v in verdicts.items() if v in ("REGRESSION", "slower")}
    assert flagged == {"nvtxsim:render", "nvtxsim:iteration"}  # the truth: render alone changed (and its parent)
    head = next(d for _, d in page.text if d.startswith(("regressed:", "no gate", "no regression")))
    if gate:
        assert head.startswith("regressed: ") and set(head.split(": ", 1)[1].split("; ")[0].split(", ")) == flagged
    else:
        assert head.startswith("no gate") and set(head.split("slower: ")[1].split("; ")[0].split(", ")) == flagged
    # render's +1100 % lies beyond the axis: drawn at the edge and its value written
    assert page.clipped_shapes >= 1 and len(page.clipped_text) == 1
    point = float(re.match(r"\+([0-9.]+) % \(to \+[0-9.]+ %\)$", page.clipped_text[0]).group(1))
    assert 1000 < point < 1200  # 480 µs against 40 µs: +1100 %, the jitter aside


def test_html_page_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no headless Chromium")
    base, new = _clip_pair(tmp_path)
    out = tmp_path / "c.html"
    rc, _, err = cli(str(base), str(new), "-f", "html", "-o", str(out), "--resamples", "200", "--no-findings")
    assert rc == 0, err
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'p'}",
            "--dump-dom",
            out.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    ).stdout.decode()
    assert 'class="clipped"' in dom and "slower: nvtxsim:iteration, nvtxsim:render" in dom


CPU = GATE.parent / "gate-cpu"  # real nsys 2022.4 captures of a planted CPU loop (scripts/bench_gate.py --capture)


def test_real_cpu_captures_identical_pass_planted_fail_at_policy():
    """slow0.1_*: 10 % of the iteration's work more in policy, the rest of the loop unchanged."""
    cpu = lambda *names: [str(CPU / f"{n}.sqlite.xz") for n in names]  # noqa: E731
    rc, _, err = cli(*cpu("base_01", "base_02", "base_03"), "--vs", *cpu("base_04", "base_05", "base_06"), *GATE_ARGS)
    assert rc == 0, err
    rc, _, err = cli(
        *cpu("base_07", "base_08", "base_09"), "--vs", *cpu("slow0.1_01", "slow0.1_02", "slow0.1_03"), *GATE_ARGS
    )
    assert rc == 1 and "nvtxsim:policy" in regressed(err) and regressed(err) <= {"nvtxsim:policy", "nvtxsim:iteration"}


@pytest.mark.parametrize(
    ("dof", "table"), [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (6, 2.447), (10, 2.228), (30, 2.042)]
)
def test_t_quantile_matches_the_table(dof, table):
    """Student-t 0.975 quantiles from the printed table: the gate's interval width with few runs."""
    from nvtxsim.analysis.compare_runs import t_quantile

    assert abs(t_quantile(0.975, dof) - table) / table < 0.003


def test_a_change_in_every_phase_is_the_run_wide_factor_and_one_phase_stands_out():
    """Runs × phases (log ns): the new runs 1.5× slower in every phase, and phase 2 another 1.2× on top."""
    import numpy as np

    from nvtxsim.analysis.compare_runs import run_factors, run_shift

    rng = np.random.default_rng(3)
    base = np.log([100.0, 200.0, 50.0, 80.0, 30.0]) + rng.normal(0, 0.01, (3, 5))
    new = base + np.log(1.5) + rng.normal(0, 0.01, (3, 5))
    new[:, 2] += np.log(1.2)
    usable = np.array([False, True, True, True, True])  # column 0 is the iteration
    fb, fn = run_factors(base, new, usable)
    assert abs(float(np.mean(fn) - np.mean(fb)) - np.log(1.5)) < 0.02
    zb, zn = base - fb[:, None], new - fn[:, None]
    d, lo, hi, sd = run_shift(zb[:, 2], zn[:, 2], 0.95)
    assert abs(np.expm1(d) - 0.2) < 0.03 and lo > 0  # phase 2's own +20 %
    for j in (1, 3, 4):
        d, lo, hi, sd = run_shift(zb[:, j], zn[:, j], 0.95)
        assert lo < 0 < hi  # the others: nothing beyond the factor


def test_runs_without_the_iteration_range_fall_back_to_instances_unless_by_was_asked(tmp_path):
    base, new = tmp_path / "b.sqlite", tmp_path / "n.sqlite"
    for p, seed in ((base, 1), (new, 2)):
        make_loop_export(
            p,
            [LoopPhase("sim", 300_000), LoopPhase("act", 90_000)],
            iterations=12,
            seed=seed,
            key="rollout",
            memory=False,
        )
    rc, out, err = cli(str(base), str(new), "--resamples", "200", "--no-findings", "-f", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["by"] is None and "b.sqlite has no 'iteration' range: compared per range instance" in doc["notes"][0]
    assert {r["phase"]: r["base_n"] for r in doc["phases"]}["nvtxsim:sim"] == 12  # instances
    rc, _, err = cli(str(base), str(new), "--by", "iteration", "--no-findings")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "iteration" in err
    rc, out, err = cli(str(base), str(new), "--by", "rollout", "--no-findings", "--resamples", "200", "-f", "json")
    assert rc == 0 and json.loads(out)["by"] == "rollout"
