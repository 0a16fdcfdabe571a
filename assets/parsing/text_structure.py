"""What a whole plain-text document shows by layout rather than markup: its title, its FAQ
entries, a contents list, Emacs outline headings.

`text.text_blocks` reads paragraphs one at a time with local rules (a short line, an underline,
ALL CAPS, a section number); that is all an e-mail body or an RTF paragraph run needs. A
plain-text *document* (a FAQ, a README, a NEWS file) says more across its paragraphs:

- **FAQ entries.** A numbered paragraph that asks ("2.1 What is sed?", or a question wrapped over
  up to four lines) is a heading when an answer follows it; so is a "Q:" paragraph in a document
  of "Q:"/"A:" pairs (the labels are dropped), and a one-line question above its answer in a
  document that has at least three of them. Read a paragraph at a time, a question was a list
  item or a paragraph, and 54 of the 219 entries of six real FAQs had their question and answer
  in different chunks.
- **A contents list is not headings.** After a "Contents" heading, paragraphs of numbered entries
  stay paragraphs, and so does any paragraph of section-numbered or dot-leader lines: the sed
  FAQ's contents made every section heading twice.
- **The title is the document's opening**: an opening paragraph of one to three short lines
  ("GNU Midnight Commander / Frequently Asked Questions") is a heading, and the title is a heading
  among the opening blocks, never one found a hundred lines in (which then rooted every chunk's
  heading path).
- **Emacs outline and Org files** (`-*- outline -*-` on the first line): "* " and "** " lines
  are headings of that depth (GNU NEWS files).
- A one-line paragraph indented deeper than the text after it is an example line, not a
  heading ("From: Your Real Name <…>" in the slrn FAQ headed 18 chunks).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from assets.parsing.sniff import DEBIAN_CHANGELOG
from assets.parsing.text import ITEM, all_caps, body_blocks, para_blocks, paragraphs
from assets.parsing.textutil import clean_inline, join_lines, normalize_chars
from connectors.documents import Block

__all__ = ["document_blocks", "document_text_blocks", "document_title", "outline_text"]

_QUESTION_LEVEL = 3  # under a FAQ's numbered or titled sections, if it has them
_Q = re.compile(r"^\s{0,4}(?:Q|Question|QUESTION)\s*\d{0,3}(?:\.\d{1,3})*\s*[:.)]\s*(?=\S)")
_A = re.compile(r"^\s{0,4}(?:A|Answer|ANSWER)\s*\d{0,3}(?:\.\d{1,3})*\s*[:.)]\s*(?=\S)")
# "2.1 What", "2.1. What", "12) How": a section number opening a line, then words
_NUMBER = re.compile(r"^\s{0,4}(\d{1,3}(?:\.\d{1,3})*)(?:[.)]|(?=\s))\s+(?=[A-Za-z\"'`(])")
_ASKS = re.compile(r"\?(?:\s|[\"')]|$)")
# a contents line: a bulleted or bare section number and words, or words and a dot leader
_ENTRY = re.compile(r"^\s*(?:[*+•-]\s+)?\d{1,3}(?:\.\d{1,3})*\.?\s+\S|(?:\.\s?){3,}\s*\d+\s*$")
_SECTION_NUMBER = re.compile(r"^\s*(?:[*+•-]\s+)?\d{1,3}\.\d{1,3}|(?:\.\s?){3,}\s*\d+\s*$")
_CONTENTS = re.compile(r"^(?:table of )?contents:?$", re.I)
_STARS = re.compile(r"^(\*{1,6})\s+(?=\S)")
# an outline heading: stars and a title, no sentence (older NEWS entries use "* " as a bullet)
_OUTLINE_HEADING = re.compile(r"^(\*{1,6}[ \t]+(?:\S+[ \t]+){0,11}\S*[^.,;:\s])[ \t]*$", re.M)
_MODE_LINE = re.compile(r"-\*-.*?\b(?:outline|org)\b.*?-\*-", re.I)
_ANY_MODE = re.compile(r"-\*-[^\n]{0,200}?-\*-")
_RULE = re.compile(r"^[-=*#~_]{3,}$")
_LEADER_PAGE = re.compile(r"(?:\s?\.){2,}\s*\d{1,4}\s*$|\s{2,}\d{1,4}\s*$")  # "…… 1", "   12"
_RULE_CHARS = "-=*#~_"
_DATED = re.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}\b")
_ORG_TITLE = re.compile(r"^#\+title:\s*(\S.*)$", re.I)
_HEADER_LINE = re.compile(r"^[\w-]+:\s")  # "Archive-Name: editor-faq/sed" is no title
_TERMINAL = (".", ",", ";", ":", "!")
_MAX_QUESTION_WORDS = 40
_MAX_OPENING_WORDS = 60  # a title comes before this many words of the document's text


@dataclass
class _Layout:
    """What the whole document shows, read once before its paragraphs are."""

    qa: bool = False  # "Q:" / "A:" pairs
    faq: frozenset[int] = frozenset()  # the depths of a FAQ's numbered questions (three at least)
    asks: set[int] = field(default_factory=set)  # unnumbered one-line questions taken as headings
    outline: frozenset[str] = frozenset()  # an outline file's heading lines


def outline_text(text: str) -> tuple[str, frozenset[str]]:
    """(text, its outline heading lines): a first line loses an Emacs mode marker ("-*- text -*-");
    in outline or Org mode its heading lines stand apart as paragraphs of their own (a NEWS file
    may run text right under them). No headings for any other text."""
    first, sep, rest = text.partition("\n")
    if not (mode := _ANY_MODE.search(first)):
        return text, frozenset()
    outline = _MODE_LINE.search(mode.group(0)) is not None  # within the marker: bounded
    first = _ANY_MODE.sub("", first).rstrip()  # "-*- text -*-" is for Emacs, not a title
    if not outline:
        return first + sep + rest, frozenset()
    lines = rest.split("\n")
    heads = _outline_headings(lines)
    body = "\n".join(f"\n{ln}\n" if i in heads else ln for i, ln in enumerate(lines))
    return first + sep + body, frozenset(lines[i] for i in heads)


def _outline_headings(lines: list[str]) -> set[int]:
    """The lines of an outline file that are headings: stars and a title with a blank line under
    it. Older NEWS entries use "* " as a bullet: a star line wrapped onto the next line, or one
    of a run of same-depth star lines with only blank lines between them, is an item."""
    stars = [i for i, ln in enumerate(lines) if _OUTLINE_HEADING.match(ln)
             and (i + 1 == len(lines) or not lines[i + 1].strip())]
    depth = {i: len(lines[i]) - len(lines[i].lstrip("*")) for i in stars}
    items: set[int] = set()
    for a, b in itertools.pairwise(stars):
        if depth[a] == depth[b] and not any(ln.strip() for ln in lines[a + 1:b]):
            items |= {a, b}
    return set(stars) - items


def document_text_blocks(text: str) -> list[Block]:
    """Blocks of a decoded plain-text document (`text.parse_text`)."""
    text, outline = outline_text(normalize_chars(text).expandtabs(8))
    return [b for b in document_blocks(paragraphs(text), outline=outline) if b.text.strip()]


def document_blocks(paras: list[list[str]], *, outline: frozenset[str] = frozenset()) -> list[Block]:
    """The blocks of a plain-text document's paragraphs; one that shows no document structure
    is read by the paragraph rules (`text.para_blocks`)."""
    numbered = [p for p in paras if _numbered_question(p, faq=frozenset())]
    faq = frozenset(_depth(p) for p in numbered) if len(numbered) >= 3 else frozenset()
    layout = _Layout(qa=_is_qa(paras), faq=faq, asks=_lone_questions(paras), outline=outline)
    blocks: list[Block] = []
    contents: set[str] | None = None  # in a contents list: the entries it listed
    answer = False  # the paragraph after a question is its answer, never a heading
    for i, para in enumerate(paras):
        nxt = paras[i + 1] if i + 1 < len(paras) else None
        if contents is not None and _is_entries(para, listed=True) and not contents & (names := _names(para)):
            contents |= names  # until an entry comes again: the text it lists begins
            blocks.append(_entries(para))
            continue
        if answer and not (layout.qa and _A.match(para[0])) and not (len(para) == 1 and _NUMBER.match(para[0])):
            out: list[Block] | None = _answer_lines(para)
        else:
            out = _structured(i, para, nxt, layout)
        asked = out is not None and bool(out) and out[-1].meta.pop("question", False)
        if out is None:
            out = _plain(i, para, nxt, layout)
        answer = asked
        blocks.extend(out)
        contents = set() if out and out[-1].kind == "heading" and _CONTENTS.match(out[-1].text) else None
    return blocks


def _plain(i: int, para: list[str], nxt: list[str] | None, layout: _Layout) -> list[Block]:
    """A paragraph no document structure decides: the paragraph rules' reading, the opening one maybe
    a title; in an outline file a heading the paragraph rules find is a top one ("Major changes in
    Gzip 1.3.12" in the part of a NEWS file written before its stars)."""
    out = para_blocks(para, nxt)
    if i == 0 and (not out or out[0].kind != "heading") and (opening := _opening_title(para)):
        title, rest = opening
        out = [title, *(para_blocks(rest, nxt) if rest else [])]
    elif layout.outline:
        out = [Block("heading", b.text, level=1) if b.kind == "heading" else b for b in out]
    return out


def _answer_lines(para: list[str]) -> list[Block]:
    """An answer's paragraph: its lines as the paragraph rules read them, but no heading (a
    one-line answer, "Anonymous ftp to ftp://…", read as a title over the next question)."""
    if len(para) == 1:
        return [Block("paragraph", clean_inline(para[0]))]
    return body_blocks(para, None)


def document_title(blocks: list[Block]) -> str | None:
    """The first heading, when it opens the document (under `_MAX_OPENING_WORDS` words of text
    before it); else None, and the file's name stands for it."""
    words = 0
    for b in blocks:
        if b.kind == "heading":
            return b.text
        words += len(b.text.split())
        if words > _MAX_OPENING_WORDS:
            return None
    return None


def _structured(i: int, para: list[str], nxt: list[str] | None, layout: _Layout) -> list[Block] | None:
    """A paragraph's blocks when the document's structure decides them, else None."""
    if layout.outline and len(para) == 1 and para[0] in layout.outline and (m := _STARS.match(para[0])):
        return [Block("heading", clean_inline(para[0][m.end():]), level=len(m.group(1)))]
    if layout.qa and _Q.match(para[0]):
        return _question(para)
    if layout.qa and _A.match(para[0]):
        return _answer(para)
    if nxt is not None and (level := _numbered_question(para, faq=layout.faq, answer=nxt)):
        return [_asks(join_lines([ln.strip() for ln in para]), level)]
    if i in layout.asks:
        return [_asks(para[0], _QUESTION_LEVEL)]
    if _is_entries(para):
        return [_entries(para)]
    if banner := _banner(para):
        return [Block("heading", banner, level=1)]
    if i and nxt is not None and len(para) == 1 and not _NUMBER.match(para[0]) and not all_caps(para[0]) and (
            _indent(nxt[0]) + 2 < _indent(para[0]) <= _indent(nxt[0]) + 16
            or 0 < _indent(para[0]) < _indent(nxt[0])):
        # an example line set in, or a line set in with the text that leads into an example
        # ("  Add" over "    export HISTCONTROL=…"): neither is a heading. A line set in further
        # is centred: a title.
        return [Block("paragraph", para[0].strip())]
    return None


def _banner(para: list[str]) -> str | None:
    """The words of a banner ("---- Frequently Asked Questions ----", maybe between rules): a
    heading without its dashes."""
    words = [w for ln in para if (w := _banner_words(ln))]
    if len(words) == 1 and all(_banner_words(ln) or _RULE.match(ln.strip()) for ln in para):
        return clean_inline(words[0])
    return None


def _banner_words(line: str) -> str | None:
    """"Frequently Asked Questions" of "---- Frequently Asked Questions ----": three rule
    characters or more at each end, set off by spaces. By hand, not by a pattern: a lazy group
    between two runs of spaces backtracked quadratically over a long line of spaces."""
    line = line.strip()
    core = line.strip(_RULE_CHARS)
    if len(line) - len(line.lstrip(_RULE_CHARS)) < 3 or len(line) - len(line.rstrip(_RULE_CHARS)) < 3:
        return None
    if not core[:1].isspace() or not core[-1:].isspace() or not core.strip():
        return None
    return core.strip()


def _question(para: list[str]) -> list[Block]:
    """A "Q:" paragraph: the question as a heading, and an answer run on under it ("A:" in the
    same paragraph) as its body."""
    k = next((j for j, ln in enumerate(para) if j and _A.match(ln)), len(para))
    asked = [_Q.sub("", para[0], count=1), *para[1:k]]
    head = _asks(join_lines([ln.strip() for ln in asked]), _QUESTION_LEVEL)
    if k < len(para):
        head.meta.pop("question")  # answered in the same paragraph
        return [head, *_answer(para[k:])]
    return [head]


def _asks(text: str, level: int) -> Block:
    """A question's heading, marked for `document_blocks` (which drops the mark): what follows
    is its answer."""
    return Block("heading", clean_inline(text), level=level, meta={"question": True})


def _answer(para: list[str]) -> list[Block]:
    """An "A:" paragraph without its label, dedented so wrapped prose reflows."""
    m = _A.match(para[0])
    assert m is not None
    lines = [" " * m.end() + para[0][m.end():], *para[1:]]
    cut = min(_indent(ln) for ln in lines)
    return body_blocks([ln[cut:] for ln in lines], None)


def _numbered_question(para: list[str], *, faq: frozenset[int], answer: list[str] | None = None) -> int:
    """The heading level of a numbered question ("1.4. How do I add a question?", or one wrapped
    over up to four lines), 0 if the paragraph is not one. In a FAQ (a document with three
    numbered questions, numbered to the depths in `faq`) an entry that states its problem ("2.6
    C-o doesn't work!") is one too when its `answer` is set in deeper; a list item in an answer
    ("1. The terminal may not…" under "2.4.") is numbered to another depth."""
    m = _NUMBER.match(para[0])
    if not m or len(para) > 4 or any(_NUMBER.match(ln) or ITEM.match(ln) for ln in para[1:]):
        return 0
    text = " ".join(ln.strip() for ln in para)
    if len(text.split()) > _MAX_QUESTION_WORDS:
        return 0
    depth = m.group(1).count(".") + 1
    if text.rstrip("\"') ").endswith("?"):
        return min(6, depth)
    # in a FAQ (numbered to this depth) a question may run on ("… use it? When I type …") or
    # state its problem, over an answer set in deeper; elsewhere "2. Does it pass? Fix it." is
    # a list item
    if depth in faq and answer is not None and (_ASKS.search(text) or _indent(answer[0]) > _indent(para[0])):
        return min(6, depth)
    return 0


def _depth(para: list[str]) -> int:
    m = _NUMBER.match(para[0])
    return m.group(1).count(".") + 1 if m else 0


def _is_qa(paras: list[list[str]]) -> bool:
    """Whether the document is written as "Q:" / "A:" pairs (two of each at least)."""
    qs = [p for p in paras if _Q.match(p[0])]
    answers = sum(bool(_A.match(p[0])) for p in paras) + sum(any(_A.match(ln) for ln in p[1:]) for p in qs)
    return len(qs) >= 2 and answers >= 2


def _lone_questions(paras: list[list[str]]) -> set[int]:
    """The one-line, unnumbered questions above an answer ("  Why is the meta key broken?"),
    when the document has at least three: one alone may be a rhetorical line."""
    asks = {i for i, p in enumerate(paras[:-1])
            if len(p) == 1 and p[0].rstrip().endswith("?") and len(p[0].split()) <= 25
            and not _NUMBER.match(p[0]) and not _Q.match(p[0]) and not ITEM.match(p[0])
            and not paras[i + 1][-1].rstrip().endswith("?")}
    return asks if len(asks) >= 3 else set()


def _is_entries(para: list[str], *, listed: bool = False) -> bool:
    """Whether a paragraph is a contents list: numbered entries, each maybe wrapped onto lines set
    deeper. Outside a "Contents" section (`listed`) it takes section numbers ("1.1") or dot leaders,
    so that an ordinary numbered list stays a list."""
    if listed:  # entries, and short lines set in: group names, sub-entries, wrapped entries
        return all(_ENTRY.match(ln) or (ln[:1] == " " and len(ln.split()) <= 12) for ln in para)
    if not _ENTRY.match(para[0]) or len(para) < 2:
        return False
    entry_indent = _indent(para[0])
    for ln in para[1:]:
        if _ENTRY.match(ln):
            entry_indent = _indent(ln)
        elif _indent(ln) <= entry_indent:
            return False
    return sum(bool(_SECTION_NUMBER.match(ln)) for ln in para) >= 2


def _names(para: list[str]) -> set[str]:
    """A contents paragraph's entries, as their text would open a section ("1.1. Intro"): no dot
    leader, no page number ("1. Introduction ...... 1" names "1. introduction")."""
    names = set()
    for ln in para:
        if _ENTRY.match(ln):
            name = _LEADER_PAGE.sub("", ln)
            names.add(" ".join(name.split()).lower())
    return names


def _entries(para: list[str]) -> Block:
    return Block("paragraph", "\n".join(ln.strip() for ln in para))


def _opening_title(para: list[str]) -> tuple[Block, list[str]] | None:
    """(the heading a document's opening paragraph makes, the lines left under it): its lines
    joined when it is one to three short title lines, else its first line when that is one well
    short of the lines under it (authors, a version: a run of lines of one shape has no title)."""
    lines = [ln.strip() for ln in para]
    if m := _ORG_TITLE.match(lines[0]):
        return Block("heading", clean_inline(m.group(1)), level=1), para[1:]
    if not _title_line(lines[0]):
        return None
    if len(lines) <= 3 and all(_title_line(ln) and not ln[:1].islower() for ln in lines) \
            and sum(len(ln.split()) for ln in lines) <= 14:
        return Block("heading", clean_inline(" ".join(lines)), level=1), []
    shape = _token_shape(lines[0])
    if shape != "w" and 2 * sum(_token_shape(ln) == shape for ln in lines[1:]) >= len(lines) - 1:
        return None  # a run of entries of one markup ("`araxis`;; Use Araxis Merge"), no title
    if len(lines[0]) < 0.6 * max(len(ln) for ln in lines):  # "The slrn FAQ" over its authors' lines
        return Block("heading", clean_inline(lines[0]), level=1), para[1:]
    return None


def _token_shape(line: str) -> str:
    """A line's first token with its word characters folded ("`araxis`;;" -> "`w`;;", "The" -> "w")."""
    first = line.split(maxsplit=1)[0] if line.split() else ""
    return re.sub(r"\w+", "w", first)


def _title_line(line: str) -> bool:
    words = line.split()
    return (0 < len(words) <= 10 and sum(ch.isalpha() for ch in line) >= 3
            and sum(any(ch.isalpha() for ch in w) for w in words) * 2 >= len(words)
            and not line.endswith(_TERMINAL) and not _HEADER_LINE.match(line) and not ITEM.match(line)
            and not DEBIAN_CHANGELOG.match(line) and ". " not in line  # a sentence is no title
            and not line.lower().startswith(("copyright", "(c)", "©"))
            and "@" not in line and not _DATED.match(line)  # "25/10/95 Peter Orbaek <poe@…>": a byline
            and not line.startswith(("<", "http://", "https://", "(", "[")))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
