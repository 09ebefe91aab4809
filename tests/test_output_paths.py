"""``-o`` to paths that are not plain new files (issue 13): written correctly or one error line, exit 2.

Never exit 3 (an internal error), never a replaced device, link or file that was not asked for,
never a temporary file left behind.
"""

from __future__ import annotations

import errno
import os
import pty
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_corpus import drop_dac_command, real_export  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def run(*args: str, stdout=subprocess.PIPE, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nvtxsim", *args], stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    return real_export(tmp_path_factory.mktemp("out") / "in.sqlite")


def one_line_error(proc: subprocess.CompletedProcess, needle: str = "") -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2, (proc.returncode, err)
    assert err.startswith("nvtxsim: error: ") and err.count("\n") == 1, err
    assert needle in err, err


def no_temp_files(d: Path) -> None:
    assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("target", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1", "link"])
def test_own_stdout_as_a_pipe(export, tmp_path, target):
    if target == "link":
        target = str(tmp_path / "link")
        os.symlink("/dev/stdout", target)
    proc = run("report", str(export), "-f", "csv", "-o", target)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("domain,name,")
    assert Path("/dev/stdout").is_symlink()


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("target", ["/dev/stdout", "/proc/self/fd/1"])
def test_own_stdout_redirected_to_a_file(export, tmp_path, target, force):
    """stdout is a regular file: the report goes into it (no rename over /dev/stdout, no --force needed)."""
    out = tmp_path / "captured.txt"
    with open(out, "wb") as fh:
        fh.write(b"head\n")
        fh.flush()
        proc = run("report", str(export), "-f", "csv", "-o", target, *(["--force"] if force else []), stdout=fh)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("head\ndomain,name,")
    assert Path("/dev/stdout").is_symlink() and os.readlink("/dev/stdout") == "/proc/self/fd/1"


def test_symlink_to_a_fifo_is_written_into(export, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    proc = run("report", str(export), "-f", "csv", "-o", str(link))
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert got and got[0].startswith(b"domain,name,")
    assert link.is_symlink() and stat.S_ISFIFO(fifo.stat().st_mode)


def test_symlink_to_a_tty_is_written_into(export, tmp_path):
    master, slave = pty.openpty()
    try:
        link = tmp_path / "tty"
        link.symlink_to(os.ttyname(slave))
        chunks: list[bytes] = []

        def drain() -> None:
            while True:
                try:
                    b = os.read(master, 65536)
                except OSError:
                    return
                if not b:
                    return
                chunks.append(b)

        t = threading.Thread(target=drain, daemon=True)
        t.start()
        proc = run("report", str(export), "-f", "csv", "-o", str(link))
        assert proc.returncode == 0, proc.stderr
        assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode)
    finally:
        os.close(slave)
        os.close(master)
    assert b"domain,name," in b"".join(chunks)


def test_dev_full_is_one_line_and_stays_a_device(export):
    proc = run("report", str(export), "-f", "csv", "-o", "/dev/full")
    one_line_error(proc, "No space left")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_stdout_on_dev_full_is_one_line(export):
    with open("/dev/full", "wb") as full:
        for args in (["-f", "csv"], [], ["--view", "all"]):
            proc = run("report", str(export), *args, stdout=full)
            one_line_error(proc, "standard output")


def test_full_disk_leaves_nothing(export, tmp_path):
    """A real small tmpfs when it can be mounted (root), always a simulated ENOSPC in-process."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mnt)], capture_output=True).returncode
        == 0
    )
    try:
        if mounted:
            proc = run("report", str(export), "-f", "json", "--view", "all", "-o", str(mnt / "r.json"))
            one_line_error(proc, "No space left")
            assert list(mnt.iterdir()) == []
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=True)


def test_simulated_enospc_is_one_line(export, tmp_path, monkeypatch, capsys):
    from nvtxsim.cli import output
    from nvtxsim.cli.main import main

    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(output.os, "fdopen", lambda fd, *a, **k: Full(real_fdopen(fd, *a, **k)))
    rc = main(["report", str(export), "-f", "csv", "-o", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "No space left" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_name_at_the_length_limit(export, tmp_path):
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    name = "r" * (limit - 4) + ".csv"
    proc = run("report", str(export), "-f", "csv", "-o", str(tmp_path / name))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / name).read_text().startswith("domain,name,")
    no_temp_files(tmp_path)
    for too_long in ("r" * (limit + 1), "sub/" + "r" * (limit + 1)):
        one_line_error(run("report", str(export), "-o", str(tmp_path / too_long)), "too long")
    multibyte = "é" * (limit // 2)  # 2 bytes each: at the limit in bytes, not in characters
    proc = run("report", str(export), "-o", str(tmp_path / multibyte))
    assert proc.returncode == 0, proc.stderr
    no_temp_files(tmp_path)


def test_symlinks_are_followed_never_replaced(export, tmp_path):
    target = tmp_path / "target.csv"
    link = tmp_path / "link.csv"
    link.symlink_to(target.name)
    assert run("report", str(export), "-f", "csv", "-o", str(link)).returncode == 0  # dangling: creates the target
    assert link.is_symlink() and target.read_text().startswith("domain,name,")
    target.write_text("precious\n")
    one_line_error(run("report", str(export), "-f", "csv", "-o", str(link)), "already exists")
    assert target.read_text() == "precious\n"
    assert run("report", str(export), "-f", "json", "-o", str(link), "--force").returncode == 0
    assert link.is_symlink() and target.read_text().startswith("{")
    no_temp_files(tmp_path)


def test_special_files_are_never_replaced(export, tmp_path):
    sock_dir = tmp_path
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.bind(str(sock_dir / "sock"))
    try:
        proc = run("report", str(export), "-o", str(sock_dir / "sock"), "--force")
        assert proc.returncode == 2, proc.stderr
        assert stat.S_ISSOCK(os.lstat(sock_dir / "sock").st_mode)
    finally:
        s.close()


def test_read_only_directory(export, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=8k", "tmpfs", str(ro)], capture_output=True
        ).returncode
        == 0
    )
    try:
        if mounted:
            one_line_error(run("report", str(export), "-o", str(ro / "r.txt")), "not writable")
        prefix = drop_dac_command()
        if prefix is not None and not mounted:
            ro.chmod(0o555)
            proc = run("report", str(export), "-o", str(ro / "r.txt"), prefix=tuple(prefix))
            if proc.returncode != 0:
                one_line_error(proc, "not writable")
        assert list(ro.iterdir()) == []
    finally:
        if mounted:
            subprocess.run(["umount", str(ro)], check=True)
        ro.chmod(0o755)


@pytest.mark.parametrize("argv", [["doctor", "--quick"], ["doctor", "--quick", "--json"]])
def test_other_commands_on_a_full_stdout_are_one_line(argv):
    with open("/dev/full", "wb") as full:
        proc = run(*argv, stdout=full)
    one_line_error(proc, "standard output")


# --------------------------------------------------------------------------- adversarial round 3


def _commands(export: Path, tmp_path: Path) -> dict[str, list[str]]:
    """Every command with ``-o`` that reads an export or a file, as argv (without ``-o``)."""
    live = tmp_path / "live.jsonl"
    other, third = tmp_path / "other.sqlite", tmp_path / "third.sqlite"
    for copy in (other, third):
        copy.write_bytes(Path(export).read_bytes())
    live.write_text(
        '{"iterations":null,"measured":0,"sample":1,"pid":1,"time":1.0,"phases":{"nvtxsim:x":{"count":1,"cpu_ns":5,"cpu_mean_ns":5,"cpu_p90_ns":5,"gpu_ns":null}}}\n'
    )
    return {
        "report": ["report", str(export)],
        "compare": ["compare", str(export), str(export)],
        "scaling": ["scaling", "--param", "n", f"{export}=1", f"{other}=2", f"{third}=4"],
        "live": ["live", str(live)],
    }


@pytest.mark.parametrize("command", ["report", "compare", "scaling", "live"])
def test_dash_is_standard_output(export, tmp_path, command, monkeypatch):
    """``-o -`` is standard output (as for ``isaaclab nsys-json``), never a file named ``-``."""
    monkeypatch.chdir(tmp_path)
    argv = _commands(export, tmp_path)[command]
    proc = run(*argv, "-f", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(b"{"), proc.stdout[:200]
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("sidecar", ["", "-wal", "-journal", "-shm"])
@pytest.mark.parametrize("command", ["report", "compare", "scaling"])
def test_an_inputs_sqlite_files_are_never_written(export, tmp_path, command, sidecar):
    """Writing over an input's ``-wal``/``-journal``/``-shm`` (existing or not, named directly or
    through a symlink to the export) would corrupt or lose its rows, as writing the export itself."""
    d = tmp_path / "d"
    d.mkdir()
    src = d / "in.sqlite"
    src.write_bytes(export.read_bytes())
    link = tmp_path / "link.sqlite"
    link.symlink_to(src)
    before = sorted(p.name for p in d.iterdir())
    argv = _commands(link, tmp_path)[command]
    for target in (Path(f"{src}{sidecar}"), Path(f"{link}{sidecar}")):
        if sidecar and target.parent == tmp_path:
            continue  # SQLite keeps the sidecars beside the link's target, not beside the link
        proc = run(*argv, "-o", str(target), "--force")
        one_line_error(proc, "refusing to overwrite the input file")
    assert sorted(p.name for p in d.iterdir()) == before
    assert src.read_bytes() == export.read_bytes()


def test_force_keeps_the_replaced_files_mode(export, tmp_path):
    """``--force`` replaces the content, not the permissions (a read-only or private file stays so)."""
    for mode in (0o444, 0o600, 0o640):
        out = tmp_path / f"r{mode:o}.txt"
        out.write_text("old")
        out.chmod(mode)
        proc = run("report", str(export), "-o", str(out), "--force")
        assert proc.returncode == 0, proc.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode and out.read_text() != "old"
    new = tmp_path / "new.txt"
    proc = run("report", str(export), "-o", str(new))
    assert proc.returncode == 0 and stat.S_IMODE(new.stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
