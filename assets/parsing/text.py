"""Plain text: encoding detection, paragraphs on blank lines, light heading/list heuristics.

Headings are guessed conservatively from short lines (≤ 8 words, no closing punctuation):
underlined (`====` or `=-=-` → level 1, `----` → level 2; an underlined question too), ALL CAPS
(level 1), numbered like "1. Intro" / "2.3 Scope" (level = depth of the number), or a lone
capitalised line of ≤ 6 words introducing a longer paragraph (level 2). Runs of "- item" /
"1) item" lines become list items. Prose hard-wrapped at a fixed width is re-flowed; short lines
meant as lines (addresses, signatures, "Key: value" headers) and indented blocks keep their line
breaks. Tabs are 8 columns, as the terminals and editors that wrote such text set them.

A whole plain-text document (`parse_text`) is read further: its title, FAQ entries, contents list
and outline headings (`text_structure`), or as Vim help (`vimhelp`). E-mail bodies and the other
formats that hand their running text here get the paragraph rules alone.
"""

from __future__ import annotations

import re

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, join_lines, normalize_chars
from assets.parsing.vimhelp import looks_like_vimhelp, vimhelp_blocks
from connectors.documents import Block, ParseResult

__all__ = ["ITEM", "all_caps", "body_blocks", "para_blocks", "paragraphs", "parse_text", "text_blocks"]

MAX_HEADING_WORDS = 8
MAX_WEAK_HEADING_WORDS = 6
_TERMINAL = (".", ",", ";", ":", "!", "?")
# a line of code or of a drawn table, never a title: braces ("BEGIN {", "}"), a table row's
# pipes ("| z/OS | OS/400 |"), an opening bracket, `=` or `\` at its end (an unseen-corpus pass:
# in Perl's FAQ read as text, "BEGIN {" headed 15 chunks of unrelated questions)
_CODE_LIKE = re.compile(r"[{}]|^\s*\||\|\s*$|[=\\(\[]\s*$")
_UNDERLINE = re.compile(r"^(=+|-+|~+|\*+|(?:=-)+=?|(?:-=)+-?)$")
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+")
_PARA_SPLIT = re.compile(r"\n[ \t]*\n+")
_KEY_VALUE = re.compile(r"^[A-Z][\w-]*: \S")  # "Signed-off-by: A <a@b>", "Subject: x"


def _is_underline(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and bool(_UNDERLINE.match(stripped))


def _short_title(line: str, max_words: int = MAX_HEADING_WORDS, *, marked: bool = False) -> bool:
    """A line short enough for a title, with no sentence end; unless `marked` (underlined: the
    writer said it is a heading), no line of code either."""
    words = line.split()
    return (0 < len(words) <= max_words and not line.rstrip().endswith(_TERMINAL)
            and (marked or not _CODE_LIKE.search(line)))


def _underlined_title(line: str, underline: str) -> bool:
    """A line over an underline: a short title, or a question ("Why does X fail?") up to 20 words.
    A git patch's "---" under its last trailer ("Signed-off-by: …", over the diffstat) is a
    separator: it headed every patch of a series."""
    line = line.strip()
    if underline.strip() == "---" and _KEY_VALUE.match(line):
        return False
    return _short_title(line, 12, marked=True) or (line.endswith("?") and 0 < len(line.split()) <= 20)


def all_caps(line: str) -> bool:
    letters = [ch for ch in line if ch.isalpha()]
    return len(letters) >= 3 and all(ch.isupper() for ch in letters)


def _single_line_heading(line: str, next_para: list[str] | None) -> int:
    """Heading level of a paragraph that is one line, 0 if it is not a heading."""
    line = line.strip()
    if not _short_title(line):
        return 0
    m = _NUMBERED.match(line)
    if m:
        return min(6, m.group(1).count(".") + 1)
    if all_caps(line):
        return 1
    # A short capitalised line introducing a longer paragraph ("Rollout plan").
    if (
        next_para
        and line[:1].isupper()
        and len(line.split()) <= MAX_WEAK_HEADING_WORDS
        and sum(len(ln) for ln in next_para) > 2 * len(line)
        and not ITEM.match(line)
    ):
        return 2
    return 0


def _is_wrapped_prose(lines: list[str]) -> bool:
    """Lines hard-wrapped at a width (reflow them) rather than short lines meant as lines."""
    if len(lines) < 2:
        return True
    width = max(len(ln) for ln in lines)
    return all(len(ln) >= 0.6 * width for ln in lines[:-1])


def para_blocks(para: list[str], next_para: list[str] | None) -> list[Block]:
    """A paragraph's blocks: the headings that open it (taken one by one in a loop: a list of
    a thousand ALL-CAPS constants recursed once per line and failed the file), then its body.
    `i` walks the lines; the list is sliced once at the end, not once per heading."""
    heads: list[Block] = []
    i, n = 0, len(para)
    while True:
        if n - i >= 2 and _is_underline(para[i + 1]) and _underlined_title(para[i], para[i + 1]):
            level = 1 if para[i + 1].strip()[0] in "=*#" else 2
            heads.append(Block("heading", clean_inline(para[i]), level=level))
            i += 2
            if i == n:
                return heads
        elif n - i >= 2 and all_caps(para[i]) and _short_title(para[i]):
            heads.append(Block("heading", clean_inline(para[i]), level=1))
            i += 1
        elif (
            n - i >= 3
            and _short_title(para[i], MAX_WEAK_HEADING_WORDS)
            and para[i][:1].isupper()
            and not ITEM.match(para[i])
            and len(para[i]) < 0.5 * max(len(ln) for ln in para[i + 1:])
            and _is_wrapped_prose(para[i + 1:])
        ):
            # "Day 2" on its own line above a wrapped paragraph.
            heads.append(Block("heading", clean_inline(para[i]), level=2))
            i, next_para = i + 1, None
        else:
            return heads + body_blocks(para[i:], next_para)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _hanging(para: list[str]) -> bool:
    """A numbered item whose later lines are indented under its text ("  2. Edit the header
    line\n     Again, ..."): one item however many lines it wraps to (it was read as a paragraph
    when its lines outnumbered the items, the "1." above it, on two lines, as an item). Numbered
    only: "- Adam Beberg" over his address lines is an e-mail signature, not a list."""
    marker = ITEM.match(para[0])
    return (len(para) > 1 and marker is not None and marker.group().strip()[0].isdigit()
            and all(_indent(ln) > _indent(para[0]) for ln in para[1:] if not ITEM.match(ln)))


def _item_start(line: str) -> str:
    """An item's first line without its bullet, but with its number: "1. When slrn prompts" is
    what the reader sees and what "the second way" or "step 3" points at."""
    marker = ITEM.match(line)
    if marker is None:
        return line
    rest = line[marker.end():]
    number = marker.group().strip()
    return f"{number} {rest}" if number[0].isdigit() else rest


def body_blocks(para: list[str], next_para: list[str] | None) -> list[Block]:
    if len(para) == 1:
        level = _single_line_heading(para[0], next_para)
        if level:
            return [Block("heading", clean_inline(para[0]), level=level)]
    if ITEM.match(para[0]) and (sum(bool(ITEM.match(ln)) for ln in para) >= (len(para) + 1) // 2
                                or _hanging(para)):
        items: list[list[str]] = []
        for ln in para:
            if ITEM.match(ln) or not items:
                items.append([_item_start(ln)])
            else:
                items[-1].append(ln)
        return [Block("list_item", clean_inline(join_lines(it))) for it in items]
    if len(para) > 1 and any(ln[:1] == " " for ln in para[1:]):
        return [Block("paragraph", "\n".join(ln.rstrip() for ln in para))]  # indented layout
    if _is_wrapped_prose(para):
        return [Block("paragraph", clean_inline(join_lines(para)))]
    return [Block("paragraph", "\n".join(clean_inline(ln) for ln in para))]


def paragraphs(text: str) -> list[list[str]]:
    """The non-blank lines of each blank-line-separated paragraph of normalised text."""
    paras = [[ln for ln in chunk.split("\n") if ln.strip()] for chunk in _PARA_SPLIT.split(text.strip("\n"))]
    return [p for p in paras if p]


def text_blocks(text: str) -> list[Block]:
    """Blocks of decoded running text (an e-mail body, an RTF's prose), paragraph by paragraph;
    a whole plain-text document is read by `text_structure.document_text_blocks`."""
    paras = paragraphs(normalize_chars(text).expandtabs(8))
    blocks = []
    for i, para in enumerate(paras):
        blocks.extend(para_blocks(para, paras[i + 1] if i + 1 < len(paras) else None))
    return [b for b in blocks if b.text.strip()]


def parse_text(data: bytes) -> ParseResult:
    """Decode text bytes (BOM, UTF-8, then detection) and split them into blocks: Vim help by its
    own markup, any other text as a plain-text document."""
    text, encoding = decode_text(data)
    if looks_like_vimhelp(text):
        blocks, title = vimhelp_blocks(text)
        return ParseResult(blocks=blocks, title=title, format="text",
                           metadata={"encoding": encoding, "dialect": "vimhelp"})
    from assets.parsing.text_structure import document_text_blocks, document_title  # it builds on this module

    blocks = document_text_blocks(text)
    return ParseResult(blocks=blocks, title=document_title(blocks), format="text", metadata={"encoding": encoding})
