"""AsciiDoc (`.adoc`, and the `.txt` sources of Git's and many projects' manuals) without a
converter: a line-based reader for the constructs that carry structure, as Asciidoctor reads them.

Read as plain text an AsciiDoc manual kept its markup in every chunk (`linkgit:git-commit[1]`,
`'git add'`, `{litdd}`, `[verse]`, `----` fences), its option lists were paragraphs led by a
`--all::` line, and comments and conditional directives were indexed as words.

* Section titles: `== Title` (or Markdown's `##`) and the older two-line form, a title underlined
  by `=`, `-`, `~`, `^` or `+` of about its length; the level-0 title is the document's, and the
  author and revision lines under it are left out.
* Description lists (`--all::`, `term:::`, `term;;`): the term lines are one paragraph marked
  {"term": True}, their description the paragraphs after it, as the man and info readers give
  an option list. Lists (`*`, `-`, `.`, `1.`), admonitions (`NOTE: …` → "Note: …"), `[verse]`
  paragraphs (line breaks kept), literal paragraphs (indented) and listing/literal blocks (code).
* Example, sidebar, quote and open blocks are read for the blocks inside them; comment blocks,
  `//` comments and passthrough blocks (raw HTML or DocBook) are dropped; tables (`|===`, `,===`)
  become Markdown tables with their header row.
* Attribute entries (`:name: value`) are substituted where referenced (`{name}`), with
  Asciidoctor's built-in character attributes and Git's `{litdd}`. `ifdef::`/`ifndef::` are
  decided only for attributes the document itself sets or unsets: an included fragment is
  written for attributes its includer sets, and text whose condition cannot be known is kept
  rather than lost. `include::` lines are not followed (a parse reads one file's bytes, and its
  cache is keyed by them): the included file is a document of its own, named where it goes
  ("Includes diff options.", as the rendered page would hold its text there) and listed in the
  parse's metadata (`includes`).
* Inline markup is reduced to its text: `*strong*`, `_emphasis_`, `` `code` ``, `'emphasis'`,
  `+literal+`, `#mark#`; `link:`, URL, `xref:` and `<<id,text>>` macros to their text;
  `linkgit:git-add[1]` to "git-add(1)"; index terms and anchors dropped.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, markdown_table, normalize_chars, table_header_lines
from connectors.documents import Block, BlockKind, ParseResult

__all__ = ["asciidoc_blocks", "parse_asciidoc"]

MAX_NESTING = 8  # delimited blocks inside one another; deeper ones are read as their lines

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

_ATTRIBUTE_ENTRY = re.compile(r"^:(!?)([\w][\w-]*)(!?):(?:[ \t]+(.*?))?[ \t]*$")
_CONDITIONAL = re.compile(r"^(ifdef|ifndef|ifeval|endif)::([^\[]*)\[(.*)\][ \t]*$")
_INCLUDE = re.compile(r"^include::([^\[]+)\[[^\]]*\][ \t]*$")
_INCLUDED = "\x00include:"  # what `preprocess` leaves where an include line was
_ONE_LINE_TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?[ \t]*$")
_UNDERLINE_LEVELS = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
_UNDERLINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--)[ \t]*$")
_TABLE = re.compile(r"^([|,:!])={3,}[ \t]*$")
_BLOCK_ATTRIBUTES = re.compile(r"^\[(.*)\][ \t]*$")
# one entry of an attribute list: `name="a, b"`, `name=value` or a positional value
_ATTRIBUTE_LIST = re.compile(r"\s*(?:([\w-]+)\s*=\s*)?(\"[^\"]*\"|'[^']*'|[^,]*)\s*(?:,|$)")
_BLOCK_TITLE = re.compile(r"^\.([^\s.].*)$")
_LIST_ITEM = re.compile(r"^[ \t]*(\*{1,5}|-|\.{1,5}|\d{1,3}\.|[a-zA-Z]\.|<\d+>)[ \t]+(\S.*)$")
_TERM = re.compile(r"^[ \t]*(?!//)([^\s].*?)(:{2,4}|;;)(?:[ \t]+(.*))?$")  # may be indented, as list items
_ADMONITION = re.compile(r"^(NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+(.*)$")

_ATTRIBUTE_REF = re.compile(r"(\\?)\{([\w][\w-]*)\}")
_LINKGIT = re.compile(r"linkgit:([\w.-]+)\[(\d\w*)\]")
_URL_MACRO = re.compile(r"(?:link:|mailto:)?((?:https?|ftp|irc|file)://[^\s\[\]]+|(?<=link:)[^\s\[\]]+|"
                        r"(?<=mailto:)[^\s\[\]]+)\[([^\]]*)\]")
_XREF = re.compile(r"<<([\w:./#-]+)(?:,\s*([^>]+))?>>|xref:([\w:./#-]+)\[([^\]]*)\]")
_MACRO_TEXT = re.compile(r"\b(?:kbd|btn|pass(?::[a-z,]*)?|indexterm2|footnote(?::[\w-]*)?|image|icon|anchor|"
                         r"indexterm|menu:[^\[\s]+)\:?\[([^\]]*)\]")
_INDEX_TERMS = re.compile(r"\({3}[^()]*\){3}")
_VISIBLE_INDEX_TERM = re.compile(r"\({2}([^()]+)\){2}")
_COMMENT = re.compile(r"^//(?!/)")  # a comment line (`///` is text, `////` a comment block's fence)
_ANCHOR = re.compile(r"\[\[\[?[\w:.-]+(?:,[^\]]*)?\]\]\]?|\[#[\w.-]+\]")
_QUOTES = [re.compile(p) for p in (
    # the text between two marks never holds the mark: a run of openers without a closer costs
    # one pass, not one pass each (a paragraph of "**a **a **a ..." was quadratic)
    *(rf"(?<!\\){c}{c}([^\s{c}](?:[^{c}]*?[^\s{c}])?){c}{c}" for c in (r"\+\+", r"\*", "_", "`", r"\+", "#")),
    *(rf"(?<![\w{c}\\]){c}([^\s{c}](?:[^{c}\n]*?[^\s{c}])?){c}(?![\w{c}])" for c in (r"\*", "_", "`", r"\+", "#", "'")),
    r"(?<!\^)\^(\S+?)\^(?!\^)", r"(?<!~)~(\S+?)~(?!~)",
)]
_ESCAPE = re.compile(r"\\(?=[*_`#+{\[<~^'-]|&)")
_HARD_BREAK = re.compile(r"[ \t]\+$", re.M)
_CELL_SPEC = re.compile(r"(?:^|\s)((?:\d+\*|\d*(?:\.\d+)?\+)?[<^>]?(?:\.[<^>])?[adehlmsv]?)$")


@dataclass
class _Pending:
    """Block attributes and a block title waiting for the block they belong to."""

    style: str = ""
    language: str = ""
    options: set[str] = field(default_factory=set)
    cols: int = 0
    title: str = ""


class _Reader:
    def __init__(self, attributes: dict[str, str]) -> None:
        self.attributes = attributes
        self.blocks: list[Block] = []
        self.title: str | None = None

    # -- inline --------------------------------------------------------------------------------

    def inline(self, text: str) -> str:
        """A line or paragraph's text with its markup reduced to what a reader sees."""
        text = _ATTRIBUTE_REF.sub(self._attribute, text)
        text = _INDEX_TERMS.sub("", text)
        text = _VISIBLE_INDEX_TERM.sub(r"\1", text)
        text = _ANCHOR.sub("", text)
        text = _LINKGIT.sub(r"\1(\2)", text)
        text = _URL_MACRO.sub(lambda m: m.group(2) or m.group(1), text)
        text = _XREF.sub(_xref_text, text)
        text = _MACRO_TEXT.sub(lambda m: m.group(1), text)
        for pattern in _QUOTES:
            text = pattern.sub(r"\1", text)
        return _ESCAPE.sub("", text)

    def _attribute(self, m: re.Match[str]) -> str:
        if m.group(1):  # \{name} is the literal text
            return "{" + m.group(2) + "}"
        name = m.group(2).lower()
        value = self.attributes.get(name, BUILTIN_ATTRIBUTES.get(name))
        return m.group(0) if value is None else value

    def text(self, lines: list[str]) -> str:
        return clean_inline(self.inline(" ".join(ln.strip() for ln in lines)))

    def emit(self, kind: BlockKind, text: str, level: int = 0, meta: dict[str, object] | None = None) -> None:
        if text.strip():
            self.blocks.append(Block(kind, text, level=level, meta=meta or {}))

    # -- blocks --------------------------------------------------------------------------------

    def read(self, lines: list[str], depth: int = 0) -> None:
        """Read `lines` (preprocessed: conditionals decided, includes gone) into blocks."""
        pending = _Pending()
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            step = self._structural(lines, i, pending, depth)
            if step is not None:
                i = step
                if not self._keeps_pending(line):
                    pending = _Pending()
                continue
            i = self._paragraph(lines, i, pending)
            pending = _Pending()

    @staticmethod
    def _keeps_pending(line: str) -> bool:
        """Block attribute, block title and anchor lines hand their settings to the next block."""
        return bool(_BLOCK_ATTRIBUTES.match(line) or _BLOCK_TITLE.match(line))

    def _structural(self, lines: list[str], i: int, pending: _Pending, depth: int) -> int | None:
        """Read the construct that starts at line `i` if it is not a paragraph; the next line."""
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
        if m := _BLOCK_ATTRIBUTES.match(line):
            _read_block_attributes(m.group(1), pending)
            return i + 1
        if (m := _BLOCK_TITLE.match(line)) and not _DELIMITER.match(line):
            pending.title = self.text([m.group(1)])
            return i + 1
        if m := _ONE_LINE_TITLE.match(line):
            return self._section(len(m.group(1)) - 1, m.group(2), lines, i + 1)
        if i + 1 < len(lines) and _is_two_line_title(line, lines[i + 1]):
            return self._section(_UNDERLINE_LEVELS[lines[i + 1][0]], line.strip(), lines, i + 2)
        if m := _TABLE.match(line):
            return self._table(lines, i, m.group(1), pending)
        if _DELIMITER.match(line):
            return self._delimited(lines, i, pending, depth)
        if line.strip() == "+":  # a list continuation: what follows is read as its own block
            return i + 1
        if m := _TERM.match(line):
            return self._description(lines, i)
        if m := _LIST_ITEM.match(line):
            return self._list_item(lines, i, m)
        return None

    def _set_attribute(self, m: re.Match[str]) -> None:
        name = m.group(2).lower()
        if m.group(1) or m.group(3):
            self.attributes.pop(name, None)
        else:
            self.attributes[name] = self.inline(m.group(4) or "")

    def _section(self, level: int, title: str, lines: list[str], i: int) -> int:
        text = self.text([title])
        if level == 0 and self.title is None:
            self.title = text
            while i < len(lines) and lines[i].strip():  # the header: author, revision, attributes
                if m := _ATTRIBUTE_ENTRY.match(lines[i]):
                    self._set_attribute(m)
                i += 1
        self.emit("heading", text, level=level + 1)
        return i

    def _delimited(self, lines: list[str], i: int, pending: _Pending, depth: int) -> int:
        fence = lines[i].rstrip()
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != fence:
            end += 1
        body = lines[i + 1:end]
        kind = fence[0]
        if pending.title:
            self.emit("caption", pending.title)
        if (kind in "-." and fence != "--") or pending.style in ("source", "listing", "literal"):
            code = "\n".join(ln for ln in body if not ln.startswith(_INCLUDED)).strip("\n")
            self.emit("code", code, meta={"language": pending.language} if pending.language else None)
        elif kind in "=*_" or fence == "--":
            label = _ADMONITIONS.get(pending.style.upper())
            start = len(self.blocks)
            if depth < MAX_NESTING:
                self.read(body, depth + 1)
            else:
                self.emit("paragraph", self.text(body))
            if label and len(self.blocks) > start and self.blocks[start].kind == "paragraph":
                self.blocks[start].text = f"{label}: {self.blocks[start].text}"
        # `////` comments and `++++` passthrough (raw HTML or DocBook for the converter) say nothing
        return end + 1

    def _paragraph(self, lines: list[str], i: int, pending: _Pending) -> int:
        end = i
        while end < len(lines) and lines[end].strip() and not (end > i and _interrupts(lines[end])):
            end += 1
        para = lines[i:end]
        if pending.title:
            self.emit("caption", pending.title)
        if pending.style in ("verse", "literal", "listing", "source") or para[0][:1] in (" ", "\t"):
            kind: BlockKind = "paragraph" if pending.style == "verse" else "code"
            body = textwrap.dedent("\n".join(para))
            self.emit(kind, body if kind == "code" else "\n".join(self.text([ln]) for ln in body.split("\n")))
            return end
        label = _ADMONITIONS.get(pending.style.upper())
        if m := _ADMONITION.match(para[0]):
            label, para = _ADMONITIONS[m.group(1)], [m.group(2), *para[1:]]
        text = _HARD_BREAK.sub("", "\n".join(para))
        body = self.text(text.split("\n"))
        self.emit("paragraph", f"{label}: {body}" if label else body)
        return end

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
            if j < len(lines) and not _TERM.match(lines[j]) and not _interrupts(lines[j]):
                i = j
        while i < len(lines) and lines[i].strip() and not _interrupts(lines[i]) and not _TERM.match(lines[i]):
            first.append(lines[i])
            i += 1
        if first:
            self.emit("paragraph", self.text(first))
        return i

    def _list_item(self, lines: list[str], i: int, m: re.Match[str]) -> int:
        own = [m.group(2)]
        i += 1
        while i < len(lines) and lines[i].strip() and not _interrupts(lines[i]) and not _TERM.match(lines[i]):
            own.append(lines[i])
            i += 1
        marker = m.group(1)
        self.emit("list_item", self.text(own), meta={"ordered": not marker.startswith(("*", "-"))})
        return i

    def _table(self, lines: list[str], i: int, separator: str, pending: _Pending) -> int:
        fence = lines[i].rstrip()
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != fence:
            end += 1
        body = lines[i + 1:end]
        cells, header_row = _table_cells(body, separator)
        width = pending.cols or header_row or len(cells)
        rows = [[self.text([c]) for c in cells[k:k + width]] for k in range(0, len(cells), max(1, width))]
        if pending.title:
            self.emit("caption", pending.title)
        if rows:
            has_header = bool(header_row) or "header" in pending.options
            text = markdown_table(rows) if has_header else markdown_table(rows, header=[""] * width)
            self.emit("table", text, meta={"table_header": table_header_lines(text)})
        return end + 1


def _file_words(path: str) -> str:
    """An included file named as words ("diff-options.txt" -> "diff options")."""
    return re.sub(r"[-_.\s]+", " ", path.rsplit("/", 1)[-1].rsplit(".", 1)[0]).strip()


def _xref_text(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(2) or m.group(1).lstrip("_").replace("_", " ")
    return m.group(4) or m.group(3).split("#")[-1].replace("_", " ")


def _is_two_line_title(line: str, under: str) -> bool:
    """`Title` over a line of one of `=-~^+` about as long (Asciidoctor allows a difference
    of one; asciidoc-py of three, which Git's pages use)."""
    m = _UNDERLINE.match(under)
    if not m or (not line[:1].isalnum() and line[:1] not in "'\"`_*"):
        return False
    n = len(under.rstrip())
    return n >= 2 and abs(len(line.rstrip()) - n) <= 3 and not _TERM.match(line)


def _interrupts(line: str) -> bool:
    """Whether `line` ends the paragraph above it: a fence, a table, a block attribute line,
    a continuation or a list item starts a block of its own."""
    return bool(_DELIMITER.match(line) or _TABLE.match(line) or _BLOCK_ATTRIBUTES.match(line)
                or line.strip() == "+" or _LIST_ITEM.match(line) or _COMMENT.match(line)
                or line.startswith(_INCLUDED))


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
    for name, value in entries:
        if name == "options":
            pending.options |= {o.strip() for o in value.split(",")}
        elif name == "cols":
            pending.cols = _column_count(value)


def _column_count(spec: str) -> int:
    """How many columns a `cols` attribute declares: "3*", "1,2,1", "2*,3"."""
    total = 0
    for part in spec.split(","):
        m = re.match(r"\s*(\d+)\*", part)
        total += int(m.group(1)) if m else 1
    return total


def _table_cells(body: list[str], separator: str) -> tuple[list[str], int]:
    """A table's cells in order, and how many the first row holds when a blank line follows
    it (Asciidoctor's implicit header row); 0 when it has none."""
    if separator in ",:":
        rows = [[c.strip() for c in ln.split(separator)] for ln in body if ln.strip()]
        return [c for r in rows for c in r], 0
    sep = "|" if separator == "|" else "!"
    cells: list[str] = []
    header = 0
    for n, line in enumerate(body):
        if not line.strip():
            if n and cells and not header and not any(not ln.strip() for ln in body[:n]):
                header = len(cells)
            continue
        parts = re.split(r"(?<!\\)" + re.escape(sep), line)
        if len(parts) == 1 and cells:  # a cell's text over several lines
            cells[-1] += " " + parts[0].strip()
            continue
        for k, part in enumerate(parts[1:], 1):
            text = part
            if k < len(parts) - 1 and (m := _CELL_SPEC.search(part)) and m.group(1):
                text = part[:m.start(1)]  # the spec of the cell that follows (`2+|`, `a|`)
            cells.append(text.strip())
    header = header if header and body and len(re.split(r"(?<!\\)" + re.escape(sep), body[0])) > 1 else 0
    return cells, header


def preprocess(text: str) -> tuple[list[str], list[str]]:
    """The document's lines with conditional directives decided and include lines taken out,
    and the files it includes. A condition is decided only on attributes the document sets or
    unsets itself (see the module's docstring); `ifeval` is kept."""
    known: dict[str, bool] = {}
    stack: list[bool] = []
    out: list[str] = []
    includes: list[str] = []
    for line in text.split("\n"):
        if m := _CONDITIONAL.match(line):
            kind, names, inline = m.groups()
            if kind == "endif":
                if stack:
                    stack.pop()
                continue
            keep = _condition(kind, names, known)
            if inline and kind != "ifeval":  # ifdef::name[text]: one line of its own
                if keep and all(stack):
                    out.append(inline)
                continue
            stack.append(keep)
            continue
        if not all(stack):
            continue
        if m := _INCLUDE.match(line):
            includes.append(m.group(1).strip())
            out.append(_INCLUDED + m.group(1).strip())
            continue
        if m := _ATTRIBUTE_ENTRY.match(line):
            known[m.group(2).lower()] = not (m.group(1) or m.group(3))
        out.append(line)
    return out, includes


def _condition(kind: str, names: str, known: dict[str, bool]) -> bool:
    if kind == "ifeval":
        return True
    parts = [n.strip().lower() for n in re.split(r"[,+]", names) if n.strip()]
    if not parts or any(p not in known for p in parts):
        return True  # set by whoever includes this file, if anyone: keep the text
    values = [known[p] for p in parts]
    defined = all(values) if "+" in names else any(values)
    return defined if kind == "ifdef" else not defined


def asciidoc_blocks(text: str) -> tuple[list[Block], str | None, list[str]]:
    """Blocks, the document title and the included files of an AsciiDoc text."""
    lines, includes = preprocess(normalize_chars(text).replace("\r\n", "\n").replace("\r", "\n"))
    reader = _Reader({})
    reader.read(lines)
    return reader.blocks, reader.title, includes


def parse_asciidoc(data: bytes) -> ParseResult:
    """Decode and parse an AsciiDoc document."""
    text, encoding = decode_text(data)
    blocks, title, includes = asciidoc_blocks(text)
    metadata: dict[str, object] = {"encoding": encoding}
    if includes:
        metadata["includes"] = includes
    return ParseResult(blocks=blocks, title=title, format="asciidoc", metadata=metadata)
