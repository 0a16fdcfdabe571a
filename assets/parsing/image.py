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
import struct
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
    sizes, animated = _frame_sizes(data, name, label, config.max_ocr_pages)
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
        if cut := _cut_short():
            raise CorruptDocument(f"{name} is not a readable {label}: its data ends early ({cut}); OCR read "
                                  "no text from the part there is") from None
        w, h = sizes[0]
        raise EmptyDocument(f"{name}: OCR read no text from this {label} ({w:,} x {h:,} pixels"
                            f"{f', {len(sizes)} frames' if len(sizes) > 1 else ''}): a picture, or a scan "
                            "too small or faint") from None
    if cut := _cut_short():
        result.warnings.append(f"{name}: the {label}'s data ends early ({cut}); only the part before "
                               "the cut was read")
    result.metadata["image"] = {"kind": label, "frames": len(sizes)}
    if animated:
        result.warnings.append(f"{name} is an animated {label}: only its first frame is read")
    return result


def _frame_sizes(data: bytes, name: str, label: str, max_frames: int) -> tuple[list[tuple[int, int]], bool]:
    """The size in pixels of each frame that becomes a page, read from the headers without
    decoding a pixel, and whether other frames are left unread; TooLarge for a frame over
    MAX_IMAGE_PIXELS or more frames than `max_ocr_pages`. Only a TIFF's frames are pages
    (`convert_to_pdf` reads an animated GIF, PNG or a JPEG's MPO pictures as their first
    frame): a spinner GIF of 1,100 frames was a too-large dead letter "of more than 1,000
    frames to OCR", its one readable frame never read."""
    from PIL import Image, UnidentifiedImageError

    sizes: list[tuple[int, int]] = []
    animated = False
    try:
        with warnings.catch_warnings():  # Pillow's bomb warning, below its error: the limit decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                if label != "TIFF image":
                    animated = bool(getattr(im, "is_animated", False))
                for i in range(getattr(im, "n_frames", 1) if label == "TIFF image" else 1):
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
        if isinstance(e, ValueError) and label == "PNG image" and (size := _png_size_past_text(data)):
            w, h = size
            if w * h > MAX_IMAGE_PIXELS:
                raise _too_large(name, label, w * h) from None
            return [(w, h)], False
        raise CorruptDocument(f"{name} is not a readable {label}: {e}") from None
    return sizes, animated


def _png_size_past_text(data: bytes) -> tuple[int, int] | None:
    """A PNG's size from its header, where Pillow refused it over a text chunk too large for it
    to unpack (over 1 MB: an editor's XMP history): metadata, not damage, and MuPDF reads the
    pixels past it. None where an ICC profile comes before the pixels, the chunk Pillow may have
    refused: MuPDF unpacks that whole (a 2 MB PNG's took 2 GB), so the refusal stands."""
    if data[12:16] != b"IHDR" or len(data) < 24:
        return None
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IDAT":
            break
        if kind == b"iCCP":
            return None
        pos += 12 + length
    w, h = struct.unpack(">II", data[16:24])
    return w, h


def _cut_short() -> str | None:
    """MuPDF's warning, given as OCR rendered the pages, that an image's data ended early: a
    JPEG cut off in a download is decoded as far as it goes, the rest left grey, and its text
    was lost with no word said (or the image was "a picture, or a scan too small or faint")."""
    import pymupdf

    said = pymupdf.TOOLS.mupdf_warnings()  # since `parse_pdf` opened the PDF made of the image
    return next((line.strip() for line in said.splitlines() if "premature end" in line), None)


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
        images = page.get_image_info()
        w, h = ((images[0]["width"], images[0]["height"]) if images
                else (page.rect.width * dpi / 72, page.rect.height * dpi / 72))
        if images and abs(images[0]["transform"][0]) < abs(images[0]["transform"][1]):
            # drawn a quarter turn round: MuPDF applies an EXIF orientation (a phone's photo of a
            # page is stored sideways, tagged to be turned upright), so the page's width is the
            # image's height; unswapped, the upright page was shrunk into a sideways one, and
            # its text was too small to read
            w, h = h, w
        rect = pymupdf.Rect(0, 0, max(1.0, w * 72 / dpi), max(1.0, h * 72 / dpi))
        out.new_page(width=rect.width, height=rect.height).show_pdf_page(rect, src, i)
    return bytes(out.tobytes())
