"""AsciiDoc (`assets/parsing/asciidoc/`): read as a manual, not as text with its markup in it."""

from __future__ import annotations

from typing import Any

import pytest

from assets.parsing import parse_document
from assets.parsing.sniff import detect_format
from tests.timeouts import alarm

# Git's manual-page source, as Documentation/git-add.txt writes it (asciidoc-py's two-line titles).
GIT_PAGE = """git-frob(1)
===========

NAME
----
git-frob - Frob the index

SYNOPSIS
--------
[verse]
'git frob' [--dry-run | -n] [--all]
\t  [--] [<pathspec>...]

DESCRIPTION
-----------
This command frobs the index.  Please see linkgit:git-commit[1] and
the 'status' subcommand; `git frob {litdd}all` frobs everything.

// a maintainer's note, not for readers
OPTIONS
-------
-n::
--dry-run::
\tDon't actually frob the file(s), just show if they exist.

--all::
\tFrob every path.
+
This is the default.

include::frob-config.txt[]

EXAMPLES
--------
* Frob the docs:
+
------------
$ git frob Documentation/
------------
"""

MODERN = """= Pump Guide
Ada Lovelace <ada@example.com>
v1.2, 2024-01-01
:product: PumpMaster
:toc:

Welcome to {product}, the *best* pump.

== Installing

[source,python]
----
import pump  # {product} is not substituted in code
----

NOTE: Turn the power off first.

[WARNING]
====
Never run the pump dry.
====

////
A comment block nobody reads.
////

++++
<div class="raw">passthrough</div>
++++

.Pressure limits
[cols="1,2",options="header"]
|===
|Model |Limit
|P-100 |4 bar
|P-200 |6 bar
|===

=== Sizes

- small
- large
"""


def _blocks(text: str, name: str = "guide.adoc") -> list[tuple[str, int, str]]:
    result = parse_document(text.encode(), name)
    return [(b.kind, b.level, b.text) for b in result.blocks]


def test_a_git_manual_page_reads_as_sections_and_option_terms() -> None:
    result = parse_document(GIT_PAGE.encode(), "git-frob.txt")
    assert result.format == "asciidoc" and result.title == "git-frob(1)"
    blocks = [(b.kind, b.level, b.text) for b in result.blocks]
    assert ("heading", 2, "OPTIONS") in blocks and ("heading", 1, "git-frob(1)") in blocks
    terms = [b.text for b in result.blocks if b.meta.get("term")]
    assert terms == ["-n\n--dry-run", "--all"]
    after = blocks[[b[2] for b in blocks].index("-n\n--dry-run") + 1]
    assert after == ("paragraph", 0, "Don't actually frob the file(s), just show if they exist.")
    text = "\n".join(b[2] for b in blocks)
    assert "git-commit(1)" in text and "the status subcommand" in text and "git frob --all frobs" in text
    assert "linkgit" not in text and "{litdd}" not in text and "maintainer's note" not in text
    assert "include::" not in text and result.metadata["includes"] == ["frob-config.txt"]
    assert ("paragraph", 0, "Includes frob config.") in blocks  # named where it goes, not followed
    synopsis = blocks[[b[2] for b in blocks].index("SYNOPSIS") + 1]
    assert synopsis == ("paragraph", 0, "git frob [--dry-run | -n] [--all]\n[--] [<pathspec>...]")
    assert ("code", 0, "$ git frob Documentation/") in blocks
    assert ("list_item", 0, "Frob the docs:") in blocks


def test_a_modern_document_header_attributes_blocks_and_table() -> None:
    result = parse_document(MODERN.encode(), "guide.adoc")
    assert result.title == "Pump Guide"
    blocks = [(b.kind, b.level, b.text) for b in result.blocks]
    texts = [b[2] for b in blocks]
    assert "Ada Lovelace <ada@example.com>" not in "\n".join(texts)  # the author line is the header's
    assert ("paragraph", 0, "Welcome to PumpMaster, the best pump.") in blocks
    assert ("heading", 2, "Installing") in blocks and ("heading", 3, "Sizes") in blocks
    code = next(b for b in result.blocks if b.kind == "code")
    assert code.text == "import pump  # {product} is not substituted in code" and code.meta == {"language": "python"}
    assert "Note: Turn the power off first." in texts and "Warning: Never run the pump dry." in texts
    assert not any("comment block" in t for t in texts) and "passthrough" in texts  # its tags gone
    assert ("caption", 0, "Pressure limits") in blocks
    table = next(b for b in result.blocks if b.kind == "table")
    assert table.text.split("\n") == ["| Model | Limit |", "|---|---|", "| P-100 | 4 bar |", "| P-200 | 6 bar |"]
    assert [t for k, _, t in blocks if k == "list_item"] == ["small", "large"]


def test_an_implicit_header_row_and_cells_over_several_lines() -> None:
    text = "= T\n\n|===\n|Name |Meaning\n\n|a |the first\nletter\n|b |the second\n|===\n"
    table = next(t for k, _, t in _blocks(text) if k == "table")
    assert table.split("\n") == ["| Name | Meaning |", "|---|---|", "| a | the first letter |", "| b | the second |"]


def test_conditions_are_decided_only_on_attributes_the_document_sets() -> None:
    text = """= T

:with-extras:

ifdef::with-extras[]
Extras are on.
endif::with-extras[]
ifndef::with-extras[]
Extras are off.
endif::[]
ifdef::set-by-the-includer[]
Kept: whoever includes this file may set it.
endif::set-by-the-includer[]
ifdef::with-extras[One line of its own.]
"""
    body = _blocks(text)[-1][2]  # the directives' lines go; what they keep joins one paragraph
    assert body == "Extras are on. Kept: whoever includes this file may set it. One line of its own."


def test_inline_markup_is_reduced_to_its_text() -> None:
    text = ("= T\n\nSee link:other.html[the other page], https://example.org[the site], <<setup,Setup>>, "
            "<<first_steps>>, xref:ref.adoc#opts[options], kbd:[Ctrl+C], footnote:[a note] and "
            "((visible)) (((hidden, term))) terms; C++ and C++ stay, a `*` stays, \\*not bold*.\n")
    para = _blocks(text)[-1][2]
    assert para == ("See the other page, the site, Setup, first steps, options, Ctrl+C, a note and visible "
                    " terms; C++ and C++ stay, a * stays, *not bold*.").replace("  ", " ")


def test_a_git_source_named_txt_is_sniffed_and_plain_text_is_not() -> None:
    assert detect_format(GIT_PAGE.encode(), "git-frob.txt").format == "asciidoc"
    fragment = "-p::\n--patch::\n\tGenerate a patch.\n\nifndef::git-format-patch[]\n-s::\n\tQuiet.\nendif::[]\n"
    assert detect_format((fragment * 3).encode(), "diff-options.txt").format == "asciidoc"
    readme = ("Release notes\n=============\n\nThis release fixes the pump.\n\n----\n\n"
              "Contact: ops@example.com\nNote: see the FAQ.\n")
    assert detect_format(readme.encode(), "NOTES.txt").format == "text"
    assert detect_format(MODERN.encode(), "guide.adoc").format == "asciidoc"
    assert detect_format(GIT_PAGE.encode(), "frob.py").format == "text"  # only .txt is asked
    # reStructuredText: a setext title, a literal block after "::" and a blank line, and equal
    # section underlines (once counted as a `----` fence closed later)
    rst = ("Frobnicator\n===========\n\nUsage\n-----\n\nRun it like this::\n\n    frob --all\n\n"
           "Notes\n-----\n\nSee below.\n")
    assert detect_format(rst.encode(), "README.txt").format == "text"
    rst_directives = ("Frob\n====\n\nIntro.\n\n.. note::\n   Back up first.\n\n"
                      "---------\nInstalling\n---------\n\nRun.\n")
    assert detect_format(rst_directives.encode(), "README.txt").format == "text"
    # Git's urls-remotes.txt writes `<head>` in its text: still AsciiDoc, not an HTML page
    page = GIT_PAGE.replace("This command frobs the index.", "Fetch <head> of the remote.")
    assert detect_format(page.encode(), "git-frob.txt").format == "asciidoc"


def test_unclosed_blocks_and_stray_markup_lose_no_text() -> None:
    text = "= T\n\n====\nInside an example never closed.\n\n----\ncode never closed\n"
    blocks = _blocks(text)
    assert ("paragraph", 0, "Inside an example never closed.") in blocks
    assert ("code", 0, "code never closed") in blocks


_SHOWN = {
        # a paragraph right under the title is the body's, not the header's
        "My Project\n==========\nThis project frobnicates widgets.\n\nSecond.":
            [("heading", "My Project"), ("paragraph", "This project frobnicates widgets."), ("paragraph", "Second.")],
        "= T\n\n[format=csv]\n|===\nA,B\n1,2\n|===\n":
            [("heading", "T"), ("table", "|  |  |\n|---|---|\n| A | B |\n| 1 | 2 |")],
        # single letters are cells, not cell specs; without a header the first line sets the width
        "= T\n\n|===\n|a|b|c\n|d|e|f\n|===\n":
            [("heading", "T"), ("table", "|  |  |  |\n|---|---|---|\n| a | b | c |\n| d | e | f |")],
        "= T\n\n[cols=2]\n|===\n|x\n|y\n|1\n|2\n|===\n":
            [("heading", "T"), ("table", "|  |  |\n|---|---|\n| x | y |\n| 1 | 2 |")],
        "= T\n\n.Steps to follow\n* one\n* two\n":
            [("heading", "T"), ("caption", "Steps to follow"), ("list_item", "one"), ("list_item", "two")],
        # a directive inside a comment block is comment: the rest of the document stays
        ":flag:\n\n////\nifndef::flag[]\n////\n\nvisible text\n": [("paragraph", "visible text")],
        "= T\n\nFixed [#123], menu:File[Save As], link:a.html[Docs, window=_blank], image:i.png[Logo].\n":
            [("heading", "T"), ("paragraph", "Fixed [#123], File > Save As, Docs, Logo.")],
        # "Example" over a `----` that closes later is a paragraph and a listing, not a title
        "= T\n\nExample\n----\n$ ls -l\n----\n\nMore\n\n== Next\n":
            [("heading", "T"), ("paragraph", "Example"), ("code", "$ ls -l"), ("paragraph", "More"),
             ("heading", "Next")],
        "= T\n\n  steps:\n    - run: make\n": [("heading", "T"), ("code", "steps:\n  - run: make")],
        "= T\n\nimage::flow.png[Data flow, 300]\n\n'''\n\ntoc::[]\n\n++++\n<p>Raw &amp; shown</p>\n++++\n":
            [("heading", "T"), ("caption", "Data flow"), ("paragraph", "Raw & shown")],
        # found by a code review: a wrapped line that looks like a list item is the paragraph's
        # ("0.  Also paths..." in gitcore-tutorial); another section's underline closes no fence;
        # a quoted CSV field holds the separator; a block title on the last line is shown
        "= T\n\nThis patch was written by\nJ. Random Hacker and reviewed.\n":
            [("heading", "T"), ("paragraph", "This patch was written by J. Random Hacker and reviewed.")],
        "= T\n\nSYNOPSIS\n----------\ngit foo\n\nDESCRIPTION\n----------\nText here.\n":
            [("heading", "T"), ("heading", "SYNOPSIS"), ("paragraph", "git foo"), ("heading", "DESCRIPTION"),
             ("paragraph", "Text here.")],
        '= T\n\n[format=csv]\n|===\nName,Note\n"Doe, J.",ok\n|===\n':
            [("heading", "T"), ("table", "|  |  |\n|---|---|\n| Name | Note |\n| Doe, J. | ok |")],
        "= T\n\nText.\n\n.A title at the end":
            [("heading", "T"), ("paragraph", "Text."), ("caption", "A title at the end")],
    }


@pytest.mark.parametrize("text", list(_SHOWN), ids=range(len(_SHOWN)))
def test_what_asciidoctor_shows_is_kept(text: str) -> None:
    """Found by an adversarial review and a code review: text Asciidoctor renders that the
    first reader lost, or read as other blocks."""
    assert [(k, t) for k, _, t in _blocks(text)] == _SHOWN[text]


def test_attributes_and_columns_cannot_blow_up() -> None:
    """Attribute values built by doubling (`:aN: {aN-1}{aN-1}`) grew to gigabytes; a `cols`
    count of 99,999,999,999 allocated a row that wide."""
    doubling = ":a0: xx\n" + "".join(f":a{i}: {{a{i - 1}}}{{a{i - 1}}}\n" for i in range(1, 40)) + "\n{a39}\n"
    with alarm(5):
        text = _blocks(doubling)[-1][2]
        table = _blocks('= T\n\n[cols="300000000*"]\n|===\n|a\n|===\n')[-1]
    assert 0 < len(text) <= 4096
    assert table[0] == "table" and table[2].endswith("| a |")


def test_cell_spans_keep_every_cell_in_its_column() -> None:
    """Cells were laid out in order, so a `2+|` or `.2+|` cell shifted every later cell of the
    table into the wrong column (a price under the wrong product)."""
    text = ('= T\n\n[cols="3*"]\n|===\n|OS |Arch |Tier\n\n'
            ".2+|Linux |x86_64 |1\n|arm64 |2\n2+|macOS, any |3\n3*|none\n|===\n")
    table = next(t for k, _, t in _blocks(text) if k == "table")
    assert table.split("\n") == ["| OS | Arch | Tier |", "|---|---|---|", "| Linux | x86_64 | 1 |",
                                 "| Linux | arm64 | 2 |",  # a row span's label repeated: each row reads alone
                                 "| macOS, any |  | 3 |", "| none | none | none |"]


def test_a_nested_table_reads_as_its_cells_text() -> None:
    text = ('= T\n\n[cols="1,2"]\n|===\n|Name |Detail\n\n|pump\na|Ratings:\n[cols="2"]\n!===\n!P-100 !4 bar\n'
            "!P-200 !6 bar\n!===\n|valve |manual\n|===\n")
    table = next(t for k, _, t in _blocks(text) if k == "table")
    assert table.split("\n") == ["| Name | Detail |", "|---|---|",
                                 "| pump | Ratings: P-100; 4 bar P-200; 6 bar |", "| valve | manual |"]


def test_a_quote_keeps_its_attribution_and_a_wrapped_attribute_its_value() -> None:
    text = ("= T\n:motto: Pumps that \\\n  never run \\\ndry\n\nOur motto: {motto}.\n\n"
            "[quote, Ada Lovelace, Notes]\n____\nThe engine weaves patterns.\n____\n\n"
            '[verse, citetitle="Fog", attribution="Carl Sandburg"]\nThe fog comes\non little cat feet.\n')
    assert [(k, t) for k, _, t in _blocks(text)] == [
        ("heading", "T"), ("paragraph", "Our motto: Pumps that never run dry."),
        ("paragraph", "The engine weaves patterns."), ("paragraph", "\u2014 Ada Lovelace, Notes"),
        ("paragraph", "The fog comes\non little cat feet."), ("paragraph", "\u2014 Carl Sandburg, Fog")]


def test_spans_and_wrapped_attributes_cannot_blow_up() -> None:
    """Every cell spanning 256 columns and 64 rows would have made a table 16,000 times its
    cells; an attribute wrapped over 100,000 lines is joined up to the value's limit, and the
    lines past it are read as text, not lost."""
    spans = "= T\n\n[cols=\"256*\"]\n|===\n" + "256.64+|x\n" * 5000 + "|===\n"
    wrapped = ":a: " + "word \\\n" * 100000 + "end\n\n{a}\n"
    with alarm(10):
        table = next(t for k, _, t in _blocks(spans) if k == "table")
        blocks = _blocks(wrapped)
    assert table.count("\n") < 5000 and table.count("x") == 5000
    value, rest = blocks[-1][2], blocks[-2][2]
    assert value.startswith("word word") and len(value) <= 4096 and rest.endswith("word \\ end")


def test_a_block_opening_straight_into_another_is_no_section_title() -> None:
    """Found by an adversarial pass: `****` over `====` was read as a title underlined, and a
    quote's `____` over a `----` listing too, which then swallowed the rest of the page as code."""
    text = ("= T\n\n****\n====\nExample inside a sidebar.\n====\n****\n\n[quote, Ada Lovelace]\n____\n----\n"
            "quoted code\n----\n____\n\nAfter text.\n\n[verse, Carl Sandburg, Fog]\n____\nThe fog comes\n"
            "on little cat feet.\n____\n")
    assert [(k, t) for k, _, t in _blocks(text)] == [
        ("heading", "T"), ("paragraph", "Example inside a sidebar."), ("code", "quoted code"),
        ("paragraph", "\u2014 Ada Lovelace"), ("paragraph", "After text."),
        ("paragraph", "The fog comes\non little cat feet."), ("paragraph", "\u2014 Carl Sandburg, Fog")]


def _reader(files: dict[str, str]) -> Any:
    from assets.parsing.asciidoc import resolve_include

    def read(target: str, base: str) -> tuple[str, bytes] | None:
        path = resolve_include(base, target)
        return (path, files[path].encode()) if path in files else None

    return read


def test_an_include_is_read_in_place_with_the_includers_attributes_tags_lines_and_level_offset() -> None:
    from assets.parsing.asciidoc import parse_asciidoc

    files = {"doc/opts.txt": "ifdef::git-log[]\n--graph::\n\tDraw the history.\nendif::git-log[]\n"
                             "ifndef::git-log[]\n--cached::\n\tOnly the index.\nendif::git-log[]\n",
             "doc/part.adoc": "= Part\n\n== Inner\n\n// tag::a[]\nTagged text.\n// end::a[]\nUntagged text.\n",
             "doc/lines.txt": "one\n\ntwo\n\nthree\n"}
    page = ("= Log\n:git-log: 1\n\ninclude::opts.txt[]\n\ninclude::part.adoc[leveloffset=+1]\n\n"
            "include::part.adoc[tag=a]\n\ninclude::lines.txt[lines=3..5]\n\n== After\n\nEnd.\n")
    result = parse_asciidoc(page.encode(), "doc/log.adoc", _reader(files))
    blocks = [(b.kind, b.level, b.text) for b in result.blocks]
    assert ("paragraph", 0, "Draw the history.") in blocks and "Only the index." not in str(blocks)
    assert ("heading", 2, "Part") in blocks and ("heading", 3, "Inner") in blocks  # moved one level down
    assert ("heading", 2, "After") in blocks  # the offset ends with the include
    assert [t for k, _, t in blocks if "Tagged" in t] == ["Tagged text. Untagged text.", "Tagged text."]
    assert ("paragraph", 0, "two") in blocks and ("paragraph", 0, "three") in blocks
    assert not any(t == "one" for _, _, t in blocks) and "tag::" not in str(blocks)
    assert result.metadata["included"] == ["doc/opts.txt", "doc/part.adoc", "doc/lines.txt"]
    assert result.metadata["includes"] == ["opts.txt", "part.adoc", "part.adoc", "lines.txt"]


def test_includes_are_bounded_by_cycles_depth_and_size() -> None:
    from assets.parsing.asciidoc import parse_asciidoc, resolve_include

    loop = {"a.adoc": "A text.\n\ninclude::b.adoc[]\n", "b.adoc": "B text.\n\ninclude::a.adoc[]\n"}
    result = parse_asciidoc(b"= T\n\ninclude::a.adoc[]\n", "t.adoc", _reader(loop))
    assert [b.text for b in result.blocks] == ["T", "A text.", "B text.", "Includes a."]
    chain = {f"c{i}.adoc": f"Level {i}.\n\ninclude::c{i + 1}.adoc[]\n" for i in range(20)}
    texts = [b.text for b in parse_asciidoc(b"include::c0.adoc[]\n", "t.adoc", _reader(chain)).blocks]
    assert texts[:8] == [f"Level {i}." for i in range(8)] and texts[8] == "Includes c8."
    big = {"big.txt": "word " * 1000}
    result = parse_asciidoc(b"= T\n\ninclude::big.txt[]\n", "t.adoc", _reader(big), max_bytes=100)
    assert [b.text for b in result.blocks] == ["T", "Includes big."] and result.warnings
    assert resolve_include("doc/a.adoc", "../b.adoc") == "b.adoc"
    assert [resolve_include("doc/a.adoc", t) for t in ("../../x", "/etc/passwd", "http://h/x", "..\\x", "")] == [
        None] * 5


def test_tag_and_line_selection_is_linear_and_repeats_are_bounded() -> None:
    """Found by an adversarial review: the open tags were rebuilt on every line and every line
    was tested against every range (370 KB of tag lines took 11 s, 10,000 ranges over 1.6 MB
    took 66 s); a 4 KB page including one file a hundred times grew to 104 MB."""
    from assets.parsing.asciidoc import MAX_INCLUDE_REPEATS, parse_asciidoc

    tagged = "".join(f"// tag::t{i}[]\nline {i}\n// end::t{i}[]\n" for i in range(20000))
    numbered = "".join(f"row {i}\n" for i in range(200000))
    files = {"tagged.adoc": tagged, "numbered.txt": numbered, "small.txt": "A small part.\n"}
    ranges = ";".join(f"{i}..{i}" for i in range(1, 20001, 2))
    page = (f"= T\n\ninclude::tagged.adoc[tags=t5;t7;zzz]\n\ninclude::numbered.txt[lines=\"{ranges}\"]\n\n"
            + "include::small.txt[]\n\n" * 10)
    with alarm(10):
        result = parse_asciidoc(page.encode(), "t.adoc", _reader(files))
    text = "\n".join(b.text for b in result.blocks)
    assert "line 5" in text and "line 7" in text and "line 6" not in text
    assert "row 0" in text and "row 1 " not in text and "row 2" in text
    assert text.count("A small part.") == MAX_INCLUDE_REPEATS and result.warnings
