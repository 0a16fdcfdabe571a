"""Parse-quality metrics: cheap numbers that expose a bad parse without reading it.

A good text layer is mostly letters and digits, mostly word-shaped tokens, and fills its pages.
Typical failures have signatures: a scan indexed without OCR → empty pages; OCR of a picture or
a font without a Unicode map → low `word_share` / `alnum_share`; unstripped running headers →
high `repeated_line_share`. Everything here is pure Python over the extracted text (no models),
so computing it costs far less than the parse itself.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from statistics import fmean
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.documents import ParseResult

__all__ = ["EMPTY_PAGE_CHARS", "document_metrics", "measurable_text", "page_metrics", "word_share"]

EMPTY_PAGE_CHARS = 20  # a page with fewer extracted characters counts as empty
REPEAT_MIN = 10  # shorter lines ("Day 3", "Notes") may legitimately repeat

# Short English function words that fail the "2–20 letters with a vowel" shape test or are
# too short to trust on their own; hits count as words.
_STOPWORDS = frozenset(
    {"a", "i", "o", "by", "my", "hm", "mr", "ms", "dr", "st", "nd", "rd", "th", "vs", "pp", "cf"}
)
_SINGLE_LETTER_WORDS = frozenset("aAIO")
_VOWELS = frozenset("aeiouyAEIOUY")
_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'`.,;:!?()[]{}<>«»“”‘’*_~|/\\-–—…"
_NUMERIC = re.compile(r"^[\d.,:/%+\-−$€£¥#]+$")
_STRUCTURAL = {"table", "code"}
_SPACE_RUNS = re.compile(r"\s+")
_NON_ALNUM = re.compile(r"[\W_]+")
_IDENT_SPLIT = re.compile(r"::|[._@/<>&*(),]")  # not a lone ":": "(cid:12)" is a PDF's unmapped glyph
_TRAILING_DIGITS = re.compile(r"\d+$")
# scripts written without spaces between words: CJK ideographs, kana, Hangul, Thai, Lao, Myanmar, Khmer
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
                       "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")
_TABLE_RULE = re.compile(r"^\|?(?:\s*:?-{3,}:?\s*\|)+\s*$")


def measurable_text(kind: str, text: str) -> str:
    """The text of a block as the metrics should see it: a Markdown table's cells without
    its pipes and separator row (a table of numbers is not 60 % punctuation)."""
    if kind != "table":
        return text
    rows = [ln for ln in text.split("\n") if not _TABLE_RULE.match(ln.strip())]
    return "\n".join(" ".join(c.strip() for c in ln.strip().strip("|").split(" | ")) for ln in rows)


@functools.lru_cache(maxsize=1 << 16)  # a corpus repeats its words: judge each once per process
def _is_word(tok: str) -> bool:
    core = tok.replace("-", "").replace("'", "").replace("\u2019", "")
    if not core.isascii() and not core.isalpha():
        # Chinese and Japanese write no spaces: a whitespace token is a whole clause, its
        # punctuation (。、「」) inside it. It is words when its runs between punctuation are
        # letters (or numbers) of a script written without spaces; every CJK page was refused
        # as "word-like token share 0.00" before (mojibake such as "Ã©Ã¨" is still not words).
        runs = [r for r in _NON_ALNUM.split(core) if r]
        if runs and all(r.isalpha() or r.isdigit() for r in runs) and _UNSPACED.search(core):
            return True
    if not core.isalpha():
        # Identifiers, key paths and addresses ("owner.contact.email", "ops@example.com",
        # "snake_case", C++'s "sigc::signal6" and "std::vector<int>", Rust's "&mut") are words
        # when every part is a name or a number and one is a word ("arg1" reads as "arg"). An API
        # reference is mostly such names: 33 of 277 pages of a Doxygen reference (template
        # classes, member lists) were refused as garbled, "word-like token share < 0.4".
        return _is_identifier(core)
    if not core.isascii():
        return True  # accented Latin or another script: alphabetic is good enough
    if len(core) == 1:
        # A lone letter is a word only as "a", "I" or "O"; OCR of pictures and noise is
        # full of lone "i", "H", "t" (and a blank-spaced letter-by-letter line is junk too).
        return core in _SINGLE_LETTER_WORDS
    if core.lower() in _STOPWORDS:
        return True
    return 2 <= len(core) <= 20 and any(ch in _VOWELS for ch in core)


def _is_identifier(core: str) -> bool:
    """Whether a token of separated parts is a name: every part a number, a word (trailing
    digits aside: "arg1"), a single letter (`T`), or in code (`::`, `<>`, a leading `&`) a short
    abbreviation (`std`); and one part a word of two letters or more. Junk joined by separators
    ("x7q/zk3", "l_1_i") stays junk."""
    parts = [p for p in _IDENT_SPLIT.split(core) if p]
    if not parts or parts == [core]:
        return False
    code = "::" in core or "<" in core or core.startswith(("&", "*"))
    words = 0
    for p in parts:
        stem = _TRAILING_DIGITS.sub("", p)
        if p.isdigit():
            continue
        if stem.isalpha() and _is_word(stem):  # "I" of "I/O" too
            words += 1
        elif not (stem.isalpha() and (len(stem) == 1 or (
                code and stem.isascii() and stem.islower() and len(stem) <= 3))):
            return False
    return words > 0


def _tokens(text: str) -> tuple[int, int]:
    """(word-like tokens, tokens counted); purely numeric tokens are neutral and not counted."""
    words = counted = 0
    for raw, n in Counter(_TOKEN.findall(text)).items():  # judge each distinct token once
        tok = raw.strip(_EDGE_PUNCT)
        if not tok or _NUMERIC.match(tok):
            continue
        counted += n
        if _is_word(tok):
            words += n
    return words, counted


def word_share(text: str) -> float:
    """Share of non-numeric tokens that look like words (0.0 when there are none)."""
    words, counted = _tokens(text)
    return words / counted if counted else 0.0


def page_metrics(text: str) -> dict[str, Any]:
    """Metrics of one page (or one unpaginated document) of extracted text."""
    visible = len(text) - sum(len(m) for m in _SPACE_RUNS.findall(text))
    alnum = len(_NON_ALNUM.sub("", text))
    words, counted = _tokens(text)
    return {
        "chars": len(text),
        "alnum_share": round(alnum / visible, 4) if visible else 0.0,
        "word_share": round(words / counted, 4) if counted else 0.0,
        "tokens": counted,
    }


def _repeated_line_share(lines: list[str]) -> float:
    keys = [
        re.sub(r"\d+", "#", ln.strip().lower()) for ln in lines if len(ln.strip()) >= REPEAT_MIN
    ]
    if len(keys) < 2:
        return 0.0
    return round((len(keys) - len(set(keys))) / len(keys), 4)


def document_metrics(result: ParseResult, n_bytes: int) -> dict[str, Any]:
    """Document-level metrics from a finished ParseResult and the size of its source bytes.

    Paginated documents (PDF) are measured per page from `result.page_metrics`; every other
    format counts as a single page.
    """
    text = "\n\n".join(measurable_text(b.kind, b.text) for b in result.blocks)
    prose_lines = [
        ln for b in result.blocks if b.kind not in _STRUCTURAL for ln in b.text.split("\n")
    ]
    base = page_metrics(text)
    pages = result.page_metrics
    n_pages = len(pages) or 1
    if pages:
        empty = sum(1 for p in pages if p.get("chars", 0) < EMPTY_PAGE_CHARS)
    else:
        empty = int(base["chars"] < EMPTY_PAGE_CHARS)
    routes = Counter(p.get("route", "text") for p in pages)
    confidences = [p["ocr_confidence"] for p in pages if p.get("ocr_confidence") is not None]
    kinds = Counter(b.kind for b in result.blocks)
    return {
        "chars": base["chars"],
        "pages": n_pages,
        "chars_per_page": round(base["chars"] / n_pages, 1),
        "chars_per_mb": round(base["chars"] / (n_bytes / 1e6), 1) if n_bytes else 0.0,
        "alnum_share": base["alnum_share"],
        "word_share": base["word_share"],
        "empty_page_share": round(empty / n_pages, 4),
        "repeated_line_share": _repeated_line_share(prose_lines),
        "ocr_pages": routes.get("ocr", 0),
        "ocr_confidence": round(fmean(confidences), 2) if confidences else None,
        "routes": dict(routes),
        "blocks": len(result.blocks),
        "headings": kinds.get("heading", 0) + kinds.get("title", 0),
        "tables": kinds.get("table", 0),
    }
