"""Page geometry for the PDF parser: lines, regions, columns, running headers, headings.

Pure functions over small dataclasses (no PyMuPDF objects), so layout rules can be unit-tested
with hand-made coordinates. PDF units are points, y grows downwards.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "HeadingRanks",
    "Line",
    "OutlineEntry",
    "Region",
    "body_font_size",
    "columns_of",
    "is_numbered",
    "mark_outline",
    "mark_table_rows",
    "merge_adjacent",
    "reading_order",
    "running_line_keys",
    "strip_running_lines",
    "title_key",
]

MIN_COLUMN_GAP = 8.0  # points of empty x-range that separate two columns
MIN_COLUMN_CHARS = 80  # a column must hold at least this much text to count as one
NARROW_SHARE = 0.6  # regions narrower than this share of the content width can sit in a column
COLUMN_SHARE = 0.2  # of a page's narrow text, what each of two columns bridged by others must hold
STRADDLE_SHARE = 0.1  # ... and at most what the regions bridging them may
MARGIN_ZONE = 0.12  # top/bottom share of the page height searched for running headers/footers
SIDE_ZONE = 0.2  # left/right share of the page width searched for a running sidebar
HEADING_SIZE_RATIO = 1.15  # font size over body size that makes a short line a heading
MAX_HEADING_WORDS = 20
MAX_BOLD_HEADING_WORDS = 12
MAX_HEADING_LINES = 3
# A font size that carries this share of a document's text (at least BODY_SIZE_CHARS
# characters, in long lines) is a second body size (a manual set in 11 pt with 9 pt examples), never a
# heading size, however short its lines.
BODY_SIZE_SHARE = 0.15
BODY_SIZE_CHARS = 500
BODY_LINE_WORDS = 8  # ... and whose lines run long on average (slide titles are short),
# or that carries twice that share whatever its line length
MAX_BOLD_BODY_SHARE = 0.15  # when more of the body-size text is bold, bold marks no heading

_PAGE_NUMBER = re.compile(
    r"^(?:(?:page|p\.|pg\.?|seite)\s*)?#+(?:\s*(?:of|/|von)\s*#+)?$|^[-–—]\s*#+\s*[-–—]$|^[ivxlc]{1,6}$"
)


@dataclass
class Line:
    """One visual line of text with its dominant font attributes."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float = 10.0
    bold: bool = False
    mono: bool = False
    outline: int = 0  # the level of the outline (bookmark) entry this line is the title of
    entry: int = -1  # ... and that entry's index (lines of one title share it)
    heading: int = 0  # a heading level the page's layout gives the line (a slide's frame title)
    # (x0, x1, text) of the pieces MuPDF read as lines of their own on this one's baseline, split
    # at wide gaps (merged by the parser); empty: one piece. A table row's cells are such pieces.
    cells: list[tuple[float, float, str]] = field(default_factory=list)
    tabular: bool = False  # a row of a table set without rules (`mark_table_rows`): no heading

    @property
    def height(self) -> float:
        return max(1.0, self.y1 - self.y0)


@dataclass
class Region:
    """A block of lines MuPDF grouped together, or a detected table (`table` set)."""

    x0: float
    y0: float
    x1: float
    y1: float
    lines: list[Line] = field(default_factory=list)
    table: object | None = None

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def chars(self) -> int:
        if self.table is not None:
            return 200  # a table is always substantial content
        return sum(len(ln.text) for ln in self.lines)

    def refit(self) -> None:
        """Shrink the bounding box to the lines it still holds."""
        if self.lines:
            self.x0 = min(ln.x0 for ln in self.lines)
            self.y0 = min(ln.y0 for ln in self.lines)
            self.x1 = max(ln.x1 for ln in self.lines)
            self.y1 = max(ln.y1 for ln in self.lines)


# --------------------------------------------------------------------------- columns


def columns_of(regions: Sequence[Region]) -> list[tuple[float, float]]:
    """x-ranges of the text columns on a page; empty when the page is a single column.

    Narrow regions (under 60 % of the content width) are projected onto the x axis; the union
    of their x-ranges splits into groups wherever at least MIN_COLUMN_GAP points stay empty.
    Two or more groups that each hold real text are columns. Full-width regions (titles,
    banners) never make a column but are ordered around them by `reading_order`.
    """
    if len(regions) < 2:
        return []
    left = min(r.x0 for r in regions)
    right = max(r.x1 for r in regions)
    narrow = [r for r in regions if r.width < NARROW_SHARE * (right - left)]
    if len(narrow) < 2:
        return []
    groups: list[list[float]] = []
    chars: list[int] = []
    for r in sorted(narrow, key=lambda r: r.x0):
        if groups and r.x0 < groups[-1][1] + MIN_COLUMN_GAP:
            groups[-1][1] = max(groups[-1][1], r.x1)
            chars[-1] += r.chars
        else:
            groups.append([r.x0, r.x1])
            chars.append(r.chars)
    kept = [(g[0], g[1]) for g, c in zip(groups, chars, strict=True) if c >= MIN_COLUMN_CHARS]
    return kept if len(kept) >= 2 else _two_columns_despite(narrow)


def _two_columns_despite(narrow: Sequence[Region]) -> list[tuple[float, float]]:
    """Two columns that a few regions bridge: a centred title or author block above them, a code
    line running into the gutter. Without this one overflowing line read a whole two-column page
    as one column, its two columns' lines interleaved. The split is where a right column starts
    (some region's left edge) that leaves the least text straddling it, each side holding at least
    COLUMN_SHARE of the text and the straddlers at most STRADDLE_SHARE of it; none: []."""
    # the text left of and right of each candidate from sorted edges and running sums: summed
    # afresh per candidate, 10,000 snippets on one page (83 KB) took 68 s
    by_x1 = sorted((r.x1, r.chars) for r in narrow)
    by_x0 = sorted((r.x0, r.chars) for r in narrow)
    x1s, x0s = [x for x, _ in by_x1], [x for x, _ in by_x0]
    ending = [0, *itertools.accumulate(c for _, c in by_x1)]  # [k]: text of the k leftmost right edges
    starting = [0, *itertools.accumulate(c for _, c in by_x0)]  # [k]: text of the k leftmost left edges
    total = ending[-1]
    best: tuple[int, float] | None = None
    for g in sorted(set(x0s)):
        left = ending[bisect.bisect_right(x1s, g)]  # regions ending at or before g
        right = total - starting[bisect.bisect_left(x0s, g)]  # regions starting at or after g
        across = total - left - right
        if (min(left, right) >= max(COLUMN_SHARE * total, MIN_COLUMN_CHARS) and across <= STRADDLE_SHARE * total
                and (best is None or across < best[0])):
            best = (across, g)
    if best is None:
        return []
    g = best[1]
    lefts, rights = [r for r in narrow if r.x1 <= g], [r for r in narrow if r.x0 >= g]
    return [(min(r.x0 for r in lefts), max(r.x1 for r in lefts)), (g, max(r.x1 for r in rights))]


def _column_index(region: Region, columns: Sequence[tuple[float, float]]) -> int | None:
    """The column a region sits in, or None when it spans several (or none)."""
    hits = [i for i, (a, b) in enumerate(columns) if region.x0 < b and region.x1 > a]
    if len(hits) == 1:
        return hits[0]
    return None


def reading_order(
    regions: Sequence[Region], columns: Sequence[tuple[float, float]]
) -> list[Region]:
    """Regions in reading order: bands of columns read column by column, top to bottom.

    Regions are walked top to bottom; a region spanning several columns (a title, a wide
    table) closes the current band, so "title / two columns / full-width footer note" reads
    title, left column, right column, note. Without columns this is plain top-to-bottom order.
    """
    ordered = sorted(regions, key=lambda r: (round(r.y0, 1), r.x0))
    if not columns:
        return ordered
    out: list[Region] = []
    band: list[tuple[int, Region]] = []
    for r in ordered:
        col = _column_index(r, columns)
        if col is None:
            out.extend(x for _, x in sorted(band, key=lambda t: (t[0], t[1].y0)))
            band = []
            out.append(r)
        else:
            band.append((col, r))
    out.extend(x for _, x in sorted(band, key=lambda t: (t[0], t[1].y0)))
    return out


def _continues(a: Region, b: Region, gap_ratio: float, same_size: bool) -> bool:
    last, first = a.lines[-1], b.lines[0]
    gap = first.y0 - last.y1
    if not -1.0 <= gap < gap_ratio * last.height:
        return False
    if same_size and (abs(last.size - first.size) > 0.5 or last.bold != first.bold):
        return False
    overlap = min(a.x1, b.x1) - max(a.x0, b.x0)
    return overlap > 0 and abs(a.x0 - b.x0) < 15


def merge_adjacent(
    regions: Sequence[Region], gap_ratio: float = 0.5, same_size: bool = True
) -> list[Region]:
    """Merge consecutive regions (in reading order) that are lines of one paragraph.

    Some generators (and Tesseract) emit every line, or every few lines, as a block of its own.
    Blocks that follow each other within `gap_ratio` of a line height, share the left edge and
    (with `same_size`) the font size and weight are rejoined; headings, lists and paragraph
    breaks are split again later from the lines themselves.
    """
    out: list[Region] = []
    for r in regions:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.table is None
            and r.table is None
            and prev.lines
            and r.lines
            and _continues(prev, r, gap_ratio, same_size)
        ):
            prev.lines.extend(r.lines)
            prev.refit()
        else:
            out.append(r)
    return out


# --------------------------------------------------------------------------- running lines


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", text.lower())).strip()


def _margin_lines(regions: Iterable[Region], height: float) -> list[Line]:
    lines = sorted((ln for r in regions for ln in r.lines), key=lambda ln: ln.y0)
    top = [ln for ln in lines[:3] if ln.y1 <= MARGIN_ZONE * height]
    bottom = [ln for ln in lines[-3:] if ln.y0 >= (1 - MARGIN_ZONE) * height]
    return top + [ln for ln in bottom if ln not in top]


def _side_lines(regions: Iterable[Region], width: float) -> list[tuple[Line, str]]:
    """Lines wholly in the left or right SIDE_ZONE of the page with their keys, which carry
    the line's height on the page: a slide deck's navigation sidebar (beamer's lists every
    section on every slide) runs down the side, out of reach of the top and bottom margins,
    and sits at the same place on every slide, where text of the body (a table's first
    column) does not."""
    if width <= 0:
        return []
    return [
        (ln, f"{_key(ln.text)}@{round(ln.y0 / 4)}")
        for r in regions
        for ln in r.lines
        if ln.x1 <= SIDE_ZONE * width or ln.x0 >= (1 - SIDE_ZONE) * width
    ]


def running_line_keys(
    pages: Sequence[tuple[Sequence[Region], float]], widths: Sequence[float] = ()
) -> set[str]:
    """Digit-normalised texts of margin lines repeated on at least half of the pages (min 2);
    with the page `widths`, also those of lines of a sidebar repeated at the same height."""
    counts: Counter[str] = Counter()
    variants: dict[str, set[str]] = {}
    for index, (regions, height) in enumerate(pages):
        for ln in _margin_lines(regions, height):
            key = _key(ln.text)
            variants.setdefault(key, set()).add(ln.text.strip())
        counts.update({_key(ln.text) for ln in _margin_lines(regions, height)})
        if index < len(widths):
            counts.update({key for _, key in _side_lines(regions, widths[index])})
    need = max(2, math.ceil(0.5 * len(pages)))
    keys = {k for k, c in counts.items() if c >= need and k and not k.startswith("@")}
    # Headers that change with the chapter ("Chapter 2: Installation 7" on the even pages of
    # chapter 2 only) repeat on too few pages for the rule above, but they carry the page
    # number at one end and it changes from page to page.
    keys |= {
        k
        for k, c in counts.items()
        if c >= 2 and (k.startswith("#") or k.endswith("#")) and len(variants.get(k, ())) >= 2
        and sum(ch.isalpha() for ch in k) >= 3
    }
    return keys


def _lone_page_numbers(regions: Iterable[Region]) -> list[Line]:
    """The first and last line of the page (by position) when it is a bare page number ("7",
    "Page 7", "7 of 9", "- 7 -") set apart: alone across the page at its height and at least a
    line's height from the text next to it. Page numbers outside the margin zone (LaTeX's
    wide margins put them at 82 % of the height) stayed in the text, mid-paragraph when a
    paragraph runs on to the next page; a number that is a table cell shares its row with
    other cells, and one in a list or column of figures sits close to its neighbours."""
    lines = sorted((ln for r in regions for ln in r.lines), key=lambda ln: (ln.y0, ln.x0))
    if len(lines) < 2:
        return []
    sizes = sorted(ln.size for ln in lines)
    median = sizes[len(sizes) // 2]
    found = []
    for ln, neighbour, below in ((lines[0], lines[1], True), (lines[-1], lines[-2], False)):
        if ln.size > max(median, neighbour.size) * HEADING_SIZE_RATIO:
            continue  # a chapter's number set large above its title
        if not _PAGE_NUMBER.match(_key(ln.text)):
            continue
        if any(o is not ln and o.y0 < ln.y1 and o.y1 > ln.y0 for o in lines):
            continue  # another line at the same height: a table row, a header line
        gap = neighbour.y0 - ln.y1 if below else ln.y0 - neighbour.y1
        if gap >= ln.height:
            found.append(ln)
    return found


def strip_running_lines(
    regions: list[Region], height: float, keys: set[str], width: float = 0.0
) -> tuple[list[Region], int]:
    """Remove running headers/footers and sidebars (`keys`; a sidebar only with the page's
    `width`) and bare page numbers from the page margins."""
    doomed = {
        id(ln)
        for ln in _margin_lines(regions, height)
        if _key(ln.text) in keys or _PAGE_NUMBER.match(_key(ln.text))
    }
    doomed |= {id(ln) for ln, key in _side_lines(regions, width) if key in keys}
    doomed |= {id(ln) for ln in _lone_page_numbers(regions)}
    if not doomed:
        return regions, 0
    kept: list[Region] = []
    for r in regions:
        lines = [ln for ln in r.lines if id(ln) not in doomed]
        if lines:
            r.lines = lines
            r.refit()
            kept.append(r)
    return kept, len(doomed)


# --------------------------------------------------------------------------- headings


def _size_key(size: float) -> float:
    return round(size * 2) / 2


def body_font_size(lines: Iterable[Line]) -> float:
    """The most common font size, weighted by characters (10 when there is no text)."""
    counts: Counter[float] = Counter()
    for ln in lines:
        counts[_size_key(ln.size)] += len(ln.text.strip())
    return counts.most_common(1)[0][0] if counts else 10.0


def _headingish(ln: Line, max_words: int) -> bool:
    text = ln.text.strip()
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 2 and len(text.split()) <= max_words and not text.endswith((",", ";"))


@dataclass
class HeadingRanks:
    """Heading levels inferred from the document's fonts.

    Short lines set larger than the body size are headings, ranked by size (largest = 1);
    short bold lines at body size rank just below them ("bold-and-short").
    """

    body_size: float
    ranks: dict[float, int]
    bold_level: int  # 0 when bold is no heading signal (a document set mostly in bold)

    @classmethod
    def from_lines(cls, lines: Iterable[Line]) -> HeadingRanks:
        all_lines = list(lines)
        body = body_font_size(all_lines)
        chars: Counter[float] = Counter()
        words: Counter[float] = Counter()
        nlines: Counter[float] = Counter()
        for ln in all_lines:
            key = _size_key(ln.size)
            chars[key] += len(ln.text.strip())
            words[key] += len(ln.text.split())
            nlines[key] += 1
        total = sum(chars.values()) or 1
        body_sizes = {
            k
            for k, c in chars.items()
            if c >= BODY_SIZE_CHARS
            and c / total >= BODY_SIZE_SHARE
            and (words[k] / nlines[k] >= BODY_LINE_WORDS or c / total >= 2 * BODY_SIZE_SHARE)
        }
        big = sorted(
            {
                _size_key(ln.size)
                for ln in all_lines
                if ln.size >= body * HEADING_SIZE_RATIO
                and _size_key(ln.size) not in body_sizes
                and not (ln.mono and not ln.bold)
                and _headingish(ln, MAX_HEADING_WORDS)
            },
            reverse=True,
        )
        at_body = [ln for ln in all_lines if _size_key(ln.size) == body]
        body_chars = sum(len(ln.text.strip()) for ln in at_body) or 1
        bold_share = sum(len(ln.text.strip()) for ln in at_body if ln.bold) / body_chars
        bold_level = min(6, len(big) + 1) if bold_share <= MAX_BOLD_BODY_SHARE else 0
        return cls(body, {s: min(6, i + 1) for i, s in enumerate(big)}, bold_level)

    def level(self, ln: Line) -> int:
        """Heading level of a line, 0 for body text."""
        key = _size_key(ln.size)
        if (ln.mono and not ln.bold) or ln.tabular:
            return 0  # listings are set in a typewriter font; headings hardly ever are
        if key in self.ranks and _headingish(ln, MAX_HEADING_WORDS):
            return self.ranks[key]
        if (
            self.bold_level
            and ln.bold
            and ln.size >= self.body_size * 0.95
            and _headingish(ln, MAX_BOLD_HEADING_WORDS)
            and not ln.text.rstrip().endswith(".")
        ):
            return self.bold_level
        return 0


# --------------------------------------------------------------------------- table rows

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
                evidence: Callable[[Line], bool]) -> list[_Cell]:
    """The cells of the lines (of `near`: lines with their cells) under `ln` (`below`) or over
    it that lie within ROW_GAP of its height of it: a table's next or last rows, whether MuPDF
    made a row one line, a line a cell, or a line of each baseline of a row of tall symbols.
    Lines beside `ln` (another column) are not under or over it, nor those `evidence` refuses."""
    def gap(o: Line) -> float:
        return o.y0 - ln.y1 if below else ln.y0 - o.y1

    return [c for o, cells in near if o is not ln and o.x0 < ln.x1 and o.x1 > ln.x0
            and -0.3 * ln.height <= gap(o) <= ROW_GAP * ln.height and evidence(o) for c in cells]


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
    if _is_section_number(cells[0][2]) or (len(first) == 2 and all(map(_is_section_number, first))):
        return True
    return len(cells) > 1 and _is_section_number(cells[-1][2]) and any(map(_RTL.match, cells[0][2]))


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
    return _numbered(cells) and not ((paged or _unmapped_number(last)) and len(cells) > 2)


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

    def in_band(o: Line) -> bool:
        return height is not None and (o.y1 <= MARGIN_ZONE * height or o.y0 >= (1 - MARGIN_ZONE) * height)

    def evidence(o: Line, band: bool) -> bool:
        return band or not in_band(o)

    for ln in lines:
        if ln.heading or not rank(ln):
            continue
        head = cells_of[id(ln)]
        if _heads_no_table(head):
            continue
        reach = ROW_GAP * ln.height  # the lines that start in reach below it or end in reach above it
        near = order[bisect.bisect_left(tops, ln.y0 - reach - tallest):bisect.bisect_right(tops, ln.y1 + reach)]
        counts = functools.partial(evidence, band=in_band(ln))
        if any(_aligned(head, _cells_near(ln, near, below, counts)) for below in (True, False)):
            ln.tabular = True


# --------------------------------------------------------------------------- outline

# A title's number ("2.8", "Chapter 2", "A.1", "IV.") that the text or the outline may leave out.
_NUMBERING = re.compile(
    r"^\s*(?:(?:chapter|section|part|appendix|chap\.|sec\.|§)\s*)?"
    r"(?:\d+(?:[.\-]\d+)*(?:[.):]|\s+[-–—])?|[A-Z](?:[.\-]\d+)+[.):]?|(?:[IVXLC]+|[A-Z])(?:[.):]|\s+[-–—]))\s+",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:appendix|annex|anhang|part|chapter|book)\s+", re.IGNORECASE)
_ROMAN = re.compile(r"[IVXLC]{1,7}\.?")  # a chapter's bare "XXII" set apart from its title
_SUBNUMBER = re.compile(r"\d+(?:\.(?:\d+|[ivxlc]{1,5}))+\.?")  # "3.ii": a Roman sub-number
_CJK_NUMBER = re.compile(r"第\s*[0-9一二三四五六七八九十百零〇两]+\s*[章节部篇卷]|附\s*录\s*[A-Z0-9]?")
_RTL = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")  # Hebrew, Arabic, Syriac, Thaana, N'Ko
_TOKEN = re.compile(r"[^\W_]+")
MIN_TITLE_KEY = 4  # a shorter title (normalised) is found only where a heading line matches it


@dataclass
class OutlineEntry:
    """One entry of the PDF's outline (bookmarks): level (1 = top), title, 1-based page."""

    level: int
    title: str
    page: int

    @property
    def key(self) -> str:
        return title_key(self.title)

    @property
    def loose(self) -> str:
        return title_key(_NUMBERING.sub("", self.title, count=1))


def _norm(token: str) -> str:
    return unicodedata.normalize("NFKC", token).casefold()


def title_key(text: str) -> str:
    """A title reduced to its letters and digits, case-folded, ligatures expanded: whitespace,
    punctuation and line-end hyphens ("Col- ors") make no difference."""
    return "".join(_norm(m.group(0)) for m in _TOKEN.finditer(text))


def is_numbered(title: str) -> bool:
    """Whether a title starts with a section number ("2.8 Colors", "Chapter 2 ...", "A.1 ...")."""
    return _NUMBERING.match(title) is not None


def _is_section_number(text: str) -> bool:
    """Whether `text` is a section number alone ("8", "2.1.", "A.1", "IV.", "XXII", "3.ii",
    "Chapter 2", "Part I", an appendix's "A" or "Appendix D", "第一章", "附录A"), or glyphs a
    font left unmapped (private-use or U+FFFD: old-style digits) with dots between."""
    text = text.strip()
    m = _NUMBERING.match(f"{text} ")
    label = _LABEL.sub("", text, count=1)
    return ((m is not None and m.end() == len(text) + 1) or (len(label) == 1 and label.isupper())
            or _ROMAN.fullmatch(label) is not None or _SUBNUMBER.fullmatch(text) is not None
            or _CJK_NUMBER.fullmatch(text) is not None or _unmapped_number(text))


def _unmapped_number(text: str) -> bool:
    """Whether `text` is a short number some of whose glyphs the font left unmapped: private-use
    code points (old-style digits) or U+FFFD (a separator, Thai digits), maybe with digits,
    dots and an appendix's capital first (U+F732 "." U+F731; "3" U+FFFD "1"; "Ա" U+FFFD "1")."""
    private = [c for c in text if "\ue000" <= c <= "\uf8ff"]
    lost = text.count("\ufffd")
    known = [c for c in text if c == "." or c.isdigit()] + ([text[0]] if text[:1].isupper() else [])
    if not (private or lost) or len(text) > 8 or len(private) + lost + len(known) < len(text):
        return False
    # a glyph of its own unmapped is as often an icon or a symbol: alone, only two old-style digits
    return bool(known) or (not lost and len(private) <= 2)


def _loose_key(text: str) -> str:
    return title_key(_NUMBERING.sub("", text, count=1))


def _prefix_end(text: str, key: str, start: int = 0) -> int:
    """The end of the tokens of `text` from `start` whose key is `key`, or -1."""
    got = ""
    for m in _TOKEN.finditer(text, start):
        got += _norm(m.group(0))
        if got == key:
            return m.end()
        if not key.startswith(got):
            return -1
    return -1


@dataclass
class _Slot:
    """A line of a page in reading order, where it sits (region, index) and its heading rank."""

    region: Region
    line: Line
    rank: int
    first: bool  # the first line of its region (a paragraph's start)


def _next_line(a: _Slot, b: _Slot) -> bool:
    """Whether line b follows line a in one heading: in its region, or in the next one just below
    (a centred title's lines can each be a block of their own)."""
    return a.region is b.region or 0 < b.line.y0 - a.line.y0 < 1.6 * a.line.height


def _span_keys(slots: Sequence[_Slot], i: int) -> list[tuple[int, str, str]]:
    """(lines, key, loose key) of the runs of up to MAX_HEADING_LINES lines of one region from
    slot `i`, claimed or not (`_find_exact` stops at a claimed line: the keys are made once per
    page and tier, not once per entry, which cost seconds on an outline of thousands)."""
    out: list[tuple[int, str, str]] = []
    text = ""
    for k in range(MAX_HEADING_LINES):
        if i + k >= len(slots) or (k and not _next_line(slots[i + k - 1], slots[i + k])):
            break
        text = f"{text} {slots[i + k].line.text}"
        out.append((k + 1, title_key(text), _loose_key(text)))
    return out


def _find_exact(slots: Sequence[_Slot], e: OutlineEntry, headings: bool,
                spans: dict[int, list[tuple[int, str, str]]]) -> tuple[int, int] | None:
    """(first slot, lines) of the first run of unclaimed lines whose text is the entry's title,
    among heading lines only (`headings`) or starting a paragraph or set in the title's case.
    `spans` caches `_span_keys` by slot for one page and tier."""
    key, loose = e.key, e.loose
    for i, s in enumerate(slots):
        if (s.rank > 0) != headings:
            continue
        if i not in spans:
            spans[i] = _span_keys(slots, i)
        for n, k, lk in spans[i]:
            if slots[i + n - 1].line.entry >= 0:
                break  # a run ends at a line another entry claimed
            if (k == key or (loose and lk == loose)) and (
                headings or s.first or s.line.text.lstrip().startswith(e.title.split()[0])
            ):
                return i, n
            if len(k) >= len(key) and len(lk) >= len(loose):
                break
    return None


def _find_within_heading(slots: Sequence[_Slot], e: OutlineEntry) -> int | None:
    """A heading line that holds the title's words among others ("graphics/helper.rb" for the
    entry "Helper": prawn's manual heads each example with its file name)."""
    words = [_norm(m.group(0)) for m in _TOKEN.finditer(_NUMBERING.sub("", e.title, count=1))]
    if not words or len("".join(words)) < MIN_TITLE_KEY:
        return None
    n = len(words)
    for i, s in enumerate(slots):
        if s.rank <= 0 or s.line.entry >= 0:
            continue
        have = [_norm(m.group(0)) for m in _TOKEN.finditer(s.line.text)]
        if len(have) <= 2 * n + 3 and any(have[j:j + n] == words for j in range(len(have) - n + 1)):
            return i
    return None


def _split_title(s: _Slot, e: OutlineEntry) -> Line | None:
    """When the first line of a paragraph starts with the title (a run-in heading, or one set in
    the body font), cut the title off as a line of its own (returned) and keep the rest."""
    ln = s.line
    if not s.first or ln.entry >= 0 or len(e.key) < MIN_TITLE_KEY:
        return None
    end = _prefix_end(ln.text, e.key)
    if end < 0 and not _NUMBERING.match(e.title):  # "Colors" in the outline, "2.8 Colors ..." here
        m = _NUMBERING.match(ln.text)
        end = _prefix_end(ln.text, e.key, m.end()) if m else -1
    elif end < 0 and e.loose:  # "2.8 Colors" in the outline, "Colors. ..." here (not "Colors are")
        end = _prefix_end(ln.text, e.loose)
        if not ln.text[end:].lstrip(" ").startswith((".", ":", "—", "–", " - ")):
            end = -1
    rest = ln.text[end:].lstrip(" .:;—–-") if end > 0 else ""
    if end < 0 or not rest or ln.text[end:end + 1].isalnum():
        return None
    width = (ln.x1 - ln.x0) * end / max(1, len(ln.text))
    head = Line(ln.text[:end], ln.x0, ln.y0, ln.x0 + width, ln.y1, ln.size, ln.bold, ln.mono)
    ln.text, ln.x0 = rest, ln.x0 + width
    s.region.lines.insert(s.region.lines.index(ln), head)
    return head


def _claim(slots: Sequence[_Slot], i: int, n: int, e: OutlineEntry, index: int) -> None:
    """Mark lines i..i+n-1 as the entry's title, with the lines of their font heading next to them."""
    first, last = i, i + n - 1

    def joins(j: int, k: int) -> bool:  # slot j, next to the title's slot k, is more of the heading
        a, b = slots[j], slots[k]
        upper, lower = (b, a) if j > k else (a, b)
        return (a.rank > 0 and a.rank == b.rank and a.line.entry < 0 and _next_line(upper, lower)
                and 0 < lower.line.y0 - upper.line.y0 < 1.6 * upper.line.height)

    while last - first + 1 < MAX_HEADING_LINES and slots[first].rank > 0:
        if last + 1 < len(slots) and joins(last + 1, last):
            last += 1
        elif first > 0 and joins(first - 1, first):
            first -= 1
        else:
            break
    head = slots[first].region
    for s in slots[first:last + 1]:
        s.line.outline, s.line.entry = min(6, max(1, e.level)), index
        if s.region is not head:  # the title's lines go into one region (and one block)
            s.region.lines.remove(s.line)
            head.lines.append(s.line)
            s.region = head
    head.refit()


def mark_outline(
    pages: Sequence[tuple[int, Sequence[Region], bool]],
    outline: Sequence[OutlineEntry],
    rank: Callable[[Line], int],
) -> int:
    """Find each outline entry's title on its page (`pages`: number, regions in reading order,
    whether OCR read it) and mark those lines (`Line.outline`, `Line.entry`); returns how many
    entries were found. `rank` is a line's heading level from its font (0: body text).

    Per page, in order of preference: a font heading that is the title (letters and digits
    compared: case, spacing, hyphenation, ligatures and a number the other side leaves out
    make no difference); a font heading that holds the title's words; a paragraph or a line
    in the title's case that is the title; a paragraph that starts with the title, split there.
    """
    by_page: dict[int, list[int]] = {}
    for index, e in enumerate(outline):
        if e.page >= 1 and e.key:
            by_page.setdefault(e.page, []).append(index)
    slots_of = {
        number: [
            _Slot(r, ln, 0 if ocr else rank(ln), j == 0)
            for r in regions if r.table is None
            for j, ln in enumerate(r.lines)
        ]
        for number, regions, ocr in pages
        if number in by_page or number - 1 in by_page
    }
    found = 0
    missed: dict[int, list[int]] = {}
    for number in sorted(by_page):
        if number in slots_of:
            n, left = _mark_page(slots_of[number], outline, by_page[number])
            found += n
            if left and number + 1 in slots_of:
                missed[number + 1] = left
    # LaTeX's hyperref often anchors an entry at the foot of the page before its heading: an entry
    # not found on its page is looked for, as a heading or a whole line, at the top of the next
    for number, left in missed.items():
        found += _mark_page(slots_of[number], outline, left, tiers=("heading", "line"))[0]
    return found


def _mark_page(slots: list[_Slot], outline: Sequence[OutlineEntry], todo: list[int],
               tiers: Sequence[str] = ("heading", "within", "line", "split")) -> tuple[int, list[int]]:
    """Find the `todo` entries among a page's `slots`, tier by tier: (how many, those not found)."""
    found = 0
    for tier in tiers:
        spans: dict[int, list[tuple[int, str, str]]] = {}  # slot -> its runs' keys, this tier
        left = []
        if tier == "within":  # "Fill and stroke" before "Graphics" for "graphics/fill_and_stroke.rb"
            todo = sorted(todo, key=lambda index: -len(outline[index].loose))
        for index in todo:
            e = outline[index]
            hit: tuple[int, int] | None = None
            if tier in ("heading", "line"):
                hit = _find_exact(slots, e, tier == "heading", spans)
            elif tier == "within":
                i = _find_within_heading(slots, e)
                hit = (i, 1) if i is not None else None
            else:
                for i, s in enumerate(slots):
                    if (head := _split_title(s, e)) is not None:
                        slots.insert(i, _Slot(s.region, head, 0, True))
                        s.first = False
                        hit = (i, 1)
                        break
            if hit is None:
                left.append(index)
                continue
            _claim(slots, hit[0], hit[1], e, index)
            found += 1
        todo = left
    return found, todo
