"""Manual pages in roff source (man(7), the common mdoc(7) macros, tbl tables), without groff.

A command reference on a Unix machine is its manual pages, and they are roff source: indexed as
plain text, `\\fB\\-\\-create\\fR` and `.TP` lines would be the words a query has to match. This
reader turns the source into the blocks a reader of `man tar` sees:

* `.SH`/`.Sh` → level-1 headings, `.SS`/`.Ss` → level 2; the NAME section's line
  ("tar - an archiving utility") is the title, else `.TH`/`.Dt`'s name(section).
* `.TP`/`.IP tag`/`.It` (tag lists) → the tag as a paragraph marked {"term": True} and its
  description as the paragraph after it, as the HTML parser reads a <dt>/<dd> pair; bulleted
  `.IP`/`.It` items → list items.
* `.nf`/`.fi`, `.EX`/`.EE`, `.Bd -literal`, `.Dl` → code blocks; tbl's `.TS`/`.TE` → Markdown
  tables; font macros (`.B`, `.BR`, `.Fl`, `.Ar`, `.Op`, `.Xr`, ...) → their text.
* Escapes: fonts and sizes dropped, `\\-` → "-", named glyphs (`\\(em`, `\\[aq]`, `\\[u00E9]`),
  strings from `.ds` (and pod2man's usual ones), comments, macro definitions and the troff-only
  branches of conditionals removed (the nroff branch is kept: it is the terminal's text).
* A page that is only `.so man1/other.1` (an alias of another page) is a redirect:
  metadata["redirect"] names its target and it has no blocks, like an HTML meta refresh.

What it does not do: run macro packages or user macros (`.de` bodies are skipped, so text a
custom macro would print is lost), evaluate number registers, or lay out tbl spans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assets.parsing.roff import REQUEST, Roff, args, condition, logical_lines
from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, markdown_table, normalize_chars, normalize_text
from connectors.documents import Block, BlockKind, ParseResult

__all__ = ["parse_man"]

_MAX_NESTING = 16
# Macros that end a no-fill display (.nf left open runs on to them; man's .SH resets fill mode).
_ENDS_DISPLAY = frozenset({"fi", "EE", "Ed", "SH", "SS", "TP", "TQ", "IP", "PP", "LP", "P", "HP", "TS",
                           "Sh", "Ss", "Pp", "Lp", "It", "Bl", "El", "Bd"})
_BULLETS = {"•", "*", "-", "·", "o", "+", "–", "—"}
_MDOC_LIST_TAGGED = {"-tag", "-hang", "-ohang", "-inset", "-diag"}
_MDOC_PUNCT = {".", ",", ";", ":", "?", "!", ")", "]"}
_MDOC_OPEN = {"(", "["}
_MDOC_ENCLOSE = {"Op": ("[", "]"), "Dq": ("“", "”"), "Qq": ('"', '"'), "Sq": ("‘", "’"), "Pq": ("(", ")"),
                 "Bq": ("[", "]"), "Brq": ("{", "}"), "Aq": ("⟨", "⟩"), "Ql": ("‘", "’"), "Eq": ("", "")}
_MDOC_WORDS = {"Ux": "UNIX", "Bx": "BSD", "At": "AT&T UNIX", "Ox": "OpenBSD", "Nx": "NetBSD", "Fx": "FreeBSD",
               "Dx": "DragonFly", "Bsx": "BSD/OS", "Oo": "[", "Oc": "]", "Do": "“", "Dc": "”", "Po": "(",
               "Pc": ")", "Bo": "[", "Bc": "]", "Qo": '"', "Qc": '"', "So": "‘", "Sc": "’", "Ta": "\t"}
# mdoc macros that print more than their words (`mdoc_special`).
_MDOC_SPECIAL = {"In", "Fn", "Fo", "Fc", "Ex", "Rv", "Lb", "Sm", "Xo", "Xc"}
# mdoc macros callable inside other macros' lines; a word that is one ends the arguments before it.
_MDOC_INLINE = {
    "Ad", "An", "Ar", "Cd", "Cm", "Dv", "Em", "Er", "Ev", "Fa", "Fd", "Fl", "Ft", "Ic", "Li", "Lk", "Ms",
    "Mt", "Nm", "No", "Ns", "Pa", "St", "Sx", "Sy", "Tn", "Va", "Vt", "Xr", "Ap", "Pf",
    "%A", "%B", "%D", "%I", "%J", "%N", "%O", "%P", "%Q", "%R", "%T", "%U", "%V",
    *_MDOC_ENCLOSE, *_MDOC_WORDS, *_MDOC_SPECIAL,
}
_PARAGRAPH = frozenset({"PP", "LP", "P", "HP", "Pp", "Lp", "sp", "Sp", "YS"})
_FONT_SPACED = frozenset({"B", "I", "SM", "SB", "R", "CW", "CB", "CI", "CR"})
_FONT_JOINED = frozenset({"BR", "BI", "IB", "IR", "RB", "RI"})


@dataclass
class _Reader:
    """The state of one page's reading: the blocks so far and what the next line continues."""

    blocks: list[Block] = field(default_factory=list)
    para: list[str] = field(default_factory=list)
    para_kind: BlockKind = "paragraph"
    pre: list[str] | None = None  # lines of a no-fill display, while in one
    tag_pending: bool = False  # .TP: the next line of text is the tag
    heading_pending: int = 0  # .SH with no arguments: the next line is the heading
    mdoc: bool = False
    name: str = ""
    section: str = ""
    lists: list[str] = field(default_factory=list)  # mdoc .Bl types, innermost last
    redirect: str | None = None
    link: str = ""  # the address of an open .UR/.MT link
    roff: Roff = field(default_factory=Roff)  # the page's strings and escapes

    def text(self, s: str) -> str:
        """A line's text with its escapes resolved (`Roff.text`)."""
        return self.roff.text(s)

    # -- output --------------------------------------------------------------------------------
    def emit(self, kind: BlockKind, text: str, *, level: int = 0, meta: dict[str, object] | None = None) -> None:
        if kind == "code":  # verbatim, as the other parsers keep code: indentation and alignment
            text = "\n".join(line.rstrip() for line in normalize_chars(text).split("\n")).strip("\n")
        else:
            text = normalize_text(text) if kind == "table" else clean_inline(text)
        if text:
            self.blocks.append(Block(kind, text, level=level, meta=dict(meta or {})))

    def flush(self) -> None:
        if self.para:
            self.emit(self.para_kind, " ".join(self.para))
        self.para, self.para_kind = [], "paragraph"

    def add_text(self, text: str) -> None:
        """A line of running text (from a text line or a macro that prints)."""
        if self.pre is not None:
            self.pre.append(text)
        elif self.heading_pending:
            self.flush()
            self.emit("heading", text, level=self.heading_pending)
            self.heading_pending = 0
        elif self.tag_pending:
            self.flush()
            self.emit("paragraph", text, meta={"term": True})
            self.tag_pending = False
        elif text.strip():
            self.para.append(text.strip())

    def end_pre(self) -> None:
        if self.pre is not None:
            lines = self.pre
            self.pre = None
            self.emit("code", "\n".join(lines))


class _Page:
    """Reads one page's logical lines into a `_Reader`."""

    def __init__(self, text: str) -> None:
        self.r = _Reader(mdoc=re.search(r"^[.']\s*Dd\b", text[:65536], re.M) is not None)
        self.lines = list(logical_lines(text))
        self.i = 0
        self.last_if: bool | None = None
        self.nesting = 0  # conditionals inside the one being read

    def run(self) -> _Reader:
        while self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            self.line(line)
        r = self.r
        r.end_pre()
        r.flush()
        return r

    def line(self, line: str) -> None:
        r = self.r
        if line.startswith((".", "'")) and not line.startswith(("..", "'.")):
            m = REQUEST.match(line)
            if m:
                self.request(m.group(1), m.group(2))
                return
        if r.pre is not None:
            r.pre.append(r.text(line))
            return
        if not line.strip():
            r.flush()
            return
        r.add_text(r.text(line))

    def skip_block(self, end: str = "..") -> None:
        """Skip lines up to a line `end` (macro definitions and `.ig` bodies)."""
        while self.i < len(self.lines):
            line = self.lines[self.i].strip()
            self.i += 1
            if line == end or line.startswith(end + " ") or re.fullmatch(r"[.']\s*\.", line):
                return

    def skip_braces(self, body: str) -> None:
        """Skip a conditional's body: through the matching `\\}` when it opens a `\\{` block."""
        depth = body.count("\\{") - body.count("\\}")
        while depth > 0 and self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            depth += line.count("\\{") - line.count("\\}")

    def conditional(self, name: str, rest: str) -> None:
        if name == "el":
            value = None if self.last_if is None else not self.last_if
            body = rest
        else:
            m = re.match(r"(\S+)\s?(.*)$", rest)
            if not m:
                return
            value = condition(m.group(1))
            body = m.group(2)
            if name == "ie":
                self.last_if = value
        if value:
            body = body.strip()
            body = body[2:].lstrip() if body.startswith("\\{") else body
            body = body.replace("\\}", "").strip()
            if body and self.nesting < _MAX_NESTING:  # `.if n .if n ...` thousands deep: stop
                self.nesting += 1
                try:
                    self.line(body)
                finally:
                    self.nesting -= 1
        else:
            self.skip_braces(body)

    def request(self, name: str, rest: str) -> None:  # noqa: C901  # length: one branch per request
        r = self.r
        if name in ("if", "ie", "el"):
            self.conditional(name, rest)
            return
        if name in ("de", "de1", "am", "ig", "ami", "dei"):
            self.skip_block(".." if name != "ig" or not rest.strip() else "." + rest.split()[0])
            return
        if name == "ds" or name == "ds1":
            key, _, value = rest.partition(" ")
            if key:
                r.roff.strings[key] = value[1:] if value.startswith('"') else value
            return
        if name == "so":
            if not r.blocks and not r.para and r.redirect is None:
                r.redirect = rest.strip()
            return
        if r.pre is not None:
            if name in _ENDS_DISPLAY:  # a section, paragraph or list macro resets no-fill too
                r.end_pre()
                if name in ("fi", "EE", "Ed"):
                    return
            else:  # inside the display: a font macro prints its line, a break an empty one
                if name in _FONT_SPACED or name in _FONT_JOINED or (r.mdoc and name in _MDOC_INLINE):
                    r.pre.append(self.inline(name, rest))
                elif name in ("br", "sp", ""):
                    r.pre.append("")
                return
        if r.mdoc and self.mdoc_request(name, rest):
            return
        if name == "TH":
            a = args(rest)
            r.name, r.section = (r.text(a[0]) if a else ""), (r.text(a[1]) if len(a) > 1 else "")
        elif name in ("SH", "SS"):
            r.flush()
            r.tag_pending = False
            level = 1 if name == "SH" else 2
            if rest.strip():
                r.emit("heading", r.text(" ".join(args(rest))), level=level)
            else:
                r.heading_pending = level
        elif name in _PARAGRAPH:
            r.flush()
            r.tag_pending = False
        elif name in ("TP", "TQ"):
            r.flush()
            r.tag_pending = True
        elif name == "IP":
            r.flush()
            a = args(rest)
            tag = r.text(a[0]).strip() if a else ""
            if tag in _BULLETS or re.fullmatch(r"\(?\d{1,3}[.)]?|[a-z][.)]", tag):
                r.para_kind = "list_item"
            elif tag:
                r.emit("paragraph", tag, meta={"term": True})
        elif name in ("nf", "EX"):
            r.flush()
            r.pre = []
        elif name == "TS":
            r.flush()
            self.table()
        elif name in ("UR", "MT"):  # a link: its text follows, its address prints at .UE/.ME
            a = args(rest)
            r.link = r.text(a[0]) if a else ""
        elif name in _FONT_SPACED or name in _FONT_JOINED or name in ("SY", "OP", "UE", "ME"):
            printed = self.inline(name, rest)
            if printed:
                r.add_text(printed)
        # everything else (layout requests, registers, unknown macros) prints nothing

    def inline(self, name: str, rest: str) -> str:
        """The text a printing macro's line gives."""
        r = self.r
        a = [r.text(x) for x in args(rest)]
        if name in _FONT_JOINED:
            return "".join(a)
        if name == "OP":
            return "[" + " ".join(a) + "]" if a else ""
        if name in ("UE", "ME"):
            link, r.link = r.link, ""
            return (f"<{link}>" if link else "") + "".join(a)
        if r.mdoc and name in _MDOC_INLINE:
            return self.mdoc_text(name + (" " + rest if rest else ""))
        return " ".join(a)

    # -- mdoc ----------------------------------------------------------------------------------
    def mdoc_request(self, name: str, rest: str) -> bool:  # length: one branch per macro
        """Handle an mdoc block macro; False when `name` is not one (man handles it then)."""
        r = self.r
        if name == "Dt":
            a = args(rest)
            r.name, r.section = (a[0].lower() if a else ""), (a[1] if len(a) > 1 else "")
        elif name in ("Sh", "Ss"):
            r.flush()
            r.emit("heading", self.mdoc_text(rest), level=1 if name == "Sh" else 2)
        elif name in ("Pp", "Lp"):
            r.flush()
        elif name == "Nm" and not r.name and rest.strip():
            r.name = args(rest)[0]
            r.add_text(self.mdoc_text("Nm " + rest))
        elif name == "Nd":
            r.add_text("- " + self.mdoc_text(rest))
        elif name == "Bl":
            r.flush()
            a = args(rest)
            r.lists.append(next((x for x in a if x.startswith("-")), "-item"))
        elif name == "El":
            r.flush()
            if r.lists:
                r.lists.pop()
        elif name == "It":
            r.flush()
            kind = r.lists[-1] if r.lists else "-item"
            head = self.mdoc_text(rest)
            if kind in _MDOC_LIST_TAGGED:
                if head:
                    r.emit("paragraph", head, meta={"term": True})
            elif kind == "-column":
                r.add_text(head.replace("\t", " | "))
            else:
                r.para_kind = "list_item"
                if head:
                    r.add_text(head)
        elif name == "Bd":
            r.flush()
            if "-literal" in rest or "-unfilled" in rest:
                r.pre = []
        elif name in ("Ed", "Rs", "Re"):
            r.flush()
        elif name in ("Dd", "Os", "Bk", "Ek", "Bf", "Ef"):
            pass
        elif name in ("D1", "Dl"):
            r.flush()
            r.emit("code" if name == "Dl" else "paragraph", self.mdoc_text(rest))
        elif name in _MDOC_INLINE:
            r.add_text(self.mdoc_text(name + (" " + rest if rest else "")))
        else:
            return False
        return True

    def mdoc_text(self, line: str) -> str:
        """The text of an mdoc line whose words may call inline macros (`Op Fl v Ar file`)."""
        return self.mdoc_words(args(line), 0)

    def mdoc_words(self, words: list[str], depth: int) -> str:  # length: one branch per macro kind
        """`mdoc_text` of a line's words; enclosures (`Op Op ...`) nest at most _MAX_NESTING deep."""
        r = self.r
        if depth > _MAX_NESTING:
            return " ".join(r.text(w) for w in words)
        out: list[str] = []
        glue = False  # the next word attaches without a space (after "(", Ns, Pf's prefix)
        i = 0

        def put(word: str) -> None:
            nonlocal glue
            if not word:
                return
            if out and not glue and word not in _MDOC_PUNCT:
                out.append(" ")
            out.append(word)
            glue = word in _MDOC_OPEN

        while i < len(words):
            w = words[i]
            i += 1
            if w in ("Ns", "Ap"):
                glue = True
                if w == "Ap":
                    out.append("'")
                continue
            if w in _MDOC_ENCLOSE:
                j = i
                while j < len(words) and words[j] not in _MDOC_PUNCT:
                    j += 1
                inner = self.mdoc_words(words[i:j], depth + 1)
                opening, closing = _MDOC_ENCLOSE[w]
                put(opening + inner + closing)
                i = j
                continue
            if w in _MDOC_WORDS:
                put(_MDOC_WORDS[w])
                glue = w in ("Oo", "Do", "Po", "Bo", "Qo", "So")
                continue
            if w == "Fl":
                end = _arg_end(words, i)
                flags = ["-" + r.text(x) for x in words[i:end]]
                i = end
                for f in flags or ["-"]:
                    put(f)
                glue = not flags and i < len(words) and words[i] == "Fl"  # "Fl Fl apple" is --apple
                continue
            if w == "Xr" and i < len(words):
                page = r.text(words[i])
                sec = words[i + 1] if i + 1 < len(words) and words[i + 1] not in _MDOC_PUNCT else ""
                i += 2 if sec else 1
                put(f"{page}({sec})" if sec else page)
                continue
            if w in ("Nm", "Ar") and _arg_end(words, i) == i:  # no argument: the page's name, "file ..."
                put(r.name if w == "Nm" else "file ...")
                continue
            if w == "Pf" and i < len(words):
                put(r.text(words[i]))
                glue = True
                i += 1
                continue
            if w in _MDOC_SPECIAL:
                text, i = self.mdoc_special(w, words, i)
                put(text)
                continue
            if w in _MDOC_INLINE:
                continue  # a macro that only changes the font: its arguments print as words
            put(r.text(w))
        return "".join(out)

    def mdoc_special(self, w: str, words: list[str], i: int) -> tuple[str, int]:
        """(the text, the next word's index) of an mdoc macro that prints more than its words."""
        r = self.r
        j = _arg_end(words, i)
        own = [r.text(x) for x in words[i:j]]
        if w == "In":
            return (f"#include <{own[0]}>" if own else "#include"), i + (1 if own else 0)
        if w == "Fn":
            return (f"{own[0]}({', '.join(own[1:])})" if own else ""), j
        if w == "Fo":
            return (f"{own[0]}(" if own else "("), i + (1 if own else 0)
        if w == "Fc":
            return ")", i
        named = " ".join(x for x in own if x != "-std") or r.name
        if w == "Ex" and "-std" in own:
            return f"The {named} utility exits 0 on success, and >0 if an error occurs.", j
        if w == "Rv" and "-std" in own:
            return f"The {named}() function returns the value 0 if successful; otherwise the value -1 is " \
                   "returned and the global variable errno is set to indicate the error.", j
        if w == "Lb":
            return (f"library “{own[0]}”" if own else ""), j
        if w == "Sm":  # spacing mode: its on/off argument is no text
            return "", i + (1 if i < len(words) and words[i] in ("on", "off") else 0)
        return "", i  # Xo / Xc: a line continued into the next

    # -- tbl -----------------------------------------------------------------------------------
    def table(self) -> None:
        """Read a tbl table up to `.TE` into a Markdown table (spans are not laid out)."""
        body: list[str] = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            self.i += 1
            if re.match(r"^[.']\s*TE\b", line):
                break
            body.append(line)
        tab = "\t"
        pos = 0
        if body and body[0].rstrip().endswith(";"):
            m = re.search(r"tab\s*\((.)\)", body[0])
            tab = m.group(1) if m else tab
            pos = 1
        start = _skip_format(body, pos)
        rows = self.table_rows(body[start:], tab)
        rows = [row for row in rows if any(c.strip() for c in row)]
        if len(rows) >= 2:
            # the first row heads the table only when it looks like one (`_headed`): a data row
            # read as the header made eval drafts ask "the access time of B" (find's -newerXY)
            headed = _headed(body[pos:start], rows[0])
            self.r.emit("table", markdown_table(rows) if headed else markdown_table(rows, header=[""]))
        elif rows:
            self.r.emit("paragraph", " ".join(rows[0]))

    def table_rows(self, lines: list[str], tab: str) -> list[list[str]]:
        """Data rows of a tbl table: cells split at `tab`; a `T{` ... `T}` text block is one
        cell whose lines may hold macros (`.BR getc ()`); `.T&` starts new format lines."""
        rows: list[list[str]] = []
        row: list[str] = []
        block: list[str] | None = None  # the lines of an open T{ ... T} cell
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if block is not None:
                if not line.startswith("T}"):
                    block.append(self.cell_line(line))
                    continue
                row.append(" ".join(x for x in block if x))
                block, line = None, line[2:]
                if line.startswith(tab):
                    line = line[len(tab):]
                elif not line.strip():
                    rows.append(row)
                    row = []
                    continue
            elif re.match(r"^[.']\s*T&", line):
                i = _skip_format(lines, i) if i < len(lines) else i
                continue
            elif line.strip() in ("_", "=", "") or line.startswith((".", "'")):
                continue
            cells = line.split(tab)
            for n, cell in enumerate(cells):
                if cell.startswith("T{") and n == len(cells) - 1:
                    block = [self.cell_line(cell[2:])] if cell[2:].strip() else []
                    break
                if cell.strip() not in ("_", "=", "\\_"):
                    row.append(self.r.text(cell))
            else:
                rows.append(row)
                row = []
        if row:
            rows.append(row)
        return rows

    def cell_line(self, line: str) -> str:
        """One line inside a T{ ... T} cell: text, or the text a font macro prints."""
        m = REQUEST.match(line) if line.startswith((".", "'")) else None
        if m is None:
            return self.r.text(line).strip()
        name, rest = m.group(1), m.group(2)
        if name in _FONT_SPACED or name in _FONT_JOINED or (self.r.mdoc and name in _MDOC_INLINE):
            return self.inline(name, rest).strip()
        return ""


def _arg_end(words: list[str], i: int) -> int:
    """The index of the first word from `i` on that is a callable macro or closing punctuation:
    where an mdoc macro's own arguments end."""
    while i < len(words) and words[i] not in _MDOC_INLINE and words[i] not in _MDOC_PUNCT:
        i += 1
    return i


def _headed(fmt: list[str], first: list[str]) -> bool:
    """Whether a tbl table's first row is its header. tbl marks none: by its format (the first
    row formatted apart from the next, "cb cb" or "c c c" over "n n n."), else by the row
    itself (every cell opening with a capital: "Feature | Added in"; not
    find's "a | The access time ..." nor ip's "ip xfrm state add | ...")."""
    # rows' formats, as tokens: one per line, or several on one line separated by commas
    rows = [spec.split() for line in fmt for spec in line.strip().rstrip(".").split(",") if spec.strip()]
    if len(rows) >= 2 and rows[0] != rows[1]:
        return True
    cells = [c.strip() for c in first if c.strip()]
    return bool(cells) and all(c[0].isupper() for c in cells)


def _skip_format(lines: list[str], pos: int) -> int:
    """The index after a tbl format section that starts at `pos` (its last line ends in ".")."""
    while pos < len(lines) and not lines[pos].rstrip().endswith("."):
        pos += 1
    return pos + 1


def _title(blocks: list[Block], name: str, section: str) -> str | None:
    """The NAME section's line ("tar - an archiving utility"), else name(section)."""
    for i, b in enumerate(blocks):
        if b.kind == "heading" and b.level == 1 and b.text.strip().upper() in ("NAME", "NAMN", "NOM", "NOMBRE"):
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            if nxt is not None and nxt.kind != "heading":
                return nxt.text[:300]
            break
    if name:
        return f"{name}({section})" if section else name
    return None


def parse_man(data: bytes) -> ParseResult:
    """Parse a manual page's roff source (see the module docstring)."""
    text, encoding = decode_text(data)
    reader = _Page(text.replace("\r\n", "\n").replace("\r", "\n")).run()
    metadata: dict[str, object] = {"encoding": encoding, "man": {"name": reader.name, "section": reader.section,
                                                                 "macros": "mdoc" if reader.mdoc else "man"}}
    if reader.redirect is not None and not reader.blocks:
        metadata["redirect"] = reader.redirect
        return ParseResult(blocks=[], title=None, format="man", metadata=metadata)
    return ParseResult(blocks=reader.blocks, title=_title(reader.blocks, reader.name, reader.section),
                       format="man", metadata=metadata)
