"""Shared PDF helpers: an A4 flowing-layout writer over PyMuPDF and a deterministic save.

Every PDF of the corpus (and the email attachment, and the source of the truncated PDF) is
built with FlowPdf; save_pdf fixes the metadata dates and ids so the bytes never change.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pymupdf

PDF_DATE = "D:20241015090000+00'00'"

A4 = pymupdf.paper_rect("a4")
MARGIN_X = 56
TOP = 72
BOTTOM = A4.height - 64


def wrap(text: str, width: float, fontname: str, fontsize: float) -> list[str]:
    """Greedy word wrap using the built-in font metrics."""
    lines: list[str] = []
    cur = ""
    for word in text.split():
        trial = f"{cur} {word}" if cur else word
        if pymupdf.get_text_length(trial, fontname=fontname, fontsize=fontsize) <= width or not cur:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return lines


class FlowPdf:
    """A tiny flowing-layout writer: headings, paragraphs, bullets, code, grid tables.

    Every page gets a running header line and a "Page N of M" footer (added at save time).
    A paragraph never splits across pages, so a sentence is always contiguous on one page.
    """

    def __init__(self, header: str, footer: str, title: str, author: str = "Northwind Robotics"):
        self.doc = pymupdf.open()
        self.header = header
        self.footer = footer
        self.title = title
        self.author = author
        self.page: pymupdf.Page = self.doc.new_page(width=A4.width, height=A4.height)
        self.y = float(TOP)
        self.width = A4.width - 2 * MARGIN_X

    def new_page(self) -> None:
        self.page = self.doc.new_page(width=A4.width, height=A4.height)
        self.y = float(TOP)

    def ensure(self, height: float) -> None:
        if self.y + height > BOTTOM:
            self.new_page()

    def lines(
        self,
        lines: list[str],
        fontname: str,
        fontsize: float,
        x: float,
        leading: float,
        color=(0, 0, 0),
    ) -> None:
        for line in lines:
            self.page.insert_text((x, self.y + fontsize), line, fontname=fontname, fontsize=fontsize, color=color)
            self.y += leading

    def title_block(self, text: str, subtitle: str | None = None) -> None:
        self.ensure(60)
        self.lines(wrap(text, self.width, "hebo", 20), "hebo", 20, MARGIN_X, 26)
        if subtitle:
            self.y += 2
            self.lines(
                wrap(subtitle, self.width, "helv", 11),
                "helv",
                11,
                MARGIN_X,
                15,
                color=(0.3, 0.3, 0.3),
            )
        self.y += 14

    def heading(self, text: str, level: int = 1) -> None:
        size = {1: 15, 2: 12.5, 3: 11}[level]
        self.ensure(size * 1.4 + 40)  # keep with at least a couple of body lines
        self.y += 6 if level == 1 else 3
        self.lines(wrap(text, self.width, "hebo", size), "hebo", size, MARGIN_X, size * 1.35)
        self.y += 4

    def para(self, text: str, fontname: str = "helv", fontsize: float = 10.5) -> None:
        text = " ".join(text.split())
        lines = wrap(text, self.width, fontname, fontsize)
        leading = fontsize * 1.38
        self.ensure(len(lines) * leading)
        self.lines(lines, fontname, fontsize, MARGIN_X, leading)
        self.y += 7

    def bullets(self, items: list[str], fontsize: float = 10.5, numbered: bool = False) -> None:
        leading = fontsize * 1.38
        for i, item in enumerate(items, 1):
            item = " ".join(item.split())
            lines = wrap(item, self.width - 18, "helv", fontsize)
            self.ensure(len(lines) * leading)
            mark = f"{i}." if numbered else "-"
            self.page.insert_text((MARGIN_X + 2, self.y + fontsize), mark, fontname="helv", fontsize=fontsize)
            self.lines(lines, "helv", fontsize, MARGIN_X + 18, leading)
            self.y += 2
        self.y += 6

    def code(self, text: str, fontsize: float = 9) -> None:
        lines = dedent(text).strip("\n").splitlines()
        leading = fontsize * 1.35
        h = len(lines) * leading + 10
        self.ensure(h)
        rect = pymupdf.Rect(MARGIN_X, self.y, MARGIN_X + self.width, self.y + h)
        self.page.draw_rect(rect, color=(0.8, 0.8, 0.8), fill=(0.95, 0.95, 0.95), width=0.5)
        self.y += 5
        self.lines(lines, "cour", fontsize, MARGIN_X + 6, leading)
        self.y += 12

    def table(
        self,
        header: list[str],
        rows: list[list[str]],
        col_widths: list[float],
        fontsize: float = 9.5,
        caption: str | None = None,
    ) -> None:
        """Draw a ruled grid; cells are written row by row, left to right."""
        row_h = fontsize * 2.1
        total_w = sum(col_widths)
        self.ensure(row_h * (len(rows) + 1) + (20 if caption else 0))
        if caption:
            self.lines([caption], "hebo", 10, MARGIN_X, 16)
            self.y += 2
        for r, cells in enumerate([header, *rows]):
            x = float(MARGIN_X)
            top = self.y
            if r == 0:
                self.page.draw_rect(
                    pymupdf.Rect(MARGIN_X, top, MARGIN_X + total_w, top + row_h),
                    color=None,
                    fill=(0.86, 0.89, 0.94),
                )
            for c, cell in enumerate(cells):
                rect = pymupdf.Rect(x, top, x + col_widths[c], top + row_h)
                self.page.draw_rect(rect, color=(0.2, 0.2, 0.2), width=0.6)
                font = "hebo" if r == 0 else "helv"
                self.page.insert_text(
                    (x + 5, top + row_h / 2 + fontsize * 0.35),
                    cell,
                    fontname=font,
                    fontsize=fontsize,
                )
                x += col_widths[c]
            self.y += row_h
        self.y += 12

    def save(self, path: Path) -> None:
        n = len(self.doc)
        for i in range(1, n + 1):
            page = self.doc[i - 1]
            page.insert_text((MARGIN_X, 40), self.header, fontname="helv", fontsize=8, color=(0.4, 0.4, 0.4))
            page.draw_line((MARGIN_X, 46), (A4.width - MARGIN_X, 46), color=(0.7, 0.7, 0.7), width=0.5)
            page.insert_text(
                (MARGIN_X, A4.height - 36),
                self.footer,
                fontname="helv",
                fontsize=8,
                color=(0.4, 0.4, 0.4),
            )
            label = f"Page {i} of {n}"
            w = pymupdf.get_text_length(label, fontname="helv", fontsize=8)
            page.insert_text(
                (A4.width - MARGIN_X - w, A4.height - 36),
                label,
                fontname="helv",
                fontsize=8,
                color=(0.4, 0.4, 0.4),
            )
        save_pdf(self.doc, path, self.title, self.author)


def save_pdf(doc, path: Path, title: str, author: str = "Northwind Robotics") -> None:
    doc.set_metadata(
        {
            "title": title,
            "author": author,
            "subject": "",
            "keywords": "",
            "creator": "Bindery sample corpus generator",
            "producer": "PyMuPDF",
            "creationDate": PDF_DATE,
            "modDate": PDF_DATE,
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    data = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    path.write_bytes(data)
