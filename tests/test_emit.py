"""Emit stage: phases as decorators/context managers, instrument/restore, disabled mode, real nsys capture."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from nsys_util import needs_nsys, profile_python

import nvtxsim
from nvtxsim.export.reader import load


def test_standard_phases_have_fixed_styles():
    names = [
        "iteration",
        "sim_step",
        "render",
        "camera_readout",
        "policy",
        "action",
        "observation",
        "reward",
        "termination",
        "reset",
        "policy_update",
        "step",
        "learning_iteration",
        "rollout",
    ]
    assert list(nvtxsim.phases.STANDARD) == names
    colors = {s.color for s in nvtxsim.phases.STANDARD.values()}
    assert len(colors) == len(names)
    # A custom name's colour is the same in every process (crc32, not the salted hash()): pinned, and
    # recomputed in a process with another hash seed.
    assert nvtxsim.phases.style_for("my_phase").color == 0x7B644F
    other = subprocess.run(
        [sys.executable, "-c", "import nvtxsim.phases as p; print(p.style_for('my_phase').color)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        timeout=60,
    )
    assert other.stdout.strip() == str(0x7B644F), other.stderr
    assert nvtxsim.phases.style_for("my_phase2").color != 0x7B644F
    assert nvtxsim.phases.style_for("my_phase").category == "custom"


def test_wrap_keeps_metadata_and_signature():
    def step(env, actions: int = 3) -> int:
        """Step docs."""
        return actions

    wrapped = nvtxsim.phase("sim_step").wrap(step)
    assert wrapped is not step
    assert wrapped.__name__ == "step" and wrapped.__doc__ == "Step docs."
    assert inspect.signature(wrapped) == inspect.signature(step)
    assert wrapped.__wrapped__ is step
    assert wrapped(None, actions=5) == 5
    # Wrapping a wrapper does nothing.
    assert nvtxsim.phase("other")(wrapped) is wrapped


def test_context_manager_propagates_exceptions():
    with pytest.raises(KeyError):
        with nvtxsim.phase("reset"):
            raise KeyError("x")
    p = nvtxsim.phase("reset")
    with p as got:
        assert got is p


def test_wrapped_generator_and_coroutine_behave():
    def gen(n):
        total = 0
        for i in range(n):
            got = yield i
            total += got or 0
        return total

    g = nvtxsim.phase("observation").wrap(gen)(3)
    assert next(g) == 0
    assert g.send(5) == 1
    assert g.send(7) == 2
    with pytest.raises(StopIteration) as stop:
        g.send(1)
    assert stop.value.value == 13

    def failing():
        try:
            yield 1
        except ValueError:
            yield "caught"

    f = nvtxsim.phase("x").wrap(failing)()
    assert next(f) == 1
    assert f.throw(ValueError()) == "caught"
    f.close()

    import asyncio

    async def coro(x):
        await asyncio.sleep(0)
        return x * 2

    wrapped = nvtxsim.phase("policy").wrap(coro)
    assert inspect.iscoroutinefunction(wrapped)
    assert asyncio.run(wrapped(21)) == 42


class Env:
    def __init__(self):
        self.calls = []

    def step(self, a):
        """Env step."""
        self.calls.append(a)
        return a + 1

    @staticmethod
    def helper(x):
        return x * 2

    @classmethod
    def make(cls):
        return cls()

    @property
    def num_envs(self):
        return 4


class TaskEnv(Env):
    def step(self, a):
        return super().step(a) * 10


def test_instrument_class_and_restore(profiler_attached):
    original = {k: Env.__dict__[k] for k in ("step", "helper", "make")}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        handle = nvtxsim.instrument(Env, {"step": "iteration", "helper": "sim_step", "make": "reset"})
    assert handle.patched == ["Env.step", "Env.helper", "Env.make"]
    assert isinstance(Env.__dict__["helper"], staticmethod) and isinstance(Env.__dict__["make"], classmethod)
    assert Env.helper(3) == 6 and isinstance(Env.make(), Env)
    e = Env()
    assert e.step(1) == 2 and TaskEnv().step(1) == 20
    assert Env.step.__doc__ == "Env step."
    # Twice is a no-op.
    again = nvtxsim.instrument(Env, {"step": "iteration"})
    assert again.patched == []
    handle.restore()
    assert {k: Env.__dict__[k] for k in ("step", "helper", "make")} == original
    handle.restore()  # idempotent


def test_instrument_subclass_patches_only_the_target(profiler_attached):
    with nvtxsim.instrument(TaskEnv, ["step"]) as h:
        assert "step" in TaskEnv.__dict__ and h.patched == ["TaskEnv.step"]
        assert TaskEnv().step(2) == 30
    assert TaskEnv.__dict__["step"].__qualname__ == "TaskEnv.step"


def test_instrument_inherited_method_is_removed_on_restore(profiler_attached):
    class Child(Env):
        pass

    h = nvtxsim.instrument(Child, {"step": "iteration"})
    assert "step" in Child.__dict__
    h.restore()
    assert "step" not in Child.__dict__


def test_instrument_instance_and_skips(profiler_attached):
    e = Env()
    with pytest.warns(UserWarning, match="num_envs \\(property\\).*missing_method \\(missing\\)"):
        h = nvtxsim.instrument(e, {"step": "iteration", "num_envs": "x", "missing_method": "y"})
    assert h.patched == ["Env.step"]
    assert e.step(4) == 5 and e.calls == [4]
    assert e.num_envs == 4
    assert "step" in e.__dict__
    h.restore()
    assert "step" not in e.__dict__


def test_disabled_is_noop_and_decorator_returns_function():
    nvtxsim.disable()
    try:

        def f():
            return 1

        assert nvtxsim.phase("x")(f) is f
        with nvtxsim.phase("x"):
            pass
        nvtxsim.mark("m")
        assert not nvtxsim.is_recording()
    finally:
        nvtxsim.enable()


def test_env_disable_in_subprocess():
    code = "import nvtxsim; print(nvtxsim.is_enabled(), nvtxsim.backend_info()['enabled'])"
    out = subprocess.run(
        [sys.executable, "-c", code], env={"NVTXSIM_DISABLE": "1", "PATH": ""}, capture_output=True, text=True
    )
    assert out.stdout.split() == ["False", "False"], out.stderr


STRESS = """
import threading, asyncio, os, sys
import nvtxsim

assert nvtxsim.is_recording(), nvtxsim.backend_info()

@nvtxsim.phase("reward")
def boom():
    raise RuntimeError("user error")

@nvtxsim.phase("observation")
def gen(n):
    for i in range(n):
        yield i

@nvtxsim.phase("policy")
def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)

@nvtxsim.phase("action")
async def task(i):
    await asyncio.sleep(0)
    return i

async def main():
    return await asyncio.gather(*(task(i) for i in range(5)))

for _ in range(3):
    try:
        boom()
    except RuntimeError:
        pass
    try:
        with nvtxsim.phase("reset"):
            raise ValueError
    except ValueError:
        pass
g1, g2 = gen(3), gen(3)
assert list(zip(g1, g2)) == [(0, 0), (1, 1), (2, 2)]   # interleaved: one range per resumption (g1: 4, g2: 3)
assert recurse(4) == 4
assert asyncio.run(main()) == list(range(5))

def worker():
    for _ in range(10):
        with nvtxsim.phase("render"):
            pass
ts = [threading.Thread(target=worker) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
with nvtxsim.phase("iteration"):
    pass
print("ok")
"""


@needs_nsys
@pytest.mark.nsys
def test_ranges_balanced_under_nsys(tmp_path):
    path = profile_python(tmp_path, STRESS)
    ex = load(path)
    r = ex.ranges
    assert not r.unclosed.any()
    counts = {n: int((r.name == n).sum()) for n in set(r.name)}
    assert counts == {
        "reward": 3,
        "reset": 3,
        "observation": 7,
        "policy": 5,
        "action": 10,
        "render": 80,
        "iteration": 1,
    }
    # Per thread, push/pop ranges nest properly (no partial overlaps).
    for tid in np.unique(r.global_tid):
        sel = np.flatnonzero(r.global_tid == tid)
        order = sel[np.lexsort((-r.end[sel], r.start[sel]))]
        stack = []
        for i in order:
            while stack and r.end[stack[-1]] <= r.start[i]:
                stack.pop()
            if stack:
                assert r.end[i] <= r.end[stack[-1]]
            stack.append(i)
    assert len(np.unique(r.global_tid[r.name == "render"])) == 8


def test_inline_phase_is_shared_and_options_are_not():
    a, b = nvtxsim.phase("sim_step"), nvtxsim.phase("sim_step")
    assert a is b  # the inline form costs a lookup, not a construction
    assert nvtxsim.phase("sim_step", payload=3) is not a
    assert nvtxsim.phase("sim_step", color=0x123456).color == 0x123456

    class Sub(nvtxsim.phase):
        pass

    assert type(Sub("sim_step")) is Sub  # subclasses never receive the shared base object


def test_instrument_without_a_profiler_installs_nothing():
    """Like a @phase decorator (and nvtx's): nothing recorded at instrument time means no wrapper."""
    before = dict(Env.__dict__)
    e = Env()
    h = nvtxsim.instrument(Env, {"step": "iteration", "helper": "sim_step"})
    hi = nvtxsim.instrument(e, ["step"])
    assert h.idle and hi.idle and not nvtxsim.is_recording()
    assert h.patched == ["Env.step", "Env.helper"] and hi.patched == ["Env.step"]
    assert dict(Env.__dict__) == before and "step" not in e.__dict__
    assert e.step(2) == 3 and Env.helper(2) == 4
    h.restore()
    hi.restore()
    assert dict(Env.__dict__) == before


def test_instrument_with_a_profiler_wraps(profiler_attached):
    with nvtxsim.instrument(Env, ["step"]) as h:
        assert not h.idle and Env.__dict__["step"].__nvtxsim_phase__ == "step"
        assert Env().step(1) == 2
    assert not hasattr(Env.__dict__["step"], "__nvtxsim_phase__")


def test_idle_with_is_c_level_and_keeps_with_semantics():
    """Not recording: __enter__/__exit__ are C-level no-ops that return the phase and let exceptions through."""
    import copy
    import pickle

    E = nvtxsim.emit.ranges
    assert not E.is_recording()
    assert type(nvtxsim.phase.__dict__["__enter__"]).__name__ == "member_descriptor"
    p = nvtxsim.phase("sim_step")
    with p as got:
        assert got is p
    with pytest.raises(KeyError):
        with p:
            raise KeyError("through")
    assert p.__enter__() is p and not p.__exit__(None, None, None)

    class Loud(nvtxsim.phase):  # subclasses that extend __enter__ still reach the base one
        __slots__ = ("entered",)

        def __enter__(self):
            self.entered = True
            return super().__enter__()

    loud = Loud("x")
    with loud as got:
        assert got is loud and loud.entered
    for clone in (copy.copy(p), pickle.loads(pickle.dumps(nvtxsim.phase("y", color=0x123456)))):
        with clone as got:
            assert got is clone and got is not p
    assert clone.color == 0x123456 and clone.name == "y"

    class Tagged(nvtxsim.phase):  # no __slots__: its instance attributes travel too
        pass

    tagged = Tagged("z")
    tagged.extra = 5
    for clone in (copy.copy(tagged), copy.deepcopy(tagged)):
        with clone as got:
            assert got is clone and type(clone) is Tagged and clone.extra == 5 and clone.name == "z"


def test_enable_disable_swaps_with_methods(monkeypatch):
    E = nvtxsim.emit.ranges
    monkeypatch.setattr(E, "_live", True)
    monkeypatch.setattr(E._backend, "domain", object())  # live without NVTX: pushes go to a stub
    calls = []
    monkeypatch.setattr(E, "_push", lambda attrs, handle: calls.append("push"))
    monkeypatch.setattr(E, "_pop", lambda handle: calls.append("pop"))
    try:
        E.enable()
        assert E.is_recording() and nvtxsim.phase.__enter__ is nvtxsim.phase._recording_enter
        with nvtxsim.phase("sim_step"):
            pass
        E.disable()
        assert nvtxsim.phase.__exit__ is not nvtxsim.phase._recording_exit
        with nvtxsim.phase("sim_step"):
            pass
    finally:
        monkeypatch.undo()
        E.enable()
    assert calls == ["push", "pop"]
    assert not E.is_recording() and type(nvtxsim.phase.__dict__["__enter__"]).__name__ == "member_descriptor"
