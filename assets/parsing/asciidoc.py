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
  the column its spans put it (`_grid`), a nested `!===` table's cells as its cell's text; a quote
  or verse ends with its attribution ("— Author, Source"); a block image gives its alt text; block
  titles (`.Title`) are captions.
* Attribute entries (`:name: value`, a value wrapped with ` \\` joined) are substituted where
  referenced (`{name}`), with Asciidoctor's built-in character attributes and Git's `{litdd}`; a value is cut at
  `MAX_ATTRIBUTE_CHARS` and substitution stops adding text past `ATTRIBUTE_GROWTH` (values built
  by doubling one another grew exponentially). `ifdef::`/`ifndef::` are
  decided only for attributes the document (or a file including it) sets or unsets: a fragment
  read on its own is written for attributes its includer sets, and text whose condition cannot
  be known is kept rather than lost.
* `include::` lines are followed when the parse is given an `IncludeReader`, which admits only
  the files `assets.includes` lets the page show (listed documents of the same source that all
  its readers may read; the content hash the parse is cached by covers them): the file's lines
  are read in place, its conditions decided by the includer's attributes (Git's `:git-log: 1`
  before `include::diff-options.txt[]`), with `tag=`/`tags=`, `lines=` and `leveloffset=`
  honoured, tag directives dropped, at most `MAX_INCLUDE_DEPTH` files deep, never a file that
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

import bisect
import csv
import html
import posixpath
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, markdown_table, normalize_chars, table_header_lines
from connectors.documents import Block, BlockKind, ParseResult

__all__ = ["IncludeReader", "asciidoc_blocks", "parse_asciidoc", "resolve_include", "substituted"]

IncludeReader = Callable[[str, str], "tuple[str, bytes] | None"]
"""(an include target as written, attributes substituted; the external id of the file holding
the include line) -> (the included file's external id, its bytes), or None: not followed."""

MAX_NESTING = 8  # delimited blocks inside one another; deeper ones are read as their lines
MAX_INCLUDE_DEPTH = 8  # files included by included files; deeper include lines stay pointers
MAX_INCLUDED_BYTES = 16 * 1024 * 1024  # what included files may add to one document, at most
MAX_INCLUDE_REPEATS = 4  # times one file may be read into one document (a 4 KB page made 104 MB)
MAX_ATTRIBUTE_CHARS = 4096  # an attribute's value is cut here: values built of values doubled each line
MAX_COLUMNS = 256  # a `cols` count beyond this is read from the rows instead (`cols="300000000*"`)
MAX_ROW_SPAN = 64  # a cell's `.N+` row span is cut here
SPAN_AREA = 4  # table places spans may cover, per cell written (`_grid`)
SPANNED_LABEL_CHARS = 200  # a cell spanning rows repeats its text below up to this length
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

_ATTRIBUTE_ENTRY = re.compile(r"^:(!?)([\w][\w-]*)(!?):(?:[ \t]+(.*))?$")
_ATTRIBUTE_WRAP = re.compile(r"[ \t]\\$")  # an attribute value wrapped onto the next line
_CONDITIONAL = re.compile(r"^(ifdef|ifndef|ifeval|endif)::([^\[]*)\[(.*)\][ \t]*$")
_INCLUDE = re.compile(r"^include::([^\[]+)\[([^\]]*)\][ \t]*$")
_TAG_DIRECTIVE = re.compile(r"\b(tag|end)::([\w.-]{1,200})\[\]")  # a tagged region's ends, in an included file
_INCLUDED = "\x00include:"  # what `preprocess` leaves where an include line was
_ONE_LINE_TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*)$")
_UNDERLINE_LEVELS = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
_UNDERLINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--)[ \t]*$")
_TABLE = re.compile(r"^([|,:!])={3,}[ \t]*$")
_DATA_FORMATS = {"csv": ",", "tsv": "\t", "dsv": ":"}  # `[format=csv]` over a `|===` table
_BLOCK_ATTRIBUTES = re.compile(r"^\[(.*)\][ \t]*$")
# one entry of an attribute list: `name="a, b"`, `name=value` or a positional value
_ATTRIBUTE_LIST = re.compile(r"\s*(?:([\w-]+)\s*=\s*)?(\"[^\"]*\"|'[^']*'|[^,]*)\s*(?:,|$)")
_BLOCK_TITLE = re.compile(r"^\.([^\s.].*)$")
_LIST_ITEM = re.compile(r"^[ \t]*(\*{1,5}|-|\.{1,5}|\d{1,3}\.|[a-zA-Z]\.|<\d+>)[ \t]+(\S.*)$")
_TERM = re.compile(r"^[ \t]*(?!//)([^\s].*?)(:{2,4}|;;)(?:[ \t]+(.*))?$")  # may be indented, as list items
# Asciidoctor's author line (up to three names, an optional <e-mail>; several joined by "; ")
# and a revision line ("v1.2, 2024-01-01: remark"), the two lines the header may hold
_AUTHOR_LINE = re.compile(r"^\w[\w'.-]*(?: +\w[\w'.-]*){0,2}(?: +<[^<>\s]+>)?(?: *; *\w[\w'. -]*(?:<[^<>\s]+>)?)*$")
_REVISION_LINE = re.compile(r"^v?\d[\w.-]*(?:, *[^:]*)?(?:: *.*)?$")
_ADMONITION = re.compile(r"^(NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+(.*)$")

_ATTRIBUTE_REF = re.compile(r"(\\?)\{([\w][\w-]*)\}")
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
_COMMENT_FENCE = re.compile(r"^/{4,}[ \t]*$")
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
# a cell's spec before its `|` (`2+`, `3*`, `^.>`, `a`): after a blank ending the cell before, or
# alone before a line's first `|`
_SPEC = r"((?:\d{1,4}\*|\d{0,4}(?:\.\d{1,4})?\+)?[<^>]?(?:\.[<^>])?[adehlmsv]?)"
_CELL_SPEC = re.compile(r"\s" + _SPEC + "$")
_LINE_SPEC = re.compile("^" + _SPEC + "$")
_SPAN = re.compile(r"^(?:(\d{1,4})\*|(\d{0,4})(?:\.(\d{1,4}))?\+)")  # repeat `3*`, or columns `2+` and rows `.2+`


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


class _Reader:
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
        text = _ATTRIBUTE_REF.sub(self._attribute, text)
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
        return bool(_BLOCK_ATTRIBUTES.match(line) or _BLOCK_TITLE.match(line))

    def _structural(self, lines: list[str], i: int, pending: _Pending, depth: int,
                    at: dict[str, list[int]]) -> int | None:
        """Read the construct that starts at line `i` if it is not a paragraph; the next line.
        `at` is where each line of `lines` occurs (a fence that closes later)."""
        line = lines[i]
        if _COMMENT.match(line):
            return i + 1
        if line.startswith(_INCLUDED):
            self.emit("paragraph", "Includes " + _file_words(self.inline(line[len(_INCLUDED):])) + ".",
                      meta={"include": line[len(_INCLUDED):]})
            return i + 1
        if m := _ATTRIBUTE_ENTRY.match(line):
            self._set_attribute(m)
            return i + 1
        if _BREAK.match(line):
            return i + 1
        if m := _BLOCK_MACRO.match(line):  # an image's alt text is what a reader gets of it
            if m.group(1) == "image" and (alt := m.group(2).split(",", 1)[0].strip()):
                self.emit("caption", self.text([alt]))
            return i + 1
        if m := _BLOCK_ATTRIBUTES.match(line):
            _read_block_attributes(m.group(1), pending)
            return i + 1
        if m := _BLOCK_TITLE.match(line):
            pending.title = self.text([m.group(1)])
            return i + 1
        if m := _ONE_LINE_TITLE.match(line):
            return self._section(len(m.group(1)) - 1, _without_closing_marks(m.group(2)), lines, i + 1)
        if i + 1 < len(lines) and _is_two_line_title(line, lines[i + 1], _closes_later(lines, i + 1, at)):
            return self._section(_UNDERLINE_LEVELS[lines[i + 1][0]], line.strip(), lines, i + 2)
        if m := _TABLE.match(line):
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
            offset = 0 if m.group(1) or m.group(3) else _level_offset(value)
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
        while i < len(lines) and (m := _ATTRIBUTE_ENTRY.match(lines[i]) or _COMMENT.match(lines[i])):
            if m.re is _ATTRIBUTE_ENTRY:
                self._set_attribute(m)
            i += 1
        return i

    def _delimited(self, lines: list[str], i: int, pending: _Pending, depth: int) -> int:
        body, end = _fenced(lines, i)
        fence = lines[i].rstrip()
        kind = fence[0]
        if (kind in "-." and fence != "--") or pending.style in ("source", "listing", "literal"):
            code = "\n".join(ln for ln in body if not ln.startswith(_INCLUDED)).strip("\n")
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
        body, end = _fenced(lines, i)
        separator = _DATA_FORMATS.get(pending.format, separator)
        cells, first, header_row = _table_cells(body, separator)
        width = max(1, min(pending.cols or header_row or first or len(cells), MAX_COLUMNS))
        cells = [_Cell(self.text([c.text]), c.cols, c.rows, c.repeat) for c in cells]
        rows = _grid(cells, width)
        if rows:
            has_header = bool(header_row) or "header" in pending.options
            text = markdown_table(rows) if has_header else markdown_table(rows, header=[""] * width)
            self.emit("table", text, meta={"table_header": table_header_lines(text)})
        return end + 1


def _file_words(path: str) -> str:
    """An included file named as words ("diff-options.txt" -> "diff options")."""
    return re.sub(r"[-_.\s]+", " ", path.rsplit("/", 1)[-1].rsplit(".", 1)[0]).strip()


def _fenced(lines: list[str], i: int) -> tuple[list[str], int]:
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
    return bool(_DELIMITER.match(line) or _TABLE.match(line) or _BLOCK_ATTRIBUTES.match(line)
                or line.strip() == "+" or _COMMENT.match(line) or line.startswith(_INCLUDED))


def _read_block_attributes(spec: str, pending: _Pending) -> None:
    """A block attribute line's style, source language, options and column count."""
    if spec.startswith("[") or not spec:  # [[anchor]]
        return
    entries = [(m.group(1) or "", m.group(2).strip().strip('"\'')) for m in _ATTRIBUTE_LIST.finditer(spec)]
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
            pending.cols = _column_count(value)
        elif name == "format":
            pending.format = value.lower()


def _column_count(spec: str) -> int:
    """How many columns a `cols` attribute declares: "3*", "1,2,1", "2*,3", a bare "3"; 0 (read
    them from the rows) past `MAX_COLUMNS`."""
    spec = spec.strip()
    if spec.isdigit():
        total = int(spec)
    else:
        total = 0
        for part in spec.split(","):
            m = re.match(r"\s*(\d{1,9})\*", part)
            total += int(m.group(1)) if m else 1
    return total if total <= MAX_COLUMNS else 0


@dataclass
class _Cell:
    """One table cell as written: its text, the columns and rows it spans, how often it repeats
    (`3*|`: the same cell in three columns)."""

    text: str
    cols: int = 1
    rows: int = 1
    repeat: int = 1

    @classmethod
    def of(cls, text: str, spec: str) -> _Cell:
        m = _SPAN.match(spec)
        if not m:
            return cls(text)
        repeat, cols, rows = (min(int(g), MAX_COLUMNS) if g else 1 for g in m.groups())
        return cls(text, cols=cols, rows=min(rows, MAX_ROW_SPAN), repeat=repeat)

    @property
    def width(self) -> int:
        return self.cols * self.repeat


def _table_cells(body: list[str], separator: str) -> tuple[list[_Cell], int, int]:
    """A table's cells in order; how many columns its first line fills (the column count when no
    `cols` says); and how many the first row fills when a blank line follows it (Asciidoctor's
    implicit header row), else 0. A cell's spec before its separator (`2+|`, `.2+|`, `3*|`)
    says what it spans."""
    if separator in ",:\t":  # CSV, DSV and TSV data; a quoted CSV field may hold the separator
        rows = [[c.strip() for c in r] for r in csv.reader([ln for ln in body if ln.strip()], delimiter=separator)]
        return [_Cell(c) for r in rows for c in r], len(rows[0]) if rows else 0, 0
    split = re.compile(r"(?<!\\)" + re.escape(separator))
    cells: list[tuple[list[str], str]] = []  # each cell's pieces (joined once at the end: += was quadratic), spec
    first = header = 0

    def filled() -> int:
        return sum(_Cell.of("", spec).width for _, spec in cells)

    for n, line in enumerate(body):
        if not line.strip():
            if cells and not header and first and not any(not ln.strip() for ln in body[:n]):
                header = filled()
            continue
        parts = split.split(line)
        lead = _nested(parts[0].strip()) if separator != "!" else parts[0].strip()
        spec = lead if _LINE_SPEC.match(lead) else ""
        if lead and not spec:  # text before the line's first cell continues the last
            if cells:
                cells[-1][0].append(lead)
            else:
                cells.append(([lead], ""))
        for k, part in enumerate(parts[1:], 1):
            text, following = part, ""
            if k < len(parts) - 1 and (m := _CELL_SPEC.search(part)) and m.group(1):
                text, following = part[:m.start(1)], m.group(1)  # the spec of the cell that follows
            cells.append(([text.strip().replace("\\" + separator, separator)], spec))
            spec = following
        first = first or filled()
    return [_Cell.of(" ".join(pieces), spec) for pieces, spec in cells], first, header


def _nested(line: str) -> str:
    """A line of an `a|` cell's content as the cell's text: a nested table's fence and block
    attribute lines say nothing, its `!` cells are separated by "; "."""
    if _BLOCK_ATTRIBUTES.match(line) or (line.startswith("!") and _TABLE.match(line)):
        return ""
    if line.startswith("!"):
        return "; ".join(c.strip() for c in re.split(r"(?<!\\)!", line) if c.strip())
    return line


def _grid(cells: list[_Cell], width: int) -> list[list[str]]:
    """The rows of a table `width` columns wide, each cell placed at the first free place as
    Asciidoctor places it: a cell spanning columns leaves the others it covers empty; one spanning
    rows repeats a short text (`SPANNED_LABEL_CHARS`, a label such as "Linux") in the rows below,
    so each row stays readable alone when a chunk holds only some of them; a repeated cell fills
    the next columns. Spans that would cover more than `SPAN_AREA` places per cell written are
    not honoured (each cell one place): a table cannot grow past a bounded multiple of its text."""
    cells = [replace(c, cols=min(c.cols, width), repeat=min(c.repeat, width)) for c in cells]
    if sum(c.cols * c.rows * c.repeat for c in cells) > SPAN_AREA * max(len(cells), width):
        cells = [_Cell(c.text) for c in cells]
    taken: dict[tuple[int, int], str] = {}
    r = c = 0
    last = -1  # the last row a cell starts in: rows only a span reaches into are not added
    for cell in cells:
        below = cell.text if len(cell.text) <= SPANNED_LABEL_CHARS else ""
        for _ in range(cell.repeat):
            while (r, c) in taken or c >= width:
                c += 1
                if c >= width:
                    r, c = r + 1, 0
            for dr in range(cell.rows):
                for dc in range(min(cell.cols, width - c)):
                    taken[(r + dr, c + dc)] = "" if dc else cell.text if dr == 0 else below
            last = r
            c += cell.cols
    return [[taken.get((row, col), "") for col in range(width)] for row in range(last + 1)]


def substituted(target: str, values: Mapping[str, str]) -> str | None:
    """An include target with its attribute references (`{partialsdir}`) replaced by `values`;
    None when one of them is not set (such a target is not followed)."""
    missing = False

    def value(m: re.Match[str]) -> str:
        nonlocal missing
        v = values.get(m.group(2).lower())
        missing = missing or v is None
        return v or ""

    out = _ATTRIBUTE_REF.sub(value, target.strip())
    return None if missing else out


def resolve_include(base: str, target: str) -> str | None:
    """The path an include target names from the file `base` (a source-relative path):
    relative to `base`'s folder, as Asciidoctor resolves it; None for what is not a file of
    the same source (an absolute path, a URL, anything above the source's root)."""
    target = target.strip()
    if not target or target.startswith("/") or "://" in target or "\\" in target or "\x00" in target:
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), target))
    if joined in (".", "..") or joined.startswith(("../", "/")):
        return None
    return joined


@dataclass
class _Included:
    """What following includes has cost so far in one parse."""

    reader: IncludeReader | None
    budget: int  # bytes the included files may still add
    spent: int = 0  # bytes they added
    followed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Preprocessor:
    """Conditional directives decided, include lines followed (where `reader` admits the file)
    or marked (`_INCLUDED`), one file after another, the includer's attributes deciding the
    included files' conditions as they decide its own (the point of Git's `:git-log: 1` before
    `include::diff-options.txt[]`)."""

    def __init__(self, included: _Included) -> None:
        self.included = included
        self.known: dict[str, bool] = {}
        self.values: dict[str, str] = {}  # attribute values, for targets built from them
        self.stack: list[bool] = []
        self.hidden = 0  # conditions on the stack that are false: text is kept while there are none
        self.out: list[str] = []
        self.includes: list[str] = []
        self.files: list[str] = []  # the files being read, outermost first (a cycle is not followed)

    def feed(self, text: str, base: str, *, lines_wanted: Callable[[int], bool] | None = None,
             tags: set[str] | None = None) -> None:
        lines = text.split("\n")
        joined = 0  # lines up to here were joined to the attribute entry before them
        comment = ""  # the fence of the comment block the line is in
        inside: dict[str, int] = {}  # the tags open at this line (an included file's `tag::x[]`)
        open_wanted = 0  # of them, the tags asked for
        self.files.append(base)
        for n, line in enumerate(lines):
            if n < joined:
                continue
            if len(self.files) > 1:  # an included file: its selection, and no tag directive shown
                if m := _TAG_DIRECTIVE.search(line):
                    name, opens = m.group(2), m.group(1) == "tag"
                    if opens or inside.get(name):
                        inside[name] = inside.get(name, 0) + (1 if opens else -1)
                        open_wanted += (1 if opens else -1) if tags is not None and name in tags else 0
                    continue
                if (tags is not None and not open_wanted) or (lines_wanted is not None and not lines_wanted(n + 1)):
                    continue
            if comment or _COMMENT_FENCE.match(line):
                if self.hidden == 0:
                    self.out.append(line)
                comment = "" if line.rstrip() == comment else comment or line.rstrip()
                continue
            if m := _CONDITIONAL.match(line):
                self._condition(*m.groups())
                continue
            if self.hidden:
                continue
            if m := _INCLUDE.match(line):
                self._include(m.group(1).strip(), m.group(2), base)
                continue
            if m := _ATTRIBUTE_ENTRY.match(line):
                line, joined = _joined_entry(lines, n)
                m = _ATTRIBUTE_ENTRY.match(line) or m
                name = m.group(2).lower()
                self.known[name] = not (m.group(1) or m.group(3))
                if self.known[name]:
                    self.values[name] = (m.group(4) or "").strip()
                else:
                    self.values.pop(name, None)
            self.out.append(line)
        self.files.pop()

    def _condition(self, kind: str, names: str, inline: str) -> None:
        if kind == "endif":
            if self.stack:
                self.hidden -= not self.stack.pop()
            return
        keep = _condition(kind, names, self.known)
        if inline and kind != "ifeval":  # ifdef::name[text]: one line of its own
            if keep and self.hidden == 0:
                self.out.append(inline)
            return
        self.stack.append(keep)
        self.hidden += not keep

    def _include(self, target: str, spec: str, base: str) -> None:
        if len(self.files) == 1:  # the document's own include lines, not its included files'
            self.includes.append(target)
        got = self._read(target, base)
        if got is None:
            self.out.append(_INCLUDED + target)
            return
        dep, data = got
        attrs = dict(_include_attributes(spec))
        offset = _level_offset(attrs.get("leveloffset", ""))
        if offset:
            self.out.append(f":leveloffset: {offset:+d}")
        text, _ = decode_text(data)
        self.feed(normalize_chars(text), dep, lines_wanted=_line_ranges(attrs.get("lines", "")),
                  tags=_tag_names(attrs.get("tag") or attrs.get("tags") or ""))
        if offset:
            self.out.append(f":leveloffset: {-offset:+d}")

    def _read(self, target: str, base: str) -> tuple[str, bytes] | None:
        """The included file (its external id, its bytes) when it is followed, else None."""
        inc = self.included
        if inc.reader is None or len(self.files) > MAX_INCLUDE_DEPTH:
            return None
        resolved = substituted(target, self.values)
        got = inc.reader(resolved, base) if resolved is not None else None
        if got is None or got[0] in self.files:  # not admitted, or a file including itself
            return None
        if inc.followed.count(got[0]) >= MAX_INCLUDE_REPEATS:
            inc.warnings.append(f"include::{target}[] not followed: read {MAX_INCLUDE_REPEATS} times already")
            return None
        if len(got[1]) > inc.budget:
            inc.warnings.append(f"include::{target}[] not followed: the document would pass its size limit")
            return None
        inc.budget -= len(got[1])
        inc.spent += len(got[1])
        inc.followed.append(got[0])
        return got


def _include_attributes(spec: str) -> list[tuple[str, str]]:
    """An include line's attributes (`tag=x`, `lines="1..3;5"`, `leveloffset=+1`)."""
    return [(m.group(1).lower(), m.group(2).strip().strip('"\'')) for m in _ATTRIBUTE_LIST.finditer(spec)
            if m.group(1)]


def _level_offset(value: str) -> int:
    """`leveloffset=+1` (or -1, or 1): how many levels the included file's sections move down."""
    m = re.fullmatch(r"\s*([+-]?)(\d{1,2})\s*", value)
    return 0 if not m else (-1 if m.group(1) == "-" else 1) * min(int(m.group(2)), 5)


def _line_ranges(value: str) -> Callable[[int], bool] | None:
    """`lines=1..5;10..-1` (`;` or `,` between ranges, -1: to the end) as a test of a line
    number (ranges merged, one binary search a line); None for every line."""
    ranges: list[tuple[int, int]] = []
    for part in re.split(r"[;,]", value):
        if m := re.fullmatch(r"\s*(\d{1,9})(?:\.\.(-1|\d{1,9}))?\s*", part):
            first = int(m.group(1))
            last = first if m.group(2) is None else (1 << 62 if m.group(2) == "-1" else int(m.group(2)))
            ranges.append((first, last))
    if not ranges:
        return None
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    starts = [a for a, _ in merged]

    def wanted(n: int) -> bool:
        k = bisect.bisect_right(starts, n) - 1
        return k >= 0 and n <= merged[k][1]

    return wanted


def _tag_names(value: str) -> set[str] | None:
    """`tag=x` or `tags=x;y`: the tagged regions to include; None for the whole file (no tag
    named, or a wildcard or negation, which are read as the whole file)."""
    names = {t.strip() for t in re.split(r"[;,]", value) if t.strip()}
    return None if not names or any(t.startswith("!") or "*" in t for t in names) else names


def preprocess(text: str, base: str = "", included: _Included | None = None) -> tuple[list[str], list[str]]:
    """The document's lines with conditional directives decided and each include line followed
    (its file's lines in its place, where `included.reader` admits the file) or marked
    (`_INCLUDED`), and the include targets it names, as written. A condition is decided only on
    attributes the document (or its includer) sets or unsets (see the module's docstring);
    `ifeval` is kept. Directives inside a `////` comment block are part of the comment."""
    pre = _Preprocessor(included or _Included(None, 0))
    pre.feed(text, base)
    return pre.out, pre.includes


def _joined_entry(lines: list[str], n: int) -> tuple[str, int]:
    """An attribute entry with its value's wrapped lines joined to it (` \\` at a line's end: the
    value goes on on the next line, joined by a space), while it holds at most
    `MAX_ATTRIBUTE_CHARS`; and the index of the line after the last one joined."""
    line = lines[n]
    while _ATTRIBUTE_WRAP.search(line) and n + 1 < len(lines) and len(line) <= MAX_ATTRIBUTE_CHARS:
        n += 1
        line = _ATTRIBUTE_WRAP.sub("", line) + " " + lines[n].strip()
    return _ATTRIBUTE_WRAP.sub("", line), n + 1


def _condition(kind: str, names: str, known: dict[str, bool]) -> bool:
    if kind == "ifeval":
        return True
    parts = [n.strip().lower() for n in re.split(r"[,+]", names) if n.strip()]
    if not parts or any(p not in known for p in parts):
        return True  # set by whoever includes this file, if anyone: keep the text
    values = [known[p] for p in parts]
    defined = all(values) if "+" in names else any(values)
    return defined if kind == "ifdef" else not defined


def asciidoc_blocks(text: str, base: str = "", included: _Included | None = None,
                    ) -> tuple[list[Block], str | None, list[str]]:
    """Blocks, the document title and the include targets of an AsciiDoc text (`base`: its
    path, against which include targets resolve)."""
    lines, includes = preprocess(normalize_chars(text), base, included)
    reader = _Reader({}, len(text) + (included.spent if included else 0))
    reader.read(lines)
    return reader.blocks, reader.title, includes


def parse_asciidoc(data: bytes, name: str = "", include: IncludeReader | None = None,
                   max_bytes: int | None = None) -> ParseResult:
    """Decode and parse an AsciiDoc document; with `include`, the files it admits are read in
    place of their include lines, at most `max_bytes` of them in all (`metadata["included"]`:
    those read; `["included_bytes"]`: their size)."""
    text, encoding = decode_text(data)
    included = _Included(include, min(max_bytes, MAX_INCLUDED_BYTES) if max_bytes is not None else MAX_INCLUDED_BYTES)
    blocks, title, includes = asciidoc_blocks(text, name, included)
    metadata: dict[str, object] = {"encoding": encoding}
    if includes:
        metadata["includes"] = includes
    if included.followed:
        metadata["included"] = list(dict.fromkeys(included.followed))
        metadata["included_bytes"] = included.spent
    return ParseResult(blocks=blocks, title=title, format="asciidoc", metadata=metadata,
                       warnings=included.warnings)
