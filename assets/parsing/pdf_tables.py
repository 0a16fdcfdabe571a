"""Ruled tables on a PDF page: found with PyMuPDF's `page.find_tables()`, cut out of the
running text, and joined across a page break.

`find_tables` is pure Python over every character it sees and matches cells pairwise, so it
runs only on pages that have enough vector strokes to draw a grid and not so many (a plot's
markers, a pattern) that it takes seconds to minutes; it sees cells only where strokes enclose
them. Around it: a slide's background fill is kept out of the cell search (every beamer slide
came out as a table of the whole page), a table striped in alternate rows (colortbl's
`\\rowcolors`) gets vertical lines that join its shading bands into one grid (each shaded row
was a table of its own), and what it finds is kept only where it is a table: not a drawing with
a label or two, a slide's framed box, or its frame. A table continued at the top of the next
page gets the header of its first part.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pymupdf

from assets.parsing.pdf_layout import Line, Region
from assets.parsing.textutil import clean_inline, markdown_table, table_header_lines
from connectors.documents import Block
from connectors.errors import raise_if_interrupt

__all__ = ["PageBlocks", "Table", "cut_tables", "join_split_tables", "page_tables"]

MIN_FILLED_CELLS = 0.3  # a "table" with fewer filled cells is a drawing (R-intro's mfrow grid)
MIN_TABLE_STROKES = 4  # vector lines/rectangles a page needs before tables are looked for
# ... and the most drawings it may have: `find_tables` cleans the graphics pairwise, so a page of
# 10,000 filled cells took 9 s and one of 20,000 74 s (a plot's markers, a pattern); none of the
# dev corpora's table pages comes near
MAX_TABLE_PATHS = 5000
# ... and the most cell edges they draw (`_grid_edges`): one path may hold any number of
# rectangles, and a 67 KB page of 20,000 in one path took 15-40 s in `find_tables` (its cells
# are matched pairwise) though its 1 drawing was far under MAX_TABLE_PATHS
MAX_TABLE_EDGES = 4 * MAX_TABLE_PATHS
BACKGROUND_COVER = 0.9  # a fill (or "table") covering this share of the page is its background
MIN_TABLE_COLUMN = 6.0  # points: a narrower "column" is a rounded box corner, not a column
BOX_TEXT_SHARE = 0.4  # a "table" one cell of which holds this share of the page's words is a box
BOX_CELL_WORDS = 12  # ... when that cell holds a paragraph (at least this many words)
BAND_TOLERANCE = 1.0  # points: the edges of one table's shading bands agree to this
MIN_BAND_HEIGHT = 4.0  # points: a thinner fill is a rule, not a shaded row
MAX_BAND_HEIGHT = 72.0  # points: a taller fill is a panel or a picture, not a shaded row
MAX_BAND_GAP = 4.0  # an unshaded row between two bands is at most this many times as high as the lowest band
SPLIT_TABLE_EDGE = 1 / 3  # a table continues on the next page only from this near its bottom


@dataclass
class Table:
    """A found table's cells, carried by its Region (`Region.table`) to the block made of it."""

    header: list[str]
    rows: list[list[str]]
    top: float = 0.0  # where the table starts and ends, as shares of the page height
    bottom: float = 1.0



def page_tables(
    page: pymupdf.Page,
    warnings: list[str],
    number: int,
    no_grid: set[int] | None = None,
    page_words: int = 0,
    slide: bool = False,
) -> list[Region]:
    """Ruled tables on the page as Regions carrying a `Table`.

    `find_tables` is pure Python over every character it sees (~100-200 ms a page), so it
    runs only on pages with enough vector strokes to draw a grid, clipped to the area those
    strokes cover (plus room above for a header row drawn outside the rules).
    `use_layout=False` keeps the output independent of whether pymupdf-layout is installed.
    On a `slide` a box drawn around the text and the slide's frame are no tables.
    """
    paths = page.get_cdrawings()
    if sum(len(p.get("items", ())) for p in paths) < MIN_TABLE_STROKES:
        return []
    if len(paths) > MAX_TABLE_PATHS or (edges := _grid_edges(paths)) > MAX_TABLE_EDGES:
        drawn = f"{len(paths):,} vector drawings" if len(paths) > MAX_TABLE_PATHS else f"{edges:,} drawn edges"
        warnings.append(f"page {number}: {drawn}, too many to look for tables among "
                        "(a plot or a pattern); its text is read as text")
        return []
    # Cells come from the strokes alone, so a page whose drawings repeat those of a page
    # that held no table (a logo, a rule under the running header) holds none either.
    signature = hash(tuple(tuple(round(v) for v in p["rect"]) for p in paths))
    if no_grid is not None and signature in no_grid:
        return []
    area = pymupdf.Rect()
    for p in paths:
        area |= pymupdf.Rect(p["rect"])
    clip = pymupdf.Rect(area.x0 - 5, area.y0 - 40, area.x1 + 5, area.y1 + 5) & page.rect
    try:
        found = page.find_tables(
            clip=clip, use_layout=False, paths=_grid_paths(page, paths), add_lines=_band_lines(page, paths)
        ).tables
    except Exception as e:  # table finding is best effort
        raise_if_interrupt(e)
        warnings.append(f"page {number}: table detection failed ({e}); kept as text")
        return []
    if not found and no_grid is not None:
        no_grid.add(signature)
    out: list[Region] = []
    for t in found:
        rows = [[clean_inline(c or "") for c in row] for row in t.extract()]
        if not rows or _columns(t) < 2 or not any(any(r) for r in rows):
            continue  # a framed box (a slide's block with rounded corners), not a table
        cells = [c for r in rows for c in r]
        if sum(1 for c in cells if c) < MIN_FILLED_CELLS * len(cells):
            continue  # a drawn grid with a label or two (a figure), not a table
        bbox = pymupdf.Rect(t.bbox)
        if slide:  # a portrait page's big table is a table
            if max(len(c.split()) for c in cells) >= max(BOX_CELL_WORDS, BOX_TEXT_SHARE * page_words):
                continue  # one cell holds the slide's text: a box drawn around it (a beamer block)
            if abs(bbox & page.rect) >= BACKGROUND_COVER * abs(page.rect):
                continue  # the slide's frame (its background and sidebar), not a table
        # a row without text says nothing (in any table; `_band_lines` makes one of the gap
        # between two groups of shaded rows, calctab's items and their total)
        rows = [r for r in rows if any(r)]
        if t.header.external:
            header = [clean_inline(n or "") for n in t.header.names]
            bbox |= pymupdf.Rect(t.header.bbox)
        else:
            header, rows = rows[0], rows[1:]
        height = page.rect.height or 1.0
        table = Table(header, rows, bbox.y0 / height, bbox.y1 / height)
        out.append(Region(bbox.x0, bbox.y0, bbox.x1, bbox.y1, table=table))
    return out


def _grid_edges(paths: list[dict[str, Any]]) -> int:
    """The horizontal and vertical edges the drawings hold, four to a rectangle: what
    `find_tables` makes cells of. A curve or a slanted line makes none."""
    edges = 0
    for p in paths:
        for item in p.get("items", ()):
            if item[0] in ("re", "qu"):
                edges += 4
            elif item[0] == "l" and (abs(item[1][0] - item[2][0]) < 1 or abs(item[1][1] - item[2][1]) < 1):
                edges += 1
    return edges


def _grid_paths(page: pymupdf.Page, cheap: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The drawings to look for table cells in: all but fills that cover (nearly) the whole
    page; None (all of them) when there is no such fill. A slide's background is one: its
    edges and the sidebar's cut the page into "cells", and every slide of a beamer deck came
    out as a table of the whole page. The page's `cheap` drawings (`get_cdrawings`, already
    read) tell whether there is one; only then are the full drawings read a second time
    (`find_tables` reads them itself otherwise). (`find_tables` turns a rotated page upright
    before it reads the drawings, so those of a rotated page are left to it.)"""
    area = abs(page.rect) or 1.0

    def background(p: dict[str, Any]) -> bool:
        return p.get("type") == "f" and abs(pymupdf.Rect(p["rect"]) & page.rect) >= BACKGROUND_COVER * area

    if page.rotation or not any(background(p) for p in cheap):
        return None
    return [p for p in page.get_drawings() if not background(p)]


def _band_lines(
    page: pymupdf.Page, paths: list[dict[str, Any]]
) -> list[tuple[tuple[float, float], tuple[float, float]]] | None:
    """Vertical lines that join the shading bands of a table striped in alternate rows into
    one grid; None where the page has no such table.

    colortbl's `\\rowcolors` (xcolor's own tables) and the like shade every other row with one
    filled rectangle per cell and draw no vertical rules. `find_tables` sees cells only where
    strokes enclose them, so each shaded row came out as a table of its own (64 of xcolor's 68
    tables had one row, its text taken for a header) and the unshaded rows between them as
    paragraphs, read before the shaded ones. A "band" is a row of at least two fills that
    touch side by side, of about a text row's height; a stack is bands of the same width one
    below the other, with at most an unshaded row (MAX_BAND_GAP) between them. Each cell edge
    shared by two of a stack's bands becomes a line from the first of them to the last (so a
    header cell spanning columns stays one cell), and the outer edges run on up or down to a
    rule across the stack's width an unshaded row away (the first or last row unshaded): the
    unshaded rows become cells between the bands' top and bottom edges, read by `find_tables`
    like any other. A single shaded box or a column of boxes has one fill a row, no band.
    (The lines are in the coordinates of `paths`, those of the unrotated page: a rotated page,
    which `find_tables` turns upright first, gets none.)"""
    if page.rotation:
        return None
    fills: list[tuple[float, float, float, float]] = []
    rules: list[tuple[float, float, float]] = []  # (y, x0, x1) of horizontal strokes
    for p in paths:
        x0, y0, x1, y1 = p["rect"]
        rectangle = [i[0] for i in p.get("items", ())] == ["re"]
        if p.get("type") == "f" and rectangle and MIN_BAND_HEIGHT <= y1 - y0 <= MAX_BAND_HEIGHT:
            fills.append((x0, y0, x1, y1))
        elif y1 - y0 <= 1.5 and x1 - x0 > 0:  # a rule, stroked or a thin fill
            rules.append(((y0 + y1) / 2, x0, x1))
    lines = [line for stack in _band_stacks(fills) if len(stack) >= 2 for line in _stack_lines(stack, rules)]
    return lines or None


_Band = tuple[float, float, list[float]]  # (top, bottom, cell edges left to right)


def _band_stacks(fills: list[tuple[float, float, float, float]]) -> list[list[_Band]]:
    """The bands the fills make (a row of fills that tile it side by side), stacked: bands of
    the same width one below the other, at most an unshaded row apart (`_band_lines`)."""
    tol = BAND_TOLERANCE
    rows: list[list[tuple[float, float, float, float]]] = []  # fills with the same top
    for f in sorted(fills, key=lambda f: f[1]):
        if rows and f[1] - rows[-1][0][1] <= tol:
            rows[-1].append(f)
        else:
            rows.append([f])
    bands: list[_Band] = []
    for row in rows:  # a row's runs of fills that touch side by side: two tables side by side make two
        runs: list[list[tuple[float, float, float, float]]] = []
        for f in sorted(row, key=lambda f: f[0]):
            if runs and abs(f[0] - runs[-1][-1][2]) <= tol and abs(f[3] - runs[-1][-1][3]) <= tol:
                runs[-1].append(f)
            else:
                runs.append([f])
        bands += [(run[0][1], run[0][3], [run[0][0]] + [c[2] for c in run]) for run in runs if len(run) >= 2]
    stacks: list[list[_Band]] = []
    for band in sorted(bands, key=lambda b: b[0]):
        # the stack of the same width that this band continues: not always the last one begun,
        # where tables side by side have their rows at other heights
        same = next((st for st in reversed(stacks)
                     if abs(band[2][0] - st[-1][2][0]) <= tol and abs(band[2][-1] - st[-1][2][-1]) <= tol
                     and 0 <= band[0] - st[-1][1] <= MAX_BAND_GAP * min(b[1] - b[0] for b in st)), None)
        if same is not None:
            same.append(band)
        else:
            stacks.append([band])
    return stacks


def _stack_lines(stack: list[_Band], rules: list[tuple[float, float, float]],
                 ) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The vertical lines that make one stack of bands one grid (`_band_lines`)."""
    tol = BAND_TOLERANCE
    left, right = stack[0][2][0], stack[0][2][-1]
    reach = MAX_BAND_GAP * min(b[1] - b[0] for b in stack)
    # The table's own rules run across its width exactly (a wider one is another table's).
    # The outer bands reach on to the nearest with room for a row in between, unless one
    # lies right on their edge: then the table body ends with that band, and what follows
    # the rule (a footnote row spanning all columns) is no row to cut into cells.
    across = [y for y, x0, x1 in rules if abs(x0 - left) <= tol and abs(x1 - right) <= tol]
    top, bottom = stack[0][0], stack[-1][1]
    if not any(0 <= top - y < MIN_BAND_HEIGHT for y in across):
        top = max((y for y in across if MIN_BAND_HEIGHT <= top - y <= reach), default=top)
    if not any(0 <= y - bottom < MIN_BAND_HEIGHT for y in across):
        bottom = min((y for y in across if MIN_BAND_HEIGHT <= y - bottom <= reach), default=bottom)
    xs: list[float] = []
    for x in sorted(x for b in stack for x in b[2]):
        if not xs or x - xs[-1] > tol:
            xs.append(x)
    lines: list[tuple[tuple[float, float], tuple[float, float]]] = []
    for x in xs:
        having = [i for i, b in enumerate(stack) if any(abs(e - x) <= tol for e in b[2])]
        if len(having) < 2:
            continue
        y0 = top if having[0] == 0 else stack[having[0]][0]
        y1 = bottom if having[-1] == len(stack) - 1 else stack[having[-1]][1]
        lines.append(((x, y0), (x, y1)))
    return lines


def _columns(t: Any) -> int:
    """A found table's columns at least MIN_TABLE_COLUMN wide: the rounded corners of a
    slide's block box make 4-point "columns" that split its title ("I | nputs")."""
    edges = sorted({round(c[0], 1) for c in t.cells if c} | {round(c[2], 1) for c in t.cells if c})
    return sum(1 for a, b in itertools.pairwise(edges) if b - a >= MIN_TABLE_COLUMN)


def _inside(line: Line, rect: Region, pad: float = 2.0) -> bool:
    cx, cy = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
    return rect.x0 - pad <= cx <= rect.x1 + pad and rect.y0 - pad <= cy <= rect.y1 + pad


def cut_tables(regions: list[Region], tables: list[Region]) -> list[Region]:
    """`regions` without their lines inside one of the `tables` (whose text is read from its cells);
    a region left without lines is dropped."""
    if not tables:
        return regions
    kept: list[Region] = []
    for r in regions:
        r.lines = [ln for ln in r.lines if not any(_inside(ln, t) for t in tables)]
        if r.lines:
            r.refit()
            kept.append(r)
    return kept


class PageBlocks(Protocol):
    """What `join_split_tables` reads of a page: its number and the blocks made of it."""

    number: int  # 1-based
    blocks: list[Block]


def join_split_tables(pages: Sequence[PageBlocks], tables: dict[int, Table]) -> None:
    """Give a table continued at the top of the next page the header of its first part: a
    table of as many columns that starts near the top of the page after the one where a table
    ends near the foot (the slides of a deck are no continuations of each other)."""
    for prev, cur in itertools.pairwise(pages):
        if not prev.blocks or not cur.blocks:
            continue
        last, first = prev.blocks[-1], cur.blocks[0]
        if last.kind != "table" or first.kind != "table":
            continue
        a, b = tables.get(id(last)), tables.get(id(first))
        if a is None or b is None or len(a.header) != len(b.header):
            continue
        if a.bottom < 1 - SPLIT_TABLE_EDGE or b.top > SPLIT_TABLE_EDGE:
            continue  # not a table running off the foot of one page onto the top of the next
        first.meta["continued_from_page"] = prev.number
        if [c.lower() for c in b.header] == [c.lower() for c in a.header]:
            continue  # the continuation already repeats the header row
        merged = Table(a.header, [b.header, *b.rows], b.top, b.bottom)
        tables[id(first)] = merged
        first.text = markdown_table(merged.rows, header=merged.header)
        first.meta["table_header"] = table_header_lines(first.text)
