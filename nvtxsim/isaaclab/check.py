"""Does every phase-map entry resolve against the installed Isaac Lab (and RL libraries)?"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nvtxsim.isaaclab import phasemap as M
from nvtxsim.isaaclab.resolve import Resolution, resolve


@dataclass
class CheckResult:
    version: int | None
    results: list[Resolution]

    def count(self, *statuses: str) -> int:
        return sum(r.status in statuses for r in self.results)

    def failures(self, *, strict: bool = False) -> list[Resolution]:
        """Entries that do not resolve: required ones always; optional ones (package installed) with ``strict``."""
        out = []
        for r in self.results:
            if r.resolved or r.status == "other-version":
                continue
            if r.target.optional and (r.status == "not-installed" or not strict):
                continue
            out.append(r)
        return out

    def summary(self) -> str:
        parts = [
            f"{len(self.results)} entries for Isaac Lab {self.version if self.version else '(any version)'}",
            f"{self.count('ok')} imported",
            f"{self.count('source')} found in source only",
            f"{self.count('not-installed')} not installed (optional)",
            f"{self.count('other-version')} for other library releases",
            f"{self.count('missing', 'property')} missing",
        ]
        return ", ".join(parts)


def check(version: int | None, targets: Iterable[M.Target] | None = None) -> CheckResult:
    """Resolve every entry for ``version`` (by import; from source where an import needs Kit)."""
    selected = M.targets_for(version, targets)
    # Resolve core isaaclab entries first (isaaclab.envs before isaaclab.managers: 2.3 circular import).
    order = sorted(selected, key=lambda t: (not t.module.startswith("isaaclab.envs"), t.package != "isaaclab"))
    failed_imports: dict[str, BaseException] = {}
    resolved = {id(t): resolve(t, failed_imports=failed_imports) for t in order}
    by_name = {r.target.dotted: r for r in resolved.values()}
    for r in resolved.values():  # e.g. skrl 2 "update" where skrl 1 had "_update"
        alt = r.target.alternative
        if r.status == "missing" and alt:
            other = by_name.get(f"{r.target.module}.{r.target.owner}.{alt}")
            if other is not None and other.resolved:
                r.status, r.detail = "other-version", f"this release has {alt} instead"
    return CheckResult(version, [resolved[id(t)] for t in selected])
