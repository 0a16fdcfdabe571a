"""Exact lookups of rare words: does the one document that holds them rank first?

    python -m benchmarks.rare_lookups --config DIR/bindery.yaml [--n 60] [--seed 3] [--set KEY=VALUE]

Draws `n` documents whose first chunk holds at least two words (six letters or more) that occur
in no other document's first chunk, asks the live generation for the first two of them, and
counts how often that document comes first, and how often it is missing from the top ten. It
is the lookup a keyword index is for (a name, an identifier, a rare term); a fusion that
standardises BM25's few hits away ranks dense-only neighbours above it (docs/retrieval.md, "A
keyword list that holds every match"). `--set` overrides a configuration key for the run
(`query.fusion=rrf`), as in `benchmarks.devsets_eval`.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import yaml

from benchmarks.devsets_eval import apply_overrides
from connectors.config import load_config
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore
from query_service.retrieval import GenerationRetriever

_WORD = re.compile(r"[a-z]{6,}")


def lookups(store: DocumentStore, chunk_version: str, n: int, seed: int) -> list[tuple[str, list[str]]]:
    """(external id, two words only its first chunk holds), for `n` documents drawn by `seed`."""
    docs = {d.doc_id: d.external_id for d in store.documents()}
    words: dict[str, set[str]] = {}
    for c in store.chunks_for(list(docs), chunk_version):
        if c.ordinal == 0:
            words[docs[c.doc_id]] = set(_WORD.findall(c.embed_text.lower()))
    df = collections.Counter(w for ws in words.values() for w in ws)
    found = [(ext, rare[:2]) for ext, ws in sorted(words.items())
             if len(rare := sorted(w for w in ws if df[w] == 1)) >= 2]
    random.Random(seed).shuffle(found)
    return found[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    with open(a.config) as f:
        raw = apply_overrides(yaml.safe_load(f), a.set)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=os.path.dirname(os.path.abspath(a.config)),
                                     delete=False) as tmp:
        yaml.safe_dump(raw, tmp)
    try:
        cfg = load_config(tmp.name)
    finally:
        os.unlink(tmp.name)
    store = DocumentStore(cfg.database_url)
    live = Lifecycle(cfg, store).live()
    if live is None:
        raise SystemExit("nothing is live: sync first")
    retriever = GenerationRetriever(cfg, live.record)
    ranks: list[int | None] = []
    for ext, words in lookups(store, live.versions["chunk"], a.n, a.seed):
        docs = [h.doc for h in retriever.search(" ".join(words), 10).hits]
        ranks.append(docs.index(ext) + 1 if ext in docs else None)
    retriever.close()
    print(json.dumps({"lookups": len(ranks), "first": sum(r == 1 for r in ranks),
                      "not_in_top10": sum(r is None for r in ranks), "overrides": a.set}))


if __name__ == "__main__":
    main()
