"""Page geometry for the PDF parser: lines, regions, columns, running headers, heading ranks.

The outline's titles are `pdf_outline`'s, the rows of unruled tables `pdf_table_rows`'.

Pure functions over small dataclasses (no PyMuPDF objects), so layout rules can be unit-tested
with hand-made coordinates. PDF units are points, y grows downwards.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "HeadingRanks",
    "Line",
    "Region",
    "body_font_size",
    "columns_of",
    "is_rtl",
    "merge_adjacent",
    "reading_order",
    "running_line_keys",
    "strip_running_lines",
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


def is_rtl(text: str) -> bool:
    """Whether `text` holds a letter of a right-to-left script (Hebrew, Arabic, Syriac, ...)."""
    return any(unicodedata.bidirectional(ch) in ("R", "AL") for ch in text)


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
