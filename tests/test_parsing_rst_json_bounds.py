"""reStructuredText and JSON inputs that made a parse take minutes or gigabytes.

Found by a robustness tester: `*a ` repeated 100,000 times (300 KB) hung a sync on the emphasis
pattern (quadratic); 300 nested `.. note::` directives over 7.7 MB held 4.4 GB, a dedented copy
of the body per level; 900 nested long JSON keys repeated before each of 1,000 values made 175
million characters from 225 KB. No assertion here times anything: each bounds the work or the
memory, or, for the pattern, finishes far inside an alarm the old code overran by minutes.
"""

from __future__ import annotations

import random
import re
import tracemalloc

import pytest

from assets.parsing import parse_document
from assets.parsing.jsondoc import MAX_PATH_CHARS
from assets.parsing.rst import MAX_NESTING, parse_rst
from connectors.config import ParseConfig
from connectors.errors import TooLarge
from tests.timeouts import alarm

CFG = ParseConfig()


# ---------------------------------------------------------------- rst emphasis


def test_stars_that_never_close_parse_in_linear_time() -> None:
    """20,000 openers took 15 s, growing with the square: 100,000 took minutes. Now milliseconds."""
    data = ("Title\n=====\n\n" + "*a " * 100000 + "\n").encode()
    with alarm(10):
        result = parse_document(data, "stars.rst", CFG)
    assert result.blocks[-1].text == " ".join(["*a"] * 100000)


def test_emphasis_reads_as_the_pattern_it_replaced() -> None:
    from assets.parsing.rst import _emphasis

    before = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
    rng = random.Random(7)
    pieces = ["*", "*", "**", "a", "x", " ", "\n", "\t", "_", ".", "é", "\u00a0"]
    for _ in range(50000):
        s = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert _emphasis(s) == before.sub(r"\1", s), repr(s)
    assert _emphasis("an *emphasised* word, *two words*, 2*3*4, * not *") == (
        "an emphasised word, two words, 2*3*4, * not *")


def test_a_role_before_a_long_run_of_angle_brackets_parses_in_linear_time() -> None:
    """One role followed by 100,000 `<` took 27 s: each was tried as the start of a target that
    then ran to the line's end."""
    with alarm(10):
        result = parse_document((":a:`" + "<" * 100000 + "\n").encode(), "roles.rst", CFG)
    assert result.blocks[-1].text.endswith("<" * 1000)


def test_roles_read_as_before() -> None:
    from assets.parsing.rst import _plain

    assert _plain(":ref:`the guide <guide-label>`, :meth:`~pkg.Class.run`, :pep:`8`, "
                  ":doc:`Install <../install>` and :rfc:`2119`") == (
        "the guide, pkg.Class.run, PEP 8, Install and RFC 2119")


def test_a_signature_continued_over_many_lines_parses_in_linear_time() -> None:
    """A directive signature whose bracket never closes re-counted the whole signature per line
    (100,000 lines of 20 characters: over a minute)."""
    data = (".. function:: f(\n" + "   argument_name=None,\n" * 100000 + "\nText.\n").encode()
    with alarm(10):
        result = parse_document(data, "sig.rst", CFG)
    assert result.blocks[0].text.startswith("f( argument_name=None, argument_name=None,")
    assert result.blocks[-1].text == "Text."
    ordinary = parse_document(b".. function:: f(a,\n              b)\n\n   Does f.\n", "f.rst", CFG)
    assert [b.text for b in ordinary.blocks] == ["f(a, b)", "Does f."]


# ---------------------------------------------------------------- rst nesting


def _nested_notes(depth: int, lines: int, words: int, opener: str = ".. note::", step: int = 3) -> bytes:
    notes = "".join(" " * step * i + opener + "\n\n" for i in range(depth))
    body = "".join(" " * step * depth + f"word{i} " * words + "\n" for i in range(lines))
    return (notes + body).encode()


@pytest.mark.parametrize(("opener", "step"), [(".. note::", 3), ("- item", 2)])
def test_deeply_nested_blocks_hold_a_bounded_multiple_of_the_file(opener: str, step: int) -> None:
    """Each level of directives (or list items) kept its own dedented copy: peak memory grew
    with depth × size (over 200 times the file at 150 levels). Now at most MAX_NESTING copies,
    and all the text is kept."""
    data = _nested_notes(150, 200, 40, opener, step)
    parse_rst(b"Warm\n====\n\nup\n")  # lazy imports and caches outside the measurement
    tracemalloc.start()
    try:
        result = parse_rst(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * len(data), f"peak {peak / len(data):.0f} times the file"
    text = " ".join(b.text for b in result.blocks)
    assert "word0 word0" in text and "word199 word199" in text
    assert len(text) < len(data)


def test_nesting_within_the_limit_reads_as_markup_and_deeper_text_as_paragraphs() -> None:
    inner = "".join("   " * i + ".. note::\n\n" for i in range(3))
    code = "   " * 3 + ".. code-block:: python\n\n" + "   " * 4 + "x = 1\n"
    result = parse_rst(("Title\n=====\n\n" + inner + code).encode())
    assert [(b.kind, b.text) for b in result.blocks] == [
        ("heading", "Title"), ("code", "x = 1")]
    deep = parse_rst(_nested_notes(MAX_NESTING + 5, 2, 3))
    assert [b.kind for b in deep.blocks] == ["paragraph"]
    assert deep.blocks[0].text.endswith("word0 word0 word0 word1 word1 word1")


def test_deeply_nested_lists_keep_their_items() -> None:
    data = "".join("  " * i + f"- item {i}\n\n" for i in range(40)).encode()
    blocks = parse_rst(data).blocks
    assert [b.text.removeprefix("- ") for b in blocks] == [f"item {i}" for i in range(40)]
    assert [b.kind for b in blocks[:MAX_NESTING + 1]] == ["list_item"] * (MAX_NESTING + 1)


# ---------------------------------------------------------------- JSON key paths


def _deep_json(depth: int, leaves: int, key_chars: int = 190) -> bytes:
    keys = [f"k{i:03d}-" + "x" * (key_chars - 5) for i in range(depth)]
    inner = ",".join(f'"leaf {i}":"value {i}"' for i in range(leaves))
    return ("".join(f'{{"{k}":' for k in keys) + "{" + inner + "}" + "}" * depth).encode()


def test_a_deep_key_path_is_not_repeated_before_every_value() -> None:
    """200 nested keys of 190 characters before each of 500 values: 19 million characters from
    59 KB. Only the path's last keys that fit MAX_PATH_CHARS are repeated now."""
    data = _deep_json(200, 500)
    result = parse_document(data, "deep.json", CFG)
    lines = [ln for b in result.blocks if b.kind == "paragraph" for ln in b.text.split("\n")]
    assert result.blocks[0].text.startswith("k000-")  # the top-level key's heading, as before
    assert sum(len(b.text) for b in result.blocks) < 10 * len(data)
    assert len(lines) == 500 and lines[-1].endswith(".leaf 499: value 499")
    path = lines[0].split(": ")[0]
    assert path.startswith("….k19") and len(path) <= MAX_PATH_CHARS


def test_an_ordinary_key_path_stays_whole() -> None:
    data = _deep_json(2, 2, key_chars=150)
    lines = parse_document(data, "ok.json", CFG).blocks[-1].text.split("\n")
    assert lines[0] == f"k000-{'x' * 145}.k001-{'x' * 145}.leaf 0: value 0"


def test_json_text_far_larger_than_its_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backstop for any structure that still multiplies: a clear `too-large` dead letter."""
    import assets.parsing.textutil as textutil

    monkeypatch.setattr(textutil, "MAX_TEXT_RATIO", 2)
    monkeypatch.setattr(textutil, "TEXT_SLACK_CHARS", 0)
    data = _deep_json(3, 200, key_chars=60)
    with pytest.raises(TooLarge, match="times the file") as caught:
        parse_document(data, "wide.json", CFG)
    assert caught.value.reason == "too-large"
    parse_document(b'{"a": {"b": 1}}', "fine.json", CFG)


@pytest.mark.parametrize(("name", "data"), [("notes.md", b"# Notes\n\nSome words of text.\n"),
                                            ("t.xml", b"<doc><p>Some words of text.</p></doc>")])
def test_every_format_refuses_text_far_larger_than_its_file(monkeypatch: pytest.MonkeyPatch,
                                                            name: str, data: bytes) -> None:
    """A re-test found the same multiplication in RST table borders, ODF repeated rows x columns,
    XLSX shared strings and nested XML tables (300-900 M characters from a few KB): the cap is
    applied to every format's result, not JSON's alone."""
    import assets.parsing.textutil as textutil

    monkeypatch.setattr(textutil, "MAX_TEXT_RATIO", 0)
    monkeypatch.setattr(textutil, "TEXT_SLACK_CHARS", 5)
    with pytest.raises(TooLarge, match=r"characters of text from \d+ bytes"):
        parse_document(data, name, CFG)
