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

import io
import re
import warnings

from assets.parsing.pdf import parse_pdf
from connectors.config import ParseConfig
from connectors.documents import ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, NeedsOCR, TooLarge, raise_if_interrupt

__all__ = ["MAX_IMAGE_PIXELS", "parse_image"]

# A frame larger than this is refused before it is decoded: a 438 KB PNG of 20,000 x 20,000 blank
# pixels took 830 MB to read, and one of 60,000 square would take several GB. Pillow, which reads
# the sizes, refuses the same (twice its warning limit); a 600 dpi A3 scan is 70 million pixels.
MAX_IMAGE_PIXELS = 178_956_970


def parse_image(data: bytes, config: ParseConfig, name: str, label: str) -> ParseResult:
    if not config.ocr:
        raise NeedsOCR(f"{name} is a {label}: its text can only be read by OCR, which is off (stages.parse.ocr)")
    sizes = _frame_sizes(data, name, label, config.max_ocr_pages)
    import pymupdf

    try:
        with pymupdf.open(stream=data) as img:
            pdf = _at_own_resolution(img.convert_to_pdf(), config.ocr_dpi)
    except Exception as e:  # MuPDF's errors for a damaged image come in several types
        raise_if_interrupt(e)
        raise CorruptDocument(f"{name} is not a readable {label}: {e}") from None
    try:
        result = parse_pdf(pdf, config)
    except EmptyDocument:  # said of the image, not of the PDF made of it
        w, h = sizes[0]
        raise EmptyDocument(f"{name}: OCR read no text from this {label} ({w:,} x {h:,} pixels"
                            f"{f', {len(sizes)} frames' if len(sizes) > 1 else ''}): a picture, or a scan "
                            "too small or faint") from None
    result.metadata["image"] = {"kind": label, "frames": len(sizes)}
    return result


def _frame_sizes(data: bytes, name: str, label: str, max_frames: int) -> list[tuple[int, int]]:
    """Each frame's size in pixels, read from the headers without decoding a pixel; TooLarge for
    a frame over MAX_IMAGE_PIXELS or more frames than `max_ocr_pages`."""
    from PIL import Image, UnidentifiedImageError

    sizes: list[tuple[int, int]] = []
    try:
        with warnings.catch_warnings():  # Pillow's bomb warning, below its error: the limit decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                for i in range(getattr(im, "n_frames", 1)):
                    if i >= max_frames:
                        raise TooLarge(f"{name}: a {label} of more than {max_frames:,} frames to OCR "
                                       "(stages.parse.max_ocr_pages)")
                    im.seek(i)  # a later frame's size is not checked by Pillow
                    w, h = im.size
                    if w * h > MAX_IMAGE_PIXELS:
                        raise _too_large(name, label, w * h)
                    sizes.append((w, h))
    except Image.DecompressionBombError as e:  # the first frame, refused by Pillow as it opened
        pixels = re.search(r"\((\d+) pixels\)", str(e))
        raise _too_large(name, label, int(pixels.group(1)) if pixels else None) from None
    except UnidentifiedImageError:
        raise CorruptDocument(f"{name} is not a readable {label}: its data does not decode as one") from None
    except (OSError, ValueError, EOFError, SyntaxError) as e:  # Pillow's other ways of saying "damaged"
        raise CorruptDocument(f"{name} is not a readable {label}: {e}") from None
    return sizes


def _too_large(name: str, label: str, pixels: int | None) -> TooLarge:
    size = f" of {pixels:,} pixels" if pixels else ""
    return TooLarge(f"{name}: a {label}{size} is too large to OCR (at most {MAX_IMAGE_PIXELS:,} pixels a frame)")


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
