"""Time in CUDA calls a phase made itself, and the causes it points to (cpu_bound's and outlier_iterations' evidence).

A CPU-bound phase, or the overrun of a slow iteration, that is mostly CUDA calls is not Python:
allocations every step, lazy module loading, launches blocked on a full queue, or a wait.
"""

from __future__ import annotations

import numpy as np

from nvtxsim.analysis.findings.context import Context, blocked
from nvtxsim.analysis.launches import api_name, contained

ALLOC_APIS = (
    "cudaMalloc",
    "cudaFree",
    "cuMemAlloc",
    "cuMemFree",
    "cudaHostAlloc",
    "cudaFreeHost",
    "cuMemHostAlloc",
    "cuMemFreeHost",
)
#: Calls that capture or instantiate a CUDA graph (a query such as cudaStreamIsCapturing is none of them).
GRAPH_CAPTURE_APIS = (
    "cudaStreamBeginCapture",
    "cuStreamBeginCapture",
    "cudaStreamEndCapture",
    "cuStreamEndCapture",
    "cudaGraphInstantiate",
    "cuGraphInstantiate",
    "cudaGraphUpload",
    "cuGraphUpload",
    "cudaGraphAdd",
    "cuGraphAdd",
)
CUDA_CAUSES = {  # CUDA calls that explain CPU time, by what their names start with → advice
    "launch_queue": (
        ("cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch"),
        "launches wait on a full CUDA queue: the GPU is the limit there",
    ),
    "module_load": (
        ("cuLibraryLoad", "cuModuleLoad", "cuLibraryGet", "cuModuleGet"),
        "CUDA modules load lazily on first use: warm up, then --skip-first",
    ),
    "graph_capture": (
        GRAPH_CAPTURE_APIS,
        "CUDA graphs are captured in the first call: warm up, then --skip-first",
    ),
    "compile": (
        ("nvrtc", "cuLink", "nvJitLink"),
        "code is compiled in the first call: warm up (or cache it), then --skip-first",
    ),
    "alloc": (ALLOC_APIS, "allocate once, outside the step; keep PyTorch's caching allocator on"),
    "gpu_wait": (
        (
            "cudaStreamSynchronize",
            "cudaDeviceSynchronize",
            "cudaEventSynchronize",
            "cuStreamSynchronize",
            "cuCtxSynchronize",
            "cuEventSynchronize",
            "cudaMemcpy",
            "cuMemcpy",
        ),
        "it waits there for GPU work queued before it (a sync or a copy)",
    ),
}


def cause(per: dict[str, int], of: float, causes: tuple[str, ...]) -> str | None:
    """The first of ``causes`` whose calls in ``per`` (API name → time) take at least half of ``of``."""
    for c in causes:
        prefixes = CUDA_CAUSES[c][0]
        if of and sum(v for name, v in per.items() if name.startswith(prefixes)) >= 0.5 * of:
            return c
    return None


def own_cuda_calls(ctx: Context, mine: np.ndarray, *, kept: bool = True) -> tuple[int, dict[str, int]] | None:
    """Time in CUDA calls made by the ranges ``mine`` themselves (not in a child phase; union per range)
    and per API name (both backends: a streamed export reads the call columns this needs). ``kept``
    False: ``mine`` may be ranges the report leaves out (the warm-up's)."""
    api = ctx.ex.api
    if api is None or len(api) == 0:
        return None
    r = ctx.r
    ri, ci = contained(r.start[mine], r.end[mine], r.global_tid[mine], api.start, api.end, api.global_tid)
    owner = ctx.owner if kept else ctx.innermost_range
    own = owner(api.start[ci], api.end[ci], api.global_tid[ci]) == mine[ri]  # not in a child phase: self time
    ri, ci = ri[own], ci[own]
    if len(ci) == 0:
        return 0, {}
    ids, code = np.unique(api.name_id[ci], return_inverse=True)
    dur = np.bincount(code.reshape(-1), weights=api.end[ci] - api.start[ci], minlength=len(ids))
    per: dict[str, int] = {}
    for i, t in zip(ids.tolist(), dur.tolist()):
        name = api_name(ctx.ex.string(int(i)))
        per[name] = per.get(name, 0) + int(t)
    return blocked(mine[ri], api.start[ci], api.end[ci]), dict(sorted(per.items(), key=lambda kv: -kv[1]))
