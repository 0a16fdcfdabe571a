"""Generate ``benchmarks/evalsets/flex_manual.jsonl`` from the GNU flex manual (package ``flex-doc``).

    python -m benchmarks.corpora.gen_flex_manual [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/flex_manual/html/*.html``, laid out by ``fetch.sh``) is the flex manual as
Debian ships it: texinfo-generated HTML, one page per node (about 210 pages: the manual proper and
its FAQ chapter). ``fetch.sh`` leaves the manual's index pages out of the corpus, because they
hold the query wording verbatim.

Two kinds of query, both written by the manual's authors, neither a copy of a heading:

- ``index-term``: every entry of the manual's concept index ("start conditions, using BEGIN",
  "YY_INPUT, overriding"). The index points at an anchor inside a page; gold = that page + the
  opening words of the text right after the anchor (within the first paragraph, list item or
  example that follows it), so the hit must hold the indexed passage, not just the page.
  Entries whose wording is the page's own title are dropped (they would be heading questions),
  and at most `PER_PAGE` entries are kept per page (the first ones in index order), so
  the few longest chapters do not dominate the set.
- ``faq-question``: the titles of the FAQ chapter's nodes that are questions ("Can I fake
  multi-byte character support?"); gold = the page + the opening words of the answer.

The concept index is read from ``CORPORA/_extra/flex_manual/Concept-Index.html``, which
``fetch.sh`` keeps outside the source root.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bs4 import BeautifulSoup, Tag
from bs4.element import PageElement

from benchmarks.corpora.evalset_tools import Case, corpora_dir, opening_words, write_checked
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "flex_manual.jsonl"
PER_PAGE = 6
MIN_WORDS = 5


def _title(soup: BeautifulSoup) -> str:
    h = soup.find(["h1", "h2", "h3", "h4"])
    return " ".join(h.get_text().split()) if h else ""


BLOCKS = ("p", "pre", "li", "dt", "dd", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote")


def _block_of(node: PageElement) -> Tag | None:
    return node.find_parent(BLOCKS)


def _text_after(anchor: Tag) -> str:
    """Up to 30 words of text that follow ``anchor`` in document order, within the first block
    element (paragraph, list item, example...) that holds any: a snippet that ran on into the
    next block would be split by any chunker that respects structure."""
    words: list[str] = []
    block: Tag | None = None
    for s in anchor.find_all_next(string=True):
        if not s.strip() or s.find_parent(["script", "style"]):
            continue
        here = _block_of(s)
        if block is None:
            block = here
        elif here is not block:
            break
        words += s.split()
        if len(words) >= 30:
            break
    return " ".join(words)


def index_cases(root: Path, index_page: Path) -> list[Case]:
    html = root / "html"
    soups: dict[str, BeautifulSoup] = {}
    per_page: dict[str, int] = {}
    out: list[Case] = []
    for a in BeautifulSoup(index_page.read_bytes(), "lxml").find_all("a", href=True):
        page, _, anchor = str(a["href"]).partition("#")
        if not anchor.startswith("index-") or not (html / page).is_file():
            continue
        if page not in soups:
            soups[page] = BeautifulSoup((html / page).read_bytes(), "lxml")
        soup = soups[page]
        term = " ".join(a.get_text().split())
        target = soup.find(id=anchor)
        if target is None or normalise(term) == normalise(_title(soup)):
            continue
        snippet = opening_words(_text_after(target))
        if len(snippet.split()) < MIN_WORDS or per_page.get(page, 0) >= PER_PAGE:
            continue
        per_page[page] = per_page.get(page, 0) + 1
        out.append({"query": term, "gold": [{"doc": f"html/{page}", "text": snippet}],
                    "category": "index-term", "exclude_docs": []})
    return out


def faq_cases(root: Path) -> list[Case]:
    out: list[Case] = []
    for page in sorted((root / "html").glob("*.html")):
        soup = BeautifulSoup(page.read_bytes(), "lxml")
        h = soup.find("h3", class_="unnumberedsec")
        if h is None or not h.get_text().strip().endswith("?"):
            continue
        answer = " ".join(s for s in h.find_all_next(string=True) if h not in s.parents)
        snippet = opening_words(answer)
        if len(snippet.split()) >= MIN_WORDS:
            out.append({"query": " ".join(h.get_text().split()),
                        "gold": [{"doc": page.relative_to(root).as_posix(), "text": snippet}],
                        "category": "faq-question", "exclude_docs": []})
    return out


def main() -> int:
    corpora = corpora_dir()
    root = corpora / "flex_manual"
    cases = index_cases(root, corpora / "_extra" / "flex_manual" / "Concept-Index.html") + faq_cases(root)
    cases = [{"id": f"flex-{i}", **c} for i, c in enumerate(cases)]
    write_checked(cases, root, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
