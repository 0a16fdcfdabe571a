"""Scanned pages read as a reader reads them: column by column, with their headings.

Tesseract gives words and lines but no fonts, and MuPDF groups a scanned two-column page's
lines into blocks that cross the gutter: before `assets.parsing.pdf_ocr`, every sentence of a
scanned article ran into the other column's and no scanned page had a heading.
"""

from __future__ import annotations

import pymupdf

from assets.parsing import parse_document
from assets.parsing.pdf_layout import Line, Region
from assets.parsing.pdf_ocr import Gutters, across_gutter, despeck, mark_ocr_headings, ocr_columns, ocr_line_kept
from connectors.config import ParseConfig
from tests.fixtures.ocr import needs_tesseract

LEFT = ["The harbour pumps start at dawn", "and the tide gauge is read twice", "before the ferry leaves the quay."]
RIGHT = ["Every lighthouse keeper writes", "the weather into a green ledger", "that the council archives yearly."]


def _scanned(page: pymupdf.Page) -> bytes:
    """`page` rasterised at 200 dpi in grey into an image-only PDF: a scan."""
    pix = page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    scan = pymupdf.open()
    scan.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), stream=pix.tobytes("png"))
    return bytes(scan.tobytes())


def _scanned_two_columns() -> bytes:
    """A page typeset in two columns with a title and numbered section headings, rasterised
    into an image-only PDF (a scan)."""
    src = pymupdf.open()
    page = src.new_page(width=612, height=792)
    page.insert_text((72, 80), "Coastal Operations Handbook", fontsize=22, fontname="helv")
    for x, number, title, lines in ((72, "1", "Harbour Duties", LEFT), (320, "2", "Lighthouse Records", RIGHT)):
        page.insert_text((x, 140), f"{number}   {title}", fontsize=14, fontname="helv")
        for i, text in enumerate(lines * 4):
            page.insert_text((x, 170 + 14 * i), text, fontsize=10, fontname="helv")
    return _scanned(page)


@needs_tesseract
def test_a_scanned_two_column_page_reads_column_by_column_with_its_headings() -> None:
    r = parse_document(_scanned_two_columns(), "handbook.pdf", ParseConfig(ocr_dpi=200))
    assert r.metrics["routes"] == {"ocr": 1}
    headings = [(b.level, b.text) for b in r.blocks if b.kind == "heading"]
    assert headings == [(1, "Coastal Operations Handbook"), (2, "1 Harbour Duties"), (2, "2 Lighthouse Records")]
    body = [b.text for b in r.blocks if b.kind == "paragraph"]
    # each column's sentence is read whole, never interleaved with the other column's lines
    assert any("start at dawn and the tide gauge is read twice before the ferry" in t for t in body), body
    assert any("writes the weather into a green ledger that the council" in t for t in body), body
    assert not any("dawn" in t and "ledger" in t for t in body)


def _line(text: str, x0: float, y0: float, x1: float, height: float = 10.0) -> Line:
    return Line(text=text, x0=x0, y0=y0, x1=x1, y1=y0 + height)


def test_alternating_lines_of_two_columns_are_cut_into_one_run_per_column() -> None:
    lines = []
    for i in range(4):
        lines += [_line(f"left {i}", 50, 100 + 12 * i, 280), _line(f"right {i}", 310, 100 + 12 * i, 540)]
    runs = ocr_columns(lines, Gutters([(287.0, 303.0)], 12.0))
    assert [[ln.text for ln in run] for run in runs] == [[f"left {i}" for i in range(4)],
                                                         [f"right {i}" for i in range(4)]]
    # a wide gap further down starts a new run; a page without gutters keeps its block whole
    assert len(ocr_columns([_line("a", 50, 100, 280), _line("b", 50, 140, 280)], Gutters([(287.0, 303.0)], 12.0))) == 2
    assert ocr_columns(lines, Gutters()) == [lines]


def test_a_gutter_splits_words_but_not_a_section_number_from_its_title() -> None:
    gutters = Gutters([(287.0, 303.0)], 12.0)
    assert across_gutter("the tide gauge", 284, 308, gutters)
    assert not across_gutter("1.2", 284, 308, gutters)  # "1.2   Figures": a quad, not a gutter
    assert not across_gutter("the tide gauge", 200, 215, gutters)  # a wide space elsewhere
    assert not across_gutter("Coastal Operations", 270, 294, gutters)  # a title's word gap in the gutter
    assert not across_gutter("anything", 284, 308, Gutters())  # a page of one column


def test_specks_read_as_punctuation_are_no_lines() -> None:
    assert not ocr_line_kept(": . —")
    assert ocr_line_kept("2")


def _page(*texts: str) -> list[Region]:
    lines = [_line(t, 50, 100 + 14 * i, 50 + 6 * len(t)) for i, t in enumerate(texts)]
    return [Region(50, 100, 540, 100 + 14 * len(texts), lines=lines)]


def test_numbered_headings_but_not_sentences_leaders_or_contents() -> None:
    prose = "the harbour pumps start at dawn and the tide gauge is read twice by the keeper on duty"
    page = _page("3.2 Tide Gauges", prose, "10 boats left the harbour before noon.",
                 "4 Results, tables, and figures", prose, "4.1. Pump Hours", prose, "5 HARBOUR RECORDS 12", prose)
    mark_ocr_headings([page])
    assert [(ln.text, ln.heading) for ln in page[0].lines if ln.heading] == [("3.2 Tide Gauges", 3),
                                                                            ("4.1. Pump Hours", 3)]
    contents = _page(*[f"{i} Chapter {i} . . . . . . {i * 7}" for i in range(1, 9)], "2.1 Pumps")
    mark_ocr_headings([contents])
    assert not any(ln.heading for ln in contents[0].lines)  # a contents page makes no headings
    # ... nor does one without leaders, nor a listing whose rows repeat a number
    bare = _page(prose, "1 General Definitions", "2 Harbour Duties", "3 Lighthouse Records", prose)
    listing = _page(prose, "4 CARD32 Offset", prose, "4 CARD32 Parents", prose)
    mark_ocr_headings([bare, listing])
    assert not any(ln.heading for ln in bare[0].lines + listing[0].lines)
    # a chapter's headings stacked with no text between are headings
    stacked = _page(prose, "6 Application Version", "6.1 Acrobat Reader", "6.1.1 Version Information", prose)
    mark_ocr_headings([stacked])
    assert [ln.heading for ln in stacked[0].lines] == [0, 2, 3, 4, 0]


def test_dust_far_from_any_word_is_dropped_but_code_punctuation_stays() -> None:
    def span(text: str, x0: float, x1: float) -> dict[str, object]:
        return {"text": text, "bbox": (x0, 100.0, x1, 110.0)}

    line = [span("pumps", 50, 80), span(" ", 80, 84), span("..", 84, 92), span(" ", 92, 96), span("quay", 96, 120),
            span("_", 200, 204), span("Every", 310, 340)]
    page = Gutters([(287.0, 303.0)], 12.0)
    assert [s["text"] for s in despeck(line, page)] == ["pumps", " ", "..", " ", "quay", "Every"]
    assert despeck([span("..", 84, 92)], page) == [span("..", 84, 92)]  # a piece of a line, joined later
    assert despeck([span("'", 293, 296)], page) == []  # ... but not a speck in the gutter


def _scanned_table() -> bytes:
    """A page of prose over a table of one-word cells (no ruling: a scan has no vector lines)."""
    src = pymupdf.open()
    page = src.new_page(width=612, height=792)
    page.insert_text((72, 80), "The pumps of the harbour are listed below with their yearly hours.",
                     fontsize=11, fontname="helv")
    rows = [("Station", "Pump", "Hours"), ("Northquay", "Diesel", "1200"), ("Southpier", "Electric", "860"),
            ("Lighthouse", "Manual", "45"), ("Ferrydock", "Diesel", "2310"), ("Boatyard", "Electric", "975")]
    for i, row in enumerate(rows):
        for x, cell in zip((72, 260, 430), row, strict=True):
            page.insert_text((x, 120 + 18 * i), cell, fontsize=11, fontname="helv")
    return _scanned(page)


@needs_tesseract
def test_a_scanned_tables_rows_stay_rows() -> None:
    """Its cells line up in columns as a two-column page's lines do, but hold a word or two:
    no gutter, so a row reads across ("Southpier Electric 860"), not a column down."""
    r = parse_document(_scanned_table(), "pumps.pdf", ParseConfig(ocr_dpi=200))
    text = " ".join(b.text for b in r.blocks)
    assert "Southpier Electric 860" in text and "Ferrydock Diesel 2310" in text, text
