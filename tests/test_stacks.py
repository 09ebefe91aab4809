"""The CPU side on planted workloads, and the hot Python functions per phase (``--stacks``).

``tests/data/cpu/cpu_planted`` is a real nsys 2022.4 capture (``-t nvtx,osrt``) of scripts/cpu_workload.py with
its stacks sidecar and its truth: a Python loop (reward), a hot helper two calls deep (observation), a sleep
(reset), file I/O (save), a lock held by another thread (policy). Each must be named at its phase, the helper by
its function. The sampler itself is tested in real subprocesses: with and without a profiler, forked, refused a
file that is not its own, unable to start; and the sidecar reader on broken files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nvtxsim.analysis.findings import analyse
from nvtxsim.analysis.selection import Selection
from nvtxsim.analysis.stacks import hot_functions, read_stacks, sidecar_for
from nvtxsim.export.reader import load
from tests.nsys_util import needs_nsys

DATA = Path(__file__).parent / "data" / "cpu"
REPO = Path(__file__).resolve().parents[1]
PLANTED = DATA / "cpu_planted.sqlite.xz"


def _truth() -> dict:
    return json.loads((DATA / "cpu_planted.truth.txt").read_text().split("truth:", 1)[1])


@pytest.fixture(scope="module")
def planted():
    got = analyse(Selection(load(PLANTED)))
    return {(f.phase, f.kind): f for f in got.items}


def test_planted_python_loops_are_cpu_bound_at_their_phase(planted):
    truth = _truth()
    for phase, ms in truth["cpu_bound"].items():
        f = planted[(f"nvtxsim:{phase}", "cpu_bound")]
        assert 0.9 * ms * 1e6 <= f.cost_ns <= 1.1 * ms * 1e6 + 2e6, (phase, f.cost_ns, ms)  # the loop's measured time
    assert {p for p, k in planted if k == "cpu_bound"} == {f"nvtxsim:{p}" for p in truth["cpu_bound"]}
    hot = planted[("nvtxsim:observation", "cpu_bound")].evidence["hot_function"]  # from the sidecar beside it
    assert hot["function"] == truth["hot_function"]["function"] and hot["self_share"] >= 0.8
    assert planted[("nvtxsim:reward", "cpu_bound")].evidence["hot_function"]["function"] == "_spin_python"


def test_planted_os_waits_are_named_with_category_and_iterations(planted):
    """The fsync in every iteration is save's os_wait; the sleeps and the lock, in a few iterations, are stalls
    of their phase that name the wait (category, calls, iterations)."""
    truth = _truth()["os_wait"]
    save = planted[("nvtxsim:save", "os_wait")]
    assert save.evidence["os_wait_category"] == truth["save"]["category"] and "fsync" in save.evidence["os_wait_top"]
    for phase in ("reset", "policy"):
        t = truth[phase]
        f = planted[(f"nvtxsim:{phase}", "phase_stalls")]
        assert f.evidence["cause"] == "os_wait" and f.evidence["os_wait_category"] == t["category"], phase
        assert f.evidence["iterations"] == t["iterations"], phase
        n = len(t["iterations"])
        assert n * t["ms"] * 0.95e6 <= f.evidence["os_wait_categories"][t["category"]] <= n * (t["ms"] + 10) * 1e6
        assert (f"nvtxsim:{phase}", "os_wait") not in planted  # one finding per wait
    assert "clock_nanosleep" in planted[("nvtxsim:reset", "phase_stalls")].evidence["os_wait_top"]
    assert "sem_wait" in planted[("nvtxsim:policy", "phase_stalls")].evidence["os_wait_top"]
    assert not [k for _, k in planted if k == "outlier_iterations"]


def test_planted_hot_helper_is_named_by_its_function():
    truth = _truth()["hot_function"]
    st = read_stacks(sidecar_for(PLANTED))
    assert st is not None and not st.problems and st.mechanism == "sigprof"
    rows = [r for r in hot_functions(st, 10) if r.phase == f"nvtxsim:{truth['phase']}"]
    top = rows[0]
    assert top.function == truth["function"] and top.self_share >= 0.8 and top.location.endswith("cpu_workload.py:52")
    callers = {r.function: r for r in rows}
    assert all(callers[c].total_share >= 0.8 and callers[c].self_share == 0 for c in truth["callers"])
    assert [r.function for r in rows[1:3]] == truth["callers"]  # its callers next, nearest first
    reward = [r for r in hot_functions(st, 10) if r.phase == "nvtxsim:reward"]
    assert reward[0].function == "_spin_python"


RAW_PYSAMPLE = REPO / "reports" / "raw" / "h200-session4" / "python_sampling.sqlite.xz"


@pytest.mark.skipif(not RAW_PYSAMPLE.exists(), reason="the nsys 2025.3 Python-sampling export is not in this checkout")
def test_nsys_python_sampling_leaves_the_python_frames_out_of_its_callchains(tmp_path):
    """Why nvtxsim samples itself (docs/cpu.md): nsys 2025.3.2 --python-sampling=true names the workload's functions
    in StringIds, but its sampled callchains hold native frames only."""
    import lzma
    import sqlite3

    db = tmp_path / "ps.sqlite"
    db.write_bytes(lzma.decompress(RAW_PYSAMPLE.read_bytes()))
    con = sqlite3.connect(db)
    ids = [i for (i,) in con.execute("SELECT id FROM StringIds WHERE value IN ('hot_helper', 'middle')")]
    assert len(ids) == 2
    marks = ",".join("?" * len(ids))
    assert con.execute(f"SELECT count(*) FROM SAMPLING_CALLCHAINS WHERE symbol IN ({marks})", ids).fetchone()[0] == 0
    frames = {
        v for (v,) in con.execute("SELECT s.value FROM SAMPLING_CALLCHAINS c JOIN StringIds s ON s.id = c.symbol")
    }
    assert "_PyEval_EvalFrameDefault" in frames and len(frames) > 100
    con.close()


def test_stacks_view_in_the_report(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(PLANTED), "--view", "stacks", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)["views"]["stacks"]
    first = {}
    for r in view["rows"]:
        first.setdefault(r["phase"], r["function"])
    assert first["nvtxsim:observation"] == "_hot_norm" and first["nvtxsim:reward"] == "_spin_python"


def test_stacks_command_reads_a_sidecar_without_an_export(tmp_path):
    """``nvtxsim stacks FILE``: the same table from the sidecar alone (a run without nsys); bad files exit 2, one line."""

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "nvtxsim", "stacks", *args], capture_output=True, text=True, cwd=REPO
        )

    out = cli(str(sidecar_for(PLANTED)), "-f", "json", "--top", "3")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    obs = [r["function"] for r in doc["rows"] if r["phase"] == "nvtxsim:observation"]
    assert obs == ["_hot_norm", "_features", "observe"] and doc["processes"] == 1
    for bad in (tmp_path / "absent.stacks.jsonl", DATA / "README.md"):
        got = cli(str(bad))
        assert got.returncode == 2 and got.stderr.count("\n") == 1 and "Traceback" not in got.stderr


HOT = """
import os, sys, time, nvtxsim
def helper(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def middle(n):
    return helper(n)
for it in range(40):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("compute"):
            middle(250000)
        with nvtxsim.phase("wait"):
            time.sleep(0.002)
    if it == 20 and sys.argv[1:] == ["fork"]:
        pid = os.fork()
        if pid == 0:
            with nvtxsim.phase("child_work"):
                middle(300000)
            sys.exit(0)
        os.waitpid(pid, 0)
print("done")
"""


def _run(tmp_path, source, env, *args):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, str(prog), *args], capture_output=True, text=True, cwd=tmp_path, env=full, timeout=120
    )


def test_sampler_without_a_profiler_names_the_helper(tmp_path):
    out = _run(tmp_path, HOT, {"NVTXSIM_STACKS": "1"})
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr
    st = read_stacks(tmp_path / "nvtxsim.stacks.jsonl")
    assert st is not None and st.processes == 1 and st.samples.get("nvtxsim:compute", 0) >= 5, st
    rows = [r for r in hot_functions(st) if r.phase == "nvtxsim:compute"]
    assert rows[0].function == "helper" and rows[0].self_share >= 0.7
    assert {r.function for r in rows} >= {"helper", "middle"}


def test_nvtxsim_run_samples_the_program_it_runs(tmp_path):
    """``python -m nvtxsim run`` runs the script in its own process: it is sampled, nvtxsim's runner frames are not."""
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(HOT))
    env = {**os.environ, "PYTHONPATH": str(REPO), "NVTXSIM_STACKS": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", str(prog)], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr
    st = read_stacks(tmp_path / "nvtxsim.stacks.jsonl")
    assert st is not None and st.processes == 1
    rows = [r for r in hot_functions(st, 50) if r.phase == "nvtxsim:compute"]
    assert rows[0].function == "helper" and not [r for r in rows if "/nvtxsim/" in r.location]


@needs_nsys
def test_profile_stacks_end_to_end(tmp_path):
    """``nvtxsim profile --stacks`` under the real nsys: the sidecar lands beside the export and the report finds it."""
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(HOT))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NVTXSIM_STACKS", None)
    cmd = [sys.executable, "-m", "nvtxsim", "profile", "--stacks", "--trace", "nvtx,osrt", "-o", "run", "--no-report"]
    out = subprocess.run([*cmd, "--", sys.executable, str(prog)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "run.stacks.jsonl").exists()
    rep = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", "run.sqlite", "--view", "stacks", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    rows = json.loads(rep.stdout)["views"]["stacks"]["rows"]
    assert next(r for r in rows if r["phase"] == "nvtxsim:compute")["function"] == "helper"
    again = subprocess.run(
        [*cmd, "--", sys.executable, str(prog)], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert again.returncode == 2 and "already exists" in again.stderr  # the first run's outputs are kept


def test_a_phase_on_another_thread_is_sampled_there(tmp_path):
    """The work runs in a phase of a worker thread while the main thread only waits for it (no phase of its own)."""
    source = """
    import threading, nvtxsim
    def helper(n):
        s = 0
        for i in range(n):
            s += i * i
        return s
    def work():
        for _ in range(30):
            with nvtxsim.phase("worker_step"):
                helper(250000)
    t = threading.Thread(target=work)
    t.start(); t.join()
    print("done")
    """
    out = _run(tmp_path, source, {"NVTXSIM_STACKS": "1"})
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr
    st = read_stacks(tmp_path / "nvtxsim.stacks.jsonl")
    assert st is not None and st.samples.get("nvtxsim:worker_step", 0) >= 5, st
    rows = [r for r in hot_functions(st) if r.phase == "nvtxsim:worker_step"]
    assert rows[0].function == "helper" and rows[1].function == "work"


def test_a_forked_child_writes_its_own_samples(tmp_path):
    path = tmp_path / "s.stacks.jsonl"
    out = _run(tmp_path, HOT, {"NVTXSIM_STACKS": str(path)}, "fork")
    assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 2 and len({x["pid"] for x in lines}) == 2
    child = next(x for x in lines if "child_work" in x["phases"])
    assert "compute" not in child["phases"]  # the parent's counts are not the child's


def test_sampler_never_overwrites_a_file_of_the_user(tmp_path):
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    out = _run(tmp_path, HOT, {"NVTXSIM_STACKS": str(mine)})
    assert out.returncode == 0 and out.stdout.strip() == "done"
    assert mine.read_text() == "my notes\n" and "is not a stacks file" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_sampler_that_cannot_start_is_one_line_and_the_program_runs(tmp_path):
    """No SIGPROF timer (started off the main thread) and no thread either: one line, the program runs on."""
    source = """
    import threading
    def boom(self):
        raise RuntimeError("can't start new thread")
    import nvtxsim
    from nvtxsim.emit import stacks
    done = []
    def start():
        original = threading.Thread.start
        threading.Thread.start = boom
        try:
            done.append(stacks.start("s.stacks.jsonl"))
        finally:
            threading.Thread.start = original
    t = threading.Thread(target=start)
    t.start(); t.join()
    with nvtxsim.phase("work"):
        sum(range(1000))
    print("ok", done)
    """
    out = _run(tmp_path, source, {})
    assert out.returncode == 0 and out.stdout.strip() == "ok [False]", out.stderr
    assert out.stderr.count("\n") == 1 and "did not start" in out.stderr
    assert not (tmp_path / "s.stacks.jsonl").exists()


def test_broken_sidecars_are_one_note_each(tmp_path):
    p = tmp_path / "run.stacks.jsonl"
    good = {
        "format": "nvtxsim-stacks/1",
        "pid": 1,
        "hz": 200,
        "mechanism": "sigprof",
        "functions": [["a.py", 3, "f"]],
        "phases": {"step": {"samples": 10, "self": {"0": 6, "7": 4}, "total": {"0": 10}}},
    }
    p.write_text(json.dumps(good) + "\nnot json\n" + json.dumps({"format": "other"}) + "\n")
    st = read_stacks(p)
    assert st is not None and st.samples == {"nvtxsim:step": 10}
    rows = hot_functions(st)
    assert [(r.function, r.self_share) for r in rows] == [("f", 0.6), ("(unknown function #7)", 0.4)]
    assert any("2 of 3 lines are not stack records" in x for x in st.problems)
    assert any("do" in x and "not list" in x for x in st.problems)
    assert read_stacks(tmp_path / "absent.stacks.jsonl") is None
    assert sidecar_for("x/run.sqlite.xz") == Path("x/run.stacks.jsonl")
    assert sidecar_for("run.nsys-rep") == Path("run.stacks.jsonl")


def test_report_without_sidecar_says_how_to_get_one(tmp_path):
    from tests.synth import CudaLoop

    b = CudaLoop(cuda=False)
    for _ in range(3):
        b.phase("iteration", lambda: b.cpu(1000))
    path = tmp_path / "run.sqlite"
    b.write(path)
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "--view", "stacks", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)["views"]["stacks"]
    assert view["rows"] == [] and any("profile --stacks" in n for n in view["notes"])


def test_names_in_a_sidecar_are_data_in_every_format(tmp_path):
    """Phase and function names from the sidecar reach the terminal, markdown and HTML as text, never as markup."""
    from tests.synth import CudaLoop

    hostile = "\x1b[31mred|*x*<b>名前"
    b = CudaLoop(cuda=False)
    b.phase(hostile, lambda: b.cpu(1000))
    path = tmp_path / "run.sqlite"
    b.write(path)
    rec = {
        "format": "nvtxsim-stacks/1",
        "pid": 1,
        "hz": 200,
        "functions": [[f"/x/{hostile}.py", 1, hostile]],
        "phases": {hostile: {"samples": 3, "self": {"0": 3}, "total": {"0": 3}}},
    }
    (tmp_path / "run.stacks.jsonl").write_text(json.dumps(rec) + "\n")

    def report(*extra):
        cmd = [sys.executable, "-m", "nvtxsim", "report", str(path), "--view", "stacks", *extra]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout

    terminal = report()
    assert "\x1b" not in terminal and "\\x1b[31m" in terminal  # shown, escaped
    report("-f", "html", "-o", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<b>名前" not in page and "&lt;b&gt;名前" in page


def test_profile_stacks_sets_the_sidecar_and_refuses_an_old_one(tmp_path):
    from nvtxsim.capture import nsys as capture
    from nvtxsim.capture.sidecars import fresh_stacks_file
    from nvtxsim.errors import NvtxsimError

    req = capture.ProfileRequest(command=["python3"], output=tmp_path / "run", stacks=True)
    env = capture.profile_env(req, {})
    assert env["NVTXSIM_STACKS"] == str((tmp_path / "run.stacks.jsonl").absolute())
    old = tmp_path / "run.stacks.jsonl"
    old.write_text('{"format":"nvtxsim-stacks/1"}\n')
    with pytest.raises(NvtxsimError, match="already exists"):
        fresh_stacks_file(old, force=False)
    fresh_stacks_file(old, force=True)
    assert not old.exists()
    old.write_text("someone else's file\n")
    with pytest.raises(NvtxsimError, match="not a stacks file"):
        fresh_stacks_file(old, force=True)
    assert old.read_text() == "someone else's file\n"
