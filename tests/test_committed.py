"""A missing committed data file fails the test that needs it; it never turns the test into a skip."""

from __future__ import annotations

import pytest
from committed import DATA, committed, committed_glob


def test_a_missing_committed_file_fails_not_skips(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r"committed test data missing: .*gone\.sqlite\.gz"):
        committed(tmp_path / "gone.sqlite.gz")
    with pytest.raises(pytest.fail.Exception, match="committed test data missing"):
        committed("gpu/no_such_export.sqlite.gz")  # relative to tests/data
    with pytest.raises(pytest.fail.Exception, match="holds 0 file"):
        committed_glob(tmp_path, "*.sqlite.gz")
    (tmp_path / "one.sqlite.gz").write_bytes(b"")
    with pytest.raises(pytest.fail.Exception, match="holds 1 file.*at least 2"):
        committed_glob(tmp_path, "*.sqlite.gz", at_least=2)
    with pytest.raises(pytest.fail.Exception):
        committed(tmp_path)  # a folder is not the file


def test_a_committed_file_is_returned_as_is(tmp_path):
    assert committed("gpu/demo_h200.sqlite.gz") == DATA / "gpu" / "demo_h200.sqlite.gz"
    assert committed(DATA / "gpu" / "README.md") == DATA / "gpu" / "README.md"
    (tmp_path / "b.sqlite.xz").write_bytes(b"")
    (tmp_path / "a.sqlite.gz").write_bytes(b"")
    (tmp_path / "c.txt").write_bytes(b"")
    assert committed_glob(tmp_path, "*.sqlite.gz", "*.sqlite.xz", at_least=2) == [
        tmp_path / "a.sqlite.gz",
        tmp_path / "b.sqlite.xz",
    ]


def test_no_test_skips_on_a_committed_data_path():
    """The pattern this helper replaced: `skip`/`skipif` beside an `.exists()` of a path under tests/data."""
    import re
    from pathlib import Path

    offenders = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            window = " ".join(lines[max(0, i - 2) : i + 3])
            if (
                re.search(r"\bskip(if)?\(", line)
                and ".exists()" in window
                and re.search(r"DATA|DEMO|GRAPHS|PATH|PLANTED|EXPORT|data", window)
            ):
                offenders.append(f"{path.name}:{i + 1}")
    assert offenders == []
