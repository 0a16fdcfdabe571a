"""Inputs from a second hostile re-test of the parsers: files of a few KB that held a parse for
minutes (patterns that backtracked in an mbox separator line, an RTF font table and its hyperlink
fields; a deep JSON document serialised again at every level), one that built 1.5 GB before it
was refused (XML tables nested in tables), and one silent loss (a stray byte turned 300 KB of
UTF-8 into mojibake). No assertion times anything: each finishes far inside an alarm the old code
overran, or is refused before the text is built, and each rewrite reads as the code it replaced.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from assets.parsing import parse_document
from connectors.errors import TooLarge
from tests.timeouts import alarm

# ---------------------------------------------------------------- mbox separator lines

_OLD_MBOX_FROM = re.compile(rb"(?:\A|\n)From \S+ +[^\n]*\d\d:\d\d[^\n]*\n")
_FIRST = b"From a@b Sat Jan  3 01:05:34 1996\nFrom: a@b\nSubject: hi\nMessage-ID: <1@b>\n\nhello\n"


@pytest.mark.parametrize("line", [b"From x" + b" " * 16000 + b"00:00" * 3200,  # 91 s: cubic
                                  b"From x" + b" " * 90000 + b"y\n"])            # 38 s: quadratic
def test_a_long_line_that_nearly_separates_messages_parses_in_linear_time(line: bytes) -> None:
    with alarm(10):
        result = parse_document(_FIRST + line, "box.mbox")
    assert result.metadata["message_count"] == 1 and result.blocks[0].text == "hi"


def test_mbox_separators_are_found_as_the_pattern_found_them() -> None:
    from assets.parsing.email import _MBOX_ESCAPED, split_mbox

    rng = random.Random(11)
    pieces = [b"From ", b"From ", b"x", b" ", b" ", b"\n", b"\n", b"00:00", b"0", b":", b"\t", b">From ", b"a@b"]
    for _ in range(30000):
        s = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
        assert split_mbox(s) == [_MBOX_ESCAPED.sub(rb"\1", p) for p in _OLD_MBOX_FROM.split(s) if p.strip()], s


# ---------------------------------------------------------------- RTF


def test_an_rtf_font_table_that_never_ends_parses_in_linear_time() -> None:
    """200 font entries with no `;` (a truncated file, 2.9 KB) took 117 s, growing with the fourth
    power of their number."""
    data = ("{\\rtf1\\ansi Visible text before the table.\\par {\\fonttbl" + "\\f1\\fcharset0 " * 2000).encode()
    with alarm(10):
        result = parse_document(data, "fonts.rtf")
    assert result.blocks[0].text == "Visible text before the table."


def test_the_font_table_is_read_as_the_pattern_read_it() -> None:
    from assets.parsing.rtf import _FONT_TABLE

    before = re.compile(r"\\f(\d+).*?\\fcharset(\d+).*?([^;]+);")
    rng = random.Random(4)
    pieces = ["\\f", "\\f", "1", "0", "12", "\\fcharset", "\\fcharset", ";", ";", "\n", " ", "x", "{", "}", "Arial"]
    for _ in range(30000):
        s = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert _FONT_TABLE.findall(s) == before.findall(s), s
    table = "{\\fonttbl{\\f0\\fswiss\\fcharset0 Arial;}{\\f1\\froman\\fcharset204 Times New Roman Cyr;}}"
    assert _FONT_TABLE.findall(table) == [("0", "0", " Arial"), ("1", "204", " Times New Roman Cyr")]


def test_rtf_hyperlink_fields_parse_in_linear_time_and_read_as_their_text() -> None:
    """40 KB of nested field openings took 48 s (striprtf's hyperlink pattern, cubic). A link is
    read as its text, as in HTML: the pattern that added its target is no longer applied."""
    hostile = "{\\field{\\*\\fldinst{" * 700 + 'HYPERLINK "' * 2400
    with alarm(10):
        result = parse_document(("{\\rtf1\\ansi Some visible text here.\\par " + hostile + "}").encode(), "h.rtf")
    assert result.blocks[0].text == "Some visible text here."
    link = ('{\\rtf1\\ansi See {\\field{\\*\\fldinst{HYPERLINK "https://example.org/guide"}}'
            '{\\fldrslt{\\ul the guide}}} for more.\\par}')
    assert parse_document(link.encode(), "link.rtf").blocks[0].text == "See the guide for more."


# ---------------------------------------------------------------- JSON


def _redump(depth: int, payload: int) -> bytes:
    s = '{"t": "the text", "bottom": [' + ",".join(["1"] * payload) + "]}"
    for _ in range(depth):
        s = '[{"a": ' + s + '}, {"b": 1, "c": 2, "d": 3}]'
    return ('{"root": ' + s + "}").encode()


def test_a_deep_json_document_is_not_serialised_again_at_every_level() -> None:
    """450 levels over 250,000 numbers (516 KB) took 29 s: every level's table cell serialised all
    that lay below it, to keep 2,000 characters."""
    with alarm(15):
        result = parse_document(_redump(450, 250000), "deep.json")
    assert any("the text" in b.text for b in result.blocks)


def test_a_nested_cell_reads_as_the_whole_json_cut() -> None:
    from assets.parsing.jsondoc import _nested_value, _shorten
    from assets.parsing.textutil import clean_inline

    rng = random.Random(9)

    def value(depth: int = 0) -> object:
        r = rng.random()
        if depth > 4 or r < 0.4:
            return rng.choice([None, True, 0, -3, 1.5, float("nan"), "", "a b", 'é\n"x\\', "  ",
                               "x" * rng.randint(0, 30)])
        if r < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(["a", "", "é"]) + str(i): value(depth + 1) for i in range(rng.randint(0, 4))}

    cases = [[value() for _ in range(rng.randint(1, 3))] for _ in range(3000)]
    cases += [["x" * 10000], [" " * 9000 + "a" * 5000], [[1] * 5000], [{"k": "v " * 5000}], [" " * 20000, "tail"]]
    for v in cases:
        assert _nested_value(v) == _shorten(clean_inline(json.dumps(v, ensure_ascii=False))), v


# ---------------------------------------------------------------- XML


def test_xml_tables_nested_in_tables_are_refused_while_they_expand(monkeypatch: pytest.MonkeyPatch) -> None:
    """650 tables, each in a cell of the next, copied their text at every level: 837 KB took 42 s
    and 1.5 GB before the finished text was refused."""
    s = "<p>" + "lorem ipsum dolor sit amet " * 4000 + "</p>"
    for _ in range(300):
        s = "<table><row><entry>x</entry><entry>" + s + "</entry></row></table>"

    def built(*_: object) -> str:
        raise AssertionError("the table's text was built before its size was checked")

    monkeypatch.setattr("assets.parsing.xmldoc.markdown_table", built)
    with pytest.raises(TooLarge, match="its xml would make at least"):
        parse_document(f'<?xml version="1.0"?><doc>{s}</doc>'.encode(), "nested.xml")


# ---------------------------------------------------------------- UTF-8 with a stray byte

_RUSSIAN = ("Съешь же ещё этих мягких французских булок, да выпей чаю. " * 3000).encode()


@pytest.mark.parametrize("at", [1000, 270000])
def test_utf8_text_with_one_stray_byte_stays_utf8(at: int) -> None:
    """One Latin-1 byte past the detector's first 256 KB sent 300 KB of Russian to cp1252 (not one
    Cyrillic letter left, no warning); early in the file, it was refused as binary."""
    data = _RUSSIAN[:at].rsplit(b" ", 1)[0] + b" caf\xe9 " + _RUSSIAN[at:].split(b" ", 1)[1]
    result = parse_document(data, "stray.txt")
    text = " ".join(b.text for b in result.blocks)
    assert result.metadata["encoding"] == "utf-8" and "французских" in text and text.count("\ufffd") == 1


def test_a_legacy_code_page_is_still_read_as_one() -> None:
    data = "Le cœur a ses raisons que la raison ne connaît point. Où est la forêt? Été.\n".encode("cp1252") * 50
    result = parse_document(data, "fr.txt")
    assert result.metadata["encoding"] == "cp1252" and "forêt" in result.blocks[0].text
