"""Generate ``benchmarks/evalsets/pdf_docs.jsonl``: real PDFs with text layers, asked by their outlines.

    python -m benchmarks.corpora.gen_pdf_docs [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/pdf_docs/``, laid out by ``fetch.sh``):

- ``r-manuals/*.pdf``: six of the R manuals (``r-doc-pdf``): long single-column texinfo PDFs
  with running headers, code examples and some tables;
- ``articles/*.pdf``: six two-column documents from ``texlive-publishers-doc``: the REVTeX 4.2
  author's guide, the MNRAS author guide, and the ACM (acmart), ASME (conference and journal) and
  Quantum journal templates, which explain their own use in running text, with tables, floats
  and equations across both columns.

Queries are the PDF outline (bookmark) titles. The outline entry names a page and a point on it;
the generator finds the title's words on that page nearest to that point (the heading, not a
running header or a cross-reference) and takes the next words of the page in reading order as
the gold snippet. The snippet is cut before the first word whose text a careful parser would
change (a ligature such as "ﬁ", a word hyphenated across a line end), so the same snippet is
found in a naive extraction and in a repaired one, and it ends with the first text block after
the heading (a structure-aware chunker may rightly split there); at least `MIN_WORDS` words must
remain, or the entry is skipped.

Titles used twice in the set ("Introduction", "References") are ambiguous and dropped, as are
outline entries for contents, index and bibliography pages. At most `PER_DOC` entries are kept per
document, spread evenly through its outline so every depth is represented. Category =
``manual-`` or ``two-column-`` + the outline depth (L1, L2, L3+).
"""

from __future__ import annotations

import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf

from benchmarks.corpora.evalset_tools import Case, generate
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "pdf_docs.jsonl"
PER_DOC = 25
SNIPPET_WORDS = 10
MIN_WORDS = 5
SKIP_TITLES = {"contents", "table of contents", "index", "references", "bibliography",
               "acknowledgments", "acknowledgements", "concept index", "function and variable index"}


def _unsafe(word: str, line_end: bool) -> bool:
    """True if a parser that repairs PDFs would change this word: a ligature or other
    compatibility character, or a hyphen that splits the word across a line end."""
    if any(unicodedata.normalize("NFKC", c) != c for c in word):
        return True
    return line_end and word.endswith(("-", "\u2010", "\u00ad"))


def _page_tokens(page: pymupdf.Page) -> list[tuple[str, int, Any, bool]]:
    """(token, word index, word tuple, unsafe) in the page's reading order."""
    words = page.get_text("words")
    out = []
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else None
        line_end = nxt is None or (nxt[5], nxt[6]) != (w[5], w[6])
        bad = _unsafe(w[4], line_end)
        out += [(t, i, w, bad) for t in normalise(w[4]).split()]
    return out


def _snippet(page: pymupdf.Page, title: str, point: pymupdf.Point) -> str | None:
    """The words after the heading ``title`` that sits nearest ``point`` (PDF user space)."""
    want = normalise(title).split()
    while want and want[0].isdigit():
        want = want[1:]  # "2 Installing R" -> the page may number it differently
    if not want:
        return None
    toks = _page_tokens(page)
    tx, ty = point.x, page.rect.height - point.y  # outline points are bottom-up
    best: tuple[float, int] | None = None
    for i in range(len(toks) - len(want) + 1):
        if [t[0] for t in toks[i : i + len(want)]] != want:
            continue
        x0, y0 = toks[i][2][0], toks[i][2][1]
        if y0 < ty - 12:
            continue
        dist = (y0 - ty) + 0.5 * abs(x0 - tx)
        if best is None or dist < best[0]:
            best = (dist, i + len(want))
    if best is None:
        return None
    words: list[str] = []
    block = None
    for tok, _, word, bad in toks[best[1] :]:
        if bad or len(words) == SNIPPET_WORDS or (block is not None and word[5] != block):
            break  # a snippet stays inside the first text block (paragraph) after the heading
        block = word[5]
        words.append(tok)
    return " ".join(words) if len(words) >= MIN_WORDS else None


def _depth(level: int) -> str:
    return f"L{level}" if level < 3 else "L3+"


def _spread(items: list[Case], n: int) -> list[Case]:
    if len(items) <= n:
        return items
    return [items[(i * len(items)) // n] for i in range(n)]


def doc_cases(root: Path, path: Path, layout: str) -> list[Case]:
    doc_id = path.relative_to(root).as_posix()
    out: list[Case] = []
    with pymupdf.open(path) as pdf:
        for level, title, pno, dest in pdf.get_toc(simple=False):
            title = " ".join(title.split())
            point = dest.get("to")
            if pno < 1 or point is None or normalise(title) in SKIP_TITLES:
                continue
            snippet = _snippet(pdf[pno - 1], title, point)
            if snippet:
                out.append({"query": title, "gold": [{"doc": doc_id, "text": snippet}],
                            "category": f"{layout}-{_depth(level)}", "exclude_docs": []})
    return out


def cases(root: Path) -> list[Case]:
    found: list[Case] = []
    for folder, layout in (("r-manuals", "manual"), ("articles", "two-column")):
        for path in sorted((root / folder).glob("*.pdf")):
            found += doc_cases(root, path, layout)
    counts = Counter(normalise(c["query"]) for c in found)
    kept: list[Case] = []
    for doc in dict.fromkeys(c["gold"][0]["doc"] for c in found):
        mine = [c for c in found if c["gold"][0]["doc"] == doc and counts[normalise(c["query"])] == 1]
        kept += _spread(mine, PER_DOC)
    return [{"id": f"pdf-{i}", **c} for i, c in enumerate(kept)]


def main() -> int:
    return generate("pdf_docs", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
