"""The same program with or without a profiler (issue 13): every decoration and instrumentation shape
behaves the same whether ranges are recorded or not, or is refused the same way at decoration time.

One program (``PROGRAM``) checks each shape and prints one line per check. It runs in three states
and its output must be identical: plain Python (nothing records), a forced recording backend
(``NVTX_INJECTION64_PATH`` pointing at a missing library: nvtxsim's real recording paths run, NVTX
itself drops the ranges), and under the real nsys 2022.4, whose export must then hold the ranges.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys

import pytest
from nsys_util import REPO, needs_nsys
from reliability_util import capture, load, program_lines

PROGRAM = r"""
import asyncio, copy, functools, os, pickle, sys
import nvtxsim
from nvtxsim import phase

def out(label, value):
    print(f"OUT {label}: {value!r}", flush=True)

out("recording", nvtxsim.is_recording())

# --- refused identically at decoration time
for what, target in (("class", type("C", (), {})), ("int", 5), ("str", "text")):
    try:
        phase("refused")(target)
        out(f"refuse {what}", "accepted")
    except TypeError as exc:
        out(f"refuse {what}", str(exc).split(":")[0])

# --- descriptors, lru_cache, properties, partials, builtins in a class body
class Env:
    calls = 0

    def __init__(self, k=1):
        self.k = k
        self._v = 0

    @phase("static")
    @staticmethod
    def static(x):
        return ("static", x)

    @phase("klass")
    @classmethod
    def klass(cls, x):
        return (cls.__name__, x)

    @phase("cached")
    @functools.lru_cache(maxsize=None)
    def cached(self, x):
        Env.calls += 1
        return self.k * x

    @phase("prop")
    @property
    def value(self):
        return self._v

    @value.setter
    def value(self, v):
        self._v = v

    @phase("cprop")
    @functools.cached_property
    def heavy(self):
        Env.calls += 1
        return [self.k]

    partial_attr = phase("partial")(functools.partial(max, 0))
    builtin_attr = phase("builtin")(abs)

    def step(self, a):
        return self.k + a

    pm = phase("partialmethod")(functools.partialmethod(step, 100))

e = Env(3)
out("partialmethod", e.pm())
out("static", (Env.static(1), e.static(2)))
out("klass", (Env.klass(1), e.klass(2)))
out("cached", (e.cached(2), e.cached(2), Env.calls, e.cached.cache_info().hits))
e.cached.cache_clear()
out("cache_clear", Env.cached.cache_info().currsize)
e.value = 7
out("prop", (e.value, type(Env.__dict__["value"]).__name__))
out("cprop", (e.heavy, e.heavy is e.heavy, Env.calls))
out("partial", (e.partial_attr(-5), Env.partial_attr(4)))
out("builtin", (e.builtin_attr(-3),))

@phase("module_cached")
@functools.lru_cache(maxsize=8)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
out("lru module", (fib(20), fib.cache_info().maxsize, fib.cache_info().hits > 0, fib.__name__, fib.__wrapped__ is not None))

# --- recursion depth: frames per level, wrapped against plain
def depth(fn, kind):
    sys.setrecursionlimit(400)
    try:
        if kind == "gen":
            n = 0
            try:
                for n in fn(0):
                    pass
            except RecursionError:
                pass
            return n
        if kind == "coro":
            return asyncio.run(fn(0))
        return fn(0)
    finally:
        sys.setrecursionlimit(1000)

def plain(n):
    try:
        return plain(n + 1)
    except RecursionError:
        return n

def gen(n):
    yield n
    yield from gen(n + 1)

async def coro(n):
    try:
        return await coro(n + 1)
    except RecursionError:
        return n

for kind, fn in (("call", plain), ("gen", gen), ("coro", coro)):
    raw = depth(fn, kind)
    globals()[fn.__name__] = phase("rec").wrap(fn)
    wrapped = depth(globals()[fn.__name__], kind)
    extra = 1 if kind == "call" or sys.version_info >= (3, 12) else 2  # 3.10/3.11 also count the C send()
    out(f"recursion {kind}", raw / max(wrapped, 1) <= (1 + extra) * 1.02)

# --- instrument(): one name as a string, deepcopy/pickle of an instrumented instance (target network)
class Net:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return self.w * x

h = nvtxsim.instrument(Net, "forward")
out("instrument str", (h.patched, h.skipped))
h.restore()
online = Net(2)
hi = nvtxsim.instrument(online, ["forward"])
target = copy.deepcopy(online)
target.w = 10
out("deepcopy runs its own", (online.forward(1), target.forward(1)))
loaded = pickle.loads(pickle.dumps(online))
loaded.w = 5
out("pickle runs its own", (online.forward(1), loaded.forward(1), loaded.forward.__name__))
try:
    import torch, io
except ImportError:
    out("torch.save", "no torch")
else:
    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 1)

        def forward(self, x):
            return self.lin(x)

    pol = Policy()
    hp = nvtxsim.instrument(pol, ["forward"])
    buf = io.BytesIO()
    torch.save(pol, buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=False)
    with torch.no_grad():
        back.lin.weight.fill_(1.0)
        back.lin.bias.fill_(0.0)
        x = torch.ones(1, 2)
        out("torch.save runs its own", (float(back(x)), float(pol(x)) != 2.0, float(copy.deepcopy(back)(x))))
    hp.restore()
hi.restore()
out("restored", ("forward" in online.__dict__, target.forward(1)))

# --- end_range with bad tokens never turns ranges off
for bad in ("garbage", 42, (1, 2), object()):
    nvtxsim.end_range(bad)
tok = nvtxsim.start_range("window")
nvtxsim.end_range(tok)
nvtxsim.end_range(tok)
out("after bad end_range", (nvtxsim.backend_info()["error"], nvtxsim.is_enabled()))
with phase("still_recorded"):
    pass
out("recording at end", nvtxsim.is_recording())
"""

STATES = {
    "plain": {},
    "forced": {"NVTX_INJECTION64_PATH": "/nonexistent/libnvtx-tool.so"},
}


def _output(text: str) -> list[str]:
    return [line[len("OUT ") :] for line in text.splitlines() if line.startswith("OUT ")]


def run_state(tmp_path, state: str, program: str = PROGRAM) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    prog = tmp_path / "same.py"
    prog.write_text(program)
    env = {**os.environ, "PYTHONPATH": str(REPO), **STATES[state]}
    for var in ("NVTXSIM_DISABLE", *(() if STATES[state] else ("NVTX_INJECTION64_PATH",))):
        env.pop(var, None)
    proc = subprocess.run(
        [sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=180, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _output(proc.stdout)


EXPECTED_SAME = [
    "refuse class: 'phase() cannot decorate a class (C)'",
    "refuse int: 'phase() decorates functions, methods and properties, not int objects'",
    "refuse str: 'phase() decorates functions, methods and properties, not str objects'",
    "partialmethod: 103",
    "static: (('static', 1), ('static', 2))",
    "klass: (('Env', 1), ('Env', 2))",
    "cached: (6, 6, 1, 1)",
    "cache_clear: 0",
    "prop: (7, 'property')",
    "cprop: ([3], True, 2)",
    "partial: (0, 4)",
    "builtin: (3,)",
    "lru module: (6765, 8, True, 'fib', True)",
    "recursion call: True",
    "recursion gen: True",
    "recursion coro: True",
    "instrument str: (['Net.forward'], [])",
    "deepcopy runs its own: (2, 10)",
    "pickle runs its own: (2, 5, 'forward')",
    "after bad end_range: (None, True)",
]


@pytest.fixture(scope="module")
def plain_output(tmp_path_factory):
    return run_state(tmp_path_factory.mktemp("plain"), "plain")


def test_plain_python_behaves_as_documented(plain_output):
    lines = plain_output
    assert lines[0] == "recording: False"
    for expected in EXPECTED_SAME:
        assert expected in lines, (expected, lines)
    assert lines[-1] == "recording at end: False"


def test_recording_behaves_like_plain_python(tmp_path, plain_output):
    forced = run_state(tmp_path, "forced")
    assert forced[0] == "recording: True" and forced[-1] == "recording at end: True"
    assert forced[1:-1] == plain_output[1:-1]


@needs_nsys
@pytest.mark.nsys
def test_under_nsys_same_output_and_ranges_recorded(tmp_path, plain_output):
    path, log = capture(tmp_path, PROGRAM, name="same")
    lines = program_lines(log, "OUT ")
    assert lines[0] == "recording: True" and lines[-1] == "recording at end: True", log[-2000:]
    assert lines[1:-1] == plain_output[1:-1]
    counts = collections.Counter(load(path).ranges.name.tolist())
    for name in (
        "static",
        "klass",
        "cached",
        "prop",
        "cprop",
        "partial",
        "builtin",
        "module_cached",
        "forward",
        "window",
        "still_recorded",
    ):
        assert counts[name] > 0, (name, counts)
    assert counts["window"] == 1 and counts["still_recorded"] == 1


@pytest.mark.parametrize(
    "value, disabled",
    [(v, True) for v in ("1", "true", "TRUE", "yes", "Yes", "on", " ON ")]
    + [(v, False) for v in ("0", "false", "False", "no", "NO", "off", "", " ")],
)
def test_disable_spellings(value, disabled):
    from nvtxsim import envflags

    assert envflags.parse_flag(value) is disabled


def test_disable_env_in_both_states_and_unknown_value():
    code = "import nvtxsim; print(nvtxsim.is_enabled(), nvtxsim.is_recording())"
    for extra in ({}, STATES["forced"]):
        for value, enabled in (("off", "True"), ("Yes", "False"), ("maybe", "False")):
            env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "NVTXSIM_DISABLE": value, **extra}
            proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
            assert proc.stdout.split()[0] == enabled, (value, extra, proc.stdout, proc.stderr)
            assert ("is not one of" in proc.stderr) == (value == "maybe"), proc.stderr


def test_cache_flag_uses_the_same_parser(monkeypatch):
    from nvtxsim.export import cache

    for value, on in (("on", True), ("Yes", True), ("off", False), ("0", False)):
        monkeypatch.setenv("NVTXSIM_CACHE", value)
        assert cache.enabled() is on


def test_run_gives_the_script_the_argv0_of_python(tmp_path):
    script = tmp_path / "show.py"
    script.write_text("import sys\nprint(repr(sys.argv), repr(__file__), __name__)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    direct = subprocess.run(
        [sys.executable, "show.py", "a", "-b"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    via = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "run", "show.py", "a", "-b"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert direct.returncode == via.returncode == 0, via.stderr
    assert via.stdout == direct.stdout


def test_instrumenting_an_instance_twice_wraps_once(profiler_attached):
    import nvtxsim

    class Net:
        def forward(self, x):
            return 2 * x

    net = Net()
    first = nvtxsim.instrument(net, ["forward"])
    again = nvtxsim.instrument(net, ["forward"])
    assert len(first.patched) == 1 and again.patched == [] and net.forward(3) == 6
    again.restore()
    first.restore()
    assert "forward" not in net.__dict__
