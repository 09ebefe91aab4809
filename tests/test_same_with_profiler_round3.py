"""Adversarial round 3 of "the same program with or without a profiler" (issue 13): shapes outside
the first program — a callable object that is its own descriptor, partials of generator and
coroutine functions, enum and dunder methods, ``__getattr__``, weak methods, ``singledispatch``,
``abstractmethod``, ``contextmanager``, generator return values, ``close``/``aclose``; ``instrument``
on targets it cannot patch (the same skips and warnings in both states). The program
runs plain, with a forced recording backend and under the real nsys 2022.4; outputs must be identical.
"""

from __future__ import annotations

import collections

import pytest
from nsys_util import needs_nsys
from reliability_util import capture, load, program_lines
from test_same_with_profiler import run_state

PROGRAM = r'''
import abc, asyncio, contextlib, enum, functools, inspect, pickle, weakref
import nvtxsim
from nvtxsim import phase

def out(label, value):
    print(f"OUT {label}: {value!r}", flush=True)

def outcome(fn):
    try:
        return fn()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"

out("recording", nvtxsim.is_recording())

class Binder:
    """Callable, and a descriptor of its own: in a class it binds through __get__."""
    def __get__(self, obj, typ=None):
        return (lambda: ("bound", obj is not None)) if obj is not None else self
    def __call__(self, *args):
        return ("called", len(args))

module_binder = phase("cdesc")(Binder())

class Env:
    b = phase("cdesc")(Binder())
    @phase("eq")
    def __eq__(self, other): return True
    __hash__ = object.__hash__
    @phase("getattr")
    def __getattr__(self, name): return name.upper()
    @phase("weak")
    def m(self): return "m"

out("callable descriptor", (outcome(lambda: Env().b()), outcome(lambda: Env.b()), module_binder(1, 2)))
out("callable descriptor pickle", type(pickle.loads(pickle.dumps(module_binder))).__name__)
out("dunder", (Env() == Env(), Env().anything))
e = Env()
out("weakmethod", weakref.WeakMethod(e.m)()())

def gen(n):
    got = yield n
    return got

async def coro(n):
    await asyncio.sleep(0)
    return n * 2

pgen = phase("partial_gen")(functools.partial(gen, 1))
g = pgen()
first = next(g)
try:
    g.send("sent")
except StopIteration as stop:
    out("partial generator", (first, stop.value))
pcoro = phase("partial_coro")(functools.partial(coro, 21))
out("partial coroutine", asyncio.run(pcoro()))

class Color(enum.Enum):
    RED = 1
    @phase("enum")
    def describe(self): return self.name
out("enum", (Color.RED.describe(), [c.name for c in Color]))

@phase("dispatch")
@functools.singledispatch
def dispatch(x): return "object"
@dispatch.register
def _(x: int): return "int"
out("singledispatch", (dispatch(1), dispatch("s")))

class Base(abc.ABC):
    @phase("abstract")
    @abc.abstractmethod
    def f(self): ...
out("abstract", outcome(lambda: Base()).split(":")[0])

@phase("cm")
@contextlib.contextmanager
def cm():
    yield "inside"
with cm() as v:
    out("contextmanager", v)

log = []
@phase("closing")
def closing():
    try:
        yield 1
        yield 2
    finally:
        log.append("finally")
c = closing(); next(c); c.close()
out("generator close", log)

@phase("agen")
async def agen():
    try:
        yield 1
        yield 2
    finally:
        log.append("afinally")
async def drive():
    a = agen()
    x = await a.__anext__()
    await a.aclose()
    return x
out("async generator aclose", (asyncio.run(drive()), log))
import collections, warnings
Point = collections.namedtuple("Point", "x y")
class Plain:
    value = 3
    def step(self): return 1
for target, names in ((Point(1, 2), ["_asdict"]), (5, ["bit_length"]), (Plain, ["step", "value", "missing"])):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ins = nvtxsim.instrument(target, names)
    out(f"instrument {type(target).__name__}", (ins.skipped, len(ins.patched), [str(w.message) for w in caught]))
    ins.restore()
out("recording at end", nvtxsim.is_recording())
'''


def test_round3_shapes_same_plain_and_forced(tmp_path):
    plain = run_state(tmp_path / "p", "plain", program=PROGRAM)
    forced = run_state(tmp_path / "f", "forced", program=PROGRAM)
    assert plain[0] == "recording: False" and forced[0] == "recording: True"
    assert forced[1:-1] == plain[1:-1]
    assert plain[1] == "callable descriptor: (('bound', True), ('called', 0), ('called', 2))"


@needs_nsys
@pytest.mark.nsys
def test_round3_shapes_under_nsys(tmp_path):
    plain = run_state(tmp_path / "p", "plain", program=PROGRAM)
    path, log = capture(tmp_path, PROGRAM, name="round3")
    lines = program_lines(log, "OUT ")
    assert lines[1:-1] == plain[1:-1], log[-2000:]
    counts = collections.Counter(load(path).ranges.name.tolist())
    for name in ("cdesc", "partial_gen", "partial_coro", "eq", "getattr", "weak", "enum", "dispatch", "closing"):
        assert counts[name] > 0, (name, counts)
    assert counts["partial_coro"] >= 2  # one range per resumption, not one around creating the coroutine


SHOW = "import sys\nprint(repr(sys.argv), repr(__file__), repr(sys.path[0]), __name__, repr(__spec__ and __spec__.name), repr(__package__))\n"


@pytest.mark.parametrize("target", ["show.py", "./sub/show.py", "sp ace\nnl.py", "sub", "app.zip"])
def test_run_gives_the_script_what_python_gives_it(tmp_path, target):
    """``nvtxsim run TARGET`` and ``python TARGET``: the same argv, ``__file__``, ``sys.path[0]``,
    ``__spec__`` for a script, a path with ``./``, an odd file name, a folder and a zip file with
    ``__main__.py`` (runpy gave the folder and zip a relative ``sys.path[0]`` and ``__file__``)."""
    import os
    import subprocess
    import sys
    import zipfile

    from nsys_util import REPO

    (tmp_path / "sub").mkdir()
    for name in ("show.py", "sp ace\nnl.py", "sub/show.py", "sub/__main__.py"):
        (tmp_path / name).write_text(SHOW)
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as z:
        z.writestr("__main__.py", SHOW)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    direct = subprocess.run(
        [sys.executable, target, "a", "-b"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    via = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", target, "a", "-b"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert direct.returncode == via.returncode == 0, via.stderr
    assert via.stdout == direct.stdout
