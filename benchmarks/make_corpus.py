"""Build a synthetic corpus of N documents for throughput benchmarks, from real sentences.

    python -m benchmarks.make_corpus --from DIR [--from DIR ...] --out DIR [--docs 2000]

Sentences are harvested from real documents (any format Bindery parses) and recombined into
Markdown, HTML and text files of 1-3 headed sections each, so token lengths and vocabulary are
realistic while the document count is whatever the benchmark needs. Deterministic (seeded).
"""

from __future__ import annotations

import argparse
import html
import random
import re
from pathlib import Path

from assets.parsing import parse_document
from connectors.config import ParseConfig


def harvest(roots: list[Path]) -> list[str]:
    sentences: list[str] = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if not p.is_file():
                continue
            try:
                res = parse_document(p.read_bytes(), p.name, ParseConfig(ocr=False))
            except Exception:
                continue
            for b in res.blocks:
                if b.kind == "paragraph":
                    sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+", b.text) if 40 < len(s) < 300]
    return sentences


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="sources", type=Path, action="append", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--docs", type=int, default=2000)
    a = p.parse_args()
    rnd = random.Random(7)
    sentences = harvest(a.sources)
    a.out.mkdir(parents=True, exist_ok=True)
    for i in range(a.docs):
        sections = []
        for _ in range(rnd.randint(1, 3)):
            head = " ".join(rnd.choice(sentences).split()[:rnd.randint(3, 7)]).rstrip(".,;:")
            body = [" ".join(rnd.sample(sentences, rnd.randint(2, 3))) for _ in range(rnd.randint(1, 2))]
            sections.append((head, body))
        title = f"Document {i:04d}: {sections[0][0]}"
        kind = ("md", "html", "txt")[i % 3]
        if kind == "md":
            text = f"# {title}\n\n" + "\n\n".join(f"## {h}\n\n" + "\n\n".join(b) for h, b in sections)
        elif kind == "html":
            text = (f"<html><head><title>{html.escape(title)}</title></head><body><nav>Home | Docs</nav><main>"
                    f"<h1>{html.escape(title)}</h1>"
                    + "".join(f"<h2>{html.escape(h)}</h2>" + "".join(f"<p>{html.escape(x)}</p>" for x in b)
                              for h, b in sections) + "</main><footer>Footer</footer></body></html>")
        else:
            text = f"{title}\n\n" + "\n\n".join(f"{h}\n\n" + "\n\n".join(b) for h, b in sections)
        (a.out / f"d{i // 500:02d}").mkdir(exist_ok=True)
        (a.out / f"d{i // 500:02d}" / f"doc-{i:04d}.{kind}").write_text(text)
    print(f"{a.docs} documents from {len(sentences)} sentences -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
