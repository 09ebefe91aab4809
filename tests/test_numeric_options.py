"""Every numeric option is validated when parsed (issue 13): one ``nvtxsim: error:`` line naming it, exit 2."""

from __future__ import annotations

import argparse

import pytest

from nvtxsim.cli.main import build_parser, main

BAD = {
    ("report", "--top"): ["0", "-1", "x", "1.5", "nan", "99999999999999999999999"],
    ("report", "--skip-first"): ["-3", "x", "inf", "99999999999999999999999"],
    ("report", "--envs"): [
        "0",
        "-1",
        "nan",
        "inf",
        "-inf",
        "x",
        "1e308",
        "1e101",
    ],  # finite but overflows in env-steps/s
    ("report", "--jobs"): ["0", "-2", "x", "100000"],
    ("compare", "--seed"): ["-1", "x", "1e3", str(2**64)],
    ("compare", "--fail-above"): ["nan", "-1", "inf", "-inf", "x", "1e300"],
    ("compare", "--confidence"): ["0", "1", "1.5", "nan", "-0.5"],
    ("compare", "--resamples"): ["0", "-5", "x"],
    ("compare", "--min-samples"): ["0", "-1"],
    ("compare", "--skip-first"): ["-1"],
    ("scaling", "--skip-first"): ["-1", "nan"],
    ("profile", "--trigger-iterations"): ["0", "-1", "x"],
}
POSITIONAL = {
    "report": ["x.sqlite"],
    "compare": ["a.sqlite", "b.sqlite"],
    "scaling": ["a.sqlite=1", "b.sqlite=2", "--param", "n"],
    "profile": [],
}
TAIL = {"profile": ["--", "true"]}


@pytest.mark.parametrize(("command", "option", "value"), [(c, o, v) for (c, o), vs in BAD.items() for v in vs])
def test_bad_number_is_one_line(capsys, command, option, value):
    rc = main([command, *POSITIONAL[command], f"{option}={value}", *TAIL.get(command, [])])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith(f"nvtxsim: error: {option}:") and err.count("\n") == 1, err


def test_every_numeric_option_is_validated():
    """No option parses with bare int/float (which accepts -1, nan, inf)."""
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    loose = [
        (name, a.option_strings[0])
        for name, sub in subs.choices.items()
        for a in sub._actions
        if a.type in (int, float)
    ]
    assert loose == []


def test_good_numbers_still_parse():
    parser = build_parser(only="compare")
    args = parser.parse_args(
        ["compare", "a", "b", "--seed", "7", "--fail-above", "2.5", "--confidence", "0.9", "--resamples", "10"]
    )
    assert (args.seed, args.fail_above, args.confidence, args.resamples) == (7, 2.5, 0.9, 10)


STRING_NUMBERS = {
    ("scaling", "--predict"): ["nan", "inf", "-1", "0", "x"],
    ("scaling", "--memory-budget"): ["nan", "-5G", "infG", "x"],
    ("profile", "--iterations"): ["5:3", "nan:3", "-1:4", "a:b", "3"],
}


@pytest.mark.parametrize(
    ("command", "option", "value"), [(c, o, v) for (c, o), vs in STRING_NUMBERS.items() for v in vs]
)
def test_numbers_given_as_text_are_validated_too(capsys, command, option, value, tmp_path):
    if command == "scaling":
        from hostile_corpus import real_export

        src = real_export(tmp_path / "run.sqlite")
        head = [f"{src}=1", f"{src}=2", "--param", "n"]
    else:
        head = []
    rc = main([command, *head, f"{option}={value}", *TAIL.get(command, [])])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.startswith("nvtxsim: error:") and err.count("\n") == 1, err


@pytest.mark.parametrize("envs", ["1e100", "5e-324"])
def test_largest_and_smallest_accepted_numbers_stay_finite(envs, tmp_path, capsys):
    """A number the option accepts must not overflow in the arithmetic it feeds (env-steps/s)."""
    import json

    from synth import make_export

    path = tmp_path / "e.sqlite"
    make_export(path, 2)
    assert (
        main(
            [
                "report",
                str(path),
                "--domain",
                "all",
                "--by",
                "iteration",
                "--envs",
                envs,
                "--view",
                "iterations",
                "-f",
                "json",
            ]
        )
        == 0
    )
    json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
