"""Capture stage: find Nsight Systems, build the ``nsys profile`` command, run it, export SQLite.

Why this exists: the right flags are easy to get wrong. Sampling and CPU context
switches hang old nsys on machines without a GPU and are not needed for phase
tables; CUDA graphs need ``--cuda-graph-trace=node`` for their kernels to reach
the export; a capture window needs an NVTX capture range on a *registered*
string; and a forgotten ``--export=sqlite`` leaves nothing to report on.

Everything nsys-specific lives here; ``nvtxsim profile`` (commands/profile.py) and
``nvtxsim doctor`` (commands/doctor.py) only call it.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from nvtxsim.capture.sidecars import fresh_stacks_file, stacks_file
from nvtxsim.errors import NvtxsimError, comma_list
from nvtxsim.phases import (
    ENV_API,
    ENV_ITERATIONS,
    ENV_LIVE_TRIGGER,
    ENV_LIVE_TRIGGER_ITERATIONS,
    ENV_STACKS,
    WINDOW_DOMAIN,
    WINDOW_RANGE,
    Window,
)

#: Install folders searched after ``$NSYS`` and ``PATH`` (newest version first within each pattern).
INSTALL_GLOBS: tuple[str, ...] = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "/usr/local/cuda/bin/nsys",
    "/usr/local/cuda-*/bin/nsys",
    "/usr/lib/nsight-systems/bin/nsys",
    # Nsight Compute carries an Nsight Systems of its own (e.g. on GPU hosts without nsys on PATH).
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
)

DEFAULT_TRACE: tuple[str, ...] = ("cuda", "nvtx", "osrt")
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
OUTPUT_SUFFIXES = REPORT_SUFFIXES + (".sqlite",)

# Short nsys switches -> long names, so a user's --nsys-arg can replace one of ours.
_SHORT = {
    "-t": "--trace",
    "-s": "--sample",
    "-c": "--capture-range",
    "-p": "--nvtx-capture",
    "-o": "--output",
    "-f": "--force-overwrite",
    "-b": "--backtrace",
    "-e": "--env-var",
    "-d": "--duration",
    "-y": "--delay",
    "-x": "--stop-on-exit",
    "-w": "--show-output",
    "-n": "--inherit-environment",
}
# Switches nvtxsim must own: the output name decides where the report is found.
_RESERVED = {"--output": "use nvtxsim profile -o NAME", "--force-overwrite": "use nvtxsim profile --force"}

_VERSION_RE = re.compile(r"(\d{4}\.\d+(?:\.\d+)*)")
_GPU_DRIVER_FILE = "/proc/driver/nvidia/version"


# --------------------------------------------------------------------------- discovery


@dataclass
class Nsys:
    """One Nsight Systems executable and what it can do."""

    path: Path
    version_text: str  # e.g. "2022.4.2.1"
    source: str  # "$NSYS", "PATH" or "install folder"
    _switches: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    @property
    def version(self) -> tuple[int, ...]:
        return parse_version(self.version_text)

    def switches(self, subcommand: str = "profile") -> frozenset[str]:
        """Long switches ``nsys SUBCOMMAND --help`` lists (cached; empty when help fails)."""
        if subcommand not in self._switches:
            try:
                out = run_bounded([str(self.path), subcommand, "--help"], QUERY_TIMEOUT)
                text = out.stdout + out.stderr
            except (OSError, subprocess.SubprocessError):
                text = ""
            self._switches[subcommand] = frozenset(re.findall(r"--([a-z][a-z0-9-]*[a-z0-9])", text))
        return self._switches[subcommand]

    def supports(self, switch: str, subcommand: str = "profile") -> bool:
        """True when ``--switch`` is listed (or help could not be read: then assume yes)."""
        known = self.switches(subcommand)
        return not known or switch.lstrip("-") in known


def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"0.2.12"`` → ``(0, 2, 12)``; stops at the first part without digits (``"13.0rc1"`` → ``(13, 0)``)."""
    out = []
    for part in (text or "").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def parse_version(text: str) -> tuple[int, ...]:
    """The nsys version in ``nsys --version`` output (``... 2022.4.2.1-...`` → ``(2022, 4, 2, 1)``)."""
    m = _VERSION_RE.search(text or "")
    return version_tuple(m.group(1)) if m else ()


#: Seconds a quick nsys query (``--version``, ``--help``) may take before it is given up (and ended).
QUERY_TIMEOUT = 60.0


def nsys_version(path: str | Path, timeout: float | None = None) -> str | None:
    """Version of an nsys executable (``2022.4.2.1``), or None when it does not run."""
    try:
        out = run_bounded([str(path), "--version"], QUERY_TIMEOUT if timeout is None else timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION_RE.search(out.stdout + out.stderr)
    return m.group(1) if (m and out.returncode == 0) else None


def _version_key(path: str) -> tuple:
    """Sort key: version-looking folder names compare numerically (2025.3 > 2024.10 > 2024.6)."""
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[^0-9]+", path) if p)


def nsys_candidates(env: Mapping[str, str] | None = None) -> list[tuple[Path, str]]:
    """Every nsys that could be used, in order of preference: ``$NSYS``, ``PATH``, install folders."""
    env = os.environ if env is None else env
    found: list[tuple[Path, str]] = []
    seen: set[str] = set()

    def add(p: str | Path, source: str) -> None:
        try:
            key = os.path.realpath(p)
        except OSError:
            key = str(p)
        if key not in seen:
            seen.add(key)
            found.append((Path(p), source))

    explicit = env.get("NSYS", "").strip()
    if explicit:
        add(explicit, "$NSYS")
    on_path = shutil.which("nsys", path=env.get("PATH", os.defpath))
    if on_path:
        add(on_path, "PATH")
    for pattern in INSTALL_GLOBS:
        for p in sorted(glob.glob(pattern), key=_version_key, reverse=True):
            if os.path.isfile(p) and os.access(p, os.X_OK):
                add(p, "install folder")
    return found


def list_nsys(env: Mapping[str, str] | None = None) -> list[Nsys]:
    """All candidates that run and report a version (for ``nvtxsim doctor``)."""
    out = []
    for path, source in nsys_candidates(env):
        version = nsys_version(path)
        if version:
            out.append(Nsys(path, version, source))
    return out


def find_nsys(env: Mapping[str, str] | None = None) -> Nsys:
    """The nsys to use: ``$NSYS`` if set, else the first on ``PATH``, else the newest install folder."""
    env = os.environ if env is None else env
    explicit = env.get("NSYS", "").strip()
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise NvtxsimError(f"NSYS={explicit} is not an executable file; point NSYS at an nsys binary or unset it")
        version = nsys_version(explicit)
        if not version:
            raise NvtxsimError(f"NSYS={explicit} does not run `nsys --version`; point NSYS at a working nsys")
        return Nsys(Path(explicit), version, "$NSYS")
    tried = []
    for path, source in nsys_candidates(env):
        version = nsys_version(path)
        if version:
            return Nsys(path, version, source)
        tried.append(str(path))
    where = f" ({', '.join(tried)} did not run)" if tried else ""
    raise NvtxsimError(
        "nsys (Nsight Systems) not found on PATH, in $NSYS or in /opt/nvidia"
        f"{where}; install Nsight Systems or set NSYS=/path/to/nsys"
    )


# --------------------------------------------------------------------------- the command


@dataclass
class ProfileRequest:
    """What the user asked ``nvtxsim profile`` for."""

    command: Sequence[str]
    output: Path  # report name without extension
    trace: Sequence[str] = DEFAULT_TRACE
    window: Window | None = None
    window_api: str = "nvtx"  # "nvtx": NVTX capture range; "cuda": cudaProfilerStart/Stop
    force: bool = False
    nsys_args: Sequence[str] = ()
    memory: bool = False  # record GPU allocations and frees (--cuda-memory-usage=true)
    trigger: str | None = None  # live-timing rule (``sim_step>1.5x``) that opens the window instead of --iterations
    trigger_iterations: int = 10
    stacks: bool = False  # sample the Python stacks per phase into the sidecar (stacks_file) beside the export

    @property
    def windowed(self) -> bool:
        """nsys waits for a capture window (fixed or triggered) instead of recording everything."""
        return self.window is not None or self.trigger is not None


def has_gpu() -> bool:
    """An NVIDIA driver is loaded (the kernel module publishes its version)."""
    return os.path.exists(_GPU_DRIVER_FILE)


def parse_trace(text: str) -> tuple[str, ...]:
    if not str(text).replace(",", "").strip():
        raise NvtxsimError("--trace: give a comma-separated list, e.g. cuda,nvtx,osrt")
    items = tuple(comma_list(text, "--trace"))
    if "none" in items:
        raise NvtxsimError("--trace none records nothing nvtxsim can report on; use e.g. nvtx,osrt")
    if "nvtx" not in items:
        raise NvtxsimError(f"--trace {text}: nvtxsim needs nvtx in the list (e.g. {','.join(items)},nvtx)")
    return items


def output_stem(name: str | Path) -> Path:
    """``run``, ``run.nsys-rep`` and ``run.sqlite`` all name the report pair ``run.*``."""
    p = Path(name)
    if "%" in str(p):
        raise NvtxsimError(f"-o {name}: nsys % patterns are not supported here; give a plain file name")
    if p.suffix in OUTPUT_SUFFIXES:
        p = p.with_suffix("")
    if not p.name or str(name).endswith(os.sep):
        raise NvtxsimError(f"-o {name}: give a file name, e.g. -o runs/train")
    return p


def outputs_of(stem: Path) -> dict[str, Path]:
    return {"report": stem.with_name(stem.name + ".nsys-rep"), "sqlite": stem.with_name(stem.name + ".sqlite")}


def check_outputs(stem: Path, *, force: bool) -> None:
    """Refuse before running anything when the report pair exists (unless ``force``) or cannot be
    written; a missing folder is fine (``run_profile`` makes it: nsys would write elsewhere)."""
    parent = stem.parent if str(stem.parent) else Path(".")
    existing = next((p for p in (parent, *parent.parents) if p.exists() or p.is_symlink()), Path("."))
    if not existing.is_dir():
        raise NvtxsimError(f"{existing}: not a directory (for -o {stem})")
    if not os.access(existing, os.W_OK):
        raise NvtxsimError(f"{existing}: directory is not writable")
    for path in outputs_of(stem).values():
        if path.is_dir():
            raise NvtxsimError(f"{path}: is a directory")
        if path.exists() and not force:
            raise NvtxsimError(f"{path}: already exists (use --force to overwrite, or -o another name)")


def default_output(directory: str | Path = ".") -> Path:
    """First free ``nvtxsim-N`` in ``directory`` (neither ``.nsys-rep`` nor ``.sqlite`` taken)."""
    d = Path(directory)
    n = 1
    while any(p.exists() for p in outputs_of(d / f"nvtxsim-{n}").values()):
        n += 1
    return d / f"nvtxsim-{n}"


def _switch_key(arg: str) -> str | None:
    if not arg.startswith("-") or arg == "-":
        return None
    key = arg.split("=", 1)[0]
    if not key.startswith("--"):
        key = _SHORT.get(key[:2], key[:2])
    return key


def _check_nsys_args(args: Sequence[str]) -> set[str]:
    keys = set()
    for a in args:
        key = _switch_key(a)
        if key in _RESERVED:
            raise NvtxsimError(f"--nsys-arg {a}: {_RESERVED[key]}")
        if key:
            keys.add(key)
    return keys


def build_profile_command(nsys: Nsys, req: ProfileRequest) -> list[str]:
    """The full ``nsys profile ... COMMAND`` argv (the user's command is appended untouched)."""
    if not req.command:
        raise NvtxsimError("no command to profile: nvtxsim profile [options] -- python train.py ...")
    trace = tuple(req.trace)
    user = _check_nsys_args(req.nsys_args)
    ours: list[tuple[str, str]] = [("--trace", ",".join(trace))]
    # CPU sampling and context switches: they hang old nsys on GPU-less machines, need a low
    # perf_event_paranoid, and the phase tables do not use them. --nsys-arg turns them back on.
    ours += [("--sample", "none"), ("--cpuctxsw", "none")]
    if "cuda" in trace and nsys.supports("cuda-graph-trace"):
        ours.append(("--cuda-graph-trace", "node"))  # graph kernels get rows (graph mode has no table)
    if req.memory:
        if "cuda" not in trace:
            raise NvtxsimError("--memory needs cuda in --trace (GPU allocations are traced with the CUDA calls)")
        ours.append(("--cuda-memory-usage", "true"))
    if req.windowed:
        if req.window_api == "cuda":
            if "cuda" not in trace:
                raise NvtxsimError("--window cuda needs cuda in --trace (cudaProfilerStart is a CUDA call)")
            ours.append(("--capture-range", "cudaProfilerApi"))
        else:
            ours.append(("--capture-range", "nvtx"))
            ours.append(("--nvtx-capture", f"{WINDOW_RANGE}@{WINDOW_DOMAIN}"))
        if nsys.supports("capture-range-end"):
            # stop: end the collection but let the program run on (the default, stop-shutdown,
            # would kill it and lose its exit code).
            ours.append(("--capture-range-end", "stop"))
    ours.append(("--export", "sqlite"))
    argv = [str(nsys.path), "profile"]
    argv += [f"{k}={v}" for k, v in ours if k not in user]
    argv.append(f"--output={req.output}")
    if req.force:
        argv.append("--force-overwrite=true")
    argv += list(req.nsys_args)
    argv += list(req.command)
    return argv


def profile_env(req: ProfileRequest, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for nsys (and so for the program): tells ``nvtxsim.step()`` the window."""
    env = dict(os.environ if base is None else base)
    if req.window is not None:
        env[ENV_ITERATIONS] = str(req.window)
    else:
        env.pop(ENV_ITERATIONS, None)
    if req.windowed:
        env[ENV_API] = req.window_api
    else:
        env.pop(ENV_API, None)
    if req.trigger is not None:
        env[ENV_LIVE_TRIGGER] = req.trigger
        env[ENV_LIVE_TRIGGER_ITERATIONS] = str(req.trigger_iterations)
    if req.stacks:
        env[ENV_STACKS] = str(stacks_file(req.output).absolute())  # the program may chdir
    return env


# --------------------------------------------------------------------------- running


@dataclass
class CaptureResult:
    """What ``nsys profile`` left behind, and the program's exit code."""

    returncode: int
    report: Path | None
    sqlite: Path | None
    problem: str | None = None  # why there is no report/sqlite, for the user


def _wait(proc: subprocess.Popen[bytes], timeout: float | None = None) -> int:
    """Wait for nsys; a first Ctrl-C reaches nsys too (same process group), so let it finish the report."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        end_process_tree(proc)
        raise NvtxsimError(f"nsys did not finish within {timeout:.0f} s and was stopped") from None
    except KeyboardInterrupt:
        sys.stderr.write("nvtxsim: interrupted; waiting for nsys to write the report (Ctrl-C again to abort)\n")
        try:
            return proc.wait()
        except KeyboardInterrupt:
            end_process_tree(proc, grace=1.0)
            raise


# --------------------------------------------------------------------------- child processes we give up on


def _descendants(pid: int) -> list[int]:
    """Processes below ``pid`` (children, grandchildren ...), from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def end_process_tree(proc: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """End a child we give up on, and everything it started (nsys starts the program and helpers):
    SIGTERM, ``grace`` seconds, then SIGKILL for what is left. Never leaves a zombie."""
    import signal
    import time

    if proc.poll() is not None:
        return
    tree = [proc.pid, *_descendants(proc.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in tree:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline and (proc.poll() is None or any(_alive(p) for p in tree[1:])):
            time.sleep(0.05)
        if proc.poll() is not None and not any(_alive(p) for p in tree[1:]):
            break
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass


def _alive(pid: int) -> bool:
    """Running (a zombie that only waits for its parent to reap it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def run_bounded(argv: Sequence[str], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True)`` that, when ``timeout`` passes (or we are
    interrupted), ends the child and all it started before raising - never a process left behind."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        end_process_tree(proc, grace=1.0)
        try:  # collect what was written; a process that escaped the tree may hold the pipes: do not wait for it
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def exit_status(returncode: int) -> int:
    """Shell convention: a process killed by signal N exits 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def run_profile(
    nsys: Nsys,
    req: ProfileRequest,
    *,
    env: Mapping[str, str] | None = None,
    log: IO[Any] | None = None,
    timeout: float | None = None,
) -> CaptureResult:
    """Run the program under nsys; export SQLite; the program's exit code comes back unchanged.

    ``env`` replaces ``os.environ`` as the base environment; ``log`` (a file) receives nsys's and
    the program's output instead of the terminal; ``timeout`` stops a run that hangs.
    """
    check_outputs(req.output, force=req.force)
    if req.stacks:
        fresh_stacks_file(stacks_file(req.output), force=req.force)
    try:  # nsys 2022.4 writes into /tmp, saying so among its progress lines, when the folder is missing
        req.output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NvtxsimError(f"{req.output.parent}: cannot make the folder: {exc.strerror or exc}") from None
    outs = outputs_of(req.output)
    before = {k: _mtime(p) for k, p in outs.items()}
    argv = build_profile_command(nsys, req)
    streams: dict[str, Any] = {} if log is None else {"stdout": log, "stderr": subprocess.STDOUT}
    try:
        proc = subprocess.Popen(argv, env=profile_env(req, env), **streams)
    except OSError as exc:
        raise NvtxsimError(f"could not start {nsys.path}: {exc.strerror or exc}") from None
    rc = exit_status(_wait(proc, timeout))
    report = outs["report"] if _mtime(outs["report"]) not in (None, before["report"]) else None
    if report is None:
        if req.trigger is not None:
            why = (
                f"the trigger {req.trigger} never fired (no slowdown, or the program does not call nvtxsim.step() "
                "once per iteration); the live lines on stderr say when it fires"
            )
        elif req.window is not None:
            how = "" if req.window_api == "nvtx" else " (which calls cudaProfilerStart)"
            why = (
                f"the capture window for {req.window.describe()} never opened: the program must call "
                f"nvtxsim.step(){how} once per iteration and run at least {req.window.start + 1} iterations"
            )
        elif req.output.with_name(req.output.name + ".qdstrm").exists():
            why = (
                f"it left the raw capture {req.output.name}.qdstrm but could not import it "
                "(see its messages above); `nvtxsim doctor` checks the importer's libraries"
            )
        else:
            why = "see nsys's messages above; `nvtxsim doctor` checks the setup"
        return CaptureResult(rc, None, None, f"nsys wrote no report: {why}")
    sqlite = outs["sqlite"] if _mtime(outs["sqlite"]) not in (None, before["sqlite"]) else None
    problem = None
    if sqlite is None or _mtime(sqlite) < _mtime(report):  # type: ignore[operator]
        try:  # the in-profile export failed or was turned off: export the report now
            sqlite = export_sqlite(nsys, report, outs["sqlite"], force=True)
        except NvtxsimError as exc:
            sqlite, problem = None, str(exc)
    return CaptureResult(rc, report, sqlite, problem)


def holds_nvtx_ranges(sqlite: Path) -> bool:
    """Whether an export holds any NVTX event: a failed program that emitted none left nothing to report."""
    import sqlite3

    from nvtxsim.schema import NVTX_TABLE

    try:
        conn = sqlite3.connect(f"{sqlite.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return conn.execute(f"SELECT 1 FROM {NVTX_TABLE} LIMIT 1").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:  # no such table, or not an export: nothing to report either
        return False


def _mtime(p: Path) -> float | None:
    try:
        return p.stat().st_mtime
    except OSError:
        return None


# --------------------------------------------------------------------------- export


def export_sqlite(nsys: Nsys, report: Path, target: Path, *, force: bool = False) -> Path:
    """``nsys export --type sqlite`` into a temporary file beside ``target``, then rename it."""
    if target.exists() and not force:
        raise NvtxsimError(f"{target}: already exists (use --force to overwrite)")
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    argv = [str(nsys.path), "export", "--type=sqlite", f"--output={tmp}"]
    if nsys.supports("quiet", "export"):
        argv.append("--quiet=true")
    argv.append(str(report))
    try:
        out = run_bounded(argv, 3600)
        if out.returncode != 0 or not tmp.exists():
            lines = [ln.strip() for ln in (out.stderr + out.stdout).splitlines() if ln.strip()]
            last = lines[-1] if lines else f"exit code {out.returncode}"
            raise NvtxsimError(f"{report}: nsys export to SQLite failed: {last}")
        os.replace(tmp, target)
    except subprocess.TimeoutExpired:
        raise NvtxsimError(f"{report}: nsys export to SQLite did not finish within an hour") from None
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass
    return target


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nvtxsim"


def ensure_sqlite(path: str | Path, *, force: bool = False, nsys: Nsys | None = None) -> Path:
    """The SQLite export of ``path``: ``.sqlite`` as is; ``.nsys-rep`` converted with ``nsys export``.

    The export goes beside the report (``run.nsys-rep`` -> ``run.sqlite``) and is reused while
    it is at least as new as the report. A stale one is replaced only with ``force``. When the
    report's folder is not writable the export goes to ``~/.cache/nvtxsim``.
    """
    p = Path(path)
    if p.suffix not in REPORT_SUFFIXES:
        return p
    if not p.is_file():
        raise NvtxsimError(f"{p}: no such file")
    target = p.with_suffix(".sqlite")
    rep_time = _mtime(p) or 0.0
    if target.exists():
        if (_mtime(target) or 0.0) >= rep_time:
            return target
        if not force:
            raise NvtxsimError(f"{target} is older than {p}: delete it, or use --force to export {p.name} again")
    if not os.access(p.parent, os.W_OK):
        st = p.stat()
        key = hashlib.sha1(f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
        target = _cache_dir() / f"{p.stem}-{key}.sqlite"
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
    if nsys is None:
        try:
            nsys = find_nsys()
        except NvtxsimError as exc:
            raise NvtxsimError(
                f"{p}: reading a .nsys-rep needs nsys to export it to SQLite, and {exc}; "
                f"or export it where nsys is installed: nsys export --type sqlite {p.name}"
            ) from None
    return export_sqlite(nsys, p, target, force=True)


# --------------------------------------------------------------------------- facts for doctor


def importer_missing_libraries(nsys: Nsys) -> tuple[Path | None, list[str]]:
    """The QdstrmImporter next to ``nsys`` and the shared libraries ``ldd`` cannot find for it.

    nsys turns its raw capture into a report with this importer; when a library is missing
    (e.g. ``libdw.so.1`` for the nsys inside Nsight Compute) no report is written.
    """
    real = Path(os.path.realpath(nsys.path))
    patterns = [
        real.parent / "QdstrmImporter",
        real.parent.parent / "*" / "QdstrmImporter",
        nsys.path.parent.parent / "*" / "QdstrmImporter",
    ]
    importer = None
    for pattern in patterns:
        hits = sorted(glob.glob(str(pattern)))
        if hits:
            importer = Path(hits[0])
            break
    if importer is None or shutil.which("ldd") is None:
        return importer, []
    try:
        out = run_bounded(["ldd", str(importer)], 30, env=dict(os.environ))
    except (OSError, subprocess.SubprocessError):
        return importer, []
    missing = sorted({ln.split("=>")[0].strip() for ln in out.stdout.splitlines() if "not found" in ln})
    return importer, missing


__all__ = [
    "DEFAULT_TRACE",
    "INSTALL_GLOBS",
    "Nsys",
    "ProfileRequest",
    "CaptureResult",
    "find_nsys",
    "list_nsys",
    "nsys_candidates",
    "nsys_version",
    "parse_trace",
    "output_stem",
    "default_output",
    "check_outputs",
    "build_profile_command",
    "profile_env",
    "run_profile",
    "run_bounded",
    "end_process_tree",
    "export_sqlite",
    "ensure_sqlite",
    "has_gpu",
    "importer_missing_libraries",
    "exit_status",
]
