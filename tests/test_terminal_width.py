"""Terminal tables at 80/100/120 columns, rendered by the CLI in a real pty (``script``).

Every line fits the terminal, every shown number is whole, names are whole or shortened
in the middle with an ellipsis, and the left-out columns are named.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nvtxsim.analysis.selection import Selection
from nvtxsim.export.reader import load
from nvtxsim.reporting.options import views as parse_views
from nvtxsim.reporting.renderers import terminal
from nvtxsim.reporting.views import ViewOptions, build
from nvtxsim.reporting.viewtable import Column, ViewTable, cell

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "data" / "gpu" / "demo_h200.sqlite.gz"
WIDTHS = (80, 100, 120)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
needs_script = pytest.mark.skipif(
    shutil.which("script") is None or sys.platform != "linux", reason="needs util-linux script for a pty"
)


def _cells(t: ViewTable) -> list[list[str]]:
    """The table's display text, cell by cell (what any renderer shows before fitting)."""
    return [[cell(c, r) for c in t.columns] for r in t.rows]


def tty(args: list[str], width: int, tmp_path: Path) -> str:
    """``nvtxsim ARGS`` on a pty ``width`` columns wide (stderr to a file: no progress display)."""
    cmd = f"stty cols {width} rows 60; {shlex.join([sys.executable, '-m', 'nvtxsim', *args])} 2>{shlex.quote(str(tmp_path / 'err'))}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode in (0, 1), (r.returncode, (tmp_path / "err").read_text())
    return ANSI.sub("", r.stdout).replace("\r", "")


def assert_fits(text: str, width: int) -> None:
    """No line wider than ``width`` in cells, nor in bytes for a one-cell symbol (µ, ·, …: what awk counts)."""
    wide = [ln for ln in text.splitlines() if terminal.line_width(ln) > width]
    assert not wide, f"lines wider than {width}:\n" + "\n".join(wide)


def _token(line: str, pos: int) -> tuple[str, int]:
    """The cell text starting at ``pos`` (leading spaces skipped, up to two spaces or the end)."""
    while pos < len(line) and line[pos] == " ":
        pos += 1
    end = line.find("  ", pos)
    end = len(line) if end < 0 else end
    return line[pos:end], end


def assert_table_whole(lines: list[str], start: int, t: ViewTable, rows: list[list[str]]) -> int:
    """Find ``t``'s header at or after line ``start``; check its rows cell by cell; return the line after it."""
    heads = [c.header for c in t.columns]
    prefixed = {c.header: i for i, c in enumerate(t.columns) if c.shared_prefix}
    # A column of one value in every row ("once") is said on a line above the table: "Thread: main (740)".
    once = {i for i, c in enumerate(t.columns) if c.once and len(rows) > 1 and len({r[i] for r in rows}) == 1}
    first = next(h for i, h in enumerate(heads) if i not in once)

    def plain(h: str) -> str:  # "Phase (nvtxsim)": a shared prefix written once in its header
        base = h.split(" (", 1)[0]
        return base if base in prefixed and h.endswith(")") else h

    for k in range(start, len(lines)):
        shown = re.split(r"\s{2,}", lines[k].strip())
        if len(shown) >= 2 and all(plain(h) in heads for h in shown) and plain(shown[0]) == first:
            break
    else:
        raise AssertionError(f"no header line of {t.name!r} after line {start}")
    for i in once:
        assert lines[k - 1] == f"{heads[i]}: {terminal.one_line(rows[0][i])}" or lines[k - 1].startswith("  "), lines[
            k - 1
        ]
    rows = [list(r) for r in rows]
    for h in shown:
        if plain(h) != h:
            i = prefixed[plain(h)]
            prefix = h[len(plain(h)) + 2 : -1] + (t.columns[i].shared_prefix or "")
            assert all(r[i].lstrip(" ").startswith(prefix) for r in rows), (prefix, [r[i] for r in rows])
            for r in rows:  # a tree cell: the prefix after its indentation
                body = r[i].lstrip(" ")
                r[i] = r[i][: len(r[i]) - len(body)] + body[len(prefix) :]
    shown = [plain(h) for h in shown]
    shown_idx, j = [], 0
    for h in shown:  # headers repeat (compare's two "CI"): match in order
        j = heads.index(h, j)
        shown_idx.append(j)
        j += 1
    empty = {i for i, c in enumerate(t.columns) if c.drop_if_empty and all(str(r[i]) in ("", "0") for r in rows)}
    # Sentences with no room beside the numbers stand on their own lines under their row ("  Advice: ...").
    stacked = [i for i, c in enumerate(t.columns) if c.prose and i not in shown_idx]
    left_out = [heads[i] for i in range(len(heads)) if i not in set(shown_idx) | empty | once | set(stacked)]
    row_lines, at = [], k + 1
    for row in rows:
        row_lines.append(lines[at])
        at += 1
        for i in stacked:
            if row[i]:
                said = lines[at]
                assert said.startswith(f"  {heads[i]}: "), (said, heads[i])
                at += 1
                while at < len(lines) and lines[at].startswith("    "):
                    said += " " + lines[at].strip()
                    at += 1
                assert terminal.one_line(row[i]).startswith(said[len(heads[i]) + 4 :].rstrip("…")[:20]), (said, row[i])
    after = at
    if left_out:
        said = lines[after] + "".join(" " + ln.strip() for ln in lines[after + 1 : after + 3] if ln.startswith("  "))
        assert said.startswith("left out: ") and "--wide" in said, said
        assert said[len("left out: ") :].startswith(", ".join(left_out)), (said, left_out)
    for line, row in zip(row_lines, rows):
        pos = 0
        for i in shown_idx:
            col, want = t.columns[i], terminal.one_line(row[i])
            if col.text:
                got, pos = _token(line, pos)
                want = want.strip()
                if got != want:
                    head, _, tail = got.partition(terminal.ELLIPSIS)
                    assert terminal.ELLIPSIS in got and want.startswith(head) and want.endswith(tail), (got, want, line)
            elif want:
                at = line.find(want, pos)
                assert (
                    at >= 0
                    and (at == 0 or line[at - 1] == " ")
                    and line[at + len(want) : at + len(want) + 1] in ("", " ")
                ), (want, line)
                pos = at + len(want)
    return after


def _summary_table(detail: Selection) -> ViewTable:
    return build(detail, ["summary"])[0]


@pytest.fixture(scope="module")
def demo_tables() -> list[ViewTable]:
    detail = Selection(load(DEMO), domain="nvtxsim")
    return build(detail, parse_views("all"), ViewOptions())


@needs_script
@pytest.mark.parametrize("width", WIDTHS)
def test_every_view_fits_and_nothing_is_cut(width: int, demo_tables: list[ViewTable], tmp_path: Path) -> None:
    text = tty(["report", str(DEMO), "--view", "all"], width, tmp_path)
    assert_fits(text, width)
    lines = text.splitlines()
    at = 0
    for t in demo_tables:
        if t.rows:
            at = assert_table_whole(lines, at, t, _cells(t))
    assert "sim_step" in text


@needs_script
@pytest.mark.parametrize("width", WIDTHS)
def test_default_summary_fits_with_names(width: int, demo_tables: list[ViewTable], tmp_path: Path) -> None:
    text = tty(["report", str(DEMO)], width, tmp_path)
    assert_fits(text, width)
    assert all(len(ln.encode()) <= width for ln in text.splitlines())  # ASCII names: bytes as `awk length` counts
    assert_table_whole(text.splitlines(), 0, demo_tables[0], _cells(demo_tables[0]))
    lines = text.splitlines()
    assert any(line.startswith("Phase (nvtxsim)") for line in lines)  # the shared domain, written once
    for name in ("sim_step", "policy_update", "camera_readout"):  # each row keeps its whole name
        assert any(line.split()[:1] == [name] for line in lines), name


@needs_script
def test_wide_shows_every_column(tmp_path: Path) -> None:
    text = tty(["report", str(DEMO), "--wide"], 80, tmp_path)
    assert "left out" not in text and "D→H" in text and "proj median" in text


@needs_script
@pytest.mark.parametrize("width", WIDTHS)
def test_compare_fits(width: int, tmp_path: Path) -> None:
    from nvtxsim.analysis.compare import CompareSettings, compare
    from nvtxsim.reporting.compare import comparison_table

    other = ROOT / "tests" / "data" / "gpu" / "demo_h200_threads_graph.sqlite.gz"
    text = tty(["compare", str(DEMO), str(other)], width, tmp_path)
    assert_fits(text, width)
    t = comparison_table(
        compare(Selection(load(DEMO), domain="nvtxsim"), Selection(load(other), domain="nvtxsim"), CompareSettings())
    )
    assert_table_whole(text.splitlines(), 0, t, _cells(t))


EMIT_NVTX_NAME = (
    "{'op': 'aten::addmm',\n 'sizes': [[4096, 512], [512, 1024]],\n\t'input_op_ids': [(12, 0), (13, 0), (14, 0)], 'seq': 1234567}"
    * 3
)


@pytest.fixture()
def long_names(tmp_path: Path) -> Path:
    from tests.synth import make_export

    path = tmp_path / "long.sqlite"
    make_export(path, 3)
    con = sqlite3.connect(path)
    con.execute("UPDATE StringIds SET value = ? WHERE value = 'render'", (EMIT_NVTX_NAME,))
    con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = 'render'", (EMIT_NVTX_NAME,))
    con.commit()
    con.close()
    return path


@needs_script
@pytest.mark.parametrize("width", (80, 200))
def test_multiline_names_on_one_line(width: int, long_names: Path, tmp_path: Path) -> None:
    text = tty(["report", str(long_names), "--domain", "all", "--view", "summary,tree,kernels"], width, tmp_path)
    assert_fits(text, width)
    assert "{'op': 'aten::a" in text and terminal.ELLIPSIS in text and "\\x0a" not in text
    detail = Selection(load(long_names), domain=None)
    at = 0
    for t in build(detail, ["summary", "tree", "kernels"]):
        if t.rows:
            at = assert_table_whole(text.splitlines(), at, t, _cells(t))


def test_pipe_output_is_whole(long_names: Path) -> None:
    """Without a terminal nothing is fitted: the whole (escaped) name is in the table."""
    from nvtxsim.reporting.escaping import printable
    from nvtxsim.reporting.pipeline import render, report

    text = render(report(long_names, domain="all", findings=False), "table")
    assert printable(EMIT_NVTX_NAME) in text and "left out:" not in text


def test_fit_helpers() -> None:
    assert terminal.shorten_middle("abcdefghij", 5) == "ab…ij"
    assert terminal.shorten_middle("abc", 5) == "abc"
    assert terminal.cell_width("漢字") == 4 and terminal.cell_width(terminal.shorten_middle("漢字漢字漢字", 7)) <= 7
    assert terminal.one_line("a\n  b\tc") == "a b c"
    cols = [Column("phase", "Phase"), Column("n", "N", "int"), Column("t", "total", "ns")]
    out = terminal.render(cols, [["x" * 50, "1,234", "5.00 ms"]], heading=["h"], width=30)
    assert_fits(out, 30)
    assert "1,234" in out and "…" in out
    for width in range(20, 60):
        out = terminal.render(
            cols,
            [["y" * 80, "123,456,789", "1.234 s"]],
            heading=terminal.fit_parts(["p" * 100, "q"], width),
            width=width,
        )
        assert_fits(out, width)


@needs_script
def test_ranks_fit(tmp_path: Path) -> None:
    other = ROOT / "tests" / "data" / "gpu" / "demo_h200_threads_graph.sqlite.gz"
    text = tty(["report", str(DEMO), str(other), "-j", "1"], 80, tmp_path)
    assert_fits(text, 80)
    assert "all 2 ranks merged" in text and "nvtxsim:sim_step" in text and "left out: " in text
