"""AsciiDoc (`.adoc`, and the `.txt` sources of Git's and many projects' manuals) without a
converter: a line-based reader for the constructs that carry structure, as Asciidoctor reads them.

Read as plain text an AsciiDoc manual kept its markup in every chunk (`linkgit:git-commit[1]`,
`'git add'`, `{litdd}`, `[verse]`, `----` fences), its option lists were paragraphs led by a
`--all::` line, and comments and conditional directives were indexed as words.

* Section titles: `== Title` (or Markdown's `##`) and the older two-line form, a title underlined
  by `=`, `-`, `~`, `^` or `+` of about its length (one character either way, three unless the
  line under it is a `----` fence closed later); the level-0 title is the document's, and the
  author and revision lines under it are left out (a paragraph there is the body's).
* Description lists (`--all::`, `term:::`, `term;;`): the term lines are one paragraph marked
  {"term": True}, their description the paragraphs after it, as the man and info readers give
  an option list. Lists (`*`, `-`, `.`, `1.`), admonitions (`NOTE: …` → "Note: …"), `[verse]`
  paragraphs (line breaks kept), literal paragraphs (indented) and listing/literal blocks (code).
* Example, sidebar, quote and open blocks are read for the blocks inside them; comment blocks
  and `//` comments are dropped, a passthrough block (raw HTML or DocBook) keeps its words; tables
  (`|===`, `,===`, `[format=csv]`) become Markdown tables with their header row, each cell in
  the column its spans put it (`tables.grid`), a nested `!===` table's cells as its cell's text; a quote
  or verse ends with its attribution ("— Author, Source"); a block image gives its alt text; block
  titles (`.Title`) are captions.
* Attribute entries (`:name: value`, a value wrapped with ` \\` joined) are substituted where
  referenced (`{name}`), with Asciidoctor's built-in character attributes and Git's `{litdd}`; a value is cut at
  `syntax.MAX_ATTRIBUTE_CHARS` and substitution stops adding text past `reader.ATTRIBUTE_GROWTH` (values built
  by doubling one another grew exponentially). `ifdef::`/`ifndef::` are
  decided only for attributes the document (or a file including it) sets or unsets: a fragment
  read on its own is written for attributes its includer sets, and text whose condition cannot
  be known is kept rather than lost.
* `include::` lines are followed when the parse is given an `IncludeReader`, which admits only
  the files `assets.includes` lets the page show (listed documents of the same source that all
  its readers may read; the content hash the parse is cached by covers them): the file's lines
  are read in place, its conditions decided by the includer's attributes (Git's `:git-log: 1`
  before `include::diff-options.txt[]`), with `tag=`/`tags=`, `lines=` and `leveloffset=`
  honoured, tag directives dropped, at most `includes.MAX_INCLUDE_DEPTH` files deep, never a file that
  includes itself, one file at most `MAX_INCLUDE_REPEATS` times, within `MAX_INCLUDED_BYTES` and
  the source's size limit. An include not followed is named where it
  goes ("Includes diff options.") and every include target is listed in the parse's metadata
  (`includes`; those read: `included`).
* Every pattern bounds the run it scans, so a run of openers without closers costs linear time
  (tests/test_parsing_redos.py).
* Inline markup is reduced to its text: `*strong*`, `_emphasis_`, `` `code` ``, `'emphasis'`,
  `+literal+`, `#mark#`; `link:`, URL, `xref:` and `<<id,text>>` macros to their text;
  `linkgit:git-add[1]` to "git-add(1)"; index terms and anchors dropped.
"""

from __future__ import annotations

from assets.parsing.asciidoc.includes import (
    MAX_INCLUDE_REPEATS,
    MAX_INCLUDED_BYTES,
    Included,
    IncludeReader,
    preprocess,
    resolve_include,
    substituted,
)
from assets.parsing.asciidoc.reader import Reader
from assets.parsing.sniff import decode_text
from assets.parsing.textutil import normalize_chars
from connectors.documents import Block, ParseResult

__all__ = ["MAX_INCLUDE_REPEATS", "IncludeReader", "asciidoc_blocks", "parse_asciidoc", "resolve_include",
           "substituted"]


def asciidoc_blocks(text: str, base: str = "", included: Included | None = None,
                    ) -> tuple[list[Block], str | None, list[str]]:
    """Blocks, the document title and the include targets of an AsciiDoc text (`base`: its
    path, against which include targets resolve)."""
    lines, includes = preprocess(normalize_chars(text), base, included)
    reader = Reader({}, len(text) + (included.spent if included else 0))
    reader.read(lines)
    return reader.blocks, reader.title, includes


def parse_asciidoc(data: bytes, name: str = "", include: IncludeReader | None = None,
                   max_bytes: int | None = None) -> ParseResult:
    """Decode and parse an AsciiDoc document; with `include`, the files it admits are read in
    place of their include lines, at most `max_bytes` of them in all (`metadata["included"]`:
    those read; `["included_bytes"]`: their size)."""
    text, encoding = decode_text(data)
    included = Included(include, min(max_bytes, MAX_INCLUDED_BYTES) if max_bytes is not None else MAX_INCLUDED_BYTES)
    blocks, title, includes = asciidoc_blocks(text, name, included)
    metadata: dict[str, object] = {"encoding": encoding}
    if includes:
        metadata["includes"] = includes
    if included.followed:
        metadata["included"] = list(dict.fromkeys(included.followed))
        metadata["included_bytes"] = included.spent
    return ParseResult(blocks=blocks, title=title, format="asciidoc", metadata=metadata,
                       warnings=included.warnings)
