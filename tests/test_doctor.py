"""`nvtxsim doctor`: verdicts (unit), no-nsys failure (unit), and a real run with nsys 2022.4."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nvtxsim.capture import nsys as capture
from nvtxsim.cli.commands import doctor

REPO = Path(__file__).resolve().parents[1]
NSYS = shutil.which("nsys")


def run_doctor(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    return subprocess.run([sys.executable, "-m", "nvtxsim", "doctor", *args], env=full,
                          capture_output=True, text=True, timeout=600)


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
    text = doctor.render_text(d)
    assert "can profile: no" in text and "fix:" in text
    assert json.loads(doctor.render_json(d))["can_profile"] is False


def test_fake_newer_nsys_is_reported(monkeypatch, tmp_path):
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NSYS", str(fake))
    d = doctor.diagnose(quick=True)
    assert d.facts["nsys"]["version"] == "2025.3.1.90" and d.facts["nsys"]["source"] == "$NSYS"
    assert any(c.name == "nvtx" and c.status in (doctor.OK, doctor.FAIL) for c in d.checks)


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
