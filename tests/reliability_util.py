"""Helpers for the reliability tests: capture a program under real nsys, check range balance and nesting."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import numpy as np
from nsys_util import NSYS, REPO, SAFE_FLAGS

from nvtxsim.export.reader import Export, load


def capture(
    tmp: Path, source: str, *, name: str = "run", extra: tuple[str, ...] = (), timeout: float = 240, **kw
) -> tuple[Path, str]:
    """Run ``source`` under ``nsys profile``; returns the export and the program's output.

    Two nsys 2022.4 failures that are not the program's are retried once: a session that fails
    to start ("ClientProxy ... RuntimeException", no export), and the rare hang of a finished
    program inside nsys's own exit handler (``__cxa_finalize`` of libToolsInjection64.so; seen
    with multiprocessing programs, see docs/reliability.md). A failure of the program is not retried.
    """
    assert NSYS is not None
    log = tmp / f"{name}.log"
    problems = []
    for attempt in range(2):
        try:
            path = _profile(tmp, source, name=name, extra=extra, timeout=timeout, log=log, **kw)
        except subprocess.TimeoutExpired:
            problems.append(
                f"attempt {attempt + 1}: timed out after {timeout} s:\n{log.read_text(errors='replace')[-1500:]}"
            )
            continue
        if path.exists():
            return path, log.read_text(errors="replace")
        problems.append(f"attempt {attempt + 1}: no export:\n{log.read_text(errors='replace')[-1500:]}")
    raise AssertionError("nsys failed twice:\n" + "\n".join(problems))


def _profile(
    tmp: Path,
    source: str,
    *,
    name: str,
    extra: tuple[str, ...],
    timeout: float,
    log: Path,
    args: tuple[str, ...] = (),
    env: dict | None = None,
) -> Path:
    import os
    import textwrap

    prog = tmp / f"{name}.py"
    prog.write_text(textwrap.dedent(source))
    out = tmp / name
    cmd = [
        NSYS,
        "profile",
        "-t",
        "nvtx,osrt",
        *SAFE_FLAGS,
        *extra,
        "--export=sqlite",
        "--force-overwrite=true",
        "-o",
        str(out),
        sys.executable,
        str(prog),
        *args,
    ]
    full_env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    sqlite = out.with_suffix(".sqlite")
    if sqlite.exists():
        sqlite.unlink()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=tmp, env=full_env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise
    return sqlite


def _kill_group(proc: subprocess.Popen) -> None:
    """End nsys and everything it launched (its own session), so no profiled process lingers."""
    import os
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def program_lines(log: str, prefix: str) -> list[str]:
    """Lines the profiled program printed that start with ``prefix`` (nsys adds its own lines)."""
    return [line[len(prefix) :].strip() for line in log.splitlines() if line.startswith(prefix)]


def nesting_violations(ex: Export, sel: np.ndarray | None = None) -> list[str]:
    """Push/pop ranges that overlap partially on one thread (proper nesting means none)."""
    r = ex.ranges
    idx = np.flatnonzero(r.style == 0) if sel is None else sel
    bad = []
    for tid in np.unique(r.global_tid[idx]):
        s = idx[r.global_tid[idx] == tid]
        order = s[np.lexsort((-r.end[s], r.start[s]))]
        stack: list[int] = []
        for i in order:
            while stack and r.end[stack[-1]] <= r.start[i]:
                stack.pop()
            if stack and r.end[i] > r.end[stack[-1]]:
                bad.append(
                    f"{r.name[i]}@{r.start[i]}-{r.end[i]} crosses {r.name[stack[-1]]}@{r.start[stack[-1]]}-{r.end[stack[-1]]}"
                )
            stack.append(i)
    return bad


def assert_balanced(ex: Export) -> collections.Counter:
    """Every range that started also ended, on its thread, properly nested; returns counts per name."""
    r = ex.ranges
    pp = r.style == 0
    assert not r.unclosed.any(), f"unclosed: {collections.Counter(r.name[r.unclosed].tolist())}"
    assert not r.cross_thread[pp].any()
    bad = nesting_violations(ex)
    assert not bad, bad[:5]
    return collections.Counter(r.name.tolist())


def threads_of(ex: Export, name: str) -> int:
    r = ex.ranges
    return len(np.unique(r.global_tid[r.name == name]))


def pids_of(ex: Export, name: str) -> set[int]:
    r = ex.ranges
    return {int(t >> 24) & 0xFFFFFF for t in r.global_tid[r.name == name]}


def report_cli(*argv: str) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", *argv], capture_output=True, text=True, timeout=300, env=env
    )


__all__ = [
    "capture",
    "program_lines",
    "assert_balanced",
    "nesting_violations",
    "threads_of",
    "pids_of",
    "report_cli",
    "load",
]
