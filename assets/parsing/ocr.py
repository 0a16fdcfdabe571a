"""Where Tesseract's language data lives, so PyMuPDF's built-in OCR can use it.

PyMuPDF links Tesseract itself; it needs only the `tessdata` folder with `<lang>.traineddata`
(Debian: `apt-get install tesseract-ocr tesseract-ocr-eng`, data under
/usr/share/tesseract-ocr/5/tessdata). `TESSDATA_PREFIX` wins when set.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from connectors.documents import Block

__all__ = ["ESTIMATED_PAGES_KEY", "PLACEHOLDER_WORDS", "find_tessdata", "installed_languages",
           "ocr_deferred", "ocr_is_deferred", "ocr_unavailable_reason", "placeholder_blocks"]

# `bindery plan` does not OCR: reading a scan takes seconds a page, so a plan of a scanned archive
# took as long as the sync it planned (298 s against 301 s for six scanned papers, 53 pages). Under
# `ocr_deferred` a page the parse would OCR is read as placeholder text instead, and the parse's
# metadata counts those pages (ESTIMATED_PAGES_KEY), so the plan can say which of its counts are
# estimates. The placeholder is as much text as a scanned page holds, in sections and paragraphs
# of mixed lengths, so that the chunker cuts it as it would cut the page at any chunk size:
# against the 53 pages of six LaTeX papers scanned at 300 dpi (benchmarks/corpora/gen_pdf_scanned.py),
# read by OCR and chunked at max_tokens 80 / 120 / 200 / 400 / 800, placeholders give 0.98 / 0.92 /
# 0.96 / 0.99 / 0.78 times the real chunk count (20.7 / 13.1 / 7.5 / 4.0 / 2.6 a page). A fixed
# 7 one-chunk sections a page were right only at the default size (0.38 at 80, 2.7 at 800).
_DEFERRED: ContextVar[bool] = ContextVar("bindery_ocr_deferred", default=False)
PLACEHOLDER_SECTIONS = 2
PLACEHOLDER_SECTION_WORDS = 400
PLACEHOLDER_WORDS = PLACEHOLDER_SECTIONS * PLACEHOLDER_SECTION_WORDS  # a scanned page's text
ESTIMATED_PAGES_KEY = "ocr_estimated_pages"
_PARAGRAPH_WORDS = (23, 47, 31, 68, 15, 52, 39, 27, 61)  # mixed, as real paragraphs: packing them is not quantised


@contextmanager
def ocr_deferred(deferred: bool = True) -> Iterator[None]:
    """Within it (this thread), pages to OCR are placeholders (`placeholder_blocks`), not read."""
    token = _DEFERRED.set(deferred)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def ocr_is_deferred() -> bool:
    return _DEFERRED.get()


_FILLER = ("the", "plan", "has", "not", "read", "this", "scanned", "page", "so", "these", "words", "stand", "for",
           "its", "text")


def placeholder_blocks(page: int, salt: str) -> list[Block]:
    """What a scanned page stands for in a plan: PLACEHOLDER_SECTIONS headed sections of
    PLACEHOLDER_SECTION_WORDS ordinary words in paragraphs, named by `salt` (the document's) and
    page so that no two are alike: none is found in a cache, or counted once for two documents."""
    blocks: list[Block] = []
    for k in range(1, PLACEHOLDER_SECTIONS + 1):
        name = f"{_letters(page)} {_letters(k)}"
        blocks.append(Block("heading", f"Scanned page {page} section {k} ({name})", level=2, page=page))
        left, j = PLACEHOLDER_SECTION_WORDS, 0
        while left > 0:
            n = min(_PARAGRAPH_WORDS[(j + k + page) % len(_PARAGRAPH_WORDS)], left)
            words = " ".join(_FILLER[i % len(_FILLER)] for i in range(n)).capitalize()
            blocks.append(Block("paragraph", f"{words} ({salt} {name} {_letters(j)}).", page=page))
            left, j = left - n, j + 1
    return blocks


def _letters(n: int) -> str:
    """`n` in letters (1 -> "b", 27 -> "bb"): digits are all one to the repeated-line metric,
    which would take the placeholders for a running header and the scan for a bad parse."""
    out = ""
    while True:
        n, r = divmod(n, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
        if not n:
            return out

_CANDIDATES = (
    "/usr/share/tesseract-ocr/*/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
    "/usr/share/tesseract-ocr/tessdata",
)


def _folders() -> list[str]:
    env = os.environ.get("TESSDATA_PREFIX")
    folders = [env, os.path.join(env, "tessdata")] if env else []
    for pattern in _CANDIDATES:
        folders.extend(sorted(glob.glob(pattern), reverse=True))  # newest version first
    return folders


def installed_languages() -> list[str]:
    """Every language some tessdata folder holds (empty: Tesseract's data is not installed)."""
    found = {name.removesuffix(".traineddata") for folder in _folders() if folder and os.path.isdir(folder)
             for name in os.listdir(folder) if name.endswith(".traineddata")}
    return sorted(found)


def _has_languages(folder: str, language: str) -> bool:
    return all(
        os.path.isfile(os.path.join(folder, f"{lang}.traineddata")) for lang in language.split("+")
    )


@functools.lru_cache(maxsize=8)
def find_tessdata(language: str = "eng") -> str | None:
    """The tessdata folder holding every language in `language` ("eng", "eng+deu"), or None."""
    for folder in _folders():
        if folder and _has_languages(folder, language):
            return folder
    return None


def ocr_unavailable_reason(language: str) -> str:
    """A human explanation of why OCR cannot run for `language`."""
    return (
        f"Tesseract language data for {language!r} was not found "
        "(install tesseract-ocr and tesseract-ocr-<lang>, or set TESSDATA_PREFIX)"
    )
