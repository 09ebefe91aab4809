"""Boolean environment variables (``NVTXSIM_DISABLE``, ``NVTXSIM_CACHE``): one parser for all of them.

Shared by every stage (like :mod:`nvtxsim.errors`): the same spellings mean the same everywhere.
"""

from __future__ import annotations

import os

DISABLE = "NVTXSIM_DISABLE"

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off", ""})


def parse_flag(text: str) -> bool | None:
    """``1/true/yes/on`` → True, ``0/false/no/off`` or empty → False (any case, spaces ignored); else None."""
    value = text.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    return None


def env_flag(name: str, *, default: bool = False, on_unknown: bool | None = None) -> bool:
    """The flag ``name`` from the environment: ``default`` when unset, ``on_unknown`` (default: ``default``)
    for a value that is none of the accepted spellings."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = parse_flag(raw)
    if value is None:
        return default if on_unknown is None else on_unknown
    return value
