"""Facts about the Nsight Systems SQLite export, in one place: event types, tables, columns, masks, enums.

Everything here is read from nsys's own schema (the ``ENUM_*`` tables of an export and
``docs/nsys-export.md``); the reader, the streamed backend, the side tables, the analyses,
the renderers and ``nvtxsim doctor`` (which counts the ranges of the export it made) take
these names from here instead of spelling them again. Root vocabulary: every stage may import it.
"""

from __future__ import annotations

import numpy as np

# --------------------------------------------------------------------------- NVTX_EVENTS

#: NVTX event types (ENUM_NSYS_EVENT_TYPE), stable since 2022.4.
PUSHPOP, STARTEND, MARK, DOMAIN_CREATE, DOMAIN_DESTROY = 59, 60, 34, 75, 76
NVTXT_PUSHPOP, NVTXT_STARTEND = 70, 71
RANGE_TYPES = (PUSHPOP, STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND)
START_END_TYPES = (STARTEND, NVTXT_STARTEND)
NVTX_TABLE = "NVTX_EVENTS"
#: Scalar payload columns of NVTX_EVENTS, first non-NULL wins.
PAYLOAD_COLUMNS = ("int64Value", "uint64Value", "int32Value", "uint32Value", "doubleValue", "floatValue")

# --------------------------------------------------------------------------- CUDA tables

RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
MEMORY_TABLE = "CUDA_GPU_MEMORY_USAGE_EVENTS"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
#: ``syncType`` values of SYNC_TABLE (ENUM_CUPTI_SYNC_TYPE) for which the host waits, one row per call, and
#: the kind of call each records (2, a stream waiting on an event, is no host wait).
SYNC_TYPE_CALLS = {1: "cudaEventSynchronize", 3: "cudaStreamSynchronize", 4: "cudaDeviceSynchronize"}

#: Op kinds of the loaded GPU columns (GRAPH: a graph-level CUDA graph execution).
KERNEL, MEMCPY, MEMSET, GRAPH = 0, 1, 2, 3
GPU_TABLES = {KERNEL: KERNEL_TABLE, MEMCPY: MEMCPY_TABLE, MEMSET: MEMSET_TABLE}
KIND_NAMES = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset", GRAPH: "graph"}

#: Columns a CUDA table needs to be read at all.
API_REQUIRED = frozenset({"start", "end", "globalTid", "correlationId"})
GPU_REQUIRED = frozenset({"start", "end", "globalPid", "correlationId"})

#: ``copyKind`` of CUPTI_ACTIVITY_KIND_MEMCPY (ENUM_CUDA_MEMCPY_OPER) → direction label; other values
#: (array copies, host to host, unknown) are "other".
COPY_HTOD, COPY_DTOH = 1, 2
COPY_KINDS = {
    COPY_HTOD: "htod",
    COPY_DTOH: "dtoh",
    8: "dtod",
    10: "ptop",
    11: "unified_htod",
    12: "unified_dtoh",
    13: "unified_dtod",
}
#: Copy directions of the summary's byte columns (``memcpy_<direction>_bytes``): peer-to-peer and
#: unified-memory copies go to "other", as do the kinds COPY_KINDS does not name.
SUMMARY_DIRECTIONS = ("htod", "dtoh", "dtod", "other")


#: Memory kinds of a copy's source/destination (``srcKind``, ``dstKind``; ENUM_CUDA_MEM_KIND).
PAGEABLE, PINNED = 0, 1
#: ``memKind`` values that are GPU memory (2 device, 3 array, 4 managed, 5 device static);
#: pageable/pinned host memory (0, 1) is left out. NULL counts as device.
DEVICE_MEMORY_KINDS = (2, 3, 4, 5)
#: ``memoryOperationType`` of MEMORY_TABLE (ENUM_CUDA_DEV_MEM_EVENT_OPER).
MEMORY_ALLOC, MEMORY_FREE = 0, 1


def copy_label(copy_kind: int) -> str:
    """Direction label of one ``copyKind`` value."""
    return COPY_KINDS.get(int(copy_kind), "other")


def summary_direction(copy_kind: np.ndarray) -> np.ndarray:
    """Index into SUMMARY_DIRECTIONS per ``copyKind`` value (int8)."""
    out = np.full(len(copy_kind), SUMMARY_DIRECTIONS.index("other"), dtype=np.int8)
    for code, label in COPY_KINDS.items():
        if label in SUMMARY_DIRECTIONS:
            out[copy_kind == code] = SUMMARY_DIRECTIONS.index(label)
    return out


# --------------------------------------------------------------------------- ids and times

#: ``globalTid``/``globalPid`` layout: hardware/VM/process bits above bit 24, thread id below; the
#: process id is the 24 bits above the thread id.
PID_MASK = np.int64(-(1 << 24))  # == 0xFFFFFFFFFF000000 as int64: keeps HW, VM and PID bits
TID_MASK = 0xFFFFFF
PID_SHIFT, PID_BITS = 24, 0xFFFFFF


def pid_of(global_id: int) -> int:
    """Process id inside a ``globalTid``/``globalPid``."""
    return (int(global_id) >> PID_SHIFT) & PID_BITS


def pids_of(global_ids: np.ndarray) -> np.ndarray:
    """Process ids inside an array of ``globalTid``/``globalPid`` (nsys does not record the rank: a job's ranks are
    its pids)."""
    return (np.asarray(global_ids).astype(np.int64) >> PID_SHIFT) & PID_BITS


def tid_of(global_tid: int) -> int:
    """Thread id inside a ``globalTid``."""
    return int(global_tid) & TID_MASK


MAX_ABS_NS = 1 << 62  # ~146 years: larger timestamps are corrupt (their differences would overflow int64)
#: The largest copy, memset or allocation an export can hold (256 GiB, more than any GPU's memory): larger
#: byte counts are corrupt, counted as 0 with a warning, so that sums of 2^25 of them still fit in int64.
MAX_BYTES = 1 << 38
SANE_BYTES = f"bytes BETWEEN 0 AND {MAX_BYTES}"
SANE_TIMES = (
    f"start BETWEEN {-MAX_ABS_NS} AND {MAX_ABS_NS} AND end BETWEEN {-MAX_ABS_NS} AND {MAX_ABS_NS} AND end >= start"
)
#: Rows of the CUDA tables that the reader keeps (the same filter in every backend).
API_WHERE = (
    f"start IS NOT NULL AND end IS NOT NULL AND globalTid IS NOT NULL AND correlationId IS NOT NULL AND {SANE_TIMES}"
)
GPU_WHERE = (
    f"start IS NOT NULL AND end IS NOT NULL AND globalPid IS NOT NULL AND correlationId IS NOT NULL AND {SANE_TIMES}"
)

# --------------------------------------------------------------------------- other tables

META_TABLES = ("EXPORT_META_DATA", "META_DATA_EXPORT", "META_DATA_CAPTURE")
STRINGS_TABLE = "StringIds"
ANALYSIS_TABLE = "ANALYSIS_DETAILS"  # the capture's duration
THREAD_NAMES_TABLE = "ThreadNames"
PROCESSES_TABLE = "PROCESSES"
GPU_INFO_TABLE = "TARGET_INFO_GPU"
GRAPH_TABLE_PREFIX = "CUDA_GRAPH"  # CUDA_GRAPH_EVENTS, CUDA_GRAPH_NODE_EVENTS ...: CUDA graphs were recorded

# --------------------------------------------------------------------------- OS runtime (nsys -t osrt)

#: OS runtime library calls longer than ``--osrt-threshold`` (1 µs by default). 2022.4 and newer:
#: ``start, end, eventClass, globalTid, nameId, returnValue, nestingLevel, callchainId`` (+``argumentsId`` later).
OSRT_TABLE = "OSRT_API"
OSRT_CALLCHAINS_TABLE = "OSRT_CALLCHAINS"
#: ``eventClass`` of a traced call (ENUM_NSYS_EVENT_CLASS 27); 31/32 are the zero-length "profiling
#: started/finished" markers, which are no calls.
OSRT_CALL_CLASS = 27
OSRT_REQUIRED = frozenset({"start", "end", "globalTid", "nameId"})

#: What a traced OS call waits on, by its function name (nsys records libc entry points, e.g.
#: ``clock_nanosleep``, ``pthread_cond_timedwait``, ``sem_wait``). First matching group wins; a
#: name ending in a digit suffix (``open64``, ``mmap64``) matches its base name. CPython's GIL is a
#: condition variable (``pthread_cond_timedwait``), a ``threading.Lock`` a semaphore (``sem_*``).
OSRT_CATEGORIES: tuple[tuple[str, frozenset[str]], ...] = (
    ("sleep", frozenset({"nanosleep", "clock_nanosleep", "usleep", "sleep", "sched_yield"})),
    (
        "socket",
        frozenset(
            {"socket", "connect", "accept", "accept4", "bind", "listen", "recv", "recvfrom", "recvmsg", "recvmmsg"}
            | {"send", "sendto", "sendmsg", "sendmmsg", "getaddrinfo", "shutdown", "getsockopt", "setsockopt"}
        ),
    ),
    ("poll", frozenset({"poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait", "epoll_pwait2"})),
    (
        "file",
        frozenset(
            {"read", "write", "pread", "pwrite", "readv", "writev", "preadv", "pwritev", "open", "openat", "creat"}
            | {"close", "fopen", "fclose", "fread", "fwrite", "fflush", "fsync", "fdatasync", "sync", "lseek"}
            | {"stat", "fstat", "lstat", "fstatat", "statx", "unlink", "rename", "mkdir", "rmdir", "ftruncate"}
            | {"truncate", "getc", "fgets", "fputs", "fputs_unlocked", "fgetc", "ioctl", "fcntl", "dup", "dup2"}
            | {"pipe", "pipe2", "sendfile", "splice", "copy_file_range", "fallocate", "posix_fadvise"}
        ),
    ),
    (
        "lock",
        frozenset(
            {"futex", "pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_trylock", "pthread_cond_wait"}
            | {"pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_cond_signal", "pthread_cond_broadcast"}
            | {"sem_wait", "sem_timedwait", "sem_clockwait", "sem_trywait", "sem_post", "pthread_rwlock_rdlock"}
            | {"pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock", "pthread_join"}
            | {"pthread_spin_lock", "pthread_barrier_wait", "flock", "lockf"}
        ),
    ),
    (
        "process",
        frozenset(
            {"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execl", "execlp", "posix_spawn"}
            | {"posix_spawnp", "system", "popen", "pclose", "wait", "waitpid", "wait3", "wait4", "waitid"}
            | {"pthread_create"}
        ),
    ),
    ("memory", frozenset({"mmap", "munmap", "mremap", "mprotect", "madvise", "brk", "sbrk", "msync", "mlock"})),
)
OSRT_OTHER = "other"
#: What each category means, for the view's notes and the findings' advice.
OSRT_CATEGORY_TEXT = {
    "sleep": "sleeping (time.sleep, nanosleep)",
    "socket": "socket I/O",
    "poll": "waiting in poll/select/epoll",
    "file": "file and pipe I/O (read/write/open/fsync)",
    "lock": "locks, condition variables and the GIL (futex, mutex, condvar, semaphore)",
    "process": "creating or waiting for processes and threads",
    "memory": "mapping memory (mmap/munmap)",
    OSRT_OTHER: "other OS calls",
}


def osrt_category(name: str) -> str:
    """The category of one traced OS call by its function name (OSRT_CATEGORIES), ``other`` when none matches."""
    base = name.strip()
    for candidate in (base, base.rstrip("0123456789"), base.removeprefix("__").removesuffix("_nocancel")):
        for category, names in OSRT_CATEGORIES:
            if candidate in names:
                return category
    return OSRT_OTHER


# --------------------------------------------------------------------------- stacks sidecar (nvtxsim's own)

#: ``nvtxsim profile --stacks`` (``NVTXSIM_STACKS``) writes the sampled Python stacks per phase beside the
#: export as ``NAME`` + this suffix: one JSON line per process, whose first key is ``"format": STACKS_FORMAT``
#: (written by :mod:`nvtxsim.emit.stacks`, read by :mod:`nvtxsim.analysis.stacks`).
STACKS_SUFFIX = ".stacks.jsonl"
STACKS_FORMAT = "nvtxsim-stacks/1"
