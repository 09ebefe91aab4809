"""Capture stage: can this machine profile, and what will a capture hold? (``nvtxsim doctor``)

Checks nsys (found, version, its importer), the ``nvtx`` package against that nsys
(nvtx>=0.2.12 ranges vanish under old nsys unless nvtxsim lifts the gate), the GPU
and driver, torch's CUDA build, ``perf_event_paranoid``, and, unless ``--quick``,
runs a two-second test capture with a capture window and reads its SQLite export.
Every problem comes with its fix.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from nvtxsim.capture import nsys as capture
from nvtxsim.errors import NvtxsimError
from nvtxsim.phases import Window
from nvtxsim.schema import NVTX_TABLE, PUSHPOP, STRINGS_TABLE

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"

# nsys releases whose NVTX injection refuses the payload extension of nvtx>=0.2.12 (2022.4 verified,
# 2023.2.3 reported upstream) and the first release seen recording those ranges natively.
_OLD_NSYS_MAX = (2023, 2, 99)
_NEW_NSYS_MIN = (2025, 3)
_NVTX_GATE = (0, 2, 12)


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str | None = None


@dataclass
class Diagnosis:
    checks: list[Check] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    will_capture: list[str] = field(default_factory=list)
    will_not_capture: list[str] = field(default_factory=list)

    def add(self, name: str, status: str, detail: str, fix: str | None = None) -> Check:
        c = Check(name, status, detail, fix)
        self.checks.append(c)
        return c

    @property
    def can_profile(self) -> bool:
        return not any(c.status == FAIL for c in self.checks)


# --------------------------------------------------------------------------- checks


def check_nsys(d: Diagnosis) -> capture.Nsys | None:
    try:
        nsys = capture.find_nsys()
    except NvtxsimError as exc:
        d.add(
            "nsys",
            FAIL,
            str(exc),
            "install Nsight Systems (Debian: .ci/install-nsys.sh; NVIDIA: nsight-systems-cli), or set NSYS=/path/to/nsys",
        )
        d.facts["nsys"] = None
        return None
    d.facts["nsys"] = {"path": str(nsys.path), "version": nsys.version_text, "source": nsys.source}
    others = [n for n in capture.list_nsys() if os.path.realpath(n.path) != os.path.realpath(nsys.path)]
    d.facts["nsys_others"] = [{"path": str(n.path), "version": n.version_text, "source": n.source} for n in others]
    d.add("nsys", OK, f"{nsys.version_text} at {nsys.path} (from {nsys.source})")
    newer = [n for n in others if n.version > nsys.version]
    if newer:
        best = max(newer, key=lambda n: n.version)
        d.add(
            "nsys", INFO, f"a newer nsys {best.version_text} is at {best.path}", f"to use it: export NSYS={best.path}"
        )
    importer, missing = capture.importer_missing_libraries(nsys)
    d.facts["importer"] = {"path": str(importer) if importer else None, "missing_libraries": missing}
    if importer is None:
        d.add(
            "importer",
            WARN,
            "no QdstrmImporter found next to nsys: `nsys profile` may write no report",
            "Debian package: ln -s /usr/lib/nsight-systems/host-linux-x64 "
            "/usr/lib/x86_64-linux-gnu/nsight-systems/host-linux-x64 (as .ci/install-nsys.sh does)",
        )
    elif missing:
        d.add(
            "importer",
            FAIL,
            f"{importer} cannot load {', '.join(missing)}: nsys captures but writes no report",
            f"put {', '.join(missing)} on LD_LIBRARY_PATH (e.g. Debian's libdw1/libelf1; see .gpu/env.sh)",
        )
    else:
        d.add("importer", OK, f"{importer} loads")
    return nsys


def nvtx_verdict(nvtx_version: str | None, nsys_version: tuple[int, ...]) -> tuple[str, str, str | None]:
    """(status, detail, fix) for the nvtx package under this nsys (docs: nvtx-compat.md)."""
    if not nvtx_version:
        return FAIL, "the nvtx package is not installed: no NVTX ranges at all", "pip install nvtx"
    v = capture.version_tuple(nvtx_version)
    if v < _NVTX_GATE:
        return OK, f"nvtx {nvtx_version} has no enabled-check: any nsys records its ranges", None
    if not nsys_version:
        return INFO, f"nvtx {nvtx_version}: whether nsys records it depends on the nsys version", None
    nv = capture.version_text(nsys_version)
    if nsys_version >= _NEW_NSYS_MIN:
        return OK, f"nsys {nv} records nvtx {nvtx_version} ranges as they are", None
    bypass = (
        "nvtxsim lifts that check when it is imported, so nvtxsim phases and nvtx ranges created after "
        "`import nvtxsim` are recorded; ranges of nvtx decorators applied before that import, "
        "and non-scalar payloads, are not"
    )
    fix = "import nvtxsim before other code uses nvtx, or pin nvtx<=0.2.11, or use nsys >= 2025.3"
    if nsys_version <= _OLD_NSYS_MAX:
        return (
            WARN,
            f"nsys {nv} drops nvtx {nvtx_version} ranges (it refuses the payload extension that "
            f"nvtx>=0.2.12 asks whether a domain is enabled); {bypass}",
            fix,
        )
    return (
        INFO,
        f"nvtx {nvtx_version} with nsys {nv}: not verified (2023.2 and older drop its ranges, 2025.3 records them); "
        "nvtxsim detects a dropped domain at run time and lifts the check, so its own ranges are recorded either way",
        fix,
    )


def check_nvtx(d: Diagnosis, nsys: capture.Nsys | None) -> None:
    try:
        version: str | None = metadata.version("nvtx")
    except metadata.PackageNotFoundError:
        version = None
    d.facts["nvtx_version"] = version
    status, detail, fix = nvtx_verdict(version, nsys.version if nsys else ())
    d.add("nvtx", status, detail, fix)


def gpu_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {"driver": None, "gpus": []}
    try:
        text = Path(capture._GPU_DRIVER_FILE).read_text(errors="replace")
        first = text.splitlines()[0] if text else ""
        facts["driver"] = next((w for w in first.split() if w[:1].isdigit() and "." in w), first.strip() or "loaded")
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = capture.run_bounded([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], 20)
            if out.returncode == 0:
                for line in out.stdout.splitlines():
                    name, _, drv = line.partition(",")
                    if name.strip():
                        facts["gpus"].append(name.strip())
                        facts["driver"] = facts["driver"] or drv.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return facts


_TORCH_PROBE = (
    "import json, torch\n"
    "ok = torch.cuda.is_available()\n"
    "print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, 'available': ok,\n"
    "  'devices': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if ok else []}))\n"
)


def torch_facts(timeout: float = 90) -> dict[str, Any] | None:
    """torch's build and CUDA, asked in a child process (importing torch here would be slow and stay)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    try:
        out = capture.run_bounded([sys.executable, "-c", _TORCH_PROBE], timeout)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {"error": "import torch failed or took too long"}


def check_gpu(d: Diagnosis, nsys: capture.Nsys | None, quick: bool) -> bool:
    g = gpu_facts()
    d.facts["gpu"] = g
    has_gpu = bool(g["driver"] or g["gpus"])
    if has_gpu:
        names = ", ".join(g["gpus"]) or "GPU"
        d.add("gpu", OK, f"{names}, driver {g['driver'] or 'unknown'}")
    else:
        d.add(
            "gpu",
            WARN,
            "no NVIDIA driver (/proc/driver/nvidia/version missing): no CUDA activity to capture",
            "for GPU timings run on a machine with an NVIDIA GPU and driver (CPU-side phases still work here)",
        )
    t = None if quick else torch_facts()
    d.facts["torch"] = t
    if t and "error" not in t:
        if not t.get("cuda"):
            d.add("torch", INFO, f"torch {t['version']} is a CPU build: its work runs on the CPU, no kernels to trace")
        elif not t.get("available"):
            d.add(
                "torch",
                WARN,
                f"torch {t['version']} (CUDA {t['cuda']}) sees no usable GPU",
                "check the driver and CUDA_VISIBLE_DEVICES",
            )
        else:
            d.add("torch", OK, f"torch {t['version']}, CUDA {t['cuda']}: {', '.join(t['devices'])}")
            cuda = capture.version_tuple(t["cuda"])
            if nsys and cuda and cuda[0] >= 13 and nsys.version < (2025,):
                d.add(
                    "cuda",
                    WARN,
                    f"nsys {nsys.version_text} predates CUDA {t['cuda']}: CUDA activity will not be "
                    "recorded (seen with nsys 2022.4 and CUDA 13)",
                    "use nsys 2025.3 or newer (NSYS=/path/to/nsys)",
                )
    elif t:
        d.add("torch", WARN, t["error"])
    return has_gpu


def check_perf(d: Diagnosis) -> None:
    try:
        level: int | None = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        level = None
    d.facts["perf_event_paranoid"] = level
    if level is None:
        d.add(
            "perf",
            INFO,
            "perf_event_paranoid unreadable: CPU sampling may be unavailable (nvtxsim profile does not sample)",
        )
    elif level > 2:
        d.add(
            "perf",
            INFO,
            f"perf_event_paranoid={level}: CPU sampling unavailable (nvtxsim profile turns it off anyway)",
            "only if you add --nsys-arg=--sample=process-tree: sudo sysctl kernel.perf_event_paranoid=2",
        )
    else:
        d.add("perf", OK, f"perf_event_paranoid={level}: CPU sampling possible if asked for (off by default)")


_PROBE = (
    "import json, sys\n"
    "import nvtxsim\n"
    "for i in range(4):\n"
    "    nvtxsim.step()\n"
    "    with nvtxsim.phase('iteration'):\n"
    "        pass\n"
    "json.dump(nvtxsim.backend_info(), open(sys.argv[1], 'w'))\n"
)


def _count_ranges(sqlite_path: Path, name: str) -> int:
    con = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    try:
        row = con.execute(
            f"SELECT COUNT(*) FROM {NVTX_TABLE} e LEFT JOIN {STRINGS_TABLE} s ON s.id = e.textId "
            f"WHERE e.eventType = {PUSHPOP} AND COALESCE(e.text, s.value) = ?",
            (name,),
        ).fetchone()
        return int(row[0])
    except sqlite3.OperationalError:  # no NVTX_EVENTS table: nothing recorded
        return 0
    finally:
        con.close()


def _probe_env() -> dict[str, str]:
    """The environment of the probe: this nvtxsim first on the path, never disabled."""
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NVTXSIM_DISABLE", None)
    return env


def _run_probe(nsys: capture.Nsys, tmpdir: Path) -> capture.CaptureResult:
    """Profile the probe script in ``tmpdir`` (twice at most: nsys sessions started at the same moment can fail spuriously)."""
    script = tmpdir / "probe.py"
    script.write_text(_PROBE)
    req = capture.ProfileRequest(
        command=[sys.executable, str(script), str(tmpdir / "backend.json")],
        output=tmpdir / "probe",
        trace=("nvtx", "osrt"),
        window=Window(1, 3),
    )
    env = _probe_env()
    for _attempt in range(2):
        with open(tmpdir / "nsys.log", "w") as log:
            result = capture.run_profile(nsys, req, env=env, log=log, timeout=300)
        if result.report is not None:
            break
    return result


def check_probe(d: Diagnosis, nsys: capture.Nsys) -> None:
    """Profile a 4-iteration nvtxsim loop with window 1:3; expect exactly 2 iteration ranges."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nvtxsim-doctor-") as tmp:
        tmpdir = Path(tmp)
        try:
            result = _run_probe(nsys, tmpdir)
        except NvtxsimError as exc:
            d.add("probe", FAIL, f"test capture failed: {exc}", "run `nvtxsim doctor --json` and read facts.probe")
            return
        log = (tmpdir / "nsys.log").read_text(errors="replace").splitlines()
        tail = [ln for ln in log if ln.strip() and "%" not in ln][-5:]
        info_path = tmpdir / "backend.json"
        backend = json.loads(info_path.read_text()) if info_path.exists() else None
        d.facts["probe"] = {
            "returncode": result.returncode,
            "log_tail": tail,
            "backend": backend,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        if result.report is None:
            d.add(
                "probe",
                FAIL,
                f"test capture: {result.problem}; nsys said: {' | '.join(tail) or 'nothing'}",
                "fix the problems above (importer, nvtx); `nsys profile` must write a report",
            )
        elif result.sqlite is None:
            d.add(
                "probe",
                FAIL,
                f"test capture recorded but SQLite export failed: {result.problem}",
                "check the importer libraries above; `nsys export --type sqlite` must work",
            )
        else:
            _judge_window(d, _count_ranges(result.sqlite, "iteration"), backend, time.perf_counter() - t0)


def _judge_window(d: Diagnosis, n: int, backend: dict | None, secs: float) -> None:
    """The probe's verdict from the ``n`` iteration ranges its window 1:3 recorded (2 expected)."""
    d.facts["probe"]["window_iterations"] = n
    if n == 2:
        extra = ", gate lifted by nvtxsim" if backend and backend.get("gate_bypassed") else ""
        d.add(
            "probe",
            OK,
            f"test capture with window 1:3 recorded exactly iterations 1..2{extra}; SQLite export works ({secs:.1f} s)",
        )
    elif n == 0:
        d.add(
            "probe",
            FAIL,
            f"test capture recorded no nvtxsim ranges (backend: {backend})",
            "see the nvtx line above; import nvtxsim before other code uses nvtx",
        )
    else:
        d.add(
            "probe",
            WARN,
            f"test capture with window 1:3 recorded {n} iteration ranges, expected 2",
            "capture windows may be unreliable with this nsys; profile without --iterations",
        )


def summarize_capture(d: Diagnosis, nsys: capture.Nsys | None, has_gpu: bool) -> None:
    if nsys is None:
        d.will_not_capture.append("anything: no nsys")
        return
    d.will_capture.append("NVTX ranges of nvtxsim phases (domain nvtxsim) and marks, with int/float payloads")
    d.will_capture.append("OS runtime calls longer than 1 µs (osrt)")
    d.will_capture.append("capture windows: nvtxsim profile --iterations A:B with nvtxsim.step() once per iteration")
    if has_gpu:
        d.will_capture.append("CUDA API calls, kernels, memcpy/memset, synchronization; CUDA graphs per node")
    else:
        d.will_not_capture.append("CUDA activity: no NVIDIA GPU/driver on this machine")
    d.will_not_capture.append(
        "CPU samples and context switches (off in nvtxsim profile; --nsys-arg=--sample=process-tree turns sampling on)"
    )
    if nsys.version <= _OLD_NSYS_MAX:
        d.will_not_capture.append(f"non-scalar NVTX payloads (lists, bytes, arrays) under nsys {nsys.version_text}")


def diagnose(quick: bool = False) -> Diagnosis:
    d = Diagnosis()
    nsys = check_nsys(d)
    check_nvtx(d, nsys)
    has_gpu = check_gpu(d, nsys, quick)
    check_perf(d)
    if nsys is not None and not quick and d.facts.get("nvtx_version"):
        check_probe(d, nsys)
    summarize_capture(d, nsys, has_gpu)
    return d
