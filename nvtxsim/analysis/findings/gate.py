"""The CI gate (``--fail-on``, ``fail_on=``): which findings make a report or a comparison fail.

One parser for the command line and the Python API: ``sync``, ``sync,pageable_copy``, ``all``,
each optionally with a severity floor (``sync:medium``: medium and high sync findings only,
``all:high``). Python may also pass a list of such entries (``["all"]``, ``["sync", "cpu_bound:high"]``).
The kinds are those of the registry at call time, so a kind added to the registry is accepted here
without a change; an unknown kind or severity is one error line naming the closest valid one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from nvtxsim.analysis.findings.model import SEVERITIES, Finding
from nvtxsim.errors import NvtxsimError, comma_list

__all__ = ["FailRule", "parse_fail_on", "failing", "did_you_mean"]


@dataclass(frozen=True)
class FailRule:
    """Fail on a finding of ``kind`` whose severity is ``floor`` or worse."""

    kind: str
    floor: str = SEVERITIES[-1]

    def matches(self, finding: Finding) -> bool:
        return finding.kind == self.kind and _rank(finding.severity) <= _rank(self.floor)

    def __str__(self) -> str:
        return self.kind if self.floor == SEVERITIES[-1] else f"{self.kind}:{self.floor}"


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _entries(value: object, option: str) -> list[str]:
    """The comma-separated entries of a string or of a list/tuple of strings."""
    if isinstance(value, str):
        parts = [value]
    elif isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, (str, FailRule)) for v in value):
        parts = [str(v) for v in value]
    else:
        raise NvtxsimError(f"{option}: expected finding kinds as a string or a list of strings, got {value!r}")
    if not "".join(parts).replace(",", "").strip():
        return []  # nothing at all: the caller's "no finding kind given"
    return [e for p in parts for e in comma_list(p, option)]


def parse_fail_on(value: object, *, option: str = "--fail-on") -> tuple[FailRule, ...]:
    """The rules ``value`` asks for; ``None`` (and, from Python, an empty list) asks for none.

    A given value that names no kind (``--fail-on "$KINDS"`` with an empty variable, ``" , "``) is an
    error: a CI gate must never pass because its list was empty."""
    from nvtxsim.analysis.findings.registry import KINDS

    if value is None or (isinstance(value, (list, tuple)) and not value):
        return ()
    entries = _entries(value, option)
    choose = f"choose from {', '.join(KINDS)} or all, each optionally :{'/:'.join(SEVERITIES)}"
    if not entries:
        raise NvtxsimError(f"{option}: no finding kind given; {choose}")
    floors: dict[str, str] = {}
    for entry in entries:
        name, sep, floor = (s.strip() for s in entry.partition(":"))
        floor = floor.lower() if sep else SEVERITIES[-1]
        if floor not in SEVERITIES:
            raise NvtxsimError(
                f"{option}: unknown severity {floor!r} in {entry!r}{did_you_mean(floor, SEVERITIES)}; "
                f"choose from {', '.join(SEVERITIES)} (the lowest severity that fails)"
            )
        if name != "all" and name not in KINDS:
            raise NvtxsimError(
                f"{option}: unknown finding kind {name!r}{did_you_mean(name, KINDS + ('all',))}; {choose}"
            )
        for kind in KINDS if name == "all" else (name,):
            # the same kind twice: the most inclusive floor wins (``all:high,sync`` fails on any sync)
            if kind not in floors or _rank(floor) > _rank(floors[kind]):
                floors[kind] = floor
    return tuple(FailRule(k, floors[k]) for k in KINDS if k in floors)


def failing(rules: tuple[FailRule, ...], findings: Iterable[Finding]) -> list[Finding]:
    """The findings that one of ``rules`` fails on, in their order."""
    return [f for f in findings if any(r.matches(f) for r in rules)]
