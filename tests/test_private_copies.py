"""WAL-mode exports and ``.sqlite.gz`` inputs (issue 13): every row read or a clear refusal; the private copy
never outlives the process (exit, SIGINT, SIGTERM, SIGHUP); decompression has a size limit."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_corpus import real_export  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", *args], capture_output=True, text=True, env=e, timeout=120, **kw
    )


def instances(report: dict, name: str) -> int:
    return sum(p["instances"] for p in report["phases"] if p["name"] == name)


def wal_export(d: Path, extra: int = 5) -> Path:
    """A copy of a real export whose last ``extra`` 'iteration' ranges exist only in its -wal."""
    src = real_export(d / "src.sqlite")
    con = sqlite3.connect(src)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    row = con.execute(
        "SELECT start, end, eventType, globalTid, textId, domainId, text FROM NVTX_EVENTS "
        "WHERE eventType = 59 AND end IS NOT NULL ORDER BY start LIMIT 1"
    ).fetchone()
    for k in range(extra):
        con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId, text) VALUES (?,?,?,?,?,?,?)",
            (row[0] + k, row[1] + k, *row[2:]),
        )
    con.commit()
    dst = d / "run.sqlite"
    shutil.copyfile(src, dst)  # taken while the rows are only in the WAL
    shutil.copyfile(Path(str(src) + "-wal"), Path(str(dst) + "-wal"))
    con.close()
    return dst


def test_wal_rows_are_read(tmp_path):
    plain = real_export(tmp_path / "plain.sqlite")
    base = json.loads(cli("report", str(plain), "-f", "json").stdout)
    d = tmp_path / "w"
    d.mkdir()
    path = wal_export(d)
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    got = json.loads(cli("report", str(path), "-f", "json").stdout)
    phase = next(p["name"] for p in base["phases"] if p["instances"])
    # the 5 ranges that are only in the -wal are counted (the phase of the first closed range)
    assert sum(p["instances"] for p in got["phases"]) == sum(p["instances"] for p in base["phases"]) + 5, phase
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before  # export, -wal untouched; no -shm beside them


def test_wal_rows_with_the_cache(tmp_path, monkeypatch):
    d = tmp_path / "w"
    d.mkdir()
    path = wal_export(d)
    ref = json.loads(cli("report", str(path), "-f", "json").stdout)
    for _ in range(2):
        proc = cli("report", str(path), "-f", "json", env={"NVTXSIM_CACHE": "1"})
        assert json.loads(proc.stdout)["phases"] == ref["phases"]
    Path(str(path) + "-wal").unlink()  # the rows are gone: the cached entry must not be used
    proc = cli("report", str(path), "-f", "json", env={"NVTXSIM_CACHE": "1"})
    assert (
        sum(p["instances"] for p in json.loads(proc.stdout)["phases"]) == sum(p["instances"] for p in ref["phases"]) - 5
    )


def test_unreadable_wal_is_refused(tmp_path):
    """Rows that cannot be read are refused clearly, never silently left out."""
    from hostile_corpus import denied, drop_dac_command

    prefix = drop_dac_command()
    if prefix is None:
        pytest.skip("running as root without setpriv")
    d = tmp_path / "w"
    d.mkdir()
    path = wal_export(d)
    Path(str(path) + "-wal").chmod(0)
    if prefix and not denied(prefix, Path(str(path) + "-wal"), "rb"):  # the scene first, then the assertion
        pytest.skip("dropping capabilities did not make the -wal unreadable here")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "nvtxsim", "report", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and "WAL" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def gz_of(path: Path) -> Path:
    gz = Path(str(path) + ".gz")
    with open(path, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return gz


def test_gzip_size_limit_is_configurable_and_names_the_input(tmp_path):
    gz = gz_of(real_export(tmp_path / "run.sqlite"))
    proc = cli("report", str(gz), env={"NVTXSIM_GZ_LIMIT": "10K"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert str(gz) in proc.stderr and "NVTXSIM_GZ_LIMIT" in proc.stderr
    assert cli("report", str(gz), env={"NVTXSIM_GZ_LIMIT": "1G"}).returncode == 0
    bad = cli("report", str(gz), env={"NVTXSIM_GZ_LIMIT": "lots"})
    assert bad.returncode == 2 and "NVTXSIM_GZ_LIMIT" in bad.stderr and bad.stderr.count("\n") == 1


def test_gzip_bomb_is_refused_by_free_space(tmp_path):
    """Inflating past 90 % of the temporary folder's free space is refused (a small tmpfs when root can mount one)."""
    tmp = tmp_path / "small"
    tmp.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tmp)], capture_output=True).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here")
    try:
        bomb = tmp_path / "bomb.sqlite.gz"
        with gzip.open(bomb, "wb") as fh:
            fh.write(b"SQLite format 3\x00" + b"\x00" * (8 << 20))
        proc = cli("report", str(bomb), env={"TMPDIR": str(tmp)})
        assert proc.returncode == 2 and str(bomb) in proc.stderr and "free" in proc.stderr, proc.stderr
        assert list(tmp.iterdir()) == []
    finally:
        subprocess.run(["umount", str(tmp)], check=True)


def _sigint_default() -> None:
    """The child's SIGINT as a terminal gives it: a shell's background job (``cmd &``) starts with SIGINT ignored,
    which Python then keeps ignoring, and the signal would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_inflated_copy_is_removed_on_signals(tmp_path, sig):
    """A slow read of an inflated export is interrupted: the private copy is gone afterwards."""
    gz = gz_of(real_export(tmp_path / "run.sqlite"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = (
        "import sys, time\n"
        "import nvtxsim.export.reader as r\n"
        "real = r.connect\n"
        "def slow(path):\n"
        "    print('inflated', flush=True); time.sleep(60); return real(path)\n"
        "r.connect = slow\n"
        "from nvtxsim.cli.main import main\n"
        f"sys.exit(main(['report', {str(gz)!r}]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        preexec_fn=_sigint_default,  # a suite started in the background inherits SIGINT ignored (and so would this)
    )
    try:
        assert proc.stdout.readline().strip() == "inflated"
        assert any(tmp.rglob("run.sqlite"))
        proc.send_signal(sig)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert list(tmp.iterdir()) == [], "the inflated copy outlived the process"
