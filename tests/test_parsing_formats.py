"""Format sniffing, failure classes, Markdown, plain text and docx."""

from __future__ import annotations

import gzip
from typing import Any

import pytest

from assets.parsing import parse_document
from assets.parsing.sniff import decode_text, detect_format
from connectors.config import ParseConfig
from connectors.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    FormatMismatch,
    TooLarge,
    UnsupportedFormat,
)
from tests.fixtures import docgen

CFG = ParseConfig()


# ---------------------------------------------------------------- sniffing and failures


def test_binary_named_txt_is_format_mismatch() -> None:
    with pytest.raises(FormatMismatch, match="looks binary"):
        parse_document(docgen.binary_blob(), "notes.txt", CFG)


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n ", "\ufeff  \n".encode()])
def test_empty_and_whitespace_are_empty(data: bytes) -> None:
    with pytest.raises(EmptyDocument, match="empty"):
        parse_document(data, "empty.txt", CFG)


def test_unknown_binary_is_unsupported() -> None:
    with pytest.raises(UnsupportedFormat):
        parse_document(docgen.binary_blob(), "blob.bin", CFG)
    with pytest.raises(CorruptDocument, match="not a readable PNG image"):  # an image is read by OCR
        parse_document(b"\x89PNG\r\n\x1a\n" + bytes(100), "logo.png", CFG)


def test_png_named_txt_and_html_named_pdf_are_mismatches() -> None:
    with pytest.raises(FormatMismatch, match="PNG image"):
        parse_document(b"\x89PNG\r\n\x1a\n" + bytes(100), "photo.txt", CFG)
    with pytest.raises(FormatMismatch, match="HTML document text"):
        parse_document(b"<html><body>404 Not Found</body></html>", "report.pdf", CFG)


def test_unrecognisable_pdf_is_corrupt() -> None:
    with pytest.raises(CorruptDocument, match="no %PDF- header"):
        parse_document(docgen.binary_blob(), "report.pdf", CFG)


def test_legacy_and_encrypted_office_files() -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)
    with pytest.raises(UnsupportedFormat, match="legacy"):
        parse_document(ole, "old.docx", CFG)
    encrypted = ole + "EncryptedPackage".encode("utf-16-le") + bytes(100)
    with pytest.raises(EncryptedDocument, match="password"):
        parse_document(encrypted, "locked.docx", CFG)


def test_broken_docx_is_corrupt() -> None:
    data = docgen.docx_document()
    with pytest.raises(CorruptDocument):
        parse_document(data[: len(data) // 2], "half.docx", CFG)


def test_too_large() -> None:
    with pytest.raises(TooLarge, match="over the"):
        parse_document(b"x" * 2000, "big.txt", CFG, max_bytes=1000)


def test_full_html_named_txt_parsed_as_html_with_warning() -> None:
    r = parse_document(
        b"<!DOCTYPE html><html><body><h1>Hi</h1><p>Body.</p></body></html>", "page.txt", CFG
    )
    assert r.format == "html" and r.title == "Hi" and r.warnings


def test_an_html_page_saved_as_eml_is_parsed_as_html() -> None:
    """An operator pass: it was indexed as plain text, tags and all."""
    page = b"<html><body><h1>Ocelots</h1><p>Ocelots are wild cats of the Americas.</p></body></html>"
    r = parse_document(page, "mail/notmail.eml", CFG)
    assert r.format == "html" and [b.text for b in r.blocks] == ["Ocelots", "Ocelots are wild cats of the Americas."]
    assert "no RFC 822 headers" in r.warnings[0]
    assert parse_document(b"Just a note, no headers at all.\n", "note.eml", CFG).format == "text"


def test_a_file_named_as_compressed_but_stored_plain_is_read_by_the_name_under_the_suffix() -> None:
    """An operator pass: text named .gz was indexed as text without a word; a manual page
    stored uncompressed as ls.1.gz is a manual page."""
    page = b".TH LS 1\n.SH NAME\nls \\- list directory contents\n"
    r = parse_document(page, "man1/ls.1.gz", CFG)
    assert r.format == "man" and r.warnings == ["ls.1.gz is named .gz but is not compressed; read as it is"]
    assert parse_document(b"Capybaras are the largest rodents.\n", "notgz.1.gz", CFG).warnings
    assert parse_document(b"BZh is how a bzip2 stream starts.\n", "note.txt.bz2", CFG).warnings  # no stream
    gz = parse_document(gzip.compress(page), "man1/ls.1.gz", CFG)
    assert gz.format == "man" and gz.warnings == [] and gz.metadata["compressed"] == "gzip"


def test_detection_without_extension() -> None:
    assert detect_format(b"# Readme\n\nSome text\n", "README").format == "markdown"
    assert detect_format(b"plain words only\n", "LICENSE").format == "text"
    assert detect_format(docgen.eml_alternative_with_quote(), "message").format == "email"
    assert detect_format(docgen.pdf_simple(), "download").format == "pdf"


def test_bom_prefixed_files_are_sniffed() -> None:
    bom = b"\xef\xbb\xbf"
    page = bom + b"<!DOCTYPE html><html><body><h1>Hi</h1></body></html>"
    assert detect_format(page, "page.txt").format == "html"
    r = parse_document(bom + docgen.eml_html_only(), "mail", CFG)
    assert r.format == "email" and r.title == "Newsletter"


def test_utf16_text_is_text() -> None:
    r = parse_document("Hello wide world\n".encode("utf-16"), "wide.txt", CFG)
    assert r.blocks[0].text == "Hello wide world"


_MAIL = ("From: ann@example.org\nTo: list@example.org\nSubject: Café hours\nMessage-ID: <1@x>\n\n"
         "The café opens at nine.\n")
_MAN = ".TH CUT 1\n.SH NAME\ncut \\- remove sections\n.SH DESCRIPTION\nPrint the selected fields, café.\n"
_PAGE = "<html><body><h1>Hours</h1><p>The café opens at nine.</p></body></html>"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-16", "utf-32", "utf-8-sig"])
@pytest.mark.parametrize(("name", "text", "fmt", "expect"), [
    ("note.eml", _MAIL, "email", ["The café opens at nine."]),
    ("cut.1", _MAN, "man", ["NAME", "cut - remove sections", "DESCRIPTION", "Print the selected fields, café."]),
    ("hours.html", _PAGE, "html", ["Hours", "The café opens at nine."]),
])
def test_wide_encodings_keep_their_format(encoding: str, name: str, text: str, fmt: str, expect: list[str]) -> None:
    """UTF-16 without a byte-order mark (as Windows tools write it) and with one, UTF-32 and a
    UTF-8 BOM: the mail's headers, the page's tags and the manual's macros are still found (they
    were plain text with a NUL between letters, and a BOM hid an e-mail's first header)."""
    r = parse_document(text.encode(encoding), name, CFG)
    assert r.format == fmt
    assert [b.text for b in r.blocks] == expect
    if fmt == "email":
        assert r.title == "Café hours"


def test_undeclared_8bit_mail_body_is_not_replacement_characters() -> None:
    head = "From: ann@example.org\nTo: list@example.org\nSubject: hi\nMessage-ID: <1@x>\n\n"
    body = "Rendez-vous au café, à la française, déjà ça.\n"
    r = parse_document(head.encode() + body.encode("utf-8"), "m.eml", CFG)
    assert r.blocks[0].text == body.strip()
    # A legacy 8-bit body goes through the same detector as a plain text file (which may pick
    # a neighbouring code page for a short text): no replacement characters either way.
    r = parse_document(head.encode() + body.encode("cp1252"), "m.eml", CFG)
    assert "\ufffd" not in r.blocks[0].text and "café" in r.blocks[0].text



def test_an_8bit_message_is_mail_without_guessing_the_files_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers prove a message: its 8-bit bytes are its parts' to decode, not a reason to run
    the encoding detector over the whole file (a tenth of a legacy archive's parse time). A
    plain 8-bit text still goes to the detector."""
    import charset_normalizer

    calls: list[bytes] = []
    real = charset_normalizer.from_bytes

    def counted(data: bytes, *a: Any, **k: Any) -> Any:
        calls.append(data)
        return real(data, *a, **k)

    monkeypatch.setattr(charset_normalizer, "from_bytes", counted)
    head = "From: ann@example.org\nTo: list@example.org\nSubject: hi\nMessage-ID: <1@x>\n\n"
    body = "Rendez-vous au café, à la française, déjà ça.\n".encode("cp1252")
    assert detect_format(head.encode() + body, "m.eml").format == "email"
    assert detect_format(head.encode() + body, "m").format == "email"
    assert calls == []
    assert detect_format(body * 3, "note.txt").format == "text"
    assert len(calls) == 1

# ---------------------------------------------------------------- markdown


def test_markdown_structure() -> None:
    r = parse_document(docgen.MARKDOWN.encode(), "guide.md", CFG)
    assert r.format == "markdown"
    assert r.title == "Front Matter Title"
    assert r.metadata["front_matter"]["tags"] == ["a", "b"]
    headings = [(b.text, b.level) for b in r.blocks if b.kind == "heading"]
    assert headings == [("Setup Guide", 1), ("Install steps", 2), ("Deep heading", 3)]
    para = r.blocks[1]
    assert para.text == "Intro paragraph with a link and inline code."
    code = next(b for b in r.blocks if b.kind == "code")
    assert code.meta["language"] == "python"
    assert code.text.startswith("def main():\n\n    print(")  # blank line kept inside the fence
    table = next(b for b in r.blocks if b.kind == "table")
    assert table.text.split("\n")[0] == "| Name | Value |"
    assert "| beta | 2 |" in table.text
    items = [(b.text, b.meta["depth"]) for b in r.blocks if b.kind == "list_item"]
    assert items == [("first item", 0), ("second item", 0), ("nested numbered", 1)]


def test_markdown_title_falls_back_to_h1_and_hash_in_fence_is_not_heading() -> None:
    md = b"```\n# not a heading\n```\n\nIntro\n\n# Real Title\n"
    r = parse_document(md, "x.md", CFG)
    assert r.title == "Real Title"
    assert [b.kind for b in r.blocks] == ["code", "paragraph", "heading"]


def test_markdown_embedded_html_keeps_structure() -> None:
    md = b"# T\n\n<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>\n\n"
    md += b"<!-- a comment -->\n\ntext\n"
    r = parse_document(md, "x.md", CFG)
    assert [(b.kind, b.text) for b in r.blocks] == [
        ("heading", "T"),
        ("table", "| a | b |\n|---|---|\n| 1 | 2 |"),
        ("paragraph", "text"),
    ]


# ---------------------------------------------------------------- plain text


def test_latin1_text_keeps_accents() -> None:
    r = parse_document(docgen.latin1_text(), "cafe.txt", CFG)
    assert r.title == "Le café de la gare"
    text = "\n".join(b.text for b in r.blocks)
    assert "crème brûlée très appréciée" in text and "Où est la clé" in text
    assert "\ufffd" not in text


def test_short_latin1_decodes_as_western() -> None:
    assert decode_text("Grüße aus München".encode("latin-1"))[0] == "Grüße aus München"


@pytest.mark.parametrize(("text", "encoding"), [
    # the detector ties cp1250 with cp1252 on this one and used to pick cp1250: "foręt", "trčs"
    ("Le château de la forêt était très célèbre. Noël approchait et les élèves préparaient une fête.", "latin-1"),
    ("El niño comió piña en la montaña. ¿Qué pasó? Año nuevo, corazón.", "cp1252"),
    # ... while text that only a Central European code page reads stays in it
    ("Příliš žluťoučký kůň úpěl ďábelské ódy. Čeština je krásná.", "cp1250"),
    ("Zażółć gęślą jaźń. Pchnąć w tę łódź jeża lub ośm skrzyń fig.", "cp1250"),
])
def test_a_legacy_code_page_tie_goes_to_western(text: str, encoding: str) -> None:
    assert decode_text(text.encode(encoding))[0] == text


def test_text_headings_lists_and_paragraphs() -> None:
    text = (
        b"INTRODUCTION\n\nThis is wrapped\nprose text.\n\n1. Scope\n\n"
        b"- first point\n- second point\n  continues here\n\n2.1 Details\n\n"
        b"    indented line one\n    indented line two\n"
    )
    r = parse_document(text, "notes.txt", CFG)
    got = [(b.kind, b.level, b.text) for b in r.blocks]
    assert got == [
        ("heading", 1, "INTRODUCTION"),
        ("paragraph", 0, "This is wrapped prose text."),
        ("heading", 1, "1. Scope"),
        ("list_item", 0, "first point"),
        ("list_item", 0, "second point continues here"),
        ("heading", 2, "2.1 Details"),
        ("paragraph", 0, "    indented line one\n    indented line two"),
    ]


# ---------------------------------------------------------------- docx


def test_docx_structure_in_order() -> None:
    r = parse_document(docgen.docx_document(), "handbook.docx", CFG)
    assert r.format == "docx" and r.title == "Policy Handbook"
    got = [(b.kind, b.level, b.text) for b in r.blocks if b.kind != "table"]
    assert got == [
        ("heading", 1, "Policy Handbook"),
        ("paragraph", 0, "This handbook explains DOCXBODY the rules."),
        ("heading", 1, "Leave"),
        ("paragraph", 0, "Staff get twenty days of leave."),
        ("list_item", 0, "Ask your manager first"),
        ("heading", 2, "Sick leave"),
        ("paragraph", 0, "After the table."),
    ]
    table = next(b for b in r.blocks if b.kind == "table")
    assert table.text.split("\n") == [
        "| Type | Days |",
        "|---|---|",
        "| Annual | 20 |",
        "| Sick | 10 |",
    ]
    assert [b.text for b in r.blocks].index(table.text) == 6  # between heading and paragraph


def _with_part(package: bytes, name: str, size: int) -> bytes:
    """The package with one more part of `size` unpacked bytes (which deflate to almost nothing)."""
    import io
    import zipfile

    buf = io.BytesIO(package)
    with zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, b" " * size)
    return buf.getvalue()


@pytest.mark.parametrize(("name", "make"), [
    ("bomb.docx", docgen.docx_document), ("bomb.pptx", docgen.pptx_deck), ("bomb.xlsx", docgen.xlsx_workbook),
    ("bomb.odt", docgen.odt_document), ("bomb.epub", docgen.epub_book)])
def test_a_package_whose_parts_unpack_too_far_is_refused_before_it_is_opened(
        name: str, make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A zip bomb (a 1.5 MB .docx whose part unpacks to 1.5 GB took 3.1 GB of memory) is refused
    from the sizes the package declares, per part and in all, before its library reads it; the
    limits are lowered here so the test builds megabytes, not gigabytes."""
    import assets.parsing.package as package

    monkeypatch.setattr(package, "MAX_MEMBER_BYTES", 1 << 20)
    monkeypatch.setattr(package, "MAX_PACKAGE_BYTES", 3 << 20)
    assert parse_document(_with_part(make(), "word/extra.xml", 900_000), name, CFG).blocks  # under both
    with pytest.raises(TooLarge, match=r"part word/extra.xml unpacks to 2 MB, over the limit of 1 MB per part"):
        parse_document(_with_part(make(), "word/extra.xml", 2_000_000), name, CFG)
    many = make()
    for i in range(4):
        many = _with_part(many, f"word/part{i}.xml", 900_000)
    with pytest.raises(TooLarge, match=r"unpacks to \d MB in all, over the limit of 3 MB"):
        parse_document(many, name, CFG)
