"""The CUDA calls the findings look at: synchronizing calls and memcpys, and the host copies' launching calls.

A streamed export (millions of calls, columns read on demand) is not materialised for them: the
projection's pass keeps them on its way when :func:`prefetch` asked it to, else one filtered
query reads just these rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nvtxsim.analysis.gpu import is_sync_api
from nvtxsim.analysis.launches import api_name
from nvtxsim.analysis.selection import Selection
from nvtxsim.export.columns import ApiCalls, Export
from nvtxsim.export.streamed import COPY_TAG, source_of
from nvtxsim.schema import PID_MASK, SYNC_TYPE_CALLS


def is_copy_api(name: str) -> bool:
    return name.startswith(("cudaMemcpy", "cuMemcpy"))


def _notable_ids(detail: Selection) -> list[int]:
    return [i for i, v in detail.export.strings.items() if is_sync_api(v) or is_copy_api(api_name(v))]


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
        a = src.watched if src.watched is not None else src.calls_named(ids)
        return ApiCalls(*(a[:, i].copy() for i in range(5)))
    m = np.isin(api.name_id, ids)
    return ApiCalls(api.start[m], api.end[m], api.global_tid[m], api.correlation_id[m], api.name_id[m])


#: Names of the calls a streamed export's pass keeps, by their tags (see :func:`prefetch`): the explicit
#: synchronize calls by the kind CUPTI records, and the host copies' launching calls.
WATCH_NAMES = {-sync_type: name for sync_type, name in SYNC_TYPE_CALLS.items()} | {COPY_TAG: "cudaMemcpyAsync"}


def api_label(export: Export, name_id: int) -> str:
    """The API name of a call, also for the tags a streamed export's pass gives the calls it keeps."""
    return WATCH_NAMES.get(int(name_id), "") if name_id < 0 else api_name(export.string(int(name_id)))


def prefetch(detail: Selection) -> None:
    """For a streamed export whose projection has not run yet: ask its pass over the CUDA calls to keep
    the synchronize calls and the host copies' calls on its way, by correlation id (from the small
    synchronization and memcpy tables): no second scan of the calls, no extra column read. Their names
    are then the CUDA call kinds (WATCH_NAMES); synchronous ``cudaMemcpy`` calls are not among them."""
    ex = detail.export
    src = source_of(ex) if ex.api is not None else None
    if src is None or src.projection is not None or detail.memo.is_computed("gpu"):
        return
    parts = [src.explicit_syncs(ex.tables)]
    hc = getattr(ex.extras, "host_copies", None)
    if hc is not None and len(hc):
        parts.append(np.column_stack([hc.global_pid, hc.correlation_id, np.full(len(hc), COPY_TAG, dtype=np.int64)]))
    src.watch = np.concatenate(parts)


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
