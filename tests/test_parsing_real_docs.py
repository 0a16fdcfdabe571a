"""Regressions found by running the parse report over real documents (docs/parse-findings.md).

Every fixture here is generated in code and reproduces the shape of the real file that went
wrong; the real files themselves are not in the repository.
"""

from __future__ import annotations

import pytest

from assets.parsing import parse_document
from assets.parsing.sniff import detect_format
from connectors.config import ParseConfig
from connectors.errors import CorruptDocument, EmptyDocument
from quality.metrics import word_share
from tests.fixtures import docgen
from tests.fixtures.ocr import needs_tesseract

CFG = ParseConfig(ocr_dpi=150)


# ---------------------------------------------------------------- PDF


def test_second_body_size_is_not_a_heading_size() -> None:
    """latex2rtf.pdf: 11 pt body + more 9 pt text made every 11 pt line a heading (1220)."""
    r = parse_document(docgen.pdf_two_body_sizes(), "manual.pdf", CFG)
    headings = [b.text for b in r.blocks if b.kind == "heading"]
    assert headings == ["1 Section Revenue", "2 Section Staffing", "3 Section Facilities"]


def test_chapter_running_headers_on_few_pages_are_stripped() -> None:
    """R-data.pdf: "Chapter 1: Introduction 6" on the even pages of one chapter only."""
    r = parse_document(docgen.pdf_chapter_running_headers(), "book.pdf", CFG)
    text = "\n".join(b.text for b in r.blocks)
    assert "Chapter 1: Basics" not in text
    assert sum(p["stripped_lines"] for p in r.page_metrics) >= 2


def test_toc_entries_set_like_headings_are_paragraphs() -> None:
    """pdflatex-outline.pdf: contents lines "1 Foo 2" were headings above the real ones."""
    r = parse_document(docgen.pdf_with_toc(), "toc.pdf", CFG)
    headings = [(b.page, b.text) for b in r.blocks if b.kind == "heading"]
    assert headings == [(1, "Contents"), (2, "1 Apples"), (3, "2 Pears")]
    toc = [b for b in r.blocks if b.meta.get("toc")]
    assert [(b.page, b.kind) for b in toc] == [(1, "paragraph")]
    assert toc[0].text == "1 Apples 2 2 Pears 3"  # two entry lines, joined as one block


@needs_tesseract
def test_scan_with_junk_text_layer_is_ocred_again() -> None:
    """issue-301.pdf: a full-page scan with a junk OCR layer was indexed as that junk."""
    r = parse_document(docgen.pdf_scan_with_junk_layer(), "scan.pdf", CFG)
    assert r.page_metrics[0]["route"] == "ocr"
    text = " ".join(b.text for b in r.blocks).lower()
    assert "warehouse" in text and "cartridges" in text


@needs_tesseract
def test_image_pages_without_text_say_ocr_found_nothing() -> None:
    """imagemagick-images.pdf: 16x16 px images; the error said "no scanned images"."""
    with pytest.raises(EmptyDocument, match=r"OCR read no text.*16x16 px"):
        parse_document(docgen.pdf_tiny_images(), "icons.pdf", CFG)


def test_pdf_cut_before_its_page_tree_is_truncated() -> None:
    """R-FAQ.pdf cut at 60 %: "PDF has no pages" did not say why."""
    data = docgen.pdf_headers_footers(pages=6)
    with pytest.raises(CorruptDocument, match="truncated"):
        parse_document(data[:600], "cut.pdf", CFG)


def test_lone_letters_count_as_junk() -> None:
    """issue-301.pdf: OCR of graph paper (": i H ! t") scored as mostly words."""
    assert word_share(": i ! H ' : i t . i H") == 0.0
    assert word_share("I saw a cat and O my") == 1.0


# ---------------------------------------------------------------- email


def test_blank_plain_part_falls_back_to_html_body() -> None:
    """mail-parser mail_test_1: an empty trailing text/plain part hid the HTML body."""
    r = parse_document(docgen.eml_blank_plain_part(), "invoice.eml", CFG)
    assert "HTMLBODYTEXT is the real body." in [b.text for b in r.blocks]
    assert r.metadata["attachments"][0]["filename"] == "a.zip"


def test_multipart_with_unused_boundary_is_repaired() -> None:
    """mail-parser mail_malformed_3: declared and used boundaries differ → no parts."""
    r = parse_document(docgen.eml_wrong_boundary(), "offer.eml", CFG)
    assert r.blocks[0].text == "WRONGBOUNDARYBODY survives."
    assert any("never used" in w for w in r.warnings)


def test_stray_nul_bytes_do_not_make_text_binary() -> None:
    """mail-parser mail_malformed_3 carries two NUL bytes at the end of a base64 part."""
    data = docgen.eml_alternative_with_quote() + b"\x00\x00\n"
    assert detect_format(data, "msg.eml").format == "email"
    r = parse_document(b"Plain notes with a stray\x00 NUL byte.\n", "notes.txt", CFG)
    assert r.blocks[0].text == "Plain notes with a stray NUL byte."


# ---------------------------------------------------------------- XML, EPUB, sheets, slides


def test_xml_attribute_records_become_a_table() -> None:
    """iso-codes iso_4217.xml: all data in attributes → "no text could be extracted"."""
    data = b"""<?xml version="1.0"?><!DOCTYPE e [<!ELEMENT e ANY>]><entries>
      <entry letter_code="AED" numeric_code="784" currency_name="UAE Dirham"/>
      <entry letter_code="AFN" numeric_code="971" currency_name="Afghani"/>
      <old letter_code="ZRZ" currency_name="Zaire" date_withdrawn="1994-02"/>
    </entries>"""
    r = parse_document(data, "iso_4217.xml", CFG)
    assert [(b.kind, b.text) for b in r.blocks] == [
        (
            "table",
            "| letter_code | numeric_code | currency_name |\n|---|---|---|\n"
            "| AED | 784 | UAE Dirham |\n| AFN | 971 | Afghani |",
        ),
        ("paragraph", "letter_code: ZRZ\ncurrency_name: Zaire\ndate_withdrawn: 1994-02"),
    ]


def test_epub_spine_fragments_read_each_file_once() -> None:
    """live-manual.en.epub: spine hrefs with #fragments were "missing from the package"."""
    r = parse_document(docgen.epub_fragment_spine(), "manual.epub", CFG)
    assert [b.text for b in r.blocks] == ["About", "ABOUTTEXT once.", "Basics", "BASICSTEXT."]
    assert not r.warnings


def test_xlsx_title_is_never_a_column_of_values() -> None:
    """python-pptx shp-embedded-xlsx.xlsx: the title came out as "1\\n2\\n3"."""
    import io

    import openpyxl

    wb = openpyxl.Workbook()
    for v in (1, 2, 3):
        wb.active.append([v])
    buf = io.BytesIO()
    wb.save(buf)
    r = parse_document(buf.getvalue(), "numbers.xlsx", CFG)
    assert r.title == "Sheet: Sheet" and r.blocks[1].text == "1\n2\n3"


def test_odp_frames_read_top_to_bottom() -> None:
    """odfpy cols.odp: frames came out in z-order, bottom text first."""
    r = parse_document(docgen.odp_shapes_out_of_order(), "deck.odp", CFG)
    assert [b.text for b in r.blocks] == [
        "Slide 1",
        "FIRST title text",
        "SECOND right column",
        "THIRD bottom text",
        "NOTESODP",
    ]
    assert r.blocks[-1].meta["notes"] is True and r.blocks[1].page == 1


def test_bold_is_no_heading_signal_when_the_body_is_bold() -> None:
    """issue-604.pdf (NCCN guidelines): 1306 "headings" from short bold flowchart lines."""
    r = parse_document(docgen.pdf_mostly_bold(), "pathway.pdf", CFG)
    assert [b.text for b in r.blocks if b.kind == "heading"] == ["Treatment Pathway"]
    assert "Step 24 check the appendix box" in "\n".join(b.text for b in r.blocks)


def test_rst_sphinx_object_directives_keep_their_descriptions() -> None:
    """python3.11-doc csv.rst: `.. function::` bodies (the API docs) were dropped."""
    text = (
        "Module Contents\n===============\n\n"
        ".. function:: reader(csvfile, dialect='excel',\n"
        "                     **fmtparams)\n\n"
        "   Return a reader object, see :pep:`305` and :meth:`~csv.Sniffer.sniff`.\n\n"
        "   .. versionchanged:: 3.8\n      Rows are dicts.\n\n"
        ".. class:: Sniffer()\n\n   Deduces the format.\n\n"
        "   .. method:: sniff(sample)\n\n      Analyze the ``'\\\\n'`` sample.\n\n"
        ".. index:: single: INDEXTERM\n"
    )
    r = parse_document(text.encode(), "csv.rst", CFG)
    assert [(b.kind, b.level, b.text) for b in r.blocks] == [
        ("heading", 1, "Module Contents"),
        ("heading", 2, "reader(csvfile, dialect='excel', **fmtparams)"),
        ("paragraph", 0, "Return a reader object, see PEP 305 and csv.Sniffer.sniff."),
        ("paragraph", 0, "Changed in version 3.8: Rows are dicts."),
        ("heading", 2, "Sniffer()"),
        ("paragraph", 0, "Deduces the format."),
        ("heading", 3, "sniff(sample)"),
        ("paragraph", 0, "Analyze the '\\\\n' sample."),
    ]
    assert r.blocks[1].meta["signature"] is True


def test_drawn_grid_with_one_label_is_not_a_table() -> None:
    """R-intro.pdf p85: the mfrow/mfg layout figure became a table of empty cells."""
    r = parse_document(docgen.pdf_grid_figure(), "figure.pdf", CFG)
    assert not [b for b in r.blocks if b.kind == "table"]
    assert "mfg=c(3,2)" in "\n".join(b.text for b in r.blocks)
