"""Terminal tables that fit the terminal's width (every terminal table goes through here).

A table at 80 columns must not lie: numbers are never cut (a column that does not fit is
left out, and one line says which and how to see them), long names are shortened in the
middle with an ellipsis, names holding newlines (``emit_nvtx``'s dict-like names) are shown
on one line, and no line, the heading included, is wider than the terminal. Columns are kept
by priority: names first, then numbers by their column's ``priority``, then the rest in table
order, sentences (``prose`` columns) last; a column that says it may be dropped when empty is
left out when it has nothing to show. With no width (a pipe, a file, ``--wide``) everything is
shown whole, as wide as it needs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace

from nvtxsim.reporting.escaping import printable
from nvtxsim.reporting.viewtable import Column

ELLIPSIS = "…"
GAP = 2  # spaces between columns
NAME_SHARE = 0.5  # names may take up to this share of the width before numbers are added
#: How to see left-out columns, longest first: the longest that keeps the line within the terminal is used.
SEE_ALL = (
    "--wide, -o FILE, --format csv|json|markdown|html or a pipe show them",
    "--wide, --format csv|json|markdown|html or a pipe show them",
    "--wide or a pipe shows them",
    "--wide shows them",
    "--wide",
)

_BREAKS = re.compile(r"\s*[\r\n\t\v\f]+\s*")


ZWJ = "\u200d"  # zero width joiner: the next character is part of the same glyph
VS16 = "\ufe0f"  # emoji presentation: the glyph takes 2 cells


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (wide East Asian characters and emoji 2, combining marks 0;
    an emoji with its skin tone, variation selector or zero-width-joined family counts once)."""
    if text.isascii() or max(text) < "\u0300":  # ASCII and Latin-1 (µs): one cell each, no combining marks
        return len(text)
    return sum(w for _, w in _clusters(text))


def line_width(text: str) -> int:
    """The width a line is held to: its terminal cells, where a one-cell symbol (µ, ·, …, →) counts its
    UTF-8 bytes. Byte-counting tools (awk, cut -c, a terminal without a UTF-8 locale) then see no line
    wider than the terminal either; wide glyphs (CJK, emoji) count their two cells."""
    if text.isascii():
        return len(text)
    return cell_width(text) + sum(
        len(c.encode("utf-8", "surrogatepass")) - 1 for c in text if c > "\x7f" and _char_width(c) == 1
    )


def fit_width(text: str, cells: int, cut: Callable[[str, int], str]) -> str:
    """``cut(text, n)`` for the largest ``n <= cells`` whose result is at most ``cells`` wide by
    :func:`line_width`."""
    n = cells
    out = cut(text, n)
    while n > 1 and line_width(out) > cells:
        n -= 1
        out = cut(text, n)
    return out


def _char_width(c: str) -> int:
    if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def _clusters(text: str) -> list[tuple[str, int]]:
    """``text`` as (glyph, cells) pairs: a character with what a terminal draws into it (combining
    marks, variation selectors, skin tones, characters after a zero width joiner)."""
    out: list[tuple[str, int]] = []
    joined = False
    for c in text:
        w = _char_width(c)
        if out and (joined or w == 0 or "\U0001f3fb" <= c <= "\U0001f3ff"):
            glyph, cells = out[-1]
            out[-1] = (glyph + c, max(cells, 2) if c == VS16 else cells)
        else:
            out.append((c, w))
        joined = c == ZWJ
    return out


def one_line(text: str) -> str:
    """A name as one printable line: line breaks and tabs (with the spaces around them) become one space."""
    return printable(_BREAKS.sub(" ", text).strip())


def _take(glyphs: Sequence[tuple[str, int]], cells: int) -> list[str]:
    """The leading glyphs that fit in ``cells``."""
    out, used = [], 0
    for g, w in glyphs:
        if used + w > cells:
            break
        out.append(g)
        used += w
    return out


def shorten_middle(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, its middle replaced by an ellipsis when too long."""
    if cell_width(text) <= cells:
        return text
    if cells <= 1:
        return ELLIPSIS[:cells]
    keep = cells - 1
    glyphs = _clusters(text)
    tail = _take(glyphs[::-1], keep // 2)[::-1]
    return "".join(_take(glyphs, keep - keep // 2)) + ELLIPSIS + "".join(tail)


def shorten_end(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, cut at its end with an ellipsis when too long; a number is
    kept whole with what follows it (``1.99 ms``, ``23 %``) or left out, never cut (``2…`` reads as 2)."""
    if cell_width(text) <= cells:
        return text
    if cells <= 1:
        return ELLIPSIS[:cells]
    head = "".join(_take(_clusters(text), cells - 1))
    if head and _in_number(head[-1]) and _in_number(text[len(head)]):
        head = head.rstrip("0123456789.,")
    head = head.rstrip(" ·(")
    if head[-1:].isdigit():  # a whole number whose unit or closing part was cut off
        head = head.rstrip("0123456789.,").rstrip(" ·(")
    return head + ELLIPSIS


def _in_number(c: str) -> bool:
    return c.isdigit() or c in ".,"


def _cell_text(text: str, unit: str) -> str:
    """A cell on one line; a tree cell keeps the indentation that shows its nesting."""
    if unit != "tree":
        return one_line(text)
    body = text.lstrip(" ")
    return text[: len(text) - len(body)] + one_line(body)


def _shorten_cell(text: str, cells: int, unit: str) -> str:
    if unit == "tree":  # keep the indentation that shows the nesting
        body = text.lstrip(" ")
        indent = text[: len(text) - len(body)]
        if len(indent) < cells:
            return indent + shorten_middle(body, cells - len(indent))
    return shorten_middle(text, cells)


def fit_text(text: str, width: int | None, *, indent: str = "  ") -> list[str]:
    """``text`` (one line of prose) wrapped at spaces to ``width`` cells; overlong words are shortened."""
    if width is None:
        return [printable(text)]
    lines: list[str] = []
    line = ""
    for word in one_line(text).split(" "):
        if line and line_width(f"{line} {word}") <= width:
            line += " " + word
            continue
        if line:
            lines.append(line)
        prefix = indent if lines else ""
        line = prefix + fit_width(word, max(width - len(prefix), 1), shorten_middle)
    lines.append(line)
    return lines


def fit_parts(parts: Sequence[str], width: int | None, *, sep: str = " · ") -> list[str]:
    """A heading made of ``parts`` on as few lines as fit ``width``, each part whole on its line ('40 measured'
    never split); a part too long alone is wrapped at its spaces (a word too long: shortened in the middle)."""
    parts = [one_line(p) if width is not None else printable(p) for p in parts]
    if width is None:
        return [sep.join(parts)]
    lines: list[str] = []
    for part in parts:
        if line_width(part) > width:
            lines += fit_text(part, width)
        elif lines and line_width(lines[-1] + sep + part) <= width:
            lines[-1] += sep + part
        else:
            lines.append(part)
    return lines


def _choose(columns: Sequence[Column], need: list[int], width: int) -> tuple[list[int], list[int]]:
    """Indices of the columns shown (table order) and their widths, for ``width`` cells."""
    text = [i for i, c in enumerate(columns) if c.text and not c.prose]
    prose = [i for i, c in enumerate(columns) if c.text and c.prose]
    unranked = len(columns) + max((c.priority for c in columns if c.priority is not None), default=0) + 1
    rest = sorted(
        (i for i, c in enumerate(columns) if not c.text),
        key=lambda i: (p if (p := columns[i].priority) is not None else unranked, i),
    )
    floor = list(need)
    for i in text + prose:
        floor[i] = min(need[i], max(cell_width(columns[i].header), 12))
    _share(floor, need, text, min(sum(need[i] for i in text), int(width * NAME_SHARE)) - sum(floor[i] for i in text))
    shown: list[int] = []
    used = 0
    for group in (text, rest, prose):
        for i in group:
            add = floor[i] + (GAP if shown else 0)
            if shown and used + add > width:
                if columns[i].text:
                    continue
                break  # strict priority: a number never shows while a more important one is left out
            shown.append(i)
            used += add
    _share(floor, need, [i for i in shown if columns[i].text], width - used)
    return sorted(shown), floor


def _share(widths: list[int], need: list[int], among: list[int], cells: int) -> None:
    """Give up to ``cells`` more cells to the columns ``among``, evenly, none beyond what it needs."""
    while cells > 0:
        grow = [i for i in among if widths[i] < need[i]]
        if not grow:
            return
        for i in grow[:cells]:
            widths[i] += 1
            cells -= 1


def table_lines(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int | None, color: bool = False
) -> list[str]:
    """The table's lines (header first), fitted to ``width``, plus a line naming the left-out columns."""
    units = [c.unit for c in columns]
    cells = [
        [_cell_text(str(v), u) if width is not None else printable(str(v)) for v, u in zip(row, units)] for row in rows
    ]
    above: list[str] = []
    if width is not None:
        columns, cells = _without_empty(columns, cells)
        columns, cells, above = _constant_once(columns, cells, width)
        columns, cells = _shared_prefixes_once(columns, cells)
    need = [max([cell_width(c.header)] + [cell_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    if width is None:
        lines, shown = _table_at(columns, cells, list(range(len(columns))), need)
    else:
        # Fit in cells, then narrower while a line is wider by line_width (µs, …: more bytes than cells).
        budget = width
        while True:
            shown, widths = _choose(columns, need, budget)
            lines, shown = _table_at(columns, cells, shown, widths)
            if budget <= GAP + 1 or max(map(line_width, lines)) <= width:
                break
            budget -= 1
    if color and lines:
        lines[0] = f"\x1b[1m{lines[0]}\x1b[0m"
    stacked = [i for i, c in enumerate(columns) if c.prose and i not in shown] if width is not None else []
    if stacked:
        lines = _stack_prose(lines, columns, cells, stacked, width or 0)
    left_out = [columns[i].header for i in range(len(columns)) if i not in shown and i not in stacked]
    if left_out:
        lines += _left_out_line(left_out, width)
    return above + lines


def _stack_prose(
    lines: list[str], columns: Sequence[Column], cells: list[list[str]], stacked: list[int], width: int
) -> list[str]:
    """Sentences with no room beside the numbers, each on its own lines under its row ("Advice: ..."),
    rather than left out: a finding without its evidence and advice says little."""
    out = lines[:1]
    for row_line, row in zip(lines[1:], cells):
        out.append(row_line)
        for i in stacked:
            if row[i]:
                out += [f"  {ln}" for ln in fit_text(f"{columns[i].header}: {row[i]}", width - 2, indent="  ")]
    return out


def _constant_once(
    columns: Sequence[Column], cells: list[list[str]], width: int
) -> tuple[Sequence[Column], list[list[str]], list[str]]:
    """Columns declaring ``once`` whose rows all hold one value, as lines above the table ("Thread: main (740)")."""
    same = [i for i, c in enumerate(columns) if c.once and len(cells) > 1 and len({r[i] for r in cells}) == 1]
    if not same:
        return columns, cells, []
    above = [ln for i in same for ln in fit_text(f"{columns[i].header}: {cells[0][i]}", width)]
    keep = [i for i in range(len(columns)) if i not in same]
    return [columns[i] for i in keep], [[r[i] for i in keep] for r in cells], above


def _without_empty(columns: Sequence[Column], cells: list[list[str]]) -> tuple[Sequence[Column], list[list[str]]]:
    """The columns less those that may be dropped when empty and have no value in any row (every cell blank or 0)."""
    keep = [i for i, c in enumerate(columns) if not (c.drop_if_empty and all(r[i] in ("", "0") for r in cells))]
    if len(keep) == len(columns):
        return columns, cells
    return [columns[i] for i in keep], [[r[i] for i in keep] for r in cells]


def _shared_prefixes_once(
    columns: Sequence[Column], cells: list[list[str]]
) -> tuple[Sequence[Column], list[list[str]]]:
    """Columns declaring ``shared_prefix`` with the prefix every row shares moved into the header."""
    out = list(columns)
    for i, c in enumerate(columns):
        sep = c.shared_prefix
        if not sep or not cells:
            continue
        bodies = [r[i].lstrip(" ") if c.unit == "tree" else r[i] for r in cells]  # a tree cell: after its indent
        head, found, _ = bodies[0].partition(sep)
        prefix = head + sep
        if not (head and found) or any(not b.startswith(prefix) or b == prefix for b in bodies):
            continue
        out[i] = replace(c, header=f"{c.header} ({prefix[: -len(sep)]})")
        for r, b in zip(cells, bodies):
            r[i] = r[i][: len(r[i]) - len(b)] + b[len(prefix) :]
    return out, cells


def _table_at(
    columns: Sequence[Column], cells: list[list[str]], shown: list[int], widths: list[int]
) -> tuple[list[str], list[int]]:
    """The header and rows of the ``shown`` columns at ``widths`` cells each."""

    def line(values: Sequence[str]) -> str:
        out = []
        for i in shown:
            c, v = columns[i], values[i]
            if cell_width(v) > widths[i]:
                v = shorten_end(v, widths[i]) if c.prose else _shorten_cell(v, widths[i], c.unit)
            pad = " " * (widths[i] - cell_width(v))
            out.append(v + pad if c.text else pad + v)
        return (" " * GAP).join(out).rstrip()

    return [line([c.header for c in columns])] + [line(r) for r in cells], shown


def _left_out_line(headers: Sequence[str], width: int | None) -> list[str]:
    said = f"left out: {', '.join(headers)}"
    for how in SEE_ALL:
        if width is None or line_width(f"{said} ({how})") <= width:
            return [f"{said} ({how})"]
    return fit_text(f"{said} ({SEE_ALL[-1]})", width)


def notes_lines(notes: Sequence[str], width: int | None, *, prefix: str = "note: ") -> list[str]:
    """Notes or warnings under a table, each wrapped to ``width``."""
    return [ln for n in notes if n for ln in fit_text(f"{prefix}{n}", width)]


def render(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    heading: Sequence[str],
    width: int | None,
    color: bool = False,
    notes: Sequence[str] = (),
    note_prefix: str = "note: ",
    empty: str = "(nothing to show)",
) -> str:
    """Heading lines, the fitted table (or ``empty``) and the notes, as one text."""
    lines = list(heading)
    lines += table_lines(columns, rows, width=width, color=color) if rows else [empty]
    lines += notes_lines(notes, width, prefix=note_prefix)
    return "\n".join(lines) + "\n"
