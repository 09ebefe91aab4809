"""``cpu_bound``: Python work between rare launches, while the GPU sits idle.

Raised when a phase spends at least 50 µs of CPU per launch (or launches nothing), the GPU is busy
under 10 % of its own CPU time, and the iterations' GPU busy share is under 80 %: when the GPU is
busy 80 % of the iteration anyway, that CPU time is hidden behind GPU work and not worth a finding.

Cost: the phase's CPU work minus its GPU busy time, at most the time the GPU sat idle during the
phase. For an export held in memory the evidence adds the time in CUDA calls inside the phase
and the top ones; when that is at least half its CPU time the phase is not Python-bound and the
advice names the cause (``evidence.cause``: ``alloc``, ``module_load``). Time in graph capture, module
loading or compilation is never called Python-bound: when the phase's warm-up calls are kept
(``--keep-warm-up``) and hold half its cost, or such calls take a tenth of its CPU work, the cause is
theirs (``graph_capture``, ``module_load``, ``compile``, or ``warm_up`` for first-call CPU work). Without a CUDA trace
the test is the phase's own CPU work (:mod:`.cpu_work`).
"""

from __future__ import annotations

from nvtxsim.analysis.findings import cpu_work, launch_bound, warm_up
from nvtxsim.analysis.findings.bound import LOAD_NEEDS, Load, loads
from nvtxsim.analysis.findings.context import Context
from nvtxsim.analysis.findings.cuda_calls import CUDA_CAUSES, cause, own_cuda_calls
from nvtxsim.analysis.findings.kind import Facts, Kind, Units
from nvtxsim.analysis.findings.model import Finding

NAME = "cpu_bound"
CPU_MIN_PER_LAUNCH_NS = launch_bound.LAUNCH_MAX_CPU_PER_LAUNCH_NS  # at least 50 µs of CPU per launch (or none) ...
CPU_BOUND_MAX_GPU_SHARE = 0.10  # ... GPU busy under 10 % of the phase's own CPU time ...
CPU_BOUND_GPU_SATURATED = 0.80  # ... unless the GPU is busy 80 % of the iteration anyway (hidden)
CUDA_CALLS_SHARE = 0.5  # a CPU-bound phase spending half its CPU time in CUDA calls is not Python-bound
ADVICE = "CPU-limited: vectorise Python loops into tensor ops, or torch.compile"
CUDA_CALL_ADVICE = "the time is in CUDA calls (see evidence): make fewer of them"
WARM_UP_SHARE = 0.5  # kept warm-up calls half the cost: the phase's first calls, not its Python
LOADING_SHARE = (
    0.10  # graph capture, module loading, compilation calls a tenth of its CPU work (their first use costs more)
)
LOADING = ("graph_capture", "module_load", "compile")


def applies(load: Load) -> bool:
    return (
        load.per_launch is None or load.per_launch >= CPU_MIN_PER_LAUNCH_NS
    ) and load.gpu_share < CPU_BOUND_MAX_GPU_SHARE


def _gpu_saturation(ctx: Context) -> float | None:
    """GPU busy share of the iterations (work launched inside them on the key thread), None if unknown."""
    it = ctx.it
    if it is None or not it.duration.sum():
        return None
    return float(it.gpu_busy.sum()) / float(it.duration.sum())


def _cuda_call_time(ctx: Context, f: Finding) -> None:
    """A CPU-bound phase's time in CUDA calls (in-memory exports): when it is most of it, say so and
    change the advice (allocations per step are the usual cause: ``PYTORCH_NO_CUDA_MEMORY_CACHING``,
    tensors created every step)."""
    r = ctx.r
    mine = ctx.ranges[(r.label[ctx.ranges] == ctx.label_of(f.phase)) & ~r.cross_thread[ctx.ranges]]
    got = own_cuda_calls(ctx, mine)
    if not got or not got[1]:
        return
    total, per = got
    top = dict(list(per.items())[:3])
    share = total / max(f.evidence["cpu_work_ns"], 1)
    f.evidence.update({"cuda_calls_ns": total, "cuda_calls_share": round(share, 3), "cuda_calls_top": top})
    if share >= CUDA_CALLS_SHARE:
        found = cause(per, total, ("alloc", "module_load"))
        f.advice = CUDA_CAUSES[found][1] if found else CUDA_CALL_ADVICE
        if found:
            f.evidence["cause"] = found
    _first_calls(ctx, f, per)


def _first_calls(ctx: Context, f: Finding, per: dict[str, int]) -> None:
    """Time in graph capture, module loading or compilation is never called Python-bound: when the phase's
    kept warm-up calls (``--keep-warm-up``) are half its cost, or such calls a tenth of its CPU work,
    the cause and the advice are theirs."""
    mine = [p for p in ctx.warm_up.phases if p.phase == f.phase]
    kept = mine[0].kept_excess(ctx.ranges) if mine else 0
    if kept >= WARM_UP_SHARE * f.cost_ns:
        found = next(iter(warm_up.causes(ctx, mine[0])), None)
        f.evidence.update({"warm_up_ns": kept, "cause": found or "warm_up"})
        f.advice = CUDA_CAUSES[found][1] if found else warm_up.ADVICE
        return
    loading = {c: sum(v for n, v in per.items() if n.startswith(CUDA_CAUSES[c][0])) for c in LOADING}
    c, t = max(loading.items(), key=lambda kv: kv[1])
    if t >= LOADING_SHARE * max(f.evidence["cpu_work_ns"], 1):
        f.evidence["cause"] = c
        f.advice = CUDA_CAUSES[c][1]


def detect(ctx: Context, facts: Facts) -> list[Finding]:
    if not ctx.d.has_cuda:
        return cpu_work.detect(ctx, facts, NAME)
    out = []
    saturation = _gpu_saturation(ctx)
    for load in loads(ctx, facts):
        if launch_bound.applies(load) or not applies(load):
            continue
        ev = dict(load.evidence)
        if saturation is not None:
            ev["iteration_gpu_busy_share"] = round(saturation, 3)
            if saturation >= CPU_BOUND_GPU_SATURATED:
                continue  # the GPU is busy anyway: this CPU time is hidden behind GPU work
        f = ctx.finding(load.own.phase, NAME, load.lost, ev, ADVICE)
        if f is not None:
            _cuda_call_time(ctx, f)
            cpu_work.add_hot_function(ctx, f)  # with --stacks: the function the phase ran most
            out.append(f)
    return out


def evidence_text(e: dict, u: Units) -> str:
    if e.get("no_cuda"):
        return cpu_work.evidence_text(e, u)
    calls = (
        f", CUDA calls {u.pct(e['cuda_calls_share'])} ({next(iter(e['cuda_calls_top']), '')})"
        if e.get("cuda_calls_top")
        else ""
    )
    return f"GPU busy {u.pct(e['gpu_busy_share'])} of its CPU time{calls}{cpu_work.hot_text(e, u)}"


KIND = Kind(NAME, ADVICE, detect, evidence_text, needs=LOAD_NEEDS, needs_cuda=False)
