"""RTF documents through `striprtf`, keeping paragraphs and table rows.

striprtf turns control words into text (code pages, \\uN escapes, ignorable destinations such
as font tables, pictures, fields' instructions). Before it runs, the table control words
`\\cell` / `\\nestcell` and `\\row` are swapped for private-use markers, so that afterwards each
table row can be rebuilt cell by cell into a Markdown table (first row as header) instead of
coming out as "a|b|c|". Every `\\par` ends a paragraph; the plain-text heuristics of
`text.text_blocks` then find headings and list items among the paragraphs.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from assets.parsing.text import text_blocks
from assets.parsing.textutil import clean_inline, markdown_table, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument

__all__ = ["parse_rtf", "rtf_to_text"]

CELL, ROW = "\ue000", "\ue001"
# \cell / \nestcell / \row control words (not \cellx, \rowd ...), or an escaped backslash.
_TABLE_WORDS = re.compile(r"\\\\|\\(cell|nestcell|row|nestrow)(?![a-zA-Z])(-?\d+)? ?")
_TITLE = re.compile(r"\{\\title\s+([^{}]*)\}")


def _mark_tables(rtf: str) -> str:
    def repl(m: re.Match[str]) -> str:
        word = m.group(1)
        if word is None:
            return m.group(0)  # an escaped backslash stays as it is
        # striprtf turns \uN into chr(N mod 65536) and skips one fallback character ("?").
        return "\\u-8192?" if word in ("cell", "nestcell") else "\\u-8191?"

    return _TABLE_WORDS.sub(repl, rtf)


class _FontTable:
    """striprtf's font-table pattern, `\\f(\\d+).*?\\fcharset(\\d+).*?([^;]+);`, as one linear scan.

    Its lazy runs and the name's run backtrack into each other: a 2.9 KB font table with no `;`
    (a truncated file) took 117 s, growing with the fourth power of its length. Same matches as
    the pattern (`findall`, checked on random strings); striprtf calls it on the font table only."""

    _FONT = re.compile(r"\\f(\d+)")
    _CHARSET = re.compile(r"\\fcharset(\d+)")

    def findall(self, text: str) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []
        charsets = [(m.start(), m.group(1)) for m in self._CHARSET.finditer(text)]
        starts = [c for c, _ in charsets]
        breaks = [m.start() for m in re.finditer("\n", text)]
        last_semicolon = text.rfind(";")
        pos = 0
        for font in self._FONT.finditer(text):
            if font.end() > last_semicolon:
                break  # no entry can end any more
            if font.start() < pos:
                continue
            b = bisect.bisect_left(breaks, font.end())
            line_end = breaks[b] if b < len(breaks) else len(text)
            k = bisect.bisect_left(starts, font.end())
            if k < len(charsets) and charsets[k][0] < line_end:  # `.*?` stops at a line end
                match = self._name(text, charsets[k][0] + len("\\fcharset"), charsets[k][1])
                if match is None:
                    break  # no `;` ends a name after it: none can end one further on
                digits, name, pos = match
                found.append((font.group(1), digits, name))
        return found

    @staticmethod
    def _name(text: str, at: int, digits: str) -> tuple[str, str, int] | None:
        r"""`(\d+).*?([^;]+);` from `at`: the charset digits, the name up to the next `;` (past any
        `;` right after the digits, or with the digits' last ones when only `;` follow), the end."""
        if text.find(";", at + 1) < 0:
            return None  # no digit given back can find one either (900,000 digits: 4 s, one search each)
        for n in range(len(digits), 0, -1):  # greedy digits, given back one by one
            p = at + n
            while p < len(text) and text[p] == ";":
                p += 1
            end = text.find(";", p)
            if p < len(text) and end > p:
                return digits[:n], text[p:end], end + 1
        return None


_FONT_TABLE = _FontTable()
# striprtf appends a hyperlink's target to its text with a pattern whose runs backtrack into each
# other (40 KB of nested field openings: 48 s, cubic). Never matching, it leaves a link as its text
# alone, as the HTML parser does; the three groups keep striprtf's replacement "\\1(\\2)" valid.
_NO_HYPERLINKS = re.compile(r"(?!)(.)(.)(.)")


def rtf_to_text(data: bytes) -> str:
    """Plain text of RTF bytes, with CELL/ROW markers where table cells and rows end."""
    import striprtf.striprtf as striprtf

    striprtf.FONTTABLE = _FONT_TABLE  # type: ignore[assignment]
    striprtf.HYPERLINKS = _NO_HYPERLINKS
    strip: Callable[..., str] = striprtf.rtf_to_text
    raw = data.decode("cp1252", errors="replace")  # RTF is 7-bit; 8-bit bytes are cp1252 text
    try:
        return strip(_mark_tables(raw), encoding="cp1252", errors="replace")
    except (ValueError, IndexError, LookupError, RecursionError) as e:
        raise CorruptDocument(f"RTF cannot be converted: {type(e).__name__}: {e}") from None


def _table(rows: list[list[str]]) -> Block | None:
    rows = [r for r in rows if any(r)]
    if not rows:
        return None
    if max(len(r) for r in rows) < 2:
        return Block("paragraph", "\n".join(r[0] for r in rows if r))
    text = markdown_table(rows)
    return Block("table", text, meta={"table_header": table_header_lines(text)})


def parse_rtf(data: bytes) -> ParseResult:
    """Parse an RTF document into paragraphs, headings, list items and tables."""
    text = rtf_to_text(data).replace("\r\n", "\n").replace("\r", "\n")
    blocks: list[Block] = []
    prose: list[str] = []
    table: list[list[str]] = []
    cells: list[str] = []
    cell = ""

    def flush_prose() -> None:
        if prose:
            blocks.extend(text_blocks("\n\n".join(prose)))
            prose.clear()

    def flush_table() -> None:
        if table:
            block = _table(table)
            if block:
                blocks.append(block)
            table.clear()

    for tok in re.split(r"(\n|\ue000|\ue001)", text):
        if tok == CELL:
            cells.append(clean_inline(cell))
            cell = ""
        elif tok == ROW:
            flush_prose()
            if clean_inline(cell):
                cells.append(clean_inline(cell))
            table.append(cells)
            cells, cell = [], ""
        elif tok == "\n":
            if cells:
                cell += " "  # a paragraph break inside a table row
            else:
                if cell.strip():
                    flush_table()
                    prose.append(cell.strip())
                cell = ""
        else:
            cell += tok
    if cell.strip() and not cells:
        flush_table()
        prose.append(cell.strip())
    flush_table()
    flush_prose()
    m = _TITLE.search(data[:65536].decode("cp1252", errors="replace"))
    title = clean_inline(m.group(1)) if m else None
    return ParseResult(blocks=blocks, title=title or None, format="rtf")
