"""Office and publishing formats: pptx, xlsx, odt, epub, rtf; the unstructured fallback."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import pytest

from assets.parsing import parse_document
from assets.parsing.fallback import elements_to_blocks
from assets.parsing.sniff import detect_format
from connectors.config import ParseConfig
from connectors.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    FormatMismatch,
    UnsupportedFormat,
)
from tests.fixtures import docgen

CFG = ParseConfig()


def _rezip(data: bytes, replace: dict[str, bytes]) -> bytes:
    """A copy of a zip package with some members' bytes replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, replace.get(info.filename, src.read(info)))
    return out.getvalue()


# ---------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("make", "fmt"),
    [
        (docgen.pptx_deck, "pptx"),
        (docgen.xlsx_workbook, "xlsx"),
        (docgen.odt_document, "odt"),
        (docgen.epub_book, "epub"),
        (lambda: docgen.RTF_DOC, "rtf"),
    ],
)
def test_packages_are_recognised_from_their_bytes(make: Callable[[], bytes], fmt: str) -> None:
    data = make()
    assert detect_format(data, f"file.{fmt}").format == fmt
    mislabelled = detect_format(data, "download.bin")
    assert mislabelled.format == fmt
    renamed = detect_format(data, "file.docx" if fmt != "rtf" else "file.txt")
    assert renamed.format == fmt and renamed.warnings  # the bytes win, with a warning


@pytest.mark.parametrize("ext", ["pptx", "xlsx", "odt", "epub"])
def test_truncated_package_is_corrupt_with_reason(ext: str) -> None:
    data = {
        "pptx": docgen.pptx_deck,
        "xlsx": docgen.xlsx_workbook,
        "odt": docgen.odt_document,
        "epub": docgen.epub_book,
    }[ext]()
    with pytest.raises(CorruptDocument, match="damaged zip archive"):
        parse_document(data[: len(data) // 2], f"half.{ext}", CFG)


def test_plain_zip_named_pptx_is_a_mismatch() -> None:
    data = docgen._zip([("readme.txt", b"hello")])
    with pytest.raises(FormatMismatch, match="zip archive"):
        parse_document(data, "slides.pptx", CFG)


# ---------------------------------------------------------------- pptx


def test_pptx_slides_headings_lists_tables_and_notes() -> None:
    r = parse_document(docgen.pptx_deck(), "roadmap.pptx", CFG)
    assert r.format == "pptx" and r.title == "Roadmap 2025"
    got = [(b.kind, b.page, b.text) for b in r.blocks]
    assert got == [
        ("heading", 1, "Slide 1: Roadmap 2025"),
        ("paragraph", 1, "Product team DECKSUBTITLE"),
        ("heading", 2, "Slide 2: Goals"),
        ("list_item", 2, "Ship the SEARCHFEATURE"),
        ("list_item", 2, "Measure recall weekly"),
        ("paragraph", 2, "Speaker NOTESTEXT about goals."),
        ("heading", 3, "Slide 3: Budget"),
        ("table", 3, "| Team | Cost |\n|---|---|\n| Search | 120 |\n| Ingest | 80 |"),
    ]
    assert r.blocks[4].meta["depth"] == 1
    assert r.blocks[5].meta["notes"] is True
    assert r.blocks[7].meta["table_header"] == "| Team | Cost |\n|---|---|"
    assert r.metadata["slides"] == 4 and r.metadata["slides_without_text"] == [4]


def test_pptx_without_text_is_empty() -> None:
    with pytest.raises(EmptyDocument, match="2 slide"):
        parse_document(docgen.pptx_empty_deck(2), "blank.pptx", CFG)


def test_pptx_with_damaged_part_is_corrupt() -> None:
    data = _rezip(docgen.pptx_deck(), {"ppt/presentation.xml": b"<not-xml"})
    with pytest.raises(CorruptDocument, match="presentation"):
        parse_document(data, "bad.pptx", CFG)


# ---------------------------------------------------------------- xlsx


def test_xlsx_sheets_titles_and_tables_with_headers() -> None:
    r = parse_document(docgen.xlsx_workbook(), "sales.xlsx", CFG)
    assert r.format == "xlsx" and r.title == "Quarterly sales SHEETTITLE"
    got = [(b.kind, b.text) for b in r.blocks]
    assert got == [
        ("heading", "Sheet: Sales"),
        ("paragraph", "Quarterly sales SHEETTITLE"),
        ("table", "| Region | Q1 | Q2 |\n|---|---|---|\n| North | 10 | 12.5 |\n| South | 7 | 9 |"),
        ("heading", "Sheet: Notes"),
        ("paragraph", "Figures are in kEUR."),
    ]
    table = r.blocks[2]
    assert table.meta["sheet"] == "Sales" and table.meta["rows"] == [4, 5]
    assert "HIDDENSHEET" not in "\n".join(b.text for b in r.blocks)
    assert any("hidden" in w for w in r.warnings)


def test_xlsx_without_values_is_empty() -> None:
    with pytest.raises(EmptyDocument, match="no cell holds a value"):
        parse_document(docgen.xlsx_workbook(empty=True), "empty.xlsx", CFG)


def test_xlsx_uncached_formulas_are_reported() -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Item", "Price", "Total"])
    ws.append(["Pen", 2, "=B2*3"])
    buf = io.BytesIO()
    wb.save(buf)
    r = parse_document(buf.getvalue(), "calc.xlsx", CFG)
    assert any("1 formula cell(s) have no cached value" in w for w in r.warnings)


def test_xlsx_with_damaged_sheet_xml_is_corrupt() -> None:
    data = _rezip(docgen.xlsx_workbook(), {"xl/workbook.xml": b"<broken"})
    with pytest.raises(CorruptDocument, match="workbook"):
        parse_document(data, "bad.xlsx", CFG)


# ---------------------------------------------------------------- odt


def test_odt_headings_lists_footnotes_and_tables() -> None:
    r = parse_document(docgen.odt_document(), "policy.odt", CFG)
    assert r.format == "odt" and r.title == "Travel Policy 2025"
    got = [(b.kind, b.level, b.text) for b in r.blocks]
    assert got == [
        ("heading", 1, "Travel Policy"),
        ("heading", 1, "Booking"),
        ("paragraph", 0, "Book trains ODTBODY early."),
        ("paragraph", 0, "FOOTNOTETEXT here."),
        ("list_item", 0, "Economy class"),
        ("list_item", 0, "Second item"),
        ("list_item", 0, "Nested item"),
        ("heading", 2, "Limits"),
        ("table", 0, "| City | Hotel cap |\n|---|---|\n| Paris | 180 |"),
    ]
    assert r.blocks[3].meta["footnote"] is True and r.blocks[6].meta["depth"] == 1


def test_odt_encrypted_and_missing_content() -> None:
    with pytest.raises(EncryptedDocument, match="password"):
        parse_document(docgen.odt_document(encrypted=True), "secret.odt", CFG)
    data = docgen._zip([("mimetype", b"application/vnd.oasis.opendocument.text")])
    with pytest.raises(CorruptDocument, match=r"no content\.xml"):
        parse_document(data, "hollow.odt", CFG)


# ---------------------------------------------------------------- epub


def test_epub_chapters_in_spine_order_without_nav() -> None:
    r = parse_document(docgen.epub_book(), "sea.epub", CFG)
    assert r.format == "epub" and r.title == "Sea Stories"
    assert [b.text for b in r.blocks] == [
        "The Harbour",
        "CHAPTERONE ships wait.",
        "The Storm",
        "CHAPTERTWO waves rise.",
    ]
    assert [b.meta["chapter"] for b in r.blocks] == [1, 1, 2, 2]
    assert r.metadata["author"] == "A. Sailor"


def test_epub_with_drm_is_encrypted() -> None:
    with pytest.raises(EncryptedDocument, match="DRM"):
        parse_document(docgen.epub_book(drm=True), "locked.epub", CFG)


def test_epub_without_package_document_is_corrupt() -> None:
    data = docgen._zip([("mimetype", b"application/epub+zip"), ("x.txt", b"hi")])
    with pytest.raises(CorruptDocument, match="container"):
        parse_document(data, "hollow.epub", CFG)


# ---------------------------------------------------------------- rtf


def test_rtf_paragraphs_escapes_and_tables() -> None:
    r = parse_document(docgen.RTF_DOC, "notes.rtf", CFG)
    assert r.format == "rtf" and r.title == "Meeting Notes"
    assert [(b.kind, b.text) for b in r.blocks] == [
        ("heading", "MEETING NOTES"),
        ("paragraph", "The café budget was approved by the board of directors today."),
        ("paragraph", "Smart quotes \u201chere\u201d and a \\ backslash."),
        ("table", "| Item | Cost |\n|---|---|\n| Coffee | 12 |"),
        ("paragraph", "After the RTFTABLE."),
    ]


def test_text_named_rtf_is_a_mismatch_and_empty_rtf_is_empty() -> None:
    with pytest.raises(FormatMismatch, match="plain text"):
        parse_document(b"just words", "memo.rtf", CFG)
    with pytest.raises(EmptyDocument):
        parse_document(rb"{\rtf1\ansi{\fonttbl{\f0 Arial;}}\pard\par}", "blank.rtf", CFG)


# ---------------------------------------------------------------- unstructured fallback


def test_ole_file_without_native_parser_goes_to_the_fallback() -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)
    d = detect_format(ole, "mail.msg")
    assert d.format == "fallback" and "OLE" in d.label


@pytest.mark.slow  # ~13 s: loads unstructured's partitioners
def test_an_unreadable_legacy_office_file_is_unsupported_with_the_reason() -> None:
    """The real fallback on bytes no parser can read (no monkeypatch: what users get)."""
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)
    reason = r"old\.doc: legacy Office \(OLE\) file .*unstructured could not read it"
    with pytest.raises(UnsupportedFormat, match=reason):
        parse_document(ole, "old.doc", CFG)


def test_fallback_elements_become_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from unstructured.documents.elements import (
        ElementMetadata,
        Footer,
        ListItem,
        NarrativeText,
        Table,
        Title,
    )

    elements = [
        Title("Quarterly memo", metadata=ElementMetadata(page_number=1)),
        Title(
            "This long line was labelled a title although it is a sentence.", metadata=ElementMetadata(page_number=1)
        ),
        NarrativeText("Sales rose in the north.", metadata=ElementMetadata(page_number=1)),
        ListItem("Hire two engineers"),
        Table(
            "Region Sales North 10",
            metadata=ElementMetadata(
                text_as_html="<table><tr><th>Region</th><th>Sales</th></tr><tr><td>North</td><td>10</td></tr></table>"
            ),
        ),
        Footer("Page 1 of 9"),
    ]
    blocks = elements_to_blocks(elements)
    assert [(b.kind, b.text) for b in blocks] == [
        ("heading", "Quarterly memo"),
        ("paragraph", "This long line was labelled a title although it is a sentence."),
        ("paragraph", "Sales rose in the north."),
        ("list_item", "Hire two engineers"),
        ("table", "| Region | Sales |\n|---|---|\n| North | 10 |"),
    ]
    assert blocks[0].page == 1 and blocks[0].meta["route"] == "unstructured"

    import assets.parsing.fallback as fb

    monkeypatch.setattr(fb, "_partition", lambda **kwargs: elements)
    r = parse_document(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), "memo.msg", CFG)
    assert r.format == "fallback" and r.title == "Quarterly memo" and r.warnings
