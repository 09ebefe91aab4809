"""Committed test data (tests/data): a test written against a file fails, loudly, when the file is gone.

A missing export or CSV means a broken checkout (a file deleted, LFS not pulled, a rename half done), not
a platform without a feature: skipping would turn the very check into a silent pass. Every test that
reads tests/data goes through `committed` or `committed_glob`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(DATA.parent.parent))
    except ValueError:
        return str(path)


def committed(path: Path | str) -> Path:
    """The committed file at ``path`` (relative to tests/data, or absolute); the calling test fails if it is absent."""
    p = Path(path)
    p = p if p.is_absolute() else DATA / p
    if not p.is_file():
        pytest.fail(
            f"committed test data missing: {_shown(p)} (restore it from git; tests never skip on it)", pytrace=False
        )
    return p


def committed_glob(folder: Path | str, *patterns: str, at_least: int = 1, recursive: bool = False) -> list[Path]:
    """The committed files in ``folder`` matching any of ``patterns``, sorted; fails with fewer than ``at_least``."""
    d = Path(folder)
    d = d if d.is_absolute() else DATA / d
    found = sorted({p for pattern in patterns for p in (d.rglob(pattern) if recursive else d.glob(pattern))})
    if len(found) < at_least:
        pytest.fail(
            f"committed test data missing: {_shown(d)} holds {len(found)} file(s) matching "
            f"{' or '.join(patterns)}, expected at least {at_least}",
            pytrace=False,
        )
    return found
