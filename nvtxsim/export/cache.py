"""An optional cache of the parsed columns of an export, for repeated reports of the same file.

Why: reading a large export (tens of millions of CUDA rows) takes seconds to minutes; the
second report of the same file should not pay that again. The cache holds what
:func:`nvtxsim.export.reader.load` produced - ranges, labels, strings, metadata, side tables, and
the CUDA columns of small exports; for large (streamed) exports it holds the per-range GPU
projection instead of tens of millions of CUDA rows - in one uncompressed ``.npz``.

Where: ``<export dir>/.nvtxsim-cache/<name>.<size>.<mtime_ns>.npz``, or, when that folder
cannot be written, ``$XDG_CACHE_HOME/nvtxsim/`` (default ``~/.cache/nvtxsim``) with a
hash of the export's folder in the name. The export itself is never written.

Invalidation: the entry's name carries the export's size and mtime; inside, the entry
also records the export's device/inode, a hash of the first 100 bytes of the file (the SQLite
header, with its change counter) and of its last 4 KiB, and a hash of nvtxsim's loader source.
Any mismatch is a miss; a miss rebuilds the entry and removes older entries of the same export.

Integrity: an entry carries a checksum of its whole content (the description and every array).
An entry that is truncated, corrupt, rewritten (checksum or identity differ), unreadable, or not
a regular file (a symlink, FIFO, directory, device) is a miss: never a crash, a hang or
numbers from someone else's data. A FIFO is never opened for reading (no hang).

Use: ``nvtxsim report --cache`` (or ``NVTXSIM_CACHE=1``) reads and writes it; ``--no-cache``
(``NVTXSIM_CACHE=0``, the default) neither reads nor writes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from nvtxsim.envflags import env_flag
from nvtxsim.export.columns import Export
from nvtxsim.export.streamed import LazyApiCalls, LazyGpuOps, Source, source_of
from nvtxsim.export.tables import name_ranges
from nvtxsim.files import replace_via_temp

FORMAT = 2
ENV = "NVTXSIM_CACHE"
DIRNAME = ".nvtxsim-cache"
#: Modules (relative to the package) whose code decides what load() returns, and the streamed
#: projection stored with it: a change invalidates entries.
_CODE = (
    "export/reader.py",
    "export/tables.py",
    "export/columns.py",
    "schema.py",
    "export/pages.py",
    "export/streamed.py",
    "export/extras.py",
    "export/cache.py",
    "analysis/stream.py",
    "analysis/projection.py",
    "analysis/launches.py",
)


def enabled(flag: bool | None = None) -> bool:
    """``flag`` if given (``--cache``/``--no-cache``), else the NVTXSIM_CACHE environment variable."""
    if flag is not None:
        return bool(flag)
    return env_flag(ENV)


def _code_hash() -> str:
    h = hashlib.sha1(str(FORMAT).encode())
    here = Path(__file__).resolve().parents[1]
    for name in _CODE:
        try:
            h.update((here / name).read_bytes())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()[:16]


def _identity(path: Path) -> dict:
    st = os.stat(path)
    with open(path, "rb") as fh:
        head = fh.read(100)
        fh.seek(max(st.st_size - 4096, 0))
        tail = fh.read(4096)
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "dev": st.st_dev,
        "ino": st.st_ino,
        "head": hashlib.sha1(head).hexdigest(),
        "tail": hashlib.sha1(tail).hexdigest(),
        "code": _code_hash(),
        "wal": _wal_state(path),
    }


def _wal_state(path: Path) -> list[int] | None:
    """Size and mtime of the ``-wal`` beside the export: rows in it change the export's content."""
    try:
        st = os.stat(str(path) + "-wal")
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _checksum(doc_bytes: bytes, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """One hash over an entry's description and every array (name, dtype, shape, bytes)."""
    h = hashlib.blake2b(doc_bytes, digest_size=32)
    for name in sorted(k for k in arrays if not k.startswith("__")):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.view(np.uint8).reshape(-1).data if a.size else b"")
    return np.frombuffer(h.digest(), dtype=np.uint8)


def _open_entry(entry: Path):
    """The entry opened for reading only if it is a regular file (not a link, FIFO, device or folder), else None."""
    import stat

    try:
        if not stat.S_ISREG(os.lstat(entry).st_mode):
            return None
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between the two calls
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _discard(entry: Path) -> None:
    """Remove what sits where an entry should be, unless it is a folder (never recursed into)."""
    try:
        if os.path.lexists(entry) and not (entry.is_dir() and not entry.is_symlink()):
            entry.unlink()
    except OSError:
        pass


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def entry_path(path: str | os.PathLike[str], *, create: bool = False) -> Path:
    """Where the cache entry of ``path`` lives (``create``: make the folder, choosing a writable one)."""
    path = Path(path).resolve()
    st = os.stat(path)
    name = f"{path.name}.{st.st_size}.{st.st_mtime_ns}.npz"
    local = path.parent / DIRNAME
    if local.is_dir() and os.access(local, os.W_OK | os.X_OK) or (create and _writable(local)):
        return local / name
    if not create and (local / name).exists():
        return local / name
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nvtxsim"
    if create:
        base.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha1(str(path.parent).encode()).hexdigest()[:12]
    return base / f"{tag}-{name}"


# --------------------------------------------------------------------------- encoding


class _Uncacheable(Exception):
    pass


def _encode(value: Any, key: str, arrays: dict[str, np.ndarray]) -> Any:
    """JSON-able description of ``value``; numpy arrays go to ``arrays`` under ``key``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"t": "v", "v": value}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"t": "strs", "v": [str(x) for x in value.tolist()]}
        arrays[key] = value
        return {"t": "a", "k": key}
    if isinstance(value, Path):
        return {"t": "path", "v": str(value)}
    if isinstance(value, (frozenset, set)):
        return {
            "t": "set",
            "frozen": isinstance(value, frozenset),
            "v": [_encode(x, f"{key}.{i}", arrays) for i, x in enumerate(sorted(value, key=str))],
        }
    if isinstance(value, (list, tuple)):
        return {
            "t": "tuple" if isinstance(value, tuple) else "list",
            "v": [_encode(x, f"{key}.{i}", arrays) for i, x in enumerate(value)],
        }
    if isinstance(value, dict):
        items = list(value.items())
        return {
            "t": "dict",
            "k": [_encode(k, f"{key}.k{i}", arrays) for i, (k, _) in enumerate(items)],
            "v": [_encode(v, f"{key}.v{i}", arrays) for i, (_, v) in enumerate(items)],
        }
    if dataclasses.is_dataclass(value) and type(value).__module__.startswith("nvtxsim."):
        cls = type(value)
        fields = {f.name: _encode(getattr(value, f.name), f"{key}.{f.name}", arrays) for f in dataclasses.fields(value)}
        return {"t": "dc", "m": cls.__module__, "c": cls.__qualname__, "f": fields}
    raise _Uncacheable(f"cannot cache a {type(value).__name__}")


def _decode(desc: Any, npz) -> Any:
    t = desc["t"]
    if t == "v":
        return desc["v"]
    if t == "a":
        return npz[desc["k"]]
    if t == "strs":
        return np.array(desc["v"], dtype=object)
    if t == "path":
        return Path(desc["v"])
    if t == "set":
        items = [_decode(x, npz) for x in desc["v"]]
        return frozenset(items) if desc["frozen"] else set(items)
    if t in ("list", "tuple"):
        items = [_decode(x, npz) for x in desc["v"]]
        return tuple(items) if t == "tuple" else items
    if t == "dict":
        return {_decode(k, npz): _decode(v, npz) for k, v in zip(desc["k"], desc["v"])}
    if t == "dc":
        if not desc["m"].startswith("nvtxsim."):
            raise _Uncacheable("foreign class")
        cls = getattr(importlib.import_module(desc["m"]), desc["c"])
        return cls(**{name: _decode(f, npz) for name, f in desc["f"].items()})
    raise _Uncacheable(f"unknown entry type {t!r}")


# --------------------------------------------------------------------------- entries


def _export_state(export: Export) -> tuple[dict, dict[str, np.ndarray]]:
    arrays: dict[str, np.ndarray] = {}
    doc: dict[str, Any] = {"fields": {}}
    src = source_of(export)
    for f in dataclasses.fields(export):
        value = getattr(export, f.name)
        if f.name in ("api", "gpu") and isinstance(value, (LazyApiCalls, LazyGpuOps)) or f.name == "cache_entry":
            continue
        if f.name == "ranges":  # names/domains follow from labels: store the numeric columns only
            value = dataclasses.replace(value, name=np.zeros(0, dtype=object), domain=np.zeros(0, dtype=object))
        doc["fields"][f.name] = _encode(value, f.name, arrays)
    if src is not None:
        api_count, gpu_counts = src.counts() if src.api_count is not None else (None, None)
        st = os.stat(src.path)
        doc["stream"] = {
            "path": str(src.path),
            "path_stat": [st.st_size, st.st_mtime_ns],
            "api_cols": sorted(src.api_cols),
            "gpu_tables": [[k, t, sorted(c)] for k, t, c in src.gpu_tables],
            "api_count": api_count,
            "gpu_counts": {str(k): v for k, v in (gpu_counts or {}).items()},
        }
        if src.projection is not None:
            doc["projection"] = _encode(src.projection, "projection", arrays)
    return doc, arrays


def _write(entry: Path, ident: dict, export: Export) -> None:
    doc, arrays = _export_state(export)
    doc["identity"] = ident
    doc_bytes = json.dumps(doc).encode()
    arrays["__doc__"] = np.frombuffer(doc_bytes, dtype=np.uint8)
    arrays["__check__"] = _checksum(doc_bytes, arrays)
    with replace_via_temp(entry, "wb") as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]  # stubs fear a key named allow_pickle; keys are array names
    # Older entries of the same export (other size/mtime) are stale now.
    stale = re.compile(re.escape(_base_name(entry.name)) + r"\.\d+\.\d+\.npz")
    for old in entry.parent.iterdir():
        if old != entry and stale.fullmatch(old.name):
            try:
                old.unlink()
            except OSError:
                pass


def _base_name(entry_name: str) -> str:
    """``demo.sqlite.123.456.npz`` → ``demo.sqlite``."""
    return entry_name.rsplit(".", 3)[0]


def _read(entry: Path, ident: dict) -> Export | None:
    fh = _open_entry(entry)
    if fh is None:
        return None
    with fh, np.load(fh, allow_pickle=False) as npz:
        doc_bytes = bytes(npz["__doc__"])
        arrays = {k: npz[k] for k in npz.files}
        check = arrays.get("__check__")
        if check is None or not np.array_equal(check, _checksum(doc_bytes, arrays)):
            return None  # truncated, corrupt or rewritten
        doc = json.loads(doc_bytes.decode())
        if doc.get("identity") != ident:
            return None
        fields = {name: _decode(desc, arrays) for name, desc in doc["fields"].items()}
        if "stream" in doc:
            s = doc["stream"]
            st = os.stat(s["path"])
            if [st.st_size, st.st_mtime_ns] != s["path_stat"]:
                return None
            src = Source(
                path=Path(s["path"]),
                api_cols=set(s["api_cols"]),
                gpu_tables=[(k, t, set(c)) for k, t, c in s["gpu_tables"]],
                api_count=s["api_count"],
                gpu_counts={int(k): v for k, v in s["gpu_counts"].items()} if s["api_count"] is not None else None,
            )
            if "projection" in doc:
                src.projection = _decode(doc["projection"], arrays)
            fields["api"], fields["gpu"] = LazyApiCalls(src), LazyGpuOps(src)
    export = Export(**fields)
    name_ranges(export.ranges, export.labels)
    return export


@dataclasses.dataclass(frozen=True)
class Entry:
    """Where an export's cache entry lives and what it must match (kept in ``Export.cache_entry``)."""

    path: Path
    identity: dict


def _ident(source: Path, cuda: bool, backend: str | None) -> dict:
    ident = _identity(source)
    ident["cuda"] = bool(cuda)
    ident["backend"] = backend or "auto"
    return ident


def lookup(path: str | os.PathLike[str], *, cuda: bool = True, backend: str | None = None) -> Export | None:
    """The cached export of ``path`` when a valid entry exists, else None (a miss: load and :func:`store` it)."""
    source = Path(path)
    try:
        ident = _ident(source, cuda, backend)
        entry = entry_path(source)
    except OSError:
        return None  # load() reports the problem with the file
    if not os.path.lexists(entry):
        return None
    try:
        got = _read(entry, ident)
    except Exception:  # noqa: BLE001 - whatever a damaged entry raises (BadZipFile, EOFError, ...), it is a miss
        got = None
    if got is None:
        _discard(entry)
        return None
    got.path = source
    got.cache_entry = Entry(entry, ident)
    _keep_projections(got)
    return got


def store(path: str | os.PathLike[str], export: Export, *, cuda: bool = True, backend: str | None = None) -> None:
    """Write the entry of ``path``; a cache that cannot be written is no reason to fail a report."""
    source = Path(path)
    try:
        ident = _ident(source, cuda, backend)
        entry = entry_path(source, create=True)
        _write(entry, ident, export)
        export.cache_entry = Entry(entry, ident)
        _keep_projections(export)
    except (OSError, _Uncacheable, ValueError, TypeError):
        pass


def _keep_projections(export: Export) -> None:
    """A streamed export with an entry: when the analysis stage hands its source the projection it
    computed (``Source.keep_projection``), the entry is rewritten to hold it (the next report of the
    file skips the pass over its CUDA tables)."""
    src = source_of(export)
    if src is not None:
        src.on_projection = functools.partial(store_projection, export)


def store_projection(export: Export) -> None:
    """A streamed export's projection was computed: rewrite its cache entry (if it has one) to hold it."""
    info = export.cache_entry
    if not isinstance(info, Entry) or source_of(export) is None:
        return
    try:
        _write(info.path, info.identity, export)
    except (OSError, _Uncacheable, ValueError, TypeError):
        pass
