"""Every finding kind, the order they run in, and the one entry point: :func:`analyse`.

``REGISTRY`` lists the kinds in the order the report names them (``--fail-on``, docs/findings.md).
They run in the order their facts demand (:data:`RUN_ORDER`): every kind that provides a fact
runs before every kind that needs it, ties in listing order. A new kind is a module beside these
with a ``KIND`` (see docs/architecture.md, "Adding a finding kind") and one line below.
"""

from __future__ import annotations

from nvtxsim.analysis.findings import (
    cpu_bound,
    gpu_bound,
    launch_bound,
    os_wait,
    other_thread_gpu,
    outlier_iterations,
    pageable_copy,
    phase_stalls,
    rank_skew,
    sync,
    unattributed_gpu,
    warm_up,
)
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.kind import FACTS, Facts, Kind
from nvtxsim.analysis.findings.model import Finding, Findings
from nvtxsim.analysis.selection import Selection

REGISTRY: tuple[Kind, ...] = (
    warm_up.KIND,
    sync.KIND,
    pageable_copy.KIND,
    launch_bound.KIND,
    cpu_bound.KIND,
    other_thread_gpu.KIND,
    gpu_bound.KIND,
    os_wait.KIND,
    phase_stalls.KIND,
    outlier_iterations.KIND,
    unattributed_gpu.KIND,
    rank_skew.KIND,
)
KINDS = tuple(k.name for k in REGISTRY)
ADVICE = {k.name: k.advice for k in REGISTRY}
INFORMATIONAL = tuple(k.name for k in REGISTRY if k.informational)
_BY_NAME = {k.name: k for k in REGISTRY}


def kind(name: str) -> Kind | None:
    """The registered kind called ``name``, None for an unknown name."""
    return _BY_NAME.get(name)


def run_order(kinds: tuple[Kind, ...]) -> tuple[Kind, ...]:
    """``kinds`` with every provider of a fact before its consumers (ties: listing order); a fact nobody
    provides, an unknown fact, or a cycle is an error in the registry, raised at import."""
    providers = {name: {k.name for k in kinds if name in k.provides} for name in FACTS}
    for k in kinds:
        unknown = set(k.needs + k.provides) - set(FACTS)
        missing = [n for n in k.needs if not providers.get(n)]
        if unknown or missing:
            raise ValueError(f"finding kind {k.name}: unknown facts {sorted(unknown)}, none provides {missing}")
    before = {k.name: set().union(*(providers[n] for n in k.needs)) - {k.name} for k in kinds}
    done: list[Kind] = []
    while len(done) < len(kinds):
        ready = [k for k in kinds if k not in done and before[k.name] <= {d.name for d in done}]
        if not ready:
            raise ValueError(f"finding kinds need each other's facts: {sorted(set(before) - {d.name for d in done})}")
        done.append(ready[0])
    return tuple(done)


RUN_ORDER = run_order(REGISTRY)


def _rank(f: Finding) -> int:
    """Where a finding's kind lists: a large warm-up first (it explains the capture's totals), then the
    actionable kinds, then the informational ones."""
    if f.kind == warm_up.NAME and f.severity == "high":
        return 0
    return 2 if f.kind in INFORMATIONAL else 1


def analyse(
    detail: Selection, *, by: str | None = None, skip_first: int | None = None, threads: bool | None = None
) -> Findings:
    """All findings of the report's selection, most costly first; computed once per (detail, by, skip_first,
    threads), in the detail's memo: the block, the views and the page share it.

    ``skip_first``: None (the default) = the steady state: the warm-up found (``warm_up``) is left out of
    every other finding, with a note saying what; an int = leave out that many iterations (0: nothing).

    ``threads``: look for other_thread_gpu and unattributed_gpu, which join every CUDA call to its
    GPU work; None (the default) = yes, on either backend (an export's findings never depend on the
    backend its size picked); False = no, with a note saying so."""
    return detail.memo.get(("findings", by, skip_first, threads), _analyse, detail, by, skip_first, threads)


def _analyse(detail: Selection, by: str | None, skip_first: int | None, threads: bool | None) -> Findings:
    if not len(detail.selected):
        return Findings([], None, 0)
    ctx = Context(detail, by, skip_first, threads)
    facts = Facts()
    if ctx.skipped_everything:
        facts.note(f"--skip-first {skip_first} left no iteration: no findings (the skipped ones are not looked at)")
        return Findings([], None, 0, facts.notes)
    cuda = detail.has_cuda
    found = []
    for k in RUN_ORDER:
        if cuda or not k.needs_cuda:
            found += k.detect(ctx, facts.view(k))
    if not cuda:
        looked = " and ".join(k.name.replace("_", " ") for k in REGISTRY if not k.needs_cuda)
        facts.note(f"{detail.export.no_cuda_reason}: only {looked} were looked for")
    left = warm_up.left_out_note(ctx)
    if left:
        facts.note(left)
    found.sort(key=lambda f: (_rank(f), -f.cost_ns, f.phase, f.kind))  # actionable ones first
    return Findings(found, ctx.iterations, ctx.reference_ns, facts.notes)
