"""Image files are read as scanned pages, through OCR (`assets.parsing.image`)."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

from assets.parsing import parse_document
from assets.parsing.ocr import find_tessdata
from connectors.config import ParseConfig
from connectors.errors import CorruptDocument, NeedsOCR, TooLarge

CFG = ParseConfig(ocr_dpi=200)
needs_tesseract = pytest.mark.skipif(
    find_tessdata("eng") is None,
    reason="Tesseract eng data not installed (apt-get install tesseract-ocr tesseract-ocr-eng)",
)


def _scan(title: str, body: str, fmt: str = "png") -> bytes:
    """A page as a scanner saves it: an image at 200 dpi, no text layer."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), title, fontsize=22)
    page.insert_text((72, 140), body, fontsize=11)
    return bytes(page.get_pixmap(dpi=200).tobytes(fmt))


@needs_tesseract
@pytest.mark.parametrize("fmt", ["png", "jpg"])
def test_a_scanned_image_is_read_by_ocr(fmt: str) -> None:
    scan = _scan("Invoice Summary", "The quarterly fee covers the pumping station.", fmt)
    r = parse_document(scan, f"scan.{fmt}", CFG)
    assert r.format == "image" and r.title == "Invoice Summary"
    assert "quarterly fee covers the pumping station" in " ".join(b.text for b in r.blocks)


@needs_tesseract
def test_every_frame_of_a_tiff_is_a_page() -> None:
    frames = [Image.open(io.BytesIO(_scan(f"Part {n}", f"Page {n} of the fax holds its own words."))) for n in (1, 2)]
    buf = io.BytesIO()
    frames[0].save(buf, format="TIFF", save_all=True, append_images=frames[1:])
    r = parse_document(buf.getvalue(), "fax.tif", CFG)
    assert r.metadata["image"] == {"kind": "TIFF image", "frames": 2}
    assert {b.page for b in r.blocks} == {1, 2}


def test_an_image_without_ocr_says_so() -> None:
    with pytest.raises(NeedsOCR, match="OCR, which is off"):
        parse_document(_scan("Title", "Body text."), "scan.png", ParseConfig(ocr=False))


def test_an_image_too_large_to_decode_is_refused_before_it_is() -> None:
    """A 438 KB PNG of 20,000 x 20,000 blank pixels took 830 MB to read; refused from its header."""
    buf = io.BytesIO()
    Image.new("1", (20_000, 9_000)).save(buf, format="PNG")  # 180 million pixels, a few KB
    with pytest.raises(TooLarge, match="180,000,000 pixels is too large to OCR"):
        parse_document(buf.getvalue(), "bomb.png", CFG)
    with pytest.raises(CorruptDocument, match="does not decode"):
        parse_document(b"\xff\xd8\xff" + bytes(50), "broken.jpg", CFG)
