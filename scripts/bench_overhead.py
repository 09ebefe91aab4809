#!/usr/bin/env python3
"""Instrumentation overhead of nvtxsim against raw ``nvtx`` and ``torch.profiler``, measured in one run.

Why: nvtxsim promises phases that cost about what raw NVTX costs (goal: <= 1.2x raw ``nvtx`` for the
same range; <= 0.1 us per range when disabled) and, in a real loop, a small fraction of what
``torch.profiler`` with stacks costs (goal: nvtxsim's added time <= 0.2x of ``with_stack=True``'s).
Every goal is a ratio against an anchor measured in the same run, so machines and noise cancel.

    python scripts/bench_overhead.py                       # micro: no profiler attached
    nsys profile -t nvtx --sample=none --cpuctxsw=none -o /tmp/b python scripts/bench_overhead.py
    python scripts/bench_overhead.py --e2e --demo-args "--device cuda --num-envs 512"
    python scripts/bench_overhead.py --ab OLD_CHECKOUT . --pairs 5   # two trees, one run: B/A per form

Micro: timeit, several interleaved repeats, best repeat, net of an empty baseline (``pass`` for
``with`` forms, an empty function / method call for decorators and ``instrument``). nvtxsim is imported
BEFORE ``nvtx`` on purpose: under nsys 2022.4, ``nvtx>=0.2.12`` ranges are no-ops unless nvtxsim has
lifted nvtx's enabled-gate (it does so for the whole process), so only then do raw calls do real work.

A/B (``--ab A B``): the micro cases of two checkouts in one run, like ``scripts/bench_ab.py`` for reports:
child processes alternate A B B A ..., each imports the nvtxsim of its tree (``--tree``) and measures every
form in each state of ``--states``: ``as-is`` (whatever this process is: idle without a tool, recording
under ``nsys profile``), ``simulated-tool`` (nvtxsim's recording methods and wrappers installed as under
a tool, with no-op NVTX calls: the Python side of the hot path alone, no nsys needed) and ``live`` (live
timing on, CPU only). Printed: the median of each tree over the pairs and B/A; the raw ``nvtx`` forms run
the same code in both trees, so their B/A shows the noise of the run.

E2E: the demo env's time per iteration in (a) a plain process, modes interleaved with (c)
``torch.profiler`` ``with_stack=False`` and (d) ``with_stack=True`` (CPU + CUDA activities), and in
one process under ``nsys profile -t cuda,nvtx`` with nvtxsim (b0) disabled and (b) enabled, interleaved.
nvtxsim's added time is b - b0 (same process, same capture); the stack profiler's is d - a.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _tree(argv: list[str]) -> Path:
    """The checkout whose nvtxsim is measured: ``--tree DIR`` (A/B children), else this script's checkout.

    Read from argv before argparse runs, because nvtxsim is imported at the top of the module."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "--tree":
            return Path(argv[i + 1]).resolve()
    return HERE.parent


sys.path.insert(0, str(_tree(sys.argv)))  # the checkout, for `import nvtxsim` without installing
sys.path.insert(1, str(HERE))  # demo_env

# the import order matters here (nvtxsim first): not sorted
# isort: off
import nvtxsim  # noqa: E402  -- first, see the module docstring
from nvtxsim import phases as P  # noqa: E402
import nvtx  # noqa: E402
# isort: on

NAME = P.SIM_STEP
STYLE = P.style_for(NAME)
RESULT_TAG = "BENCH_RESULT "

# --------------------------------------------------------------------------- micro


def _namespace() -> dict:
    """Objects the timed statements use, built once (like module-level code in a real program)."""

    def empty() -> None:
        pass

    def empty2() -> None:
        pass

    def empty3() -> None:
        pass

    def gen3() -> Any:
        yield from (1, 2, 3)

    def gen3b() -> Any:
        yield from (1, 2, 3)

    class Plain:
        def step(self) -> None:
            pass

    class EmptyCM:  # the least a Python-level context manager can cost: CPython's floor for `with`
        __slots__ = ()

        def __enter__(self) -> EmptyCM:
            return self

        def __exit__(self, *exc: object) -> bool:
            return False

    class Instrumented:
        def step(self) -> None:
            pass

    class RawDecorated:
        @nvtx.annotate(NAME, color=STYLE.color, domain=P.DOMAIN, category=STYLE.category)
        def step(self) -> None:
            pass

    nvtxsim.instrument(Instrumented, {"step": NAME})
    dom = nvtx.get_domain(P.DOMAIN)
    return dict(
        nvtx=nvtx,
        nvtxsim=nvtxsim,
        NAME=NAME,
        C=STYLE.color,
        CAT=STYLE.category,
        DOM=P.DOMAIN,
        empty=empty,
        gen3=gen3,
        ph_gen3=nvtxsim.phase(NAME)(gen3b),
        plain=Plain(),
        E=EmptyCM(),
        PH=nvtxsim.phase(NAME),
        ph_fn=nvtxsim.phase(NAME)(empty2),
        inst=Instrumented(),
        A=nvtx.annotate(NAME, color=STYLE.color, domain=P.DOMAIN, category=STYLE.category),
        a_fn=nvtx.annotate(NAME, color=STYLE.color, domain=P.DOMAIN, category=STYLE.category)(empty3),
        raw_obj=RawDecorated(),
        D=dom,
        AT=dom.get_event_attributes(NAME, STYLE.color, STYLE.category),
    )


# case -> (statement, baseline case)
BASELINES = {"empty": "pass", "call": "empty()", "method": "plain.step()", "gen": "for _ in gen3(): pass"}
NVTXSIM_CASES = {
    "nvtxsim: with pre-built phase": ("with PH: pass", "empty"),
    "nvtxsim: with phase(name) inline": ("with nvtxsim.phase(NAME): pass", "empty"),
    "nvtxsim: @phase decorated call": ("ph_fn()", "call"),
    "nvtxsim: instrument()ed method": ("inst.step()", "method"),
}
RAW_CASES = {
    "nvtx: with pre-built annotate": ("with A: pass", "empty"),
    "nvtx: with annotate(...) inline": ("with nvtx.annotate(NAME, color=C, domain=DOM, category=CAT): pass", "empty"),
    "nvtx: @annotate decorated call": ("a_fn()", "call"),
    "nvtx: @annotate decorated method": ("raw_obj.step()", "method"),
    "nvtx: push_range/pop_range": ("nvtx.push_range(NAME, C, DOM, CAT); nvtx.pop_range(DOM)", "empty"),
    "nvtx: domain.push_range(attrs)/pop": ("D.push_range(AT); D.pop_range()", "empty"),
}
FLOOR = "python: with an empty context manager"
FLOOR_CASES = {FLOOR: ("with E: pass", "empty")}
# nvtxsim case -> the raw form doing the same work
PAIRS = {
    "nvtxsim: with pre-built phase": "nvtx: with pre-built annotate",
    "nvtxsim: with phase(name) inline": "nvtx: with annotate(...) inline",
    "nvtxsim: @phase decorated call": "nvtx: @annotate decorated call",
    "nvtxsim: instrument()ed method": "nvtx: @annotate decorated method",
}
FASTEST_RAW = "nvtx: domain.push_range(attrs)/pop"
#: Measured in A/B runs only (no raw nvtx form does the same): 4 ranges, one per resumption.
AB_CASES = {"nvtxsim: @phase generator, 3 items": ("for _ in ph_gen3(): pass", "gen")}
STATES = ("as-is", "simulated-tool", "live")


def measure(cases: dict, number: int, repeat: int) -> dict[str, float]:
    """Best-of-`repeat` seconds per statement, repeats interleaved across cases; net of each baseline."""
    ns = _namespace()
    timers = {k: timeit.Timer(s, globals=ns) for k, s in BASELINES.items()}
    timers.update({k: timeit.Timer(s, globals=ns) for k, (s, _) in cases.items()})
    best = {k: float("inf") for k in timers}
    for t in timers.values():
        t.timeit(max(number // 20, 1))  # warm caches (registered strings, attributes)
    for _ in range(repeat):
        for k, t in timers.items():
            best[k] = min(best[k], t.timeit(number) / number)
    return {k: max(best[k] - best[base], 0.0) for k, (_, base) in cases.items()}


def micro(args: argparse.Namespace) -> dict:
    live_raw = type(nvtx.get_domain(P.DOMAIN)).__name__ != "DummyDomain"
    res = measure({**NVTXSIM_CASES, **RAW_CASES, **FLOOR_CASES}, args.number, args.repeat)
    nvtxsim.disable()
    try:
        disabled = measure({**NVTXSIM_CASES, **FLOOR_CASES}, args.number, args.repeat)
    finally:
        nvtxsim.enable()
    env_disabled = None
    if not args.no_env_child:
        env = dict(os.environ, NVTXSIM_DISABLE="1")
        cmd = [sys.executable, __file__, "--disabled-child", "--number", str(args.number), "--repeat", str(args.repeat)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        env_disabled = _parse_result(out)
    return dict(
        facts=_facts(),
        live_raw=live_raw,
        enabled=res,
        disabled=disabled,
        env_disabled=env_disabled,
        number=args.number,
        repeat=args.repeat,
    )


def print_micro(r: dict) -> bool:
    us = lambda s: f"{s * 1e6:.3f}"  # noqa: E731
    f = r["facts"]
    print(f"## micro: per range, net of baseline (timeit, {r['number']} x {r['repeat']} interleaved, best repeat)")
    print(
        f"machine: {f['cpu']} ({f['cores']} cores), Python {f['python']}, nvtx {f['nvtx']}, "
        f"tool attached: {f['tool_attached']} ({f['injection'] or 'no NVTX_INJECTION64_PATH'})"
    )
    print(
        f"nvtxsim recording: {f['recording']}, nvtx gate lifted by nvtxsim: {f['gate_bypassed']}, "
        f"raw nvtx domain live: {r['live_raw']}"
    )
    if f["gate_bypassed"]:
        print(
            "note: nvtxsim was imported before nvtx and lifted nvtx>=0.2.12's enabled-gate (old nsys); "
            "without that the raw nvtx calls below would be no-ops under this nsys."
        )
    if f["tool_attached"] and not r["live_raw"]:
        print("WARNING: a tool is attached but raw nvtx is a dummy domain: raw numbers are no-ops, ratios invalid")
    ok = True
    floor = 0.02e-6
    print("\n| range form | µs/range | same work, raw nvtx | µs/range | ratio | vs domain API | goal ≤1.2× |")
    print("| --- | ---: | --- | ---: | ---: | ---: | --- |")
    e, fastest = r["enabled"], r["enabled"][FASTEST_RAW]
    for k, raw in PAIRS.items():
        a, b = e[k], e[raw]
        ratio = f"{a / b:.2f}×" if b >= floor else "—"
        vsd = f"{a / fastest:.2f}×" if fastest >= floor else "—"
        met = a <= 1.2 * b or a - b <= floor  # below the noise floor an excess of a few ns is not a ratio
        ok &= met
        print(f"| {k} | {us(a)} | {raw} | {us(b)} | {ratio} | {vsd} | {'met' if met else 'NOT met'} |")
    for k in ("nvtx: push_range/pop_range", FASTEST_RAW):
        print(f"| — | | {k} | {us(e[k])} | | | |")
    floor = r["disabled"][FLOOR]
    child_floor = r["env_disabled"]["disabled"].get(FLOOR) if r["env_disabled"] else None
    print(
        "\n| disabled form | nvtxsim.disable() µs/range | NVTXSIM_DISABLE=1 µs/range (child process) | above CPython floor (same process) | goal ≤0.1 µs |"
    )
    print("| --- | ---: | ---: | ---: | --- |")
    for k in NVTXSIM_CASES:
        d = r["disabled"][k]
        de = r["env_disabled"]["disabled"][k] if r["env_disabled"] else None
        met = d <= 0.1e-6 and (de is None or de <= 0.1e-6)
        ok &= met
        above = ""
        if k.startswith("nvtxsim: with"):
            above = us(d - floor) + (f" / {us(de - child_floor)}" if de is not None and child_floor is not None else "")
        print(f"| {k} | {us(d)} | {us(de) if de is not None else 'n/a'} | {above} | {'met' if met else 'NOT met'} |")
    print(
        f"| {FLOOR} (floor for any `with` form) | {us(floor)} | {us(child_floor) if child_floor is not None else 'n/a'} | | |"
    )
    print(f"\nmicro goals: {'all met' if ok else 'NOT all met'}")
    return ok


# --------------------------------------------------------------------------- e2e


def e2e_child(modes: list[str], demo_argv: list[str], iterations: int, reps: int, budget: float) -> dict:
    """Build the demo once, then time `iterations` iterations per mode, modes interleaved `reps` times.

    Stops after a complete round once `budget` seconds have passed (at least one timed round), so a
    slow machine still returns results inside a bounded device call.
    """

    import demo_env
    import torch

    start = time.perf_counter()
    dargs = demo_env.parse_args(demo_argv + ["--iterations", str(iterations)])
    env = demo_env.DemoEnv(dargs)
    env.warmup(max(dargs.warmup, 10))
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dargs.device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    times: dict[str, list[float]] = {m: [] for m in modes}
    for rep in range(reps + 1):  # round 0 warms each mode up (profiler start-up, allocator) and is dropped
        for m in modes:
            if m in ("torch_nostack", "torch_stack"):
                with torch.profiler.profile(activities=acts, with_stack=m == "torch_stack", record_shapes=False):
                    s = env.run(iterations)
            else:
                (nvtxsim.disable if m == "nvtxsim_off" else nvtxsim.enable)()
                s = env.run(iterations)
                nvtxsim.enable()
            ms = 1e3 * s / iterations
            print(
                f"e2e {m} round {rep}: {ms:.3f} ms/iter{' (warm-up, dropped)' if rep == 0 else ''} "
                f"[{time.perf_counter() - start:.0f} s]",
                file=sys.stderr,
                flush=True,
            )
            if rep:
                times[m].append(ms)
        if rep and time.perf_counter() - start > budget:
            break
    env.close()
    return dict(
        times=times, facts=_facts(), recording=nvtxsim.is_recording(), demo=vars(dargs) | {"camera": list(dargs.camera)}
    )


def e2e(args: argparse.Namespace) -> dict:
    demo_argv = shlex.split(args.demo_args)
    common = [
        __file__,
        "--e2e-iterations",
        str(args.e2e_iterations),
        "--e2e-reps",
        str(args.e2e_reps),
        "--e2e-budget",
        str(args.e2e_budget),
        "--demo-args",
        args.demo_args,
    ]
    plain = _run_child([sys.executable] + common + ["--e2e-child", "plain,torch_nostack,torch_stack"])
    nsys = args.nsys or os.environ.get("NSYS") or shutil.which("nsys")
    if not nsys:
        raise SystemExit("bench_overhead: --e2e needs nsys (set --nsys or $NSYS)")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = (
            [
                nsys,
                "profile",
                "-t",
                args.trace,
                "--sample=none",
                "--cpuctxsw=none",
                "--force-overwrite=true",
                "-o",
                str(Path(tmp) / "e2e"),
                sys.executable,
            ]
            + common
            + ["--e2e-child", "nvtxsim_off,nvtxsim_on"]
        )
        under = _run_child(cmd)
    version = subprocess.run([nsys, "--version"], capture_output=True, text=True).stdout.strip()
    return dict(
        plain=plain,
        nsys=under,
        nsys_version=version,
        nsys_cmd=" ".join(cmd[:8]) + " python ...",
        demo_argv=demo_argv,
        iterations=args.e2e_iterations,
        reps=args.e2e_reps,
    )


def print_e2e(r: dict) -> bool:
    med = {m: statistics.median(v) for part in ("plain", "nsys") for m, v in r[part]["times"].items()}
    f = r["plain"]["facts"]
    print(
        f"## e2e: demo_env {' '.join(r['demo_argv'])}, {r['iterations']} iterations per block, "
        f"up to {r['reps']} interleaved blocks per mode (after a dropped warm-up round), median"
    )
    print(
        f"machine: {f['cpu']} ({f['cores']} cores), GPU: {f['gpu']}, torch {f['torch']}, nvtx {f['nvtx']}, "
        f"{r['nsys_version']}; nvtxsim recording under nsys: {r['nsys']['recording']}"
    )
    labels = {
        "plain": "(a) plain (phases present, no tool)",
        "torch_nostack": "(c) torch.profiler with_stack=False",
        "torch_stack": "(d) torch.profiler with_stack=True",
        "nvtxsim_off": "(b0) nsys -t " + r["nsys_cmd"].split(" -t ")[1].split()[0] + ", nvtxsim disabled",
        "nvtxsim_on": "(b) same nsys process, nvtxsim phases on",
    }
    print("\n| mode | ms/iteration (median) | blocks |")
    print("| --- | ---: | --- |")
    for m, label in labels.items():
        v = r["plain" if m in r["plain"]["times"] else "nsys"]["times"][m]
        print(f"| {label} | {med[m]:.3f} | {', '.join(f'{x:.3f}' for x in v)} |")
    added_nvtxsim = med["nvtxsim_on"] - med["nvtxsim_off"]
    added_stack = med["torch_stack"] - med["plain"]
    added_nsys_total = med["nvtxsim_on"] - med["plain"]
    ratio = added_nvtxsim / added_stack if added_stack > 0 else float("nan")
    print(
        f"\nnvtxsim added (b - b0): {added_nvtxsim:+.3f} ms/iter; torch.profiler with_stack=True added (d - a): "
        f"{added_stack:+.3f} ms/iter; nsys capture + nvtxsim added (b - a): {added_nsys_total:+.3f} ms/iter"
    )
    on, off = r["nsys"]["times"]["nvtxsim_on"], r["nsys"]["times"]["nvtxsim_off"]
    paired = [a - b for a, b in zip(on, off)]  # same round, back to back: drift cancels
    if len(paired) > 1:
        sem = statistics.stdev(paired) / len(paired) ** 0.5
        print(
            f"paired rounds (b - b0): median {statistics.median(paired):+.3f}, mean {statistics.mean(paired):+.3f} "
            f"± {sem:.3f} (s.e.m.) ms/iter over {len(paired)} rounds; ratio of the paired median: "
            f"{statistics.median(paired) / added_stack:.3f}"
        )
    ok = ratio <= 0.2
    print(
        f"e2e ratio nvtxsim added / with_stack added = {ratio:.3f} (goal <= 0.2: {'met' if ok else 'NOT met'}); "
        f"whole nsys capture incl. CUDA tracing / with_stack added = {added_nsys_total / added_stack:.3f}"
    )
    return ok


# --------------------------------------------------------------------------- A/B: two trees in one run


def _enter_state(state: str) -> None:
    """Put this process in ``state`` before the timed objects are built (decorators and instrument() see it).

    ``simulated-tool`` sets what an attached tool with an open domain sets in ``nvtxsim.emit.ranges`` (the
    same private names in both trees), leaving NVTX's own calls no-ops."""
    if state == "simulated-tool":
        from nvtxsim.emit import ranges as E

        E._active = True
        E._install_with_methods()
    elif state == "live":
        nvtxsim.live.start(None, every=1 << 62, gpu=False)  # no step(): one window, never written


def ab_child(args: argparse.Namespace) -> dict:
    """One tree, one state: every form with the state's methods, and (as-is only) every form disabled."""
    _enter_state(args.ab_child)
    res = measure({**NVTXSIM_CASES, **AB_CASES, **RAW_CASES, **FLOOR_CASES}, args.number, args.repeat)
    disabled = None
    if args.ab_child == "as-is":
        nvtxsim.disable()
        try:
            disabled = measure({**NVTXSIM_CASES, **AB_CASES, **FLOOR_CASES}, args.number, args.repeat)
        finally:
            nvtxsim.enable()
    return dict(enabled=res, disabled=disabled, facts=_facts(), measuring=nvtxsim.emit.ranges.is_measuring())


def ab(args: argparse.Namespace) -> dict:
    """Children alternate A B, B A, ... per state; each child's best repeat per form is one sample."""
    trees = {"A": str(Path(args.ab[0]).resolve()), "B": str(Path(args.ab[1]).resolve())}
    states = [s.strip() for s in args.states.split(",") if s.strip()]
    bad = [s for s in states if s not in STATES]
    if bad:
        raise SystemExit(f"bench_overhead: unknown state(s) {bad}; choose from {', '.join(STATES)}")
    runs: dict[str, dict[str, list[dict]]] = {state: {"A": [], "B": []} for state in states}
    for i in range(args.pairs):
        for state in states:
            for side in ("A", "B") if i % 2 == 0 else ("B", "A"):
                cmd = [sys.executable, __file__, "--tree", trees[side], "--ab-child", state]
                cmd += ["--number", str(args.number), "--repeat", str(args.repeat)]
                time.sleep(args.pause)  # a profiler's agent digests the last child's ranges meanwhile
                runs[state][side].append(_run_child(cmd))
                print(f"ab pair {i + 1}/{args.pairs} {state} {side} done", file=sys.stderr, flush=True)
    return dict(trees=trees, runs=runs, pairs=args.pairs, number=args.number, repeat=args.repeat)


def _ab_rows(label: str, a: list[dict], b: list[dict], cases: list[str]) -> list[float]:
    """Print one table per form: each tree's best child (noise only adds time) and median child, and B/A of
    both; returns the best-child B/A of the nvtxsim forms."""
    us = lambda s: f"{s * 1e6:.4f}"  # noqa: E731
    ratio = lambda x, y: y / x if x >= 0.005e-6 else None  # noqa: E731  -- below a few ns: noise, not a ratio
    show = lambda v: f"{v:.3f}" if v is not None else "—"  # noqa: E731
    print(f"\n{label}\n")
    print("| form | A µs (best) | B µs (best) | B/A best | A µs (median) | B µs (median) | B/A median |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = []
    for k in cases:
        ba, bb = min(x[k] for x in a), min(x[k] for x in b)
        ma, mb = statistics.median(x[k] for x in a), statistics.median(x[k] for x in b)
        best = ratio(ba, bb)
        if best is not None and k.startswith("nvtxsim"):
            ratios.append(best)
        print(f"| {k} | {us(ba)} | {us(bb)} | {show(best)} | {us(ma)} | {us(mb)} | {show(ratio(ma, mb))} |")
    return ratios


def _ab_goal_rows(a: list[dict], b: list[dict]) -> None:
    """The overhead goal's own ratio, nvtxsim form / raw nvtx form doing the same work, taken within each child
    (so a child's noise, a profiler's agent busy in the background say, cancels); median over the children."""
    floor = 0.005e-6  # below a few ns the raw form is a no-op: no ratio
    per = lambda runs, k, raw: [x[k] / x[raw] for x in runs if x[raw] >= floor]  # noqa: E731
    rows = [(k, per(a, k, raw), per(b, k, raw)) for k, raw in PAIRS.items()]
    rows = [(k, ra, rb) for k, ra, rb in rows if ra and rb]
    if not rows:
        return
    print("\nthe goal's ratio, nvtxsim form / the same work in raw nvtx (within each child; median over children)\n")
    print("| form | A ratio | B ratio | B/A |\n| --- | ---: | ---: | ---: |")
    for k, ra, rb in rows:
        ma, mb = statistics.median(ra), statistics.median(rb)
        print(f"| {k} | {ma:.3f} | {mb:.3f} | {mb / ma:.3f} |")


def print_ab(r: dict) -> bool:
    print(f"## A/B micro: A = {r['trees']['A']}, B = {r['trees']['B']}")
    print(
        f"{r['pairs']} interleaved pairs of child processes per state (A B, B A, ...), timeit {r['number']} x "
        f"{r['repeat']} per form in each child (best repeat, net of its baseline)"
    )
    ours = [*NVTXSIM_CASES, *AB_CASES]
    worst = []
    for state, runs in r["runs"].items():
        a, b = runs["A"], runs["B"]
        fa, fb = a[0]["facts"], b[0]["facts"]
        print(
            f"\n### state {state}: tool attached {fa['tool_attached']}, recording A {fa['recording']} / "
            f"B {fb['recording']}, phases measuring A {a[0]['measuring']} / B {b[0]['measuring']}, "
            f"gate lifted A {fa['gate_bypassed']} / B {fb['gate_bypassed']}"
        )
        if (fa["recording"], a[0]["measuring"]) != (fb["recording"], b[0]["measuring"]):
            print("WARNING: the trees are not in the same state: ratios compare different paths")
        enabled = [x["enabled"] for x in a], [x["enabled"] for x in b]
        worst += _ab_rows("nvtxsim forms", *enabled, ours)
        _ab_rows(
            "the same code in both trees (raw nvtx, CPython's floor): B/A here is the run's noise",
            *enabled,
            [*RAW_CASES, *FLOOR_CASES],
        )
        if fa["tool_attached"] and fb["tool_attached"]:  # without a tool raw nvtx is a no-op: no ratio
            _ab_goal_rows(*enabled)
        if a[0]["disabled"] is not None:
            disabled = [x["disabled"] for x in a], [x["disabled"] for x in b]
            worst += _ab_rows("nvtxsim.disable()d forms", *disabled, [*ours, *FLOOR_CASES])
    if worst:
        print(f"\nB/A (best child) over the nvtxsim forms: median {statistics.median(worst):.3f}, max {max(worst):.3f}")
    return True


# --------------------------------------------------------------------------- plumbing


def _facts() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = nvtxsim.backend_info()
    gpu, torch_v = None, None
    if "torch" in sys.modules:
        import torch

        torch_v = torch.__version__
        if torch.cuda.is_available():
            gpu = f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda})"
    return dict(
        cpu=cpu,
        cores=os.cpu_count(),
        python=platform.python_version(),
        nvtx=info["nvtx_version"],
        torch=torch_v,
        gpu=gpu,
        tool_attached=info["tool_attached"],
        injection=info["injection"],
        recording=info["recording"],
        gate_bypassed=info["gate_bypassed"],
    )


def _run_child(cmd: list[str]) -> dict:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # stderr (progress) passes through
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
        raise SystemExit(f"bench_overhead: child failed ({proc.returncode}): {' '.join(cmd[:6])} ...")
    return _parse_result(proc.stdout)


def _parse_result(out: str) -> dict:
    for line in out.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    raise SystemExit("bench_overhead: child printed no result:\n" + out[-2000:])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tool = bool(os.environ.get("NVTX_INJECTION64_PATH"))
    p.add_argument("--number", type=int, default=20_000 if tool else 200_000, help="statements per repeat")
    p.add_argument("--repeat", type=int, default=5 if tool else 7)
    p.add_argument("--no-env-child", action="store_true", help="skip the NVTXSIM_DISABLE=1 subprocess")
    p.add_argument("--json", metavar="FILE", help="also write the raw results as JSON")
    p.add_argument("--e2e", action="store_true", help="end-to-end demo_env comparison (launches nsys itself)")
    p.add_argument(
        "--demo-args",
        help="demo_env.py options for --e2e (default: cuda, 512 envs, 32x32 camera, "
        "decimation 4 when CUDA is available, else cpu, 64 envs, 16x16, decimation 2)",
    )
    p.add_argument("--e2e-iterations", type=int, default=100)
    p.add_argument("--e2e-reps", type=int, default=5)
    p.add_argument(
        "--e2e-budget", type=float, default=35.0, help="seconds per e2e process before it stops adding rounds"
    )
    p.add_argument("--nsys", help="nsys binary for --e2e (default: $NSYS, then PATH)")
    p.add_argument("--trace", default="cuda,nvtx", help="nsys -t for --e2e")
    p.add_argument("--ab", nargs=2, metavar=("A", "B"), help="micro cases of two checkouts in one run: B/A per form")
    p.add_argument("--pairs", type=int, default=5, help="interleaved A/B child pairs per state (--ab)")
    p.add_argument("--states", default="as-is,simulated-tool,live", help=f"--ab states, of {', '.join(STATES)}")
    p.add_argument(
        "--pause",
        type=float,
        default=2.0 if tool else 0.0,
        help="seconds before each --ab child (default 2 under a tool: its agent stops competing for the CPU)",
    )
    p.add_argument("--tree", help="checkout whose nvtxsim is measured (default: this script's)")
    p.add_argument("--ab-child", choices=STATES, help=argparse.SUPPRESS)
    p.add_argument("--disabled-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--e2e-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.demo_args is None:
        args.demo_args = (
            "--device cuda --num-envs 512 --camera 32x32 --decimation 4"
            if _cuda()
            else "--device cpu --num-envs 64 --camera 16x16 --decimation 2"
        )
    if args.disabled_child:
        res = dict(
            disabled=measure({**NVTXSIM_CASES, **FLOOR_CASES}, args.number, args.repeat), enabled=nvtxsim.is_enabled()
        )
        print(RESULT_TAG + json.dumps(res))
        return 0
    if args.ab_child:
        print(RESULT_TAG + json.dumps(ab_child(args)))
        return 0
    if args.e2e_child:
        res = e2e_child(
            args.e2e_child.split(","), shlex.split(args.demo_args), args.e2e_iterations, args.e2e_reps, args.e2e_budget
        )
        print(RESULT_TAG + json.dumps(res))
        return 0
    if args.ab:
        res = ab(args)
        ok = print_ab(res)
    elif args.e2e:
        res = e2e(args)
        ok = print_e2e(res)
    else:
        res = micro(args)
        ok = print_micro(res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0 if ok else 1


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


if __name__ == "__main__":
    sys.exit(main())
