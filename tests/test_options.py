"""One parser per report option: the command line and ``nvtxsim.report()`` accept and refuse the same values.

Each option is tried through both doors with hostile values (wrong types, empty lists, typos, negative
counts, a string where a list is expected); the CI gate (``--fail-on`` / ``fail_on=`` /
``failed_findings()``) is checked against the findings planted in a real H200 capture.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from committed import committed

import nvtxsim
from nvtxsim.analysis.findings import KINDS, REGISTRY
from nvtxsim.analysis.findings.gate import FailRule, parse_fail_on
from nvtxsim.cli.arguments import add_view_arguments, request_from_args
from nvtxsim.cli.main import main
from nvtxsim.errors import NvtxsimError
from nvtxsim.reporting.pipeline import request

PLANTED = Path(__file__).parent / "data" / "gpu" / "findings_planted.sqlite.gz"


def _cli_request(*argv: str):
    p = argparse.ArgumentParser()
    add_view_arguments(p)
    return request_from_args(p.parse_args(list(argv)))


# (python keyword, value, CLI argv or None when the CLI cannot spell it, the error's substring)
REFUSED = [
    ("top", -1, ["--top", "-1"], "at least 1"),
    ("top", 0, ["--top", "0"], "at least 1"),
    ("top", True, None, "expected an integer"),
    ("top", 2.5, ["--top", "2.5"], "expected an integer"),
    ("skip_first", -3, ["--skip-first", "-3"], "at least 0"),
    ("skip_first", "x", ["--skip-first", "x"], "expected an integer"),
    ("envs", 0, ["--envs", "0"], "finite number"),
    ("envs", float("inf"), ["--envs", "inf"], "finite number"),
    ("envs", float("nan"), ["--envs", "nan"], "finite number"),
    ("envs", "many", ["--envs", "many"], "expected a number"),
    ("views", "iteration", ["--view", "iteration"], "did you mean 'iterations'"),
    ("views", "tree,,kernels", ["--view", "tree,,kernels"], "empty item"),
    ("views", "tree,", ["--view", "tree,"], "empty item"),
    ("fail_on", "sync,,cpu_bound", ["--fail-on", "sync,,cpu_bound"], "empty item"),
    ("fail_on", ["sync", ""], None, "empty"),
    ("views", ["tree", 3], None, "list of strings"),
    ("fail_on", "synk", ["--fail-on", "synk"], "did you mean 'sync'"),
    ("fail_on", "sync,bogus", ["--fail-on", "sync,bogus"], "unknown finding kind 'bogus'"),
    ("fail_on", " , ", ["--fail-on", " , "], "no finding kind"),
    ("fail_on", [""], ["--fail-on", ""], "no finding kind"),
    ("fail_on", "sync:warn", ["--fail-on", "sync:warn"], "unknown severity 'warn'"),
    ("fail_on", "sync:hihg", ["--fail-on", "sync:hihg"], "did you mean 'high'"),
    ("fail_on", 1, None, "string or a list"),
    ("fail_on", ["sync", None], None, "string or a list"),
    ("by", 3, None, "expected a string"),
    ("match", "(", ["--match", "("], "not a valid regular expression"),
]


@pytest.mark.parametrize(("key", "value", "argv", "message"), REFUSED, ids=[f"{r[0]}={r[1]!r}" for r in REFUSED])
def test_both_doors_refuse_the_same_values(key, value, argv, message):
    with pytest.raises(NvtxsimError, match=message) as py:
        request(**{key: value})
    assert "\n" not in str(py.value) and key.replace("_", "-") in str(py.value).replace("_", "-")
    if argv is not None:
        with pytest.raises(NvtxsimError, match=message):
            _cli_request(*argv)


@pytest.mark.parametrize(
    ("value", "argv"),
    [
        ("sync", "sync"),
        (["sync"], "sync"),
        (("pageable_copy", "sync"), "sync,pageable_copy"),
        (["all"], "all"),
        ("all", "all"),
        (" SYNC:HIGH ".lower(), "sync:high"),
        (["sync:medium", "cpu_bound"], "cpu_bound,sync:medium"),
        ("all:high,sync", "sync,all:high"),
    ],
)
def test_fail_on_spellings_agree(value, argv):
    """A string is a list of kinds, never a sequence of letters; order and repeats do not matter."""
    py, cli = request(fail_on=value).fail_on, _cli_request("--fail-on", argv).fail_on
    assert py == cli and py and all(r.kind in KINDS for r in py)


def test_all_means_every_registered_kind_and_the_floor_is_the_most_inclusive():
    every = parse_fail_on("all")
    assert [r.kind for r in every] == [k.name for k in REGISTRY] and {r.floor for r in every} == {"low"}
    mixed = {r.kind: r.floor for r in parse_fail_on("all:high,sync:medium,sync")}
    assert mixed["sync"] == "low" and mixed["cpu_bound"] == "high" and len(mixed) == len(REGISTRY)
    assert parse_fail_on(None) == () and parse_fail_on([]) == ()


def test_views_spellings_agree():
    assert request(views=["tree", "kernels"]).views == _cli_request("--view", "tree,kernels").views
    assert request(views=["tree,kernels", "tree"]).views == ["tree", "kernels"]
    assert request(views=["all"]).views == request(views="all").views == _cli_request("--view", "all").views
    assert request(views="").views == request().views == ["summary"]


def test_a_new_registry_kind_is_accepted_without_a_change(monkeypatch):
    """The kinds are read from the registry at call time (other kinds are being added)."""
    from nvtxsim.analysis.findings import registry

    monkeypatch.setattr(registry, "KINDS", registry.KINDS + ("brand_new",))
    assert parse_fail_on("brand_new:medium") == (FailRule("brand_new", "medium"),)
    assert "brand_new" in {r.kind for r in parse_fail_on("all")}


def test_python_ci_gate_is_honest():
    """``failed_findings`` on an export full of problems: never an empty list because no kind was named."""
    m = nvtxsim.report(committed(PLANTED), skip_first=2)
    with pytest.raises(NvtxsimError, match="no finding kind"):
        m.failed_findings()  # no gate asked for: an error, not a silent pass
    # planted (scripts/gpu/findings_workload.py): a low sync in reward, a high pageable copy in camera_readout
    assert m.failed_findings("sync") == [line for line in m.failed_findings("all") if line.startswith("sync ")]
    assert any(line.startswith("sync in nvtxsim:reward") for line in m.failed_findings("sync"))
    assert m.failed_findings("sync:medium") == []
    high = m.failed_findings("all:high")
    assert any(line.startswith("pageable_copy in nvtxsim:camera_readout") for line in high)
    assert all(line.endswith("(high)") for line in high)
    gated = nvtxsim.report(PLANTED, skip_first=2, fail_on="sync", findings=False)
    assert gated.failed_findings() == m.failed_findings("sync")  # letters 's','y','n','c' would match nothing
    assert nvtxsim.report(PLANTED, skip_first=2, findings=False).failed_findings(["all"]) == m.failed_findings("all")


def test_cli_severity_floor(capsys):
    base = ["report", str(committed(PLANTED)), "--skip-first", "2", "-f", "json"]
    assert main([*base, "--fail-on", "sync"]) == 1
    assert "--fail-on sync in nvtxsim:reward" in capsys.readouterr().err
    assert main([*base, "--fail-on", "sync:medium"]) == 0
    assert main([*base, "--fail-on", "all:high"]) == 1
    err = capsys.readouterr().err
    assert "pageable_copy in nvtxsim:camera_readout" in err and "(low)" not in err and "(medium)" not in err
    assert main([*base, "--fail-on", "sync:warn"]) == 2
    assert "unknown severity 'warn'" in capsys.readouterr().err
