"""The registry of finding kinds holds every kind module, each complete, run in the order its facts demand.

Adding a kind is one module under ``nvtxsim/analysis/findings/`` with a ``KIND``, its line in the
registry, its row in docs/findings.md, and its test: these tests fail when one of those is missing.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from synth import make_planted

from nvtxsim.analysis import findings
from nvtxsim.analysis.findings import registry
from nvtxsim.analysis.findings.kind import FACTS, Facts, Kind
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load
from nvtxsim.reporting.findings import UNITS, evidence_text

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nvtxsim" / "analysis" / "findings"


def _kind_modules() -> dict[str, object]:
    """Every module of the findings package that defines a KIND, by module name."""
    out = {}
    for path in sorted(PACKAGE.glob("*.py")):
        module = importlib.import_module(f"nvtxsim.analysis.findings.{path.stem}")
        if isinstance(getattr(module, "KIND", None), Kind):
            out[path.stem] = module
    return out


MODULES = _kind_modules()


def test_the_registry_lists_every_kind_module_once():
    assert sorted(MODULES) == sorted(findings.KINDS), "a kind module is missing from registry.REGISTRY (or extra)"
    assert len(set(findings.KINDS)) == len(findings.KINDS)
    for name, module in MODULES.items():
        assert module.KIND.name == name, (
            f"{name}.py's KIND is called {module.KIND.name}: name the module after its kind"
        )
        assert registry.kind(name) is module.KIND


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_kind_has_its_advice_thresholds_reasoning_and_evidence_text(name):
    module = MODULES[name]
    k = module.KIND
    assert k.advice and len(k.advice) <= 71 and "\n" not in k.advice  # the block's second line: 80 cells
    assert findings.ADVICE[name] == k.advice
    assert callable(k.detect) and callable(k.evidence_text)
    doc = module.__doc__ or ""
    assert doc.startswith(f"``{name}``") and len(doc) > 200, "the module's docstring says when it is raised and why"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    p = tmp_path_factory.mktemp("registry") / "planted.sqlite"
    make_planted(p, warm_up=True)
    return findings.analyse(Selection(load(p)))


def test_every_kind_is_found_on_the_planted_export_and_says_its_evidence(planted):
    """The planted export has one problem of each kind; each finding's evidence reads as its kind's text."""
    found = {f.kind: f for f in planted.items}
    one_export = {k.name for k in registry.REGISTRY if not k.across_ranks}  # rank_skew: tests/test_rank_skew.py
    assert set(found) == one_export and one_export
    for name, f in found.items():
        text = evidence_text(f)
        assert text and "\n" not in text, name
        assert text.removeprefix("side thread: ") == MODULES[name].KIND.evidence_text(f.evidence, UNITS)


def test_the_docs_kind_table_names_every_kind():
    doc = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    table = doc[doc.index("## The kinds and their thresholds") :]
    table = table[: table.index("\n\n", table.index("| kind |"))]
    named = re.findall(r"^\| `([a-z_]+)`", table, flags=re.MULTILINE)
    assert sorted(named) == sorted(findings.KINDS)


def test_providers_run_before_the_kinds_that_need_their_facts():
    order = [k.name for k in registry.RUN_ORDER]
    assert sorted(order) == sorted(findings.KINDS)
    for k in registry.RUN_ORDER:
        for fact in k.needs:
            for provider in (p for p in registry.REGISTRY if fact in p.provides and p is not k):
                assert order.index(provider.name) < order.index(k.name), (provider.name, fact, k.name)
    assert order.index("pageable_copy") < order.index("sync")  # a copy's calls are not syncs again
    assert order.index("outlier_iterations") < order.index("cpu_bound")  # outliers' excess is not CPU work


def _kind(name, needs=(), provides=()):
    return Kind(name, "advice", lambda ctx, facts: [], lambda e, u: "", needs=needs, provides=provides)


def test_run_order_places_a_new_kind_after_what_it_needs_and_refuses_bad_declarations():
    new = _kind("new_kind", needs=("blocked_ns",))
    order = [k.name for k in registry.run_order((new,) + registry.REGISTRY)]
    assert order.index("new_kind") > max(order.index(n) for n in ("sync", "pageable_copy", "outlier_iterations"))
    with pytest.raises(ValueError, match="none provides"):
        registry.run_order((_kind("a", needs=("blocked_ns",)),))
    with pytest.raises(ValueError, match="unknown facts"):
        registry.run_order((_kind("a", provides=("nonsense",)),))
    with pytest.raises(ValueError, match="need each other"):
        registry.run_order(
            (
                _kind("a", needs=("waits",), provides=("blocked_ns",)),
                _kind("b", needs=("blocked_ns",), provides=("waits",)),
            )
        )


def test_a_kind_reads_and_writes_only_the_facts_it_declares():
    facts = Facts()
    view = facts.view(_kind("a", needs=("waits",), provides=("blocked_ns",)))
    assert view.get("waits") == []
    view.add("blocked_ns", {"p": 3})
    view.add("blocked_ns", {"p": 4, "q": 1})
    assert facts.values["blocked_ns"] == {"p": 7, "q": 1}
    with pytest.raises(AssertionError, match="without needing"):
        view.get("claimed_calls")
    with pytest.raises(AssertionError, match="without providing"):
        view.add("waits", [])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_declarations_match_the_facts_the_module_uses(name):
    """What a kind module reads (facts.get) and writes (facts.add) is what its KIND declares."""
    k = MODULES[name].KIND
    tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
    used: dict[str, set[str]] = {"get": set(), "add": set()}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in used
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "facts"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            used[node.func.attr].add(node.args[0].value)
    assert used["get"] <= set(k.needs) and used["add"] == set(k.provides), used
    assert set(k.needs + k.provides) <= set(FACTS)
