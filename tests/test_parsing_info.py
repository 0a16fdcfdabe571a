"""GNU info manuals (`assets/parsing/info.py`): nodes read as a manual, not as plain text."""

from __future__ import annotations

import gzip

from assets.parsing import parse_document
from assets.parsing.sniff import detect_format

INFO = """This is tool.info, produced by makeinfo version 6.8 from tool.texi.

This manual is for Tool, version 1.0.
INFO-DIR-SECTION Utilities
START-INFO-DIR-ENTRY
* Tool: (tool).                 Frob files.
END-INFO-DIR-ENTRY

\x1f
File: tool.info,  Node: Top,  Next: Invoking,  Up: (dir)

Tool 1.0
********

This manual documents Tool, which frobs files.

* Menu:

* Invoking::                    How to run it.
* Concept Index::               Topics.

\x1f
File: tool.info,  Node: Invoking,  Next: Copying This Manual,  Prev: Top,  Up: Top

1 Invoking Tool
***************

Tool reads its input and writes the frobbed result.

1.1 Output Options
==================

‘-O FILE’
‘--output-document=FILE’
     The documents will not be written to the appropriate files, but
     all will be concatenated together and written to FILE.

     Use of ‘-O’ is not intended to mean simply use the name FILE.

   • Tool is non-interactive, meaning that it can work in the
     background, while the user is not logged on.

     tool -O out.txt in.txt

\x1f
File: tool.info,  Node: Copying This Manual,  Next: Concept Index,  Prev: Invoking,  Up: Top

Appendix A Copying This Manual
******************************

Everyone is permitted to copy and distribute verbatim copies of this
license document, but changing it is not allowed.

\x1f
File: tool.info,  Node: Concept Index,  Prev: Copying This Manual,  Up: Top

Concept Index
*************

\x00\x08[index\x00\x08]
* Menu:

* output file:                           Invoking.             (line 12)

\x1f
Tag Table:
Node: Top\x7f90
Node: Invoking\x7f300
\x1f
End Tag Table
"""


def test_an_info_manual_is_read_as_its_nodes() -> None:
    r = parse_document(gzip.compress(INFO.encode()), "tool.info.gz")
    assert r.format == "info" and r.title == "Tool 1.0"  # the Top node's, not the preamble's last line
    kinds = [(b.kind, b.level, b.text[:24], bool(b.meta.get("side"))) for b in r.blocks]
    assert kinds == [
        ("heading", 1, "Tool 1.0", False),
        ("paragraph", 0, "This manual documents To", False),
        ("heading", 1, "1 Invoking Tool", False),
        ("paragraph", 0, "Tool reads its input and", False),
        ("heading", 2, "1.1 Output Options", False),  # "===" is a level below "***"
        ("paragraph", 0, "‘-O FILE’\n‘--output-docu", False),  # a definition's terms: no ALL-CAPS heading
        ("paragraph", 0, "The documents will not b", False),
        ("paragraph", 0, "Use of ‘-O’ is not inten", False),
        ("list_item", 0, "Tool is non-interactive,", False),
        ("paragraph", 0, "tool -O out.txt in.txt", False),
        ("heading", 1, "Appendix A Copying This ", False),
        ("paragraph", 0, "Everyone is permitted to", True),  # a licence: side text
    ]
    text = "\n".join(b.text for b in r.blocks)
    for noise in ("File: tool.info", "* Menu:", "Invoking::", "(line 12)", "Tag Table", "END-INFO-DIR-ENTRY"):
        assert noise not in text, noise
    assert r.blocks[5].meta == {"term": True} and r.blocks[5].text == "‘-O FILE’\n‘--output-document=FILE’"


def test_a_split_manuals_first_file_points_to_its_parts() -> None:
    first = ("This is big.info, produced by makeinfo version 6.8 from big.texi.\n\n\x1f\nIndirect:\n"
             "big.info-1: 1200\nbig.info-2: 301233\n\x1f\nTag Table:\n(Indirect)\nNode: Top\x7f1200\n"
             "\x1f\nEnd Tag Table\n")
    r = parse_document(first.encode(), "big.info")
    assert r.metadata["redirect"] == "big.info-1" and r.blocks == []  # kept, never chunked
    part = INFO.replace("tool.info", "big.info")
    assert parse_document(part.encode(), "big.info-1").format == "info"  # named by its part number


def test_info_is_told_from_its_bytes() -> None:
    assert detect_format(INFO.encode(), "tool").format == "info"
    assert detect_format(INFO.encode(), "tool.txt").format == "info"
    assert detect_format(b"Just some notes about info.\n", "notes.info").format == "text"  # the name alone is not


def test_a_part_holding_only_an_index_points_to_its_manual_and_other_info_files_are_text() -> None:
    """From review: `find.info-2` holds only the Primary Index and was an empty-document dead
    letter; a `.info` no makeinfo wrote (a Drupal module's) was one too, read as info."""
    index_only = ("This is big.info, produced by makeinfo version 6.8 from big.texi.\n\n\x1f\n"
                  "File: big.info,  Node: Primary Index,  Prev: Worked Examples,  Up: Top\n\n"
                  "Primary Index\n*************\n\n\x00\x08[index\x00\x08]\n* Menu:\n\n"
                  "* -name:                                 Name Patterns.        (line 6)\n")
    r = parse_document(index_only.encode(), "big.info-2")
    assert r.metadata["redirect"] == "big.info" and r.blocks == []
    r = parse_document(b"name = My Module\ndescription = Does things\ncore = 7.x\n", "mymodule.info")
    assert r.format == "text" and "no GNU info manual" in r.warnings[0]
