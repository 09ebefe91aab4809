"""`nvtxsim profile` end to end under the real nsys: export, exit code, capture window, no overwrite."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nvtxsim.capture import nsys as capture

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.nsys,
    pytest.mark.skipif(
        shutil.which("nsys") is None, reason="Nsight Systems (nsys) is not installed; run .ci/install-nsys.sh"
    ),
]

# A small nvtxsim loop: step() at the top of each iteration, the iteration number as payload,
# its argv saved as JSON, a chosen exit code.
LOOP = textwrap.dedent(
    """
    import json, sys, time
    import nvtxsim
    n, code, argv_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    json.dump(sys.argv[4:], open(argv_file, "w"))
    for i in range(n):
        nvtxsim.step()
        with nvtxsim.phase("iteration", payload=i):
            with nvtxsim.phase("sim_step"):
                time.sleep(0.001)
    sys.exit(code)
    """
)


# nsys 2022.4 sometimes fails to set up a session when other nsys sessions start at the same
# moment (seen with parallel test runs): these messages mean "nsys itself did not start".
NSYS_SESSION_FAILURES = ("Local Endpoint is not available", "QuadDCommon::RuntimeException", "\nEnd of file")


def nvtxsim_cli(tmp: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("NVTXSIM_ITERATIONS", None)
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "nvtxsim", *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout
        )
        if not any(m in proc.stdout + proc.stderr for m in NSYS_SESSION_FAILURES):
            break
    return proc


def loop_cmd(tmp: Path, n: int, code: int = 0, *extra: str) -> list[str]:
    prog = tmp / "loop.py"
    prog.write_text(LOOP)
    return [sys.executable, str(prog), str(n), str(code), str(tmp / "argv.json"), *extra]


def iteration_payloads(sqlite_path: Path) -> list[int]:
    con = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT e.int64Value FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
            "WHERE e.eventType = 59 AND COALESCE(e.text, s.value) = 'iteration' ORDER BY e.start"
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows]


def test_profile_exports_reports_and_keeps_exit_code_and_argv(tmp_path):
    extra = ["a b", "--", "$HOME", "*", "'quoted'", "-o", "x"]
    proc = nvtxsim_cli(tmp_path, "profile", "-o", str(tmp_path / "run"), "--", *loop_cmd(tmp_path, 12, 3, *extra))
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert (tmp_path / "run.nsys-rep").is_file() and (tmp_path / "run.sqlite").is_file()
    assert iteration_payloads(tmp_path / "run.sqlite") == list(range(12))
    assert json.loads((tmp_path / "argv.json").read_text()) == extra  # no shell re-quoting
    assert "--sample=none" in proc.stderr and "--export=sqlite" in proc.stderr
    assert "exited with status 3" in proc.stderr
    if "report not available" not in proc.stderr:  # the report pipeline is a separate stage
        assert "iteration" in proc.stdout and "sim_step" in proc.stdout, proc.stderr[-2000:]


def test_window_records_only_iterations_a_to_b(tmp_path):
    proc = nvtxsim_cli(
        tmp_path, "profile", "--iterations", "5:10", "--no-report", "-o", "win", "--", *loop_cmd(tmp_path, 15)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert iteration_payloads(tmp_path / "win.sqlite") == [5, 6, 7, 8, 9]
    assert "--capture-range=nvtx" in proc.stderr and "--nvtx-capture=capture_window@nvtxsim_window" in proc.stderr


def test_window_that_never_opens_is_an_error(tmp_path):
    proc = nvtxsim_cli(tmp_path, "profile", "--iterations", "50:60", "-o", "never", "--", *loop_cmd(tmp_path, 3))
    assert proc.returncode == 2
    assert "never opened" in proc.stderr and "nvtxsim.step()" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "never.sqlite").exists()


def test_window_that_never_opens_keeps_a_failing_exit_code(tmp_path):
    proc = nvtxsim_cli(tmp_path, "profile", "--iterations", "50:60", "-o", "never", "--", *loop_cmd(tmp_path, 3, 4))
    assert proc.returncode == 4 and "never opened" in proc.stderr


def test_existing_output_is_refused_without_force(tmp_path):
    cmd = loop_cmd(tmp_path, 2)
    first = nvtxsim_cli(tmp_path, "profile", "--no-report", "-o", "run", "--", *cmd)
    assert first.returncode == 0, first.stderr[-3000:]
    before = {p: p.stat().st_mtime_ns for p in tmp_path.glob("run.*")}

    again = nvtxsim_cli(tmp_path, "profile", "--no-report", "-o", "run.nsys-rep", "--", *cmd)
    assert again.returncode == 2
    assert again.stderr.strip().startswith("nvtxsim: error:") and "--force" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in tmp_path.glob("run.*")} == before

    forced = nvtxsim_cli(tmp_path, "profile", "--no-report", "--force", "-o", "run", "--", *cmd)
    assert forced.returncode == 0, forced.stderr[-3000:]
    assert "--force-overwrite=true" in forced.stderr
    after = {p: p.stat().st_mtime_ns for p in tmp_path.glob("run.*")}
    assert set(after) == set(before) and all(after[p] > before[p] for p in before)


def test_ensure_sqlite_converts_a_report(tmp_path):
    proc = nvtxsim_cli(tmp_path, "profile", "--no-report", "-o", "conv", "--", *loop_cmd(tmp_path, 4))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (tmp_path / "conv.sqlite").unlink()
    out = capture.ensure_sqlite(tmp_path / "conv.nsys-rep")
    assert out == tmp_path / "conv.sqlite"
    assert iteration_payloads(out) == [0, 1, 2, 3]
    assert capture.ensure_sqlite(tmp_path / "conv.nsys-rep") == out  # fresh export reused
    assert not list(tmp_path.glob(".*tmp"))


def test_machine_formats_go_to_a_file_not_into_the_programs_stdout(tmp_path):
    proc = nvtxsim_cli(tmp_path, "profile", "--format", "json", "-o", "fmt", "--", *loop_cmd(tmp_path, 4))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = tmp_path / "fmt.report.json"
    assert json.loads(report.read_text())["phases"] and "{" not in proc.stdout
    assert f"wrote the json report to {Path('fmt.report.json')}" in proc.stderr
    # --report FILE names it; an existing one is refused before the program runs
    again = nvtxsim_cli(
        tmp_path,
        "profile",
        "--format",
        "html",
        "--report",
        "fmt.report.json",
        "-o",
        "fmt2",
        "--",
        *loop_cmd(tmp_path, 4),
    )
    assert again.returncode == 2 and "already exists" in again.stderr and not (tmp_path / "fmt2.sqlite").exists()


def test_a_program_that_fails_before_any_range_is_blamed_and_leaves_no_files(tmp_path):
    """``profile -- python3 trian.py`` (a typo): the program's exit is the cause, not ``-t nvtx``, and the
    empty capture is removed so the retry needs no --force."""
    for _ in range(2):  # the retry says the same: nothing left behind forces --force
        proc = nvtxsim_cli(tmp_path, "profile", "-o", "x", "--", sys.executable, str(tmp_path / "trian.py"))
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "exited with status 2 before its first NVTX range" in proc.stderr
        assert "-t nvtx" not in proc.stderr and "--force" not in proc.stderr and "Traceback" not in proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_program_that_fails_after_its_ranges_keeps_its_capture(tmp_path):
    proc = nvtxsim_cli(tmp_path, "profile", "--no-report", "-o", "run", "--", *loop_cmd(tmp_path, 3, 5))
    assert proc.returncode == 5 and iteration_payloads(tmp_path / "run.sqlite") == [0, 1, 2]
    assert "exited with status 5" in proc.stderr and "nothing to report" not in proc.stderr


def test_cuda_traced_on_a_machine_without_gpu_does_not_blame_the_trace_flag(tmp_path):
    """``--trace cuda,nvtx`` here (no GPU): the hint names the missing GPU, never ``-t cuda``."""
    if capture.has_gpu():
        pytest.skip("this machine has a GPU: the CUDA tables are written")
    proc = nvtxsim_cli(
        tmp_path, "profile", "--trace", "cuda,nvtx", "--report", "-", "-o", "run", "--", *loop_cmd(tmp_path, 4)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no CUDA trace (the capturing machine reported no GPU)" in proc.stdout, proc.stdout[-2000:]
    assert "-t cuda" not in proc.stdout + proc.stderr
