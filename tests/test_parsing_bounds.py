"""A few kilobytes of hostile input cannot make a parser produce or hold gigabytes.

Found by a resource audit: each input below multiplied into hundreds of megabytes of text or
memory (and, unbounded, an out-of-memory kill of the whole run). Now the text a parse returns
stays within a small multiple of its input, or the document is refused as `too-large`.
"""

from __future__ import annotations

import resource

import pytest

from assets.parsing import parse_document
from connectors.config import ParseConfig
from connectors.errors import TooLarge


def _text_chars(data: bytes, name: str) -> int:
    result = parse_document(data, name, ParseConfig())
    return sum(len(b.text) for b in result.blocks)


def test_one_wide_row_does_not_pad_every_row_of_a_csv() -> None:
    """One row of 16,000 commas among 16,000 two-cell rows made 956 MB of text from 149 KB."""
    data = ("name,value\nx" + "," * 16000 + "\n" + "".join(f"a{i},b\n" for i in range(16000))).encode()
    assert _text_chars(data, "wide.csv") < 5 * len(data)
    result = parse_document(data, "wide.csv", ParseConfig())
    assert "a15999 | b" in result.blocks[-1].text  # every row is still there, under its columns


def test_a_regular_csv_keeps_every_column() -> None:
    rows = "".join(f"r{i},{i},x{i},\n" for i in range(300))  # a trailing empty cell in every row
    result = parse_document(("a,b,c,d\n" + rows).encode(), "plain.csv", ParseConfig())
    assert result.blocks[0].text.split("\n")[0] == "| a | b | c | d |" and "| r0 | 0 | x0 |  |" in result.blocks[0].text


def test_a_long_header_label_is_not_repeated_in_every_group() -> None:
    data = ("H" * 360000 + ",G\n" + "".join(f"a{i},b\n" for i in range(36000))).encode()
    assert _text_chars(data, "label.csv") < 3 * len(data)


def test_a_wide_header_over_short_rows_is_not_repeated_in_every_group() -> None:
    """1,000 labels of 200 characters over rows of empty cells: two rows a group repeated the
    200 KB header 1,000 times (408 MB from 2.2 MB). A group now holds a quarter of the header."""
    header = ",".join(f"h{i}" + "x" * 190 for i in range(1000))
    data = (header + "\n" + "\n".join("," * 999 + f"v{r}" for r in range(400))).encode()
    assert _text_chars(data, "wide.csv") < 20 * len(data)


def test_an_ordinary_long_header_label_stays_whole() -> None:
    question = "How satisfied were you with " + "the onboarding sessions and materials, " * 8 + "overall?"
    assert 300 < len(question) < 1000
    rows = "".join(f"r{i},{i % 5}\n" for i in range(120))
    result = parse_document((f'id,"{question}"\n' + rows).encode(), "survey.csv", ParseConfig())
    assert all(question in b.text for b in result.blocks) and len(result.blocks) == 3


def test_a_long_json_key_is_not_repeated_in_every_path() -> None:
    data = ('{"' + "K" * 40000 + '": {' + ",".join(f'"{i}":1' for i in range(3000)) + "}}").encode()
    assert _text_chars(data, "keys.json") < 15 * len(data)


def test_a_man_page_string_named_thousands_of_times_is_refused() -> None:
    """A 10 KB `.ds` string referenced 10,000 times made 100 MB of text from a 40 KB page."""
    page = ('.TH X 1\n.SH NAME\nx \\- y\n.ds x ' + "word " * 2000 + "\n.SH DESCRIPTION\n"
            + ("\\*x" * 50 + "\n") * 200)
    with pytest.raises(TooLarge, match="string references expand"):
        parse_document(page.encode(), "x.1", ParseConfig())
    ordinary = '.TH X 1\n.ds v 2.1\n.SH NAME\nx \\- version \\*v of x\n'
    assert "version 2.1 of x" in " ".join(b.text for b in parse_document(ordinary.encode(), "x.1").blocks)


def test_a_subject_of_encoded_words_is_cut_before_the_standard_library_parses_it() -> None:
    """16,000 encoded words in one Subject took 1.8 GB in the standard library (quadratic)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data = (b"From: a@b.org\r\nSubject: " + b"=?utf-8?q?a?= " * 16000
            + b"\r\nContent-Type: text/plain\r\n\r\nThe pump runs at night.\r\n")
    result = parse_document(data, "subject.eml", ParseConfig())
    assert result.blocks[-1].text == "The pump runs at night." and result.metadata["subject"].startswith("aaaa")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 500, f"peak memory grew by {grown_mb:.0f} MB"


def test_a_huge_page_is_rendered_for_ocr_below_a_pixel_bound() -> None:
    from assets.parsing.pdf import MAX_OCR_PIXELS, ocr_dpi

    assert ocr_dpi(612, 792, 300) == 300  # US letter: as configured
    dpi = ocr_dpi(4200, 4200, 300)  # declared by a 4 KB file: 300 million pixels at 300 dpi
    assert dpi < 300 and (4200 / 72 * dpi) ** 2 <= MAX_OCR_PIXELS
    assert ocr_dpi(10**7, 10**7, 300) == 1


def test_no_side_of_a_render_for_ocr_is_over_tesseracts_limit() -> None:
    """A page as tall as a 40,000-pixel screenshot at 300 dpi: Tesseract refuses a side over
    32,767 pixels (and the page was a needs-ocr dead letter)."""
    from assets.parsing.pdf import MAX_OCR_SIDE, ocr_dpi

    dpi = ocr_dpi(800 * 72 / 300, 40_000 * 72 / 300, 300)
    assert 200 < dpi < 300 and 40_000 / 300 * dpi < MAX_OCR_SIDE


def test_one_drawing_of_thousands_of_rectangles_is_not_searched_for_tables() -> None:
    """20,000 rectangles in one path (a hatch, a plot's markers) took 15-40 s in `find_tables`,
    a page; the page's drawings were counted, not what they hold."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 40), "The figure below shows the hatched region of the site plan.")
    shape = page.new_shape()
    for i in range(20_000):  # a grid of 142 x 141 cells
        x, y = 50 + (i % 142) * 3.5, 60 + (i // 142) * 4.9
        shape.draw_rect(pymupdf.Rect(x, y, x + 3.5, y + 4.9))
    shape.finish(color=(0, 0, 0), width=0.2)
    shape.commit()
    result = parse_document(doc.tobytes(), "plan.pdf", ParseConfig())
    assert "hatched region" in result.blocks[0].text
    assert any("80,000 drawn edges, too many to look for tables" in w for w in result.warnings)


def _ods(rows_xml: str) -> bytes:
    from tests.fixtures.docgen import _ODF_NS, _zip

    content = (f'<?xml version="1.0"?><office:document-content {_ODF_NS}><office:body><office:spreadsheet>'
               f'<table:table table:name="T">{rows_xml}</table:table></office:spreadsheet></office:body>'
               "</office:document-content>")
    return _zip([("mimetype", b"application/vnd.oasis.opendocument.spreadsheet"), ("content.xml", content.encode())])


def _ods_row(cells: str, repeat: int = 1) -> str:
    return f'<table:table-row table:number-rows-repeated="{repeat}">{cells}</table:table-row>'


def _ods_cell(text: str = "", repeat: int = 1) -> str:
    return (f'<table:table-cell table:number-columns-repeated="{repeat}">'
            + (f"<text:p>{text}</text:p>" if text else "") + "</table:table-cell>")


def _no_sheet_layout(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Fail if a sheet's expanded cells reach the layout: the refusal must come while they expand."""
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the sheet was expanded in full before its size was checked")

    monkeypatch.setattr(f"assets.parsing.{module}.sheet_blocks", refuse)


def test_ods_repeated_rows_times_repeated_cells_are_refused_while_they_expand(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three rows repeated 1,000 times of a cell repeated 1,000 times made 90 M characters from
    758 bytes (with more rows, 51 s and 4.4 GB) before the finished text was refused."""
    data = _ods(_ods_row(_ods_cell("xxxxxxxxxx", 1000), 1000) * 3)
    _no_sheet_layout(monkeypatch, "odf")
    with pytest.raises(TooLarge, match=r"its ods would make at least [\d,]+ characters of text"):
        parse_document(data, "bomb.ods", ParseConfig())


def test_ods_with_a_spreadsheet_programs_empty_tail_is_read_whole() -> None:
    """LibreOffice pads a sheet with a million repeated empty rows and a thousand repeated empty
    cells: they make no text and cost nothing."""
    rows = (_ods_row(_ods_cell("City") + _ods_cell("Cap") + _ods_cell("", 1022))
            + _ods_row(_ods_cell("Paris") + _ods_cell("180") + _ods_cell("", 1022), 1000)
            + _ods_row(_ods_cell("", 1024), 1048000))
    result = parse_document(_ods(rows), "tail.ods", ParseConfig())
    assert result.blocks[0].text == "Sheet: T" and result.blocks[1].text.count("| Paris | 180 |") == 50


def test_xlsx_one_shared_string_in_every_cell_is_refused_while_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """One 100 KB shared string in 9,000 cells took 145 s and 12 GB from 3 KB before the finished
    text was refused."""
    import io

    import openpyxl

    wb = openpyxl.Workbook()
    for _ in range(300):
        wb.active.append(["word " * 10000] * 2)  # one shared string: the file stays a few KB
    buf = io.BytesIO()
    wb.save(buf)
    _no_sheet_layout(monkeypatch, "xlsx")
    with pytest.raises(TooLarge, match=r"its xlsx would make at least [\d,]+ characters of text"):
        parse_document(buf.getvalue(), "bomb.xlsx", ParseConfig())
