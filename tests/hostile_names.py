"""Names that try to become markup, script, formulas or terminal commands (issue 13).

``hostile_names_export`` writes a synthetic CUDA export whose every string — range, domain,
thread, process, GPU and kernel names — starts with one of :data:`HOSTILE`, plus payloads that
are infinite or NaN. Used by ``tests/test_hostile_names.py`` and the corpus.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from pathlib import Path

from synth import make_export

# Each one attacks one output kind; together they attack all of them.
HOSTILE = [
    "<script>document.body.setAttribute('data-p'+'wned','script')</script>",
    "</script><script>document.body.setAttribute('data-p'+'wned','close')</script>",
    "\"><img src=x onerror=\"document.body.setAttribute('data-p'+'wned','attr')\">",
    '\'><svg onload=\'document.body.setAttribute("data-p"+"wned","sq")\'>',
    "<!--",
    "]]>",
    "%DATA%",
    "%JS%",
    "%SECTIONS%",
    "%TITLE%%HEADING%",
    "\u2028\u2029",
    '=HYPERLINK("http://x","y")',
    "+1+1",
    "-2",
    "@SUM(A1)",
    "\tTAB",
    "\rCR",
    "a\r\nb",
    'say "hi"',
    "nul\x00byte",
    "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "\u202eevil\u2066iso\u2069",
    "\x9bC1",
    "| pipe *bold* _em_ `code` [link](javascript:alert(1)) ![i](x) <b>raw</b> &amp; ~~s~~ $x$ \\",
    # round 3: invisible format characters, OSC 8 hyperlinks and DCS, formulas after whitespace,
    # GFM autolinks, MathML, other template syntaxes
    "\u200bzw\ufeffbom\u00adsoft\U000e0041tag\u2060wj\u3164fill\u200dzwj",
    "\x1b]8;;http://evil/\x07link\x1b]8;;\x07\x1bP1$r\x1b\\\x08\x08",
    " =1+1",
    "\n@SUM(A1)",
    "www.evil.com a@b.co",
    "<math><mi xlink:href='javascript:alert(1)'>m</mi></math><style>*{display:none}</style>",
    "{{x}}${x}%s`${alert(1)}`",
]

# A file name that tries too ("/" and NUL cannot be in one).
HOSTILE_FILE = "<svg onload=alert(1)>%DATA%%HEADING%\x1b[2J\u202e.sqlite"


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# GFM extended autolinks: ``www.x``, ``a@b.co`` (``http:`` is covered by the escaped ``:``).
_MARKDOWN_AUTOLINK = re.compile(r"(?<!\\)\bwww\.(?=\w)|\w(?<!\\)@\w", re.I)


def unsafe_terminal(text: str) -> str | None:
    """The first character a terminal would act on or not show (by Unicode category, so nothing
    needs listing: Cc but newline and tab, Cf, Zl, Zp, Hangul fillers); a zero width joiner before
    an emoji is a glyph's part, not hidden text. None when there is none."""
    for i, c in enumerate(text):
        if c in "\n\t" or (c == "\u200d" and text[i + 1 : i + 2] >= "\u2600"):
            continue
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or c in "\u115f\u1160\u3164\uffa0":
            return c
    return None


def formula_cell(value: str) -> bool:
    """A CSV text cell a spreadsheet could run (also after whitespace an importer may trim)."""
    try:
        float(value)
        return False  # a number in a numeric column
    except ValueError:
        return value.startswith(FORMULA_START) or value.lstrip().startswith(FORMULA_START)


def markdown_autolink(text: str) -> str | None:
    """An unescaped GFM autolink start in markdown output, else None."""
    m = _MARKDOWN_AUTOLINK.search(text)
    return m.group() if m else None


def hostile_names_export(path: Path, seed: int = 3) -> Path:
    """A synthetic export whose every name carries a hostile prefix (kept unique by its old text)."""
    make_export(path, seed, processes=2, threads=2, calls_per_thread=30, extras=True)
    con = sqlite3.connect(path)
    n = len(HOSTILE)
    con.create_function("hostile", 1, lambda i: HOSTILE[int(i) % n])
    con.execute("UPDATE StringIds SET value = hostile(id) || value")
    con.execute("UPDATE NVTX_EVENTS SET text = hostile(rowid) || text WHERE text IS NOT NULL")
    con.execute("UPDATE PROCESSES SET name = hostile(pid) || name")
    con.execute("UPDATE TARGET_INFO_GPU SET name = hostile(id + 7) || name")
    cols = {r[1] for r in con.execute("PRAGMA table_info(NVTX_EVENTS)")}
    if "doubleValue" in cols:  # payloads can be infinite: JSON must stay JSON
        con.execute(
            "UPDATE NVTX_EVENTS SET doubleValue = CASE rowid % 3 WHEN 0 THEN 9e999 WHEN 1 THEN -9e999 ELSE NULL END WHERE eventType = 59"
        )
    con.commit()
    con.close()
    return path
