"""Check sample/eval.jsonl against sample/corpus/.

For every case: the id is unique, the category is known, every gold doc exists (and is not one of
the deliberately broken files), and every non-null gold text is already normalised, 5-12 words
long, and occurs in the normalised text of its document. Text is extracted independently of
Bindery's parsers, the way a plain reader sees the document:

- PDF: PyMuPDF ``page.get_text()`` (block order, so the two-column page reads column by column)
- HTML: the text inside ``<main>`` only (navigation, sidebar and footer chrome are ignored)
- Markdown / plain text: the raw text (UTF-8, falling back to latin-1)
- .eml: the decoded body parts (text/plain preferred over text/html), not the attachments
- .docx: paragraphs, then each table row's cells in order

    .venv/bin/python sample/check_eval.py [--regenerate]

``--regenerate`` also rebuilds the corpus into a temporary folder and checks that every file is
byte-identical to the committed one.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import hashlib
import json
import re
import sys
import tempfile
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
EVAL = HERE / "eval.jsonl"
CATEGORIES = {"paraphrase", "identifier", "table", "lookup", "email"}
MINIMUMS = {"identifier": 8, "table": 6, "paraphrase": 8, "email": 4}
MIN_CASES = 36


def normalise(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


class _MainText(HTMLParser):
    SKIP: ClassVar[set[str]] = {"script", "style"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth_main = 0
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "main":
            self.depth_main += 1
        elif tag in self.SKIP:
            self.skip += 1

    def handle_endtag(self, tag):
        if tag == "main":
            self.depth_main -= 1
        elif tag in self.SKIP:
            self.skip -= 1

    def handle_data(self, data):
        if self.depth_main > 0 and not self.skip:
            self.parts.append(data)


def html_text(raw: str, main_only: bool = True) -> str:
    if not main_only:
        raw = f"<main>{raw}</main>"
    p = _MainText()
    p.feed(raw)
    return " ".join(p.parts)


def pdf_text(path: Path) -> str:
    import pymupdf

    with pymupdf.open(path) as doc:
        return "\n".join(page.get_text() for page in doc)


def eml_text(path: Path) -> str:
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    parts = []
    body = msg.get_body(preferencelist=("plain", "html"))
    if body is not None:
        content = body.get_content()
        parts.append(html_text(content, main_only=False) if body.get_content_type() == "text/html" else content)
    return "\n".join([str(msg.get("Subject", "")), *parts])


def docx_text(path: Path) -> str:
    import docx

    d = docx.Document(str(path))
    parts = [p.text for p in d.paragraphs]
    for table in d.tables:
        for row in table.rows:
            parts.append(" ".join(cell.text for cell in row.cells))
    return "\n".join(parts)


def extract(path: Path) -> str:
    ext = path.suffix.lower()
    if ext == ".pdf":
        return pdf_text(path)
    if ext in (".html", ".htm"):
        return html_text(path.read_text(encoding="utf-8"))
    if ext == ".eml":
        return eml_text(path)
    if ext == ".docx":
        return docx_text(path)
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def check_cases(cases: list[dict]) -> list[str]:
    errors: list[str] = []
    cache: dict[str, str] = {}
    ids = Counter(c.get("id") for c in cases)
    errors += [f"duplicate id {i!r}" for i, n in ids.items() if n > 1]
    for c in cases:
        cid = c.get("id")
        missing = {"id", "query", "gold", "category", "exclude_docs"} - set(c)
        if missing:
            errors.append(f"{cid}: missing keys {sorted(missing)}")
            continue
        if c["category"] not in CATEGORIES:
            errors.append(f"{cid}: unknown category {c['category']!r}")
        if not c["query"].strip() or not c["gold"]:
            errors.append(f"{cid}: empty query or gold")
        for g in c["gold"]:
            doc = g["doc"]
            path = CORPUS / doc
            if doc.startswith("broken/"):
                errors.append(f"{cid}: gold doc {doc} is a deliberately broken file")
            if not path.is_file():
                errors.append(f"{cid}: gold doc {doc} does not exist")
                continue
            text = g.get("text")
            if text is None:
                continue
            if text != normalise(text):
                errors.append(f"{cid}: gold text {text!r} is not normalised")
            if not 5 <= len(text.split()) <= 12:
                errors.append(f"{cid}: gold text {text!r} should be 5-12 words")
            if doc not in cache:
                cache[doc] = normalise(extract(path))
            if f" {text} " not in f" {cache[doc]} ":
                errors.append(f"{cid}: {text!r} not found in {doc}")
        for d in c["exclude_docs"]:
            if not (CORPUS / d).is_file():
                errors.append(f"{cid}: exclude_docs entry {d} does not exist")
    counts = Counter(c.get("category") for c in cases)
    for cat, n in MINIMUMS.items():
        if counts[cat] < n:
            errors.append(f"category {cat}: {counts[cat]} cases, want at least {n}")
    if len(cases) < MIN_CASES:
        errors.append(f"{len(cases)} cases, want at least {MIN_CASES}")
    return errors


def check_regenerated() -> list[str]:
    sys.path.insert(0, str(HERE))
    import make_corpus

    def digests(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "corpus"
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            make_corpus.main(["--out", str(out)])
        fresh, committed = digests(out), digests(CORPUS)
    errors = [
        f"regenerated corpus differs: {k}"
        for k in sorted(set(fresh) | set(committed))
        if fresh.get(k) != committed.get(k)
    ]
    return errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="check the sample eval set against the corpus")
    ap.add_argument(
        "--regenerate",
        action="store_true",
        help="also rebuild the corpus in a temp dir and compare bytes",
    )
    args = ap.parse_args(argv)
    cases = [json.loads(line) for line in EVAL.read_text(encoding="utf-8").splitlines() if line.strip()]
    errors = check_cases(cases)
    if args.regenerate:
        errors += check_regenerated()
    for e in errors:
        print("FAIL", e)
    counts = Counter(c.get("category") for c in cases)
    print(f"{len(cases)} cases: " + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    print("OK" if not errors else f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
