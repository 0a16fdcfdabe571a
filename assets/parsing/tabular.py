"""Delimited text (.csv/.tsv) and the sheet layout shared by .xlsx and .ods.

CSV: the delimiter is chosen by trying `, \\t ; |` on the first lines and keeping the one that
splits them into the most consistent number of fields (more than one); the first row is the
header unless it looks like data (numbers, dates, empty cells), in which case columns are
named "column 1".. so that every cell still sits under a label. Rows become Markdown table
blocks in groups (`textutil.table_row_groups`), each repeating the header row in
`meta["table_header"]`.

Sheets (`sheet_blocks`): a sheet is split into segments at empty rows; a segment that is one
lone cell is a paragraph (a title or a note above a table), anything else is a table whose
first row is its header; a lone-cell row directly above a wider header row is peeled off as
a paragraph. Trailing empty columns are dropped.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, table_row_groups
from connectors.documents import Block, ParseResult

__all__ = ["cell_text", "looks_like_header", "parse_delimited", "sheet_blocks"]

_DELIMITERS = (",", "\t", ";", "|")
_SAMPLE_LINES = 60
_NUMBER = re.compile(r"^[-+(]?[$€£¥]?\s?\d[\d,.\s]*%?\)?$")
_DATE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?$")
_YEAR = re.compile(r"^(?:1[89]|20)\d\d$")  # "2023" in a header row labels a column
_FIELD_LIMIT = 16 * 1024 * 1024


def cell_text(value: Any) -> str:
    """A spreadsheet value as display text: 3.0 → "3", dates ISO, booleans TRUE/FALSE."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.10g}"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return clean_inline(str(value))


def _is_data(cell: str) -> bool:
    return not cell or bool(_NUMBER.match(cell)) or bool(_DATE.match(cell))


def looks_like_header(first: Sequence[str], rest: Sequence[Sequence[str]]) -> bool:
    """Whether the first row names the columns rather than holding data.

    A header row is all labels (no empty cells beyond a stray one, no numbers or dates) and
    is not just another row like the ones below it (a table of words has no header when
    the first row's cells look like the column's other cells and the row repeats values).
    """
    cells = [c.strip() for c in first]
    filled = [c for c in cells if c]
    if not filled or sum(1 for c in cells if not c) > max(1, len(cells) // 4):
        return False
    if any(_is_data(c) and not _YEAR.match(c) for c in filled):
        return False
    if len(set(filled)) < len(filled):
        return False  # repeated labels: more likely a data row
    if not rest:
        return True
    # A column that holds numbers below a word is the classic header signal; a table of
    # words only counts as headed when its first-row cells never recur in their column.
    for j, c in enumerate(cells):
        column = [r[j].strip() for r in rest[:50] if j < len(r)]
        if c and column and any(v == c for v in column):
            return False
    return True


def _choose_delimiter(sample: str, preferred: str | None) -> str:
    lines = [ln for ln in sample.splitlines()[:_SAMPLE_LINES] if ln.strip()]
    best, best_score = preferred or ",", -1.0
    for d in _DELIMITERS:
        try:
            rows = list(csv.reader(lines, delimiter=d))
        except csv.Error:
            continue
        counts = Counter(len(r) for r in rows if r)
        if not counts:
            continue
        fields, n = counts.most_common(1)[0]
        if fields < 2:
            continue
        score = n / len(rows) + (0.05 if d == preferred else 0.0) + min(fields, 10) * 0.001
        if score > best_score:
            best, best_score = d, score
    return best


def parse_delimited(data: bytes, name: str) -> ParseResult:
    """Parse CSV/TSV bytes into Markdown table blocks (header row repeated per group)."""
    text, encoding = decode_text(data)
    text = text.lstrip("\ufeff")
    preferred = "\t" if name.lower().endswith((".tsv", ".tab")) else None
    delimiter = _choose_delimiter(text[:65536], preferred)
    csv.field_size_limit(_FIELD_LIMIT)
    warnings: list[str] = []
    try:
        raw = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False))
    except csv.Error as e:
        from assets.parsing.text import parse_text

        result = parse_text(data)
        result.warnings.append(f"not readable as delimited text ({e}); indexed as plain text")
        return result
    rows = [[clean_inline(c) for c in r] for r in raw]
    rows = [r for r in rows if any(r)]
    if not rows:
        return ParseResult(blocks=[], format="csv", metadata={"encoding": encoding})
    width = Counter(len(r) for r in rows).most_common(1)[0][0]
    ragged = sum(1 for r in rows if len(r) != width)
    if ragged:
        warnings.append(f"{ragged} of {len(rows)} rows have a field count other than {width}")
    if width < 2 and len(rows) > 1 and not preferred:
        warnings.append("one column only: no delimiter found among , TAB ; |")
    if looks_like_header(rows[0], rows[1:]):
        header, body = rows[0], rows[1:]
        generated = False
    else:
        header, body = [f"column {i + 1}" for i in range(width)], rows
        generated = True
    meta = {"header_generated": True} if generated else {}
    blocks = table_row_groups(header, body, meta=meta, first_row=1)
    if not body:  # a header and nothing else: keep the labels as text
        blocks = [Block("paragraph", ", ".join(c for c in header if c))]
    metadata = {
        "encoding": encoding,
        "delimiter": delimiter,
        "rows": len(body),
        "columns": width,
        "header": header,
        "header_generated": generated,
    }
    return ParseResult(blocks=blocks, format="csv", metadata=metadata, warnings=warnings)


# --------------------------------------------------------------------------- sheets


def _trim(rows: list[list[str]]) -> list[list[str]]:
    """Drop trailing empty cells of each row and trailing empty columns of the sheet."""
    out = []
    for r in rows:
        end = len(r)
        while end and not r[end - 1]:
            end -= 1
        out.append(r[:end])
    return out


def _segments(rows: list[list[str]]) -> list[tuple[int, list[list[str]]]]:
    """Runs of non-empty rows (with the 1-based sheet row of their first row)."""
    segs: list[tuple[int, list[list[str]]]] = []
    current: list[list[str]] = []
    start = 0
    for i, r in enumerate(rows, 1):
        if any(r):
            if not current:
                start = i
            current.append(r)
        elif current:
            segs.append((start, current))
            current = []
    if current:
        segs.append((start, current))
    return segs


def _lone(row: list[str]) -> bool:
    return sum(1 for c in row if c) == 1


def sheet_blocks(rows: list[list[str]], meta: dict[str, Any], page: int | None = None) -> list[Block]:
    """Blocks of one sheet's cell texts (rows of strings, '' for empty cells)."""
    blocks: list[Block] = []
    for start, seg in _segments(_trim(rows)):
        seg = [list(r) for r in seg]
        while seg and _lone(seg[0]) and (len(seg) == 1 or len(seg[1]) > 1):
            text = next(c for c in seg[0] if c)
            blocks.append(Block("paragraph", text, page=page, meta={**meta, "row": start}))
            seg, start = seg[1:], start + 1
        if not seg:
            continue
        width = max(len(r) for r in seg)
        if width == 1:  # a single column of values: a list, not a table
            text = "\n".join(r[0] for r in seg if r and r[0])
            blocks.append(Block("paragraph", text, page=page, meta={**meta, "row": start}))
            continue
        first = seg[0] + [""] * (width - len(seg[0]))
        if looks_like_header(first, seg[1:]) or (len(seg) == 1):
            header, body, first_row = first, seg[1:], start + 1
        else:
            header = [f"column {i + 1}" for i in range(width)]
            body, first_row = seg, start
        if not body:
            blocks.append(Block("paragraph", " | ".join(c for c in header if c), page=page, meta=dict(meta)))
            continue
        blocks.extend(table_row_groups(header, body, meta=meta, page=page, first_row=first_row))
    return blocks
