"""`nvtxsim doctor`: verdicts (unit), no-nsys failure (unit), and a real run with nsys 2022.4."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from nvtxsim.capture import doctor
from nvtxsim.capture import nsys as capture
from nvtxsim.cli.commands import doctor as doctor_command

REPO = Path(__file__).resolve().parents[1]
NSYS = shutil.which("nsys")


def run_doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", "doctor", *args], env=full, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize(
    "nvtx,nsys,status,needle",
    [
        (None, (2022, 4), doctor.FAIL, "pip install nvtx"),
        ("0.2.11", (2022, 4, 2, 1), doctor.OK, "any nsys"),
        ("0.2.17", (2022, 4, 2, 1), doctor.WARN, "lifts"),
        ("0.2.13", (2023, 2, 3), doctor.WARN, "drops"),
        ("0.2.17", (2024, 1), doctor.INFO, "not verified"),
        ("0.2.17", (2025, 3, 1, 90), doctor.OK, "as they are"),
    ],
)
def test_nvtx_verdict(nvtx, nsys, status, needle):
    got, detail, fix = doctor.nvtx_verdict(nvtx, nsys)
    assert got == status
    assert needle in detail + (fix or "")


def test_without_nsys_doctor_fails_with_a_fix(monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setattr(capture, "INSTALL_GLOBS", ())
    d = doctor.diagnose(quick=True)
    assert not d.can_profile
    nsys_check = next(c for c in d.checks if c.name == "nsys")
    assert nsys_check.status == doctor.FAIL and "NSYS=" in nsys_check.fix
    text = doctor_command.render_text(d)
    assert "can profile: no" in text and "fix:" in text
    assert json.loads(doctor_command.render_json(d))["can_profile"] is False


def test_fake_newer_nsys_is_reported(monkeypatch, tmp_path):
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NSYS", str(fake))
    d = doctor.diagnose(quick=True)
    assert d.facts["nsys"]["version"] == "2025.3.1.90" and d.facts["nsys"]["source"] == "$NSYS"
    # nsys >= 2025.3 records every nvtx: OK whenever the package is there (probed here), FAIL only without it.
    try:
        installed: str | None = metadata.version("nvtx")
    except metadata.PackageNotFoundError:
        installed = None
    (nvtx_check,) = [c for c in d.checks if c.name == "nvtx"]
    assert nvtx_check.status == (doctor.OK if installed else doctor.FAIL), nvtx_check
    assert d.facts["nvtx_version"] == installed
    assert (installed or "pip install nvtx") in (nvtx_check.detail + (nvtx_check.fix or ""))


@pytest.mark.nsys
@pytest.mark.skipif(NSYS is None, reason="Nsight Systems (nsys) is not installed; run .ci/install-nsys.sh")
def test_doctor_with_real_nsys():
    version = capture.nsys_version(NSYS)
    proc = run_doctor("--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["can_profile"] is True
    assert out["facts"]["nsys"]["version"] == version
    probe = next(c for c in out["checks"] if c["name"] == "probe")
    assert probe["status"] == "ok" and out["facts"]["probe"]["window_iterations"] == 2
    assert out["facts"]["perf_event_paranoid"] is None or isinstance(out["facts"]["perf_event_paranoid"], int)

    text = run_doctor("--quick")
    assert text.returncode == 0
    assert f"nsys      {version}" in text.stdout or f"{version} at" in text.stdout
    assert "will capture:" in text.stdout and "can profile: yes" in text.stdout


# --------------------------------------------------------------------------- children given up on (issue 13)

HANGING_NSYS = """#!/bin/sh
# A stand-in nsys that hangs after starting a helper of its own (as nsys starts the program and its daemon).
case "$*" in
  *--help*) exit 0 ;;
esac
if [ "$1" = "--version" ] && [ -n "$FAKE_NSYS_FAST_VERSION" ]; then
  echo 'NVIDIA Nsight Systems version 2022.4.2.1-2022.4.2.1'; exit 0
fi
sleep 300 &
echo "$$ $!" >> "$FAKE_NSYS_PIDS"
sleep 300
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def _fake(tmp_path, monkeypatch):
    fake = tmp_path / "nsys"
    fake.write_text(HANGING_NSYS)
    fake.chmod(0o755)
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_NSYS_PIDS", str(pids))
    monkeypatch.setenv("NSYS", str(fake))
    return fake, pids


def _all_pids(pids: Path) -> list[int]:
    return [int(p) for line in pids.read_text().splitlines() for p in line.split()]


def test_doctor_ends_the_nsys_it_gives_up_on(tmp_path, monkeypatch):
    fake, pids = _fake(tmp_path, monkeypatch)
    monkeypatch.setattr(capture, "QUERY_TIMEOUT", 1.0)
    d = doctor.diagnose(quick=True)
    nsys_check = next(c for c in d.checks if c.name == "nsys")
    assert nsys_check.status == doctor.FAIL
    started = _all_pids(pids)
    assert started and all(_gone(p) for p in started), "nsys (or what it started) outlived doctor's timeout"


def test_a_capture_that_hangs_is_ended_with_what_it_started(tmp_path, monkeypatch):
    fake, pids = _fake(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_NSYS_FAST_VERSION", "1")
    nsys = capture.find_nsys()
    req = capture.ProfileRequest(command=["true"], output=tmp_path / "out")
    from nvtxsim.errors import NvtxsimError

    with pytest.raises(NvtxsimError, match="did not finish"):
        capture.run_profile(nsys, req, timeout=1, log=open(tmp_path / "log", "w"))
    started = _all_pids(pids)
    assert started and all(_gone(p) for p in started)


def test_run_bounded_returns_normally():
    out = capture.run_bounded([sys.executable, "-c", "print('hi')"], 30)
    assert out.returncode == 0 and out.stdout.strip() == "hi"
    with pytest.raises(subprocess.TimeoutExpired):
        capture.run_bounded([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)


def test_doctor_text_wraps_to_the_terminal_width():
    """At 80 columns every line fits (a path longer than the room stays whole on its own line)."""
    d = doctor.diagnose(quick=True)
    long = "a sentence of many words " * 12
    d.checks.append(doctor.Check("long", doctor.WARN, long + "/a/path/" + "x" * 90, fix=long))
    wide = doctor_command.render_text(d)
    narrow = doctor_command.render_text(d, 80)
    for ln in narrow.splitlines():
        assert len(ln) <= 80 or " " not in ln.strip(), ln
    assert " ".join(wide.split()) == " ".join(narrow.split())  # the same words, only wrapped
    assert max(map(len, wide.splitlines())) > 300 and "/a/path/" + "x" * 90 in narrow
    k = next(i for i, ln in enumerate(narrow.splitlines()) if "long" in ln and "warn" in ln)
    assert narrow.splitlines()[k + 1].startswith(" " * 18) and narrow.splitlines()[k + 1].strip()
