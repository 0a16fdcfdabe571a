"""Tables set without rules (LaTeX's booktabs): their rows as the lines of cells they are.

A table's header row is set in bold, or larger than the table's small type, and a row of tall
symbols is large too, so the heading ranks (`pdf_layout.HeadingRanks`) made them headings that
opened a section for the rows below. A line of cells set apart by wide gaps over or under rows in
the same columns is such a row (`mark_table_rows`); a numbered or letter-spaced heading is not.
With `stages.parse.pdf_unruled_tables` the runs of such rows are read as tables (`table_runs`,
`join_table_regions`). Pure functions over `pdf_layout.Line`, unit-tested with hand-made
coordinates.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from assets.parsing.pdf_layout import MARGIN_ZONE, Line, Region, is_rtl
from assets.parsing.pdf_outline import is_section_number, is_unmapped_number

__all__ = ["TableRun", "join_table_regions", "mark_table_rows", "table_runs"]

CELL_GAP = 0.8  # ems of empty x-range between two pieces of a line that make them two cells
LETTER_SPACE = 1.6  # glyph widths between the glyphs of a letter-spaced title, at most
ROW_GAP = 3.0  # line heights under (over) a table's row that the rows next to it are looked for in
_PAGE_NUMBER_CELL = re.compile(r"\d{1,4}|[ivxlc]{1,6}")


_Cell = tuple[float, float, str]  # x0, x1, text


def _cells(ln: Line) -> list[_Cell]:
    """A line's cells: its pieces (`Line.cells`) joined where less than CELL_GAP ems apart."""
    out: list[_Cell] = []
    for x0, x1, text in sorted(ln.cells or [(ln.x0, ln.x1, ln.text)]):
        if out and x0 - out[-1][1] < CELL_GAP * ln.size:
            a, b, t = out[-1]
            out[-1] = (a, max(b, x1), f"{t.rstrip()} {text.lstrip()}")
        else:
            out.append((x0, x1, text))
    return out


def _cells_near(ln: Line, near: Sequence[tuple[Line, list[_Cell]]], below: bool,
                ignored: Collection[int]) -> list[_Cell]:
    """The cells of the lines (of `near`: lines with their cells) under `ln` (`below`) or over
    it that lie within ROW_GAP of its height of it: a table's next or last rows, whether MuPDF
    made a row one line, a line a cell, or a line of each baseline of a row of tall symbols.
    Lines beside `ln` (another column) are not under or over it, nor are those whose id is
    `ignored`."""
    def gap(o: Line) -> float:
        return o.y0 - ln.y1 if below else ln.y0 - o.y1

    return [c for o, cells in near if o is not ln and o.x0 < ln.x1 and o.x1 > ln.x0
            and -0.3 * ln.height <= gap(o) <= ROW_GAP * ln.height and id(o) not in ignored for c in cells]


def _aligned(head: Sequence[_Cell], below: Sequence[_Cell]) -> bool:
    """Whether the cells `below` are set in the columns of `head`: each of at least two of the
    header's cells, and of half of them, has a cell under it that lies under no other (a line
    of a paragraph runs across the header's gaps; a table's rows fill its columns)."""
    matched = set()
    for x0, x1, _ in below:
        hits = [i for i, (a, b, _) in enumerate(head) if x0 < b and x1 > a]
        if len(hits) == 1:
            matched.add(hits[0])
    return len(matched) >= max(2, math.ceil(len(head) / 2))


def _numbered(cells: Sequence[_Cell]) -> bool:
    """Whether a line of these cells is a numbered heading: a section number alone in its first
    cell ("8  Bottom accents"; a line number before it, "5 1.1  Left section", as critical
    editions set them) or, in right-to-left script, in its last."""
    first = cells[0][2].split()
    if is_section_number(cells[0][2]) or (len(first) == 2 and all(map(is_section_number, first))):
        return True
    return len(cells) > 1 and is_section_number(cells[-1][2]) and is_rtl(cells[0][2])


def _heads_no_table(cells: Sequence[_Cell]) -> bool:
    """Whether a line of these cells is no table's row: one cell; a title set letter-spaced
    ("摘 要": a glyph a cell); a title, maybe a dot leader, and a page number (a contents entry,
    which `pdf._demote_toc_entries` judges); a numbered heading (`_numbered`), unless a page
    number ends it too."""
    if len(cells) < 2 or _letter_spaced(cells):
        return True
    last = cells[-1][2].strip()
    paged = _PAGE_NUMBER_CELL.fullmatch(last) is not None
    if paged and all(not c[2].replace(".", "").strip() for c in cells[1:-1]):
        return True
    # a number, a title and a page number (in old-style digits too, which
    # `pdf._demote_toc_entries` cannot read) is a row of the contents' table
    return _numbered(cells) and not ((paged or is_unmapped_number(last)) and len(cells) > 2)


def _letter_spaced(cells: Sequence[_Cell]) -> bool:
    """Whether these cells are the glyphs of a title set letter-spaced: one glyph each, evenly
    spaced less than LETTER_SPACE ems apart (a table's one-letter columns stand farther and
    unevenly apart)."""
    if any(len(c[2].strip()) != 1 for c in cells):
        return False
    size = max(c[1] - c[0] for c in cells)  # a glyph's width: about an em for CJK, less for Latin
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(cells)]
    return max(gaps) <= LETTER_SPACE * max(size, 1.0) and max(gaps) <= 1.25 * min(gaps) + 1.0


def mark_table_rows(lines: Sequence[Line], rank: Callable[[Line], int], height: float | None = None) -> None:
    """Mark the lines of a page that `rank` takes for headings but are a row of a table set
    without rules (LaTeX's booktabs, a tabular without vertical lines): a line of at least two
    cells with wide gaps between them (`Line.cells`) over or under rows in the same columns
    (`_aligned`). A header row is set in bold, or larger than the table's small type, and a row
    of tall symbols is large too, so the font rules made them headings that opened a section
    for the rows below (unicode-math's symbol tables: a section per table and page). A section
    heading whose number stands a quad apart from its title ("8  Bottom accents") is two
    cells too (`_heads_no_table`). A running header in the page's top or bottom band (`height`,
    the page's) is no row of a table whose line lies outside the band. Each row found is marked
    `Line.tabular`."""
    order = sorted(((o, _cells(o)) for o in lines), key=lambda oc: oc[0].y0)
    cells_of = {id(o): cells for o, cells in order}
    tops = [o.y0 for o, _ in order]
    tallest = max((o.height for o, _ in order), default=0.0)

    banded = set() if height is None else {  # the running-header bands' lines
        id(o) for o in lines if o.y1 <= MARGIN_ZONE * height or o.y0 >= (1 - MARGIN_ZONE) * height}
    for ln in lines:
        if ln.heading or not rank(ln):
            continue
        head = cells_of[id(ln)]
        if _heads_no_table(head):
            continue
        reach = ROW_GAP * ln.height  # the lines that start in reach below it or end in reach above it
        near = order[bisect.bisect_left(tops, ln.y0 - reach - tallest):bisect.bisect_right(tops, ln.y1 + reach)]
        ignored = () if id(ln) in banded else banded  # rows both in a band are rows
        if any(_aligned(head, _cells_near(ln, near, below, ignored)) for below in (True, False)):
            ln.tabular = True


# --------------------------------------------------------------------------- tables without rules

MIN_TABLE_ROWS = 3  # lines of cells in the same columns that make a table without rules
ROW_LEAD = 1.0  # line heights between a row's line and the next line of the table, at most
_LEADER = re.compile(r"(?:\.\s?){4,}")  # a contents entry's dot leader


@dataclass
class TableRun:
    """Lines `first` to `end` (exclusive) of a region are one table set without rules, read as
    `rows` of cells by column; the first row is its header where `header`."""

    first: int
    end: int
    rows: list[list[str]]
    header: bool = False


def table_runs(lines: Sequence[Line], is_heading: Callable[[Line], bool]) -> list[TableRun]:
    """The runs of `lines` (a region's, in reading order) that are a table set without rules:
    MIN_TABLE_ROWS or more lines of two or more cells (`_cells`), each close under the one before
    and set in its columns (`_aligned`), none a heading (`is_heading`; a header row the font
    rules ranked is `Line.tabular`, no heading), code (monospace) or a contents entry (a dot
    leader). A line of one cell close under a row and under one of its cells is that cell's
    text wrapped (a description column). Its rows are cut into the columns all its cells leave
    apart (`_columns`); a run whose cells leave fewer than two, or whose first column numbers
    its lines (`_numbered_lines`), is no table. Its first row is its header where the font
    rules ranked it (`Line.tabular`), it alone is bold, or it holds no digit: a header row is
    repeated in every piece of a table the chunker cuts, a first row of data must not be."""
    runs: list[TableRun] = []
    i = 0
    while i < len(lines):
        end, rows = _run_from(lines, i, is_heading)
        table = _columns(rows) if end - i >= MIN_TABLE_ROWS and len(rows) >= MIN_TABLE_ROWS else None
        if table is None or _numbered_lines(table):
            i = max(i + 1, end)  # a run from a later line of this one ends where it ends: shorter
            continue
        head = lines[i]  # a header row the font rules ranked, set in bold over rows that are not,
        # or of words alone (a first row holding a number is data: a line of numbered code)
        header = (head.tabular or (head.bold and not any(ln.bold for ln in lines[i + 1:end]))
                  or not any(c.isdigit() for c in head.text))
        runs.append(TableRun(i, end, table, header))
        i = end
    return runs


def _numbered_lines(table: list[list[str]]) -> bool:
    """Whether a table's first column is the line numbers of a listing (a LaTeX package's
    documented source, a numbered code block): numbers, rising, in nearly every row."""
    numbers = [int(c.split()[0]) for c, *_ in table if c and c.split()[0].isdecimal()]  # "²" is a digit, no int
    return len(numbers) >= 0.8 * len(table) and all(a < b for a, b in itertools.pairwise(numbers))


def _row_line(ln: Line, is_heading: Callable[[Line], bool]) -> list[_Cell] | None:
    """The cells of `ln` where it can be a row of a table without rules, else None."""
    cells = _cells(ln)
    if len(cells) < 2 or ln.mono or is_heading(ln) or _LEADER.search(ln.text) or _letter_spaced(cells):
        return None
    return cells


def _run_from(lines: Sequence[Line], i: int, is_heading: Callable[[Line], bool]) -> tuple[int, list[list[_Cell]]]:
    """The longest run of table rows from line `i`: its end and its rows' cells (wrapped lines
    joined to the cell above them)."""
    first = _row_line(lines[i], is_heading)
    if first is None:
        return i, []
    rows, end = [first], i + 1
    while end < len(lines):
        ln, prev = lines[end], lines[end - 1]
        if ln.y0 - prev.y1 > ROW_LEAD * prev.height:
            break
        cells = _row_line(ln, is_heading)
        if cells is not None and _aligned(rows[-1], cells):
            rows.append(cells)
        elif cells is None and not is_heading(ln) and not ln.mono and _wraps_into(rows[-1], ln):
            pass
        else:
            break
        end += 1
    return end, rows


def _wraps_into(row: list[_Cell], ln: Line) -> bool:
    """Join `ln`, a line of one cell, to the one cell of `row` it lies under, if there is one."""
    cells = _cells(ln)
    if len(cells) != 1:
        return False
    x0, x1, text = cells[0]
    hits = [k for k, (a, b, _) in enumerate(row) if x0 < b and x1 > a]
    if len(hits) != 1 or x0 < row[hits[0]][0] - ln.size:
        return False
    a, b, t = row[hits[0]]
    row[hits[0]] = (a, max(b, x1), f"{t.rstrip()} {text.lstrip()}")
    return True


def _columns(rows: list[list[_Cell]]) -> list[list[str]] | None:
    """The rows' cells laid out by column: the x-ranges no cell bridges are the column gaps.
    None where fewer than two columns are left apart (a cell runs across the others)."""
    spans: list[list[float]] = []
    for x0, x1, _ in sorted(c for row in rows for c in row):
        if spans and x0 < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], x1)
        else:
            spans.append([x0, x1])
    if len(spans) < 2:
        return None
    starts = [a for a, _ in spans]
    table: list[list[str]] = []
    for row in rows:
        out = [""] * len(spans)
        for x0, _, text in row:
            k = bisect.bisect_right(starts, x0) - 1  # the column it starts in (every cell made one)
            out[k] = f"{out[k]} {text.strip()}".strip()
        table.append(out)
    return table


def join_table_regions(regions: list[Region], is_heading: Callable[[Line], bool]) -> list[Region]:
    """`regions` (a page's, in reading order) with a table's rows that MuPDF put in blocks of
    their own (a bold header row, a row set apart) joined into one region, so `table_runs`
    reads them as one table: a region whose first line is a row in the columns of the last
    line of the region before, close under it."""
    out: list[Region] = []
    for r in regions:
        prev = out[-1] if out else None
        if prev is not None and prev.table is None and r.table is None and prev.lines and r.lines:
            last, first = prev.lines[-1], r.lines[0]
            above, below = _row_line(last, is_heading), _row_line(first, is_heading)
            if (above is not None and below is not None and _aligned(above, below)
                    and 0 <= first.y0 - last.y1 <= ROW_LEAD * last.height):
                prev.lines.extend(r.lines)
                prev.refit()
                continue
        out.append(r)
    return out
