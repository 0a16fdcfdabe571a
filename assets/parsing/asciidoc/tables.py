"""AsciiDoc tables (`|===`, `,===`, `[format=csv]`): cells with their spans read from the rows
(`table_cells`), then placed on a grid as Asciidoctor places them (`grid`), spans bounded so a
table cannot grow past a bounded multiple of its text."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace

from assets.parsing.asciidoc.syntax import (
    BLOCK_ATTRIBUTES,
    MAX_COLUMNS,
    TABLE,
)

MAX_ROW_SPAN = 64  # a cell's `.N+` row span is cut here
SPAN_AREA = 4  # table places spans may cover, per cell written (`grid`)
SPANNED_LABEL_CHARS = 200  # a cell spanning rows repeats its text below up to this length
DATA_FORMATS = {"csv": ",", "tsv": "\t", "dsv": ":"}  # `[format=csv]` over a `|===` table
# a cell's spec before its `|` (`2+`, `3*`, `^.>`, `a`): after a blank ending the cell before, or
# alone before a line's first `|`
_SPEC = r"((?:\d{1,4}\*|\d{0,4}(?:\.\d{1,4})?\+)?[<^>]?(?:\.[<^>])?[adehlmsv]?)"
_CELL_SPEC = re.compile(r"\s" + _SPEC + "$")
_LINE_SPEC = re.compile("^" + _SPEC + "$")
_SPAN = re.compile(r"^(?:(\d{1,4})\*|(\d{0,4})(?:\.(\d{1,4}))?\+)")  # repeat `3*`, or columns `2+` and rows `.2+`


def column_count(spec: str) -> int:
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
class Cell:
    """One table cell as written: its text, the columns and rows it spans, how often it repeats
    (`3*|`: the same cell in three columns)."""

    text: str
    cols: int = 1
    rows: int = 1
    repeat: int = 1

    @classmethod
    def of(cls, text: str, spec: str) -> Cell:
        m = _SPAN.match(spec)
        if not m:
            return cls(text)
        repeat, cols, rows = (min(int(g), MAX_COLUMNS) if g else 1 for g in m.groups())
        return cls(text, cols=cols, rows=min(rows, MAX_ROW_SPAN), repeat=repeat)

    @property
    def width(self) -> int:
        return self.cols * self.repeat


def table_cells(body: list[str], separator: str) -> tuple[list[Cell], int, int]:
    """A table's cells in order; how many columns its first line fills (the column count when no
    `cols` says); and how many the first row fills when a blank line follows it (Asciidoctor's
    implicit header row), else 0. A cell's spec before its separator (`2+|`, `.2+|`, `3*|`)
    says what it spans."""
    if separator in ",:\t":  # CSV, DSV and TSV data; a quoted CSV field may hold the separator
        rows = [[c.strip() for c in r] for r in csv.reader([ln for ln in body if ln.strip()], delimiter=separator)]
        return [Cell(c) for r in rows for c in r], len(rows[0]) if rows else 0, 0
    split = re.compile(r"(?<!\\)" + re.escape(separator))
    cells: list[tuple[list[str], str]] = []  # each cell's pieces (joined once at the end: += was quadratic), spec
    first = header = 0

    def filled() -> int:
        return sum(Cell.of("", spec).width for _, spec in cells)

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
    return [Cell.of(" ".join(pieces), spec) for pieces, spec in cells], first, header


def _nested(line: str) -> str:
    """A line of an `a|` cell's content as the cell's text: a nested table's fence and block
    attribute lines say nothing, its `!` cells are separated by "; "."""
    if BLOCK_ATTRIBUTES.match(line) or (line.startswith("!") and TABLE.match(line)):
        return ""
    if line.startswith("!"):
        return "; ".join(c.strip() for c in re.split(r"(?<!\\)!", line) if c.strip())
    return line


def grid(cells: list[Cell], width: int) -> list[list[str]]:
    """The rows of a table `width` columns wide, each cell placed at the first free place as
    Asciidoctor places it: a cell spanning columns leaves the others it covers empty; one spanning
    rows repeats a short text (`SPANNED_LABEL_CHARS`, a label such as "Linux") in the rows below,
    so each row stays readable alone when a chunk holds only some of them; a repeated cell fills
    the next columns. Spans that would cover more than `SPAN_AREA` places per cell written are
    not honoured (each cell one place): a table cannot grow past a bounded multiple of its text."""
    cells = [replace(c, cols=min(c.cols, width), repeat=min(c.repeat, width)) for c in cells]
    if sum(c.cols * c.rows * c.repeat for c in cells) > SPAN_AREA * max(len(cells), width):
        cells = [Cell(c.text) for c in cells]
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
