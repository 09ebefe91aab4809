"""Capture stage, unit level: nsys discovery, the `nsys profile` command line, output names, SQLite conversion."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nvtxsim.capture import nsys as capture
from nvtxsim.emit.window import Window
from nvtxsim.errors import NvtxsimError

ALL_SWITCHES = frozenset(
    {
        "trace",
        "sample",
        "cpuctxsw",
        "cuda-graph-trace",
        "capture-range",
        "capture-range-end",
        "nvtx-capture",
        "export",
        "output",
        "force-overwrite",
    }
)


def fake_nsys(path: Path, version: str = "2022.4.2.1-df9881f") -> Path:
    """A stand-in executable that answers `--version` like nsys (discovery logic only)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'NVIDIA Nsight Systems version {version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def nsys(switches: frozenset[str] = ALL_SWITCHES, version: str = "2022.4.2.1") -> capture.Nsys:
    n = capture.Nsys(Path("/opt/nsys"), version, "PATH")
    n._switches["profile"] = switches
    return n


def req(**kw) -> capture.ProfileRequest:
    kw.setdefault("command", ["python", "train.py"])
    kw.setdefault("output", Path("out/run"))
    return capture.ProfileRequest(**kw)


# --------------------------------------------------------------------------- command


def test_default_command():
    argv = capture.build_profile_command(nsys(), req())
    assert argv == [
        "/opt/nsys",
        "profile",
        "--trace=cuda,nvtx,osrt",
        "--sample=none",
        "--cpuctxsw=none",
        "--cuda-graph-trace=node",
        "--export=sqlite",
        "--output=out/run",
        "python",
        "train.py",
    ]


def test_user_command_passes_through_untouched():
    cmd = ["python", "-c", "import sys; print(sys.argv)", "a b", "--", "$HOME", "*", "'q'", "-o", "x"]
    argv = capture.build_profile_command(nsys(), req(command=cmd))
    assert argv[-len(cmd) :] == cmd


def test_force_overwrite_only_when_asked():
    assert not any(a.startswith("--force-overwrite") for a in capture.build_profile_command(nsys(), req()))
    assert "--force-overwrite=true" in capture.build_profile_command(nsys(), req(force=True))


def test_nvtx_window_flags():
    argv = capture.build_profile_command(nsys(), req(window=Window(5, 10)))
    assert "--capture-range=nvtx" in argv
    assert "--nvtx-capture=capture_window@nvtxsim_window" in argv
    assert "--capture-range-end=stop" in argv  # the default (stop-shutdown) would kill the program
    env = capture.profile_env(req(window=Window(5, 10)), base={"A": "1"})
    assert env == {"A": "1", "NVTXSIM_ITERATIONS": "5:10", "NVTXSIM_WINDOW_API": "nvtx"}


def test_cuda_window_flags():
    argv = capture.build_profile_command(nsys(), req(window=Window(5, None), window_api="cuda"))
    assert "--capture-range=cudaProfilerApi" in argv and not any(a.startswith("--nvtx-capture") for a in argv)
    with pytest.raises(NvtxsimError, match="needs cuda"):
        capture.build_profile_command(nsys(), req(window=Window(1, 2), window_api="cuda", trace=("nvtx",)))


def test_no_window_clears_inherited_window_variables():
    env = capture.profile_env(req(), base={"NVTXSIM_ITERATIONS": "1:2", "NVTXSIM_WINDOW_API": "nvtx", "B": "2"})
    assert env == {"B": "2"}


def test_switches_this_nsys_lacks_are_left_out():
    argv = capture.build_profile_command(
        nsys(ALL_SWITCHES - {"cuda-graph-trace", "capture-range-end"}), req(window=Window(0, 1))
    )
    assert not any(a.startswith(("--cuda-graph-trace", "--capture-range-end")) for a in argv)
    assert not any(
        a.startswith("--cuda-graph-trace") for a in capture.build_profile_command(nsys(), req(trace=("nvtx", "osrt")))
    )


def test_nsys_arg_replaces_our_setting():
    argv = capture.build_profile_command(nsys(), req(nsys_args=["--sample=process-tree", "-t", "nvtx,cuda"]))
    assert "--sample=none" not in argv and not any(a.startswith("--trace=") for a in argv)
    assert "--cpuctxsw=none" in argv
    i = argv.index("--sample=process-tree")
    assert argv[i : i + 3] == ["--sample=process-tree", "-t", "nvtx,cuda"]
    assert argv.index("--sample=process-tree") < argv.index("python")


@pytest.mark.parametrize("arg", ["-o", "--output=x", "-f", "--force-overwrite=true"])
def test_nsys_arg_cannot_take_the_output(arg):
    with pytest.raises(NvtxsimError, match="nvtxsim profile"):
        capture.build_profile_command(nsys(), req(nsys_args=[arg]))


def test_empty_command_is_an_error():
    with pytest.raises(NvtxsimError, match="no command"):
        capture.build_profile_command(nsys(), req(command=[]))


@pytest.mark.parametrize(
    "text,expected",
    [
        ("nvtx,osrt", ("nvtx", "osrt")),
        (" cuda , nvtx ", ("cuda", "nvtx")),
        ("cuda,nvtx,osrt,cublas", ("cuda", "nvtx", "osrt", "cublas")),
    ],
)
def test_parse_trace(text, expected):
    assert capture.parse_trace(text) == expected


@pytest.mark.parametrize("text", ["", "cuda,osrt", "none"])
def test_parse_trace_rejects(text):
    with pytest.raises(NvtxsimError):
        capture.parse_trace(text)


# --------------------------------------------------------------------------- output names


@pytest.mark.parametrize(
    "name,stem", [("run", "run"), ("a/run.nsys-rep", "a/run"), ("run.sqlite", "run"), ("run.v1", "run.v1")]
)
def test_output_stem(name, stem):
    assert capture.output_stem(name) == Path(stem)


@pytest.mark.parametrize("name", ["run_%p", "dir/"])
def test_output_stem_rejects(name):
    with pytest.raises(NvtxsimError):
        capture.output_stem(name)


def test_existing_output_needs_force(tmp_path):
    stem = tmp_path / "run"
    capture.check_outputs(stem, force=False)
    (tmp_path / "run.sqlite").write_text("keep")
    with pytest.raises(NvtxsimError, match="already exists.*--force"):
        capture.check_outputs(stem, force=False)
    capture.check_outputs(stem, force=True)
    assert (tmp_path / "run.sqlite").read_text() == "keep"
    capture.check_outputs(tmp_path / "missing" / "dir" / "run", force=False)  # made by run_profile
    assert not (tmp_path / "missing").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(NvtxsimError, match="not a directory"):
        capture.check_outputs(tmp_path / "file" / "dir" / "run", force=True)


def test_profile_makes_the_output_folder(tmp_path):
    """-o runs/train (the docs' first example) in a fresh folder: nsys 2022.4 would write into /tmp."""
    n = nsys()
    n.path = fake_nsys(tmp_path / "bin" / "nsys")
    capture.run_profile(n, req(output=tmp_path / "runs" / "a" / "train", command=["true"]), timeout=60)
    assert (tmp_path / "runs" / "a").is_dir()


def test_default_output_skips_taken_names(tmp_path):
    assert capture.default_output(tmp_path) == tmp_path / "nvtxsim-1"
    (tmp_path / "nvtxsim-1.nsys-rep").write_text("")
    (tmp_path / "nvtxsim-2.sqlite").write_text("")
    assert capture.default_output(tmp_path) == tmp_path / "nvtxsim-3"


def test_exit_status_of_signalled_process():
    assert capture.exit_status(3) == 3 and capture.exit_status(-9) == 137


# --------------------------------------------------------------------------- discovery


@pytest.fixture
def no_nsys(monkeypatch, tmp_path):
    """An environment where no real nsys can be found: empty PATH, no $NSYS, no install folders."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setattr(capture, "INSTALL_GLOBS", ())
    return empty


def test_nsys_from_env_variable(no_nsys, tmp_path):
    fake = fake_nsys(tmp_path / "x" / "nsys", "2025.3.1.90-253135822126v0")
    found = capture.find_nsys({"NSYS": str(fake), "PATH": str(no_nsys)})
    assert (found.path, found.version_text, found.source) == (fake, "2025.3.1.90", "$NSYS")
    assert found.version == (2025, 3, 1, 90)


def test_nsys_env_variable_wins_over_path(no_nsys, tmp_path):
    on_path = fake_nsys(no_nsys / "nsys", "2022.4.2.1")
    explicit = fake_nsys(tmp_path / "x" / "nsys", "2025.3.1.90")
    assert capture.find_nsys({"PATH": str(no_nsys)}).path == on_path
    assert capture.find_nsys({"PATH": str(no_nsys), "NSYS": str(explicit)}).path == explicit


def test_bad_nsys_env_variable_is_a_clear_error(no_nsys, tmp_path):
    with pytest.raises(NvtxsimError, match="NSYS=.*not an executable"):
        capture.find_nsys({"NSYS": str(tmp_path / "nope"), "PATH": str(no_nsys)})


def test_install_folders_newest_first(no_nsys, tmp_path, monkeypatch):
    for v in ("2024.6.1", "2025.3.1", "2024.10.2"):
        fake_nsys(tmp_path / "opt" / "nsight-systems" / v / "bin" / "nsys", v)
    ncu = fake_nsys(tmp_path / "opt" / "nsight-compute" / "2025.3.0" / "host" / "target-linux-x64" / "nsys", "2025.3.0")
    monkeypatch.setattr(
        capture,
        "INSTALL_GLOBS",
        (
            str(tmp_path / "opt" / "nsight-systems" / "*" / "bin" / "nsys"),
            str(tmp_path / "opt" / "nsight-compute" / "*" / "host" / "target-linux-x64" / "nsys"),
        ),
    )
    env = {"PATH": str(no_nsys)}
    found = capture.find_nsys(env)
    assert found.version_text == "2025.3.1" and found.source == "install folder"
    listed = [n.version_text for n in capture.list_nsys(env)]
    assert listed == ["2025.3.1", "2024.10.2", "2024.6.1", "2025.3.0"]
    assert capture.nsys_candidates(env)[-1][0] == ncu


def test_no_nsys_anywhere(no_nsys):
    with pytest.raises(NvtxsimError, match="nsys .*not found.*NSYS="):
        capture.find_nsys({"PATH": str(no_nsys)})


def test_broken_nsys_on_path_is_skipped(no_nsys):
    broken = no_nsys / "nsys"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(NvtxsimError, match="did not run"):
        capture.find_nsys({"PATH": str(no_nsys)})


# --------------------------------------------------------------------------- ensure_sqlite


def test_ensure_sqlite_passes_sqlite_through(tmp_path):
    p = tmp_path / "run.sqlite"
    assert capture.ensure_sqlite(p) == p


def test_ensure_sqlite_without_nsys_says_so(no_nsys, tmp_path):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"x")
    with pytest.raises(NvtxsimError, match="needs nsys"):
        capture.ensure_sqlite(rep)
    assert not (tmp_path / "run.sqlite").exists()


def test_ensure_sqlite_reuses_fresh_and_refuses_stale_export(tmp_path):
    rep, sql = tmp_path / "run.nsys-rep", tmp_path / "run.sqlite"
    rep.write_bytes(b"x")
    sql.write_bytes(b"old")
    os.utime(sql, (rep.stat().st_mtime + 10,) * 2)
    assert capture.ensure_sqlite(rep) == sql  # no nsys needed: the export is newer
    os.utime(sql, (rep.stat().st_mtime - 10,) * 2)
    with pytest.raises(NvtxsimError, match="older than"):
        capture.ensure_sqlite(rep)
    assert sql.read_bytes() == b"old"


def test_ensure_sqlite_missing_report(tmp_path):
    with pytest.raises(NvtxsimError, match="no such file"):
        capture.ensure_sqlite(tmp_path / "none.nsys-rep")


def test_export_failure_with_undecodable_output_is_one_clean_error(tmp_path):
    """nsys may echo bytes of a corrupt report: its output is decoded leniently, never a UnicodeDecodeError."""
    exe = tmp_path / "nsys"
    exe.write_bytes(b"#!/bin/sh\nprintf 'bad \\363\\377 header\\n' >&2\nexit 1\n")
    exe.chmod(0o755)
    n = capture.Nsys(exe, "2022.4.2.1", "PATH")
    n._switches["export"] = frozenset({"type", "output"})
    report = tmp_path / "r.nsys-rep"
    report.write_bytes(b"\xf3" * 100)
    with pytest.raises(NvtxsimError, match="nsys export to SQLite failed: bad .* header"):
        capture.export_sqlite(n, report, tmp_path / "r.sqlite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nsys", "r.nsys-rep"]
