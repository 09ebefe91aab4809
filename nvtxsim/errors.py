"""User-facing errors: one line, exit code 2, never a traceback."""

from __future__ import annotations


class NvtxsimError(Exception):
    """An error the user can act on; its message is printed as one line."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
