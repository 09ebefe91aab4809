"""A failure inside NVTX never raises into user code, without needing nsys.

Each scenario runs in a fresh interpreter with ``NVTX_INJECTION64_PATH`` pointing at a library that
does not exist: nvtxsim then opens its domain for real (the backend is *active*, the calls reach the
NVTX C layer, which drops them), so the code paths are exactly the ones taken under a profiler.
Failures are injected by replacing nvtxsim.emit.ranges's bound push/pop/mark functions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from nsys_util import REPO

PRELUDE = """
import asyncio, json, sys, threading
import nvtxsim
from nvtxsim.emit import ranges as emit
assert nvtxsim.is_recording(), nvtxsim.backend_info()

def exercise():
    '''Every kind of phase use; returns what the user code computed.'''
    out = []
    with nvtxsim.phase("with_block"):
        out.append(1)
    @nvtxsim.phase("decorated")
    def f(x):
        return x * 2
    out.append(f(2))
    @nvtxsim.phase("gen")
    def g():
        yield 3
        yield 4
    out.extend(g())
    @nvtxsim.phase("coro")
    async def c():
        await asyncio.sleep(0)
        return 5
    out.append(asyncio.run(c()))
    nvtxsim.range_push("pushed")
    out.append(6)
    nvtxsim.range_pop()
    nvtxsim.mark("mark", 7)
    with nvtxsim.phase("payload", payload=8):
        out.append(8)
    return out
"""


def run_scenario(body: str, *, python_flags: tuple[str, ...] = ()) -> tuple[dict, str]:
    code = PRELUDE + textwrap.dedent(body)
    env = {**os.environ, "NVTX_INJECTION64_PATH": "/nonexistent/libnvtx-tool.so", "PYTHONPATH": str(REPO)}
    env.pop("NVTXSIM_DISABLE", None)
    proc = subprocess.run(
        [sys.executable, *python_flags, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result, proc.stderr


def nvtxsim_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("nvtxsim: ")]


EXPECTED = [1, 4, 3, 4, 5, 6, 8]


@pytest.mark.parametrize("target", ["_push", "_pop"])
@pytest.mark.parametrize("after", [0, 3])
def test_failing_push_or_pop_never_raises(target, after):
    """The NVTX call raises (at once, or after a few good calls): user code runs on, reported once, ranges off."""
    result, err = run_scenario(
        f"""
        real = emit.{target}
        n = [0]
        def flaky(*args):
            n[0] += 1
            if n[0] > {after}:
                raise RuntimeError("injected NVTX failure")
            return real(*args)
        emit.{target} = flaky
        first = exercise()
        second = exercise()  # after the failure: everything still works, nothing is recorded
        nvtxsim.enable()      # does not turn a failed backend back on
        info = nvtxsim.backend_info()
        print(json.dumps({{"first": first, "second": second, "recording": nvtxsim.is_recording(), "error": info["error"], "calls": n[0]}}))
        """
    )
    assert result["first"] == EXPECTED and result["second"] == EXPECTED
    assert result["recording"] is False
    assert "injected NVTX failure" in result["error"]
    assert result["calls"] == after + 1  # no NVTX call after the failure
    lines = nvtxsim_lines(err)
    assert len(lines) == 1 and "NVTX call failed" in lines[0] and "injected" in lines[0], err


def test_failing_mark_and_attributes_never_raise():
    result, err = run_scenario(
        """
        def boom(*a, **k):
            raise OSError("injected")
        emit._backend.mark = boom
        first = exercise()
        emit._backend.attributes = boom          # building attributes fails too (new phases)
        p = nvtxsim.phase("built_after_failure")  # must not raise
        with p:
            pass
        print(json.dumps({"first": first, "recording": nvtxsim.is_recording()}))
        """
    )
    assert result == {"first": EXPECTED, "recording": False}
    assert len(nvtxsim_lines(err)) == 1, err


def test_failure_in_many_threads_is_reported_once():
    result, err = run_scenario(
        """
        def boom(*a):
            raise RuntimeError("injected from a thread")
        emit._push = boom
        barrier = threading.Barrier(32)
        results = []
        def worker():
            barrier.wait()
            for _ in range(50):
                with nvtxsim.phase("t"):
                    results.append(1)
        ts = [threading.Thread(target=worker) for _ in range(32)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print(json.dumps({"n": len(results), "recording": nvtxsim.is_recording()}))
        """
    )
    assert result == {"n": 32 * 50, "recording": False}
    assert len(nvtxsim_lines(err)) == 1, err


def test_arguments_nvtx_rejects_are_repaired_not_raised():
    """Names with lone surrogates, non-str names, colours out of range, payloads NVTX cannot hold:
    without a profiler these never reach NVTX, so with one they must not raise either."""
    result, err = run_scenario(
        """
        calls = []
        real = emit._push
        def counting(attrs, handle):
            calls.append(attrs)
            return real(attrs, handle)
        emit._push = counting
        names = ["\\udcff bad", 123, None, b"bytes", "nul\\x00", "x" * 1_000_000, ""]
        for n in names:
            with nvtxsim.phase(n):
                pass
        for kw in ({"color": -1}, {"color": 2 ** 40}, {"color": 1.5}, {"color": "no-such-colour"},
                   {"payload": 2 ** 64}, {"payload": -2 ** 70}, {"payload": "text"}, {"payload": [1]},
                   {"category": "\\udcff"}):
            with nvtxsim.phase("odd_args", **kw):
                pass
        nvtxsim.mark(42, payload=2 ** 80)
        nvtxsim.range_push(object())
        nvtxsim.range_pop()
        print(json.dumps({"pushes": len(calls), "none": sum(a is None for a in calls), "recording": nvtxsim.is_recording()}))
        """,
        python_flags=("-W", "error"),  # nvtx's own warnings (unsupported payload) must not escape either
    )
    assert result == {"pushes": 7 + 9 + 1, "none": 0, "recording": True}
    lines = nvtxsim_lines(err)
    assert lines and all("recorded with repaired ones" in line for line in lines), err
    assert len(lines) <= 4  # one per distinct phase name, not per call


def test_unmatched_range_pop_is_refused_and_reported_once():
    result, err = run_scenario(
        """
        pops, marks = [], []
        real_pop, real_mark = emit._pop, emit._backend.mark
        emit._pop = lambda h: (pops.append(1), real_pop(h))
        emit._backend.mark = lambda a, h: (marks.append(1), real_mark(a, h))
        nvtxsim.range_pop()                      # nothing open: refused
        with nvtxsim.phase("outer"):
            nvtxsim.range_pop()                  # would end "outer" early: refused
        nvtxsim.range_push("a")
        nvtxsim.disable()
        nvtxsim.range_pop()                      # pushed while enabled: still popped (balance)
        nvtxsim.enable()
        def other_thread():
            nvtxsim.range_pop()                  # pushes are per thread: refused here
        nvtxsim.range_push("b")
        t = threading.Thread(target=other_thread); t.start(); t.join()
        nvtxsim.range_pop()                      # the matching pop of "b"
        print(json.dumps({"pops": len(pops), "marks": len(marks), "unmatched": nvtxsim.backend_info()["unmatched_pops"]}))
        """
    )
    # outer's own pop + "a" + "b"; three refused pops, each recorded as a mark
    assert result == {"pops": 3, "marks": 3, "unmatched": 3}
    lines = nvtxsim_lines(err)
    assert len(lines) == 1 and "range_pop() without an open range_push()" in lines[0], err


def test_no_stderr_is_fine():
    """Reporting a failure must not raise when stderr is gone (pythonw, closed pipes)."""
    result, err = run_scenario(
        """
        sys.stderr.close()
        sys.stderr = None
        emit._push = lambda *a: 1 / 0
        out = exercise()
        print(json.dumps({"out": out}))
        """
    )
    assert result == {"out": EXPECTED}


def test_disabled_toggling_keeps_decorated_ranges_balanced():
    """A decorated call pops what it pushed even when ranges are turned off meanwhile (e.g. by another thread)."""
    result, _ = run_scenario(
        """
        pushes, pops = [], []
        rp, rq = emit._push, emit._pop
        emit._push = lambda a, h: (pushes.append(1), rp(a, h))
        emit._pop = lambda h: (pops.append(1), rq(h))
        @nvtxsim.phase("toggled")
        def f():
            nvtxsim.disable()
            return 1
        f()
        nvtxsim.enable()
        @nvtxsim.phase("gen")
        def g():
            nvtxsim.disable()
            yield 1
            nvtxsim.enable()
            yield 2
        list(g())
        print(json.dumps({"pushes": len(pushes), "pops": len(pops)}))
        """
    )
    assert result["pushes"] == result["pops"]


def test_instrument_hostile_targets_never_raise(profiler_attached):
    import warnings

    import nvtxsim

    class Meta(type):
        def __setattr__(cls, k, v):
            raise AttributeError("frozen")

    class Frozen(metaclass=Meta):
        def f(self):
            return 1

    class RaisingDict:
        @property
        def __dict__(self):  # noqa: D401 - hostile on purpose
            raise RuntimeError("no dict")

        def f(self):
            return 3

    class Slots:
        __slots__ = ("a",)

        def f(self):
            return 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for target, methods, reason in [
            (list, ["append"], "cannot be replaced"),
            (int, {"bit_length": "x"}, "cannot be replaced"),
            (Frozen, ["f"], "cannot be replaced"),
            (RaisingDict(), ["f"], "no instance dict"),
            (Slots(), ["f"], "no instance dict"),
        ]:
            h = nvtxsim.instrument(target, methods)
            assert h.patched == [] and len(h.skipped) == 1 and reason in h.skipped[0], h.skipped
            h.restore()
    assert [].append is not None and Frozen().f() == 1
