"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture
def profiler_attached(monkeypatch):
    """Make nvtxsim behave as if ranges were recorded (wrappers installed), without a profiler.

    While nothing is recorded, ``instrument()`` installs nothing; tests of the wrapping itself
    need this. Ranges still reach nothing: no NVTX domain is open, so push/pop are no-ops.
    """
    import nvtxsim.emit.ranges as E

    monkeypatch.setattr(E, "_active", True)
    assert E.is_recording()
