"""Emit stage: one line on stderr per problem, from code that runs inside the user's program.

Instrumentation never raises into the program it measures, so what goes wrong is said here instead:
:func:`report` for an event (a live trigger fired, a sink dropped), :func:`report_once` for a problem
that could repeat on every range. Neither raises, even with stderr closed.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

_report_lock = threading.Lock()
_reported: set = set()


def report(message: str) -> None:
    """``nvtxsim: message`` on stderr; never raises (stderr may be gone)."""
    try:
        sys.stderr.write(f"nvtxsim: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def report_once(key: Any, message: str) -> None:
    """One stderr line per distinct problem (``key``) and process."""
    with _report_lock:
        if key in _reported:
            return
        _reported.add(key)
    report(message)


def _fresh_lock_in_child() -> None:
    """In a forked child: the parent's lock may have been held by another thread at the fork."""
    global _report_lock
    _report_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_in_child)
