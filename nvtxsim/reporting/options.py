"""One parser per report option, shared by the command line and the Python API.

``nvtxsim report --top 5`` and ``nvtxsim.report(path, top=5)`` go through the same function here,
so both accept the same values and refuse the same ones with the same one-line error (exit 2 on
the command line, :class:`~nvtxsim.errors.NvtxsimError` from Python). The command line hands
over text; Python may also hand over the value's own type (an int, a list of names).
"""

from __future__ import annotations

import math

from nvtxsim.analysis.findings.gate import FailRule, did_you_mean, parse_fail_on
from nvtxsim.errors import FLOAT_MAX, NvtxsimError, comma_list, float_option, int_option

__all__ = ["FailRule", "count", "envs", "fail_on", "names", "text", "views"]

_INT_MAX = 2**62


def count(value: object, option: str, *, low: int = 0) -> int:
    """A whole number >= ``low`` (``--top``, ``--skip-first``): text or an int, never a bool or a float."""
    if isinstance(value, str):
        return int_option(option, low=low, high=_INT_MAX)(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NvtxsimError(f"{option}: expected an integer, got {value!r}")
    return int_option(option, low=low, high=_INT_MAX)(str(value))


def envs(value: object, option: str = "--envs") -> float | None:
    """Environments per step: a finite number > 0, or None (as recorded)."""
    if value is None:
        return None
    if isinstance(value, str):
        return float_option(option, low_open=True)(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NvtxsimError(f"{option}: expected a number, got {value!r}")
    if not (math.isfinite(value) and 0 < value <= FLOAT_MAX):
        raise NvtxsimError(f"{option}: must be a finite number in (0, {FLOAT_MAX:g}], got {value!r}")
    return float(value)


def text(value: object, option: str) -> str | None:
    """A name or a pattern (``--by``, ``--match``, ``--domain``): a string or None."""
    if value is None or isinstance(value, str):
        return value
    raise NvtxsimError(f"{option}: expected a string, got {value!r}")


def names(value: object, option: str) -> list[str] | None:
    """A comma-separated string, or a list of strings each of which may hold commas; None for none given.

    An empty entry (``a,,b``, a trailing comma) is refused: it is a typo, never a choice."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = [value]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        parts = list(value)
    else:
        raise NvtxsimError(f"{option}: expected names as a string or a list of strings, got {value!r}")
    return [e for p in parts for e in comma_list(p, option)]


def views(value: object, option: str = "--view") -> list[str]:
    """``tree,kernels`` (or a list) → the view names; ``all`` → every view; None → the summary."""
    from nvtxsim.reporting.views import VIEWS

    if value is None or (isinstance(value, (str, list, tuple)) and not value):
        return ["summary"]
    given = names(value, option) or []
    if given == ["all"]:
        return list(VIEWS)
    for n in given:
        if n not in VIEWS:
            raise NvtxsimError(
                f"{option}: unknown view {n!r}{did_you_mean(n, list(VIEWS) + ['all'])}; choose from {', '.join(VIEWS)} or all"
            )
    return list(dict.fromkeys(given))


def fail_on(value: object, option: str = "--fail-on") -> tuple[FailRule, ...]:
    """``--fail-on`` / ``fail_on=``: see :mod:`nvtxsim.analysis.findings.gate`."""
    return parse_fail_on(value, option=option)
