"""scripts/mutate.py plants the mutants it says, exactly where it says (reports/mutation.md rests on it)."""

from __future__ import annotations

import ast
import importlib.util
import sys

from nsys_util import REPO

spec = importlib.util.spec_from_file_location("mutate", REPO / "scripts" / "mutate.py")
assert spec is not None and spec.loader is not None
mutate = importlib.util.module_from_spec(spec)
sys.modules["mutate"] = mutate
spec.loader.exec_module(mutate)

SOURCE = '''LIMIT = 3


def f(a, b, name):
    """Docstring: 1 < 2 is no code."""
    label = "é→" + name
    if a < b and not name:
        return min(a, b) - 1
    return a + LIMIT


def untouched(a):
    return a - 1
'''


def test_sites_are_the_planted_operators_and_nothing_else(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    target = mutate.Target("t", str(path), ("f",), ())
    found = {(m.function, m.operator, m.before, m.after) for m, _ in mutate.sites(target)}
    assert found == {
        ("<module>", "constant off by one", "3", "(4)"),
        ("f", "flip comparison", "a < b", "(a <= b)"),
        ("f", "swap and/or", "a < b and not name", "(a < b or not name)"),
        ("f", "drop not", "not name", "name"),
        ("f", "swap min/max", "min", "max"),
        ("f", "drop subtraction", "min(a, b) - 1", "(min(a, b))"),
        ("f", "constant off by one", "1", "(2)"),
        ("f", "add to subtract", "a + LIMIT", "(a - LIMIT)"),
    }  # the docstring, the text join and the function not chosen are left alone


def test_each_mutant_changes_one_spot_and_parses(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    for m, mutated in mutate.sites(mutate.Target("t", str(path), ("f",), ())):
        ast.parse(mutated)
        before, after = SOURCE.splitlines(), mutated.splitlines()
        changed = [i for i, (x, y) in enumerate(zip(before, after)) if x != y]
        assert len(before) == len(after) and changed == [m.line - 1], m
        assert after[m.line - 1] == before[m.line - 1].replace(m.before, m.after, 1), m  # after the é→ too


def test_choose_spreads_over_files_and_functions():
    sites = [
        (mutate.Mutant("t", p, fn, line, op, "x", "y"), "")
        for p in ("a.py", "b.py")
        for fn in ("f", "g")
        for line, op in ((1, "flip comparison"), (2, "flip comparison"), (3, "drop not"))
    ]
    chosen = [m for m, _ in mutate.choose(sites, 4)]
    assert {m.path for m in chosen} == {"a.py", "b.py"} and len({(m.path, m.function) for m in chosen}) == 4


def test_per_module_shares_its_mutants_out_over_the_functions(tmp_path):
    import argparse

    path = tmp_path / "m.py"
    path.write_text(SOURCE + "\n\ndef g(a):\n    return a < 2 and a > 0\n", encoding="utf-8")
    target = mutate.Target("t", str(path), ("f", "g"), ())
    args = argparse.Namespace(module=["m.py"], per_module=3, rerun=None)
    chosen = [m for m, _ in mutate._only_modules(target, [], args)]
    assert sorted(m.function for m in chosen) == ["<module>", "f", "g"]  # one each, f's seven sites or not
    args.per_module = 5
    assert sorted(m.function for m, _ in mutate._only_modules(target, [], args)) == ["<module>", "f", "f", "g", "g"]
    args.module = ["other.py"]
    assert mutate._only_modules(target, [], args) == []
