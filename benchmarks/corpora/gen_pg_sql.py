"""Generate ``benchmarks/evalsets/pg_sql.jsonl`` from PostgreSQL 15's SQL command reference.

    python -m benchmarks.corpora.gen_pg_sql [CORPORA]   (default ~/.cache/bench-corpora)

The corpus (``CORPORA/pg_sql/sql-*.html``, laid out by ``fetch.sh``) is 140 pages of the SQL
command reference as Debian's ``postgresql-doc-15`` ships it: DocBook XSL HTML, one page per
command (``sql-reindex.html``), each with a ``div.refnamediv`` summary line ("REINDEX — rebuild
indexes"), a synopsis and a "Parameters" section whose ``dl.variablelist`` holds a term per
option and its description; the DROP pages, the list of commands and the syntax chapters are
left out. Three kinds of question, derived mechanically (first made outside the repository, for
a pass on unseen corpora):

- ``purpose`` (50): the page's one-line summary rewritten as a user's task ("postgres: how do I
  rebuild indexes", "... in postgresql", "sql command to ...", "how can I ... in postgres", by a
  hash of the file name), one word swapped for a synonym (`SYNONYMS`); the command's name is
  not in the query. Gold = the page (any chunk).
- ``option`` (50): an upper-case keyword term of the Parameters list (``CONCURRENTLY``, four
  characters or more, at most one lower-case word after it, 30 at most), asked with the command's
  name ("what does CONCURRENTLY do in reindex", "reindex CONCURRENTLY option", "meaning of ...
  for ..."). Gold = the page + the first `SNIPPET_WORDS` normalised words of the term's
  description (its first paragraph), which must occur once in the page: the hit must hold the
  description, not the synopsis.
- ``option-described`` (40): the same kind of entry, asked by the first content words of its
  description's first sentence (at most six, at least three; no word of the term or of the
  command's name): "postgres option to ...", one synonym swapped; only entries whose snippet
  occurs in one page of the whole corpus.

Each kind is drawn by the SHA-1 of the file name (and term): the lowest hashes, listed in id
order. A question asked twice with two golds is dropped after the draw (`unique_questions`' rule,
ids kept): REINDEX's SCHEMA and TABLE both read "postgres option to recreate all indexes
specified", so ``option-described`` has 38. Nothing is excluded: no page holds another's summary
(``sql-commands.html``, the list of every command with its summary, is not in the corpus).
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from benchmarks.corpora.evalset_tools import Case, generate
from evals.evalset import normalise

OUT = Path(__file__).resolve().parent.parent / "evalsets" / "pg_sql.jsonl"
SNIPPET_WORDS = 8
DRAW = {"purpose": 50, "option": 50, "option-described": 40}
# One synonym swapped in each purpose and option-described query: the first pair, from a place
# set by the hash, whose word is in it.
SYNONYMS = [("define", "create"), ("remove", "delete"), ("change", "modify"), ("new", "fresh"),
            ("create", "make"), ("rebuild", "recreate"), ("show", "display"), ("retrieve", "get"),
            ("rows", "records"), ("table", "relation"), ("current", "active"), ("transaction", "txn"),
            ("definition", "settings"), ("database", "db")]
STOP = frozenset(["a", "an", "the", "of", "to", "in", "is", "are", "be", "it", "its", "this", "that", "for", "on",
                  "by", "with", "as", "or", "and", "which", "what", "specifies", "specify", "name", "if", "when",
                  "will", "any"])
PURPOSE = ["postgres: how do I {}", "{} in postgresql", "sql command to {}", "how can I {} in postgres"]
OPTION = ["what does {t} do in {c}", "{c} {t} option", "meaning of {t} for {c}"]
TERM = re.compile(r"[A-Z][A-Z_ ]{3,}( \S+)?")


def _hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest(), 16)


def swap(query: str, h: int) -> str:
    for i in range(len(SYNONYMS)):
        word, other = SYNONYMS[(h + i) % len(SYNONYMS)]
        if re.search(rf"\b{word}\b", query):
            return re.sub(rf"\b{word}\b", other, query, count=1)
    return query


def _parameters(soup: BeautifulSoup) -> list[tuple[str, str]]:
    """(term, first paragraph of its description) of every entry of the page's Parameters lists."""
    found: list[tuple[str, str]] = []
    for sec in soup.find_all(class_="refsect1"):
        h2 = sec.find("h2")
        if h2 is None or h2.get_text(strip=True) != "Parameters":
            continue
        dl = sec.find("dl", class_="variablelist")
        if not isinstance(dl, Tag):
            continue
        for dt in dl.find_all("dt", recursive=False):
            dd = dt.find_next_sibling("dd")
            if not isinstance(dd, Tag):
                continue
            first = dd.find("p")
            found.append((dt.get_text(" ", strip=True), (first or dd).get_text(" ", strip=True)))
    return found


def _draw(drawn: list[tuple[int, Case]], n: int) -> list[Case]:
    return sorted((c for _, c in sorted(drawn, key=lambda hc: hc[0])[:n]), key=lambda c: str(c["id"]))


def cases(root: Path) -> list[Case]:
    # html.parser, as the questions were first made (a description's text is taken as it reads it)
    pages = {p.name: BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser") for p in sorted(root.glob("*.html"))}
    texts = {name: normalise(soup.get_text(" ")) for name, soup in pages.items()}
    drawn: dict[str, list[tuple[int, Case]]] = {kind: [] for kind in DRAW}
    for name, soup in pages.items():
        div = soup.find(class_="refnamediv")
        if not isinstance(div, Tag):
            continue
        title_tag, line_tag = div.find(class_="refentrytitle"), div.find("p")
        if title_tag is None or line_tag is None:
            continue
        command = name[len("sql-") : -len(".html")]
        title = title_tag.get_text(" ", strip=True)
        line = line_tag.get_text(" ", strip=True)
        h = _hash(name)
        query = PURPOSE[h % len(PURPOSE)].format(swap(line.split("—", 1)[-1].strip(), h))
        drawn["purpose"].append((h, {"id": f"purpose-{command}", "query": query, "category": "purpose",
                                     "gold": [{"doc": name, "text": None}], "exclude_docs": [], "source": line}))
        for term, text in _parameters(soup):
            if not TERM.fullmatch(term) or len(term) > 30:
                continue
            words = normalise(text).split()
            snippet = " ".join(words[:SNIPPET_WORDS])
            if len(words) < SNIPPET_WORDS or texts[name].count(snippet) != 1:
                continue
            h = _hash(name + term)
            key = f"{command}-{normalise(term).replace(' ', '_')}"
            base = {"gold": [{"doc": name, "text": snippet}], "exclude_docs": [], "source": f"{term}: {text[:120]}"}
            query = OPTION[h % len(OPTION)].format(t=term, c=title.lower())
            drawn["option"].append((h, {"id": f"option-{key}", "query": query, "category": "option", **base}))
            if sum(snippet in t for t in texts.values()) != 1:
                continue
            sentence = re.split(r"(?<=[.;:])\s", text)[0]
            named = set(normalise(term).split()) | set(normalise(title).split())
            content = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", sentence)
                       if w.lower() not in STOP and w.lower() not in named][:6]
            if len(content) >= 3:
                query = "postgres option to " + swap(" ".join(content).lower(), h)
                drawn["option-described"].append((h, {"id": f"described-{key}", "query": query,
                                                       "category": "option-described", **base}))
    out = [c for kind, n in DRAW.items() for c in _draw(drawn[kind], n)]
    asked = Counter(str(c["query"]).lower() for c in out)
    return [c for c in out if asked[str(c["query"]).lower()] == 1]


def main() -> int:
    return generate("pg_sql", cases, OUT)


if __name__ == "__main__":
    sys.exit(main())
