"""The browser checks fail, not skip, in CI when Chromium is missing (NVTXSIM_CI=1, set by .ci/run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import CI, chromium

ROOT = Path(__file__).resolve().parent.parent


def test_missing_chromium_fails_in_ci_and_skips_elsewhere(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser on it
    monkeypatch.setenv(CI, "1")
    with pytest.raises(pytest.fail.Exception, match="NVTXSIM_CI=1: no headless Chromium"):
        chromium()
    monkeypatch.setenv(CI, "0")
    with pytest.raises(pytest.skip.Exception, match="no headless Chromium"):
        chromium()
    monkeypatch.delenv(CI)
    with pytest.raises(pytest.skip.Exception):
        chromium()
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv(CI, "1")
    assert chromium() == str(fake)


def test_ci_installs_chromium_and_sets_the_flag():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "export NVTXSIM_CI=1" in run and run.index("export NVTXSIM_CI=1") < run.index("pytest")
    test_branch = setup[setup.index('"--test"') :]
    assert "apt-get install" in test_branch and " chromium" in test_branch
