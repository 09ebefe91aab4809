"""`nvtxsim report` on hostile input: a one-line error (exit 2) or a correct report, never a traceback,
never a partial output file, never a hang. The corpus is built by tests/hostile_corpus.py."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_corpus import (
    Case,
    build_corpus,
    denied,
    drop_dac_command,
    millions_of_unclosed,
    phases,
    real_export,
    tables_readable,
)
from nsys_util import REPO

import nvtxsim.cli.main as cli

FORMATS = ("table", "csv", "json", "markdown", "html", "perfetto")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Case]:
    cases = build_corpus(tmp_path_factory.mktemp("hostile"))
    return {c.kind: c for c in cases}


def run_inprocess(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in this process: an uncaught exception fails the test (it would be a traceback)."""
    capsys.readouterr()
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def run_subprocess(*argv: str, prefix: tuple[str, ...] = (), timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nvtxsim", *argv], capture_output=True, text=True, timeout=timeout, env=env
    )


def assert_one_line_error(rc: int, out: str, err: str, needle: str = "") -> None:
    assert rc == 2, (rc, err[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nvtxsim: error: "), err[-2000:]
    assert needle.lower() in lines[0].lower(), (needle, lines[0])
    assert "Traceback" not in err and out == ""


def leftovers(directory: Path) -> list[str]:
    """Temporary or journal files a report must never leave behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith((".tmp", "-journal", "-wal", "-shm")))


def digest(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


CASE_KINDS = [
    "real_seed",
    "random_bytes",
    "empty_file",
    "text_file",
    "truncated_half",
    "truncated_header",
    "truncated_to_30_bytes",
    "header_then_garbage",
    "flipped_bits_0",
    "flipped_bits_1",
    "flipped_bits_2",
    "flipped_bits_3",
    "zeroed_pages_0",
    "zeroed_pages_1",
    "zeroed_pages_2",
    "corrupt_schema_page",
    "bad_page_size_field",
    "header_claims_more_pages",
    "sqlite_not_nsys",
    "wrong_columns",
    "wrong_value_types",
    "nulls",
    "negative_reversed_impossible_times",
    "huge_empty_non_utf8_names",
    "control_and_markup_names",
    "hostile_names_everywhere",
    "rowid_column_and_repeated_event_id",
    "only_domain_rows",
    "dangling_and_duplicate_string_ids",
    "endless_view",
    "without_rowid",
    "cuda_tables_impossible_values",
    "gpu_work_without_ranges",
    "gzip_corrupt_stream",
    "gzip_random_bytes",
    "gzip_truncated",
    "uri_characters_in_path",
    "directory",
    "missing_file",
    "dangling_symlink",
    "symlink_loop",
    "fifo",
    "fifo_gz",
    "dev_null",
    "existing_output",
    "output_in_missing_dir",
    "output_is_directory",
    "output_is_input_hardlink",
    "bad_input_with_output",
    "output_dev_full",
    "output_symlink_to_existing",
    "output_name_too_long",
]


def test_corpus_has_at_least_15_kinds(corpus):
    assert len(corpus) >= 15
    kinds = {k if isinstance(k, str) else k.values[0] for k in CASE_KINDS}
    assert kinds - {"fifo", "fifo_gz"} <= set(corpus)


@pytest.fixture(scope="module")
def seed_report(tmp_path_factory) -> dict:
    """The JSON report of the uncorrupted real export the random corruptions start from."""
    path = real_export(tmp_path_factory.mktemp("seed") / "seed.sqlite")
    out = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(path), "-f", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("kind", CASE_KINDS)
def test_hostile_case(corpus, capsys, seed_report, kind):
    case = corpus.get(kind)
    if case is None:
        pytest.skip(f"{kind} cannot be built on this platform")
    before_input = digest(case.path) if case.path.is_file() and not case.path.is_symlink() else None
    before_output = digest(case.output) if case.output is not None and case.output.exists() else None
    expect = case.expect
    if expect == "either":  # random corruption: sqlite3's own read of the tables decides
        expect = "report" if tables_readable(case.path) else "error"
    if expect == "report":
        rc, out, err = run_inprocess(capsys, "report", str(case.path), "-f", "json", *case.args)
        assert rc == 0, f"{kind}: expected a report, got: {err.strip()}"
        rep = json.loads(out)
        if case.check is not None:
            case.check(rep)
        if case.expect == "either":  # the corruption missed every table a report reads: the seed's report
            assert phases(rep) == phases(seed_report), kind
        for fmt in FORMATS:  # every renderer survives the same data
            rc, out, err = run_inprocess(capsys, "report", str(case.path), "-f", fmt, *case.args)
            assert rc == 0 and out, (fmt, err)
    else:
        rc, out, err = run_inprocess(capsys, "report", str(case.path), *case.args)
        assert_one_line_error(rc, out, err, case.needle)
    if before_input is not None:
        assert digest(case.path) == before_input, "reading changed the input"
    if case.output is not None:
        assert (digest(case.output) if case.output.exists() else None) == before_output
    parent = case.path.parent if case.path.parent != Path(os.devnull).parent else None
    if parent is not None:
        assert leftovers(parent) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["random_bytes", "fifo", "truncated_half", "existing_output", "endless_view"])
def test_hostile_case_in_a_real_process(corpus, kind):
    """The same contract seen from outside: exit code 2, one line on stderr, no traceback, no hang."""
    case = corpus.get(kind)
    if case is None:
        pytest.skip(f"{kind} cannot be built on this platform")
    proc = run_subprocess("report", str(case.path), *case.args)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, case.needle)


def test_unreadable_file(tmp_path):
    """A file the user may not read. As root, file modes do not apply (CAP_DAC_OVERRIDE), so the
    CLI runs with those capabilities dropped (setpriv); a plain user just gets the chmod."""
    path = real_export(tmp_path / "secret.sqlite")
    path.chmod(0)
    prefix = drop_dac_command()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make a file unreadable to root")
    try:
        if prefix and not denied(prefix, path, "rb"):
            pytest.skip("dropping capabilities did not make the file unreadable here")
        proc = run_subprocess("report", str(path), prefix=tuple(prefix))
        assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "cannot read")
        assert "Permission denied" in proc.stderr
        # .gz goes through another code path
        gz = tmp_path / "secret.sqlite.gz"
        gz.write_bytes(b"\x1f\x8b" + b"\x00" * 100)
        gz.chmod(0)
        proc = run_subprocess("report", str(gz), prefix=tuple(prefix))
        assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "gzip")
    finally:
        path.chmod(0o600)


def test_root_is_not_stopped_by_file_modes(tmp_path):
    """Documents why the test above drops capabilities: as root, mode 000 is still readable."""
    if os.geteuid() != 0:
        pytest.skip("only meaningful as root")
    path = real_export(tmp_path / "secret.sqlite")
    path.chmod(0)
    proc = run_subprocess("report", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "iteration" in proc.stdout


def test_unwritable_output_directory(tmp_path):
    """-o into a directory the user may not write: one-line error before any work, nothing written."""
    prefix = drop_dac_command()
    if prefix is None:
        pytest.skip("running as root without setpriv")
    src = real_export(tmp_path / "in.sqlite")
    outdir = tmp_path / "ro"
    outdir.mkdir()
    outdir.chmod(0o555)
    try:
        if prefix and not denied(prefix, outdir / "probe", "xb"):  # the scene first, then the assertion
            pytest.skip("dropping capabilities did not make the folder unwritable here")
        proc = run_subprocess("report", str(src), "-o", str(outdir / "r.csv"), prefix=tuple(prefix))
        assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "not writable")
        assert list(outdir.iterdir()) == []
    finally:
        outdir.chmod(0o755)


@pytest.mark.slow
def test_millions_of_unclosed_ranges(tmp_path, capsys):
    """Two million ranges that never ended (generated in SQL): a correct report, flagged."""
    n = 2_000_000
    path = millions_of_unclosed(tmp_path / "open.sqlite", n)
    rc, out, err = run_inprocess(capsys, "report", str(path), "-f", "json")
    assert rc == 0, err
    rep = json.loads(out)
    p = phases(rep)["nvtxsim:iteration"]
    assert p["instances"] == n and p["unclosed"] == n and p["threads"] == 4
    # Every range ends at the table's largest timestamp: start 1 + 3 * (n - 1).
    last = 1 + 3 * (n - 1)
    assert p["cpu_max_ns"] == last - 1 and p["cpu_min_ns"] == 0
    assert p["cpu_total_ns"] == sum(last - (1 + 3 * x) for x in range(n))
    assert any(f"{n} range(s) never ended" in w for w in rep["warnings"])


def test_control_characters_do_not_reach_the_terminal(corpus, capsys):
    """A name with ESC sequences must not recolour or retitle the user's terminal."""
    rc, out, err = run_inprocess(capsys, "report", str(corpus["control_and_markup_names"].path))
    assert rc == 0, err
    assert "\x1b" not in out
