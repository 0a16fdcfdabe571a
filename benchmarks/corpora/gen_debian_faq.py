"""Generate ``benchmarks/evalsets/debian_faq.jsonl`` from the Debian FAQ (package ``debian-faq``).

    python -m benchmarks.corpora.gen_debian_faq [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/debian_faq/FAQ/*.en.html``, laid out by ``fetch.sh``) is the FAQ as Debian
ships it: DocBook-generated XHTML, one page per chapter, every question a ``div.section`` with an
``h2``/``h3`` title. Each section title becomes a query (its "7.12." number removed); the gold
item is the page plus the opening words of the section's own text (the answer), so a hit must
hold the start of the answer, not just the page. Sections whose own text is empty before their
first subsection are skipped. Category = the question's form (what / how / why / yes-no /
other-question, or topic-heading for titles that are no question, such as "Mailing lists"), so
a failure can be told apart by the kind of question asked. A title used by two sections
("aptitude") is ambiguous and dropped.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

from bs4 import BeautifulSoup, Tag, XMLParsedAsHTMLWarning

from benchmarks.corpora.evalset_tools import Case, generate, opening_words, unique_questions

warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "debian_faq.jsonl"
NUMBER = re.compile(r"^\s*(\d+\.)+\s*")
YES_NO = ("is ", "are ", "can ", "does ", "do ", "will ", "should ", "must ", "may ")


def category(question: str) -> str:
    q = question.lower()
    if "?" not in q:
        return "topic-heading"  # "Mailing lists", "dpkg": a heading, not a question
    for word in ("what", "how", "why", "where", "when", "who", "which"):
        if q.startswith(word):
            return {"where": "where-when-who", "when": "where-when-who", "who": "where-when-who",
                    "which": "what"}.get(word, word)
    if q.startswith(YES_NO):
        return "yes-no"
    return "other-question"


def _own_text(section: Tag) -> str:
    """The section's text before its first subsection, title excluded."""
    parts: list[str] = []
    for child in section.children:
        if not isinstance(child, Tag):
            parts.append(str(child))
            continue
        classes: list[str] = list(child.get("class") or [])
        if "titlepage" in classes:
            continue
        if "section" in classes:
            break
        parts.append(child.get_text(" "))
    return " ".join(parts)


def cases(root: Path) -> list[Case]:
    out: list[Case] = []
    for page in sorted((root / "FAQ").glob("*.en.html")):
        soup = BeautifulSoup(page.read_bytes(), "lxml")
        for h in soup.find_all(re.compile("^h[2-6]$"), class_="title"):
            section = h.find_parent("div", class_="section")
            if section is None:
                continue
            question = NUMBER.sub("", " ".join(h.get_text().split()))
            snippet = opening_words(_own_text(section))
            if len(snippet.split()) < 5:
                continue
            out.append({"id": f"debfaq-{len(out)}", "query": question,
                        "gold": [{"doc": page.relative_to(root).as_posix(), "text": snippet}],
                        "category": category(question), "exclude_docs": []})
    return unique_questions(out, "debfaq")


def main() -> int:
    return generate("debian_faq", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
