"""Live timing never destroys a file and never drops a line.

Hostile settings of ``NVTXSIM_LIVE`` (a script, a link to one, a JSON file that is no live file, ``1``)
leave every byte of what was there; the workers of a run keep their lines whichever process writes
first or exits first; no variable of nvtxsim's shows in the program's environment or its children's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nvtxsim.emit.live import sinks

ROOT = Path(__file__).resolve().parents[1]
STALE = {"iterations": [0, 9], "measured": 10, "sample": 1, "pid": 1, "phases": {"nvtxsim:old": {"count": 1}}}

LOOP = textwrap.dedent(
    """
    import os, subprocess, sys, nvtxsim
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    worker = [sys.executable, "-c", "import nvtxsim\\nfor _ in range(3):\\n    nvtxsim.step()\\n    with nvtxsim.phase('worker'): pass"]
    if mode == "early":  # a worker that writes and exits before the parent's first step
        subprocess.run(worker, check=True)
    if mode == "early-env":  # the same, with an environment built from a copy (env=dict(os.environ, ...))
        subprocess.run(worker, check=True, env=dict(os.environ, EXTRA="1"))
    if mode == "env":
        print(sorted(k for k in os.environ if k.startswith("NVTXSIM_")))
        subprocess.run([sys.executable, "-c", "import os; print(sorted(k for k in os.environ if k.startswith('NVTXSIM_')))"])
    for i in range(4):
        nvtxsim.step()
        with nvtxsim.phase("iteration"):
            pass
    """
)


def _run(tmp_path: Path, *args: str, live: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    e = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    e.update(PYTHONPATH=str(ROOT), NVTXSIM_LIVE=live, NVTXSIM_LIVE_EVERY="100")
    cmd = [sys.executable, str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=cwd or tmp_path)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


FOREIGN = {
    "script": b"print('my training script')\n",
    "json-not-live": b'{"config": {"lr": 0.001}}\n',
    "json-list": b"[1, 2, 3]\n",
    "binary": bytes(range(256)) * 4,
    "no-newline-text": b"notes without a newline",
    "phases-not-a-dict": b'{"phases": [1, 2]}\n',
    "blank-line-first": b"\n" + json.dumps(STALE).encode() + b"\n",
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
@pytest.mark.parametrize("via_link", [False, True])
def test_a_file_that_is_no_live_file_is_never_touched(tmp_path, name, via_link):
    target = tmp_path / "train.py"
    target.write_bytes(FOREIGN[name])
    path = target
    if via_link:
        path = tmp_path / "live.jsonl"
        path.symlink_to(target)
    r = _run(tmp_path, live=str(path))
    assert r.returncode == 0, r.stderr  # the program runs on
    assert target.read_bytes() == FOREIGN[name]  # not emptied, not appended to
    assert r.stderr.count("\n") == 1 and "not a live-timing file" in r.stderr
    assert path.is_symlink() == via_link


def test_a_link_to_a_live_file_is_a_live_file(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_text(json.dumps(STALE) + "\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    assert _run(tmp_path, live=str(tmp_path / "link.jsonl")).returncode == 0
    recs = _records(target)
    assert recs and all(r["pid"] != 1 for r in recs)  # the earlier run's line replaced
    assert (tmp_path / "link.jsonl").is_symlink()


@pytest.mark.parametrize("flag", ["1", "true", "on", "YES"])
def test_a_true_flag_means_the_default_file(tmp_path, flag):
    r = _run(tmp_path, live=flag)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / flag).exists() and not (tmp_path / "1").exists()
    assert sum(rec["phases"]["nvtxsim:iteration"]["count"] for rec in _records(tmp_path / "live.jsonl")) == 4


@pytest.mark.parametrize("mode", ["early", "early-env"])
def test_workers_that_write_before_the_first_step_keep_their_lines(tmp_path, mode):
    out = tmp_path / "live.jsonl"
    out.write_text(json.dumps(STALE) + "\n")  # an earlier run's file: replaced, never kept
    r = _run(tmp_path, mode, live=str(out))
    assert r.returncode == 0, r.stderr
    recs = _records(out)
    phases = sorted(next(iter(rec["phases"])) for rec in recs)
    assert phases == ["nvtxsim:iteration", "nvtxsim:worker"] and all(rec["pid"] != 1 for rec in recs)
    assert sum(rec["phases"].get("nvtxsim:worker", {}).get("count", 0) for rec in recs) == 3


def test_no_variable_leaks_into_the_program_or_its_children(tmp_path):
    r = _run(tmp_path, "env", live=str(tmp_path / "live.jsonl"))
    assert r.returncode == 0, r.stderr
    parent, child = r.stdout.splitlines()[:2]
    assert parent == child == "['NVTXSIM_LIVE', 'NVTXSIM_LIVE_EVERY']"  # what the user set, nothing more


def test_two_runs_at_once_on_one_file_keep_both(tmp_path):
    """A second process that starts while the first writes appends: neither empties the other's lines."""
    out = tmp_path / "live.jsonl"
    f = sinks.open_append(str(out), truncate=True)  # a run holding the file
    sinks.write_line(f, json.dumps(STALE) + "\n")
    try:
        assert _run(tmp_path, live=str(out)).returncode == 0
    finally:
        f.close()
    pids = [rec["pid"] for rec in _records(out)]
    assert pids[0] == 1 and len(pids) == 2
    # once nobody writes it, the next run replaces it
    assert _run(tmp_path, live=str(out)).returncode == 0 and len(_records(out)) == 1


@pytest.mark.parametrize("truncate", [True, False])
def test_open_append_refuses_foreign_files_in_both_modes(tmp_path, truncate):
    p = tmp_path / "notes.txt"
    p.write_text("keep me\n")
    with pytest.raises(OSError, match="not a live-timing file"):
        sinks.open_append(str(p), truncate=truncate)
    assert p.read_text() == "keep me\n"
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    sinks.open_append(str(empty), truncate=truncate).close()  # empty: a live file to be


def test_nvtxsim_commands_never_claim_the_file(tmp_path):
    """``NVTXSIM_LIVE`` left exported while the user reads the file: ``nvtxsim live`` must not empty it."""
    out = tmp_path / "live.jsonl"
    out.write_text(json.dumps(STALE) + "\n")
    e = {k: v for k, v in os.environ.items() if not k.startswith("NVTXSIM_")}
    e.update(PYTHONPATH=str(ROOT), NVTXSIM_LIVE=str(out))
    for pre in ([], ["-X", "dev"], ["-Wignore"]):
        cmd = [sys.executable, *pre, "-m", "nvtxsim", "live", str(out), "-f", "json"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert _records(out) == [STALE]
