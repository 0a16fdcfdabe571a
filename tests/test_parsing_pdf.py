"""PDF parsing: routing, reading order, tables, OCR, running headers, failure classes."""

from __future__ import annotations

import pytest

from assets.chunking import chunk_blocks
from assets.parsing import parse_document
from assets.parsing.pdf_layout import Line, Region, columns_of, reading_order
from assets.parsing.pdf_table_rows import join_table_regions, mark_table_rows, table_runs
from assets.parsing.textutil import fix_ligatures, join_lines, normalize_text
from connectors.config import ChunkConfig, ParseConfig
from connectors.documents import ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, EncryptedDocument, NeedsOCR
from tests.fixtures import docgen
from tests.fixtures.ocr import needs_tesseract

CFG = ParseConfig(ocr_dpi=150)
NO_OCR = ParseConfig(ocr=False)


def _text(result: ParseResult) -> str:
    return "\n".join(b.text for b in result.blocks)


def test_two_columns_read_column_by_column() -> None:
    r = parse_document(docgen.pdf_two_column(), "two.pdf", CFG)
    text = _text(r)
    last_left = max(text.index(p) for p in docgen.LEFT_PARAS)
    first_right = min(text.index(p) for p in docgen.RIGHT_PARAS)
    assert last_left < first_right
    assert r.blocks[0].kind == "heading" and r.blocks[0].text == "Orchards and Plains"
    assert text.index(docgen.BODY[:40]) < first_right  # full-width intro before the columns
    assert r.page_metrics[0]["route"] == "layout" and r.page_metrics[0]["columns"] == 2
    assert {b.meta["route"] for b in r.blocks} == {"layout"}
    assert all(b.page == 1 for b in r.blocks)


def test_table_becomes_markdown_with_header_row() -> None:
    r = parse_document(docgen.pdf_table(), "table.pdf", CFG)
    tables = [b for b in r.blocks if b.kind == "table"]
    assert len(tables) == 1
    lines = tables[0].text.split("\n")
    assert lines[0] == "| Region | Revenue | Growth |"
    assert lines[1] == "|---|---|---|"
    assert "| South | 95 | -2% |" in lines and "| East | 143 | 11% |" in lines
    assert tables[0].meta["table_header"] == "\n".join(lines[:2])
    # Table cells are not repeated as loose paragraphs, and order is kept.
    paragraphs = [b.text for b in r.blocks if b.kind == "paragraph"]
    assert not any("North" in p for p in paragraphs)
    kinds = [b.kind for b in r.blocks]
    assert kinds == ["heading", "paragraph", "table", "paragraph"]
    assert r.page_metrics[0]["tables"] == 1 and r.page_metrics[0]["route"] == "layout"


def test_striped_table_is_one_table() -> None:
    """Every other row shaded and no vertical rules (colortbl's `\\rowcolors`, xcolor's own
    tables): each shaded band was a one-row table of its own, a header-only table, and the
    unshaded rows paragraphs read before them."""
    r = parse_document(docgen.pdf_striped_table(), "striped.pdf", CFG)
    tables = [b for b in r.blocks if b.kind == "table"]
    assert len(tables) == 1
    lines = tables[0].text.split("\n")
    assert lines[0] == "| Option | Model | Effect |"
    assert tables[0].meta["table_header"] == "\n".join(lines[:2])
    assert lines[2:] == [f"| {' | '.join(row)} |" for row in docgen.STRIPED_ROWS[1:]]  # all, in order
    assert [b.kind for b in r.blocks] == ["heading", "paragraph", "table", "paragraph"]


@pytest.mark.parametrize("offset", [0.0, 8.0])
def test_striped_tables_side_by_side_are_two_tables(offset: float) -> None:
    """A helper's pass: two striped tables side by side put their fills in one row (which did
    not tile it, so both were dropped) or interleaved their bands (each stack broke)."""
    r = parse_document(docgen.pdf_striped_tables_side_by_side(offset), "two.pdf", CFG)
    tables = sorted((b.text.split("\n") for b in r.blocks if b.kind == "table"), key=lambda t: t[0])
    assert [t[2:] for t in tables] == [[f"| {' | '.join(row)} |" for row in rows[1:]]
                                       for rows in sorted(docgen.SIDE_BY_SIDE_ROWS, key=lambda rs: rs[0][0])]


def test_split_table_continuation_gets_the_header() -> None:
    r = parse_document(docgen.pdf_split_table(), "split.pdf", CFG)
    tables = [b for b in r.blocks if b.kind == "table"]
    assert [t.page for t in tables] == [1, 2]
    second = tables[1].text.split("\n")
    assert second[0] == "| Item | Count | Site |"
    assert "| Screws | 15 | C |" in second and "| Washers | 90 | D |" in second
    assert tables[1].meta["table_header"] == tables[0].meta["table_header"]
    assert tables[1].meta["continued_from_page"] == 1


@pytest.mark.parametrize("numbered", [False, True])
@pytest.mark.parametrize("tables", [False, True])
def test_unruled_table_header_row_is_no_heading(numbered: bool, tables: bool) -> None:
    """A booktabs table (no vertical rules, too few strokes for a grid): its bold header row,
    cells apart by wide gaps over rows in the same columns, was a heading that opened a
    section for the rows below it. The section heading stays one, its number set apart too.
    By default its rows are lines of text; with `pdf_unruled_tables` a table, a row a line and
    its cells apart by tabs, whose header row the chunker repeats."""
    cfg = CFG.model_copy(update={"pdf_unruled_tables": tables})
    r = parse_document(docgen.pdf_unruled_table(numbered=numbered), "units.pdf", cfg)
    assert r.blocks[0].text == ("2 Base units" if numbered else "Base units")
    if not tables:
        assert [(b.kind, b.level) for b in r.blocks] == [
            ("heading", 1), ("paragraph", 0), ("caption", 0), ("paragraph", 0), ("paragraph", 0), ("paragraph", 0)
        ]
        assert r.blocks[3].text == "Quantity Unit Symbol"  # the header row opens the table's text
        assert r.blocks[4].text.startswith("length metre m mass kilogram kg")
        return
    assert [(b.kind, b.level) for b in r.blocks] == [
        ("heading", 1), ("paragraph", 0), ("caption", 0), ("table", 0), ("paragraph", 0)
    ]
    table = r.blocks[3]
    assert table.text.split("\n") == ["\t".join(row) for row in docgen.UNRULED_ROWS]  # a row a line, by column
    assert table.meta["table_header"] == 1
    small = ChunkConfig(max_tokens=16, overlap_tokens=0, min_tokens=0)
    pieces = [c for c in chunk_blocks([table], small) if c.kind == "table"]
    assert len(pieces) > 1 and all(c.embed_text.startswith("Quantity\tUnit\tSymbol\n") for c in pieces)


def test_an_abstract_set_bold_and_large_is_text_and_a_long_heading_is_a_heading() -> None:
    """A journal class's abstract, bold a size above the body, came out as level-3 headings of
    three lines each (the paper's summary cut into sections); a run of heading-font lines past
    40 words, or past 20 with a word hyphenated across two lines, is a paragraph. A section
    title of three lines is still one heading."""
    r = parse_document(docgen.pdf_bold_abstract(), "paper.pdf", CFG)
    shape = [(b.kind, b.level) for b in r.blocks]
    assert shape[0] == ("heading", 1) and r.blocks[0].text == "Pump failures at the north station"
    heads = [b.text for b in r.blocks if b.kind == "heading"]
    assert heads == ["Pump failures at the north station",
                     "1 Seals, bearings and motors of the pumps at the north station"], shape
    text = " ".join(b.text for b in r.blocks if b.kind == "paragraph")
    assert "the seals wear out first" in text and "the two wet seasons, which the survey leaves out" in text


def test_a_title_block_is_text_and_a_bold_lead_hyphenated_into_its_paragraph_is_no_heading() -> None:
    """Authors, affiliations and dates between a paper's title and its abstract are set larger
    than the body; as headings each opened a section (an author's name held the abstract as a
    subsection). And a bold sentence broken inside a word into the plain line under it was a
    heading of half a word ("... a mod-"). The same size on another page is still a heading."""
    r = parse_document(docgen.pdf_title_block(), "paper.pdf", CFG)
    heads = [(b.page, b.level, b.text) for b in r.blocks if b.kind == "heading"]
    assert [h[2] for h in heads] == ["Pump failures at the north station", "ABSTRACT", "1 Seals and bearings",
                                     "Outages by season"], heads
    assert heads[1][1] == heads[3][1] > heads[0][1]
    paras = [b.text for b in r.blocks if b.kind == "paragraph" and b.page == 1]
    assert paras[:4] == ["Keith T. Smith1··", "North Station Works, Harbour Road, Portsmouth", "Ada B. Jones2",
                         "Accepted 2024 March 3"]
    assert paras[5] == "A pump that fails between two springs gets a modification of its housing."
    assert r.title == "Pump failures at the north station"
    memo = parse_document(docgen.pdf_memo_summary_last(), "memo.pdf", CFG)  # prose between: sections
    assert [b.text for b in memo.blocks if b.kind == "heading"] == [
        "Pump failures at the north station", "Seals and bearings", "Summary"]


def test_table_runs_by_coordinates() -> None:
    """`table_runs`: three or more lines of cells in the same columns, close under each other,
    are a table; a wrapped description joins its cell; a paragraph's line, code, a heading or a
    contents entry is no row; only a header the fonts set apart is repeated as one."""
    def line(y: float, *cells: tuple[float, float, str], bold: bool = False, mono: bool = False) -> Line:
        return Line(" ".join(c[2] for c in cells), cells[0][0], y, cells[-1][1], y + 10, bold=bold, mono=mono,
                    cells=list(cells))

    def row(y: float, a: str, b: str, **kw: bool) -> Line:
        return line(y, (50.0, 50.0 + 6 * len(a), a), (170.0, 170.0 + 6 * len(b), b), **kw)

    def runs(*lines: Line, heading: Line | None = None) -> list[tuple[int, int, list[list[str]], bool]]:
        return [(t.first, t.end, t.rows, t.header) for t in table_runs(list(lines), lambda ln: ln is heading)]

    data = [row(100, "rgb", "red green blue"), row(112, "cmyk", "cyan magenta"), row(124, "hsb", "hue")]
    assert runs(*data) == [(0, 3, [["rgb", "red green blue"], ["cmyk", "cyan magenta"], ["hsb", "hue"]], True)]
    assert runs(row(88, "Model", "Meaning", bold=True), *data)[0][3]  # a bold header over plain rows
    counts = [row(100, "40", "bolts"), row(112, "70", "nuts"), row(124, "15", "screws")]
    assert not runs(*counts)[0][3]  # a first row holding a number is data: nothing to repeat
    assert runs(row(88, "Count", "Item", bold=True), *counts)[0][3]  # ... unless set apart as a header
    code = [row(100 + 12 * k, str(118 + k), f"\\advance\\count{k}") for k in range(4)]
    assert not runs(*code)  # a listing's line numbers are no column
    powers = [row(100 + 12 * k, p, "power") for k, p in enumerate(("²", "³", "⑤176"))]  # digits, but no numbers
    assert runs(*powers)
    assert not runs(*data[:2])  # two rows: no table
    wrapped = line(112, (170.0, 260.0, "and yellow"))
    assert runs(data[0], wrapped, row(124, "cmyk", "cyan"), row(136, "hsb", "hue"))[0][2][0] == [
        "rgb", "red green blue and yellow"]
    paragraph = line(112, (50.0, 300.0, "A paragraph's line runs across the columns of the table."))
    assert not runs(data[0], paragraph, row(124, "cmyk", "cyan"), row(136, "hsb", "hue"))
    assert not runs(*(row(100 + 12 * k, f"x{k}", "# a comment", mono=True) for k in range(4)))  # code
    title = row(88, "Colour", "models")  # a heading of two cells over the table: not its header
    assert runs(title, *data, heading=title) == [(1, 4, [["rgb", "red green blue"], ["cmyk", "cyan magenta"],
                                                         ["hsb", "hue"]], True)]
    toc = [line(100 + 12 * k, (50.0, 150.0, f"Chapter {k} . . . . . ."), (300.0, 310.0, str(k))) for k in range(4)]
    assert not runs(*toc)
    far = [row(100, "rgb", "red"), row(112, "cmyk", "cyan"), row(140, "hsb", "hue")]
    assert not runs(*far)  # a gap of more than a line: no next row

    header, rows = Region(50, 88, 250, 98, [row(88, "Model", "Meaning", bold=True)]), Region(50, 100, 300, 134, data)
    after = Region(50, 150, 300, 160, [line(150, (50.0, 300.0, "The table closes the list."))])
    joined = join_table_regions([header, rows, after], lambda ln: False)
    assert [len(r.lines) for r in joined] == [4, 1]


def test_table_header_rows_need_cells_in_the_same_columns() -> None:
    """`mark_table_rows` by coordinates: a heading of cells apart by wide gaps is a table row
    only over (or under) cells that each sit under one of its cells; a paragraph's line runs
    across its gaps, and a section number apart from its title is no header cell."""
    def line(y: float, *cells: tuple[float, float, str]) -> Line:
        return Line(" ".join(c[2] for c in cells), cells[0][0], y, cells[-1][1], y + 10, cells=list(cells))

    def marked(head: Line, *others: Line) -> bool:
        mark_table_rows([head, *others], lambda ln: 0 if ln.tabular else 2)
        return head.tabular

    header = [(50.0, 95.0, "Quantity"), (170.0, 190.0, "Unit"), (260.0, 295.0, "Symbol")]
    row = [(50.0, 80.0, "length"), (170.0, 198.0, "metre"), (260.0, 266.0, "m")]
    assert marked(line(100, *header), line(114, *row))  # the header row over its rows
    assert marked(line(160, *header), line(114, *row), line(128, *row))  # a bold last row under them
    assert not marked(line(100, *header), line(114, (50.0, 300.0, "a line of a paragraph below it")))
    assert not marked(line(100, *header), line(180, *row))  # rows far below: another table's
    assert not marked(line(100, *header[:1]), line(114, *row))  # one cell: a heading
    pair = [(50.0, 58.0, "a"), (80.0, 120.0, "b")]
    assert not marked(line(100, (50.0, 59.0, "2"), (75.0, 160.0, "Base units")), line(114, *pair))
    assert not marked(line(100, (50.0, 70.0, "XXII"), (75.0, 160.0, "Setting series")), line(114, *pair))
    assert marked(line(100, (50.0, 62.0, "Key"), (75.0, 160.0, "Value")), line(114, *pair))


def test_numbered_and_letter_spaced_headings_are_no_table_rows() -> None:
    """Headings the table-row rule must leave alone, each met in real manuals (TeX Live's
    documentation): section numbers it must know in other forms, a title set letter-spaced, and
    a running header in the page's top band, which is no row of a table under it."""
    def line(y: float, *cells: tuple[float, float, str]) -> Line:
        return Line(" ".join(c[2] for c in cells), cells[0][0], y, cells[-1][1], y + 10, cells=list(cells))

    def marked(head: Line, *others: Line, height: float | None = None) -> bool:
        mark_table_rows([head, *others], lambda ln: 0 if ln.tabular else 2, height)
        return head.tabular

    pair = [(50.0, 58.0, "a"), (80.0, 120.0, "b")]
    for number in ("\uf732.\uf731",  # old-style digits a font left in the private-use area
                   "3\ufffd1",  # a separator the font did not map
                   "第一章", "附录A", "Part I", "3.ii",
                   "5 1.1"):  # a critical edition's line number before the section number
        assert not marked(line(100, (50.0, 70.0, number), (85.0, 160.0, "Einleitung")), line(114, *pair)), number
    # right to left: the number comes last
    rtl = [(50.0, 110.0, "أعمال تأريخية"), (130.0, 145.0, "١.٢")]
    rtl_row = [(60.0, 100.0, "x"), (131.0, 140.0, "y")]
    assert not marked(line(100, *rtl), line(114, *rtl_row))
    assert marked(line(100, (50.0, 110.0, "Release"), (130.0, 145.0, "1.2")), line(114, *rtl_row))  # left to right
    # glyphs of no font's digits are no section number: a row of a character table
    assert marked(line(100, (50.0, 70.0, "\ufffd\ufffd"), (85.0, 160.0, "d dal")), line(114, *pair))
    assert marked(line(100, (50.0, 70.0, "Key"), (85.0, 160.0, "Einleitung")), line(114, *pair))  # the control
    # a number, a title and a page number: the contents' rows, whose numbers are set apart
    toc = [(50.0, 58.0, "2"), (70.0, 150.0, "Giới thiệu"), (300.0, 306.0, "3")]
    assert marked(line(100, (50.0, 58.0, "1"), (70.0, 150.0, "Thuật ngữ"), (300.0, 306.0, "3")), line(114, *toc))

    spaced = [(100.0 + 20 * i, 110.0 + 20 * i, g) for i, g in enumerate("暨南大学考试试卷")]
    under = [(100.0 + 20 * i, 110.0 + 20 * i, "x") for i in range(8)]
    assert not marked(line(100, *spaced), line(114, *under))  # a glyph a cell, a glyph apart
    accents = [(100.0, 105.0, "e"), (130.0, 135.0, "e"), (170.0, 175.0, "e")]
    assert marked(line(100, *accents), line(114, *accents))  # one-letter columns, wide and uneven

    header = [(50.0, 95.0, "User guide"), (170.0, 220.0, "Introduction")]
    heading = [(50.0, 80.0, "Scope"), (170.0, 230.0, "and terms")]
    # a page 400 high: its top band ends at 48
    assert marked(line(52, *heading), line(30, *header))  # no page: the line above is a row
    assert not marked(line(52, *heading), line(30, *header), height=400)  # ... but a running header
    assert marked(line(20, *header), line(34, *heading), height=400)  # rows both in the band are rows


def test_running_headers_footers_stripped_and_headings_found() -> None:
    r = parse_document(docgen.pdf_headers_footers(), "report.pdf", CFG)
    text = _text(r)
    assert "ACME Corp Annual Report" not in text
    assert "Page 1 of 4" not in text and "of 4" not in text
    headings = [(b.text, b.level, b.page) for b in r.blocks if b.kind == "heading"]
    assert headings == [
        ("1. Revenue", 1, 1),
        ("2. Staffing", 1, 2),
        ("3. Facilities", 1, 3),
        ("4. Outlook", 1, 4),
    ]
    assert r.title == "Annual Report 2024"  # from the PDF metadata
    assert sum(p["stripped_lines"] for p in r.page_metrics) == 8
    assert r.metrics["repeated_line_share"] == 0


def test_headers_kept_when_stripping_disabled() -> None:
    cfg = ParseConfig(strip_headers_footers=False)
    r = parse_document(docgen.pdf_headers_footers(), "report.pdf", cfg)
    assert "ACME Corp Annual Report 2024" in _text(r)


def test_a_pdf_whose_only_text_is_a_running_header_says_so() -> None:
    """A drawing register whose pages hold only "sheet N of 4" at their top was "no extractable
    text and no scanned images": its text was read, then stripped as a running header."""
    import pymupdf

    doc = pymupdf.open()
    for n in range(1, 5):
        page = doc.new_page()
        page.insert_text((72, 40), f"ACME Corp drawing register, sheet {n} of 4")
        page.draw_rect(pymupdf.Rect(72, 100, 500, 700))
    with pytest.raises(EmptyDocument, match=r"4 line\(s\) at the same place on every page, stripped as running"):
        parse_document(doc.tobytes(), "sheets.pdf", CFG)
    kept = parse_document(doc.tobytes(), "sheets.pdf", ParseConfig(strip_headers_footers=False))
    assert "sheet 4 of 4" in _text(kept)


def test_hyphenation_repaired_and_compounds_kept() -> None:
    r = parse_document(docgen.pdf_hyphenated(), "h.pdf", CFG)
    text = _text(r)
    assert "information about every document it receives" in text
    assert "well-known reports" in text  # the compound occurs elsewhere unbroken


@needs_tesseract
def test_ocr_recovers_scanned_page() -> None:
    r = parse_document(docgen.pdf_image_only(), "scan.pdf", CFG)
    words = set(docgen.OCR_TEXT.lower().replace(".", "").split())
    got = set(_text(r).lower().replace(".", "").split())
    assert len(words & got) / len(words) >= 0.85
    assert r.page_metrics[0]["route"] == "ocr"
    assert r.metrics["ocr_pages"] == 1 and r.metrics["routes"] == {"ocr": 1}
    assert r.page_metrics[0]["ocr_junk_share"] < 0.2
    assert all(b.meta["route"] == "ocr" for b in r.blocks)


def test_needs_ocr_when_disabled_names_the_pages() -> None:
    with pytest.raises(NeedsOCR, match=r"page\(s\) 2 of 2") as e:
        parse_document(docgen.pdf_mixed_scanned(), "mixed.pdf", NO_OCR)
    assert "disabled" in str(e.value)


def test_needs_ocr_when_tesseract_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import assets.parsing.pdf as pdf

    monkeypatch.setattr(pdf, "find_tessdata", lambda language: None)
    with pytest.raises(NeedsOCR, match="Tesseract language data"):
        parse_document(docgen.pdf_image_only(), "scan.pdf", CFG)


def test_more_pages_to_ocr_than_the_limit_is_a_dead_letter_before_any_ocr(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 pages sharing one small image (a 755 KB PDF) held a sync for about 50 minutes of OCR."""
    import assets.parsing.pdf as pdf

    monkeypatch.setattr(pdf, "find_tessdata", lambda language: "/usr/share/tesseract-ocr/tessdata")
    monkeypatch.setattr(pdf, "_ocr_page", lambda *a: pytest.fail("no page is read once the count is over"))
    with pytest.raises(NeedsOCR, match=r"1 of 2 pages .* more than stages.parse.max_ocr_pages \(0\)"):
        parse_document(docgen.pdf_mixed_scanned(), "mixed.pdf", ParseConfig.model_construct(max_ocr_pages=0))
    from connectors.config import StageConfigs
    from connectors.versions import stage_versions

    # a limit, not an output setting: raising it re-parses nothing by itself
    assert stage_versions(StageConfigs()) == stage_versions(StageConfigs(parse=ParseConfig(max_ocr_pages=5)))


def test_encrypted_pdf() -> None:
    with pytest.raises(EncryptedDocument, match="password"):
        parse_document(docgen.pdf_encrypted(), "secret.pdf", CFG)


def test_truncated_pdf_is_corrupt_with_library_message() -> None:
    with pytest.raises(CorruptDocument, match="truncated") as e:
        parse_document(docgen.pdf_truncated(), "cut.pdf", CFG)
    assert "xref" in str(e.value)  # MuPDF's own words are passed on


def test_garbage_pdf_is_corrupt() -> None:
    with pytest.raises(CorruptDocument):
        parse_document(b"%PDF-1.7\n" + bytes(range(256)) * 4, "bad.pdf", CFG)


def _zero_page_pdf() -> bytes:
    """A well-formed PDF (catalog, page tree, exact xref) whose page tree has no pages."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_a_well_formed_pdf_without_pages_is_empty_not_damaged() -> None:
    """A bad-input pass: it was `corrupt: PDF is damaged ... (no page tree)`; it has a page
    tree, an empty one."""
    with pytest.raises(EmptyDocument, match="no pages"):
        parse_document(_zero_page_pdf(), "none.pdf", CFG)


def test_blank_pdf_is_empty() -> None:
    with pytest.raises(EmptyDocument, match="no extractable text"):
        parse_document(docgen.pdf_blank(), "blank.pdf", CFG)


def test_pdf_named_txt_is_parsed_with_warning() -> None:
    r = parse_document(docgen.pdf_simple(), "notes.txt", CFG)
    assert r.format == "pdf"
    assert r.title == "Simple Document"
    assert any("named .txt" in w for w in r.warnings)


def test_page_metrics_and_document_metrics_filled() -> None:
    r = parse_document(docgen.pdf_headers_footers(pages=3), "m.pdf", CFG)
    assert [p["page"] for p in r.page_metrics] == [1, 2, 3]
    assert r.metrics["pages"] == 3 and r.metrics["routes"] == {"text": 3}
    assert r.metrics["empty_page_share"] == 0
    assert r.metrics["word_share"] > 0.8 and r.metrics["alnum_share"] > 0.7


def test_text_helpers() -> None:
    assert fix_ligatures("\ufb01nd the \ufb02ow, \ufb03x") == "find the flow, ffix"
    assert normalize_text("a\u00a0 b\u200b\r\n\n\n\nc") == "a b\n\nc"
    assert join_lines(["infor-", "mation"]) == "information"
    assert join_lines(["well-", "known"], {"well-known"}) == "well-known"
    assert join_lines(["Version 2-", "3"]) == "Version 2- 3"


def _region(x0: float, y0: float, x1: float, y1: float, text: str) -> Region:
    return Region(x0, y0, x1, y1, lines=[Line(text, x0, y0, x1, y1)])


def test_layout_columns_and_order_with_spanning_regions() -> None:
    title = _region(50, 40, 545, 60, "Title spanning both columns " * 2)
    l1 = _region(50, 100, 280, 200, "left one " * 12)
    r1 = _region(310, 100, 545, 200, "right one " * 12)
    l2 = _region(50, 210, 280, 300, "left two " * 12)
    r2 = _region(310, 210, 545, 300, "right two " * 12)
    foot = _region(50, 320, 545, 340, "Full width note after the columns " * 2)
    regions = [r2, foot, l1, title, r1, l2]
    cols = columns_of(regions)
    assert len(cols) == 2
    assert reading_order(regions, cols) == [title, l1, l2, r1, r2, foot]


def test_two_columns_bridged_by_a_few_regions_are_still_columns() -> None:
    """A centred author block above the columns and a code line running into the gutter (the ACM
    template's pages): the pure gap test saw one column and interleaved the two columns' lines."""
    authors = _region(240, 60, 360, 90, "Author Name, Affiliation")  # narrow, across the gutter
    l1 = _region(50, 100, 290, 200, "left one " * 30)
    code = _region(50, 205, 311, 215, "\\documentclass[sigconf, language=english]")  # into the gutter
    l2 = _region(50, 220, 290, 300, "left two " * 30)
    r1 = _region(318, 100, 545, 200, "right one " * 30)
    r2 = _region(318, 210, 545, 300, "right two " * 30)
    regions = [r1, l2, authors, code, r2, l1]
    cols = columns_of(regions)
    assert cols == [(50, 311), (318, 545)]
    assert reading_order(regions, cols) == [authors, l1, code, l2, r1, r2]
    # one short line on the right of a single column is not a column
    lines = [_region(50, 100 + 12 * i, 400, 110 + 12 * i, "a line of body text " * 3) for i in range(20)]
    assert columns_of([*lines, _region(420, 60, 545, 70, "March 3, 2024")]) == []


def test_layout_single_column_with_short_lines_is_not_columns() -> None:
    body = _region(50, 100, 545, 300, "body text " * 40)
    heading = _region(50, 80, 200, 95, "Heading")
    date = _region(450, 60, 545, 75, "March 3, 2024")
    assert columns_of([body, heading, date]) == []


class _FailingOcrPage:
    """A page whose OCR fails with the error MuPDF raised."""

    rect = type("Rect", (), {"width": 612.0, "height": 792.0})()

    def __init__(self, error: Exception) -> None:
        self.error = error

    def get_textpage_ocr(self, **_: object) -> None:
        raise self.error


@pytest.mark.parametrize("library_error", [
    RuntimeError("code=2: OCR failed: DagsterExecutionInterruptedError"),  # a cancel from the UI, as MuPDF wraps it
    RuntimeError("Exception in callback: KeyboardInterrupt"),  # Ctrl-C
])
def test_an_interrupt_inside_ocr_stops_the_run_and_is_no_verdict_on_the_document(library_error: Exception) -> None:
    """MuPDF runs Python callbacks; an interrupt raised in one comes out as MuPDF's own error.
    It was caught as a failed OCR: the document was dead-lettered `needs-ocr` for good (the
    next sync said "nothing changed") and the run went on as if nothing had stopped it."""
    from assets.parsing import pdf

    def ocr(error: Exception) -> None:
        pdf._ocr_page(_FailingOcrPage(error), pdf._Page(1, 612.0, 792.0, [], 1.0, route="ocr"),  # type: ignore[arg-type]
                      ParseConfig())

    with pytest.raises(KeyboardInterrupt):
        ocr(library_error)
    with pytest.raises(NeedsOCR, match="bad image"):  # a real OCR failure is still the document's
        ocr(RuntimeError("code=2: tesseract: bad image"))
