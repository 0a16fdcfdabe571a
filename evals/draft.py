"""Draft an eval set from the corpus, for a person to review (`bindery evalset draft`).

Works from the document store (the live generation's chunks): no source access, no model. Four
offline kinds of question, each with its gold document and, where it helps, a snippet taken from
the chunk it came from (so a label holds across re-chunking):

- `title`: the document's title, as someone looking for that document types it (gold: the doc);
- `heading`: "<section> — <title>" for a section, gold snippet from the section's first words;
- `identifier`: a code-like token (`XR-4471`, `ERR-0x1F`, `max_payload_kg`, `v2.14.3`) that
  appears in exactly one document, gold snippet the identifier itself;
- `table`: "<column> of <row>" for a table row, gold snippet the cell;
- `reply` (e-mail): a reply's opening words (its own: quoted history, signature and footer are
  never in a chunk), gold the message it replies to, the reply itself excluded from retrieval —
  "which message does this answer?", the question a mail archive's users ask.

With a `writer` (the Anthropic contextualiser configured), sampled chunks get an LLM-written
question instead (`llm`), with the answering phrase as snippet when the model quotes one that is
really in the chunk, else the chunk's first words. Every case has `"draft": true`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from connectors.questions import DraftQuestion
from connectors.store import ChunkRecord
from evals.evalset import normalise, parse_case

__all__ = ["KINDS", "QuestionWriter", "draft_cases"]

KINDS = ("title", "heading", "identifier", "table", "reply", "llm")
SNIPPET_WORDS = 10
REPLY_WORDS = 30  # a reply's opening words that make its question
_IDENTIFIER = re.compile(
    r"(?<![\w-])(?:[A-Z][A-Z0-9]*-(?:0x)?[0-9A-Za-z]+(?:-[0-9A-Za-z]+)*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
    r"|v\d+\.\d+(?:\.\d+)?)(?![\w-])")


class QuestionWriter(Protocol):
    def write(self, title: str | None, heading_path: list[str], passage: str) -> DraftQuestion | None: ...


def _body(chunk: ChunkRecord) -> str:
    """The chunk's own text without the heading lines the chunker puts in front of it."""
    lines = chunk.display_text.splitlines()
    heads = {h.strip() for h in chunk.heading_path}
    while lines and (lines[0].strip() in heads or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines)


def _snippet(text: str, words: int = SNIPPET_WORDS) -> str | None:
    """The first words of the text's first sentence, normalised; None when they are too few words
    to tell one passage from another ("1 1 legalese", a table of contents' first entry)."""
    sentence = re.split(r"(?<=[.!?])\s", " ".join(text.split()), maxsplit=1)[0]
    # words as written, so XR-4471 counts once; at most 12 normalised words all the same: a
    # longer label (22 words from "v2.14.3-rc1"-like text) is split by another chunk size, and the
    # gate then refuses a re-chunked candidate on its own labels
    norm = normalise(" ".join(sentence.split()[:words])).split()[:12]
    return " ".join(norm) if sum(w.isalpha() for w in norm) >= 3 else None


def _case(kind: str, n: int, query: str, doc: str, text: str | None,
          exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"id": f"draft-{kind}-{n}", "query": query, "category": kind,
            "gold": [{"doc": doc, "text": text}], "exclude_docs": list(exclude), "draft": True}


def _titles(docs: dict[str, list[ChunkRecord]]) -> Iterable[tuple[str, str, str | None]]:
    """Each document's title as a question, where no other document has the same one: a title
    several documents share ("README", a boilerplate line read as a heading) names none of them,
    and its question would judge the index on a coin toss."""
    titles = {doc: next((c.heading_path[0] for c in chunks if c.heading_path), None) for doc, chunks in docs.items()}
    shared = Counter(" ".join(t.lower().split()) for t in titles.values() if t)
    for doc, title in titles.items():
        if title and len(title.split()) >= 2 and shared[" ".join(title.lower().split())] == 1:
            yield title, doc, None


def _headings(docs: dict[str, list[ChunkRecord]]) -> Iterable[tuple[str, str, str | None]]:
    for doc, chunks in docs.items():
        for c in chunks:
            path = [h for h in c.heading_path if h.strip()]
            snippet = _snippet(_body(c))
            if len(path) >= 2 and snippet and not _NAVIGATION.match(path[-1]):
                # a section titled like its document (a page whose one heading repeats the title,
                # a message whose subject bears its list's tag) asks for the heading once, not
                # "Day 1 — Day 1" or "Klez: The Virus That Won't Die — [IRR] Klez: The Virus ..."
                head, title = normalise(path[-1]), normalise(path[0])
                same = head in title or title in head
                yield (path[-1] if same else f"{path[-1]} — {path[0]}"), doc, snippet
                break  # one per document keeps the set balanced


def _identifiers(docs: dict[str, list[ChunkRecord]]) -> Iterable[tuple[str, str, str | None]]:
    where: dict[str, set[str]] = defaultdict(set)
    for doc, chunks in docs.items():
        for c in chunks:
            for ident in _IDENTIFIER.findall(c.display_text):
                where[ident].add(doc)
    for ident in sorted(where):
        # a code has a digit or an underscore: "A-B-C" (a graph drawn in ASCII), "BSD-style" and
        # "ASCII-armored" are letters joined by hyphens, nothing a person looks up
        code = any(ch.isdigit() for ch in ident) or "_" in ident
        if code and len(where[ident]) == 1 and normalise(ident):
            yield ident, next(iter(where[ident])), normalise(ident)


def _tables(docs: dict[str, list[ChunkRecord]]) -> Iterable[tuple[str, str, str | None]]:
    """"<second column's header> of <first row's first cell>", answered by that cell, from the
    first chunk that holds a table's header, its separator row and a row under them. A chunk
    that holds only the header (the rows went to the next) or only rows is passed over: its
    first row read as the header made questions like "4.50 of Island" (a gate pass's find)."""
    for doc, chunks in docs.items():
        for c in chunks:
            lines = [r for r in c.display_text.splitlines() if r.strip().startswith("|")]
            rows = [[cell.strip() for cell in r.strip().strip("|").split("|")] for r in lines]
            rule = next((i for i, r in enumerate(rows) if i and all(set(cell) <= set("-: ") for cell in r)), None)
            if rule is None or rule + 1 >= len(rows) or len(rows[rule - 1]) < 2:
                continue
            header, first = rows[rule - 1], rows[rule + 1]
            if len(first) == len(header) and all(normalise(x) for x in (header[1], first[0], first[1])):
                yield f"{header[1]} of {first[0]}", doc, normalise(first[1])
                break


def _replies(docs: dict[str, list[ChunkRecord]],
             replies: Sequence[tuple[str, str]]) -> Iterable[tuple[str, str, None, tuple[str, ...]]]:
    """(the reply's opening words, the parent, no snippet, the reply to exclude) per pair."""
    for reply, parent in replies:
        chunks = docs.get(reply)
        words = " ".join(_body(chunks[0]).split()[:REPLY_WORDS]) if chunks and parent in docs else ""
        if len(words.split()) >= 5:  # "Thanks!" asks nothing a reader could answer
            yield words, parent, None, (reply,)


_OFFLINE = {"title": _titles, "heading": _headings, "identifier": _identifiers, "table": _tables}
# a section that only lists the others: asking for it finds the list, not an answer
_NAVIGATION = re.compile(r"(?i)\s*(?:table of contents|contents|index|list of (?:tables|figures))\s*$")


def _spread(items: Iterable[tuple[str, str, str | None]]) -> list[tuple[str, str, str | None]]:
    """The candidates in an order that spreads the first picks over the whole corpus: by a hash
    of the question, fixed from run to run. In document order a draft of 30 took its titles from
    the first ten documents of the alphabet (`R-*.pdf`, `git-a*`)."""
    return sorted(items, key=lambda it: hashlib.sha256(f"{it[1]}\x00{it[0]}".encode()).digest())


def _llm_cases(writer: QuestionWriter, docs: dict[str, list[ChunkRecord]], limit: int) -> list[dict[str, Any]]:
    chunks = [(doc, c) for doc, cs in docs.items() for c in cs if len(_body(c).split()) >= 12]
    step = max(1, len(chunks) // max(limit, 1))
    out: list[dict[str, Any]] = []
    for doc, c in chunks[::step][:limit]:
        q = writer.write(c.heading_path[0] if c.heading_path else None, list(c.heading_path), _body(c))
        if q is None:
            continue
        answer = normalise(q.answer or "")
        text = answer if answer and answer in normalise(c.display_text) else _snippet(_body(c))
        out.append(_case("llm", len(out) + 1, q.question, doc, text))
    return out


def draft_cases(chunks_by_doc: dict[str, list[ChunkRecord]], *, max_cases: int = 40,
                writer: QuestionWriter | None = None,
                replies: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """Proposed eval cases (eval-set JSON objects) from chunk rows grouped by document external id;
    `replies` are e-mail (reply, the message it replies to) pairs of external ids.

    Offline kinds share `max_cases` round-robin so every kind is represented; with a writer all
    cases are LLM-written. Each case is checked with the eval-set validator before it is kept.
    """
    docs = {doc: sorted(cs, key=lambda c: c.ordinal) for doc, cs in sorted(chunks_by_doc.items())}
    if writer is not None:
        return [c for c in _llm_cases(writer, docs, max_cases) if _valid(c)]
    pools: dict[str, Iterator[tuple[str, str, str | None, tuple[str, ...]]]] = {
        kind: ((q, d, t, ()) for q, d, t in _spread(gen(docs))) for kind, gen in _OFFLINE.items()}
    if replies:
        pools["reply"] = iter(_replies(docs, sorted(replies)))
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    counters: dict[str, int] = defaultdict(int)
    while pools and len(out) < max_cases:
        for kind in list(pools):
            item = next(pools[kind], None)
            if item is None:
                del pools[kind]
                continue
            query, doc, text, exclude = item
            if query.lower() in seen:
                continue
            counters[kind] += 1
            case = _case(kind, counters[kind], query, doc, text, exclude)
            if _valid(case):
                seen.add(query.lower())
                out.append(case)
            if len(out) >= max_cases:
                break
    return out


def _valid(case: dict[str, Any]) -> bool:
    try:
        parse_case(case)
    except ValueError:
        return False
    return True
