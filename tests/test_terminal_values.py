"""Terminal fitting as values: which columns a narrow terminal keeps and how wide each is, and how a cell
is shortened, against widths worked out by hand (scripts/mutate.py, reports/mutation.md)."""

from __future__ import annotations

import pytest

from nvtxsim.reporting.renderers.terminal import _choose, _shorten_cell, shorten_end, shorten_middle
from nvtxsim.reporting.viewtable import Column

COLUMNS = [
    Column("phase", "phase"),  # a name: always kept
    Column("a", "a", unit="int", priority=2),
    Column("b", "b", unit="int", priority=1),  # kept before a
    Column("c", "c", unit="int"),  # no priority: after the ranked ones
    Column("advice", "advice", prose=True),  # sentences: after every number, where there is room
]
NEED = [30, 5, 5, 5, 40]


def test_a_narrow_terminal_keeps_names_then_numbers_by_priority():
    # 40 cells: the name gets its floor (12, at least its header), then up to half the width (20);
    # b, a fit (20 + 7 + 7 = 34), c does not (41), nor the advice; the 6 cells left go to the name.
    shown, widths = _choose(COLUMNS, NEED, 40)
    assert shown == [0, 1, 2] and widths == [26, 5, 5, 5, 12]


def test_a_wide_terminal_shows_all_and_shares_the_room_among_text():
    # 80 cells: all five (20 + 7 + 7 + 7 + 14 = 55); the 25 left: the name up to its 30, the advice the rest.
    shown, widths = _choose(COLUMNS, NEED, 80)
    assert shown == [0, 1, 2, 3, 4] and widths == [30, 5, 5, 5, 27]


def test_a_long_header_raises_a_names_floor():
    cols = [Column("phase", "a header longer than twelve"), Column("n", "n", unit="int")]
    shown, widths = _choose(cols, [40, 3], 30)
    assert shown == [0] and widths == [30, 3]  # floor 27 > 15 (half of 30): the floor wins; 27 + 5 > 30


@pytest.mark.parametrize(
    "text,cells,want",
    [
        ("abcdefghij", 5, "ab…ij"),
        ("abcdefghij", 6, "abc…ij"),
        ("abcdefghij", 10, "abcdefghij"),
        ("abcdefghij", 1, "…"),
        ("abcdefghij", 0, ""),
        ("日本語のテキスト", 7, "日…ト"),  # two cells a glyph: 3 cells each side hold one
    ],
)
def test_shorten_middle_exact(text, cells, want):
    assert shorten_middle(text, cells) == want


def test_shorten_end_keeps_numbers_whole():
    assert shorten_end("abcdefghij", 5) == "abcd…"
    assert shorten_end("took 1.99 ms", 8) == "took…"  # never "took 1.…"
    assert shorten_end("took 1.99 ms", 11) == "took…"  # its unit cut off: the number goes too
    assert shorten_end("took 1.99 ms", 12) == "took 1.99 ms"


def test_a_tree_cell_keeps_its_indentation_while_there_is_room():
    assert _shorten_cell("    child_name_long", 10, "tree") == "    chi…ng"
    assert _shorten_cell("    abc", 4, "tree") == "  …c"  # no room past the indentation: shortened as a whole
    assert _shorten_cell("    abc", 5, "tree") == "    …"
    assert _shorten_cell("    child_name_long", 10, "str") == "    c…long"


def test_a_name_gives_way_down_to_twelve_cells_for_a_number():
    cols = [Column("phase", "phase"), Column("n", "n", unit="int")]
    assert _choose(cols, [30, 5], 19) == ([0, 1], [12, 5])  # 12 + 2 + 5: the number fits
    assert _choose(cols, [30, 5], 18) == ([0], [18, 5])  # one cell short: the name takes the room


def test_columns_without_a_priority_come_after_every_ranked_one():
    cols = [Column("phase", "phase"), Column("c", "c", unit="int"), Column("a", "a", unit="int", priority=10)]
    shown, _ = _choose(cols, [12, 5, 5], 19)  # room for one number: the ranked one, not the first in table order
    assert shown == [0, 2]
