"""What a scanned page's OCR text needs before the PDF layout rules can read it.

Tesseract (through PyMuPDF's OCR text page) gives words and lines, but no fonts: no bold, no
monospace, and sizes that are only the height of each line's ink (10.3 for one body line, 8.2
for the next, 10.3 for "1.4 Notation"). So the font rules that find a text layer's headings
find nothing on a scan, and MuPDF groups a two-column page's lines into blocks that cross the
gutter. Here: a page's gutters found where several lines of words leave the same gap (a table's
cells of a word or two make none), lines cut there and into runs that stay in one column,
specks of dust dropped, and headings read from what a scan still shows: the first page's line
set far larger than the body (its title), and short lines opening with a section number ("2
Sectioning and equations", "1.1 Legalese") that is printed once and not in a list of them.
Measured on real PDFs rasterised (benchmarks/corpora/gen_pdf_scanned.py) and on 39 pages of 16
other scanned documents: the numbers are in docs/retrieval.md.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assets.parsing.pdf_layout import MAX_BOLD_HEADING_WORDS, Line, Region

__all__ = [
    "Gutters", "across_gutter", "despeck", "mark_ocr_headings", "ocr_columns", "ocr_gutters", "ocr_line_kept",
    "split_at_gutters",
]

# Lines on one baseline further apart than this many line heights are in two columns (a word
# gap is about a third of one, a gutter two or more) ...
OCR_WORD_GAP = 1.2
# ... and a line further below the last of a run than this starts a new one
OCR_LINE_GAP = 1.5
GUTTER_LINES = 4  # ... and a gutter is a gap that this many lines leave open in one place
GUTTER_SIDE_WORDS = 4  # ... with this many words on either side (a table's cells hold fewer)
GUTTER_SLACK = 2.0  # points a gap may fall short of a gutter's core at either side
# the first page's largest line at least this many times the body's ink height is its title
# (OCR heights of one body font spread from 0.8 to 1.15 of their median; titles measured
# 1.3-2.5)
OCR_TITLE_RATIO = 1.3
OCR_TITLE_ADVANCE = 1.2  # ... and its letters this many times as wide
OCR_TITLE_MAX_ADVANCE = 4.0  # ... but not more: "Name   Name", two table cells, is no title
OCR_HEADING_ADVANCE = 1.15  # letters this much wider than the body's ...
OCR_HEADING_HEIGHT = 1.1  # ... on a line this much taller: a heading's font
# "1 Introduction", "2.3.1 Using make", "2.3.1. Using make", "A.1 Subsection": a section number,
# with a trailing period only after two parts or more ("1." and "1)" open enumerations), then a
# capitalised word
_NUMBERED = re.compile(r"(?:\d{1,2}|[A-Z])(?:(?:\.\d{1,2}){1,4}\.?)?\s+[A-Z][\w'’-]*")
# a section number set a quad before its title: the gap after it is no gutter
_SECTION_NUMBER = re.compile(r"(?:\d{1,2}|[A-Z])(?:\.\d{1,2}){0,4}\.?")
_APPENDIX_ALONE = re.compile(r"[A-Z]\s")  # "A Note on ..." is a sentence, not appendix A
_ENDS_SENTENCE = re.compile(r"[.,;:]$")
_PAGE_NUMBER_END = re.compile(r"\s\d{1,4}$")  # "5 INTERPRETING THE RESULTS 8": a running head
_LEADER = re.compile(r"(?:\.\s?){3}")  # a contents entry's dots, "....." or ". . ."
_WORD = re.compile(r"[^\W\d_]{3}")


Spans = list[dict[str, Any]]


@dataclass
class Gutters:
    """The gutters of an OCR'd page, left to right: the x-range every line beside it leaves
    open (from the rightmost end of a line on its left to the leftmost start on its right)."""

    cores: list[tuple[float, float]] = field(default_factory=list)
    wide: float = 0.0  # the narrowest gap between two words that is no word space

    @property
    def xs(self) -> list[float]:
        return [(a + b) / 2 for a, b in self.cores]

    def __bool__(self) -> bool:
        return bool(self.cores)


def ocr_line_kept(text: str) -> bool:
    """Whether an OCR line holds a letter or digit: dust and stains read as ":", "." or "—"
    lines of their own (20 on one scanned page of a LaTeX article)."""
    return any(c.isalnum() for c in text)


def across_gutter(left: str, x0: float, x1: float, gutters: Gutters) -> bool:
    """Whether words with the gap `x0`-`x1` between them, `left` the text before the gap, lie in
    two columns: the gap spans a gutter's core (the x-range all its lines leave open), or is no
    word space and holds the middle and half of it (Tesseract's boxes of a column's first words
    reach into the core; a title set across both columns has a word gap somewhere in it, a small
    part), and what comes before is no section number set a quad before its title ("1  Figures")."""
    def spans(a: float, b: float) -> bool:
        if x0 <= a + GUTTER_SLACK and b - GUTTER_SLACK <= x1:  # the whole core, however narrow
            return True
        return x1 - x0 > gutters.wide and x0 < (a + b) / 2 < x1 and min(x1, b) - max(x0, a) >= 0.5 * (b - a)

    return any(spans(a, b) for a, b in gutters.cores) and not _SECTION_NUMBER.fullmatch(left.strip())


def _worded(span: dict[str, Any]) -> bool:
    """A span holding a letter or digit: not a space, not a speck of dust read as ":" or "_"."""
    return ocr_line_kept(span["text"])


def despeck(spans: Spans, gutters: Gutters) -> Spans:
    """A line's spans without the specks of dust (punctuation alone) that lie in a gutter or,
    where the line has words, further than a word space from any of them: in a gutter they hid
    the gap, in a sentence they read as "_". A line of punctuation alone elsewhere (a code
    line's "..", which Tesseract sets apart) is kept until its baseline's line is joined."""
    words = [s["bbox"] for s in spans if _worded(s)]
    wide = gutters.wide

    def dust(s: dict[str, Any]) -> bool:
        x0, x1 = s["bbox"][0], s["bbox"][2]
        if any(a <= (x0 + x1) / 2 <= b for a, b in gutters.cores):
            return True
        return bool(words) and not any(b[0] - x1 <= wide and x0 - b[2] <= wide for b in words)

    return [s for s in spans if not s["text"].strip() or _worded(s) or not dust(s)]


def _gaps(spans: Spans, wide: float) -> list[tuple[float, float, int]]:
    """The gaps wider than `wide` between consecutive words of a line: (x0, x1, the fewer words
    of the two pieces of the line it lies between)."""
    pieces: list[tuple[float, float, int]] = []  # x0, x1, words of each piece
    for s in spans:
        if not _worded(s):
            continue
        x0, x1, words = s["bbox"][0], s["bbox"][2], len(s["text"].split())
        if pieces and x0 - pieces[-1][1] <= wide:
            pieces[-1] = (pieces[-1][0], x1, pieces[-1][2] + words)
        else:
            pieces.append((x0, x1, words))
    return [(a[1], b[0], min(a[2], b[2])) for a, b in itertools.pairwise(pieces)]


def ocr_gutters(page_dict: dict[str, Any]) -> Gutters:
    """The gutters of an OCR'd page: gaps between words wider than OCR_WORD_GAP median line
    heights with GUTTER_SIDE_WORDS words or more on either side, in a place that GUTTER_LINES
    such lines or more leave open (a column's edge runs down the page; a justified heading's
    wide space, or a gap Tesseract left between two words of a title, is no gutter, and the
    cells of a table, a word or two each, keep their rows), each at the median middle of its
    gaps. Empty on a page of one column."""
    raw = [ln for b in page_dict["blocks"] if b.get("type") == 0 for ln in b["lines"]]
    if not raw:
        return Gutters()
    wide = OCR_WORD_GAP * statistics.median(ln["bbox"][3] - ln["bbox"][1] for ln in raw)
    raw = [ln for ln in raw if any(_worded(s) for s in ln["spans"])]  # dust sorts between two columns' lines
    gaps = [g for ln in raw for g in _gaps(ln["spans"], wide)]
    # lines MuPDF already split at the gutter leave the gap between two of its lines
    by_row = sorted((ln["bbox"][1], ln["bbox"][0], ln["bbox"][2], _words(ln["spans"])) for ln in raw)
    gaps += [(a[2], b[1], min(a[3], b[3])) for a, b in itertools.pairwise(by_row)
             if abs(a[0] - b[0]) < 0.5 * wide and b[1] - a[2] > wide]
    wordy = sorted((g[0], g[1]) for g in gaps if g[2] >= GUTTER_SIDE_WORDS)
    confirmed = [g for g in wordy if sum(1 for h in wordy if _alike(g, h)) >= GUTTER_LINES]
    clusters: list[list[tuple[float, float]]] = []
    for g in confirmed:  # by start: a gap that opens before every gap of a cluster closes is in it
        if clusters and g[0] < min(h[1] for h in clusters[-1]):
            clusters[-1].append(g)
        else:
            clusters.append([g])
    return Gutters([_core(c) for c in clusters], wide)


def _core(gaps: list[tuple[float, float]]) -> tuple[float, float]:
    """The x-range all of a gutter's gaps leave open; their middles' median where Tesseract's
    boxes leave none."""
    a, b = max(g[0] for g in gaps), min(g[1] for g in gaps)
    if a < b:
        return a, b
    mid = statistics.median((g[0] + g[1]) / 2 for g in gaps)
    return mid, mid


def _words(spans: Spans) -> int:
    return sum(len(s["text"].split()) for s in spans)


def _alike(g: tuple[float, float], h: tuple[float, float]) -> bool:
    """Two gaps in one place: each lies mostly (half or more) within the other."""
    both = min(g[1], h[1]) - max(g[0], h[0])
    return both >= 0.5 * (g[1] - g[0]) and both >= 0.5 * (h[1] - h[0])


def split_at_gutters(spans: Spans, gutters: Gutters) -> list[tuple[Spans, tuple[float, ...]]]:
    """A MuPDF line's spans (Tesseract's words and the spaces between) cut where one of the
    page's gutters runs between two words, each piece with its box: MuPDF joins words of both
    columns that share a baseline into one line."""
    pieces: list[Spans] = []
    last_x1: float | None = None
    for s in despeck(spans, gutters):
        inked = _worded(s)
        if inked and last_x1 is not None and across_gutter("".join(x["text"] for x in pieces[-1]),
                                                          last_x1, s["bbox"][0], gutters):
            pieces.append([])
        if not pieces:
            pieces.append([])
        pieces[-1].append(s)
        if inked:
            last_x1 = s["bbox"][2]
    out: list[tuple[Spans, tuple[float, ...]]] = []
    for piece in pieces:
        boxes = [s["bbox"] for s in piece if s["text"].strip()] or [s["bbox"] for s in piece]
        out.append((piece, (min(b[0] for b in boxes), min(b[1] for b in boxes),
                            max(b[2] for b in boxes), max(b[3] for b in boxes))))
    return out


def _slot(ln: Line, gutters: Gutters) -> tuple[int, ...]:
    """Where a line lies against each gutter: -1 left of it, 1 right of it, 0 across it."""
    return tuple(-1 if ln.x1 <= g else 1 if ln.x0 >= g else 0 for g in gutters.xs)


def ocr_columns(lines: list[Line], gutters: Gutters) -> list[list[Line]]:
    """An OCR text block's lines cut into runs that stay in one column. MuPDF groups the lines
    of a scanned two-column page into one block, left and right lines alternating ("... layout
    the" / "use quantumarticle for ..."): read as written, every sentence ran into the next
    column's. A line joins the latest run on its side of every gutter when it follows that
    run's last line closely (or shares its baseline); `reading_order` then reads the runs column
    by column. A page without gutters keeps its blocks whole: a table's cells, Tesseract's
    lines of one word each, stay in their rows."""
    if not gutters:
        return [lines] if lines else []
    runs: list[list[Line]] = []
    for ln in lines:
        slot = _slot(ln, gutters)
        run = next((r for r in reversed(runs) if _slot(r[-1], gutters) == slot), None)
        if run is not None and ln.y0 - run[-1].y1 < OCR_LINE_GAP * run[-1].height:
            run.append(ln)
        else:
            runs.append([ln])
    return runs


def _advance(ln: Line) -> float:
    """Points per character: grows with the font size, not with a box Tesseract stretched."""
    return (ln.x1 - ln.x0) / max(1, len(ln.text.strip()))


def _body(lines: Iterable[Line]) -> tuple[float, float]:
    """The median ink height and advance of the scans' lines of prose (six words or more)."""
    prose = [ln for ln in lines if len(ln.text.split()) >= 6]
    if not prose:
        return 0.0, 0.0
    return statistics.median(ln.height for ln in prose), statistics.median(_advance(ln) for ln in prose)


def _is_title(ln: Line, height: float, advance: float) -> bool:
    """A few words set far larger than the body: taller *and* wider per character (a line's box
    grows with a formula or a stain beside it, its letters do not), mostly letters (not a page
    number, not a leader Tesseract read as "eee ee eee 28")."""
    text = ln.text.strip()
    letters = sum(c.isalpha() for c in text)
    return (ln.height >= OCR_TITLE_RATIO * height
            and OCR_TITLE_ADVANCE * advance <= _advance(ln) <= OCR_TITLE_MAX_ADVANCE * advance
            and len(text.split()) <= MAX_BOLD_HEADING_WORDS and not _ENDS_SENTENCE.search(text)
            and letters >= 0.6 * len(text.replace(" ", "")) and _WORD.search(text) is not None
            and not _LEADER.search(text) and text.count(",") < 2)  # "myfigap, 13 whole, 10": an index row


def _section_level(ln: Line, column_width: float, large: bool) -> int:
    """The level a numbered section heading's number gives ("2" 1, "2.1" and "2.1." 2), or 0
    where the line reads as something else: a long line, one ending a sentence or in a page
    number (a running head), one holding a contents entry's dot leader or several commas (an
    affiliation), one of body size running across most of its column (a wrapped line of prose
    that happens to open with a number; a `large` one is a heading however long)."""
    text = ln.text.strip()
    m = _NUMBERED.match(text)
    if m is None or (_APPENDIX_ALONE.match(text) and "." not in m.group()):
        return 0
    if sum(c.isalpha() for c in text[len(m.group().split()[0]):]) < 4:  # "7 J", "1 TE": specks
        return 0
    if (len(text.split()) > MAX_BOLD_HEADING_WORDS or _ENDS_SENTENCE.search(text) or text.count(",") > 1
            or _LEADER.search(text) or _PAGE_NUMBER_END.search(text)):
        return 0
    if ln.x1 - ln.x0 > 0.7 * column_width and not large:
        return 0
    return m.group().split()[0].rstrip(".").count(".") + 1


def _section_number(ln: Line) -> str:
    return ln.text.split()[0].rstrip(".")


def _listed(lines: Sequence[Line], candidates: list[int]) -> set[int]:
    """Of the indexes of a page's numbered lines, those that are entries of a list rather than
    headings: three or more in a row with no other line between (a contents page without
    leaders, a page with line numbers), unless each opens a part of the one before ("6", "6.1",
    "6.1.1": a chapter's headings stacked)."""
    out: set[int] = set()
    for _, group in itertools.groupby(enumerate(candidates), key=lambda t: t[1] - t[0]):
        run = [i for _, i in group]
        numbers = [_section_number(lines[i]) for i in run]
        if len(run) >= 3 and not all(b.startswith(a + ".") for a, b in itertools.pairwise(numbers)):
            out.update(run)
    return out


def _column_width(ln: Line, prose: Sequence[Line]) -> float:
    """The median width of the lines of prose that share `ln`'s column (overlap it across):
    what a line running across its column measures. Without any, the line's own width."""
    widths = [p.x1 - p.x0 for p in prose if min(p.x1, ln.x1) > max(p.x0, ln.x0)]
    return statistics.median(widths) if widths else ln.x1 - ln.x0


def _contents_page(lines: Sequence[Line]) -> bool:
    """A table of contents: a quarter of its lines (five at least) hold a dot leader. Its
    entries open with section numbers too, and would each make a heading."""
    leaders = sum(1 for ln in lines if _LEADER.search(ln.text))
    return leaders >= 5 and leaders >= 0.25 * len(lines)


def _page_headings(lines: Sequence[Line], height: float, advance: float, first: bool) -> None:
    """Mark one OCR'd page's headings: on the `first` page its title (the largest-set line that
    reads as one), and numbered section headings; a heading's next line, close below it, set as
    large and ending no sentence, is the rest of its title ("2.5 How can R" / "be installed?")."""
    def large(ln: Line) -> bool:  # a heading's font: wider letters and a taller line (a running
        # head's gap before its page number widens the letters' average, not the line's height)
        return _advance(ln) >= OCR_HEADING_ADVANCE * advance and ln.height >= OCR_HEADING_HEIGHT * height

    titles = [ln for ln in lines if first and not ln.outline and _is_title(ln, height, advance)
              and not _NUMBERED.match(ln.text.strip())]  # a numbered line is a section's heading
    if titles:
        max(titles, key=_advance).heading = 1
    prose = [ln for ln in lines if len(ln.text.split()) >= 6]
    levels = {} if _contents_page(lines) else {
        i: level for i, ln in enumerate(lines)
        if not ln.outline and not ln.heading and (level := _section_level(ln, _column_width(ln, prose), large(ln)))}
    # a section number is printed once: one that repeats numbers the rows of a listing
    numbers = Counter(_section_number(lines[i]) for i in levels)
    listed = _listed(lines, sorted(levels))
    prev: Line | None = None
    for i, ln in enumerate(lines):
        if i in levels and i not in listed and numbers[_section_number(ln)] == 1:
            ln.heading = min(6, levels[i] + 1)
        elif (prev is not None and prev.heading and not ln.heading and not ln.outline and large(ln)
              and 0 <= ln.y0 - prev.y1 < prev.height and len(ln.text.split()) <= MAX_BOLD_HEADING_WORDS
              and not _ENDS_SENTENCE.search(ln.text.strip())):
            ln.heading = prev.heading
        prev = ln


def mark_ocr_headings(pages: Sequence[Sequence[Region]]) -> None:
    """Give headings to the lines of OCR'd pages (`Line.heading`): on the first page with text,
    a line of a few words set at least OCR_TITLE_RATIO times the body's height is level 1 (the
    title; elsewhere such lines were page numbers and leaders read as letters); a numbered
    section heading its number's depth plus one. Other pages' lines are left to the font rules."""
    height, advance = _body(ln for regions in pages for r in regions for ln in r.lines)
    if not height:
        return
    first = True
    for regions in pages:
        lines = [ln for r in regions for ln in r.lines]
        _page_headings(lines, height, advance, first)
        first = first and not lines
