"""Image files (PNG, JPEG, TIFF, GIF) as scanned pages: read through OCR.

A folder of scans (a fax's multi-page TIFF, photographed receipts, pages a copier saved as JPEG)
is documents whose text exists only as pixels; they were `unsupported-format` dead letters. Each
image (each frame of a TIFF) becomes one page of a PDF (`Document.convert_to_pdf`: the pixels are
kept as they are), sized so that OCR at `ocr_dpi` sees the image's own pixels, and that PDF goes
through the PDF parser, whose scanned-page route OCRs it (`pdf._ocr_page`, `pdf_ocr`: columns, dust, headings as
a scan shows them) within the same limits: `stages.parse.ocr`, `ocr_language`, `ocr_dpi`,
`max_ocr_pages`, and a render capped at `pdf.MAX_OCR_PIXELS`. With OCR off or Tesseract missing
an image is a `needs-ocr` dead letter saying so. An image attached to an e-mail is not read
(`assets.parsing._parse`): a logo or a signature's badge would put noise in every message.
"""

from __future__ import annotations

from assets.parsing.pdf import parse_pdf
from connectors.config import ParseConfig
from connectors.documents import ParseResult
from connectors.errors import CorruptDocument, NeedsOCR, raise_if_interrupt

__all__ = ["parse_image"]


def parse_image(data: bytes, config: ParseConfig, name: str, label: str) -> ParseResult:
    if not config.ocr:
        raise NeedsOCR(f"{name} is a {label}: its text can only be read by OCR, which is off (stages.parse.ocr)")
    import pymupdf

    try:
        with pymupdf.open(stream=data) as img:
            frames = len(img)
            pdf = _at_own_resolution(img.convert_to_pdf(), config.ocr_dpi)
    except Exception as e:  # MuPDF's errors for a damaged image come in several types
        raise_if_interrupt(e)
        raise CorruptDocument(f"{name} is not a readable {label}: {e}") from None
    result = parse_pdf(pdf, config)
    result.metadata["image"] = {"kind": label, "frames": frames}
    return result


def _at_own_resolution(pdf: bytes, dpi: int) -> bytes:
    """The pages resized so that OCR's render at `dpi` gives each image its own pixels. A page
    is sized by the resolution an image declares, and one that declares none (72 or 96 dpi is
    assumed) made a page three or four times too large, enlarged that much before OCR: slower,
    and read no better."""
    import pymupdf

    src = pymupdf.open(stream=pdf)
    out = pymupdf.open()
    for i in range(src.page_count):
        page = src[i]
        images = page.get_images()
        w, h = (images[0][2], images[0][3]) if images else (page.rect.width * dpi / 72, page.rect.height * dpi / 72)
        rect = pymupdf.Rect(0, 0, max(1.0, w * 72 / dpi), max(1.0, h * 72 / dpi))
        out.new_page(width=rect.width, height=rect.height).show_pdf_page(rect, src, i)
    return bytes(out.tobytes())
