"""``pageable_copy``: host↔device copies with a pageable side (CUPTI ``srcKind``/``dstKind`` 0), per phase.

Cost: the CPU time in the copy calls (a pageable copy is staged by the driver and blocks the
host, like a sync); raised from 0.1 % of the reference time for the same reason as ``sync``.
A phase's pageable copies count once they reach 1 MiB over the capture (a few small H→D uploads
are left out; a synchronous one among them is a sync); D→H copies under 64 KiB into pageable
memory are syncs (``.cpu()`` of a few values), not copies. The calls a finding claims are not
counted again as syncs (a synchronous ``cudaMemcpy`` of a large pageable buffer: one wait, one cost).
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings.calls import api_label
from nvtxsim.analysis.findings.context import Context, blocked
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding
from nvtxsim.schema import COPY_DTOH, COPY_HTOD

NAME = "pageable_copy"
MIN_SHARE = 0.001
PAGEABLE_MIN_BYTES = 1 << 20  # pageable bytes over the capture below this are scalars (.item())
BIG_COPY_BYTES = 1 << 16  # copies this large reach bandwidth: the pinned reference rate; smaller D→H ones are syncs
ADVICE = "copy via pinned memory (pin_memory=True) with non_blocking=True"


def _implicit_sync_copies(hc) -> np.ndarray:
    """Host copies that are syncs: small D→H copies into pageable memory (``.cpu()``, ``.tolist()`` of a
    few values; ``.item()`` on older PyTorch)."""
    if hc is None or not len(hc):
        return np.zeros(0, dtype=bool)
    return hc.pageable & (hc.copy_kind == COPY_DTOH) & (hc.bytes < BIG_COPY_BYTES)


def _pinned_rate(hc, direction: int) -> float | None:
    """GB/s of the large pinned copies of this direction in the capture (the rate pinned memory gets)."""
    m = hc.pinned & (hc.copy_kind == direction) & (hc.bytes >= BIG_COPY_BYTES)
    t = int((hc.end - hc.start)[m].sum())
    return float(hc.bytes[m].sum()) / t if t else None


def _evidence(ctx: Context, ops: np.ndarray, cs: np.ndarray, cost: int) -> dict:
    """The numbers behind one phase's finding: its copies ``ops``, launched by the calls ``cs``."""
    hc, api = ctx.host_copies, ctx.calls
    nbytes = int(hc.bytes[ops].sum())
    gpu_ns = int((hc.end - hc.start)[ops].sum())
    ev: dict = {
        "copies": int(len(ops)),
        "bytes": nbytes,
        "gpu_ns": gpu_ns,
        "cpu_in_calls_ns": cost,
        "gbps": round(nbytes / gpu_ns, 2) if gpu_ns else None,
        "directions": {},
    }
    for d, name in ((COPY_HTOD, "H→D"), (COPY_DTOH, "D→H")):
        m = hc.copy_kind[ops] == d
        if m.any():
            rate = _pinned_rate(hc, d)
            ev["directions"][name] = {
                "copies": int(m.sum()),
                "bytes": int(hc.bytes[ops][m].sum()),
                "pinned_gbps": round(rate, 2) if rate else None,
            }
    ev["apis"] = sorted({api_label(ctx.ex, int(n)) for n in np.unique(api.name_id[cs])})
    return ev


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    """Pageable copies per innermost phase of the launching call; their blocked time goes to ``blocked_ns``,
    their calls to ``claimed_calls``."""
    hc, api = ctx.host_copies, ctx.calls
    if hc is None or not hc.pageable.any():
        return []
    call = ctx.copy_calls
    idx = np.flatnonzero(hc.pageable & (call >= 0) & ~_implicit_sync_copies(hc))  # the small D→H ones are syncs
    c = call[idx]
    owner = ctx.owner(api.start[c], api.end[c], api.global_tid[c])
    out, waited, claimed = [], {}, []
    for phase, pos in ctx.by_label(owner).items():
        ops, cs = idx[pos], c[pos]
        if int(hc.bytes[ops].sum()) < PAGEABLE_MIN_BYTES:
            continue  # a few small uploads; a synchronous one among them is a sync
        waited[phase] = cost = blocked(owner[pos], api.start[cs], api.end[cs])
        claimed.append(cs)
        f = ctx.finding(phase, NAME, cost, _evidence(ctx, ops, cs, cost), ADVICE, min_share=MIN_SHARE)
        if f is not None:
            out.append(f)
    facts.add("blocked_ns", waited)
    facts.add("claimed_calls", np.unique(np.concatenate(claimed)) if claimed else np.zeros(0, dtype=np.int64))
    facts.add("waits", out)
    return out


def evidence_text(e: dict, u: Units) -> str:
    dirs = ", ".join(f"{u.bytes(v['bytes'])} {d}" for d, v in e["directions"].items())
    pinned = [v["pinned_gbps"] for v in e["directions"].values() if v.get("pinned_gbps")]
    rate = f" at {e['gbps']:.3g} GB/s" if e.get("gbps") else ""
    return dirs + rate + (f" (pinned: {max(pinned):.3g})" if pinned else "")


KIND = Kind(NAME, ADVICE, detect, evidence_text, provides=("blocked_ns", "claimed_calls", "waits"), needs_cuda=True)
