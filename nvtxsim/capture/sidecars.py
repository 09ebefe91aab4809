"""The stacks sidecar ``nvtxsim profile --stacks`` asks the program to write beside the export (docs/cpu.md)."""

from __future__ import annotations

from pathlib import Path

from nvtxsim.errors import NvtxsimError
from nvtxsim.schema import STACKS_FORMAT, STACKS_SUFFIX


def stacks_file(stem: Path) -> Path:
    """The stacks sidecar of ``--stacks`` beside the export (``nvtxsim report`` looks for it there)."""
    return stem.with_name(stem.name + STACKS_SUFFIX)


def fresh_stacks_file(path: Path, *, force: bool) -> None:
    """The sampler appends one line per process: an old sidecar would mix two runs, so it is refused, or with
    ``force`` removed (only a stacks file: anything else is never touched)."""
    if not (path.exists() or path.is_symlink()):
        return
    if not force:
        raise NvtxsimError(f"{path}: already exists (use --force to overwrite, or -o another name)")
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head and not head.startswith(b'{"format":"' + STACKS_FORMAT.encode()):
        raise NvtxsimError(f"{path}: exists and is not a stacks file; not overwritten (-o another name)")
    path.unlink()
