"""Headless Chromium for the HTML checks ("no script from an export runs in the page").

Off CI a developer without Chromium gets a skip that says so; in CI (``NVTXSIM_CI=1``, set by .ci/run, where
``scripts/setup.sh --test`` installs Debian's ``chromium``) a missing browser fails the test: the check
exists to run there.
"""

from __future__ import annotations

import os
import shutil

import pytest

from nvtxsim.envflags import parse_flag

CI = "NVTXSIM_CI"
NAMES = ("chromium", "chromium-browser", "google-chrome")


def in_ci() -> bool:
    return bool(parse_flag(os.environ.get(CI, "")))


def chromium() -> str:
    """The headless browser's path; skips off CI, fails in CI, when none is installed."""
    found = next((path for path in map(shutil.which, NAMES) if path), None)
    if found is None:
        message = f"no headless Chromium ({' / '.join(NAMES)} on PATH); scripts/setup.sh --test installs it"
        if in_ci():
            pytest.fail(f"{CI}=1: {message}", pytrace=False)
        pytest.skip(message)
    return found
