"""The `embeddings` stage: embed each chunk's final text (contextual prefix + chunk) once per
embedder id, in large batches; the cache key is (text hash, embedder id).

The model is loaded only if something is missing, so a no-op sync never imports it.
Chunks longer than the model reads are counted (the embedder silently drops the tail).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assets.context_stage import context_input_hash, embed_text_of
from assets.progress import NO_PROGRESS, Progress
from assets.runtime import Generation, Runtime
from connectors.embedder import to_bytes
from connectors.identity import text_hash
from connectors.store import ChunkRecord, DocumentStore

if TYPE_CHECKING:
    import numpy as np

    from connectors.embedder import Embedder

_FLUSH = 256  # texts per model call + store write: bounded memory, steady progress, and at most
# a few seconds of CPU embedding lost to a Ctrl-C (512 lost up to 10 s here; 256 embeds within
# noise of 512 a call, measured on 1,024 real passages)


@dataclass
class EmbedStats:
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    truncated: int = 0
    missing_context: int = 0
    model_seconds: float = 0.0
    seconds: float = 0.0
    embedded_chars: int = 0  # of the texts embedded, each counted up to CHAR_CAP: what `bindery plan` scales by


# A text's model time grows with its length up to the embedder's window and not past it; a plan
# estimates by characters (tokenizing every text would cost it more than the estimate is worth),
# so one text counts at most this many: about a 512-word-piece window (MiniLM's 256 fill ~1,200).
CHAR_CAP = 2048


def capped_chars(texts: Iterable[str]) -> int:
    """The characters `EmbedStats.embedded_chars` counts for these texts."""
    return sum(min(len(t), CHAR_CAP) for t in texts)


def final_texts(rt: Runtime, chunks: list[ChunkRecord], context_version: str) -> dict[str, str]:
    """chunk_id -> the text that is embedded and keyword-indexed; chunks without a prefix yet
    (their context failed) are left out so they are not indexed half-done."""
    return stored_final_texts(rt.store, chunks, context_version)


def embedded_text_hashes(store: DocumentStore) -> dict[str, str]:
    """text hash -> a content that embeds it, for the texts the current documents embed in
    every generation not dropped: what `bindery gc` must keep (`gc_orphan_caches`)."""
    doc_ids = [d.doc_id for d in store.documents()]
    out: dict[str, str] = {}
    versions = {(g.stage_versions["chunk"], g.stage_versions["context"])
                for g in store.generations() if g.status != "dropped"}
    for chunk_version, context_version in sorted(versions):
        for i in range(0, len(doc_ids), 1000):  # a thousand documents' chunks in memory at a time
            chunks = store.chunks_for(doc_ids[i : i + 1000], chunk_version)
            content_of = {c.chunk_id: c.content_hash for c in chunks}
            for cid, text in stored_final_texts(store, chunks, context_version).items():
                out.setdefault(text_hash(text), content_of[cid])
    return out


def stored_final_texts(store: DocumentStore, chunks: list[ChunkRecord], context_version: str) -> dict[str, str]:
    """`final_texts` from a store alone (a command that reads what a generation holds)."""
    prefixes = store.get_contexts([context_input_hash(c) for c in chunks], context_version)
    out = {}
    for c in chunks:
        ctx = prefixes.get(context_input_hash(c))
        if ctx is not None:
            out[c.chunk_id] = embed_text_of(c, ctx.prefix)
    return out


def _embed_counted(embedder: Embedder, texts: list[str]) -> tuple[np.ndarray, int | None]:
    """Vectors and, when the embedder sees it, how many texts its window cut. An embedder
    swapped in through `EmbedderResource` (a test's, or a user's own model) need only offer
    `embed_documents`; its truncation is then counted by the caller."""
    counted = getattr(embedder, "embed_documents_counted", None)
    if counted is None:
        return embedder.embed_documents(texts), None
    vecs, truncated = counted(texts)
    return vecs, truncated


def run_embed(rt: Runtime, source_name: str, gens: list[Generation], *,
              progress: Progress = NO_PROGRESS) -> EmbedStats:
    started = time.perf_counter()
    stats = EmbedStats()
    doc_ids = [d.doc_id for d in rt.store.documents(source_name)]
    done: set[tuple[str, str, str]] = set()
    for g in gens:
        key = (g.versions["chunk"], g.versions["context"], g.versions["embed"])
        if key in done:
            continue
        done.add(key)
        chunks = rt.store.chunks_for(doc_ids, g.versions["chunk"])
        texts = final_texts(rt, chunks, g.versions["context"])
        content_of = {c.chunk_id: c.content_hash for c in chunks}
        stats.chunks += len(chunks)
        stats.missing_context += len(chunks) - len(texts)
        by_hash: dict[str, tuple[str, str]] = {}
        for cid, text in texts.items():
            by_hash.setdefault(text_hash(text), (text, content_of[cid]))
        missing = sorted(rt.store.missing_embeddings(list(by_hash), g.versions["embed"]))
        stats.cached += len(by_hash) - len(missing)
        if not missing:
            continue
        progress.total(len(missing))
        embedder = rt.embedder(g.stages.embed)
        limit = embedder.max_seq_length
        from connectors.tokenizer import get_tokenizer

        counter = get_tokenizer(g.stages.embed.model)
        for i in range(0, len(missing), _FLUSH):
            batch = missing[i : i + _FLUSH]
            t0 = time.perf_counter()
            vecs, truncated = _embed_counted(embedder, [by_hash[h][0] for h in batch])
            stats.model_seconds += time.perf_counter() - t0
            if truncated is None:  # the backend tokenizes out of sight: count with the same tokenizer
                batch_texts = [g.stages.embed.document_prefix + by_hash[h][0] for h in batch]
                truncated = sum(1 for n in counter.count_batch(batch_texts) if n + 2 > limit)
            stats.truncated += truncated
            now = time.time()
            rt.store.put_embeddings([
                {"text_hash": h, "embedder_id": embedder.id, "dim": int(v.shape[0]), "vector": to_bytes(v),
                 "content_hash": by_hash[h][1], "created_at": now}
                for h, v in zip(batch, vecs, strict=True)
            ])
            stats.embedded += len(batch)
            stats.embedded_chars += capped_chars(by_hash[h][0] for h in batch)
            progress.advance(len(batch))
    stats.seconds = time.perf_counter() - started
    return stats
