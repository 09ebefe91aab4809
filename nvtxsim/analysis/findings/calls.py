"""The CUDA calls the findings look at: synchronizing calls and memcpys, and the host copies' launching calls.

A streamed export (millions of calls, columns read on demand) is not materialised for them: one
filtered query reads just these rows, chosen by name as in memory, so both backends see the same calls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nvtxsim.analysis.gpu import is_sync_api
from nvtxsim.analysis.launches import api_name
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.columns import ApiCalls, Export
from nvtxsim.export.streamed import source_of
from nvtxsim.schema import PID_MASK


def is_copy_api(name: str) -> bool:
    return name.startswith(("cudaMemcpy", "cuMemcpy"))


def _notable_ids(detail: Selection) -> list[int]:
    return [i for i, v in detail.export.strings.items() if is_sync_api(v) or is_copy_api(api_name(v))]


def prefetch_notable_calls(detail: Selection) -> None:
    """On a streamed export, start reading :func:`notable_calls`' rows beside the projection's pass (the
    findings need them after it); in memory there is nothing to overlap."""
    ex = detail.export
    api, src = ex.api, source_of(ex)
    if api is not None and src is not None and not api.is_read("name_id"):
        ids = _notable_ids(detail)
        if ids:
            src.prefetch_named(ids)


def notable_calls(detail: Selection) -> ApiCalls:
    """The synchronizing calls and memcpys of every thread (see the module's docstring for streamed exports)."""
    ex = detail.export
    api = ex.api
    empty = ApiCalls(*(np.zeros(0, dtype=np.int64) for _ in range(5)))
    ids = _notable_ids(detail) if api is not None else []
    if not ids:
        return empty
    assert api is not None
    src = source_of(ex)
    if src is not None and not api.is_read("name_id"):
        a = src.calls_named(ids)  # the rows the in-memory filter below keeps, in table order
        return ApiCalls(*(a[:, i].copy() for i in range(5)))
    m = np.isin(api.name_id, ids)
    return ApiCalls(api.start[m], api.end[m], api.global_tid[m], api.correlation_id[m], api.name_id[m])


def api_label(export: Export, name_id: int) -> str:
    """The API name of a call (its StringIds entry without the version suffix)."""
    return api_name(export.string(int(name_id)))


def named(export: Export, calls: ApiCalls, pred: Callable[[str], bool]) -> np.ndarray:
    """Positions in ``calls`` of the calls whose API name satisfies ``pred``."""
    ids, inv = np.unique(calls.name_id, return_inverse=True)
    ok = np.array([bool(pred(api_label(export, int(i)))) for i in ids], dtype=bool)
    return np.flatnonzero(ok[inv.reshape(-1)]) if len(ids) else np.zeros(0, dtype=np.int64)


def copy_calls(export: Export, calls: ApiCalls, hc) -> np.ndarray:
    """Per host copy: the index in ``calls`` of its launching CUDA call (same process and correlation id), -1 if none."""
    out = np.full(len(hc), -1, dtype=np.int64)
    mine = named(export, calls, lambda n: is_copy_api(api_name(n)))
    if len(mine) == 0 or len(hc) == 0:
        return out
    pids = np.unique(np.concatenate([calls.global_tid[mine] & PID_MASK, hc.global_pid]))
    key = lambda p, c: (np.searchsorted(pids, p).astype(np.int64) << 32) | (c & 0xFFFFFFFF)  # noqa: E731
    k_calls = key(calls.global_tid[mine] & PID_MASK, calls.correlation_id[mine])
    order = np.argsort(k_calls, kind="stable")
    k_sorted = k_calls[order]
    k_hc = key(hc.global_pid, hc.correlation_id)
    j = np.minimum(np.searchsorted(k_sorted, k_hc), len(k_sorted) - 1)
    hit = k_sorted[j] == k_hc
    out[hit] = mine[order[j[hit]]]
    return out
