"""Image files are read as scanned pages, through OCR (`assets.parsing.image`)."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

from assets.parsing import parse_document
from connectors.config import ParseConfig
from connectors.errors import CorruptDocument, NeedsOCR, TooLarge
from tests.fixtures.ocr import needs_tesseract

CFG = ParseConfig(ocr_dpi=200)


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


@needs_tesseract
def test_an_animated_gif_is_read_as_its_first_frame() -> None:
    """Only a TIFF's frames are pages: a spinner GIF of 1,100 frames was a too-large dead letter
    "of more than 1,000 frames to OCR", its one frame the OCR reads never read."""
    from PIL import ImageDraw

    frames = [Image.new("L", (500, 60), 255) for _ in range(1100)]
    ImageDraw.Draw(frames[0]).text((10, 10), "Please wait while the report loads", fill=0, font_size=28)
    for n, frame in enumerate(frames[1:]):
        frame.putpixel((n % 500, 50), 0)  # frames that differ, so that each is kept
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:])
    r = parse_document(buf.getvalue(), "spinner.gif", CFG)
    assert "report loads" in " ".join(b.text for b in r.blocks)
    assert r.metadata["image"] == {"kind": "GIF image", "frames": 1}
    assert any("only its first frame is read" in w for w in r.warnings)


@needs_tesseract
def test_an_image_taller_than_tesseract_reads_is_scaled_to_fit() -> None:
    """Tesseract refuses a side over 32,767 pixels: a full-page screenshot 40,000 pixels tall was
    a needs-ocr dead letter, "OCR recognise failed"."""
    from PIL import ImageDraw

    im = Image.new("L", (700, 40_000), 255)
    ImageDraw.Draw(im).text((20, 39_000), "Thanks for reading", fill=0, font_size=40)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    r = parse_document(buf.getvalue(), "screenshot.png", CFG)
    assert "Thanks for reading" in " ".join(b.text for b in r.blocks)


@needs_tesseract
def test_a_scan_named_pdf_is_read_as_the_image_it_is() -> None:
    """A JPEG saved as receipt.pdf was a format-mismatch dead letter, while a PDF named .png is
    read as a PDF: the magic number proves either."""
    r = parse_document(_scan("Receipt", "Total paid for the pump repair.", "jpg"), "receipt.pdf", CFG)
    assert r.format == "image" and "pump repair" in " ".join(b.text for b in r.blocks)
    assert any("named .pdf but is a JPEG image" in w for w in r.warnings)


@needs_tesseract
def test_a_jpeg_cut_short_says_so() -> None:
    """A JPEG cut off in a download is decoded as far as it goes: its lost text went unmentioned,
    or the image was "a picture, or a scan too small or faint"."""
    scan = _scan("Invoice Summary", "The quarterly fee covers the pumping station.", "jpg")
    r = parse_document(scan[: len(scan) * 3 // 4], "cut.jpg", CFG)
    assert "Invoice Summary" in " ".join(b.text for b in r.blocks)
    assert any("data ends early" in w for w in r.warnings)
    with pytest.raises(CorruptDocument, match="data ends early"):
        parse_document(scan[:1000], "cut.jpg", CFG)  # its tables and a strip of blank paper
    assert not parse_document(scan, "whole.jpg", CFG).warnings


@needs_tesseract
def test_a_photo_stored_sideways_is_read_upright() -> None:
    """A phone stores a photo of a page sideways, tagged (EXIF orientation 6) to be turned
    upright; MuPDF turns it, but the page was sized by the stored pixels, shrinking the upright
    page into a sideways one: "OCR read no text"."""
    from PIL import ImageDraw

    strip = Image.new("L", (1400, 200), 255)  # a till receipt's line, long and low
    ImageDraw.Draw(strip).text((20, 60), "Total paid for the pump repair", fill=0, font_size=64)
    exif = Image.Exif()
    exif[0x0112] = 6  # turn 90 degrees clockwise to show
    buf = io.BytesIO()
    strip.rotate(90, expand=True).save(buf, format="JPEG", exif=exif)
    r = parse_document(buf.getvalue(), "photo.jpg", CFG)
    assert "Total paid for the pump repair" in " ".join(b.text for b in r.blocks)


@needs_tesseract
def test_a_png_with_a_large_xmp_chunk_is_read() -> None:
    """Pillow will not unpack a text chunk over 1 MB (an editor's XMP history): the PNG was "not
    a readable PNG image". An ICC profile as large is still refused: MuPDF would unpack it whole."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = _scan("Invoice Summary", "The quarterly fee covers the pumping station.")
    packed = zlib.compress(b" " * 2_000_000)
    xmp = chunk(b"iTXt", b"XML:com.adobe.xmp\x00\x01\x00\x00\x00" + packed)
    r = parse_document(png[:33] + xmp + png[33:], "edited.png", CFG)  # after the 8-byte signature and IHDR
    assert "quarterly fee" in " ".join(b.text for b in r.blocks)
    with pytest.raises(CorruptDocument, match="too large"):
        parse_document(png[:33] + chunk(b"iCCP", b"icc\x00\x00" + packed) + png[33:], "profiled.png", CFG)
