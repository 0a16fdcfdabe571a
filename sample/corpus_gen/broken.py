"""Deliberately broken files (broken/): a truncated PDF, binary bytes named .txt, an empty .md.

They exercise the dead-letter path: a sync reports them as failed without failing the run.
"""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf

from .pdf_layout import FlowPdf


def pdf_spare_parts(path: Path) -> bytes:
    """A valid PDF whose first 40 % becomes broken/truncated-spare-parts.pdf."""
    p = FlowPdf("Northwind Robotics - Spare parts list", "NW-SPL-2024", "Spare parts list")
    p.title_block("Spare parts list 2024")
    for i in range(3):
        p.heading(f"Group {i + 1}")
        p.para("Spare parts are shipped from the central warehouse in Eindhoven. " * 6)
        p.table(
            ["Part", "Description", "Price (EUR)"],
            [[f"NW-SP-{i}{j:02d}", f"Spare part {i}-{j}", f"{40 + 13 * j}"] for j in range(8)],
            [90, 250, 90],
        )
    p.save(path)
    return path.read_bytes()


def broken(out: Path) -> None:
    b = out / "broken"
    b.mkdir(parents=True, exist_ok=True)
    tmp = out / ".spare-parts.tmp.pdf"
    pdf_spare_parts(tmp)
    # Re-save with object streams: the page tree then lives near the end of the file, so the
    # truncated copy opens (after MuPDF's repair) with zero pages instead of a partial document.
    with pymupdf.open(tmp) as doc:
        full = doc.tobytes(garbage=3, deflate=True, no_new_id=True, use_objstms=1)
    tmp.unlink()
    (b / "truncated-spare-parts.pdf").write_bytes(full[: int(len(full) * 0.4)])
    rng = random.Random(20240917)
    blob = bytearray(rng.getrandbits(8) for _ in range(4096))
    for i in range(0, len(blob), 7):
        blob[i] = 0
    (b / "sensor-dump.txt").write_bytes(bytes(blob))
    (b / "empty.md").write_bytes(b"")
