"""What the report says about runs that went wrong, from real nsys 2022.4 captures, and the guarantee
that reading never modifies an export.

- A process killed (SIGKILL) or exiting (os._exit) inside phases: nsys 2022.4 writes each range still
  open with end = capture end (ANALYSIS_DETAILS.duration); the report flags exactly those as unclosed.
- A mismatched range_pop: refused by nvtxsim, recorded as a mark, counted by the report.
- NVTX failing inside the program: the program finishes, one stderr line, the report flags what was
  left open.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_corpus import REAL_SEED, real_export
from nsys_util import needs_nsys
from reliability_util import capture, load, nesting_violations, program_lines, report_cli

DIE_INSIDE = r"""
import os, signal, sys, threading, time
import nvtxsim

def flush_nvtx_buffer():
    # nsys 2022.4 loses the unflushed tail of a thread's NVTX buffer when the process dies abruptly,
    # whatever the delay (seen: the last pushes missing in 2 of 3 runs after 1 s). Marks after the
    # pushes fill the buffer so the pushes under test are flushed; marks are not ranges.
    for _ in range(20000):
        nvtxsim.mark("flush")

def side():
    with nvtxsim.phase("render"):
        with nvtxsim.phase("camera_readout"):
            flush_nvtx_buffer()
            time.sleep(30)

for i in range(5):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("sim_step"):
            pass
nvtxsim.range_pop()                      # mismatched: nothing open
with nvtxsim.phase("reward"):
    nvtxsim.range_pop()                  # mismatched: would end "reward"
threading.Thread(target=side, daemon=True).start()
with nvtxsim.phase("iteration"):
    with nvtxsim.phase("sim_step"):
        with nvtxsim.phase("policy"):
            flush_nvtx_buffer()
            time.sleep(1.0)  # nsys collects NVTX events periodically (docs/reliability.md §3): let it see the last ones
            print("RESULT dying", flush=True)
            if sys.argv[1] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
"""


@needs_nsys
@pytest.mark.nsys
@pytest.mark.parametrize("how", ["kill", "exit"])
def test_process_dying_inside_phases_is_flagged(tmp_path, how):
    path, log = capture(tmp_path, DIE_INSIDE, name=how, args=(how,))
    assert program_lines(log, "RESULT") == ["dying"], log[-3000:]
    ex = load(path)
    r = ex.ranges
    assert ex.capture_end is not None
    open_names = collections.Counter(r.name[r.unclosed].tolist())
    assert open_names == {"iteration": 1, "sim_step": 1, "policy": 1, "render": 1, "camera_readout": 1}
    assert (r.end[r.unclosed] == ex.capture_end).all()  # what nsys 2022.4 writes for them
    closed = collections.Counter(r.name[~r.unclosed].tolist())
    assert closed == {"iteration": 5, "sim_step": 5, "reward": 1}
    assert not nesting_violations(ex)
    proc = report_cli("report", str(path), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    by = {p["name"]: p for p in rep["phases"]}
    assert by["iteration"]["unclosed"] == 1 and by["iteration"]["instances"] == 6
    assert by["camera_readout"]["unclosed"] == 1 and by["reward"]["unclosed"] == 0
    assert any("5 range(s) never ended" in w for w in rep["warnings"]), rep["warnings"]
    assert any("2 unmatched range_pop()" in w for w in rep["warnings"]), rep["warnings"]
    table = report_cli("report", str(path))
    assert table.returncode == 0 and "never ended" in table.stdout and "Traceback" not in table.stderr


FAILING_NVTX = r"""
import sys
import nvtxsim
from nvtxsim.emit import ranges as emit

target = sys.argv[1]
real = getattr(emit, target)
calls = [0]
def flaky(*args):
    calls[0] += 1
    if calls[0] > 50:
        raise RuntimeError("injected NVTX failure")
    return real(*args)
setattr(emit, target, flaky)

@nvtxsim.phase("reward")
def reward(i):
    return i

done = []
for i in range(40):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("sim_step"):
            done.append(reward(i))
print("RESULT", len(done), nvtxsim.is_recording(), flush=True)
"""


@needs_nsys
@pytest.mark.nsys
@pytest.mark.parametrize("target", ["_push", "_pop"])
def test_nvtx_failure_under_nsys(tmp_path, target):
    """The 51st push (or pop) raises: the loop completes, one stderr line, the export is consistent."""
    path, log = capture(tmp_path, FAILING_NVTX, name="fail" + target, args=(target,))
    assert program_lines(log, "RESULT") == ["40 False"], log[-3000:]
    assert sum("NVTX call failed" in line for line in log.splitlines()) == 1, log[-3000:]
    ex = load(path)
    r = ex.ranges
    assert not nesting_violations(ex)
    counts = collections.Counter(r.name.tolist())
    if target == "_push":
        # pushes 1..50: 16 full iterations (3 pushes each), then iteration and sim_step of the 17th;
        # push 51 (reward) fails, ranges go off, so the two enclosing ranges are never popped
        assert counts == {"iteration": 17, "sim_step": 17, "reward": 16}
        assert collections.Counter(r.name[r.unclosed].tolist()) == {"iteration": 1, "sim_step": 1}
    else:
        # pops 1..50: 16 full iterations (3 pops each), then reward and sim_step of the 17th;
        # pop 51 (its iteration) fails, so that iteration stays open
        assert counts == {"iteration": 17, "sim_step": 17, "reward": 17}
        assert collections.Counter(r.name[r.unclosed].tolist()) == {"iteration": 1}
    assert (r.end[r.unclosed] == ex.capture_end).all()
    proc = report_cli("report", str(path), "-f", "json")
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- reading never modifies


def fingerprint(directory: Path) -> dict[str, tuple[str, int, int]]:
    """Name → (sha256, mtime_ns, mode) of every file in ``directory``."""
    out = {}
    for p in sorted(directory.iterdir()):
        if p.is_file():
            st = p.stat()
            out[p.name] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_mode)
    return out


def report_all_ways(path: Path) -> None:
    for args in (["-f", "json", "--domain", "all"], ["-f", "csv"], ["--view", "all"], ["-f", "html"]):
        proc = report_cli("report", str(path), *args)
        assert proc.returncode == 0, (args, proc.stderr)


def test_reading_never_modifies_sqlite_or_gz(tmp_path):
    d = tmp_path / "exports"
    d.mkdir()
    real_export(d / "run.sqlite")
    shutil.copyfile(REAL_SEED, d / "run2.sqlite.gz")
    os.utime(d / "run.sqlite", ns=(1_000_000_000, 1_000_000_000))  # an old mtime makes any touch visible
    before = fingerprint(d)
    report_all_ways(d / "run.sqlite")
    report_all_ways(d / "run2.sqlite.gz")
    assert fingerprint(d) == before  # same bytes, same mtimes, and no -journal/-wal/-shm/.tmp appeared


def test_reading_a_read_only_export_in_a_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    real_export(d / "run.sqlite")
    (d / "run.sqlite").chmod(0o444)
    d.chmod(0o555)
    try:
        before = fingerprint(d)
        report_all_ways(d / "run.sqlite")
        assert fingerprint(d) == before
    finally:
        d.chmod(0o755)


def test_wal_mode_and_hot_journal_are_left_alone(tmp_path):
    """An export someone switched to WAL (with a -wal beside it), or one with a leftover hot journal:
    opened immutable, SQLite neither replays nor creates anything."""
    wal = tmp_path / "wal"
    wal.mkdir()
    src = real_export(wal / "run.sqlite")
    con = sqlite3.connect(src)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE scratch (x)")
    con.execute("INSERT INTO scratch VALUES (1)")
    con.commit()
    shutil.copyfile(src, wal / "copy.sqlite")  # copy taken while the WAL holds uncommitted-to-main pages
    if (wal / "run.sqlite-wal").exists():
        shutil.copyfile(wal / "run.sqlite-wal", wal / "copy.sqlite-wal")
    con.close()
    (wal / "copy.sqlite-journal").write_bytes(
        b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\x00" * 504
    )  # looks like a hot journal
    before = fingerprint(wal)
    report_all_ways(wal / "copy.sqlite")
    assert fingerprint(wal) == before
    assert not (wal / "copy.sqlite-shm").exists()


@needs_nsys
@pytest.mark.nsys
def test_nsys_rep_conversion_never_modifies_the_report(tmp_path):
    """`nvtxsim report run.nsys-rep` exports run.sqlite beside it; the .nsys-rep stays byte-identical,
    and a second report reuses the export without touching it."""
    path, _ = capture(tmp_path, "import nvtxsim\nwith nvtxsim.phase('iteration'):\n    pass\n", name="rep")
    d = tmp_path / "only_rep"
    d.mkdir()
    rep = d / "run.nsys-rep"
    shutil.copyfile(path.with_suffix(".nsys-rep"), rep)
    os.utime(rep, ns=(1_000_000_000, 1_000_000_000))
    rep_before = fingerprint(d)["run.nsys-rep"]
    proc = report_cli("report", str(rep), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["phases"][0]["name"] == "iteration"
    after = fingerprint(d)
    assert after["run.nsys-rep"] == rep_before
    assert set(after) == {"run.nsys-rep", "run.sqlite"}
    proc = report_cli("report", str(rep), "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    assert fingerprint(d) == after  # reused, not rewritten


@needs_nsys
@pytest.mark.nsys
def test_broken_nsys_rep_gives_one_line_and_leaves_nothing(tmp_path):
    """Random bytes and a truncated real report: nsys export fails, one line, exit 2, no .sqlite left."""
    path, _ = capture(tmp_path, "import nvtxsim\nwith nvtxsim.phase('iteration'):\n    pass\n", name="src")
    d = tmp_path / "broken"
    d.mkdir()
    (d / "random.nsys-rep").write_bytes(os.urandom(5000))
    data = path.with_suffix(".nsys-rep").read_bytes()
    (d / "cut.nsys-rep").write_bytes(data[: len(data) // 2])
    before = fingerprint(d)
    for name in ("random", "cut"):
        proc = report_cli("report", str(d / f"{name}.nsys-rep"))
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("nvtxsim: error: ") and "Traceback" not in proc.stderr
    assert fingerprint(d) == before
