"""Bad input to `nvtxsim report`: one line on stderr, exit code 2, no traceback, no file touched."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from committed import committed
from synth import make_export


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def assert_clean_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("nvtxsim: error: ") and needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.fixture
def good_export(tmp_path: Path) -> Path:
    path = tmp_path / "good.sqlite"
    make_export(path, 11)
    return path


def test_missing_file(tmp_path):
    assert_clean_error(run_cli("report", str(tmp_path / "nope.sqlite")), "no such file")


def test_not_sqlite(tmp_path):
    p = tmp_path / "x.sqlite"
    p.write_bytes(b"this is not a database\n" * 100)
    assert_clean_error(run_cli("report", str(p)), "not an SQLite file")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.sqlite"
    p.touch()
    assert_clean_error(run_cli("report", str(p)), "empty file")


def test_truncated_export(tmp_path, good_export):
    data = good_export.read_bytes()
    p = tmp_path / "cut.sqlite"
    p.write_bytes(data[: len(data) // 2])
    assert_clean_error(run_cli("report", str(p)), "truncated")


def test_directory(tmp_path):
    assert_clean_error(run_cli("report", str(tmp_path)), "directory")


def test_export_without_nvtx_table(tmp_path):
    p = tmp_path / "nonvtx.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.commit()
    con.close()
    assert_clean_error(run_cli("report", str(p)), "no NVTX_EVENTS table")


def test_existing_output_needs_force(tmp_path, good_export):
    out = tmp_path / "report.csv"
    out.write_text("precious\n")
    assert_clean_error(run_cli("report", str(good_export), "-f", "csv", "-o", str(out)), "already exists")
    assert out.read_text() == "precious\n"
    proc = run_cli("report", str(good_export), "-f", "csv", "-o", str(out), "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("domain,name,instances,")


def test_output_over_input_refused(good_export):
    before = good_export.read_bytes()
    assert_clean_error(run_cli("report", str(good_export), "-o", str(good_export), "--force"), "input file")
    assert good_export.read_bytes() == before


def test_reading_never_modifies_export(good_export):
    before = (good_export.read_bytes(), os.stat(good_export).st_mtime_ns)
    for fmt in ("table", "csv", "json", "markdown"):
        proc = run_cli("report", str(good_export), "-f", fmt, "--domain", "all")
        assert proc.returncode == 0, proc.stderr
        assert "nvtxsim:iteration" in proc.stdout or "iteration" in proc.stdout
    assert (good_export.read_bytes(), os.stat(good_export).st_mtime_ns) == before
    assert not list(good_export.parent.glob("*-journal")) and not list(good_export.parent.glob("*-wal"))


def test_unknown_domain_is_an_error_listing_the_domains(good_export):
    proc = run_cli("report", str(good_export), "--domain", "nope")
    assert proc.returncode == 2 and not proc.stdout
    assert "no ranges in domain 'nope'; domains in this export: default, nvtxsim" in proc.stderr


def test_names_with_markup_characters_are_printed_verbatim(tmp_path):
    """Phase names are data: '[/World/envs/env_.*/Camera]' must not be read as rich markup."""
    path = tmp_path / "brackets.sqlite"
    make_export(path, 3)
    con = sqlite3.connect(path)
    weird = "sensor[/World/envs/env_.*/Camera] [bold]x[/bold]"
    con.execute("UPDATE StringIds SET value = ? WHERE value = 'render'", (weird,))
    con.commit()
    con.close()
    for args in ([], ["--view", "tree"], ["--view", "kernels"]):
        proc = run_cli("report", str(path), "--domain", "all", *args)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    proc = run_cli("report", str(path), "--domain", "all")
    assert weird in proc.stdout


def test_output_follows_umask(tmp_path, good_export):
    out = tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        proc = run_cli("report", str(good_export), "-f", "json", "-o", str(out))
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_mode & 0o777 == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.json")]  # no temporary left


def test_unexpected_bug_is_one_line(monkeypatch, capsys):
    """Even a bug of ours never shows a traceback (unless NVTXSIM_DEBUG asks for it)."""
    import nvtxsim.cli.commands.report as report_cmd
    from nvtxsim.cli.main import main

    def broken(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(report_cmd, "run_report", broken)
    monkeypatch.delenv("NVTXSIM_DEBUG", raising=False)
    assert main(["report", "whatever.sqlite"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nvtxsim: internal error: ZeroDivisionError: boom")


def test_output_to_a_device_writes_into_it(good_export):
    """`-o /dev/null --force` once replaced /dev/null with a regular file (rename over it as root)."""
    before = os.stat("/dev/null")
    proc = run_cli("report", str(good_export), "-f", "json", "-o", "/dev/null", "--force")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("report", str(good_export), "-f", "csv", "-o", "/dev/null")  # no --force needed for a device
    assert proc.returncode == 0, proc.stderr
    after = os.stat("/dev/null")
    import stat as st

    assert st.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


@pytest.mark.parametrize(
    "argv, usage, hint",
    [
        (["report", "x.sqlite", "--views", "tree"], "usage: nvtxsim report", "did you mean --view?"),
        (["compare", "a", "b", "--fial-above", "3"], "usage: nvtxsim compare", "did you mean --fail-above?"),
        (["profile", "--bogus", "--", "true"], "usage: nvtxsim profile", "unrecognized arguments: --bogus"),
    ],
)
def test_mistyped_option_shows_the_commands_usage(argv, usage, hint):
    proc = run_cli(*argv)
    assert proc.returncode == 2 and usage in proc.stderr and hint in proc.stderr
    assert "COMMAND ..." not in proc.stderr


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["reprot", "run.sqlite"], "unknown command 'reprot' (did you mean report?)"),
        (["run.sqlite"], "to report on an export: nvtxsim report run.sqlite"),
        (["frobnicate"], "commands: report, compare"),
    ],
)
def test_unknown_command_one_line(argv, needle):
    p = run_cli(*argv)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert (
        p.stderr.startswith("usage: nvtxsim ")
        and last.startswith("nvtxsim: error: unknown command ")
        and needle in last
    ), p.stderr


def test_export_without_ranges_says_so(tmp_path):
    """Marks only (or nothing): not 'the selected domain', which the user never selected."""
    path = tmp_path / "marks.sqlite"
    make_export(path, 3)
    con = sqlite3.connect(path)
    con.execute("UPDATE NVTX_EVENTS SET eventType = 34, end = NULL WHERE eventType IN (59, 60)")
    con.commit()
    con.close()
    p = run_cli("report", str(path))
    assert p.returncode == 0 and "no NVTX ranges in this export" in p.stdout, p.stdout + p.stderr
    assert_clean_error(
        run_cli("report", str(path), "--domain", "nvtxsim"),
        "no ranges in domain 'nvtxsim': this export holds no NVTX range in any domain",
    )


def test_by_absent_lists_a_few_names_on_one_short_line():
    """emit_nvtx exports hold hundreds of paragraph-long names: the error names a few, shortened, close ones first."""

    torch_export = committed("gpu/torch_nvtx_h200.sqlite.gz")
    p = run_cli("report", str(torch_export), "--by", "train")
    assert_clean_error(p, "--by 'train': no range of that name; phases present: train_step | ")
    assert len(p.stderr) < 400 and " more" in p.stderr


@pytest.mark.parametrize(
    "name, start",
    [("r.html", "<!DOCTYPE html>"), ("r.json", "{"), ("r.csv", "domain,name,"), ("r.md", "**"), ("r.txt", "")],
)
def test_output_name_picks_the_format(good_export, tmp_path, name, start):
    """-o report.html without --format writes the page, not a text table in a .html file."""
    out = tmp_path / name
    p = run_cli("report", str(good_export), "-o", str(out), "--no-findings")
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert text.startswith(start) and (name != "r.txt" or "Phase" in text)
    assert run_cli("report", str(good_export), "-o", str(tmp_path / "t.html"), "-f", "table").returncode == 0
    assert "Phase" in (tmp_path / "t.html").read_text()


def test_output_name_picks_the_format_for_compare(good_export, tmp_path):
    p = run_cli("compare", str(good_export), str(good_export), "-o", str(tmp_path / "c.html"))
    assert p.returncode in (0, 1) and (tmp_path / "c.html").read_text().startswith("<!DOCTYPE html>")


def test_live_on_something_else_is_an_error(good_export, tmp_path):
    """An export or a script given to `nvtxsim live`: one line and exit 2, not an empty table and exit 0."""
    assert_clean_error(run_cli("live", str(good_export)), "an nsys export, not a live-timing file: nvtxsim report")
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert_clean_error(run_cli("live", str(script)), "no live-timing window in its 1 line(s)")


def test_profile_of_a_missing_program_runs_nothing(tmp_path):
    """nsys itself would start, say 'Program not found' among its lines and exit 1."""
    assert_clean_error(
        run_cli("profile", "-o", str(tmp_path / "r"), "--", "no-such-program-xyz"),
        "no-such-program-xyz: command not found",
    )
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert_clean_error(
        run_cli("profile", "-o", str(tmp_path / "r"), "--", str(script)),
        f"not executable (nothing was run); e.g. -- python {script}",
    )
    assert not list(tmp_path.glob("r.*"))
