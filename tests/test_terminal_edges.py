"""Terminal output beyond the demo export: emoji glyphs, cut lines, TERM=dumb/NO_COLOR, inherited COLUMNS."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nvtxsim.reporting.renderers import terminal
from tests.test_terminal_width import DEMO, ROOT, assert_fits, needs_script

#: Names a terminal draws in fewer cells than their characters suggest (one glyph each), and CJK.
GLYPH_NAMES = {
    "❤️ heart": 8,  # VS16: the heart is drawn as a 2-cell emoji
    "👨‍👩‍👧 family": 9,  # zero width joiners: one glyph
    "👍🏽 thumbs": 9,  # skin tone modifier: one glyph
    "🇩🇪 flag": 7,  # two regional indicators: one flag
    "e\u0301cole": 5,  # combining accent
    "物理シミュレーション": 20,
}


def test_glyph_widths() -> None:
    for name, cells in GLYPH_NAMES.items():
        assert terminal.cell_width(name) == cells, name


def test_shortening_never_splits_a_glyph() -> None:
    joiners = ("\u200d", "\ufe0f", "\u0301") + tuple(chr(c) for c in range(0x1F3FB, 0x1F400))
    for name in GLYPH_NAMES:
        text = name * 3
        for cells in range(2, terminal.cell_width(text)):
            short = terminal.shorten_middle(text, cells)
            assert terminal.cell_width(short) <= cells, (short, cells)
            head, _, tail = short.partition(terminal.ELLIPSIS)
            assert text.startswith(head) and text.endswith(tail)
            assert not tail.startswith(joiners) and not short.startswith(joiners), (short, cells)
            # As much as fits: the head gets the odd cell, and one more glyph would not fit on either side.
            keep = cells - 1
            next_head = terminal._clusters(text[len(head) :])[0][0]
            next_tail = terminal._clusters(text[: len(text) - len(tail)])[-1][0]
            assert terminal.cell_width(head) <= keep - keep // 2 < terminal.cell_width(head + next_head), (short, cells)
            assert terminal.cell_width(tail) <= keep // 2 < terminal.cell_width(next_tail + tail), (short, cells)


@pytest.mark.parametrize("cells", range(2, 40))
def test_shortening_ascii_is_exact(cells: int) -> None:
    """ASCII names: exactly ``cells`` cells, the head one longer than the tail when they cannot be equal."""
    text = "nvtxsim:policy_update_with_a_long_name_0123456789"
    keep = cells - 1
    want = text[: keep - keep // 2] + terminal.ELLIPSIS + (text[-(keep // 2) :] if keep // 2 else "")
    assert terminal.shorten_middle(text, cells) == want
    assert terminal.cell_width(want) == cells
    assert terminal.shorten_middle(text, len(text)) == text


@pytest.fixture()
def glyph_export(tmp_path: Path) -> Path:
    from tests.synth import make_export

    path = tmp_path / "glyphs.sqlite"
    make_export(path, 5)
    con = sqlite3.connect(path)
    old = [r[0] for r in con.execute("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text IS NOT NULL ORDER BY text")]
    for name, new in zip(old, GLYPH_NAMES):
        con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (new, name))
        con.execute("UPDATE StringIds SET value = ? WHERE value = ?", (new, name))
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("width", (40, 60, 80, 200))
def test_glyph_names_fit_and_align(width: int, glyph_export: Path) -> None:
    """Every row's N column ends where the header's does, counted in terminal cells."""
    from nvtxsim.reporting.pipeline import render, report

    text = render(report(glyph_export, domain="all", findings=False), "table", width=width)
    assert_fits(text, width)
    lines = text.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("Phase "))
    end = terminal.cell_width(lines[header][: lines[header].index(" N ") + 2])
    rows = [ln for ln in lines[header + 1 :] if re.search(r"\s\d[\d,]*\s{2}", ln)]
    assert rows
    for ln in rows:
        n = re.search(r"\s(\d[\d,]*)\s{2}", ln)
        assert terminal.cell_width(ln[: n.end(1)]) == end, (ln, end)


def _longest_whole_cut(line: str, cells: int) -> str:
    """The spec of an end cut, by brute force over every prefix: the longest one in ``cells`` that, with
    trailing separators dropped, neither ends in a number nor stops inside one."""
    for k in range(min(cells, len(line)), -1, -1):
        s = line[:k].rstrip(" ·(")
        if s[-1:].isdigit() or (s[-1:] in (".", ",") and line[len(s) : len(s) + 1].isdigit()):
            continue
        return s
    return ""


def test_cut_lines_keep_numbers_whole() -> None:
    line = "high   launch_bound in nvtxsim:policy_update: 1.99 ms/it (23 %) · 1228 launches/range, 2 x"
    for cells in range(8, len(line) + 2):
        short = terminal.shorten_end(line, cells)
        assert terminal.cell_width(short) <= cells
        if cells < len(line):
            assert short == _longest_whole_cut(line, cells - 1) + terminal.ELLIPSIS, (short, cells)
        assert not re.search(r"\d" + terminal.ELLIPSIS, short), short
        kept = short.rstrip(terminal.ELLIPSIS).strip()
        assert line.startswith(kept)
        numbers = re.findall(r"\d[\d.,]*", kept)
        assert numbers == re.findall(r"\d[\d.,]*", line)[: len(numbers)], short


def test_findings_block_cuts_between_words() -> None:
    from nvtxsim.analysis.findings import analyse
    from nvtxsim.analysis.selection import Selection
    from nvtxsim.export.reader import load
    from nvtxsim.reporting.findings import block_lines

    findings = analyse(Selection(load(DEMO), domain="nvtxsim"))
    full = block_lines(findings, 10_000)
    for width in range(30, 81, 5):
        for line in block_lines(findings, width):
            assert terminal.cell_width(line) <= width
            assert not re.search(r"\d" + terminal.ELLIPSIS, line), (width, line)
            whole = line.rstrip(terminal.ELLIPSIS).rstrip()
            if line.startswith(" " * 6) and not line.lstrip().startswith("→"):  # a note's next line, or the facts' own
                assert whole.strip() in " ".join(f.strip() for f in full), line
            else:
                assert any(f.startswith(whole) for f in full), line


def _pty(cmd: list[str], env: dict[str, str], width: int = 80) -> str:
    run = f"stty cols {width} rows 60; {shlex.join(cmd)} 2>/dev/null"
    r = subprocess.run(["script", "-qec", run, "/dev/null"], capture_output=True, text=True, env=env, timeout=300)
    return r.stdout


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update({"PYTHONPATH": str(ROOT), "TERM": "xterm", **extra})
    return env


@needs_script
@pytest.mark.parametrize("extra", [{"TERM": "dumb"}, {"NO_COLOR": "1"}])
def test_plain_terminals_get_no_escapes(extra: dict[str, str]) -> None:
    cmd = [sys.executable, "-m", "nvtxsim", "report", str(DEMO), "--view", "summary,tree"]
    assert "\x1b[1m" in _pty(cmd, _env())
    text = _pty(cmd, _env(**extra))
    assert "\x1b" not in text and "nvtxsim:sim_step" in text
    assert_fits(text.replace("\r", ""), 80)


def test_pipe_ignores_inherited_columns() -> None:
    """GNU readline exports COLUMNS to the children of a REPL or pytest: a pipe still gets the whole table."""
    r = subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", str(DEMO)], capture_output=True, text=True, env=_env(COLUMNS="60")
    )
    assert r.returncode == 0 and "left out" not in r.stdout and "D→H" in r.stdout
    assert max(terminal.cell_width(ln) for ln in r.stdout.splitlines()) > 60


def test_no_progress_display_on_a_dumb_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import time

    from nvtxsim.cli.progress import progress_after

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "dumb")
    buf = Tty()
    with progress_after("loading x", delay=0, stream=buf):
        time.sleep(0.2)
    assert buf.getvalue() == ""
    monkeypatch.setenv("TERM", "xterm")
    with progress_after("loading x", delay=0, stream=buf):
        time.sleep(0.3)
    out = buf.getvalue()
    assert "loading x" in out
    # erased where it stands: no newline and no cursor-up after the last frame (a log or a terminal that does not
    # move the cursor back showed the report's first character lost after the spinner line)
    assert out.endswith("\r\x1b[2K\x1b[?25h") and "\x1b[1A" not in out and "\n" not in out, repr(out[-40:])


def test_sentences_yield_to_numbers() -> None:
    """The findings view at 80 columns keeps the cost columns and puts the evidence/advice sentences on lines
    of their own under the row (they were shortened to 'GPU bu…dData)' while the cost was left out, then left
    out); beside the numbers, a sentence is cut at its end."""
    from nvtxsim.reporting.viewtable import Column

    cols = [
        Column("kind", "Kind"),
        Column("phase", "Phase"),
        Column("cost_ns", "cost", "ns"),
        Column("share", "of time", "pct"),
        Column("evidence_text", "Evidence", prose=True),
        Column("advice", "Advice", prose=True),
    ]
    row = [
        "cpu_bound",
        "forward",
        "242.98 ms",
        "45.8 %",
        "GPU busy 0.4 % of its CPU time, CUDA calls 51 % (cuLibraryLoadData)",
        "make fewer of them",
    ]
    narrow = terminal.table_lines(cols, [row], width=40)
    assert "242.98 ms" in narrow[1] and "45.8 %" in narrow[1] and not any("left out" in ln for ln in narrow)
    assert narrow[2:] == [
        "  Evidence: GPU busy 0.4 % of its CPU",
        "    time, CUDA calls 51 %",
        "    (cuLibraryLoadData)",
        "  Advice: make fewer of them",
    ], narrow
    wide = terminal.table_lines(cols, [row], width=80)
    assert (
        "242.98 ms" in wide[1] and "GPU busy 0.4 % of" in wide[1] and not re.search(r"\d" + terminal.ELLIPSIS, wide[1])
    )
    assert all(terminal.cell_width(ln) <= w for w, lines in ((40, narrow), (80, wide)) for ln in lines)


@pytest.mark.parametrize("width", (60, 80, 200))
def test_tree_keeps_its_nesting_on_a_terminal(width: int) -> None:
    """The tree view's indentation is its nesting: fitted cells keep it (one_line stripped it)."""
    from nvtxsim.analysis.selection import Selection
    from nvtxsim.export.reader import load
    from nvtxsim.reporting.views import build
    from nvtxsim.reporting.viewtable import cell

    t = build(Selection(load(DEMO), domain="nvtxsim"), ["tree"])[0]
    rows = [[cell(c, r) for c in t.columns] for r in t.rows]
    lines = terminal.table_lines(t.columns, rows, width=width)
    at = [c.unit for c in t.columns].index("tree")
    head = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith(("Thread ", "Phase")))  # after "Thread: x"
    start = lines[head].index(t.columns[at].header)
    for line, row in zip(lines[head + 1 :], rows):
        indent = len(row[at]) - len(row[at].lstrip(" "))
        assert line[start : start + indent] == " " * indent and line[start + indent] != " ", (line, row[at])


def test_heading_parts_stay_whole() -> None:
    """'40 measured' is one part of the live heading: it moves to the next line whole, never split."""
    lines = terminal.fit_parts(["/tmp/live.jsonl", "1 window", "iterations 0..39", "40 measured"], 50)
    assert lines == ["/tmp/live.jsonl · 1 window · iterations 0..39", "40 measured"]
    long = terminal.fit_parts(["Findings: what is slow, why, and what to do (most costly first)"], 40)
    assert long[0] == "Findings: what is slow, why, and what to" and long[1] == "  do (most costly first)"
