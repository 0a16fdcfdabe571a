"""reStructuredText without docutils: a line-based reader for the constructs that carry
structure.

* Section titles: a text line underlined (optionally also overlined) by a run of one
  punctuation character at least as long as the title. Levels follow the order in which
  adornment styles first appear, as docutils does.
* Literal blocks: a paragraph ending in "::" introduces the indented block after it (the
  "::" becomes ":" or disappears when preceded by a space); `.. code-block:: lang`,
  `.. code:: lang` and `.. sourcecode:: lang` give code with a language.
* Lists ("-", "*", "+", "•", "#.", "1.", "(a)") → list items with nesting depth; field lists
  (":param x: ...") and definition lists stay paragraphs.
* Admonitions (`.. note::`, `.. warning::` ...) → a paragraph prefixed "Note:"; other
  directives with a body (toctree, image, comments "..", link targets, substitutions) are
  dropped; `.. title::`/document title from the first section title.
* Grid tables (+---+) and simple tables (=== ===) → Markdown tables with their header row.
* Inline markup is reduced to its text: ``code``, *em*, **strong**, `link <url>`_, :role:`x`.
"""

from __future__ import annotations

import bisect
import re

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, markdown_table, normalize_chars, table_header_lines
from connectors.documents import Block, ParseResult

__all__ = ["parse_rst", "rst_blocks"]

MAX_NESTING = 10  # directives and list items inside one another read as markup; deeper: paragraphs

_ADORN_CHARS = "=-`:'\"~^_*+#<>.!$%&(),/;?@[\\]{|}"
_ADORNMENT = re.compile(r"^([" + re.escape(_ADORN_CHARS) + r"])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_TARGET = re.compile(r"^\.\.\s+(?:_[^:]*:|\[[^\]]*\]|\|[^|]+\|)")
_BULLET = re.compile(r"^([-*+•‣⁃])\s+(.*)$")
_ENUM = re.compile(r"^(\(?(?:\d+|[a-zA-Z]|#|[ivxlcdm]+)[.)])\s+(.*)$")
_GRID_BORDER = re.compile(r"^\+(?:[-=]+\+)+\s*$")
_SIMPLE_BORDER = re.compile(r"^=+(?:\s+=+)+\s*$")
_CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "literalinclude-inline"}
_ADMONITIONS = {
    "impl-detail",
    "note",
    "warning",
    "tip",
    "important",
    "caution",
    "danger",
    "attention",
    "hint",
    "error",
    "admonition",
    "seealso",
    "topic",
    "sidebar",
    "rubric",
}
_VERSION_NOTES = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}
_LABELS = {"seealso": "See also"}
_TEST_DIRECTIVES = {"doctest", "testcode", "testoutput"}
_OBJECT_DIRECTIVES = {
    "function",
    "class",
    "method",
    "classmethod",
    "staticmethod",
    "abstractmethod",
    "attribute",
    "property",
    "data",
    "exception",
    "decorator",
    "decoratormethod",
    "coroutinefunction",
    "coroutinemethod",
    "awaitablefunction",
    "awaitablemethod",
    "describe",
    "object",
    "option",
    "cmdoption",
    "envvar",
    "opcode",
    "pdbcommand",
    "macro",
    "member",
    "type",
    "var",
    "struct",
    "enum",
    "enumerator",
    "union",
    "autofunction",
    "autoclass",
    "automethod",
    "autodata",
    "autoattribute",
    "confval",  # Sphinx's configuration values (a directive of its own since Sphinx 7.4)
    "event",  # Sphinx's application events, as its own documentation declares them
}
# Directives whose body is markup for the build (or nothing a reader sees as text).
_DROP_DIRECTIVES = {
    "toctree",
    "image",
    "raw",
    "include",
    "literalinclude",
    "index",
    "meta",
    "highlight",
    "contents",
    "sectnum",
    "autosummary",
    "sectionauthor",
    "moduleauthor",
    "codeauthor",
    "testsetup",
    "testcleanup",
    "tabularcolumns",
    "default-role",
    "default-domain",
    "currentmodule",
    "module",
    "program",
    "role",
    "footer",
    "header",
    "target-notes",
    "audit-event",
    "audit-event-table",
    "impl-detail-hidden",
    "glossary-hidden",
}

# Inline markup, most specific first. `(?<!\s)\s*` starts a run of spaces at its first space only:
# a bare `\s*` was retried from every position of a long run (quadratic; an audit's finding).
# A role's `<target>` holds no `<`: the lazy text before it is retried at every `<`, and a target
# that could hold one scanned to the line's end from each (100,000 of them after one role: 27 s).
_ROLE = re.compile(r":(?:[\w+.-]+:)?([\w+.-]+):`([^`]*?)(?:(?<!\s)\s*<[^<>`]*>)?`")
_LINK = re.compile(r"`([^`<]*?)(?<!\s)\s*<[^>`]*>`__?")
_INTERPRETED = re.compile(r"`([^`]+)`_{0,2}")
_LITERAL = re.compile(r"``(.+?)``")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
# *emphasis* was one pattern, `(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])`: from every opening
# star with no closing one on its line it scanned to the line's end (quadratic: `*a ` repeated
# 100,000 times never finished). Whether a star can open or close depends on its neighbours only,
# so `_emphasis` finds both once and pairs each opener with the next closer, as the pattern did.
_EMPH_OPEN = re.compile(r"(?<![\w*])\*(?!\s)")
_EMPH_CLOSE = re.compile(r"(?<!\s)\*(?![\w*])")
_REF = re.compile(r"(?<=\w)_{1,2}(?=\W|$)|\|([^|\s][^|]*)\|_?")
_FOOTNOTE = re.compile(r"(?<!\s)\s*\[(?:#\w*|\*|\d+|[A-Za-z][\w-]*)\]_")


def _role(m: re.Match[str]) -> str:
    name, target = m.group(1), m.group(2)
    if name.lower() in ("pep", "rfc"):  # docutils' roles are case-insensitive: :RFC:`2396`
        return f"{name.upper()} {target}"
    return target.lstrip("~!")  # :meth:`~a.b` shows "b" in Sphinx; the full path is fine


def _emphasis(text: str) -> str:
    """`*em*` reduced to its text in one pass: each opener takes the first closer at least two
    characters on and on its line (the lazy `.+?` of the old pattern; `.` stops at a line end)."""
    if "*" not in text:
        return text
    closers = [m.start() for m in _EMPH_CLOSE.finditer(text)]
    out: list[str] = []
    pos = k = 0  # pos: the end of the last match; k: the first closer not yet passed
    line_end = -1  # the first line break at or after the opener being tried
    for m in _EMPH_OPEN.finditer(text):
        start = m.start()
        if start < pos:
            continue  # inside the emphasis just replaced
        while k < len(closers) and closers[k] < start + 2:
            k += 1
        if k == len(closers):
            break
        if line_end < start:
            line_end = text.find("\n", start)
            line_end = len(text) if line_end < 0 else line_end
        close = closers[k]
        if close < line_end:
            out += (text[pos:start], text[start + 1 : close])
            pos = close + 1
    out.append(text[pos:])
    return "".join(out)


def _signature(arg: str, body: list[str]) -> tuple[str, int]:
    """A directive's argument with the lines a long signature continues on (until its brackets
    close), and the index of the body's first line after them. The brackets are counted line by
    line: re-counting the whole argument per line took 45 s for 100,000 lines."""
    parts, k = [arg], 0
    depth = arg.count("(") - arg.count(")")
    while depth > 0 and k < len(body) and body[k].strip():
        parts.append(body[k].strip())
        depth += parts[-1].count("(") - parts[-1].count(")")
        k += 1
    return " ".join(parts), k


def _plain(text: str) -> str:
    """Inline markup outside literals reduced to its text; backslash escapes resolved."""
    text = _ROLE.sub(_role, text)
    text = _LINK.sub(r"\1", text)
    text = _INTERPRETED.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    text = _emphasis(text)
    text = _FOOTNOTE.sub("", text)
    text = _REF.sub(lambda m: m.group(1) or "", text)
    return re.sub(r"\\(.)", r"\1", text).replace("\\", "")


def _inline(text: str) -> str:
    parts = _LITERAL.split(text)  # odd items are ``literal`` contents, kept verbatim
    return clean_inline("".join(p if i % 2 else _plain(p) for i, p in enumerate(parts)))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_adornment(line: str) -> bool:
    return bool(_ADORNMENT.match(line.rstrip()))


class _Reader:
    def __init__(self, lines: list[str], base_level: int = 0, depth: int = 0) -> None:
        self.lines = lines
        self.depth = depth  # how many directives and list items enclose this text
        self.i = 0
        self.blocks: list[Block] = []
        self.styles: list[tuple[str, bool]] = []  # adornment styles in order of appearance
        self.base = base_level  # heading level of the section enclosing this text
        self.current = base_level  # level of the last section title read

    # ------------------------------------------------------------------ helpers
    def _level(self, char: str, over: bool) -> int:
        style = (char, over)
        if style not in self.styles:
            self.styles.append(style)
        self.current = min(6, self.base + self.styles.index(style) + 1)
        return self.current

    def _indented_block(self, start: int, min_indent: int) -> tuple[list[str], int]:
        """Lines from `start` indented by at least `min_indent` (blank lines included)."""
        out: list[str] = []
        j = start
        while j < len(self.lines):
            line = self.lines[j]
            if line.strip() and _indent(line) < min_indent:
                break
            out.append(line)
            j += 1
        while out and not out[-1].strip():
            out.pop()
            j -= 1 if j > start else 0
        return out, start + len(out)

    def _nested(self, lines: list[str], level: int) -> list[Block]:
        """The blocks of a directive's or list item's body (dedented lines), one level deeper.

        Each level holds its own dedented copy of the body, so nesting is bounded: 300 nested
        notes over 7.7 MB held 4.4 GB. Past MAX_NESTING levels the text is kept as paragraphs.
        """
        if self.depth >= MAX_NESTING:
            return _flat_paragraphs(lines)
        return _Reader(lines, level, self.depth + 1).read()

    def _skip_blank(self, j: int) -> int:
        while j < len(self.lines) and not self.lines[j].strip():
            j += 1
        return j

    # ------------------------------------------------------------------ constructs
    def _section(self) -> bool:
        lines, i = self.lines, self.i
        line = lines[i]
        # Overline + title + underline.
        if _is_adornment(line) and i + 2 < len(lines) and lines[i + 1].strip():
            under = lines[i + 2].rstrip()
            if _is_adornment(under) and under[0] == line.strip()[0]:
                title = lines[i + 1].strip()
                self.blocks.append(Block("heading", _inline(title), level=self._level(under[0], True)))
                self.i = i + 3
                return True
        # Title + underline.
        if (
            line.strip()
            and _indent(line) == 0
            and i + 1 < len(lines)
            and _is_adornment(lines[i + 1])
            and len(lines[i + 1].rstrip()) >= min(len(line.rstrip()), 4)
            and not _is_adornment(line)
            and not _GRID_BORDER.match(line)
        ):
            char = lines[i + 1].strip()[0]
            self.blocks.append(Block("heading", _inline(line), level=self._level(char, False)))
            self.i = i + 2
            return True
        return False

    # not yet split by directive kind (issue 13): one branch per directive family
    def _directive(self) -> bool:  # noqa: C901
        line = self.lines[self.i]
        if not line.startswith(".."):
            return False
        m = _DIRECTIVE.match(line)
        body, end = self._indented_block(self.i + 1, 1)
        self.i = end
        if not m:
            return True  # a comment, link target, footnote or substitution definition
        name, arg = m.group(1).lower(), m.group(2).strip()
        arg, k = _signature(arg, body)
        # Options (":linenos:") come first in a directive's body.
        while k < len(body) and re.match(r"^\s+:[\w-]+:", body[k]):
            k += 1
        sub_lines = _dedent_lines(body[k:])
        has_text = any(sub_lines)  # dedented: a blank line is ""
        local = name.split(":")[-1]  # "py:method" → "method"
        # the rst domain's entries describe markup ("rst:role:: ref", "rst:directive:: .. note::"):
        # objects like any other, though their local names are docutils' own "role" (dropped)
        described = local in _OBJECT_DIRECTIVES or name.startswith("rst:")
        if name.startswith("rst:"):
            arg = re.sub(r"^\.\.\s+|::$", "", arg).strip()
        if local in _CODE_DIRECTIVES or local in _TEST_DIRECTIVES:
            if has_text:
                lang = arg.split()[0] if arg and local in _CODE_DIRECTIVES else None
                lang = lang or ("pycon" if local in _TEST_DIRECTIVES else None)
                code = "\n".join(sub_lines).strip("\n")
                self.blocks.append(Block("code", code, meta={"language": lang} if lang else {}))
        elif local in _VERSION_NOTES:
            sub = self._nested(sub_lines, self.current) if has_text else []
            lead = f"{_VERSION_NOTES[local]} {_inline(arg)}".strip()
            if sub and sub[0].kind == "paragraph":
                sub[0].text = f"{lead}: {sub[0].text}"
            else:
                sub.insert(0, Block("paragraph", lead + "."))
            self.blocks.extend(sub)
        elif local in _ADMONITIONS:
            label = _LABELS.get(local, local.capitalize()) if local != "admonition" else arg
            sub = self._nested(sub_lines, self.current) if has_text else []
            if local not in ("admonition", "topic", "sidebar", "rubric") and arg:
                sub.insert(0, Block("paragraph", _inline(arg)))
            if local == "rubric" and arg:
                self.blocks.append(Block("paragraph", _inline(arg)))
            for n, b in enumerate(sub):
                if n == 0 and b.kind == "paragraph":
                    b.text = f"{label}: {b.text}" if label else b.text
                self.blocks.append(b)
        elif described and arg:
            # Sphinx API entries: the signature heads its description, one level below the
            # enclosing section (methods nest under their class the same way).
            level = min(6, self.current + 1)
            self.blocks.append(Block("heading", _inline(arg), level=level, meta={"signature": True}))
            if has_text:
                self.blocks.extend(self._nested(sub_lines, level))
        elif local == "title":
            self.blocks.append(Block("heading", _inline(arg), level=1, meta={"rst_title": True}))
        elif local == "math" and has_text:
            self.blocks.append(Block("code", "\n".join(sub_lines).strip("\n"), meta={"language": "latex"}))
        elif local in ("csv-table", "list-table", "table"):
            self._table_directive(local, arg, body)
        elif local in ("figure", "productionlist"):
            if local == "productionlist" and has_text:
                self.blocks.append(Block("code", "\n".join(sub_lines).strip("\n")))
            elif has_text:  # a figure's body is its caption (and legend)
                for b in self._nested(sub_lines, self.current):
                    if b.kind == "paragraph":
                        b.kind = "caption"
                    self.blocks.append(b)
        elif local not in _DROP_DIRECTIVES and has_text:
            self.blocks.extend(self._nested(sub_lines, self.current))  # unknown: keep what it says
        return True

    def _table_directive(self, name: str, arg: str, body: list[str]) -> None:
        if arg:
            self.blocks.append(Block("caption", _inline(arg)))
        opts = [ln.strip() for ln in body if re.match(r"^\s+:[\w-]+:", ln)]
        content = _dedent([ln for ln in body if not re.match(r"^\s+:[\w-]+:", ln)])
        rows: list[list[str]] = []
        if name == "csv-table":
            import csv

            header = next((o.split(":", 2)[2] for o in opts if o.startswith(":header:")), None)
            if header:
                rows.append([_inline(c) for c in next(csv.reader([header.strip()]))])
            rows += [[_inline(c) for c in r] for r in csv.reader(content.splitlines(), skipinitialspace=True) if r]
        elif name == "list-table":
            for ln in content.splitlines():
                s = ln.strip()
                if s.startswith("* -"):
                    rows.append([_inline(s[3:])])
                elif s.startswith("-") and rows:
                    rows[-1].append(_inline(s[1:]))
                elif s and rows and rows[-1]:
                    rows[-1][-1] = clean_inline(rows[-1][-1] + " " + _inline(s))
        else:
            self.blocks.extend(self._nested(content.split("\n"), 0))
            return
        if rows:
            text = markdown_table(rows)
            self.blocks.append(Block("table", text, meta={"table_header": table_header_lines(text)}))

    def _grid_table(self) -> bool:
        line = self.lines[self.i]
        if not _GRID_BORDER.match(line.strip()):
            return False
        j = self.i
        block: list[str] = []
        while j < len(self.lines) and self.lines[j].strip().startswith(("+", "|")):
            block.append(self.lines[j].strip())
            j += 1
        self.i = j
        rows: list[list[str]] = []
        current: list[list[str]] | None = None
        header_rows = 0
        bounds = [k for k, ch in enumerate(block[0]) if ch == "+"]
        for ln in block[1:]:
            if ln.startswith("+"):
                if current is not None:
                    rows.append([clean_inline(" ".join(c)) for c in current])
                current = None
                if "=" in ln:
                    header_rows = len(rows)
                continue
            # the columns this line reaches: the rest are empty (a border 10,000 columns wide over
            # one-cell rows was cut into 10,000 cells per line: 28 s, 870 MB)
            reach = min(bisect.bisect_left(bounds, len(ln) - 1), len(bounds) - 1)
            cells = [ln[bounds[k] + 1 : bounds[k + 1]] for k in range(reach)]
            if current is None:
                current = []
            current += [[] for _ in range(len(cells) - len(current))]
            for k, c in enumerate(cells):
                current[k].append(c.strip().strip("|").strip())
        if current is not None:
            rows.append([clean_inline(" ".join(c)) for c in current])
        rows = [[_inline(c) for c in r] for r in rows if any(r)]
        if rows:
            if header_rows > 1:  # a multi-row header folds into one row
                width = max(len(r) for r in rows[:header_rows])
                head = [clean_inline(" ".join(r[k] for r in rows[:header_rows] if k < len(r))) for k in range(width)]
                rows = [head, *rows[header_rows:]]
            text = markdown_table(rows)
            self.blocks.append(Block("table", text, meta={"table_header": table_header_lines(text)}))
        return True

    def _simple_table(self) -> bool:
        line = self.lines[self.i]
        if not _SIMPLE_BORDER.match(line.rstrip()):
            return False
        spans = [(m.start(), m.end()) for m in re.finditer(r"=+", line)]
        starts = [a for a, _ in spans]
        j = self.i + 1
        rows: list[list[str]] = []
        borders = 1
        header_rows = 0
        while j < len(self.lines):
            ln = self.lines[j]
            if _SIMPLE_BORDER.match(ln.rstrip()):
                borders += 1
                if borders == 2:
                    header_rows = len(rows)
                j += 1
                nxt = j < len(self.lines) and self.lines[j].strip()
                if borders >= 3 or (borders == 2 and not nxt):
                    break
                continue
            if not ln.strip():
                j += 1
                continue
            # the columns this line reaches (the first always): the rest are empty, as for grids
            reach = max(1, bisect.bisect_left(starts, len(ln.rstrip())))
            cells = [_inline(ln[a : spans[k + 1][0] if k + 1 < len(spans) else len(ln)])
                     for k, (a, _b) in enumerate(spans[:reach])]
            if rows and not cells[0] and _indent(ln) >= spans[0][1]:
                prev = rows[-1]
                width = max(len(prev), len(cells))
                rows[-1] = [clean_inline(f"{x} {y}") for x, y in zip(prev + [""] * (width - len(prev)),
                                                                      cells + [""] * (width - len(cells)),
                                                                      strict=True)]
            else:
                rows.append(cells)
            j += 1
        self.i = j
        if rows:
            if header_rows == 0 or header_rows == len(rows):
                rows = [[f"column {k + 1}" for k in range(len(spans))], *rows]
            text = markdown_table(rows)
            self.blocks.append(Block("table", text, meta={"table_header": table_header_lines(text)}))
        return True

    def _list(self) -> bool:
        line = self.lines[self.i]
        stripped = line.lstrip()
        m = _BULLET.match(stripped) or _ENUM.match(stripped)
        if not m:
            return False
        if _ENUM.match(stripped) and not _BULLET.match(stripped):
            nxt = self.lines[self.i + 1] if self.i + 1 < len(self.lines) else ""
            # "1. Intro" followed by a plain paragraph line is a sentence, not a list.
            if nxt.strip() and _indent(nxt) <= _indent(line) and not _ENUM.match(nxt.lstrip()):
                return False
        base = _indent(line)
        text_col = base + len(m.group(1)) + 1
        first = m.group(2)
        body, end = self._indented_block(self.i + 1, text_col)
        self.i = end
        # The item's own text runs up to the first blank line; the rest nests.
        own = [first]
        k = 0
        while k < len(body) and body[k].strip():
            own.append(body[k].strip())
            k += 1
        depth = base // 2
        ordered = bool(_ENUM.match(stripped)) and not _BULLET.match(stripped)
        text = " ".join(own)
        literal = text.endswith("::")  # "for example::": the indented block after it is code
        if literal:
            text = text[:-2].rstrip() + ("" if text[:-2].endswith(" ") else ":")
        self.blocks.append(Block("list_item", _inline(text), meta={"depth": depth, "ordered": ordered}))
        rest = _dedent_lines(body[k:])
        if literal:
            rest = self._literal_after(rest)
        if any(rest):
            for b in self._nested(rest, 0):
                if b.kind == "list_item":
                    b.meta["depth"] = b.meta.get("depth", 0) + depth + 1
                self.blocks.append(b)
        return True

    def _paragraph(self) -> None:
        lines, i = self.lines, self.i
        base = _indent(lines[i])
        para: list[str] = []
        while i < len(lines) and lines[i].strip() and _indent(lines[i]) == base:
            if para and (_is_adornment(lines[i]) or lines[i].lstrip().startswith(".. ")):
                break
            para.append(lines[i].strip())
            i += 1
        self.i = i
        text = " ".join(para)
        literal = text.endswith("::")
        if literal:
            text = text[:-2].rstrip() + ("" if text[:-2].endswith(" ") or not text[:-2] else ":")
            text = text.rstrip()
        defines = i < len(lines) and lines[i].strip() and _indent(lines[i]) > base  # a definition list's term
        if text and defines and not literal:
            self.blocks.append(Block("paragraph", _inline(text), meta={"term": True}))
        elif text and base > 0 and not literal:
            self.blocks.append(Block("paragraph", _inline(text), meta={"quote": True}))
        elif text:
            self.blocks.append(Block("paragraph", _inline(text)))
        if literal:
            j = self._skip_blank(self.i)
            if j < len(lines) and _indent(lines[j]) > base:
                body, end = self._indented_block(j, base + 1)
                code = _dedent(body).strip("\n")
                if code:
                    self.blocks.append(Block("code", code))
                self.i = end
            elif j < len(lines) and lines[j].lstrip()[:1] in ">|" and _indent(lines[j]) == base:
                quoted = []  # quoted literal block: lines starting with the same quote char
                while j < len(lines) and lines[j].strip():
                    quoted.append(lines[j][base:])
                    j += 1
                self.blocks.append(Block("code", "\n".join(quoted)))
                self.i = j

    def _literal_after(self, lines: list[str]) -> list[str]:
        """`lines` (a list item's body after its "::" text) without the literal block that opens
        them, which becomes a code block: read as markup, an example of a directive was taken
        for one (an `.. autosummary::` example vanished with the directive's text; a review)."""
        j = next((n for n, ln in enumerate(lines) if ln.strip()), len(lines))
        if j == len(lines) or _indent(lines[j]) == 0:
            return lines
        end = j
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > 0):
            end += 1
        while end > j and not lines[end - 1].strip():
            end -= 1
        if code := _dedent(lines[j:end]).strip("\n"):
            self.blocks.append(Block("code", code))
        return lines[end:]

    def _indented(self) -> None:
        """A block quote or a definition's body (indented text no construct above took): read as
        markup one level in, so its directives (`.. versionadded::`, `.. note::`, `..
        code-block::` under a definition or in a glossary) are directives, not prose; its
        paragraphs stay marked as quoted."""
        body, end = self._indented_block(self.i, _indent(self.lines[self.i]))
        self.i = end
        for b in self._nested(_dedent_lines(body), self.current):
            if b.kind == "paragraph" and not b.meta:
                b.meta = {"quote": True}
            self.blocks.append(b)

    def _doctest(self) -> bool:
        line = self.lines[self.i]
        if not line.lstrip().startswith(">>> "):
            return False
        j = self.i
        out = []
        while j < len(self.lines) and self.lines[j].strip():
            out.append(self.lines[j].strip("\n"))
            j += 1
        self.i = j
        self.blocks.append(Block("code", _dedent(out).strip("\n"), meta={"language": "pycon"}))
        return True

    def read(self) -> list[Block]:
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                self.i += 1
                continue
            if (
                self._directive()
                or self._grid_table()
                or self._simple_table()
                or self._section()
                or self._doctest()
                or self._list()
            ):
                continue
            if _is_adornment(line) and (self.i + 1 >= len(self.lines) or not self.lines[self.i + 1].strip()):
                self.i += 1  # a transition (----) between paragraphs
                continue
            if _indent(line) > 0:
                self._indented()
                continue
            self._paragraph()
        return [b for b in self.blocks if b.text.strip()]


def _dedent_lines(lines: list[str]) -> list[str]:
    """`lines` without their common indentation; a blank line becomes ""."""
    cut = min((_indent(ln) for ln in lines if ln.strip()), default=0)
    return [ln[cut:] if ln.strip() else "" for ln in lines]


def _dedent(lines: list[str]) -> str:
    return "\n".join(_dedent_lines(lines))


def _flat_paragraphs(lines: list[str]) -> list[Block]:
    """Text nested too deep to read as markup: a paragraph per run of lines, a directive's
    argument kept as its own paragraph and its name dropped."""
    blocks: list[Block] = []
    para: list[str] = []
    for line in [*lines, ""]:
        text = line.strip()
        m = _DIRECTIVE.match(text)
        if para and (not text or m):
            blocks.append(Block("paragraph", _inline(" ".join(para))))
            para = []
        if m and m.group(2).strip():
            blocks.append(Block("paragraph", _inline(m.group(2))))
        elif text and not m:
            para.append(text)
    return [b for b in blocks if b.text.strip()]


def rst_blocks(text: str, base_level: int = 0) -> list[Block]:
    """Blocks of reStructuredText (already decoded); sections nest below `base_level`."""
    text = normalize_chars(text).expandtabs(8)
    return _Reader(text.split("\n"), base_level).read()


def parse_rst(data: bytes) -> ParseResult:
    """Decode and parse a reStructuredText document."""
    text, encoding = decode_text(data)
    blocks = rst_blocks(text)
    explicit = next((b.text for b in blocks if b.meta.get("rst_title")), None)
    blocks = [b for b in blocks if not b.meta.get("rst_title")] if explicit else blocks
    title = explicit or next((b.text for b in blocks if b.kind == "heading"), None)
    return ParseResult(blocks=blocks, title=title, format="rst", metadata={"encoding": encoding})
