"""``sync``: synchronizing CUDA calls in a phase, the implicit ones (pageable D→H copies) included.

Cost: the CPU time blocked in them (union per range: a runtime call and its driver call once).
Raised from 0.1 % of the reference time, not 1 %: a sync costs more than its wait, it empties
the GPU's queue, so the CPU/GPU overlap after it is lost too; 1 % would hide the 1-2 syncs per
step that typically drain an Isaac Lab step (the H200 capture's ``.item()`` + ``nonzero()``
wait 0.5 % and are the planted problem).

D→H copies into pageable memory block until done: CUDA returns from such a copy only once it
is done, so the CPU waits in it for all the work queued before, and the ``cudaStreamSynchronize``
after it finds the GPU idle. Those no pageable_copy finding claims (the small ones, or a phase's
few below its 1 MiB) are syncs. The advice follows the call that waited longest.
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings.calls import api_label, named
from nvtxsim.analysis.findings.context import Context, blocked
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.analysis.gpu import is_sync_api
from nvtxsim.schema import COPY_DTOH

NAME = "sync"
MIN_SHARE = 0.001
ADVICE = "replace .item()/.cpu()/nonzero() by tensor ops, or move them out"
SYNC_ADVICE = (  # (what the API name starts with, advice): the sync that waited longest decides
    (
        ("cudaDeviceSynchronize", "cuCtxSynchronize", "cudaThreadSynchronize"),
        "drop torch.cuda.synchronize() from the step; time with CUDA events",
    ),
    (("cudaEventSynchronize", "cuEventSynchronize"), "read CUDA events after the loop, not in every step"),
    (("cudaMemcpy", "cuMemcpy"), "keep the values on the GPU, or copy non_blocking into pinned memory"),
)


def sync_advice(api: str) -> str:
    """The advice for a sync finding whose longest wait was in ``api`` (stream syncs: ``.item()`` and the like)."""
    return next((advice for prefixes, advice in SYNC_ADVICE if api.startswith(prefixes)), ADVICE)


def _sync_calls(ctx: Context, claimed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``ctx.calls`` of the syncs, explicit and implicit, but the ``claimed`` ones; and the implicit ones."""
    calls = named(ctx.ex, ctx.calls, is_sync_api)
    if len(claimed):
        calls = np.setdiff1d(calls, claimed)
    hc = ctx.host_copies
    blocking = hc.pageable & (hc.copy_kind == COPY_DTOH) if hc is not None and len(hc) else np.zeros(0, dtype=bool)
    copy_calls = ctx.copy_calls[blocking] if blocking.any() else np.zeros(0, dtype=np.int64)
    copy_calls = np.setdiff1d(copy_calls[copy_calls >= 0], claimed)
    return np.union1d(calls, copy_calls), copy_calls


def _per_api(ctx: Context, c: np.ndarray, via_copy: np.ndarray) -> tuple[dict[str, int], dict[str, int]]:
    """Calls and time per API name (`` D→H pageable`` added for the implicit ones), names in the order they first
    occur in ``c``: grouped per (name id, implicit) first, so one name costs one string lookup, not one per call."""
    api = ctx.calls
    key = api.name_id[c].astype(np.int64) * 2 + via_copy.astype(np.int64)
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    count = np.bincount(inv, minlength=len(uniq))
    dur = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(dur, inv, (api.end[c] - api.start[c]).astype(np.int64))
    names: dict[str, int] = {}
    waits: dict[str, int] = {}  # time per API name: which kind of sync the advice is about
    for g in np.argsort(first, kind="stable").tolist():
        name = api_label(ctx.ex, int(uniq[g]) >> 1) + (" D→H pageable" if int(uniq[g]) & 1 else "")
        names[name] = names.get(name, 0) + int(count[g])
        waits[name] = waits.get(name, 0) + int(dur[g])
    return names, waits


def _finding(ctx: Context, phase: str, c: np.ndarray, wait: int, via_copy: np.ndarray) -> Finding | None:
    """The finding of one phase whose sync calls ``c`` (``via_copy``: the implicit ones) blocked ``wait`` ns."""
    names, waits = _per_api(ctx, c, via_copy)
    explicit = int((~via_copy).sum())  # the synchronize calls, as --view syncs counts them
    ev = {
        "calls": explicit,
        "pageable_d2h_copies": int(via_copy.sum()),
        "blocked_ns": wait,
        "apis": dict(sorted(names.items(), key=lambda kv: -kv[1])),
    }
    if ctx.iterations:
        ev["calls_per_iteration"] = round((explicit or int(via_copy.sum())) / ctx.iterations, 2)
    advice = sync_advice(max(waits, key=lambda k: waits[k]))
    return ctx.finding(phase, NAME, wait, ev, advice, min_share=MIN_SHARE)


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    """Synchronizing calls per innermost phase; the blocked time of each phase goes to ``blocked_ns``."""
    api = ctx.calls
    calls, copy_calls = _sync_calls(ctx, facts.get("claimed_calls"))
    if len(calls) == 0:
        return []
    owner = ctx.owner(api.start[calls], api.end[calls], api.global_tid[calls])
    out, waited = [], {}
    for phase, pos in ctx.by_label(owner).items():
        c = calls[pos]
        waited[phase] = wait = blocked(owner[pos], api.start[c], api.end[c])
        f = _finding(ctx, phase, c, wait, np.isin(c, copy_calls))
        if f is not None:
            out.append(f)
    facts.add("blocked_ns", waited)
    facts.add("waits", out)
    return out


def evidence_text(e: dict, u: Units) -> str:
    per = f" ({e['calls_per_iteration']:g}/it)" if "calls_per_iteration" in e else ""
    copies = e.get("pageable_d2h_copies", 0)
    what = f"{e['calls']:,} calls" if e["calls"] else f"{copies:,} small D→H copies to pageable"
    return f"{what}{per}: " + ", ".join(e["apis"])


KIND = Kind(
    NAME, ADVICE, detect, evidence_text, needs=("claimed_calls",), provides=("blocked_ns", "waits"), needs_cuda=True
)
