"""Generate ``benchmarks/evalsets/docbook_faq.jsonl`` from two real DocBook FAQs.

    python -m benchmarks.corpora.gen_docbook_faq [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/docbook_faq``, laid out by ``fetch.sh``) is Valgrind's HTML manual (42
pages, its FAQ among them) and GTK 3's overview pages (109, "Common Questions" among them), as
Debian ships them. Both FAQs are DocBook ``qandaset``s rendered by DocBook XSL: one table per
set, a ``tr.qandadiv`` row per division title, a ``tr.question`` row (label cell, question cell)
and a ``tr.answer`` row per entry. That is the layout most DocBook FAQs on the web have, and it is
not a debian_faq (whose questions are sections with headings): a parser that reads the table
as a table puts every entry of a division into one Markdown table.

Each question becomes a query (its words only: the "2.1." label and any code sample the question
quotes are left out); the gold item is the page plus the opening words of the answer, so a hit
must hold the start of the answer. Questions of fewer than four words are dropped (none now), and
so is a question asked twice. Category = the question's form, as debian_faq's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from benchmarks.corpora.evalset_tools import Case, generate, opening_words, unique_questions
from benchmarks.corpora.gen_debian_faq import category

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "docbook_faq.jsonl"


def _cell_text(row: Tag, skip_code: bool) -> str:
    """The words of the row's last cell (the first holds the "1.1." label)."""
    cells = row.find_all("td", recursive=False)
    if not cells:
        return ""
    cell = cells[-1]
    if skip_code:
        for pre in cell.find_all("pre"):
            pre.decompose()
    return " ".join(cell.get_text(" ").split())


def cases(root: Path) -> list[Case]:
    out: list[Case] = []
    for page in sorted(root.rglob("*.html")):
        soup = BeautifulSoup(page.read_bytes(), "lxml")
        for row in soup.select("div.qandaset tr.question"):
            answer = row.find_next_sibling("tr", class_="answer")
            question = _cell_text(row, skip_code=True)
            if answer is None or len(question.split()) < 4:
                continue
            snippet = opening_words(_cell_text(answer, skip_code=False))
            if len(snippet.split()) < 5:
                continue
            out.append({"id": "", "query": question,
                        "gold": [{"doc": page.relative_to(root).as_posix(), "text": snippet}],
                        "category": category(question), "exclude_docs": []})
    return unique_questions(out, "dbkfaq")


def main() -> int:
    return generate("docbook_faq", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
