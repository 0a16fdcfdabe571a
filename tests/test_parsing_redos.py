"""Untrusted documents cannot make a parser run for minutes (ReDoS and quadratic loops).

An audit timed every regular expression a document reaches on long runs of the characters it
repeats. These inputs took 10 to 45 s each to parse before the rewrites (super-linear growth: a
few more kilobytes, minutes); each must now parse within an alarm far above what it costs, and
each rewrite must read short strings exactly as the pattern it replaced.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

import pymupdf
import pytest

from assets.parsing import parse_document
from assets.parsing.sniff import looks_like_asciidoc
from connectors.config import ParseConfig
from tests.timeouts import alarm

LIMIT_S = 8  # each case parses in well under a second now; before, 16-45 s


def _pdf_with_a_dotted_heading(dots: int) -> bytes:
    """A page whose heading is "Ab....x": the contents-entry patterns' worst case (41 s at 1,600)."""
    doc = pymupdf.open()
    heading = "Ab" + "." * dots + "x"
    page = doc.new_page(width=max(612, 11 * len(heading) + 200), height=900)
    page.insert_text((50, 60), heading, fontsize=18, fontname="helv")
    y = 100
    for _ in range(70):
        page.insert_text((50, y), "The quick brown fox jumps over the lazy dog while the pump runs. " * 3,
                         fontsize=10, fontname="helv")
        y += 11
    page.insert_text((50, y + 20), "Introduction", fontsize=18, fontname="helv")
    return bytes(doc.tobytes())


def _mail_with_a_part_header(value: str) -> bytes:
    return ("From: a@b.c\nTo: d@e.f\nSubject: report\nMessage-ID: <1@x>\nMIME-Version: 1.0\n"
            "Content-Type: multipart/mixed; boundary=BB\n\n--BB\nContent-Type: text/plain\n\n"
            "Hello there, the report is attached.\n--BB\nContent-Type: text/plain\n"
            f"Content-Disposition: attachment; filename={value}\n\nx\n--BB--\n").encode()


def _mbox_with_quoted_fields(messages: int) -> bytes:
    quotes = '"' * 16000
    return "".join(f"From x@y Mon Jan  1 00:00:00 2024\nFrom: {quotes}\nTo: {quotes}\nSubject: s{i}\n"
                   f"Message-ID: <{i}@m>\n\nBody {i} of the harbour.\n\n" for i in range(messages)).encode()


CASES: dict[str, Callable[[], tuple[bytes, str]]] = {
    # a MIME part's header field, parsed whole (only the top's were cut): 77 s for 200 KB of '"'
    "email part header quotes": lambda: (_mail_with_a_part_header('"' * 200000), "q.eml"),
    # ... and 1.8 GB for 224 KB of encoded words (CPython gh-136063)
    "email part header encoded words": lambda: (_mail_with_a_part_header('"' + "=?utf-8?q?a?= " * 16000 + '"'),
                                                "ew.eml"),
    # top-level fields cut at 16 KB were still 2-3 s each: an mbox of 5 messages, 3 such fields each
    "mbox header quotes": lambda: (_mbox_with_quoted_fields(5), "q.mbox"),

    "pdf contents entry": lambda: (_pdf_with_a_dotted_heading(1600), "dots.pdf"),
    "text hyphenated line breaks": lambda: (("Para\n\n" + "ef gh-\n" * 16000).encode(), "breaks.txt"),
    # two `\s*` around one run of spaces in a meta refresh's content: 33 s for 60 KB
    "html meta refresh spaces": lambda: (('<html><head><title>Moved</title><meta http-equiv="refresh" content='
                                          + " " * 64000 + "x></head><body><p>This page has moved.</p></body></html>")
                                         .encode(), "moved.html"),
    "html heading anchor": lambda: (("<h1>Title" + " " * 64000 + "x</h1><p>body text</p>").encode(), "a.html"),
    "rst footnote spaces": lambda: (("Title\n=====\n\nPara " + "\t" * 16000 + "x\n").encode(), "a.rst"),
    "rst link spaces": lambda: (("Title\n=====\n\nPara `" + " " * 64000 + "x\n").encode(), "b.rst"),
    # AsciiDoc: openers without closers, each retried to the end of the paragraph, were n²
    "asciidoc strong openers": lambda: (("= T\n\n" + "**a *b `c +d #e 'f " * 8000 + "\n").encode(), "a.adoc"),
    "asciidoc index-term openers": lambda: (("= T\n\n" + "(((a ((b " * 16000 + "\n").encode(), "b.adoc"),
    "asciidoc term colons": lambda: (("= T\n\n" + "a::b;;" * 20000 + "\n").encode(), "c.adoc"),
    "asciidoc unclosed fences": lambda: (("= T\n\n" + "====\n****\n____\n--\ntext\n" * 5000).encode(), "d.adoc"),
    # macros whose target or text ran to the end of the paragraph from every opener
    "asciidoc xref openers": lambda: (("= T\n\n" + "<<a," * 50000 + "\n").encode(), "e.adoc"),
    "asciidoc link openers": lambda: (("= T\n\n" + "link:" * 40000 + " mailto:" * 20000 + "\n").encode(), "f.adoc"),
    "asciidoc macro text openers": lambda: (("= T\n\n" + "footnote:[kbd:[xref:a[" * 10000 + "\n").encode(), "g.adoc"),
    "asciidoc unclosed conditions": lambda: (("= T\n\n" + "ifdef::a[]\ntext\n" * 100000).encode(), "h.adoc"),
    # an author line of "Name   ;" runs failing at its end: exponential (51 s for 14 names, 214 bytes)
    "asciidoc author line": lambda: (("= Team handbook\n" + "Alice   ;" * 40 + " and the release team!\n\nText.\n")
                                      .encode(), "j.adoc"),
    "asciidoc attribute value spaces": lambda: ((":a: x" + " " * 64000 + "y\n\n= T" + " " * 64000 + "z\n")
                                                 .encode(), "i.adoc"),
    # a run of siblings retried as records from each position, titles' ancestors re-read: n²
    "xml sibling run": lambda: (("<?xml version='1.0'?><r>" + "<p>x</p>" * 20000 + "</r>").encode(), "run.xml"),
    "xml sibling titles": lambda: (("<?xml version='1.0'?><r>" + "<title>x</title>" * 20000 + "</r>").encode(),
                                   "titles.xml"),
    # each heading sliced the rest of the paragraph off: 3.6 s for 60,000 lines, 40 s for 200,000
    "text all-caps lines": lambda: ("\n".join(f"FOO BAR {i}" for i in range(200000)).encode(), "caps.txt"),
    # plain-text documents' own patterns (parse 27): a banner's lazy words between two runs of
    # spaces, an Emacs mode line of many markers, a Vim help line of many "vi:" (3.3, 1.7 and 1.4 s
    # for 20,000 characters, quadratic)
    "text banner spaces": lambda: (("Intro\n\n--- x" + " " * 200000 + "y\n\nBody text.\n").encode(), "b.txt"),
    "text mode markers": lambda: (("-*- " * 50000 + "\n\nBody text.\n").encode(), "NEWS"),
    "vim help modeline openers": lambda: (("*x.txt*  For Vim version 9.0.\n\nTitle\n\n" + "vi:" * 70000
                                           + "\n\n vim:tw=78:ft=help:\n").encode(), "x.txt"),
    # the Markdown nesting guard tried every mark of a run as an opener: 21 s for 40,000 stars
    "markdown star run": lambda: (("Title\n\n" + "**" * 20000 + "\n").encode(), "stars.md"),
    "markdown underscore run": lambda: (("Title\n\n" + "_" * 40000 + "x\n").encode(), "under.md"),
    # the generated-index test read each unclosed tag to the end of the page: 28 s for 5,000
    "html unclosed table tags": lambda: (("<html><body><p>index</p>" + "<table class='a " * 20000).encode(), "t.html"),
    # joined by concatenation: 21 s for 4 MB (a quadratic copy, not a pattern)
    "text one long paragraph": lambda: (("Title\n\n" + "the pump runs quietly while the tank fills.\n" * 90000)
                                        .encode(), "long.txt"),
}


def test_the_asciidoc_sniff_of_every_txt_is_linear() -> None:
    """The sniff reads the first 64 KB of every .txt: a run of `<<a,` there took 5.7 s (each
    opener scanned to the end of the line), now milliseconds; its other signs bound their runs."""
    for text in ("<<a," * 16000, "link:" * 13000, "include::" + "[" * 64000):
        with alarm(2):
            looks_like_asciidoc(text)


def test_a_list_of_constants_is_headings_not_a_recursion_error() -> None:
    """A thousand ALL-CAPS lines recursed once each and dead-lettered a harmless file."""
    data = ("\n".join(f"CONST_{i}" for i in range(3000)) + "\n\nSome body text here.").encode()
    result = parse_document(data, "constants.txt", ParseConfig())
    assert sum(b.kind == "heading" for b in result.blocks) == 3000 and result.blocks[-1].text == "Some body text here."


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pathological_document_parses_in_linear_time(case: str) -> None:
    data, name = CASES[case]()
    with alarm(LIMIT_S):
        parse_document(data, name, ParseConfig())


def _random_strings(pieces: list[str], n: int, longest: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(0, longest)))


def test_contents_entries_are_read_as_the_patterns_read_them() -> None:
    from assets.parsing.toc import toc_entries, toc_entry

    one = re.compile(r"^(.+?)(?:\s*(?:\.\s*){2,}|\s+)(\d{1,4}|[ivxlcdm]{1,6})$", re.IGNORECASE)
    joined = re.compile(r"\s*(.+?)(?:\s*(?:\.\s*){2,}|\s+)(\d{1,4})(?=\s|$)")
    pieces = [*"aA. . .  \t\n1201234iIVxXmİı٣,", "Intro", "12345", " ..", "\u00a0"]
    for s in _random_strings(pieces, 20000, 14, seed=3):
        m = one.match(s)
        assert toc_entry(s) == ((m.group(1), m.group(2)) if m else None), repr(s)
        text = s.strip()
        found = list(joined.finditer(text))
        whole = "".join(e.group(0) for e in found).strip() == text  # how the PDF parser uses them
        spans = toc_entries(text)
        assert (text[:spans[-1][1] if spans else 0].strip() == text) == whole, repr(text)
        if whole:
            assert spans == [(e.start(), e.end(), e.group(1)) for e in found], repr(text)
    assert toc_entry("Installation ........ 12") == ("Installation", "12")
    assert [t for _, _, t in toc_entries("Intro 1 Setup .... 4 Use 9")] == ["Intro", "Setup", "Use"]


@pytest.mark.parametrize(("old", "new", "pieces"), [
    (r"\s*[¶#§]\s*$", "assets.parsing.html:_TRAILING_ANCHOR", [" ", "\t", "¶", "#", "§", "a", "\n"]),
    (r"\s*\[(?:#\w*|\*|\d+|[A-Za-z][\w-]*)\]_", "assets.parsing.rst:_FOOTNOTE",
     [" ", "\t", "[", "]", "_", "#", "*", "1", "a", "-", "x"]),
    (r"`([^`<]*?)\s*<[^>`]*>`__?", "assets.parsing.rst:_LINK", [" ", "`", "<", ">", "_", "a", "\t"]),
    (r":(?:[\w+.-]+:)?([\w+.-]+):`([^`]*?)(?:\s*<[^>`]*>)?`", "assets.parsing.rst:_ROLE",
     [":", "`", " ", "<", ">", "a", ".", "-"]),
    (r"[^\W\d_]+-[^\W\d_]+", "assets.parsing.pdf:_COMPOUND", ["a", "b", "-", "1", "_", " ", "é"]),
    (r"""content\s*=\s*["']?\s*(\d+(?:\.\d*)?)\s*[;,]\s*(?:url\s*=\s*)?["']?([^"'>\s]+)""",
     "assets.parsing.html:_REFRESH_TO", ["content", "=", " ", '"', "'", "0", "1", ".", ";", ",", "url=", "x", ">"]),
    (r"^\w[\w'.-]*(?: +\w[\w'.-]*){0,2}(?: +<[^<>\s]+>)?(?: *; *\w[\w'. -]*(?:<[^<>\s]+>)?)*$",
     "assets.parsing.asciidoc.reader:_AUTHOR_LINE", ["a", " ", ";", "<", ">", "@", ".", "'", "-", "b", "!"]),
])
def test_rewritten_patterns_match_what_they_replaced(old: str, new: str, pieces: list[str]) -> None:
    import importlib

    module, name = new.split(":")
    rewritten: re.Pattern[str] = getattr(importlib.import_module(module), name)
    before = re.compile(old)
    for s in _random_strings(pieces, 20000, 12, seed=5):
        assert before.sub("|", s) == rewritten.sub("|", s), repr(s)
        assert before.findall(s) == rewritten.findall(s), repr(s)


def test_comments_are_cut_as_the_pattern_cut_them() -> None:
    from assets.parsing.html import _without_comments

    before = re.compile(r"<!--.*?-->", re.DOTALL)
    for s in _random_strings(["<!--", "-->", "-", "<", "!", "a", ">", "\n"], 20000, 10, seed=7):
        assert before.sub("", s) == _without_comments(s), repr(s)
    with alarm(1):  # a run of unclosed openers, each retried to the end: 5 s for a 64 KB head
        assert _without_comments("<!--" * 16000 + "x") == "<!--" * 16000 + "x"


def _join_lines_before(lines: list[str], vocabulary: frozenset[str]) -> str:
    """join_lines as it was: concatenation and a search over the whole paragraph (quadratic)."""
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
            continue
        if out.endswith(("-", "\u2010", "\u00ad")) and len(out) > 1 and out[-2].isalpha() and line[:1].islower():
            head = re.search(r"(\w+)\W?$", out)
            tail = re.match(r"\w+", line)
            compound = f"{head.group(1)}-{tail.group(0)}".lower() if head and tail else ""
            out = out[:-1] + ("-" if compound and compound in vocabulary else "") + line
        elif out.endswith("\u00ad"):
            out = out[:-1] + line
        else:
            out = out + " " + line
    return out


def test_joining_lines_gives_what_it_gave_before() -> None:
    from assets.parsing.textutil import _HYPHENS, _last_word, join_lines

    assert _HYPHENS == ("-", "\u2010", "\u00ad")  # the reference above repeats them
    for s in _random_strings(["a", "B", "_", "1", "-", " ", ".", "é", "\u00ad"], 20000, 10, seed=9):
        m = re.search(r"(\w+)\W?$", s)
        assert _last_word([s]) == (m.group(1) if m else None), repr(s)
    rng = random.Random(11)
    pieces = ["well-", "known", "infor-", "mation", "a", "-", "B", "\u00ad", " ", "x-", "\u2010", "é"]
    vocabulary = frozenset({"well-known", "a-a", "x-known"})
    for _ in range(20000):
        lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(0, 6))]
        assert join_lines(lines, vocabulary) == _join_lines_before(lines, vocabulary), lines


def test_a_banners_words_are_read_as_the_pattern_read_them() -> None:
    """`text_structure._banner_words` replaced a pattern that backtracked quadratically."""
    from assets.parsing.text_structure import _banner_words

    before = re.compile(r"^[-=*#~_]{3,}\s+(\S.*?)\s+[-=*#~_]{3,}$")
    for s in _random_strings(["-", "=", "*", " ", "\t", "a", "b", "_", "#"], 20000, 14, seed=7):
        m = before.match(s.strip())
        assert _banner_words(s) == (m.group(1) if m else None), repr(s)
