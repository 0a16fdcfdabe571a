"""PDF parsing with PyMuPDF, routed page by page.

Each page takes the cheapest route that reads it correctly, recorded in `block.meta["route"]`
and in the page's metrics:

* ``text``   – a single-column text layer: MuPDF blocks in top-to-bottom order;
* ``layout`` – several columns (read column by column) and/or ruled tables (found with
  `page.find_tables()`, emitted as Markdown and cut out of the running text: `pdf_tables`);
* ``ocr``    – no usable text layer but images covering the page: Tesseract through
  `page.get_textpage_ocr`. When OCR is disabled or not installed such a page raises `NeedsOCR`:
  a scan must never be indexed as an empty document.

Across pages: running headers/footers and page numbers are removed, headings come from font
metrics (size rank over the body size, or bold-and-short; not a table's header row set without
rules, `mark_table_rows`), words hyphenated at line ends are rejoined, and a table continued on
the next page gets the header of its first part.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from assets.parsing.ocr import (
    ESTIMATED_PAGES_KEY,
    find_tessdata,
    ocr_is_deferred,
    ocr_unavailable_reason,
    placeholder_blocks,
)
from assets.parsing.pdf_layout import (
    HEADING_SIZE_RATIO,
    MAX_HEADING_LINES,
    MAX_HEADING_WORDS,
    HeadingRanks,
    Line,
    Region,
    columns_of,
    is_rtl,
    merge_adjacent,
    reading_order,
    running_line_keys,
    strip_running_lines,
)
from assets.parsing.pdf_ocr import (
    Gutters,
    across_gutter,
    mark_ocr_headings,
    ocr_columns,
    ocr_gutters,
    ocr_line_kept,
    split_at_gutters,
)
from assets.parsing.pdf_outline import OutlineEntry, is_numbered, mark_outline, title_key
from assets.parsing.pdf_table_rows import TableRun, join_table_regions, mark_table_rows, table_runs
from assets.parsing.pdf_tables import Table, cut_tables, join_split_tables, page_tables
from assets.parsing.textutil import (
    clean_inline,
    join_lines,
    markdown_table,
    normalize_text,
    table_header_lines,
)
from assets.parsing.toc import toc_entries, toc_entry
from connectors.config import ParseConfig
from connectors.documents import Block, BlockKind, ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, EncryptedDocument, NeedsOCR, raise_if_interrupt
from quality.metrics import measurable_text, page_metrics, word_share

__all__ = ["parse_pdf"]

_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP  # ligatures expanded
MIN_TEXT_CHARS = 20  # fewer characters than this is no usable text layer
SCAN_COVER = 0.25  # images covering this share of a text-less page make it a scan
STAMPED_SCAN_COVER = 0.8  # ... or this share with under STAMPED_SCAN_CHARS of text (a stamp)
STAMPED_SCAN_CHARS = 100
SLIDE_ASPECT = 1.25  # a landscape page at least this much wider than high ...
SLIDE_MAX_HEIGHT = 560.0  # ... and at most this high (beamer: 272 pt, PowerPoint: 540) is a slide
SLIDE_TITLE_ZONE = 0.25  # top share of a slide its frame title sits in
BAD_GLYPH_SHARE = 0.2  # U+FFFD share above which a text layer is unusable
JUNK_LAYER_WORD_SHARE = 0.5  # a full-page scan's text layer with fewer word-like tokens is junk
MIN_OUTLINE_FOUND = 2  # outline entries found in the text before the outline gives the headings
# words past which a run of close lines in a heading font is a paragraph set in it: twice the
# longest single heading line (a title of three full lines stays a heading)
PROSE_HEADING_WORDS = 2 * MAX_HEADING_WORDS
_BULLET = re.compile(r"^\s*(?:[•◦▪▫●○■□‣⁃∙·*–-]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_BULLET_GLYPH = re.compile(r"^\s*[•◦▪▫●○■□‣⁃∙·*–-]\s+")
# the heading that ends a paper's title block (`_demote_front_matter`), in the languages of the
# journal and thesis templates swept (English, French, Portuguese, Spanish, German, Italian)
_ABSTRACT = re.compile(r"^\W*(?:abstract|summary|r[ée]sum[ée]|resumo|resumen|zusammenfassung|sommario|riassunto)\W*$",
                       re.I)
_SPACING_ACCENTS = re.compile(r"[\u00b4`\u00a8\u02c6\u02dc\u02d8\u02c7]")  # "R´esum´e": TeX's accents set apart
_WORD = re.compile(r"(?<!\S)[^\W\d_]{2,}(?!\S)")  # a word of letters alone
_CONTENTS = re.compile(r"^\W*(?:(?:table of )?contents|sumário|sommaire|inhalt(?:sverzeichnis)?|índice)\W*$", re.I)
_CAPTION = re.compile(r"^(?:figure|fig\.|table|chart|exhibit|plate)\s+[\dIVX]+[.:]?\s", re.I)
_LEADER_NUMBER = re.compile(r"\s*(?:(?:[.·…]\s*)+(?:\d{1,4}|[ivxlcdm]{1,6})?|\d{1,4})\s*", re.IGNORECASE)
_BAD_TITLE = re.compile(
    r"^(?:untitled|document\d*|slide \d+|.*\.(?:docx?|pdf|tex|indd|pptx?))$", re.IGNORECASE
)
# the lookbehind starts a word only at its first letter: without it a long run of letters
# before a hyphen was tried from every position (quadratic)
_COMPOUND = re.compile(r"(?<![^\W\d_])[^\W\d_]+-[^\W\d_]+")

_TOOLS_READY = False


@dataclass
class _Page:
    number: int  # 1-based
    width: float
    height: float
    regions: list[Region]
    image_cover: float
    route: str = "text"
    columns: int = 1
    tables: int = 0
    stripped_lines: int = 0
    error: str | None = None
    blocks: list[Block] = field(default_factory=list)


def _quiet_mupdf() -> None:
    """MuPDF prints repair warnings to stderr; collect them instead (once per process)."""
    global _TOOLS_READY
    if not _TOOLS_READY:
        pymupdf.TOOLS.mupdf_display_errors(False)
        pymupdf.TOOLS.mupdf_display_warnings(False)
        pymupdf.no_recommend_layout()
        _TOOLS_READY = True


def _open(data: bytes, warnings: list[str]) -> pymupdf.Document:
    _quiet_mupdf()
    pymupdf.TOOLS.reset_mupdf_warnings()
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as e:  # MuPDF raises several types for bad bytes
        raise_if_interrupt(e)
        raise CorruptDocument(f"PDF cannot be opened: {e}") from None
    if doc.needs_pass:
        doc.close()
        raise EncryptedDocument("PDF is password-protected: a user password is needed to open it")
    library = pymupdf.TOOLS.mupdf_warnings().replace("\n", "; ")
    if doc.page_count == 0:
        repaired = doc.is_repaired
        doc.close()
        if not repaired and not library:  # well formed, with an empty page tree: nothing to read
            raise EmptyDocument("PDF has no pages (its page tree is empty)")
        if b"%%EOF" not in data[-2048:]:
            raise CorruptDocument(
                f"PDF is truncated (no %%EOF marker) and no page could be recovered from what "
                f"is left ({library or 'no page tree'})"
            )
        raise CorruptDocument(f"PDF is damaged: no page could be recovered ({library or 'no page tree'})")
    if doc.is_repaired:
        if b"%%EOF" not in data[-2048:]:
            n = doc.page_count
            doc.close()
            raise CorruptDocument(
                f"PDF is truncated (no %%EOF marker; MuPDF rebuilt {n} page(s) from what is "
                f"left, so content is missing): {library}"
            )
        warnings.append(f"PDF cross-reference table was damaged and rebuilt: {library}")
    return doc


def _is_bold(span: dict[str, Any]) -> bool:
    font = span.get("font", "").lower()
    return bool(span["flags"] & 16) or any(w in font for w in ("bold", "black", "heavy", "semib"))


def _is_mono(span: dict[str, Any]) -> bool:
    font = span.get("font", "").lower()
    return bool(span["flags"] & 8) or any(w in font for w in ("mono", "courier", "consol"))


def _same_visual_line(prev: Line, line: Line) -> bool:
    """Whether `line`, on `prev`'s baseline, continues it to the right, or is the title that
    `prev`, a dot leader and/or page number, belongs to: ReportLab writes a contents entry's
    leader and page number before its title ("1.7 Getting Involved" / ". . . 8" became a
    heading and a paragraph, escaping `_demote_toc_entries`). Anything else to the left (a
    LaTeX margin note) stays a line of its own."""
    if line.x0 >= prev.x1 - 1:
        return True
    return line.x1 <= prev.x0 + 1 and bool(_LEADER_NUMBER.fullmatch(prev.text)) and not is_rtl(line.text)


def _line(spans: list[dict[str, Any]], bbox: Sequence[float], ocr: bool) -> Line | None:
    """One visual line from MuPDF spans, or None where it holds no text."""
    inked = [s for s in spans if s["text"].strip()]
    if not inked:
        return None
    sizes: dict[float, int] = {}
    for s in inked:
        sizes[round(s["size"], 1)] = sizes.get(round(s["size"], 1), 0) + len(s["text"])
    x0, y0, x1, y1 = bbox
    return Line(
        text="".join(s["text"] for s in spans),
        x0=x0,
        y0=y0,
        x1=x1,
        y1=y1,
        size=max(sizes, key=sizes.__getitem__),
        bold=not ocr and all(_is_bold(s) for s in inked),
        mono=not ocr and all(_is_mono(s) for s in inked),
    )


def _block_lines(block: dict[str, Any], gutters: Gutters | None) -> list[Line]:
    """A MuPDF text block's visual lines, spans on one baseline merged; with OCR (`gutters` not
    None) neither a line nor a merge crosses one of the page's gutters, and a line of
    punctuation alone (dust) is dropped once merged (a code line's ".." is kept)."""
    lines: list[Line] = []
    ocr = gutters is not None
    for raw in block["lines"]:
        pieces = split_at_gutters(raw["spans"], gutters) if gutters is not None else [(raw["spans"], raw["bbox"])]
        for spans, bbox in pieces:
            line = _line(spans, bbox, ocr)
            if line is None:
                continue
            prev = lines[-1] if lines else None
            if (prev and abs(prev.y0 - line.y0) < 0.5 * prev.height and _same_visual_line(prev, line)
                    and not (gutters and across_gutter(prev.text, prev.x1, line.x0, gutters))):
                # Same baseline: one visual line that MuPDF split at a wide gap (its pieces kept:
                # a table row's cells, `mark_table_rows`).
                prev.cells = (prev.cells or [(prev.x0, prev.x1, prev.text)]) + [(line.x0, line.x1, line.text)]
                if line.x0 >= prev.x1 - 1:
                    prev.text = f"{prev.text.rstrip()} {line.text.lstrip()}"
                else:
                    prev.text = f"{line.text.rstrip()} {prev.text.lstrip()}"
                prev.x0, prev.x1 = min(prev.x0, line.x0), max(prev.x1, line.x1)
                prev.y1 = max(prev.y1, line.y1)
                prev.bold, prev.mono = prev.bold and line.bold, prev.mono and line.mono
                continue
            lines.append(line)
    return [ln for ln in lines if ocr_line_kept(ln.text)] if gutters is not None else lines


def _regions(page_dict: dict[str, Any], ocr: bool) -> list[Region]:
    """MuPDF text blocks → Regions of visual lines (spans on one baseline merged); an OCR'd
    block is cut into runs of lines that stay in one column (`ocr_columns`)."""
    regions: list[Region] = []
    gutters = ocr_gutters(page_dict) if ocr else None
    for b in page_dict["blocks"]:
        if b.get("type") != 0:
            continue
        lines = _block_lines(b, gutters)
        for group in ocr_columns(lines, gutters) if gutters is not None else [lines] if lines else []:
            x0, y0, x1, y1 = b["bbox"]
            region = Region(x0, y0, x1, y1, lines=group)
            region.refit()
            regions.append(region)
    return regions


def _image_cover(page: pymupdf.Page) -> float:
    area = abs(page.rect) or 1.0
    covered = 0.0
    for info in page.get_image_info():
        covered += abs(pymupdf.Rect(info["bbox"]) & page.rect)
    return min(1.0, covered / area)


def _needs_ocr(regions: list[Region], image_cover: float) -> bool:
    text = "".join(ln.text for r in regions for ln in r.lines)
    chars = len(text.strip())
    unreadable = chars and text.count("\ufffd") / chars > BAD_GLYPH_SHARE
    if (chars < MIN_TEXT_CHARS or unreadable) and image_cover >= SCAN_COVER:
        return True
    if image_cover >= STAMPED_SCAN_COVER and chars < STAMPED_SCAN_CHARS:
        return True
    # A scan whose invisible OCR layer (from the scanner) is junk: read the image again.
    return image_cover >= STAMPED_SCAN_COVER and word_share(text) < JUNK_LAYER_WORD_SHARE


def _read_pages(doc: pymupdf.Document, config: ParseConfig, warnings: list[str]) -> list[_Page]:
    """First pass: text regions and image cover of every page; OCR needs checked up front."""
    pages: list[_Page] = []
    for index in range(doc.page_count):
        page = doc[index]
        n = index + 1
        try:
            regions = _regions(page.get_text("dict", flags=_FLAGS), ocr=False)
            cover = _image_cover(page)
        except Exception as e:  # one damaged page must not hide the others
            raise_if_interrupt(e)
            pages.append(
                _Page(n, page.rect.width, page.rect.height, [], 0.0, route="error", error=str(e))
            )
            warnings.append(f"page {n} could not be read: {e}")
            continue
        p = _Page(n, page.rect.width, page.rect.height, regions, cover)
        if _needs_ocr(regions, cover):
            p.route = "ocr"
        pages.append(p)
    scans = [p.number for p in pages if p.route == "ocr"]
    if scans:
        shown = ", ".join(map(str, scans[:20])) + (" ..." if len(scans) > 20 else "")
        if not config.ocr:
            raise NeedsOCR(
                f"page(s) {shown} of {len(pages)} are images without a text layer and OCR "
                "is disabled (stages.parse.ocr: false)"
            )
        if find_tessdata(config.ocr_language) is None:
            raise NeedsOCR(
                f"page(s) {shown} of {len(pages)} are images without a text layer and OCR is "
                f"unavailable: {ocr_unavailable_reason(config.ocr_language)}"
            )
        if len(scans) > config.max_ocr_pages:
            raise NeedsOCR(
                f"{len(scans):,} of {len(pages):,} pages are images without a text layer, more than "
                f"stages.parse.max_ocr_pages ({config.max_ocr_pages:,}): raise it and `bindery dlq retry` "
                "to read this document"
            )
    if pages and all(p.route == "error" for p in pages):
        raise CorruptDocument(f"no page of the PDF could be read: {pages[0].error}")
    return pages


MAX_OCR_PIXELS = 40_000_000  # a US-letter page at 300 dpi is 8.4 million
# Tesseract's image sides are 16-bit: a taller render fails ("Image too large"), and a full-page
# screenshot of 800 x 40,000 pixels was a needs-ocr dead letter, "OCR recognise failed"
MAX_OCR_SIDE = 32_767


def ocr_dpi(width_pt: float, height_pt: float, wanted: int) -> int:
    """The resolution to render a page at for OCR: `wanted`, lowered so the image stays under
    `MAX_OCR_PIXELS` and no side is over `MAX_OCR_SIDE`. A 4 KB PDF can declare a page of
    4,200 pt square: at 300 dpi that is a 300-million-pixel render (4.4 GB), from a resource
    audit."""
    inches = max(width_pt, 1.0) * max(height_pt, 1.0) / 72 / 72
    side = (MAX_OCR_SIDE - 1) * 72 / max(width_pt, height_pt, 1.0)  # a pixel spare: the render rounds up
    return max(1, min(wanted, int((MAX_OCR_PIXELS / inches) ** 0.5), int(side)))


def _ocr_page(page: pymupdf.Page, p: _Page, config: ParseConfig) -> None:
    tessdata = find_tessdata(config.ocr_language)
    try:
        tp = page.get_textpage_ocr(
            flags=_FLAGS,
            language=config.ocr_language,
            dpi=ocr_dpi(page.rect.width, page.rect.height, config.ocr_dpi),
            full=True,
            tessdata=tessdata,
        )
        regions = _regions(page.get_text("dict", textpage=tp), ocr=True)
    except Exception as e:  # Tesseract errors come in many types
        raise_if_interrupt(e)
        raise NeedsOCR(f"OCR of page {p.number} failed: {e}") from None
    p.regions = merge_adjacent(sorted(regions, key=lambda r: (r.y0, r.x0)), 1.0, False)


def _layout_page(
    page: pymupdf.Page, p: _Page, warnings: list[str], no_grid: set[int] | None = None
) -> None:
    words = sum(len(ln.text.split()) for r in p.regions for ln in r.lines)
    slide = _slide_shaped(page.rect.width, page.rect.height)
    tables = page_tables(page, warnings, p.number, no_grid, words, slide)
    p.regions = cut_tables(p.regions, tables) + tables
    p.tables = len(tables)
    cols = columns_of(p.regions)
    p.columns = max(1, len(cols))
    p.regions = merge_adjacent(reading_order(p.regions, cols))
    if p.route == "text" and (p.tables or len(cols) > 1):
        p.route = "layout"


# --------------------------------------------------------------------------- blocks


def _list_text(lines: list[Line], vocabulary: set[str]) -> str:
    first = _BULLET_GLYPH.sub("", lines[0].text, count=1)
    return join_lines([first] + [ln.text for ln in lines[1:]], vocabulary)


def _code_text(lines: list[Line]) -> str:
    left = min(ln.x0 for ln in lines)
    out = []
    for ln in lines:
        indent = round((ln.x0 - left) / max(1.0, ln.size * 0.6))
        out.append(" " * indent + ln.text.rstrip())
    return "\n".join(out)


def _continues(
    group: tuple[str, int, list[Line]], kind: str, level: int, ln: Line, ocr: bool
) -> bool:
    """Whether line `ln` (classified `kind`/`level`) continues the open group of lines."""
    pkind, plevel, plines = group
    prev = plines[-1]
    close = ln.y0 - prev.y1 < (1.0 if ocr else 0.6) * prev.height
    if kind == pkind == "heading":
        if ln.entry != prev.entry:  # an outline title is exactly the lines found for it
            return False
        # the whole run of a heading font's lines: `_heading_groups` cuts it into headings, or
        # reads it as the paragraph it is
        return ln.entry >= 0 or (level == plevel and close)
    if kind == pkind == "code":
        return True
    return kind == "body" and pkind in ("body", "list_start") and close


def _heading_groups(groups: list[tuple[str, int, list[Line]]]) -> list[tuple[str, int, list[Line]]]:
    """Each run of close lines in one heading font as headings of at most MAX_HEADING_LINES
    lines, or as a paragraph: past PROSE_HEADING_WORDS words, or past MAX_HEADING_WORDS with a
    word hyphenated across two of its lines. No heading is set so, but an abstract or a lead
    set bold in a larger size is (a journal template's abstract came out as six level-3
    headings, the paper's summary cut into sections of one line each). A shorter heading may
    break a word ("sua im- plementação", Portuguese) or a compound ("light- matter")."""
    groups = list(groups)  # a run that breaks into the body line under it joins that line's group
    out: list[tuple[str, int, list[Line]]] = []
    for i, (kind, level, lines) in enumerate(groups):
        if kind == "heading" and lines[0].entry < 0 and _runs_into(lines, groups[i + 1:i + 2]):
            groups[i + 1] = ("body", 0, lines + groups[i + 1][2])  # one paragraph, its lead in bold
        elif kind != "heading" or lines[0].entry >= 0:
            out.append((kind, level, lines))
        elif (words := sum(len(ln.text.split()) for ln in lines)) > PROSE_HEADING_WORDS or (
                words > MAX_HEADING_WORDS and _breaks_a_word(lines)):
            out.append(("body", 0, lines))
        else:
            out += [(kind, level, lines[k:k + MAX_HEADING_LINES]) for k in range(0, len(lines), MAX_HEADING_LINES)]
    return out


def _runs_into(lines: list[Line], after: list[tuple[str, int, list[Line]]]) -> bool:
    """Whether a heading-font run ends in a word hyphenated into the body line just under it
    ("... if mod-" / "ifications are discovered."): the first line of a sentence set in bold,
    its last line a body line because it ends with a full stop (`HeadingRanks.level`). A
    heading is never cut inside a word into the text it heads."""
    if not after or after[0][0] != "body":
        return False
    end, nxt = lines[-1], after[0][2][0]
    return _breaks_a_word([end, nxt]) and nxt.y0 - end.y1 < 0.6 * end.height


def _breaks_a_word(lines: list[Line]) -> bool:
    """Whether a line ends in a word hyphenated across to the next ("para-" / "graph."): text
    is set so, headings seldom are (TeX's sectioning does not hyphenate, but babel's Portuguese
    does, and a compound breaks at its hyphen: `_heading_groups` asks for length too)."""
    for ln, nxt in itertools.pairwise(lines):
        end, start = ln.text.rstrip(), nxt.text.lstrip()
        if len(end) > 2 and end[-1] == "-" and end[-2].isalpha() and start[:1].islower():
            return True
    return False


def _slide_shaped(width: float, height: float) -> bool:
    """A landscape page at least SLIDE_ASPECT wider than high and at most SLIDE_MAX_HEIGHT high."""
    return width >= SLIDE_ASPECT * height and height <= SLIDE_MAX_HEIGHT


def _mark_frame_title(p: _Page, ranks: HeadingRanks) -> None:
    """Make the frame title of a slide a heading: the first line in the top SLIDE_TITLE_ZONE of
    the slide set at least at the body size (a headline's navigation is set small), bold or
    larger, and short, with the lines of its font right below it. Beamer sets it bold at the
    body size and often ends it with a period, which the font rules take for a run-in
    paragraph, so a deck came out without a heading below its section names."""
    if p.route == "ocr" or not _slide_shaped(p.width, p.height):
        return
    lines = sorted(
        (ln for r in p.regions if r.table is None for ln in r.lines), key=lambda ln: (ln.y0, ln.x0)
    )
    body = ranks.body_size
    for i, ln in enumerate(lines):
        if ln.y1 > SLIDE_TITLE_ZONE * p.height or ln.outline or ln.tabular or ranks.level(ln):
            return
        if ln.size < 0.95 * body:
            continue
        if not (ln.bold or ln.size >= HEADING_SIZE_RATIO * body) or len(ln.text.split()) > MAX_HEADING_WORDS:
            return
        level = min(6, len(ranks.ranks) + 1)
        title = [ln]
        for nxt in lines[i + 1 : i + MAX_HEADING_LINES]:
            prev = title[-1]
            if (nxt.size, nxt.bold) != (ln.size, ln.bold) or nxt.y0 - prev.y1 > 0.6 * prev.height:
                break
            title.append(nxt)
        for t in title:
            t.heading = level
        return


def _heading_test(ranks: HeadingRanks) -> Callable[[Line], bool]:
    """Whether a line is a heading: an outline entry's title, a slide's frame title, or ranked
    by its font (no table's row, `table_runs`)."""
    return lambda ln: bool(ln.outline or ln.heading or ranks.level(ln))


def _region_blocks(
    r: Region, ranks: HeadingRanks, vocabulary: set[str], page: int, route: str, ocr: bool, unruled: bool
) -> list[Block]:
    """Split a region's lines into headings, list items, code, paragraphs and tables (a ruled
    one is a region of its own, in Markdown; with `unruled` (`stages.parse.pdf_unruled_tables`)
    one set without rules is a run of its lines, `table_runs`, a row a line and its cells apart
    by tabs: measured on pdf_tables, its rows in Markdown's pipes ranked worse, 0.990 · 0.847
    against 0.981 · 0.844)."""
    meta = {"route": route}
    if isinstance(r.table, Table):
        text = markdown_table(r.table.rows, header=r.table.header)
        meta["table_header"] = table_header_lines(text)
        return [Block("table", text, page=page, meta=meta)]
    runs = table_runs(r.lines, _heading_test(ranks)) if unruled and not ocr else []
    blocks: list[Block] = []
    at = 0
    for run in [*runs, TableRun(len(r.lines), len(r.lines), [])]:
        blocks += _line_blocks(r.lines[at:run.first], ranks, vocabulary, page, meta, ocr)
        if run.rows:
            text = "\n".join("\t".join(c.replace("\t", " ") for c in row) for row in run.rows)
            blocks.append(Block("table", text, page=page, meta=dict(meta, table_header=1 if run.header else 0)))
        at = run.end
    return [b for b in blocks if b.text.strip()]


def _line_blocks(
    lines: list[Line], ranks: HeadingRanks, vocabulary: set[str], page: int, meta: dict[str, Any], ocr: bool
) -> list[Block]:
    """Group lines into headings, list items, code and paragraphs."""
    groups: list[tuple[str, int, list[Line]]] = []
    for ln in lines:
        level = ln.outline or ln.heading or (0 if ocr else ranks.level(ln))
        if level:
            kind = "heading"
        elif ln.mono and not ocr:
            kind = "code"
        elif _BULLET.match(ln.text):
            kind = "list_start"
        else:
            kind = "body"
        opens = ln.tabular and not (groups and groups[-1][2][-1].tabular)  # a table's first row
        if groups and not opens and _continues(groups[-1], kind, level, ln, ocr):
            groups[-1][2].append(ln)
            continue
        groups.append((kind, level, [ln]))
    blocks: list[Block] = []
    for kind, level, lines in _heading_groups(groups):
        outline = lines[0].entry >= 0
        if kind == "heading" and not outline and _CAPTION.match(lines[0].text.strip()):
            kind = "body"  # "Table 1. ..." set in bold is a caption, not a section
        if kind == "heading":
            hmeta = dict(meta, outline=True) if outline else dict(meta)
            text = clean_inline(" ".join(ln.text for ln in lines))
            blocks.append(Block("heading", text, level=level, page=page, meta=hmeta))
        elif kind == "code":
            blocks.append(Block("code", _code_text(lines), page=page, meta=dict(meta)))
        elif kind == "list_start":
            blocks.append(
                Block(
                    "list_item",
                    clean_inline(_list_text(lines, vocabulary)),
                    page=page,
                    meta=dict(meta),
                )
            )
        else:
            text = clean_inline(join_lines([ln.text for ln in lines], vocabulary))
            bkind: BlockKind = "caption" if _CAPTION.match(text) else "paragraph"
            blocks.append(Block(bkind, text, page=page, meta=dict(meta)))
    return blocks



def _demote_toc_entries(blocks: list[Block], outline: Sequence[OutlineEntry] = ()) -> None:
    """Table-of-contents lines set like headings ("1 Foo .... 2") become paragraphs.

    A heading that is another heading's text (or an outline entry's title, of another page)
    followed by a page number is an entry of a contents page; left as a heading it would open
    an empty section that steals the real section's name. So is a numbered heading that is
    the title of an outline entry of a later page (a contents entry whose number wrapped).
    """
    headings = [b for b in blocks if b.kind == "heading"]
    texts = {clean_inline(b.text).lower() for b in headings}
    listed: dict[str, set[int]] = {}
    for e in outline:
        listed.setdefault(e.key, set()).add(e.page)

    def known(title: str, page: int) -> bool:
        return clean_inline(title).lower() in texts or bool(listed.get(title_key(title), set()) - {page})

    for b in headings:
        if b.meta.get("outline"):
            continue  # found where the outline says it is: a section, not a contents line
        text, page = b.text.strip(), b.page or 0
        later = listed.get(title_key(text), set())
        entry = toc_entry(text)
        titles = [entry[0]] if entry else []
        if later and min(later) > page + 1 and is_numbered(text):
            titles = [text]
        elif not entry or not known(entry[0], page):
            # Entries on consecutive lines can be joined into one "heading".
            spans = toc_entries(text)
            if text[:spans[-1][1] if spans else 0].strip() != text:
                continue
            titles = [title for _, _, title in spans]
        if titles and all(t == text or known(t, page) for t in titles):
            b.kind, b.level = "paragraph", 0
            b.meta["toc"] = True


def _demote_front_matter(blocks: list[Block]) -> None:
    """A paper's title block, between its title and its abstract on the first page, is text:
    the authors, their affiliations, addresses and dates are set larger than the body, and as
    headings they opened sections of their own ("Keith T. Smith1⋆†" held mnras's abstract as
    a subsection; each author of an ACM paper headed their affiliation). Headings of the
    title's own size (its second line, a paper number over it) stay. Only where the first page
    has an abstract heading and nothing between the two is a numbered section, a contents
    heading, an outline entry or a paragraph of prose: no other page is a title page so surely."""
    heads = [i for i, b in enumerate(blocks) if b.kind == "heading" and b.page == 1]
    abstract = next((i for i in heads if _ABSTRACT.match(_SPACING_ACCENTS.sub("", blocks[i].text))), None)
    if abstract is None:
        return
    # the title: the first heading of two words or more ("IMECE2023-XXXX" or "Paper 999-2021",
    # a conference's paper number, is set over it)
    title = next((i for i in heads if i < abstract and len(_WORD.findall(blocks[i].text)) >= 2), heads[0])
    between = [i for i in heads if title < i < abstract]
    if any(is_numbered(blocks[i].text) or _CONTENTS.match(blocks[i].text) or blocks[i].meta.get("outline")
           for i in between):
        return
    if any(len(b.text.split()) > PROSE_HEADING_WORDS for b in blocks[title + 1:abstract]):
        return  # a paragraph of prose: sections (a memo's, its summary last), not a title block
    top = min(blocks[i].level for i in heads if title <= i <= abstract)
    for i in between:
        if blocks[i].level > top:
            blocks[i] = Block("paragraph", blocks[i].text, page=1, meta=blocks[i].meta)


def _outline(doc: pymupdf.Document, warnings: list[str]) -> list[OutlineEntry]:
    """The PDF's outline (bookmarks), entries without a page included (they keep the levels)."""
    try:
        toc = doc.get_toc(simple=True)
    except Exception as e:  # a damaged outline is no reason to lose the document
        raise_if_interrupt(e)
        warnings.append(f"PDF outline (bookmarks) unreadable: {e}")
        return []
    return [OutlineEntry(int(lvl), normalize_text(str(title)), int(page)) for lvl, title, page, *_ in toc]


def _apply_outline(outline: list[OutlineEntry], pages: list[_Page], ranks: HeadingRanks) -> bool:
    """Mark the lines that are outline titles (`mark_outline`); whether the outline is used.

    Font sizes alone cannot tell a section heading from a word of a drawing set in 85 pt
    (ReportLab's user guide: "SPUMONI" headed 483 of 671 chunks); the outline can.
    """
    if sum(1 for e in outline if e.page >= 1) < MIN_OUTLINE_FOUND:
        return False
    found = mark_outline(
        [(p.number, p.regions, p.route == "ocr") for p in pages if p.route != "error"],
        outline,
        ranks.level,
    )
    if found >= MIN_OUTLINE_FOUND:
        return True
    for p in pages:  # too few found to trust: font sizes decide alone
        for r in p.regions:
            for ln in r.lines:
                ln.outline, ln.entry = 0, -1
    return False


def _headings(
    doc: pymupdf.Document, pages: list[_Page], warnings: list[str]
) -> tuple[HeadingRanks, list[OutlineEntry], bool]:
    """Rank the fonts (`HeadingRanks`), take the header rows of tables without rules out of the
    heading candidates (`mark_table_rows`), and mark the lines that are outline titles and the
    frame titles of slides: the ranks, the outline and whether it gives the headings."""
    ranks = HeadingRanks.from_lines(ln for p in pages if p.route != "ocr" for r in p.regions for ln in r.lines)
    for p in pages:
        if p.route not in ("ocr", "error"):
            mark_table_rows([ln for r in p.regions if r.table is None for ln in r.lines], ranks.level,
                            p.height)
    outline = _outline(doc, warnings)
    with_outline = _apply_outline(outline, pages, ranks)
    for p in pages:
        _mark_frame_title(p, ranks)
    return ranks, outline, with_outline


def _nest_under_outline(blocks: list[Block]) -> None:
    """A font heading the outline does not list ranks below the outline heading before it, so
    it heads at most the text up to the next outline heading."""
    current = 0
    for b in blocks:
        if b.kind != "heading":
            continue
        if b.meta.get("outline"):
            current = b.level
        elif current:
            b.level = min(6, max(b.level, current + 1))


def _vocabulary(pages: list[_Page]) -> set[str]:
    vocab: set[str] = set()
    for p in pages:
        for r in p.regions:
            for ln in r.lines:
                if "-" in ln.text:
                    vocab.update(_COMPOUND.findall(ln.text.lower()))
    return vocab


def _title(doc: pymupdf.Document, blocks: list[Block]) -> str | None:
    meta_title = normalize_text((doc.metadata or {}).get("title") or "")
    meta_title = re.sub(r"^microsoft (?:word|powerpoint) - ", "", meta_title, flags=re.I).strip()
    if len(meta_title) >= 3 and not _BAD_TITLE.match(meta_title):
        return meta_title
    headings = [b for b in blocks if b.kind == "heading" and b.page == 1]
    if headings:
        return min(headings, key=lambda b: b.level).text
    first = next((b for b in blocks if b.kind == "heading"), None)
    return first.text if first else None


def _doc_metadata(doc: pymupdf.Document) -> dict[str, Any]:
    meta: dict[str, Any] = {"pages": doc.page_count}
    for key in ("author", "subject", "keywords", "creator", "producer", "creationDate", "modDate"):
        value = (doc.metadata or {}).get(key)
        if value:
            meta[key] = value
    return meta


def parse_pdf(data: bytes, config: ParseConfig) -> ParseResult:
    """Parse PDF bytes into blocks in reading order with 1-based page numbers."""
    warnings: list[str] = []
    doc = _open(data, warnings)
    try:
        pages = _read_pages(doc, config, warnings)
        for p in pages:
            if p.route == "error":
                continue
            page = doc[p.number - 1]
            if p.route == "ocr" and not ocr_is_deferred():
                _ocr_page(page, p, config)
        mark_ocr_headings([p.regions for p in pages if p.route == "ocr"])
        if config.strip_headers_footers:
            # a sidebar is looked for on upright pages only: a rotated page's text is placed in
            # the unrotated page's coordinates, its sides are not those of `p.width`
            # ... and on slides only: on a page of a book a line repeated at its side is a listing's
            # closing brace or a table's first column, not a sidebar
            widths = [p.width if not doc[p.number - 1].rotation and _slide_shaped(p.width, p.height) else 0.0
                      for p in pages]
            keys = running_line_keys([(p.regions, p.height) for p in pages], widths)
            for p, width in zip(pages, widths, strict=True):
                p.regions, p.stripped_lines = strip_running_lines(p.regions, p.height, keys, width)
        no_grid: set[int] = set()
        for p in pages:
            if p.route == "error":
                continue
            _layout_page(doc[p.number - 1], p, warnings, no_grid)
        ranks, outline, with_outline = _headings(doc, pages, warnings)
        vocabulary = _vocabulary(pages)
        tables: dict[int, Table] = {}
        unruled = config.pdf_unruled_tables
        for p in pages:
            if unruled and p.route != "ocr":
                p.regions = join_table_regions(p.regions, _heading_test(ranks))
            for r in p.regions:
                made = _region_blocks(r, ranks, vocabulary, p.number, p.route, p.route == "ocr", unruled)
                if isinstance(r.table, Table) and made:
                    tables[id(made[0])] = r.table
                p.blocks.extend(made)
        deferred = [p for p in pages if p.route == "ocr" and ocr_is_deferred()]
        salt = hashlib.sha256(data).hexdigest()[:12] if deferred else ""
        for p in deferred:  # `bindery plan`: what the page stands for, unread (`assets.parsing.ocr`)
            p.blocks = placeholder_blocks(p.number, salt)
        join_split_tables(pages, tables)
        blocks = [b for p in pages for b in p.blocks]
        _demote_toc_entries(blocks, outline if with_outline else ())
        _demote_front_matter(blocks)
        if with_outline:
            _nest_under_outline(blocks)
        if not blocks:
            ocred = [p.number for p in pages if p.route == "ocr"]
            if ocred:
                raise EmptyDocument(
                    f"PDF has {len(pages)} page(s); {len(ocred)} are images that OCR read no "
                    f"text from (pictures, or scans too small or faint: {_image_sizes(doc, ocred)})"
                )
            if stripped := sum(p.stripped_lines for p in pages):  # text there was, all of it taken away
                raise EmptyDocument(
                    f"PDF has {len(pages)} page(s) whose only text is {stripped:,} line(s) at the same place "
                    "on every page, stripped as running headers and footers (stages.parse.strip_headers_footers)"
                )
            raise EmptyDocument(
                f"PDF has {len(pages)} page(s) but no extractable text and no scanned images"
            )
        result = ParseResult(
            blocks=blocks,
            title=_title(doc, blocks),
            format="pdf",
            metadata=_doc_metadata(doc) | ({ESTIMATED_PAGES_KEY: len(deferred)} if deferred else {}),
            warnings=warnings,
        )
        result.page_metrics = [_page_metrics(p) for p in pages]
        return result
    finally:
        doc.close()


def _image_sizes(doc: pymupdf.Document, numbers: list[int]) -> str:
    """'page 1: 16x16 px, ...' for the first few pages' largest images."""
    out = []
    for n in numbers[:3]:
        infos = doc[n - 1].get_image_info()
        if infos:
            big = max(infos, key=lambda i: i["width"] * i["height"])
            out.append(f"page {n}: {big['width']}x{big['height']} px")
    return ", ".join(out) + (" ..." if len(numbers) > 3 else "")


def _page_metrics(p: _Page) -> dict[str, Any]:
    m = page_metrics("\n".join(measurable_text(b.kind, b.text) for b in p.blocks))
    m.update(
        page=p.number,
        route=p.route,
        columns=p.columns,
        tables=p.tables,
        image_cover=round(p.image_cover, 3),
        stripped_lines=p.stripped_lines,
        # PyMuPDF's OCR text page carries no Tesseract confidence; the junk share of the
        # recognised tokens (1 - word_share) stands in for it on OCR pages.
        ocr_confidence=None,
    )
    if p.route == "ocr":
        m["ocr_junk_share"] = round(1 - m["word_share"], 4)
    if p.error:
        m["error"] = p.error
    return m
