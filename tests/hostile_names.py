"""Names that try to become markup, script, formulas or terminal commands (issue 13).

``hostile_names_export`` writes a synthetic CUDA export whose every string — range, domain,
thread, process, GPU and kernel names — starts with one of :data:`HOSTILE`, plus payloads that
are infinite or NaN. Used by ``tests/test_hostile_names.py`` and the corpus.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from synth import make_export

# Each one attacks one output kind; together they attack all of them.
HOSTILE = [
    "<script>document.body.setAttribute('data-p'+'wned','script')</script>",
    "</script><script>document.body.setAttribute('data-p'+'wned','close')</script>",
    '"><img src=x onerror="document.body.setAttribute(\'data-p\'+\'wned\',\'attr\')">',
    "'><svg onload='document.body.setAttribute(\"data-p\"+\"wned\",\"sq\")'>",
    "<!--", "]]>", "%DATA%", "%JS%", "%SECTIONS%", "%TITLE%%HEADING%", "\u2028\u2029",
    '=HYPERLINK("http://x","y")', "+1+1", "-2", "@SUM(A1)", "\tTAB", "\rCR", "a\r\nb", 'say "hi"', "nul\x00byte",
    "\x1b[31mred\x1b[0m\x1b]0;title\x07", "\u202eevil\u2066iso\u2069", "\x9bC1",
    "| pipe *bold* _em_ `code` [link](javascript:alert(1)) ![i](x) <b>raw</b> &amp; ~~s~~ $x$ \\",
]

# A file name that tries too ("/" and NUL cannot be in one).
HOSTILE_FILE = "<svg onload=alert(1)>%DATA%%HEADING%\x1b[2J\u202e.sqlite"


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
        con.execute("UPDATE NVTX_EVENTS SET doubleValue = CASE rowid % 3 WHEN 0 THEN 9e999 WHEN 1 THEN -9e999 ELSE NULL END WHERE eventType = 59")
    con.commit()
    con.close()
    return path
