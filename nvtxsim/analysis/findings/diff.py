"""Findings of two runs matched by (phase, kind): ``nvtxsim compare``'s appeared / gone / kept."""

from __future__ import annotations

from dataclasses import dataclass

from nvtxsim.analysis.findings.model import Finding, Findings


@dataclass
class FindingsDiff:
    """Findings of two runs matched by (phase, kind): which appeared in the new run, which went away."""

    appeared: list[Finding]
    gone: list[Finding]
    kept: list[tuple[Finding, Finding]]  # (base, new)

    def as_dict(self) -> dict:
        return {
            "appeared": [f.as_dict() for f in self.appeared],
            "gone": [f.as_dict() for f in self.gone],
            "kept": [
                {
                    "phase": b.phase,
                    "kind": b.kind,
                    "base_cost_ns": b.cost_ns,
                    "new_cost_ns": n.cost_ns,
                    "base_cost_per_iteration_ns": b.cost_per_iteration_ns,
                    "new_cost_per_iteration_ns": n.cost_per_iteration_ns,
                }
                for b, n in self.kept
            ],
        }


def diff(base: Findings, new: Findings) -> FindingsDiff:
    b = {(f.phase, f.kind): f for f in base.items}
    n = {(f.phase, f.kind): f for f in new.items}
    return FindingsDiff(
        [f for k, f in n.items() if k not in b],
        [f for k, f in b.items() if k not in n],
        [(b[k], n[k]) for k in n if k in b],
    )
