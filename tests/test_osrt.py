"""OS waits per phase (``--view osrt``) on a real nsys capture of planted waits: a sleep, file I/O, a lock
held by another thread; and the one-line notes for exports without a usable OSRT_API table."""

from __future__ import annotations

import sqlite3

import pytest

from nvtxsim.analysis.osrt import osrt_note, phase_waits
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load
from nvtxsim.schema import osrt_category
from tests.nsys_util import needs_nsys, profile_python

PLANTED = """
import os, threading, time, nvtxsim
lock = threading.Lock()
held = threading.Event()
def holder():
    with lock:
        held.set()
        time.sleep(0.12)
t = threading.Thread(target=holder)
for it in range(4):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("reset"):
            time.sleep(0.02)
        with nvtxsim.phase("save"):
            with open("f.bin", "wb") as f:
                for _ in range(5):
                    f.write(b"x" * 65536); f.flush(); os.fsync(f.fileno())
        if it == 2:
            t.start(); held.wait()
        with nvtxsim.phase("policy"):
            with lock:
                pass
t.join()
"""


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return profile_python(tmp_path_factory.mktemp("osrt"), PLANTED, name="osrt")


def _by(rows, phase, category):
    got = [w for w in rows if w.phase.endswith(phase) and w.category == category]
    return got[0] if got else None


@needs_nsys
def test_planted_waits_are_named_at_their_phase(planted):
    rows = phase_waits(Selection(load(planted, cuda=False)))
    sleep = _by(rows, "reset", "sleep")
    assert sleep is not None and sleep.calls == 4 and 75e6 <= sleep.total_ns <= 200e6  # 4 × 20 ms
    assert "clock_nanosleep" in sleep.top and sleep.phase_share > 0.9
    io = _by(rows, "save", "file")
    assert io is not None and io.calls >= 20 and "fsync 20×" in io.top  # 4 iterations × 5 fsync
    lock = _by(rows, "policy", "lock")  # the other thread holds the lock for 120 ms in iteration 2
    assert lock is not None and lock.total_ns >= 60e6
    assert _by(rows, "iteration", "sleep") is None  # the sleeps count for reset only, not again for iteration


def test_categories_by_function_name():
    assert [osrt_category(n) for n in ("clock_nanosleep", "open64", "sem_wait", "pthread_cond_timedwait")] == [
        "sleep",
        "file",
        "lock",
        "lock",
    ]
    assert osrt_category("epoll_wait") == "poll" and osrt_category("recvfrom") == "socket"
    assert osrt_category("posix_spawn") == "process" and osrt_category("made_up") == "other"


@needs_nsys
def test_missing_or_broken_osrt_table_is_one_line(planted, tmp_path):
    broken = tmp_path / "broken.sqlite"
    src, dst = sqlite3.connect(planted), sqlite3.connect(broken)
    src.backup(dst)
    src.close()
    dst.execute("ALTER TABLE OSRT_API RENAME TO OSRT_API_OLD")
    dst.execute("CREATE TABLE OSRT_API (start INTEGER, end INTEGER)")
    dst.commit()
    dst.close()
    ex = load(broken, cuda=False)
    assert ex.extras.osrt is None and "OSRT_API unreadable" in (osrt_note(ex) or "")
    assert len(ex.ranges) > 0  # the rest of the report is still there
    gone = sqlite3.connect(broken)
    gone.execute("DROP TABLE OSRT_API")
    gone.commit()
    gone.close()
    ex = load(broken, cuda=False)
    assert "no OS runtime trace" in (osrt_note(ex) or "") and phase_waits(Selection(ex)) == []
