"""Text from an export is data: one escaper per output kind, used by every renderer.

Range, domain, thread and process names and file names can hold anything (control
characters, markup, formulas, placeholders). Each output kind has exactly one function
here that makes such text inert for it; renderers never format names any other way.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# Everything a terminal would act on or not show: Unicode's control (Cc: C0, DEL, C1), format (Cf:
# bidi embeddings/overrides/isolates and marks, zero-width space/joiners, word joiner, soft hyphen,
# BOM, invisible "tag" characters U+E0000-U+E007F, ...), line and paragraph separator (Zl, Zp)
# categories, and the Hangul fillers (letters that draw nothing). One class for the whole kind, so a
# character nobody listed cannot hide or reorder text; tests check it against ``unicodedata``.
# The one exception: a zero width joiner before an emoji, which joins a visible glyph (a family).
_TERMINAL_UNSAFE = re.compile(
    "\u200d(?![\u2600-\u27bf\U0001f000-\U0001faff])|"
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b\u200c\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


def printable(text: str) -> str:
    """``text`` for a terminal: controls, escape sequences, bidi overrides and invisible characters shown
    as ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN`` (Python's spelling: unambiguous, whatever follows)."""
    return _TERMINAL_UNSAFE.sub(_escape_char, str(text))


def _escape_char(m: re.Match[str]) -> str:
    o = ord(m.group())
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


# The characters that open inline markup in CommonMark/GFM (emphasis, code, links, tables,
# strikethrough, math, autolinks) are backslash-escaped; ``<``, ``>`` and ``&`` become entities so
# no raw HTML or entity can form. Line-start markup (``#``, ``-``, ``>``...) cannot occur: every
# escaped text follows ``| ``, ``### ``, ``> `` or ``**`` on its line, and newlines are escaped.
# GFM's extended autolinks are closed too: ``:`` (``http:``), ``@`` (e-mail) and the dot of ``www.``.
_MARKDOWN_PUNCT = re.compile(r"([\\`*_\[\]|~$:@]|(?<=[wW]{3})\.)")
_MARKDOWN_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def markdown_cell(text: str) -> str:
    """``text`` as literal markdown (table cell, heading, quote): no markup, no raw HTML, one line."""
    s = _MARKDOWN_PUNCT.sub(r"\\\1", printable(text))
    return re.sub("[&<>]", lambda m: _MARKDOWN_ENTITIES[m.group()], s)


# OWASP CSV injection: a cell a spreadsheet would read as a formula gets a leading quote, also after
# leading whitespace (an importer that trims spaces would otherwise find the formula).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """One CSV value: text that starts like a formula is prefixed with ``'``; numbers stay numbers."""
    if isinstance(value, str) and (value.startswith(_FORMULA_START) or value.lstrip().startswith(_FORMULA_START)):
        return "'" + value
    return value


def csv_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV text (``\\n`` line ends) whose every row reads back the same through ``csv.reader`` and pandas."""
    buf = io.StringIO()
    plain = csv.writer(buf, lineterminator="\n")
    # Python 3.11's writer quotes only the line terminator's characters: a lone CR would split the row.
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    for row in [header, *rows]:
        cells = [csv_cell(v) for v in row]
        needs_quotes = any(isinstance(v, str) and "\r" in v for v in cells)
        (quoted if needs_quotes else plain).writerow(cells)
    return buf.getvalue()


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf: payloads can be infinite) as ``null``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_text(value: Any, *, indent: int | None = None, **kwargs: Any) -> str:
    """Strict JSON text (never ``NaN``/``Infinity``): what every JSON and Perfetto output goes through.

    With ``indent``, objects and lists are indented except table rows (a list of objects): one row
    per line. Rows are then encoded by the C encoder (``json.dumps`` without indent), which keeps a
    report with 100,000 phases in seconds; Python's indenting encoder takes ten times longer.
    """
    kwargs.setdefault("ensure_ascii", False)
    dumps = functools.partial(json.dumps, allow_nan=False, default=_json_default, **kwargs)
    encode = dumps if indent is None else functools.partial(_indented_json, dumps=dumps, indent=indent, level=0)
    try:  # most documents hold no NaN/inf: skip the pass over every value that json_safe makes
        return encode(value)
    except ValueError:
        return encode(json_safe(value))


def _indented_json(value: Any, *, dumps: Callable[[Any], str], indent: int, level: int) -> str:
    pad, end = " " * (indent * (level + 1)), " " * (indent * level)
    if isinstance(value, dict) and value:
        inner = [
            f"{pad}{dumps(_json_key(k))}: {_indented_json(v, dumps=dumps, indent=indent, level=level + 1)}"
            for k, v in value.items()
        ]
    elif isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, dict) for v in value):  # table rows: one per line
            inner = [pad + dumps(v) for v in value]
        else:
            inner = [pad + _indented_json(v, dumps=dumps, indent=indent, level=level + 1) for v in value]
    else:
        return dumps(value)
    brackets = "{}" if isinstance(value, dict) else "[]"
    return brackets[0] + "\n" + ",\n".join(inner) + "\n" + end + brackets[1]


def _json_key(key: Any) -> str:
    """A key as json.dumps writes it: str as is, others as their JSON text (1 → "1", True → "true")."""
    return key if isinstance(key, str) else json.dumps(key)


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays as their Python values (numpy is only looked at when already loaded)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, (np.generic, np.ndarray)):
        return json_safe(value.tolist())
    return None


_SCRIPT_JSON = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def html_json(value: Any) -> str:
    """JSON for a ``<script type="application/json">`` block: nothing in it can end or open a tag."""
    return json_text(value, separators=(",", ":")).translate(_SCRIPT_JSON)
