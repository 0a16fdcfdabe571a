"""The AsciiDoc block reader: preprocessed lines into blocks (sections, paragraphs, lists,
description lists, delimited blocks, tables), with inline markup reduced to what a reader sees."""

from __future__ import annotations

import bisect
import html
import re
import textwrap
from dataclasses import dataclass, field

from assets.parsing.asciidoc.includes import level_offset
from assets.parsing.asciidoc.syntax import (
    ATTRIBUTE_ENTRY,
    ATTRIBUTE_LIST,
    ATTRIBUTE_REF,
    BLOCK_ATTRIBUTES,
    INCLUDED,
    MAX_ATTRIBUTE_CHARS,
    MAX_COLUMNS,
    TABLE,
)
from assets.parsing.asciidoc.tables import DATA_FORMATS, Cell, column_count, grid, table_cells
from assets.parsing.textutil import clean_inline, markdown_table, table_header_lines
from connectors.documents import Block, BlockKind

MAX_NESTING = 8  # delimited blocks inside one another; deeper ones are read as their lines
# What substituting attributes may add to a document, beyond its own size: a short value
# referenced a million times must not make gigabytes of text; past it references stay as written.
ATTRIBUTE_GROWTH = 1 << 20
# Asciidoctor's built-in character attributes, and Git's `{litdd}` (its asciidoc.conf).
BUILTIN_ATTRIBUTES = {
    "amp": "&", "apos": "'", "asterisk": "*", "backslash": "\\", "backtick": "`", "blank": "",
    "brvbar": "¦", "caret": "^", "cpp": "C++", "deg": "°", "empty": "", "endsb": "]", "gt": ">",
    "ldquo": "“", "lsquo": "‘", "lt": "<", "nbsp": " ", "plus": "+", "pp": "++", "quot": '"',
    "rdquo": "”", "rsquo": "’", "sp": " ", "startsb": "[", "tilde": "~", "two-colons": "::",
    "two-semicolons": ";;", "vbar": "|", "wj": "", "zwsp": "", "litdd": "--",
}
_ADMONITIONS = {"NOTE": "Note", "TIP": "Tip", "IMPORTANT": "Important", "WARNING": "Warning",
                "CAUTION": "Caution"}
_ONE_LINE_TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*)$")
_UNDERLINE_LEVELS = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
_UNDERLINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--)[ \t]*$")
_BLOCK_TITLE = re.compile(r"^\.([^\s.].*)$")
_LIST_ITEM = re.compile(r"^[ \t]*(\*{1,5}|-|\.{1,5}|\d{1,3}\.|[a-zA-Z]\.|<\d+>)[ \t]+(\S.*)$")
_TERM = re.compile(r"^[ \t]*(?!//)([^\s].*?)(:{2,4}|;;)(?:[ \t]+(.*))?$")  # may be indented, as list items
# Asciidoctor's author line (up to three names, an optional <e-mail>; several joined by "; ")
# and a revision line ("v1.2, 2024-01-01: remark"), the two lines the header may hold
# (the names after a ";" take their spaces possessively: handed back to the next " *;", a line of
# "Name   ;" runs that fails at its end backtracked exponentially, 51 s for 214 bytes)
_AUTHOR_LINE = re.compile(r"^\w[\w'.-]*(?: +\w[\w'.-]*){0,2}(?: +<[^<>\s]+>)?(?: *; *\w[\w'. -]*+(?:<[^<>\s]+>)?)*$")
_REVISION_LINE = re.compile(r"^v?\d[\w.-]*(?:, *[^:]*)?(?:: *.*)?$")
_ADMONITION = re.compile(r"^(NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+(.*)$")
# Macro patterns bound every run they scan (a target, a text), so a run of openers without a
# closer ("<<a,<<a,..." or "link:link:...") costs a bounded look-ahead each, not the paragraph.
_LINKGIT = re.compile(r"linkgit:([\w.-]{1,200})\[(\d\w{0,9})\]")
_URL_MACRO = re.compile(r"(?:link:|mailto:)?((?:https?|ftp|irc|file)://[^\s\[\]]{1,2000}|(?<=link:)[^\s\[\]]{1,500}|"
                        r"(?<=mailto:)[^\s\[\]]{1,500})\[([^\]]{0,1000})\]")
_XREF = re.compile(r"<<([\w:./#-]{1,200})(?:,\s*([^<>]{1,500}))?>>|xref:([\w:./#-]{1,200})\[([^\]]{0,1000})\]")
_MACRO_TEXT = re.compile(r"\b(kbd|btn|pass|indexterm2|footnote|image|icon|anchor|indexterm|stem|latexmath|asciimath)"
                         r":([^\s\[\]]{0,500})\[([^\]]{0,1000})\]")
_MENU = re.compile(r"\bmenu:([^\s\[\]]{1,200})\[([^\]]{0,500})\]")
_INDEX_TERMS = re.compile(r"\({3}[^()]*\){3}")
_VISIBLE_INDEX_TERM = re.compile(r"\({2}([^()]+)\){2}")
_MARKUP = re.compile(r"[{(\[<*_`+#'^~\\:]")  # a character some inline pattern starts from
_TAG = re.compile(r"<[^<>]{0,1000}>")
_BREAK = re.compile(r"^(?:'{3,}|<{3,})[ \t]*$")  # a thematic or a page break
_BLOCK_MACRO = re.compile(r"^(image|video|audio|toc)::[^\[\s]{0,2000}\[([^\]]{0,1000})\][ \t]*$")
_COMMENT = re.compile(r"^//(?!/)")  # a comment line (`///` is text, `////` a comment block's fence)
_ANCHOR = re.compile(r"\[\[\[?[\w:.-]{1,200}(?:,[^\]]{0,500})?\]\]\]?|\[#[\w.-]{1,200}\](?=#)")
_QUOTES = [re.compile(p) for p in (
    # the text between two marks never holds the mark: a run of openers without a closer costs
    # one pass, not one pass each (a paragraph of "**a **a **a ..." was quadratic)
    *(rf"(?<!\\){c}{c}([^\s{c}](?:[^{c}]*?[^\s{c}])?){c}{c}" for c in (r"\+\+", r"\*", "_", "`", r"\+", "#")),
    *(rf"(?<![\w{c}\\]){c}([^\s{c}](?:[^{c}\n]*?[^\s{c}])?){c}(?![\w{c}])" for c in (r"\*", "_", "`", r"\+", "#", "'")),
    r"(?<!\^)\^([^\s^]{1,100})\^(?!\^)", r"(?<!~)~([^\s~]{1,100})~(?!~)",
)]
_ESCAPE = re.compile(r"\\(?=[*_`#+{\[<~^'-]|&)")
_HARD_BREAK = re.compile(r"[ \t]\+$", re.M)


@dataclass
class _Pending:
    """Block attributes and a block title waiting for the block they belong to."""

    style: str = ""
    language: str = ""
    options: set[str] = field(default_factory=set)
    cols: int = 0
    format: str = ""  # a table's data format: psv (cells), csv, tsv, dsv
    title: str = ""
    attribution: str = ""  # a quote's or verse's author and source: `[quote, Author, Source]`


class Reader:
    def __init__(self, attributes: dict[str, str], size: int) -> None:
        self.attributes = attributes
        self.blocks: list[Block] = []
        self.title: str | None = None
        self.growth = 0  # characters attribute references have put in place of themselves
        self.max_growth = size + ATTRIBUTE_GROWTH
        self.level_offset = 0  # `:leveloffset: +1`, as an include's `leveloffset=+1` sets it

    # -- inline --------------------------------------------------------------------------------

    def inline(self, text: str) -> str:
        """A line or paragraph's text with its markup reduced to what a reader sees."""
        if not _MARKUP.search(text):  # most table cells and many lines: no pattern can match
            return text
        text = ATTRIBUTE_REF.sub(self._attribute, text)
        text = _INDEX_TERMS.sub("", text)
        text = _VISIBLE_INDEX_TERM.sub(r"\1", text)
        text = _ANCHOR.sub("", text)
        text = _LINKGIT.sub(r"\1(\2)", text)
        text = _URL_MACRO.sub(lambda m: _link_text(m.group(2)) or m.group(1), text)
        text = _XREF.sub(_xref_text, text)
        text = _MENU.sub(lambda m: " > ".join([m.group(1), *(p.strip() for p in m.group(2).split(">"))]), text)
        text = _MACRO_TEXT.sub(_macro_text, text)
        for pattern in _QUOTES:
            text = pattern.sub(r"\1", text)
        return _ESCAPE.sub("", text)

    def _attribute(self, m: re.Match[str]) -> str:
        if m.group(1):  # \{name} is the literal text
            return "{" + m.group(2) + "}"
        name = m.group(2).lower()
        value = self.attributes.get(name, BUILTIN_ATTRIBUTES.get(name))
        if value is None or self.growth + len(value) > self.max_growth:
            return m.group(0)
        self.growth += len(value)
        return value

    def text(self, lines: list[str]) -> str:
        return clean_inline(self.inline(" ".join(ln.strip() for ln in lines)))

    def emit(self, kind: BlockKind, text: str, level: int = 0, meta: dict[str, object] | None = None) -> None:
        if text.strip():
            self.blocks.append(Block(kind, text, level=level, meta=meta or {}))

    # -- blocks --------------------------------------------------------------------------------

    def read(self, lines: list[str], depth: int = 0) -> None:
        """Read `lines` (preprocessed: conditionals decided, include lines marked) into blocks."""
        pending = _Pending()
        at: dict[str, list[int]] = {}  # where each line occurs: does a fence close later?
        for k, line in enumerate(lines):
            at.setdefault(line.rstrip(), []).append(k)
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            if pending.title and not self._keeps_pending(line):  # a block title leads its block
                self.emit("caption", pending.title)
                pending.title = ""
            step = self._structural(lines, i, pending, depth, at)
            if step is not None:
                i = step
                if not self._keeps_pending(line):
                    pending = _Pending()
                continue
            i = self._paragraph(lines, i, pending)
            pending = _Pending()
        if pending.title:  # a block title with no block after it is still shown
            self.emit("caption", pending.title)

    @staticmethod
    def _keeps_pending(line: str) -> bool:
        """Block attribute, block title and anchor lines hand their settings to the next block."""
        return bool(BLOCK_ATTRIBUTES.match(line) or _BLOCK_TITLE.match(line))

    def _structural(self, lines: list[str], i: int, pending: _Pending, depth: int,
                    at: dict[str, list[int]]) -> int | None:
        """Read the construct that starts at line `i` if it is not a paragraph; the next line.
        `at` is where each line of `lines` occurs (a fence that closes later)."""
        line = lines[i]
        if _COMMENT.match(line):
            return i + 1
        if line.startswith(INCLUDED):
            self.emit("paragraph", "Includes " + _file_words(self.inline(line[len(INCLUDED):])) + ".",
                      meta={"include": line[len(INCLUDED):]})
            return i + 1
        if m := ATTRIBUTE_ENTRY.match(line):
            self._set_attribute(m)
            return i + 1
        if _BREAK.match(line):
            return i + 1
        if m := _BLOCK_MACRO.match(line):  # an image's alt text is what a reader gets of it
            if m.group(1) == "image" and (alt := m.group(2).split(",", 1)[0].strip()):
                self.emit("caption", self.text([alt]))
            return i + 1
        if m := BLOCK_ATTRIBUTES.match(line):
            _read_block_attributes(m.group(1), pending)
            return i + 1
        if m := _BLOCK_TITLE.match(line):
            pending.title = self.text([m.group(1)])
            return i + 1
        if m := _ONE_LINE_TITLE.match(line):
            return self._section(len(m.group(1)) - 1, _without_closing_marks(m.group(2)), lines, i + 1)
        if i + 1 < len(lines) and _is_two_line_title(line, lines[i + 1], _closes_later(lines, i + 1, at)):
            return self._section(_UNDERLINE_LEVELS[lines[i + 1][0]], line.strip(), lines, i + 2)
        if m := TABLE.match(line):
            return self._table(lines, i, m.group(1), pending)
        if _DELIMITER.match(line):
            return self._delimited(lines, i, pending, depth)
        if line.strip() == "+":  # a list continuation: what follows is read as its own block
            return i + 1
        if _TERM.match(line):
            return self._description(lines, i)
        if m := _LIST_ITEM.match(line):
            return self._list_item(lines, i, m)
        return None

    def _set_attribute(self, m: re.Match[str]) -> None:
        name = m.group(2).lower()
        if name == "leveloffset":
            value = (m.group(4) or "").strip()
            offset = 0 if m.group(1) or m.group(3) else level_offset(value)
            relative = value.startswith(("+", "-"))
            self.level_offset = max(-5, min(5, self.level_offset + offset if relative else offset))
        if m.group(1) or m.group(3):
            self.attributes.pop(name, None)
        else:
            self.attributes[name] = self.inline(m.group(4) or "")[:MAX_ATTRIBUTE_CHARS]

    def _section(self, level: int, title: str, lines: list[str], i: int) -> int:
        level = max(0, min(5, level + self.level_offset))
        text = self.text([title])
        if level == 0 and self.title is None:
            self.title = text
            i = self._header(lines, i)
        self.emit("heading", text, level=level + 1)
        return i

    def _header(self, lines: list[str], i: int) -> int:
        """Skip the document header under its title: an author line, a revision line under it,
        attribute entries and comments; a paragraph starting there is the body's."""
        for pattern in (_AUTHOR_LINE, _REVISION_LINE):
            if i < len(lines) and pattern.match(lines[i]):
                i += 1
        while i < len(lines) and (m := ATTRIBUTE_ENTRY.match(lines[i]) or _COMMENT.match(lines[i])):
            if m.re is ATTRIBUTE_ENTRY:
                self._set_attribute(m)
            i += 1
        return i

    def _delimited(self, lines: list[str], i: int, pending: _Pending, depth: int) -> int:
        body, end = fenced(lines, i)
        fence = lines[i].rstrip()
        kind = fence[0]
        if (kind in "-." and fence != "--") or pending.style in ("source", "listing", "literal"):
            code = "\n".join(ln for ln in body if not ln.startswith(INCLUDED)).strip("\n")
            self.emit("code", code, meta={"language": pending.language} if pending.language else None)
        elif pending.style == "verse" and kind in "_=":  # a verse block keeps its line breaks
            verse = textwrap.dedent("\n".join(body)).strip("\n")
            self.emit("paragraph", "\n".join(self.text([ln]) for ln in verse.split("\n")))
            self._attribution(pending)
        elif kind in "=*_" or fence == "--":
            label = _ADMONITIONS.get(pending.style.upper())
            start = len(self.blocks)
            if depth < MAX_NESTING:
                self.read(body, depth + 1)
            else:
                self.emit("paragraph", self.text(body))
            if label and len(self.blocks) > start and self.blocks[start].kind == "paragraph":
                self.blocks[start].text = f"{label}: {self.blocks[start].text}"
            self._attribution(pending)
        elif kind == "+":  # passthrough: raw HTML or DocBook for the converter; its words are shown
            self.emit("paragraph", clean_inline(html.unescape(_TAG.sub(" ", "\n".join(body)))))
        # a `////` comment block says nothing
        return end + 1

    def _paragraph(self, lines: list[str], i: int, pending: _Pending) -> int:
        literal = lines[i][:1] in (" ", "\t")  # an indented paragraph is literal up to a blank line
        end = i + 1
        while end < len(lines) and lines[end].strip() and (literal or not _interrupts(lines[end])):
            end += 1
        para = lines[i:end]
        if literal or pending.style in ("verse", "literal", "listing", "source"):
            kind: BlockKind = "paragraph" if pending.style == "verse" else "code"
            body = textwrap.dedent("\n".join(para))
            self.emit(kind, body if kind == "code" else "\n".join(self.text([ln]) for ln in body.split("\n")))
            self._attribution(pending)
            return end
        label = _ADMONITIONS.get(pending.style.upper())
        if m := _ADMONITION.match(para[0]):
            label, para = _ADMONITIONS[m.group(1)], [m.group(2), *para[1:]]
        text = _HARD_BREAK.sub("", "\n".join(para))
        body = self.text(text.split("\n"))
        self.emit("paragraph", f"{label}: {body}" if label else body)
        self._attribution(pending)
        return end

    def _attribution(self, pending: _Pending) -> None:
        """Who said a quote or a verse, under it, as the rendered page shows it ("— Author, Source")."""
        if pending.attribution:
            self.emit("paragraph", "\u2014 " + self.text([pending.attribution]))

    def _description(self, lines: list[str], i: int) -> int:
        """A description list entry: its term lines, then the text of its first paragraph
        (on the term's line or under it, indented or not, blank lines between allowed)."""
        terms: list[str] = []
        first: list[str] = []
        while i < len(lines) and (m := _TERM.match(lines[i])) and not first:
            terms.append(self.text([m.group(1)]))
            if m.group(3):
                first.append(m.group(3))
            i += 1
        self.emit("paragraph", "\n".join(terms), meta={"term": True})
        if not first:
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _continues(lines[j]):
                i = j
        while i < len(lines) and _continues(lines[i]):
            first.append(lines[i])
            i += 1
        if first:
            self.emit("paragraph", self.text(first))
        return i

    def _list_item(self, lines: list[str], i: int, m: re.Match[str]) -> int:
        own = [m.group(2)]
        i += 1
        while i < len(lines) and _continues(lines[i]):
            own.append(lines[i])
            i += 1
        marker = m.group(1)
        self.emit("list_item", self.text(own), meta={"ordered": not marker.startswith(("*", "-"))})
        return i

    def _table(self, lines: list[str], i: int, separator: str, pending: _Pending) -> int:
        body, end = fenced(lines, i)
        separator = DATA_FORMATS.get(pending.format, separator)
        cells, first, header_row = table_cells(body, separator)
        width = max(1, min(pending.cols or header_row or first or len(cells), MAX_COLUMNS))
        cells = [Cell(self.text([c.text]), c.cols, c.rows, c.repeat) for c in cells]
        rows = grid(cells, width)
        if rows:
            has_header = bool(header_row) or "header" in pending.options
            text = markdown_table(rows) if has_header else markdown_table(rows, header=[""] * width)
            self.emit("table", text, meta={"table_header": table_header_lines(text)})
        return end + 1


def _file_words(path: str) -> str:
    """An included file named as words ("diff-options.txt" -> "diff options")."""
    return re.sub(r"[-_.\s]+", " ", path.rsplit("/", 1)[-1].rsplit(".", 1)[0]).strip()


def fenced(lines: list[str], i: int) -> tuple[list[str], int]:
    """The body of the delimited block whose fence is line `i`, and the line closing it (the
    end of `lines` when nothing does)."""
    fence = lines[i].rstrip()
    end = i + 1
    while end < len(lines) and lines[end].rstrip() != fence:
        end += 1
    return lines[i + 1:end], end


def _continues(line: str) -> bool:
    """Whether `line` carries on the paragraph of a list item or a description above it: not
    when another item or term starts there."""
    return bool(line.strip()) and not _interrupts(line) and not _TERM.match(line) and not _LIST_ITEM.match(line)


def _without_closing_marks(title: str) -> str:
    """"Title ==" -> "Title": the symmetric form's closing marks (a string method, not a pattern:
    searched from every blank of a long run, a pattern was quadratic)."""
    text = title.rstrip()
    bare = text.rstrip("=#")
    return bare.rstrip() if bare != text and bare[-1:] in (" ", "\t") else text


def _link_text(text: str) -> str:
    """A link macro's text without its attributes (`link:a.html[Docs, window=_blank]`)."""
    return text.split(",", 1)[0].strip() if "=" in text else text


def _macro_text(m: re.Match[str]) -> str:
    """What an inline macro shows: an image's alt text, a footnote's or a key's text; an anchor,
    an icon or a hidden index term nothing."""
    return "" if m.group(1) in ("anchor", "icon", "indexterm") else m.group(3)


def _xref_text(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(2) or m.group(1).lstrip("_").replace("_", " ")
    return m.group(4) or m.group(3).split("#")[-1].replace("_", " ")


def _is_two_line_title(line: str, under: str, closes_later: bool) -> bool:
    """`Title` over a line of one of `=-~^+` about as long: a difference of one (Asciidoctor's
    rule), or up to three (asciidoc-py's, which Git's pages use) unless the line under it is a
    fence the same line closes later ("Output" over a `----` listing block)."""
    m = _UNDERLINE.match(under)
    if not m or (not line[:1].isalnum() and line[:1] not in "'\"`_*") or _DELIMITER.match(line):
        return False  # a block's own fence is no title (`____` opening a quote over a `----` listing)
    diff = abs(len(line.rstrip()) - len(under.rstrip()))
    fence = closes_later and _DELIMITER.match(under) is not None
    return (diff <= 1 or (diff <= 3 and not fence)) and not _TERM.match(line)


def _closes_later(lines: list[str], i: int, at: dict[str, list[int]]) -> bool:
    """Whether line `i`, read as a fence, is closed by the same line further on: its next
    occurrence, unless that one underlines a title of its own ("DESCRIPTION" over the same
    dashes as "SYNOPSIS" above)."""
    places = at.get(lines[i].rstrip(), [])
    k = bisect.bisect_right(places, i)
    if k == len(places):
        return False
    j = places[k]
    titled = lines[j - 1].strip() and (j < 2 or not lines[j - 2].strip())
    return not (titled and _is_two_line_title(lines[j - 1], lines[j], False))


def _interrupts(line: str) -> bool:
    """Whether `line` ends the paragraph above it: a fence, a table, a block attribute line, a
    continuation, a comment or an include starts a block of its own. A line that looks like a
    list item does not ("J. Random Hacker" wrapped onto a line of its own): only inside a list
    does a new item end the one above (`_continues`), as in Asciidoctor."""
    return bool(_DELIMITER.match(line) or TABLE.match(line) or BLOCK_ATTRIBUTES.match(line)
                or line.strip() == "+" or _COMMENT.match(line) or line.startswith(INCLUDED))


def _read_block_attributes(spec: str, pending: _Pending) -> None:
    """A block attribute line's style, source language, options and column count."""
    if spec.startswith("[") or not spec:  # [[anchor]]
        return
    entries = [(m.group(1) or "", m.group(2).strip().strip('"\'')) for m in ATTRIBUTE_LIST.finditer(spec)]
    positional = [value for name, value in entries if not name]
    first = positional[0] if positional and entries[0][0] == "" else ""
    if first.startswith(("#", ".", "%")) or "%" in first:  # [#id.role%option], [%header]
        first, *options = first.split("%")
        pending.options |= set(options)
        first = "" if first.startswith(("#", ".")) else first
    pending.style = first
    if first == "source" and len(positional) > 1:
        pending.language = positional[1]
    if first in ("quote", "verse"):
        named = dict(entries)
        pending.attribution = ", ".join(v for v in (named.get("attribution") or (positional[1:2] or [""])[0],
                                                    named.get("citetitle") or (positional[2:3] or [""])[0]) if v)
    for name, value in entries:
        if name == "options":
            pending.options |= {o.strip() for o in value.split(",")}
        elif name == "cols":
            pending.cols = column_count(value)
        elif name == "format":
            pending.format = value.lower()
