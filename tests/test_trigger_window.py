"""A live trigger's capture window holds the slow iteration that fired it, and the report says so."""

from __future__ import annotations

import shutil
import sqlite3
import sys
import textwrap
import time

import pytest

import nvtxsim
from nvtxsim import live
from nvtxsim.emit import window


@pytest.fixture
def no_window():
    window.configure(None)
    yield
    window.configure(None)


def test_the_watch_opens_the_window_inside_the_slow_iteration(no_window, capsys):
    """The phase has run past FACTOR x its baseline and has not ended: the window opens now, at this iteration."""
    t = live.Trigger("sim_step>3x", 4)
    for i in range(12):  # the baseline: 1 ms per iteration
        window._count = i + 1
        t.observe(1_000_000, i)
    assert t.limit == 3_000_000 and window.current() is None
    now = time.perf_counter_ns()
    t.t0 = now - 2_000_000  # iteration 12, its sim_step running for 2 ms: under the limit
    assert t.check(now) is None and window.current() is None
    t.t0 = now - 5_000_000  # 5 ms and still running
    fired = t.check(now)
    assert fired is not None and fired["at"] == 12 and fired["window"] == [12, 16]  # its rest, then 4 whole ones
    w = window.current()
    assert (w.start, w.stop) == (12, 17)
    assert "5.00x the baseline at iteration 12; capture window: iterations 12..16" in capsys.readouterr().err
    assert t.check(now) is None and t.observe(9_000_000, 12) is None  # once per run


def test_a_rule_for_n_iterations_waits_for_the_last_of_the_run(no_window):
    t = live.Trigger("sim_step>3x for 2", 4)
    for i in range(10):
        window._count = i + 1
        t.observe(1_000_000, i)
    assert t.limit is None  # one slow iteration cannot fire "for 2"
    window._count = 11
    t.observe(5_000_000, 10)  # the first slow one
    assert t.limit == 3_000_000  # the next slow one completes the run: the watch may fire inside it


LOOP = textwrap.dedent(
    """
    import time, nvtxsim
    for i in range(40):
        nvtxsim.step()
        with nvtxsim.phase("iteration", payload=i):
            with nvtxsim.phase("sim_step"):
                time.sleep(0.4 if i == 25 else 0.002)
            with nvtxsim.phase("policy"):
                time.sleep(0.001)
    """
)


@pytest.mark.nsys
@pytest.mark.skipif(shutil.which("nsys") is None, reason="Nsight Systems (nsys) is not installed")
def test_a_one_off_stall_is_in_the_triggered_capture_and_the_report_says_so(tmp_path):
    from test_profile import nvtxsim_cli

    (tmp_path / "loop.py").write_text(LOOP)
    proc = nvtxsim_cli(
        tmp_path,
        "profile",
        "--trigger",
        "sim_step>3x",
        "--trigger-iterations",
        "3",
        "-o",
        "trig",
        "--",
        sys.executable,
        str(tmp_path / "loop.py"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "at iteration 25; capture window: iterations 25..28" in proc.stderr
    con = sqlite3.connect(tmp_path / "trig.sqlite")
    rows = con.execute(
        "SELECT COALESCE(e.text, s.value), e.int64Value, e.start FROM NVTX_EVENTS e "
        "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType IN (34, 59) ORDER BY e.start"
    ).fetchall()
    con.close()
    names = [r[0] for r in rows]
    assert [r[1] for r in rows if r[0] == "iteration"] == [26, 27, 28]  # 25 began before the window, then 3 whole
    # The stall's iteration is in the capture: the window opened while its sim_step slept, so the trigger's
    # mark and iteration 25's policy (after the stall) come before iteration 26.
    first_26 = names.index("iteration")
    assert names[:first_26] == [names[0], "policy"] and names[0].startswith("nvtxsim trigger sim_step>3x fired")
    model = nvtxsim.report(tmp_path / "trig.sqlite")
    assert model.source["trigger"].startswith("sim_step>3x fired at iteration 25 (")
    assert "window: iterations 25..28, opened while it ran" in model.source["trigger"]
    assert "captured by the live trigger sim_step>3x fired at iteration 25" in proc.stdout
