"""User-facing errors: one line, exit code 2, never a traceback; and the NVTXSIM_DEBUG log of silent fallbacks."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

DEBUG_ENV = "NVTXSIM_DEBUG"


class NvtxsimError(Exception):
    """An error the user can act on; its message is printed as one line."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


# --------------------------------------------------------------------------- numbers given by the user

_INT_MAX = 2**62  # far beyond any count, and no int64 sum of a few of them overflows


def int_option(option: str, *, low: int = 0, high: int = _INT_MAX) -> Callable[[str], int]:
    """An argparse ``type`` for an integer option in [low, high]: anything else is one error line, exit 2."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise NvtxsimError(f"{option}: expected an integer, got {text!r}") from None
        if value < low:
            raise NvtxsimError(f"{option}: must be at least {low}, got {value}")
        if value > high:
            raise NvtxsimError(f"{option}: must be at most {high}, got {value}")
        return value

    return parse


def comma_list(text: str, option: str) -> list[str]:
    """``a, b,c`` → ["a", "b", "c"]: every comma-separated list a user gives (``--sweep``, ``--trace``,
    ``--view``, ``--fail-on``). An empty item (``1,,2``, a leading or trailing comma) is refused: it is
    a typo, never a choice, and nothing may start on a list the user did not mean."""
    items = [t.strip() for t in str(text).split(",")]
    if not any(items):
        raise NvtxsimError(f"{option}: empty list {text!r}")
    if not all(items):
        raise NvtxsimError(f"{option}: empty item in {text!r} (two commas in a row, or one at an end)")
    return items


# Larger numbers are finite but not usable: a product of two or three of them (``--envs 1e308`` times
# steps times 1e9 ns) overflows to infinity, and infinity minus itself is NaN.
FLOAT_MAX = 1e100


def float_option(
    option: str, *, low: float = 0.0, high: float = FLOAT_MAX, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number in the interval (NaN and infinities are refused; by
    default at most :data:`FLOAT_MAX`, so arithmetic on it stays finite)."""
    import math

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise NvtxsimError(f"{option}: expected a number, got {text!r}") from None
        inside = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
        if not math.isfinite(value) or not inside:
            where = f"{'>' if low_open else '>='} {low:g}"
            if math.isfinite(high):
                where = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
            raise NvtxsimError(f"{option}: must be a finite number {where}, got {text!r}")
        return value

    return parse


def debugging() -> bool:
    """NVTXSIM_DEBUG is set: fallbacks are logged, internal errors show their traceback."""
    return bool(os.environ.get(DEBUG_ENV))


def debug(message: str, *, exc: BaseException | None = None) -> None:
    """Log a fallback that changes nothing in the results (a slower path taken) to stderr under NVTXSIM_DEBUG.

    Fallbacks stay silent by default but never hidden: a bug that makes a fast path fall back
    shows here, with its traceback when ``exc`` is given."""
    if not debugging():
        return
    print(f"nvtxsim: debug: {message}", file=sys.stderr)
    if exc is not None:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
