"""The escaping of each output format as exact values (scripts/mutate.py, reports/mutation.md): what a
terminal, markdown, a spreadsheet and an HTML page get for text from an export."""

from __future__ import annotations

import csv
import io
import json

import pytest

from nvtxsim.reporting.escaping import csv_cell, csv_table, html_json, json_text, markdown_cell, printable


@pytest.mark.parametrize(
    "text,want",
    [
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\x7fb\x9fc", "a\\x7fb\\x9fc"),
        ("soft\xadhyphen", "soft\\xadhyphen"),
        ("rtl\u202eoverride", "rtl\\u202eoverride"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tag\U000e0041s", "tag\\U000e0041s"),
        ("Āĉ 日本 \U00010000", "Āĉ 日本 \U00010000"),  # printable, whatever the code point's size
        ("family 👨\u200d👩", "family 👨\u200d👩"),  # a joiner before an emoji joins a visible glyph
        ("a\u200dz", "a\\u200dz"),
    ],
)
def test_printable_exact(text, want):
    assert printable(text) == want


def test_markdown_cell_exact():
    assert markdown_cell("a|b *c* `d` <e> & www.x:y@z") == "a\\|b \\*c\\* \\`d\\` &lt;e&gt; &amp; www\\.x\\:y\\@z"


@pytest.mark.parametrize(
    "value,want",
    [
        ("=1+1", "'=1+1"),
        ("  =cmd", "'  =cmd"),  # after leading spaces too (an importer may trim them)
        ("\t+1", "'\t+1"),
        ("-2", "'-2"),
        ("a=1", "a=1"),
        ("", ""),
        (-2, -2),  # numbers stay numbers
        (1.5, 1.5),
    ],
)
def test_csv_cell_exact(value, want):
    assert csv_cell(value) == want


def test_csv_table_quotes_only_rows_with_a_carriage_return():
    text = csv_table(["name", "n"], [["plain", 1], ["cr\rinside", 2], ["=x", 3]])
    lines = text.split("\n")
    assert lines[0] == "name,n" and lines[1] == "plain,1" and lines[-2] == "'=x,3"
    assert '"cr\rinside",2' in text  # quoted: a lone CR would split the row
    assert list(csv.reader(io.StringIO(text))) == [["name", "n"], ["plain", "1"], ["cr\rinside", "2"], ["'=x", "3"]]


def test_json_outputs_exact():
    assert json_text({"a": float("nan"), "b": [float("inf"), 1.5]}) == '{"a": null, "b": [null, 1.5]}'
    assert json_text({1: "x", None: "y"}, indent=1) == '{\n "1": "x",\n "null": "y"\n}'
    page = html_json({"x": "</script><!--&\u2028"})
    assert page == '{"x":"\\u003c/script\\u003e\\u003c!--\\u0026\\u2028"}' and json.loads(page) == {
        "x": "</script><!--&\u2028"
    }
