"""Emit stage, live timing: libcupti's Activity API through ctypes, and the phase markers (GPU only).

Why not cupti-python's own callbacks: it hands the completed-buffer callback a list of one Python object
per record, built before our code runs; with 5-20k kernels per iteration that alone cost +376 % on the H200
(reports/live-cupti-h200.md). Here CUPTI calls one ctypes function per *buffer*; it copies the buffer's
valid bytes once and :func:`nvtxsim.emit.live.cupti_records.parse_buffer` cuts them into columns.

The library is the ``libcupti.so`` already loaded in the process (torch's kineto links it), else the one a
``nvidia-*`` wheel or the CUDA toolkit ships (``NVTXSIM_LIBCUPTI`` names a file). The record layouts are
CUPTI 13's (:data:`cupti_records.LAYOUTS`, from cupti-python 13.0.1's dtypes).

The marker (:class:`MemsetMarker`): one ``cuMemsetD32Async`` of :data:`cupti_records.MARK_WORDS` words, the
ticket as value, into a buffer of ours on a stream of ours (non-blocking: it orders nothing of the
program's). Its MEMSET record carries the call's correlation id; no API records are needed, which is what
makes it cheap (API records for every launch cost about as much as the launch itself).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nvtxsim.emit.live import cupti_records as recs

LIB_ENV = "NVTXSIM_LIBCUPTI"
FLUSH_FORCED = 1  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
MAX_LIMIT_REACHED = 12  # CUPTI_ERROR_MAX_LIMIT_REACHED: cuptiActivityGetNextRecord's end of buffer
EXT_CUSTOM0 = 3  # CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0

_REQUEST = ctypes.CFUNCTYPE(
    None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)
)
_COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


class CuptiError(RuntimeError):
    """A CUPTI call that returned an error (its name and CUPTI's words)."""


def find_library() -> str | None:
    """The libcupti to use: named, already loaded, from an nvidia wheel, or the toolkit's (None: none found)."""
    named = os.environ.get(LIB_ENV, "").strip()
    if named:
        return named
    loaded = _loaded("libcupti.so")
    if loaded:
        return loaded
    for base in sys.path:
        hits = sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib", "libcupti.so*")))
        if hits:
            return hits[-1]
    for home in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        hits = sorted(glob.glob(os.path.join(home, "extras", "CUPTI", "lib64", "libcupti.so*"))) if home else []
        if hits:
            return hits[-1]
    return ctypes.util.find_library("cupti")


def _loaded(stem: str) -> str | None:
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1] if line.strip() else ""
            if os.path.basename(path).startswith(stem):
                return path
    except OSError:
        pass
    return None


class BufferPool:
    """CUPTI's two buffer callbacks, as C function pointers: buffers of ``size`` bytes handed out and taken back
    (kept for reuse), each completed one's valid bytes copied once and passed to ``handler`` (CUPTI's thread)."""

    def __init__(self, size: int = 8 << 20) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.free: list[Any] = []
        self.held: dict[int, Any] = {}  # address -> the ctypes buffer CUPTI holds now
        self.handler: Callable[[bytes], None] | None = None
        self.request = _REQUEST(self._requested)  # kept alive: CUPTI holds these pointers
        self.complete = _COMPLETE(self._completed)

    # never raise: an exception here would be printed by ctypes, and the buffer lost
    def _requested(self, buf: Any, size: Any, max_records: Any) -> None:
        try:
            with self.lock:
                mem = self.free.pop() if self.free else ctypes.create_string_buffer(self.size)
                addr = ctypes.addressof(mem)
                self.held[addr] = mem
            buf[0], size[0], max_records[0] = addr, self.size, 0
        except BaseException:
            size[0] = 0

    def _completed(self, _ctx: Any, _stream: int, buf: int, _size: int, valid: int) -> None:
        try:
            raw = ctypes.string_at(buf, valid) if buf and valid else b""
            with self.lock:
                mem = self.held.pop(buf, None)
                if mem is not None:
                    self.free.append(mem)
            if raw and self.handler is not None:
                self.handler(raw)
        except BaseException:
            pass


class CuptiLib:
    """The Activity API calls live timing makes (the buffers: a :class:`BufferPool`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lib = ctypes.CDLL(path)
        self.pool = BufferPool()
        for name, args in (
            ("cuptiActivityEnable", [ctypes.c_int]),
            ("cuptiActivityDisable", [ctypes.c_int]),
            ("cuptiActivityFlushAll", [ctypes.c_uint32]),
            ("cuptiActivityFlushPeriod", [ctypes.c_uint32]),
            ("cuptiActivityPushExternalCorrelationId", [ctypes.c_int, ctypes.c_uint64]),
            ("cuptiActivityPopExternalCorrelationId", [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]),
            ("cuptiActivityGetNumDroppedRecords", [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_size_t)]),
            ("cuptiActivityRegisterCallbacks", [_REQUEST, _COMPLETE]),
            ("cuptiGetVersion", [ctypes.POINTER(ctypes.c_uint32)]),
            ("cuptiFinalize", []),
        ):
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        self.lib.cuptiGetResultString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuptiActivityGetNextRecord.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_void_p),
        ]
        self.push_fn = self.lib.cuptiActivityPushExternalCorrelationId
        self._last = ctypes.c_uint64()

    def check(self, name: str, rc: int) -> None:
        if rc:
            text = ctypes.c_char_p()
            self.lib.cuptiGetResultString(rc, ctypes.byref(text))
            raise CuptiError(f"{name}: {(text.value or b'').decode(errors='replace') or rc}")

    def version(self) -> int:
        v = ctypes.c_uint32()
        self.check("cuptiGetVersion", self.lib.cuptiGetVersion(ctypes.byref(v)))
        return int(v.value)

    def register(self, handler: Callable[[bytes], None]) -> None:
        """Buffers to CUPTI; each completed one's valid bytes to ``handler`` (CUPTI's thread)."""
        self.pool.handler = handler
        self.check(
            "cuptiActivityRegisterCallbacks",
            self.lib.cuptiActivityRegisterCallbacks(self.pool.request, self.pool.complete),
        )

    def enable(self, kind: int) -> None:
        self.check("cuptiActivityEnable", self.lib.cuptiActivityEnable(kind))

    def disable(self, kind: int) -> None:
        self.check("cuptiActivityDisable", self.lib.cuptiActivityDisable(kind))

    def flush_all(self, forced: bool = False) -> None:
        self.check("cuptiActivityFlushAll", self.lib.cuptiActivityFlushAll(FLUSH_FORCED if forced else 0))

    def flush_period(self, ms: int) -> None:
        self.check("cuptiActivityFlushPeriod", self.lib.cuptiActivityFlushPeriod(ms))

    def dropped(self) -> int:
        n = ctypes.c_size_t(0)
        self.check("cuptiActivityGetNumDroppedRecords", self.lib.cuptiActivityGetNumDroppedRecords(None, 0, n))
        return int(n.value)

    def push(self, ext_id: int, kind: int = EXT_CUSTOM0) -> None:
        self.push_fn(kind, ext_id)

    def pop(self, kind: int = EXT_CUSTOM0) -> None:
        self.lib.cuptiActivityPopExternalCorrelationId(kind, ctypes.byref(self._last))

    def finalize(self) -> None:
        self.check("cuptiFinalize", self.lib.cuptiFinalize())

    def records(self, buf: int, valid: int) -> Iterator[tuple[int, int]]:
        """(kind, address) of each record in a buffer, the slow way (cuptiActivityGetNextRecord)."""
        rec = ctypes.c_void_p(None)
        while self.lib.cuptiActivityGetNextRecord(buf, valid, ctypes.byref(rec)) == 0 and rec.value:
            yield ctypes.c_int.from_address(rec.value).value, rec.value


def rewalk(raw: bytes, lib: CuptiLib, layout: dict) -> bytes:
    """A buffer ``parse_buffer`` could not cut (a kind it does not know): its known records only, back to back,
    found one by one with cuptiActivityGetNextRecord."""
    mem = ctypes.create_string_buffer(raw, len(raw))
    parts = [
        ctypes.string_at(addr, layout[kind][0])
        for kind, addr in lib.records(ctypes.addressof(mem), len(raw))
        if kind in layout
    ]
    return b"".join(parts)


class MemsetMarker:
    """``cuMemsetD32Async`` of MARK_WORDS words of ours, ticket as value, on a non-blocking stream of ours."""

    def __init__(self, torch: Any) -> None:
        self.words = torch.empty(recs.MARK_WORDS, dtype=torch.int32, device="cuda")
        self.stream = torch.cuda.Stream()  # the pool's streams are non-blocking: nothing of the program waits on it
        lib = ctypes.CDLL("libcuda.so.1")
        fn = lib.cuMemsetD32Async
        fn.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p]
        fn.restype = ctypes.c_int
        self.fn, self.ptr, self.handle = fn, int(self.words.data_ptr()), int(self.stream.cuda_stream)

    def __call__(self, value: int) -> int:
        """The driver's return code (0: placed)."""
        return int(self.fn(self.ptr, value, recs.MARK_WORDS, self.handle))
