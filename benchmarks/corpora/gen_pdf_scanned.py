"""pdf_scanned: the pdf_docs PDFs as a scanner would give them (every page an image, no text).

    python benchmarks/corpora/gen_pdf_scanned.py PDF_DOCS_DIR DEST_DIR [--dpi 200]

No scanned documentation with a known text could be had here (the archives' scans come with
their own OCR layer or none of the text to ask about), so the nearest real material is real
PDFs rasterised: each page rendered in grey at `--dpi` (200, a common office-scanner setting)
and written as a page-sized image in a PDF of the same page size. The questions are pdf_docs'
own (`benchmarks.devsets_eval` reads `pdf_docs.jsonl` for this set): what OCR, reading order and
headings recover is measured against what the text layer gives. The output is deterministic
for one PyMuPDF version (no dates in the files: `deflate`, no metadata).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pymupdf


def rasterise(src: Path, dest: Path, dpi: int) -> int:
    """Write `src` to `dest` as image-only pages; the number of pages."""
    doc = pymupdf.open(src)
    scan = pymupdf.open()
    for page in (doc[i] for i in range(doc.page_count)):
        pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
        out = scan.new_page(width=page.rect.width, height=page.rect.height)
        out.insert_image(out.rect, stream=pix.tobytes("png"))
    dest.parent.mkdir(parents=True, exist_ok=True)
    scan.set_metadata({})
    scan.save(dest, deflate=True, garbage=3)
    return len(scan)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", type=Path, help="the pdf_docs corpus")
    p.add_argument("dest", type=Path)
    p.add_argument("--dpi", type=int, default=200)
    a = p.parse_args(argv)
    pdfs = sorted(a.source.rglob("*.pdf"))
    if not pdfs:
        sys.exit(f"no PDFs under {a.source}: fetch pdf_docs first")
    pages = sum(rasterise(f, a.dest / f.relative_to(a.source), a.dpi) for f in pdfs)
    print(f"{len(pdfs)} PDFs, {pages} pages rasterised at {a.dpi} dpi -> {a.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
