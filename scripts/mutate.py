#!/usr/bin/env python3
"""Mutation check of nvtxsim's core: plant one small bug at a time and see whether the tests notice.

Why: a test that passes whatever the code computes proves nothing. Each mutant changes one operator or
constant inside a chosen function (the projection and the join, each finding kind's cost and trigger,
scaling's fit and class, live's aggregation, terminal fitting, the escaping of each output format) and
runs only the tests that cover that code (-x, a timeout). A mutant the tests fail on is *killed*; one
they pass is a *survivor*: either a missing assertion, or a change that cannot alter any result
(an equivalent mutant), which reports/mutation.md lists with why.

    python scripts/mutate.py --per-target 10 --out reports/raw/mutation.json     # the recorded run
    python scripts/mutate.py --list --target escaping                           # the sites, no run
    python scripts/mutate.py --target findings --module rank_skew.py --per-module 8   # one module's sites

The tree is copied once into a temporary folder (tests/data linked, not copied); each mutant rewrites
one file there, runs the tests with that folder first on PYTHONPATH (no bytecode written, so a stale
.pyc can never hide a mutant) and puts the file back. Your checkout is never touched.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header"]


@dataclass(frozen=True)
class Target:
    name: str
    path: str  # relative to the repository
    functions: tuple[str, ...]  # qualified names; "Class.method" for methods
    tests: tuple[str, ...]  # pytest arguments, fastest first
    share: float = 1.0  # of --per-target: findings spans eighteen modules


# nsys's own CSVs on real exports (projection, GPU ops per range, kernels per range) and a brute-force reference.
AGREEMENT = (
    "tests/test_core_values.py",
    "tests/test_report_agreement.py",
    "tests/test_report_gpu_exports.py",
    "-k",
    "core_values or brute_force or demo_h200 or findings_planted or synthetic or kern_sum or camera or graph_launches",
)
TARGETS = (
    Target(
        "projection",
        "nvtxsim/analysis/projection.py",
        ("_per_launch", "_union_length", "_project_in_memory", "_reduce_chunk", "_group_quantiles", "select_ranges"),
        AGREEMENT,
    ),
    Target(
        "join",
        "nvtxsim/analysis/launches.py",
        ("launch_key", "launches", "op_pairs", "contained", "call_windows", "gpu_activity"),
        AGREEMENT,
    ),
    Target(
        "findings",
        "nvtxsim/analysis/findings/",  # every kind module; see FINDINGS
        (),
        (
            "tests/test_findings_costs.py",
            "tests/test_cpu_findings.py",
            "tests/test_findings.py",
            "tests/test_warm_up.py",
            "tests/test_rank_skew.py::test_h200_export_names_the_slow_rank",  # the others capture with torchrun
            "--deselect",  # a live capture of sleeps: on a loaded machine it fails now and then, mutant or not
            "tests/test_warm_up.py::test_a_real_capture_names_its_warm_up_and_its_periodic_stall",
        ),
        4.0,
    ),
    Target(
        "scaling",
        "nvtxsim/analysis/fits.py",
        ("_weights", "fit_power", "classify", "class_of_exponent", "loglog_slope", "fit_metric", "centre"),
        (
            "tests/test_fits_values.py",
            "tests/test_scaling.py",
            "-k",
            "fits_values or fit_power or classes or h200_gpu or predict_and or zero",
        ),
    ),
    Target(
        "live",
        "nvtxsim/emit/live/writer.py",
        ("FlushedWindow.summary",),
        (
            "tests/test_live_values.py",
            "tests/test_live.py",
            "-k",
            "live_values or threads_are_measured or sampling or late_ranges or start_stop",
        ),
        0.7,
    ),
    Target(
        "live_totals",
        "nvtxsim/analysis/live.py",
        ("totals", "series"),
        (
            "tests/test_live_values.py",
            "tests/test_live.py",
            "tests/test_live_record.py",
            "-k",
            "live_values or live_command or live_heading or live_record",
        ),
        0.7,
    ),
    Target(
        "terminal",
        "nvtxsim/reporting/renderers/terminal.py",
        ("fit_width", "_take", "shorten_middle", "shorten_end", "_shorten_cell", "fit_text", "fit_parts", "_choose"),
        ("tests/test_terminal_values.py", "tests/test_terminal_edges.py", "tests/test_terminal_width.py"),
    ),
    Target(
        "escaping",
        "nvtxsim/reporting/escaping.py",
        ("printable", "_escape_char", "markdown_cell", "csv_cell", "csv_table", "json_safe", "html_json", "_json_key"),
        (
            "tests/test_escaping_values.py",
            "tests/test_hostile_names.py",
            "-k",
            "not chromium and not non_utf8",
            "tests/test_renderers.py",
        ),
    ),
)
# A finding kind's trigger (applies / thresholds) and cost (the ns it charges), module by module.
FINDINGS = {
    "bound.py": ("phase_self", "_load"),
    "cpu_bound.py": ("applies", "detect"),
    "gpu_bound.py": ("applies", "detect"),
    "launch_bound.py": ("applies", "detect"),
    "sync.py": ("_finding", "detect"),
    "pageable_copy.py": ("detect", "_evidence"),
    "outlier_iterations.py": ("outliers",),
    "other_thread_gpu.py": ("detect", "overlap_rows"),
    "unattributed_gpu.py": ("detect",),
    "model.py": ("severity",),
    "context.py": ("Context.share", "Context.per_iter", "blocked"),
    "warm_up.py": ("causes", "detect", "_child_process_ns"),
    "phase_stalls.py": ("detect", "period"),
    "os_wait.py": ("detect", "_self_ns"),
    "rank_skew.py": ("detect_ranks", "_extra_phases"),
    "cpu_work.py": ("detect",),  # cpu_bound without CUDA
    "cuda_calls.py": ("cause",),  # the half that names a CUDA cause (stalls, slow iterations, cpu_bound)
    "os_calls.py": ("name_os_wait", "summarise"),  # the half that names an OS wait; a phase's waits (os_wait's cost)
}

CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
CMP_SWAP.update({ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In})
MINMAX = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum", "amin": "amax", "amax": "amin"}
MINMAX.update({"argmin": "argmax", "argmax": "argmin", "floor": "ceil", "ceil": "floor"})


@dataclass
class Mutant:
    target: str
    path: str
    function: str
    line: int
    operator: str
    before: str
    after: str
    outcome: str = ""  # killed / survived / timeout / invalid
    seconds: float = 0.0
    failed_test: str = ""


def _functions(tree: ast.Module, names: tuple[str, ...]) -> list[tuple[str, ast.AST]]:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            found.append((node.name, node))
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                qual = f"{node.name}.{sub.name}" if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) else ""
                if qual in names:
                    found.append((qual, sub))
    return found


def _mutations(node: ast.AST) -> list[tuple[str, ast.AST, ast.AST]]:
    """(operator, node to replace, its mutated copy) for one node."""
    out: list[tuple[str, ast.AST, ast.AST]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in CMP_SWAP:
                new = copy.deepcopy(node)
                new.ops[i] = CMP_SWAP[type(op)]()
                out.append(("flip comparison", node, new))
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        nudged = value + 1 if isinstance(value, int) else (value * 1.25 if value else 0.1)
        out.append(("constant off by one" if isinstance(value, int) else "constant nudged", node, ast.Constant(nudged)))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        out.append(("drop subtraction", node, copy.deepcopy(node.left)))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not _stringy(node):
        out.append(("add to subtract", node, ast.BinOp(copy.deepcopy(node.left), ast.Sub(), copy.deepcopy(node.right))))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("swap and/or", node, ast.BoolOp(other, copy.deepcopy(node.values))))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("drop not", node, copy.deepcopy(node.operand)))
    elif isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in MINMAX:
            new_f = copy.deepcopy(f)
            setattr(new_f, "id" if isinstance(f, ast.Name) else "attr", MINMAX[name])
            out.append((f"swap {name}/{MINMAX[name]}", f, new_f))
    return out


def _stringy(node: ast.BinOp) -> bool:
    """Text joined with +: turning it into a subtraction only raises TypeError, which proves nothing."""
    return any(
        isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, str))
        for n in (node.left, node.right)
    )


def _module_constants(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """Module-level numbers (thresholds such as ``SHARE = 0.2``): a kind's trigger often sits there."""
    return [
        ("<module>", n)
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and isinstance(n.value, ast.Constant)
        and type(n.value.value) in (int, float)
    ]


def _skipped_nodes(fn: ast.AST) -> set[int]:
    """Annotations, f-strings and asserts (type narrowing of an invariant): no behaviour there to test, or
    no reliable source positions."""
    skip: set[int] = set()
    for node in ast.walk(fn):
        parts: list[ast.AST | None] = []
        if isinstance(node, (ast.JoinedStr, ast.Assert)):
            parts = [node]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts = [node.returns, *(a.annotation for a in (*node.args.args, *node.args.kwonlyargs))]
        elif isinstance(node, ast.AnnAssign):
            parts = [node.annotation]
        for part in parts:
            if part is not None:
                skip.update(id(n) for n in ast.walk(part))
    return skip


def _offset(lines: list[str], lineno: int, col: int) -> int:
    """The character offset of (line, UTF-8 byte column) in the joined text."""
    return sum(len(x) for x in lines[: lineno - 1]) + len(lines[lineno - 1].encode()[:col].decode())


def _replace(text: str, node: ast.AST, code: str) -> str:
    lines = text.splitlines(keepends=True)
    start = _offset(lines, node.lineno, node.col_offset)
    end = _offset(lines, node.end_lineno or node.lineno, node.end_col_offset or 0)
    return text[:start] + code + text[end:]


def sites(target: Target) -> list[tuple[Mutant, str]]:
    """Every mutant of the target's functions, each with the whole mutated source of its file."""
    files = (
        [(target.path + f, fns) for f, fns in FINDINGS.items()]
        if target.name == "findings"
        else [(target.path, target.functions)]
    )
    found: list[tuple[Mutant, str]] = []
    for rel, fns in files:
        text = (REPO / rel).read_text(encoding="utf-8")
        tree = ast.parse(text)
        original = ast.dump(tree)
        for qual, fn in _functions(tree, fns) + _module_constants(tree):
            skip = _skipped_nodes(fn)
            for node in ast.walk(fn):
                if id(node) in skip or not hasattr(node, "lineno"):
                    continue
                for op, old, new in _mutations(node):
                    code = ast.unparse(new)
                    code = code if isinstance(new, (ast.Name, ast.Attribute)) else f"({code})"
                    mutated = _replace(text, old, code)
                    try:
                        if ast.dump(ast.parse(mutated)) == original:
                            continue
                    except SyntaxError:
                        continue
                    before = ast.get_source_segment(text, old) or ""
                    found.append((Mutant(target.name, rel, qual, old.lineno, op, before, code), mutated))
    return found


def choose(all_sites: list[tuple[Mutant, str]], n: int) -> list[tuple[Mutant, str]]:
    """Up to n sites spread over files, then functions and operators (round robin), deterministic."""
    groups: dict[tuple[str, str, str], list[tuple[Mutant, str]]] = {}
    for site in all_sites:
        groups.setdefault((site[0].path, site[0].function, site[0].operator), []).append(site)
    files: dict[str, list[list[tuple[Mutant, str]]]] = {}
    for key in sorted(groups):
        files.setdefault(key[0], []).append(groups[key])
    chosen: list[tuple[Mutant, str]] = []
    turn = 0
    while len(chosen) < n and any(any(q) for qs in files.values() for q in qs):
        for qs in files.values():
            live = [q for q in qs if q]
            if live and len(chosen) < n:
                q = live[turn % len(live)]
                chosen.append(q.pop(len(q) // 2))
        turn += 1
    return sorted(chosen, key=lambda s: (s[0].path, s[0].line))


def _recorded(path: Path) -> list[dict]:
    """An --out file, or the printed log of a run (its "survived ..." lines) when the run did not finish."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    line = re.compile(r"^(\w+) +\S+ (\S+):(\d+) (\S+): ('.*'|\".*\") -> ('.*'|\".*\")$")
    out = []
    for m in filter(None, map(line.match, text.splitlines())):
        before, after = ast.literal_eval(m[5]), ast.literal_eval(m[6])
        out.append(
            {"outcome": m[1], "path": m[2], "line": int(m[3]), "function": m[4], "before": before, "after": after}
        )
    return out


def _moved(recorded: list[dict], since: str) -> list[dict]:
    """The recorded lines carried from commit ``since`` (the code the run mutated) to the working tree's files."""
    out = []
    for r in recorded:
        old = subprocess.run(["git", "show", f"{since}:{r['path']}"], cwd=REPO, capture_output=True, text=True)
        new = (REPO / r["path"]).read_text(encoding="utf-8").splitlines()
        line = r["line"]
        if old.returncode == 0:
            for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, old.stdout.splitlines(), new, False).get_opcodes():
                if tag == "equal" and i1 < line <= i2:
                    line = line - i1 + j1
                    break
            else:
                line = -1  # the line itself changed: its mutant no longer exists as recorded
        out.append({**r, "line": line})
    return out


def survivors_of(recorded: list[dict], targets: list[Target]) -> list[tuple[Target, list[tuple[Mutant, str]]]]:
    """The recorded survivors planted again: the same change in the same function on the same line."""
    key = lambda m: (m["path"], m["line"], m["function"], m["before"], m["after"])  # noqa: E731
    wanted = [r for r in recorded if r["outcome"] == "survived"]
    plan = []
    for t in targets:
        candidates: dict[tuple, list[tuple[Mutant, str]]] = {}
        for site in sites(t):
            candidates.setdefault(key(asdict(site[0])), []).append(site)
        again = []
        for r in wanted:
            again.extend(site for site in candidates.get(key(r), []) if site not in again)
        if again:
            plan.append((t, again))
    return plan


def _only_modules(t: Target, chosen: list[tuple[Mutant, str]], args: argparse.Namespace) -> list[tuple[Mutant, str]]:
    """``--module``: the sites in those files only; with ``--per-module`` N, N of each file's, shared out evenly
    over its functions (and its module-level numbers) rather than what ``--per-target`` picked over the target."""
    every = [s for s in sites(t) if Path(s[0].path).name in args.module]
    if args.per_module is None or args.rerun:
        return [s for s in chosen if Path(s[0].path).name in args.module]
    out: list[tuple[Mutant, str]] = []
    for path in dict.fromkeys(s[0].path for s in every):
        mine = [s for s in every if s[0].path == path]
        per_fn = {fn: [s for s in mine if s[0].function == fn] for fn in dict.fromkeys(s[0].function for s in mine)}
        share = dict.fromkeys(per_fn, 0)
        while sum(share.values()) < min(args.per_module, len(mine)):  # one each in turn, while a function has more
            for fn in per_fn:
                if share[fn] < len(per_fn[fn]) and sum(share.values()) < args.per_module:
                    share[fn] += 1
        for fn, its in per_fn.items():
            out += choose(its, share[fn])
    return sorted(out, key=lambda s: (s[0].path, s[0].line))


def _copy_tree(work: Path) -> Path:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    root = work / "tree"
    for rel in files:
        if rel.startswith("tests/data/") or not (REPO / rel).is_file():
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    (root / "tests" / "data").symlink_to(REPO / "tests" / "data")
    return root


def _env(root: Path, work: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", NVTXSIM_CACHE="0")
    env["XDG_CACHE_HOME"] = str(work / "cache")
    return env


def run_tests(root: Path, env: dict[str, str], tests: tuple[str, ...], timeout: float) -> tuple[str, float, str]:
    t0 = time.monotonic()
    try:
        p = subprocess.run([*PYTEST, *tests], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, ""
    failed = next((ln.split(" ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith(("FAILED ", "ERROR "))), "")
    return ("survived" if p.returncode == 0 else "killed"), time.monotonic() - t0, failed[:160]


def markdown(results: list[dict]) -> str:
    """Per target: mutants, killed, score; then every survivor (the rows reports/mutation.md explains)."""
    lines = ["| target | mutants | killed | score |", "| --- | ---: | ---: | ---: |"]
    for name in dict.fromkeys(r["target"] for r in results):
        rows = [r for r in results if r["target"] == name]
        k = sum(r["outcome"] in ("killed", "timeout") for r in rows)
        lines.append(f"| {name} | {len(rows)} | {k} | {100 * k / len(rows):.0f} % |")
    k = sum(r["outcome"] in ("killed", "timeout") for r in results)
    lines.append(f"| **all** | {len(results)} | {k} | {100 * k / max(1, len(results)):.0f} % |")
    lines += ["", "| survivor | mutation |", "| --- | --- |"]
    for r in results:
        if r["outcome"] == "survived":
            change = f"`{r['before']}` → `{r['after']}`".replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {r['path']}:{r['line']} {r['function']} | {r['operator']}: {change} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", action="append", choices=[t.name for t in TARGETS], help="only these (repeatable)")
    ap.add_argument("--per-target", type=int, default=10, help="mutants per target (spread over its functions)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per mutant's test run (a hang is killed)")
    ap.add_argument("--list", action="store_true", help="print the chosen mutants, run nothing")
    ap.add_argument("--out", type=Path, help="write every mutant and its outcome here (JSON)")
    ap.add_argument("--rerun", type=Path, help="run again only the survivors recorded in this --out file")
    ap.add_argument("--since", help="with --rerun: the commit the recorded run mutated (its lines are carried over)")
    ap.add_argument(
        "--tests", help="pytest arguments instead of each target's (with --rerun: only the tests added since)"
    )
    ap.add_argument(
        "--module", action="append", help="only the sites in files of this name (repeatable: warm_up.py, fits.py)"
    )
    ap.add_argument("--per-module", type=int, help="with --module: mutants per module instead of --per-target")
    ap.add_argument("--markdown", type=Path, help="print the score table and survivors of an --out file, run nothing")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8"))), end="")
        return 0
    targets = [t for t in TARGETS if not args.target or t.name in args.target]
    if args.tests:
        targets = [replace(t, tests=tuple(shlex.split(args.tests))) for t in targets]
    if args.rerun:
        recorded = _recorded(args.rerun)
        plan = survivors_of(_moved(recorded, args.since) if args.since else recorded, targets)
    else:
        plan = [(t, choose(sites(t), round(args.per_target * t.share))) for t in targets]
    if args.module:
        plan = [(t, _only_modules(t, chosen, args)) for t, chosen in plan]
        plan = [(t, chosen) for t, chosen in plan if chosen]
    if args.list:
        for t, chosen in plan:
            for m, _ in chosen:
                print(f"{t.name:12} {m.path}:{m.line} {m.function}: {m.operator}: {m.before!r} -> {m.after!r}")
        return 0
    with tempfile.TemporaryDirectory(prefix="nvtxsim-mutate-") as tmp:
        work = Path(tmp)
        root = _copy_tree(work)
        env = _env(root, work)
        results: list[Mutant] = []
        for t, chosen in plan:
            base, secs, failed = run_tests(root, env, t.tests, args.timeout)
            print(
                f"# {t.name}: unmutated tests {'pass' if base == 'survived' else base} in {secs:.0f} s {failed}",
                flush=True,
            )
            if base != "survived":
                return 2  # the tests fail without any mutant: nothing to learn
            for m, mutated in chosen:
                original = (root / m.path).read_text(encoding="utf-8")
                (root / m.path).write_text(mutated, encoding="utf-8")
                try:
                    m.outcome, m.seconds, m.failed_test = run_tests(root, env, t.tests, args.timeout)
                finally:
                    (root / m.path).write_text(original, encoding="utf-8")
                results.append(m)
                print(
                    f"{m.outcome:8} {m.seconds:5.0f}s {m.path}:{m.line} {m.function}: {m.before!r} -> {m.after!r}",
                    flush=True,
                )
    killed = sum(m.outcome in ("killed", "timeout") for m in results)
    print(f"score: {killed}/{len(results)} killed ({100 * killed / max(1, len(results)):.0f}%)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps([asdict(m) for m in results], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
