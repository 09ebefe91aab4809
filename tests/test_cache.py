"""The parsed-columns cache: same numbers as without it, invalidated when the export changes, never touches the export."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from committed import committed_glob
from synth import make_export

import nvtxsim.analysis.stream as stream
import nvtxsim.export.streamed as streamed
from nvtxsim.analysis.projection import summarize
from nvtxsim.export import cache
from nvtxsim.export.reader import load

GPU_DATA = Path(__file__).resolve().parent / "data" / "gpu"


def _report(path, **kw):
    return summarize(load(path, **kw), domain=None).as_dict()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "run.sqlite"
    make_export(path, 21, graphs="node", syncs=True, extras=True)
    return path


def test_cached_report_equals_uncached_and_export_is_untouched(export):
    before = _digest(export)
    ref = _report(export, cache=False)
    assert _report(export, cache=True) == ref  # miss: built and written
    entry = cache.entry_path(export)
    assert entry.exists() and entry.parent.name == ".nvtxsim-cache"
    assert _report(export, cache=True) == ref  # hit
    assert _digest(export) == before
    ex = load(export, cache=True)
    ex2 = load(export, cache=False)
    assert ex.labels == ex2.labels and ex.strings == ex2.strings and ex.meta == ex2.meta and ex.tables == ex2.tables
    for name in ("start", "end", "global_tid", "correlation_id", "name_id"):
        assert np.array_equal(getattr(ex.api, name), getattr(ex2.api, name))
    assert np.array_equal(ex.ranges.name, ex2.ranges.name)
    assert ex.extras == ex2.extras or repr(ex.extras) == repr(ex2.extras)


def test_hit_does_not_read_the_export(export, monkeypatch):
    load(export, cache=True)
    import nvtxsim.export.reader as reader_mod

    def boom(*a, **k):
        raise AssertionError("the export was read despite a valid cache entry")

    monkeypatch.setattr(reader_mod, "connect", boom)
    assert _report(export, cache=True)["phases"]


def test_changed_export_invalidates_the_entry(export):
    load(export, cache=True)
    old = cache.entry_path(export)
    con = sqlite3.connect(export)
    con.execute("UPDATE NVTX_EVENTS SET end = end + 1000 WHERE eventType = 59 AND end IS NOT NULL")
    con.commit()
    con.close()
    st = os.stat(export)
    os.utime(export, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a new mtime, as any rewrite gives
    assert _report(export, cache=True) == _report(export, cache=False)
    new = cache.entry_path(export)
    assert new != old and new.exists() and not old.exists(), "the stale entry is removed"


def test_same_size_and_mtime_but_new_content_is_a_miss(export):
    load(export, cache=True)
    st = os.stat(export)
    con = sqlite3.connect(export)
    con.execute("UPDATE NVTX_EVENTS SET end = end + 7 WHERE eventType = 59 AND end IS NOT NULL")
    con.commit()
    con.close()
    os.utime(export, ns=(st.st_atime_ns, st.st_mtime_ns))  # forged: same mtime (size unchanged too)
    assert os.stat(export).st_size == st.st_size
    assert _report(export, cache=True) == _report(export, cache=False)


def test_corrupt_entry_is_rebuilt(export):
    load(export, cache=True)
    entry = cache.entry_path(export)
    entry.write_bytes(b"not a zip file")
    assert _report(export, cache=True) == _report(export, cache=False)
    assert np.load(entry, allow_pickle=False)["__doc__"].size


def test_unwritable_folder_uses_xdg_cache_home(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "run.sqlite"
    make_export(path, 22)
    (folder / ".nvtxsim-cache").write_text("a file where the cache folder would go")
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert _report(path, cache=True) == _report(path, cache=False)
    entries = list((xdg / "nvtxsim").glob("*-run.sqlite.*.npz"))
    assert len(entries) == 1
    assert _report(path, cache=True) == _report(path, cache=False)


def test_environment_switch(export, monkeypatch):
    monkeypatch.setenv("NVTXSIM_CACHE", "1")
    load(export)
    assert (export.parent / ".nvtxsim-cache").is_dir()
    shutil.rmtree(export.parent / ".nvtxsim-cache")
    load(export, cache=False)  # --no-cache wins over the environment
    assert not (export.parent / ".nvtxsim-cache").exists()
    monkeypatch.setenv("NVTXSIM_CACHE", "0")
    load(export)
    assert not (export.parent / ".nvtxsim-cache").exists()


def test_streamed_export_caches_its_projection(tmp_path, monkeypatch):
    from test_scale_stream import sort_by_start

    path = tmp_path / "big.sqlite"
    make_export(path, 23, processes=2, calls_per_thread=150)
    sort_by_start(path)
    monkeypatch.setenv("NVTXSIM_STREAM_ROWS", "0")
    ref = _report(path, cache=False)
    assert _report(path, cache=True) == ref  # streams, then stores the projection
    monkeypatch.setattr(stream._Projector, "run", lambda self: (_ for _ in ()).throw(AssertionError("streamed again")))
    ex = load(path, cache=True)
    assert isinstance(ex.api, streamed.LazyApiCalls)
    assert summarize(ex, domain=None).as_dict() == ref


def test_gzipped_export_is_cached_without_inflating(tmp_path, monkeypatch):
    gz = committed_glob(GPU_DATA, "*.sqlite.gz")
    src = tmp_path / gz[0].name
    shutil.copy(gz[0], src)
    ref = _report(src, cache=False)
    assert _report(src, cache=True) == ref
    import gzip

    monkeypatch.setattr(gzip, "open", lambda *a, **k: (_ for _ in ()).throw(AssertionError("inflated again")))
    assert _report(src, cache=True) == ref


# --------------------------------------------------------------------------- damaged entries (issue 13)


def _damage_truncate(entry: Path) -> None:
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])


def _damage_flip_array_byte(entry: Path) -> None:
    """A valid zip whose arrays changed (same names, shapes and dtypes): numbers would be wrong."""
    with np.load(entry, allow_pickle=False) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    key = next(k for k, a in arrays.items() if not k.startswith("__") and a.dtype.kind in "iu" and a.size)
    arrays[key].reshape(-1)[0] += 12345
    with open(entry, "wb") as fh:
        np.savez(fh, **arrays)


def _damage_rewrite_doc(entry: Path) -> None:
    """A description edited (a number changed in the JSON), checksum left as it was."""
    with np.load(entry, allow_pickle=False) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    doc = bytes(arrays["__doc__"]).decode().replace('"v": 0', '"v": 1', 1).replace('"v": 1', '"v": 2', 1)
    arrays["__doc__"] = np.frombuffer(doc.encode(), dtype=np.uint8)
    with open(entry, "wb") as fh:
        np.savez(fh, **arrays)


def _damage_other_export(entry: Path) -> None:
    """The entry of another export put in its place (checksums valid, identity not)."""
    other = entry.parent.parent / "other.sqlite"
    make_export(other, 99)
    load(other, cache=True)
    shutil.copy(cache.entry_path(other), entry)


def _damage_empty(entry: Path) -> None:
    entry.write_bytes(b"")


def _damage_symlink(entry: Path) -> None:
    target = entry.parent / "elsewhere.npz"
    shutil.copy(entry, target)
    entry.unlink()
    entry.symlink_to(target)


def _damage_fifo(entry: Path) -> None:
    entry.unlink()
    os.mkfifo(entry)


def _damage_directory(entry: Path) -> None:
    entry.unlink()
    entry.mkdir()


def _damage_dev_zero(entry: Path) -> None:
    entry.unlink()
    entry.symlink_to("/dev/zero")


def _damage_unreadable_garbage(entry: Path) -> None:
    entry.write_bytes(os.urandom(4096))


DAMAGE = [
    _damage_truncate,
    _damage_flip_array_byte,
    _damage_rewrite_doc,
    _damage_other_export,
    _damage_empty,
    _damage_symlink,
    _damage_fifo,
    _damage_directory,
    _damage_dev_zero,
    _damage_unreadable_garbage,
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__[len("_damage_") :] for d in DAMAGE])
def test_damaged_entry_is_a_miss_and_rebuilt(export, damage):
    ref = _report(export, cache=False)
    load(export, cache=True)
    entry = cache.entry_path(export)
    damage(entry)
    assert _report(export, cache=True) == ref  # a miss: never a crash, a hang or wrong numbers
    if not entry.is_dir():
        assert entry.is_file() and not entry.is_symlink(), "the damaged entry was replaced by a good one"
        assert _report(export, cache=True) == ref
    assert (entry.parent / "elsewhere.npz").exists() or damage is not _damage_symlink  # a link's target is left alone


def test_identity_sees_the_header_and_the_last_pages(tmp_path):
    """Same size and mtime: a change in the header or the last 4 KiB is a different export."""
    f = tmp_path / "x.sqlite"
    data = bytearray(os.urandom(64 * 1024))
    f.write_bytes(bytes(data))
    st = os.stat(f)
    ident = cache._identity(f)
    for pos in (50, len(data) - 10):
        changed = bytearray(data)
        changed[pos] ^= 0xFF
        f.write_bytes(bytes(changed))
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert cache._identity(f) != ident, pos
