"""Text clean-up shared by every parser: ligatures, whitespace, hyphenation, Markdown tables.

All parsers funnel their text through these helpers so that the same document yields the same
text whatever format it came in (a PDF and its HTML rendering should chunk and embed alike).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from connectors.errors import TooLarge

if TYPE_CHECKING:
    from connectors.documents import Block

__all__ = [
    "LIGATURES",
    "TextBudget",
    "clean_inline",
    "fix_ligatures",
    "join_lines",
    "markdown_table",
    "normalize_chars",
    "normalize_text",
    "table_header_lines",
    "table_row_groups",
]

LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
_LIGATURE_TABLE = str.maketrans(LIGATURES)
# Invisible characters that only get in the way of matching and tokenising.
_INVISIBLE_CHARS = {
    "\u200b": None,
    "\u200c": None,
    "\u200d": None,
    "\ufeff": None,
    "\x00": None,
    "\u00a0": " ",
    "\u202f": " ",
}
_INVISIBLE_KEEP_TABS = str.maketrans(_INVISIBLE_CHARS)
_INVISIBLE = str.maketrans({**_INVISIBLE_CHARS, "\u2007": " ", "\t": " "})
# `str.translate` looks every character up in its table, about 3 s of a plan over 17 MB of text
# in which nearly no character is in one: a regex search (C, a character class) says first
# whether there is anything to replace.
_ANY_LIGATURE = re.compile("[" + "".join(LIGATURES) + "]")
_ANY_INVISIBLE_KEEP_TABS = re.compile("[" + "".join(_INVISIBLE_CHARS) + "]")
_ANY_INVISIBLE = re.compile("[" + "".join(_INVISIBLE_CHARS) + "\u2007\t]")


def _translated(text: str, table: dict[int, Any], anything: re.Pattern[str]) -> str:
    return text.translate(table) if anything.search(text) else text
_SPACES = re.compile(r"[ \f\v\r]+")
_INLINE_WS = re.compile(r"\s+")
_HYPHENS = ("-", "\u2010", "\u00ad")


# Text far larger than its file is refused (`too-large`), whatever the format: structures that
# repeat what they hold (JSON key paths, ODF repeated rows times repeated columns, shared strings
# in every cell, nested tables, a table border of thousands of columns) made 300 to 900 million
# characters, and gigabytes of chunks, from files of a few KB.
MAX_TEXT_RATIO = 50
TEXT_SLACK_CHARS = 1_000_000


class TextBudget:
    """The text one file may make: MAX_TEXT_RATIO times its bytes, plus TEXT_SLACK_CHARS.

    Every parse is checked against it once done (`parsing._parse`). Parsers that expand what
    the file holds (repeated rows and columns, one shared string in every cell) also `spend` it
    as they expand, so a file of a few KB is refused before it builds gigabytes, not after.
    """

    def __init__(self, n_bytes: int, fmt: str) -> None:
        self.n_bytes, self.fmt = n_bytes, fmt
        self.limit = MAX_TEXT_RATIO * n_bytes + TEXT_SLACK_CHARS
        self.spent = 0
        self.elements = False  # whether elements read are counted too (walks that repeat, not text)

    def spend(self, chars: int, *, elements: bool = False) -> None:
        self.spent += chars
        self.elements |= elements
        if self.spent > self.limit:
            what = "characters of text and elements read" if self.elements else "characters of text"
            raise TooLarge(f"its {self.fmt} would make at least {self.spent:,} {what} from {self.n_bytes:,} "
                           f"bytes (over {MAX_TEXT_RATIO} times the file, plus {TEXT_SLACK_CHARS:,})")


_SURROGATE = re.compile("[\ud800-\udfff\x00]")


def without_surrogates(value: Any) -> Any:
    """`value` (a string, or a list or dict holding some) with every lone surrogate (U+D800 to
    U+DFFF) replaced by U+FFFD. JSON and YAML escapes (`"\\ud800"`) and RTF's `\\u55296` decode to
    such a code point, which no UTF-8 encoder takes: in a title it failed every write of the
    source's parses (no dead letter, every sync), in a block the chunker's tokenizer. NUL too
    (as CommonMark replaces it), which no PostgreSQL text column takes: a notebook's code cell
    holding one (`"\\u0000"` in its JSON) failed the source's chunk writes, every sync."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    return value


def fix_ligatures(text: str) -> str:
    """Replace typographic ligature code points (ﬁ ﬂ ﬀ ﬃ ﬄ) with their letters."""
    return _translated(text, _LIGATURE_TABLE, _ANY_LIGATURE)


def normalize_chars(text: str) -> str:
    """NFC, ligatures, invisible characters, LF line ends; spacing and indentation untouched."""
    text = unicodedata.normalize("NFC", fix_ligatures(text))
    text = _translated(text, _INVISIBLE_KEEP_TABS, _ANY_INVISIBLE_KEEP_TABS)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def normalize_text(text: str) -> str:
    """NFC, ligatures, invisible characters; collapse runs of spaces; keep line breaks."""
    text = _translated(unicodedata.normalize("NFC", fix_ligatures(text)), _INVISIBLE, _ANY_INVISIBLE)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def clean_inline(text: str) -> str:
    """Like `normalize_text` but folds every whitespace run (line breaks too) into one space."""
    text = _translated(unicodedata.normalize("NFC", fix_ligatures(text)), _INVISIBLE, _ANY_INVISIBLE)
    return _INLINE_WS.sub(" ", text).strip()


def join_lines(lines: Sequence[str], vocabulary: set[str] | frozenset[str] = frozenset()) -> str:
    """Join wrapped lines into one paragraph, repairing words hyphenated at a line end.

    "infor-" + "mation" becomes "information". A real compound split at the line end
    ("well-" + "known") keeps its hyphen when the hyphenated form occurs elsewhere in the
    document (`vocabulary` holds the document's lower-cased tokens); without that evidence the
    split is treated as a hyphenation break, which is by far the commoner case in print.
    """
    # pieces, joined once at the end: concatenating onto the paragraph so far copied it for
    # every line (quadratic: 21 s for one 4 MB paragraph, found by an audit)
    parts: list[str] = []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not parts:
            parts.append(line)
            continue
        last = parts[-1]  # never empty: the paragraph so far ends with it
        if last.endswith(_HYPHENS) and _char_from_end(parts, 2).isalpha() and line[:1].islower():
            head = _last_word(parts)
            tail = re.match(r"\w+", line)
            compound = f"{head}-{tail.group(0)}".lower() if head and tail else ""
            keep_hyphen = bool(compound) and compound in vocabulary
            _drop_last_char(parts)
            parts.append(("-" if keep_hyphen else "") + line)
        elif last.endswith("\u00ad"):
            _drop_last_char(parts)
            parts.append(line)
        else:
            parts.append(" " + line)
    return "".join(parts)


def _char_from_end(parts: list[str], k: int) -> str:
    """`"".join(parts)[-k]`, or "" when the text is shorter."""
    for piece in reversed(parts):
        if k <= len(piece):
            return piece[-k]
        k -= len(piece)
    return ""


def _drop_last_char(parts: list[str]) -> None:
    parts[-1] = parts[-1][:-1]
    if not parts[-1]:
        parts.pop()


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"  # what `\w` matches in a str pattern


# the longest word a hyphenated line break is looked up with: a longer "word" is a key or a code
# wrapped over many lines, joined into one, and read back in full at every line (quadratic: a
# 183 KB recovery key wrapped with hyphens took 17 s)
MAX_HYPHENATED_WORD = 100


def _last_word(parts: list[str]) -> str | None:
    r"""`re.search(r"(\w+)\W?$", "".join(parts)).group(1)`, read from the end: that search ran
    over the whole paragraph so far, once per hyphenated line break (quadratic: 44 s for a 112 KB
    text of such lines, found by an audit). None past `MAX_HYPHENATED_WORD` characters: no
    document's vocabulary holds such a compound."""
    word: list[str] = []
    first = True
    for piece in reversed(parts):
        for c in reversed(piece):
            if first and not _is_word_char(c):  # the one trailing non-word character, \W?
                first = False
                continue
            first = False
            if not _is_word_char(c):
                return "".join(reversed(word)) or None
            word.append(c)
            if len(word) > MAX_HYPHENATED_WORD:
                return None
    return "".join(reversed(word)) or None


def _cell(value: object) -> str:
    text = clean_inline("" if value is None else str(value))
    return text.replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[object]], header: Sequence[object] | None = None) -> str:
    """Serialise a table as GitHub-flavoured Markdown with a header row.

    `header` is the header row; when it is None the first row is used. Rows are padded to the
    widest row so the Markdown stays rectangular; cell line breaks become spaces and pipes
    are escaped.
    """
    body = [list(r) for r in rows]
    head = list(header) if header is not None else (body.pop(0) if body else [])
    width = table_width(head, body)
    if width == 0:
        return ""
    head, body = fit_row(head, width), [fit_row(r, width) for r in body]

    def fmt(row: Iterable[object]) -> str:
        cells = [_cell(c) for c in row]
        cells += [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    lines = [fmt(head), "|" + "|".join(["---"] * width) + "|"]
    lines += [fmt(r) for r in body]
    return "\n".join(lines)


MAX_PADDING_SHARE = 10  # padding may be this many times a table's own cells (and 100 KB) ...


def table_width(head: Sequence[object], rows: Sequence[Sequence[object]]) -> int:
    """The number of columns to draw: the widest row, unless padding every row to it would
    multiply the table (one row of 16,000 commas in a CSV of two-column rows made 956 MB of
    text from 149 KB); then the header's width or the 95th percentile of the rows', whichever
    is larger, and wider rows keep their extra cells in their last column (`fit_row`). A header
    that would itself multiply the table is fitted to the rows too (20,000 labels over two-cell
    rows: 80 KB of manual page made 3.9 GB; its labels past the last column join that one)."""
    lengths = [len(r) for r in rows]
    width = max([len(head), *lengths]) if (head or rows) else 0
    padding = 3 * sum(width - n for n in lengths)
    cells = sum(len(str(c)) + 3 for r in rows for c in r if c is not None)
    allowed = max(MAX_PADDING_SHARE * cells, 100_000)
    if padding <= allowed:
        return width
    lengths.sort()
    usual = max(lengths[int(0.95 * (len(lengths) - 1))], 1)
    if 3 * sum(len(head) - n for n in lengths if n < len(head)) > allowed:
        return usual
    return max(len(head), usual)


def fit_row(row: Sequence[object], width: int) -> list[object]:
    """`row` with at most `width` cells: the cells past the last column are kept in it."""
    cells = list(row)
    if len(cells) <= width:
        return cells
    rest = " ".join(str(c) for c in cells[width - 1:] if c is not None and str(c) != "")
    return [*cells[:width - 1], rest]


def table_header_lines(markdown: str) -> str:
    """The first two lines (header + separator) of a Markdown table."""
    return "\n".join(markdown.split("\n")[:2])


ROW_GROUP_ROWS = 50  # data rows per table block of a spreadsheet-like source ...
ROW_GROUP_CHARS = 6000  # ... or fewer, when the rows are long


# A column header longer than this is cut: it is repeated in every group of rows (a survey's
# question as a header stays whole; a 369 KB label under every group made 160 MB of text)
MAX_LABEL_CHARS = 1000
# A group's rows hold at least this share of the header's characters, so repeating the header in
# every group cannot multiply the text: a header of 1,000 long labels over rows of empty cells
# made 408 MB from 2.2 MB with two rows a group. Ordinary tables never reach the floor.
HEADER_SHARE = 0.25


def cut_label(label: str, limit: int = MAX_LABEL_CHARS) -> str:
    """A label (column header, key) that is repeated with every value it names, cut to `limit`."""
    return label if len(label) <= limit else label[:limit - 1] + "…"


def table_row_groups(
    header: Sequence[object],
    rows: Sequence[Sequence[object]],
    *,
    meta: dict[str, Any] | None = None,
    page: int | None = None,
    first_row: int = 1,
    max_rows: int = ROW_GROUP_ROWS,
    max_chars: int = ROW_GROUP_CHARS,
) -> list[Block]:
    """A long table as several Markdown table blocks, each repeating the header row.

    Data files (CSV, sheets, JSON arrays) can hold thousands of rows; one block per group
    keeps blocks bounded while every cell stays under its column header. Each block's meta
    has `table_header` (header + separator lines), `rows` ([first, last] data-row numbers,
    counting from `first_row`) and `columns`, plus whatever `meta` adds.
    """
    from connectors.documents import Block

    head = [cut_label(clean_inline("" if c is None else str(c))) for c in header]
    width = table_width(head, rows)
    head = [str(c) for c in fit_row(head, width)]
    head += [f"column {i + 1}" for i in range(len(head), width)]
    header_md = table_header_lines(markdown_table([], header=head))
    floor = HEADER_SHARE * len(header_md)
    blocks: list[Block] = []
    group: list[Sequence[object]] = []
    size = 0
    start = first_row

    def flush(end: int) -> None:
        nonlocal group, size, start
        if group:
            text = markdown_table(group, header=head)
            m = {**(meta or {}), "table_header": header_md, "rows": [start, end], "columns": width}
            blocks.append(Block("table", text, page=page, meta=m))
        group, size, start = [], 0, end + 1

    for i, row in enumerate(rows):
        n = first_row + i
        row = fit_row(row, width)
        row_chars = sum(len(str(c)) + 3 for c in row if c is not None) + 3 * (width - len(row))  # padded
        if group and (len(group) >= max_rows or size + row_chars > max_chars) and size >= floor:
            flush(n - 1)
        group.append(row)
        size += row_chars
    flush(first_row + len(rows) - 1)
    return blocks
