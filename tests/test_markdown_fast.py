"""The Rust Markdown parser gives the blocks markdown-it-py gives (assets/parsing/markdown_fast.py).

Stored parses are not re-made when the parser underneath changes, so the fast path must not
change one block: each sample and every Markdown file of this repository goes through both
parsers and the block builder, and the results must be equal. Over 742 real files (Node.js and
Debian documentation, the dev corpora, site-packages READMEs) they were. The one difference,
past markdown-it-py's nesting limit, is where markdown-it-py loses text (last test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assets.parsing import markdown, markdown_fast
from assets.parsing.markdown import _MD, _blocks, parse_markdown, split_front_matter

ROOT = Path(__file__).resolve().parent.parent

SAMPLES = {
    "setext and atx": "Title\n=====\n\nIntro text.\n\nPart\n----\n\n### Deep *emph* `code`\n",
    "tight and loose lists": "- one\n- two\n  - nested **bold**\n  - again\n\n1. first\n\n   second para\n2. next\n",
    "item holding a list only": "- - inner\n  - more\n-\n  empty first\n",
    "quotes": "> quoted *text*\n> - a list in a quote\n>\n> > deeper\n",
    "tables": "| a | b \\| c | `x|y` |\n|---|:-:|--:|\n| 1 | 2 |\n| *3* | [l](u) | 5 | 6 |\n\n|solo|\n|-|\n",
    "code": "```python title\nprint('# not a heading')\n```\n\n    indented\n    code\n\n~~~\n~~~\n",
    "html": "<div>\n<p>block</p>\n</div>\n\n<!-- a comment -->\n\ntext <b>inline</b> <br/> end\n",
    "links and images": "[label](http://x.y \"t\") [ref][r] <http://a.b/%20c?d=%E2%82%AC> <me@x.org>\n"
                        "![alt *with* `code`](i.png) [![inner](a.png)](b)\n\n[r]: http://ref.example\n",
    "entities and escapes": "&amp; &copy; &#35; &nbsp; \\* \\_ \\[ not a link \\] &bogus;\n",
    "breaks": "line one  \nline two\\\nline three\nline four\n",
    "emphasis edge cases": "**bold *nested* bold** _a_b_ *unclosed __mixed__ ***\n",
    "headings in items": "- # heading in an item\n  text after\n- plain\n",
    "empty": "",
    "only whitespace": "   \n\n\t\n",
    "unicode": "# Überschrift — ñ\n\n日本語のテキスト。 Emoji 🎉 and RTL עברית.\n",
    "control characters": "nul\x00byte\n\n\ufeff# bom\n\na\r\nb\r\n\r\n# crlf\r\n\n&#0; &#xD800; &#1114112;\n",
}


def _both(body: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    slow = [b.to_dict() for b in _blocks(_MD.parse(body))]
    fast = [b.to_dict() for b in _blocks(markdown_fast.tokens(body))]
    return slow, fast


def test_the_rust_parser_is_installed() -> None:
    assert markdown_fast.available(), "markdown-it-pyrs is a dependency: `make setup` installs it"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_parse_to_the_same_blocks(name: str) -> None:
    slow, fast = _both(SAMPLES[name])
    assert fast == slow


def test_every_markdown_file_of_the_repository_parses_to_the_same_blocks() -> None:
    files = [p for p in sorted(ROOT.rglob("*.md")) if not {".venv", ".venv-peers", "node_modules"} & set(p.parts)]
    assert len(files) >= 10
    for path in files:
        _front, body, _warning = split_front_matter(path.read_text(errors="replace"))
        slow, fast = _both(body)
        assert fast == slow, path


def test_a_failure_in_the_rust_parser_falls_back_to_markdown_it_py(monkeypatch: pytest.MonkeyPatch) -> None:
    class PanicException(BaseException):  # what pyo3 raises for a panic: not an Exception
        pass

    def panic(_body: str) -> list[markdown_fast.Tok]:
        raise PanicException("rust panicked")

    text = SAMPLES["tables"] + SAMPLES["tight and loose lists"]
    expected = parse_markdown(text).blocks
    monkeypatch.setattr(markdown_fast, "tokens", panic)
    assert parse_markdown(text).blocks == expected
    monkeypatch.setattr(markdown_fast, "available", lambda: False)
    assert markdown._tokens(text) and parse_markdown(text).blocks == expected


def test_an_interrupt_during_the_rust_parse_is_not_read_as_a_panic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every BaseException from the Rust parser was taken for a panic and the parse went on
    in markdown-it-py: a Dagster step interrupted there (its interrupt is a BaseException)
    kept running. Only a panic falls back now."""
    import dagster as dg

    def interrupted(_body: str) -> list[markdown_fast.Tok]:
        raise dg.DagsterExecutionInterruptedError("terminated from the UI")

    monkeypatch.setattr(markdown_fast, "available", lambda: True)
    monkeypatch.setattr(markdown_fast, "tokens", interrupted)
    with pytest.raises(dg.DagsterExecutionInterruptedError):
        parse_markdown("# Title\n\ntext\n")


def test_deep_nesting_keeps_the_text_markdown_it_py_drops() -> None:
    """The one difference found: past its nesting limit (20 levels: ten nested lists, twenty
    quote markers) markdown-it-py silently drops the text; the Rust parser keeps it."""
    quote = ">" * 20 + " deep quote\n"
    lists = "".join("  " * i + f"- item {i}\n" for i in range(10))
    for text, lost in ((quote, "deep quote"), (lists, "item 9")):
        slow, fast = _both(text)
        assert lost not in [b["text"] for b in slow]
        assert lost in [b["text"] for b in fast]
        assert lost in [b.text for b in parse_markdown(text).blocks]


def test_an_input_the_rust_parser_panics_on_parses_through_markdown_it_py() -> None:
    """markdown-it-pyrs 0.4 panics on `[` followed by a code span that never closes."""
    text = "# Notes\n\nsee [`foo for details\n\n- item\n"
    with pytest.raises(BaseException, match="index out of bounds"):
        markdown_fast.tokens(text)
    assert [b.to_dict() for b in parse_markdown(text).blocks] == [b.to_dict() for b in _blocks(_MD.parse(text))]


@pytest.mark.parametrize("line", [">" * 50_000 + " quoted", "- " * 40_000 + "item", "> " * 150 + "quoted",
                                  # a list item's continuation line is indented (a review found it)
                                  "1.  an item\n\n    " + ">" * 50_000 + " quoted",
                                  # nested by indentation alone: no markers to count, Python's recursion
                                  "\n".join("  " * i + "- item" for i in range(400)) + " deepest",
                                  # inline markup: 50,000 nested images or emphases crashed the Rust
                                  # parser too (SIGSEGV, an attacker pass), and emphasis took it quadratic time
                                  "![" * 50_000 + "a" + "](x)" * 50_000 + " imaged",
                                  "*a " * 50_000 + "b" + " a*" * 50_000 + " emphasised",
                                  # a re-test slipped past the first scanner: a line it took for a code
                                  # fence (the parser did not), emphasis opened after punctuation, and
                                  # a thousand paragraphs each just under the limit (2.4 GB)
                                  "intro\n```x`\n" + "![" * 50_000 + "a" + "](x)" * 50_000 + " fenced",
                                  "<div>\n```\n\n" + "![" * 50_000 + "a" + "](x)" * 50_000 + " in html",
                                  "-*a " * 40_000 + "b" + " a*" * 40_000 + " punctuated",
                                  "\n\n".join(["*a " * 999 + "b" + " a*" * 999] * 100) + " many"])
def test_nesting_past_the_limit_is_read_as_plain_text(line: str) -> None:
    """One line of 50,000 `>` crashed the Rust parser (SIGSEGV): every sync and plan of its
    source died with no dead letter. Past MAX_NESTING the document is plain text, all of it."""
    from assets.parsing import parse_document

    result = parse_document(f"# Notes\n\n{line}\n\nthe last words\n".encode(), "deep.md")
    assert "read as plain text" in " ".join(result.warnings)
    text = " ".join(b.text for b in result.blocks)
    assert line.split()[-1] in text and "the last words" in text


@pytest.mark.parametrize("body", [
    " ".join(f"*em{i}* and **bold** [a link](u) _x_ snake_case_name" for i in range(3000)),  # balanced
    "```python\n" + "\n".join(f"    self._x{i} = f(*args, **kw)[0]" + ("\n" if i % 50 == 0 else "")
                               for i in range(3000)) + "\n```",  # code: its blank lines end the count
    "[" * markdown.MAX_INLINE_NESTING + "a" + "]" * markdown.MAX_INLINE_NESTING])
def test_inline_markup_within_the_limit_stays_markdown(body: str) -> None:
    result = parse_markdown(f"# Notes\n\n{body}\n\nthe last words\n")
    assert not result.warnings and result.blocks[-1].text == "the last words"


def test_nesting_within_the_limit_stays_markdown() -> None:
    body = "# Notes\n\n" + "> " * markdown.MAX_NESTING + "quoted\n"
    assert markdown.nesting(body) <= markdown.MAX_NESTING
    result = parse_markdown(body)
    assert not result.warnings and result.blocks[-1].text == "quoted"
