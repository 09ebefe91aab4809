"""The loaded export: NVTX ranges, CUDA calls and GPU ops as numpy columns (the data every analysis reads).

Made by :func:`nvtxsim.export.reader.load`; one column per field, one row per event, times in
integer nanoseconds on the capture timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nvtxsim.schema import GPU_INFO_TABLE


@dataclass
class Ranges:
    """One row per NVTX range (push/pop and start/end), in table order."""

    row: np.ndarray  # int64: rowid / eventId (nsys's RangeId)
    start: np.ndarray  # int64 ns
    end: np.ndarray  # int64 ns; unclosed ranges end at the largest timestamp (nsys rule)
    global_tid: np.ndarray  # int64: thread that started the range
    cross_thread: np.ndarray  # bool: ended on another thread (start/end ranges only)
    unclosed: np.ndarray  # bool: never ended inside the capture
    style: np.ndarray  # int8: 0 push/pop, 1 start/end
    label: np.ndarray  # int32 index into Export.labels
    payload: np.ndarray  # float64, NaN where the range has no scalar payload
    name: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # str per range
    domain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))  # str per range ("" = default)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start


@dataclass
class ApiCalls:
    """CUDA runtime/driver API calls (the CPU side of GPU work)."""

    start: np.ndarray
    end: np.ndarray
    global_tid: np.ndarray
    correlation_id: np.ndarray
    name_id: np.ndarray  # int64 StringIds id of the API name

    #: Who holds the columns: "memory" (read in bulk), or "streamed" (read from the file on first use).
    backend: ClassVar[str] = "memory"

    def __len__(self) -> int:
        return len(self.start)

    def is_read(self, name: str) -> bool:
        """Whether column ``name`` is in memory (a streamed export reads each column on first use)."""
        return True


@dataclass
class GpuOps:
    """Kernels, memcpys and memsets, concatenated (sync rows are not GPU work)."""

    start: np.ndarray
    end: np.ndarray
    global_pid: np.ndarray
    correlation_id: np.ndarray
    kind: np.ndarray  # int8: KERNEL, MEMCPY, MEMSET
    device_id: np.ndarray
    stream_id: np.ndarray
    bytes: np.ndarray  # int64, 0 for kernels
    copy_kind: np.ndarray  # int16 CUPTI copyKind for memcpys, -1 otherwise
    name_id: np.ndarray  # int64 StringIds id of the kernel name, -1 otherwise

    backend: ClassVar[str] = "memory"  # as ApiCalls.backend

    def __len__(self) -> int:
        return len(self.start)

    def is_read(self, name: str) -> bool:
        return True


#: The key of :attr:`Export.meta` that holds a live trigger's mark (nvtxsim's own, beside nsys's metadata).
TRIGGER_META = "NVTXSIM_TRIGGER"


@dataclass
class Export:
    """Everything the analyse stage needs from one export."""

    path: Path
    meta: dict[str, str]
    tables: frozenset[str]
    labels: list[tuple[str, str]]  # (domain, name) per Ranges.label; domain "" = default domain
    ranges: Ranges
    api: ApiCalls | None
    gpu: GpuOps | None
    capture_end: int | None
    strings: dict[int, str] = field(repr=False, default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extras: Any = field(repr=False, default=None)  # nvtxsim.export.extras.Extras: side tables for the detail views
    #: Where this export's cache entry lives (set by the cache; None when the cache was not used).
    cache_entry: Any = field(repr=False, default=None, compare=False)

    @property
    def has_cuda(self) -> bool:
        return self.api is not None and self.gpu is not None

    @property
    def trigger(self) -> str | None:
        """What opened the capture window when a live trigger did ("sim_step>3x fired at iteration 25 ...")."""
        return self.meta.get(TRIGGER_META)

    @property
    def no_cuda_reason(self) -> str:
        """Why an export without CUDA tables has none, as far as the export can tell: nsys writes no CUDA
        table whether ``-t cuda`` was left out or nothing ran on a GPU, so the hint blames ``-t cuda``
        only when the capturing machine had a GPU (``TARGET_INFO_GPU``)."""
        if GPU_INFO_TABLE not in self.tables:
            return "no CUDA trace (the capturing machine reported no GPU)"
        return "no CUDA trace (capture with nsys -t cuda, unless the program launched no CUDA work)"

    @property
    def backend(self) -> str:
        """``streamed`` when the CUDA columns are read from the export on first use (an export too large to
        hold, :mod:`nvtxsim.export.streamed`), else ``memory``."""
        api, gpu = self.api, self.gpu
        streamed = api is not None and gpu is not None and api.backend == gpu.backend == "streamed"
        return "streamed" if streamed else "memory"

    @property
    def nsys_version(self) -> str:
        return self.meta.get("EXPORT_PRODUCT_VERSION", "") or self.meta.get("PRODUCT_VERSION", "")

    @property
    def schema_version(self) -> str:
        return self.meta.get("EXPORT_SCHEMA_VERSION", "") or self.meta.get("SCHEMA_VERSION", "")

    def label_names(self) -> np.ndarray:
        """Display name per label: ``domain:name``, or ``name`` in the default domain."""
        return np.array([f"{d}:{n}" if d else n for d, n in self.labels], dtype=object)

    def string(self, sid: int) -> str:
        return self.strings.get(int(sid), "")


def distinct(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array.

    Ids (string, thread, launch) are dense small integers: a bincount finds them in one pass,
    where numpy 2's hash-based ``np.unique`` is several times slower; other values are sorted.
    """
    if len(a) == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(a.min()), int(a.max())
    if hi - lo < max(4 * len(a), 1 << 16):
        return np.flatnonzero(np.bincount(a - lo)) + lo
    s = np.sort(a)
    return s[np.r_[True, s[1:] != s[:-1]]]
