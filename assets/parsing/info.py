"""GNU info manuals (`grep.info.gz`, `find.info-1.gz`): the nodes makeinfo wrote, read as a manual.

Read as plain text an info file was noise around its manual: every node's `File: …, Node: …,
Next: …` line and its menu were indexed as paragraphs (a fifth of the chunks held such a line),
the index nodes held every index term beside a "(line N)" pointer and so outranked the passages
they point to, all heading levels were one, an option term such as `‘-O FILE’` was taken for an
ALL-CAPS heading and named the section of everything after it, and the title was whatever the
preamble said last ("END-INFO-DIR-ENTRY").

Here an info file is split into nodes on the `\\x1f` separator. The preamble before the first
node (makeinfo's banner, the copyright, the `INFO-DIR-ENTRY` lines), the tag table, the
indirect table of a split manual and each node's header line are left out; so is a node's menu
(`* Menu:` to the end of the node: makeinfo puts it last), and with it the whole of an index
node. Titles underlined with `*`, `=`, `-` and `.` are headings of levels 1 to 4; the Top
node's title is the document's. A definition's term lines (`‘-O FILE’` / `‘--output-document=FILE’`
over its indented description) are one term paragraph; other paragraphs are read as plain text
reads them (lists, reflowed prose, indented examples kept line by line) but never as headings.
The licence appendices every GNU manual carries (GNU Free Documentation License, GPL, "Copying
This Manual") are side text: shown, never indexed, as a mail's signature.
"""

from __future__ import annotations

import re
import textwrap

from assets.parsing.sniff import decode_text
from assets.parsing.text import ITEM, body_blocks
from assets.parsing.textutil import clean_inline, join_lines, normalize_chars
from connectors.documents import Block, ParseResult

__all__ = ["parse_info"]

_NODE_HEADER = re.compile(r"^File: [^,\n]+,\s+Node: ?([^,\t\n]*)")
_LEVELS = {"*": 1, "=": 2, "-": 3, ".": 4}
_UNDERLINE = re.compile(r"^([*=.-])\1{2,}$")
_LICENCE = re.compile(r"(?i)\b(?:free documentation license|general public license|copying(?: this manual)?$|"
                      r"gnu (?:fdl|gpl))")
_INDEX = re.compile(r"(?i)\bindex\b")
_LINE_POINTER = re.compile(r"\(line +\d+\)")
_PARA_SPLIT = re.compile(r"\n[ \t]*\n+")


def parse_info(data: bytes) -> ParseResult:
    """Parse an info file into the headings and paragraphs of its nodes."""
    text, encoding = decode_text(data)
    text = normalize_chars(text).expandtabs(8)
    blocks: list[Block] = []
    title: str | None = None
    parts: list[str] = []  # a split manual's parts, named by its first file's indirect table
    manual = ""  # the file its node headers name (`find.info` for the part `find.info-2`)
    for part in text.split("\x1f")[1:]:  # [0]: the preamble
        header, _, body = part.lstrip("\n").partition("\n")
        node = _NODE_HEADER.match(header)
        if header.startswith("Indirect:"):
            parts += [ln.split(":", 1)[0].strip() for ln in body.splitlines() if ":" in ln]
        if node is None:  # the tag table, a split manual's indirect table, local variables
            continue
        name = node.group(1).strip()
        manual = manual or header.split(",", 1)[0].removeprefix("File:").strip()
        if _is_index(name, body):
            continue  # an index node is its menu: every term with a "(line N)" pointer
        node_blocks = _node_blocks(body.split("\n* Menu:", 1)[0] if not body.startswith("* Menu:") else "")
        if _LICENCE.search(name):
            node_blocks = [b if b.kind == "heading" else Block(b.kind, b.text, level=b.level,
                                                               meta={**b.meta, "side": "licence"})
                           for b in node_blocks]
        if name == "Top" and title is None:
            title = next((b.text for b in node_blocks if b.kind == "heading"), None)
        blocks.extend(node_blocks)
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading"), None)
    metadata = {"encoding": encoding}
    if not blocks and (parts or manual):  # kept, never chunked, as a page that points elsewhere:
        # the first file of a split manual (only where its parts are), or a part holding only an
        # index (`find.info-2`: its Primary Index)
        metadata["redirect"] = parts[0] if parts else manual
    return ParseResult(blocks=blocks, title=title, format="info", metadata=metadata)


def _is_index(name: str, body: str) -> bool:
    """Whether a node is an index: makeinfo marks one (`\\0\\b[index\\0\\b]`); an older one is
    known by its name and its entries' "(line N)" pointers."""
    return "\x00\x08[index\x00\x08]" in body or bool(_INDEX.search(name) and _LINE_POINTER.search(body))


def _node_blocks(body: str) -> list[Block]:
    """One node's text (its header and menu gone): underlined headings, definitions, the rest."""
    out: list[Block] = []
    for chunk in _PARA_SPLIT.split(body.strip("\n")):
        lines = [ln.rstrip() for ln in chunk.split("\n") if ln.strip()]
        if not lines:
            continue
        if len(lines) == 2 and (m := _UNDERLINE.match(lines[1].strip())) and lines[0][:1] != " ":
            out.append(Block("heading", clean_inline(lines[0]), level=_LEVELS[m.group(1)]))
            continue
        terms = _term_lines(lines)
        if terms:
            out.append(Block("paragraph", "\n".join(clean_inline(t) for t in lines[:terms]), meta={"term": True}))
            out.append(Block("paragraph", clean_inline(join_lines([ln.strip() for ln in lines[terms:]]))))
            continue
        lines = textwrap.dedent("\n".join(lines)).split("\n")  # a description's later paragraphs
        if ITEM.match(lines[0]) and all(ln.startswith(" ") for ln in lines[1:]):  # "• item" over its lines
            out.append(Block("list_item", clean_inline(join_lines([ITEM.sub("", lines[0], count=1),
                                                                   *(ln.strip() for ln in lines[1:])]))))
            continue
        out.extend(b if b.kind != "heading" else Block("paragraph", b.text) for b in body_blocks(lines, None))
    return [b for b in out if b.text.strip()]


def _term_lines(lines: list[str]) -> int:
    """How many lines open the paragraph as a definition's terms: unindented lines over a
    description indented by at least four spaces (makeinfo's `@table` layout); 0 for none."""
    n = 0
    while n < len(lines) and not lines[n].startswith(" "):
        n += 1
    if n == 0 or n == len(lines) or n > 4:
        return 0
    return n if all(ln.startswith("    ") for ln in lines[n:]) else 0
