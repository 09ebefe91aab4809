"""Instrumentation under stress, checked from real nsys 2022.4 exports: every range that starts also
ends, on its thread, properly nested — through exceptions, generators, recursion, asyncio, 64 threads,
multiprocessing (fork, spawn, forkserver) and the torch.profiler(with_stack=True) failure shape."""

from __future__ import annotations

import collections

import pytest
from nsys_util import needs_nsys
from reliability_util import assert_balanced, capture, load, nesting_violations, pids_of, program_lines, threads_of

pytestmark = [needs_nsys, pytest.mark.nsys]

STRESS = r"""
import asyncio, gc, sys, threading
import nvtxsim
assert nvtxsim.is_recording(), nvtxsim.backend_info()

class Boom(Exception):
    pass

# --- exceptions escaping phases (decorator, nested with-blocks, BaseExceptions, exception in a finally)
@nvtxsim.phase("exc_decorated")
def raises(kind):
    raise kind("x")

for kind in (Boom, KeyError, KeyboardInterrupt, SystemExit, GeneratorExit):
    try:
        raises(kind)
    except BaseException:
        pass
for _ in range(3):
    try:
        with nvtxsim.phase("exc_outer"):
            with nvtxsim.phase("exc_middle"):
                with nvtxsim.phase("exc_inner"):
                    raise Boom
    except Boom:
        pass
try:
    with nvtxsim.phase("exc_outer"):
        try:
            with nvtxsim.phase("exc_inner"):
                raise Boom
        finally:
            raise KeyError("raised while unwinding")
except KeyError:
    pass

# --- generators: decorated (one range per resumption) and `with phase` around a yield
@nvtxsim.phase("gen_decorated")
def gen(n):
    for i in range(n):
        yield i

g1, g2 = gen(3), gen(3)
assert list(zip(g1, g2)) == [(0, 0), (1, 1), (2, 2)]  # g1 resumed 4 times, g2 3 times
g3 = gen(10); next(g3); next(g3); g3.close()  # 2 more

@nvtxsim.phase("gen_raises")
def bad():
    yield 1
    raise Boom
try:
    list(bad())
except Boom:
    pass

@nvtxsim.phase("gen_throw")
def catcher():
    while True:
        try:
            yield
        except Boom:
            pass
c = catcher(); next(c); c.throw(Boom); c.throw(Boom); c.close()

def with_gen(tag, n):
    with nvtxsim.phase(tag):
        for i in range(n):
            yield i

assert list(with_gen("with_yield_full", 3)) == [0, 1, 2]
a, b = with_gen("with_yield_a", 3), with_gen("with_yield_b", 3)
next(a); next(b); list(a); list(b)  # interleaved on one thread: still balanced and nested
ab = with_gen("with_yield_abandoned", 5); next(ab); del ab; gc.collect()  # closed by GeneratorExit

# --- recursion and re-entrancy
@nvtxsim.phase("recurse")
def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)
assert recurse(200) == 200

@nvtxsim.phase("to_the_limit")
def deep(n):
    return deep(n + 1)
try:
    deep(0)
except RecursionError:
    pass
assert nvtxsim.is_recording(), nvtxsim.backend_info()  # RecursionError did not turn ranges off

p = nvtxsim.phase("reentrant")
with p:
    with p:
        with p:
            pass
def reenter(n):
    with p:
        if n:
            reenter(n - 1)
reenter(4)

class D:
    def __del__(self):
        with nvtxsim.phase("in_del"):
            pass
with nvtxsim.phase("outer_del"):
    d = D(); del d

@nvtxsim.phase("sort_key")
def key(x):
    return -x
with nvtxsim.phase("sorting"):
    sorted(range(20), key=key)  # C code calling back into phases

class Env:
    def step(self, n):
        return n if n == 0 else self.step(n - 1)
with nvtxsim.instrument(Env, {"step": "env_step"}):
    Env().step(9)

# --- asyncio: decorated coroutines, `with phase` across an await, to_thread, cancellation
@nvtxsim.phase("async_decorated")
async def task(i):
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return i

async def with_await(i):
    with nvtxsim.phase("async_with"):
        await asyncio.sleep(0)
    return i

def in_thread(i):
    with nvtxsim.phase("async_to_thread"):
        return i

async def main():
    r1 = await asyncio.gather(*(task(i) for i in range(50)))
    r2 = await asyncio.gather(*(with_await(i) for i in range(20)))
    r3 = await asyncio.gather(*(asyncio.to_thread(in_thread, i) for i in range(10)))
    t = asyncio.create_task(task(99))
    await asyncio.sleep(0)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        pass
    return r1, r2, r3

r1, r2, r3 = asyncio.run(main())
assert r1 == list(range(50)) and r2 == list(range(20)) and r3 == list(range(10))

# --- 64 threads emitting at once (plus phases created concurrently)
N = 64
barrier = threading.Barrier(N)

@nvtxsim.phase("thread_work")
def work(i):
    return i

def worker(k):
    barrier.wait()
    for i in range(25):
        with nvtxsim.phase("thread_iter"):
            work(i)
            nvtxsim.range_push("thread_push")
            nvtxsim.range_pop()
            with nvtxsim.phase(f"dyn{i % 4}"):
                nvtxsim.mark("thread_mark", i)

ts = [threading.Thread(target=worker, args=(k,)) for k in range(N)]
[t.start() for t in ts]
[t.join() for t in ts]
with nvtxsim.phase("after_all"):
    pass
print("RESULT ok", nvtxsim.is_recording(), nvtxsim.backend_info()["error"])
"""


def test_stress_program_balanced(tmp_path):
    path, log = capture(tmp_path, STRESS, name="stress")
    assert program_lines(log, "RESULT") == ["ok True None"], log[-3000:]
    ex = load(path)
    counts = assert_balanced(ex)
    depth = counts.pop("to_the_limit")
    assert depth > 100  # the RecursionError run: every level ended too
    assert counts == {
        "exc_decorated": 5,
        "exc_outer": 4,
        "exc_middle": 3,
        "exc_inner": 4,
        "gen_decorated": 9,
        "gen_raises": 2,
        "gen_throw": 3,
        "with_yield_full": 1,
        "with_yield_a": 1,
        "with_yield_b": 1,
        "with_yield_abandoned": 1,
        "recurse": 201,
        "reentrant": 8,
        "in_del": 1,
        "outer_del": 1,
        "sort_key": 20,
        "sorting": 1,
        "env_step": 10,
        "async_decorated": 152,
        "async_with": 20,
        "async_to_thread": 10,
        "thread_iter": 1600,
        "thread_work": 1600,
        "thread_push": 1600,
        "dyn0": 64 * 7,  # i % 4 == 0 for 7 of the 25 iterations
        "dyn1": 64 * 6,
        "dyn2": 64 * 6,
        "dyn3": 64 * 6,
        "after_all": 1,
    }
    assert threads_of(ex, "thread_iter") == 64
    assert threads_of(ex, "async_to_thread") >= 1
    r = ex.ranges
    # The 201 recursive ranges nest 201 deep on one thread.
    rec = r.name == "recurse"
    assert len(set(r.global_tid[rec].tolist())) == 1
    starts, ends = r.start[rec], r.end[rec]
    order = starts.argsort()
    assert (ends[order][1:] <= ends[order][:-1]).all()
    # In each of the 64 threads, thread_work/thread_push/dyn* lie inside a thread_iter.
    for name in ("thread_work", "thread_push", "dyn0"):
        inner = r.name == name
        outer = r.name == "thread_iter"
        for i in list(inner.nonzero()[0][:200]):
            tid = r.global_tid[i]
            assert ((r.global_tid == tid) & outer & (r.start <= r.start[i]) & (r.end >= r.end[i])).any(), name


MULTIPROCESSING = r"""
import os, sys, time, multiprocessing as mp
import nvtxsim

def child(i):
    for _ in range(3):
        with nvtxsim.phase("child_step"):
            time.sleep(0.001)
    info = nvtxsim.backend_info()
    return os.getpid(), nvtxsim.is_recording(), info["inactive_reason"] is not None

if __name__ == "__main__":
    for method in ("spawn", "fork", "forkserver"):
        ctx = mp.get_context(method)
        with nvtxsim.phase("parent_" + method):
            pool = ctx.Pool(2)
            res = pool.map(child, range(4))
            pool.close(); pool.join()  # not terminate(): SIGTERM loses a child's last buffered events
            p = ctx.Process(target=child, args=(9,))
            p.start(); p.join()
        rec = sorted({r[1] for r in res}); off = sorted({r[2] for r in res})
        print(f"RESULT {method} recording={rec} off_reason={off} exit={p.exitcode}", flush=True)
"""


@pytest.mark.parametrize("trace_fork", [False, True], ids=["default", "trace-fork-before-exec"])
def test_multiprocessing_children(tmp_path, trace_fork):
    extra = ("--trace-fork-before-exec=true",) if trace_fork else ()
    path, log = capture(tmp_path, MULTIPROCESSING, name="mp", extra=extra, timeout=90)
    lines = program_lines(log, "RESULT")
    traced = "recording=[True] off_reason=[False] exit=0"
    untraced = "recording=[False] off_reason=[True] exit=0"
    # spawn children are exec'd: always traced. fork/forkserver children are traced only with
    # --trace-fork-before-exec=true; otherwise nvtxsim turns itself off there (no NVTX call can hang).
    assert lines == [
        f"spawn {traced}",
        f"fork {traced if trace_fork else untraced}",
        f"forkserver {traced if trace_fork else untraced}",
    ], log[-3000:]
    ex = load(path)
    r = ex.ranges
    parent_pid = next(iter(pids_of(ex, "parent_spawn")))
    if trace_fork:
        # Forked children end through os._exit, so nsys 2022.4 may miss their last events (it collects
        # periodically): a child range whose end was lost is flagged unclosed, ending at capture end.
        lost = r.unclosed
        assert set(r.name[lost].tolist()) <= {"child_step"}
        assert (r.end[lost] == ex.capture_end).all()
        assert not ({int(t >> 24) & 0xFFFFFF for t in r.global_tid[lost]} & {parent_pid})
        assert not nesting_violations(ex)
        counts = collections.Counter(r.name.tolist())
    else:
        counts = assert_balanced(ex)
    assert counts["parent_spawn"] == counts["parent_fork"] == counts["parent_forkserver"] == 1
    child_pids = pids_of(ex, "child_step")
    assert parent_pid not in child_pids
    if not trace_fork:
        # Exactly the spawn children: 4 pool tasks x 3 + 1 process x 3, all ended.
        assert counts["child_step"] == 15 and 2 <= len(child_pids) <= 3
    else:
        # spawn children (15 ranges) plus whatever nsys kept of the forked ones
        assert counts["child_step"] >= 15 and len(child_pids) >= 3


TORCH_SHAPE = r"""
import cProfile, queue, sys, threading, time
import nvtxsim

# The shape that breaks torch.profiler(with_stack=True) on torch <= 2.7: a logging thread blocked in C
# calls (queue.get with a timeout, like SummaryWriter's writer thread; time.sleep) while profiling
# windows come and go around the loop.
q = queue.Queue()
stop = threading.Event()

def writer():
    while not stop.is_set():
        try:
            q.get(True, 0.05)
        except queue.Empty:
            continue
        with nvtxsim.phase("log_write"):
            time.sleep(0.0005)

def sleeper():
    while not stop.is_set():
        with nvtxsim.phase("sleeper"):
            time.sleep(0.002)

ts = [threading.Thread(target=writer), threading.Thread(target=sleeper)]
[t.start() for t in ts]

def step(i):
    with nvtxsim.phase("iteration"):
        with nvtxsim.phase("sim_step"):
            time.sleep(0.0005)
        with nvtxsim.phase("policy"):
            sum(range(200))
        q.put(i)  # wakes the writer inside the window

# 1) profiler-like windows without torch: a C-level profile function on, off, on, off ...
for i in range(24):
    if i % 4 == 0:
        prof = cProfile.Profile(); prof.enable()
    step(i)
    if i % 4 == 3:
        prof.disable()

# 2) a real torch.profiler(with_stack=True), schedule(repeat=3), when torch is installed
iters = 24
try:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
except ImportError:
    torch = None
if torch is not None:
    lin = torch.nn.Linear(16, 4)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=3),
                 with_stack=True, record_shapes=True) as prof:
        for i in range(16):
            step(i)
            with nvtxsim.phase("policy"):
                lin(torch.randn(8, 16))
            prof.step()
    iters += 16
time.sleep(0.1)
stop.set()
[t.join() for t in ts]
print("RESULT", iters, "torch" if torch is not None else "no-torch", flush=True)
"""


def test_torch_profiler_failure_shape(tmp_path):
    path, log = capture(tmp_path, TORCH_SHAPE, name="torch_shape", timeout=300)
    res = program_lines(log, "RESULT")
    assert len(res) == 1, log[-3000:]
    iters = int(res[0].split()[0])
    ex = load(path)
    counts = assert_balanced(ex)
    assert counts["iteration"] == iters and counts["sim_step"] == iters
    assert counts["policy"] == iters + (16 if "torch" == res[0].split()[1] else 0)
    assert counts["log_write"] >= 1 and counts["sleeper"] >= 10
    main_tid = set(ex.ranges.global_tid[ex.ranges.name == "iteration"].tolist())
    assert len(main_tid) == 1
    assert not set(ex.ranges.global_tid[ex.ranges.name == "log_write"].tolist()) & main_tid
