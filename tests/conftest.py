"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture
def profiler_attached(monkeypatch):
    """Make nvtxsim behave as if a profiler were attached (wrappers installed), without one.

    With no profiler, ``instrument()`` installs nothing; tests of the wrapping itself need this.
    Ranges still reach nothing: no NVTX domain is open.
    """
    import nvtxsim.emit as E

    monkeypatch.setattr(E._backend, "tool_attached", True)
    assert E.can_record()
