"""What a finding is, and the share thresholds every kind is held to.

Shares are of the reference time (:attr:`Findings.reference_ns`): the wall time inside the kept
ranges, which with iterations known is the iterations plus the phases between them. Reasoning of
every threshold: docs/findings.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import overload

SEVERITIES = ("high", "medium", "low")
OUTSIDE = "(outside phases)"  # phase of unattributed_gpu
OUTSIDE_LOOP = "(before or after the phases)"  # GPU work outside every phase before the first kept range or after the last: setup, teardown

MIN_SHARE = 0.01  # findings costing less than 1 % are left out, unless their kind says otherwise (sync: 0.1 %)
HIGH_SHARE, MEDIUM_SHARE = 0.10, 0.03  # severity: high from 10 %, medium from 3 %


def severity(share: float) -> str:
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


@dataclass
class Finding:
    phase: str  # "<domain>:<name>", or OUTSIDE for unattributed_gpu
    kind: str
    severity: str  # high | medium | low
    cost_ns: int  # over the capture (after skip_first)
    cost_per_iteration_ns: int | None  # None when the iterations are not known
    evidence: dict = field(default_factory=dict)
    advice: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Findings(Sequence[Finding]):
    """The findings of one report, and what they were measured against.

    A sequence of its :class:`Finding` items, most costly first (``findings[:3]``, ``len(findings)``,
    ``for f in findings``; empty is falsy); ``items`` is the same list."""

    items: list[Finding]
    iterations: int | None  # iterations the per-iteration costs divide by (None: unknown)
    reference_ns: int  # wall time inside the kept ranges: what the shares are of
    notes: list[str] = field(default_factory=list)

    @overload
    def __getitem__(self, index: int) -> Finding: ...

    @overload
    def __getitem__(self, index: slice) -> list[Finding]: ...

    def __getitem__(self, index: int | slice) -> Finding | list[Finding]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.items)

    def as_list(self) -> list[dict]:
        return [f.as_dict() for f in self.items]
