"""What a finding kind is, and the facts kinds hand on to the kinds that run after them.

A kind is one module under this package with a ``KIND``: its name, its advice, its detection, the
text of its evidence, and the facts it ``needs`` from other kinds and ``provides`` to them. The
registry (:mod:`nvtxsim.analysis.findings.registry`) runs every provider of a fact before any kind
that needs it; a kind reads and writes only the facts it declares (:class:`Facts` checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.model import Finding


@dataclass(frozen=True)
class Units:
    """How the report writes numbers in evidence text (the reporting stage's formatters)."""

    ns: Callable[[float], str]
    bytes: Callable[[float], str]
    pct: Callable[[float | None], str]


@dataclass(frozen=True)
class Kind:
    """One kind of finding.

    ``detect(ctx, facts)`` returns the kind's findings; ``evidence_text(evidence, units)`` says the
    numbers behind one finding in a few words (the report's block and views); ``needs_cuda``: look
    for it only in exports with a CUDA trace; ``informational``: it says where the time goes, not
    what is wrong (listed after the others); ``across_ranks``: it compares the ranks of a job, so one
    export's ``detect`` finds nothing and the ranks report calls the module's ``detect_ranks``."""

    name: str
    advice: str  # one concrete sentence, at most 71 characters (the terminal block's second line)
    detect: Callable[[Context, Facts], list[Finding]]
    evidence_text: Callable[[dict, Units], str]
    needs: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()
    needs_cuda: bool = True
    informational: bool = False
    across_ranks: bool = False


@dataclass(frozen=True)
class Fact:
    """Something kinds hand on: what it holds, its value before any provider ran, how two providers' values combine."""

    doc: str
    empty: Callable[[], Any]
    merge: Callable[[Any, Any], Any]


def _sum_per_phase(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for phase, ns in b.items():
        out[phase] = out.get(phase, 0) + ns
    return out


FACTS: dict[str, Fact] = {
    "claimed_calls": Fact(
        "positions in Context.calls of the calls a pageable_copy finding holds: not counted again as syncs",
        lambda: np.zeros(0, dtype=np.int64),
        np.union1d,
    ),
    "blocked_ns": Fact(
        "per phase, CPU time already explained (waits in syncs and pageable copies, the excess of outlier "
        "iterations): not CPU or launch work",
        dict,
        _sum_per_phase,
    ),
    "waits": Fact(
        "the sync and pageable_copy findings: a slow iteration whose overrun is their wait is theirs, and the "
        "GPU time of their phase is the copy or the work they wait for",
        list,
        lambda a, b: a + b,
    ),
    "os_waits": Fact(
        "the os_wait findings: a slow iteration whose overrun is their phase's OS wait is theirs",
        list,
        lambda a, b: a + b,
    ),
    "stalls": Fact(
        "the phase_stalls findings: a slow iteration whose overrun is a stall they name is theirs",
        list,
        lambda a, b: a + b,
    ),
    "other_threads": Fact(
        "GPU work launched outside every range of its thread, by the phase open on another thread at launch "
        "(other_thread_gpu.OtherThreadGpu rows); empty when not looked for",
        list,
        lambda a, b: a + b,
    ),
}


@dataclass
class Facts:
    """The facts of one report; :meth:`view` gives a kind the facts it declared, and no others."""

    values: dict[str, Any] = field(default_factory=lambda: {name: f.empty() for name, f in FACTS.items()})
    notes: list[str] = field(default_factory=list)
    kind: Kind | None = None

    def view(self, kind: Kind) -> Facts:
        return Facts(self.values, self.notes, kind)

    def get(self, name: str) -> Any:
        assert self.kind is None or name in self.kind.needs, f"{self.kind.name} reads {name} without needing it"
        return self.values[name]

    def add(self, name: str, value: Any) -> None:
        assert self.kind is None or name in self.kind.provides, f"{self.kind.name} writes {name} without providing it"
        self.values[name] = FACTS[name].merge(self.values[name], value)

    def note(self, text: str) -> None:
        """A line for the report saying what was not looked for (a 'none' says nothing without it)."""
        self.notes.append(text)
