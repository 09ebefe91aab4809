"""Malformed lists are refused before anything starts; errors name the file the user gave.

Every comma-separated list (``--sweep``, ``--trace``, ``--view``, ``--fail-on``) goes through one splitter
(:func:`nvtxsim.errors.comma_list`): an empty item is a typo, refused as one line (exit 2) before a
capture starts. An export that is compressed, or has a write-ahead log, is read from a private copy:
its errors still name the user's file, never the temporary one.
"""

from __future__ import annotations

import gzip
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvtxsim.cli.main import main
from nvtxsim.errors import NvtxsimError, comma_list

ROOT = Path(__file__).resolve().parents[1]
CLEAN = ROOT / "tests" / "data" / "gpu" / "findings_clean.sqlite.gz"


@pytest.mark.parametrize("text", ["1,,2", ",1,2", "1,2,", "1, ,2", ",", " , "])
def test_comma_list_refuses_empty_items(text):
    with pytest.raises(NvtxsimError, match="^--x: empty"):
        comma_list(text, "--x")


def test_comma_list_strips():
    assert comma_list(" a, b ,c", "--x") == ["a", "b", "c"]


@pytest.mark.parametrize(
    "argv",
    [
        ["profile", "--sweep", "n=1,,2", "-o", "OUT", "--", "python3", "-c", "print({n})"],
        ["profile", "--sweep", "n=1,2,", "-o", "OUT", "--", "python3", "-c", "print({n})"],
        ["profile", "--sweep", "n=,1,2", "-o", "OUT", "--", "python3", "-c", "print({n})"],
        ["profile", "--trace", "cuda,,nvtx", "-o", "OUT", "--", "python3", "-c", "pass"],
        ["profile", "--trace", "nvtx,", "-o", "OUT", "--", "python3", "-c", "pass"],
        ["report", str(CLEAN), "--view", "tree,,kernels"],
        ["report", str(CLEAN), "--fail-on", "sync,"],
        ["compare", str(CLEAN), str(CLEAN), "--fail-on", ",sync"],
    ],
)
def test_a_malformed_list_starts_nothing(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or (_ for _ in ()).throw(AssertionError))
    argv = [str(tmp_path / "OUT") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty item" in err, err
    assert not started and os.listdir(tmp_path) == []


def _corrupt(tmp_path: Path) -> dict[str, Path]:
    raw = gzip.decompress(CLEAN.read_bytes())
    bad = bytearray(raw)
    bad[5000:9000] = b"\0" * 4000
    out = {
        "half.sqlite.gz": gzip.compress(raw[: len(raw) // 2]),
        "half.sqlite.xz": lzma.compress(raw[: len(raw) // 2]),
        "damaged.sqlite.gz": gzip.compress(bytes(bad)),
        "text.sqlite.gz": gzip.compress(b"hello" * 1000),
        "header-only.sqlite.gz": gzip.compress(b"SQLite format 3\0" + b"\xff" * 5000),
    }
    paths = {}
    for name, data in out.items():
        (tmp_path / name).write_bytes(data)
        paths[name] = tmp_path / name
    return paths


@pytest.mark.parametrize("backend", ["memory", "streamed"])
def test_errors_name_the_users_file(tmp_path, backend):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    env.update(PYTHONPATH=str(ROOT), NVTXSIM_STREAM_ROWS="1" if backend == "streamed" else "1000000000")
    env.update(TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    for name in _corrupt(tmp_path):
        for args in (["report", name], ["report", name, "--view", "tree", "-f", "json"]):
            r = subprocess.run(
                [sys.executable, "-m", "nvtxsim", *args], capture_output=True, text=True, env=env, cwd=tmp_path
            )
            assert r.returncode == 2 and r.stderr.count("\n") == 1, (name, r.stderr)
            assert r.stderr.startswith(f"nvtxsim: error: {name}: "), r.stderr
            assert str(tmp_path / "tmp") not in r.stderr and "nvtxsim-" not in r.stderr
    assert os.listdir(tmp_path / "tmp") == []  # the private copies are gone
