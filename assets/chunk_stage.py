"""The `chunks` stage: cut stored parses into chunks for each target generation's chunk version.

Works from the store alone (no source access, no re-parse). A document is re-chunked only when
its chunks for this chunk version were cut from other content or another parse. Chunk ids are
deterministic (doc, chunk version, ordinal): a retry overwrites, never duplicates.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

from assets.chunking import chunk_blocks
from assets.parse_stage import good_parses
from assets.parsing.types import Block
from assets.runtime import Generation, Runtime
from connectors.identity import chunk_id, text_hash


@dataclass
class ChunkStats:
    documents: int = 0
    chunked: int = 0
    chunks: int = 0
    cached: int = 0
    failed: int = 0
    seconds: float = 0.0


def run_chunk(rt: Runtime, source_name: str, gens: list[Generation]) -> ChunkStats:
    started = time.perf_counter()
    stats = ChunkStats()
    docs = rt.store.documents(source_name)
    stats.documents = len(docs)
    seen: set[str] = set()
    for g in gens:
        cver, pver = g.versions["chunk"], g.versions["parse"]
        if cver in seen:
            continue
        seen.add(cver)
        parses = good_parses(rt, docs, pver)
        current = rt.store.chunk_keys(list(parses), cver)
        dead = rt.store.dead_letter_docs(("chunk",))
        pending: dict[str, list[dict]] = {}

        def flush(cver: str = cver, pending: dict[str, list[dict]] = pending, dead: set[str] = dead) -> None:
            rt.store.replace_chunks(cver, pending)
            rt.store.resolve_dead_letters([d for d in pending if d in dead], stages=("chunk",))
            pending.clear()

        for d in docs:
            p = parses.get(d["doc_id"])
            if p is None:
                continue
            if current.get(d["doc_id"]) == (d["content_hash"], pver):
                stats.cached += 1
                continue
            try:
                blocks = [Block.from_dict(b) for b in p["blocks"] or []]
                drafts = chunk_blocks(blocks, g.stages.chunk, title=p["title"])
            except Exception as e:
                stats.failed += 1
                rt.store.add_dead_letter(doc_id=d["doc_id"], source=source_name, external_id=d["external_id"],
                                         stage="chunk", reason=f"crash:{type(e).__name__}", error=str(e),
                                         trace=traceback.format_exc(), content_hash=d["content_hash"])
                continue
            rows = [{
                "chunk_id": chunk_id(d["doc_id"], cver, c.ordinal), "doc_id": d["doc_id"],
                "chunk_version": cver, "content_hash": d["content_hash"], "parse_version": pver,
                "ordinal": c.ordinal, "kind": c.kind, "display_text": c.display_text,
                "embed_text": c.embed_text, "text_hash": text_hash(c.display_text),
                "heading_path": list(c.heading_path), "page": c.page, "char_start": c.char_start,
                "char_end": c.char_end, "tokens": getattr(c, "tokens", None), "parent_id": c.parent_id,
            } for c in drafts]
            pending[d["doc_id"]] = rows
            stats.chunked += 1
            stats.chunks += len(rows)
            if len(pending) >= 64:
                flush()
        flush()
    stats.seconds = time.perf_counter() - started
    return stats
