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
from assets.parse_stage import good_parses, is_navigation
from assets.parsing import document_title
from assets.parsing.textutil import without_surrogates
from assets.parsing.types import Block
from assets.progress import NO_PROGRESS, Progress
from assets.runtime import Generation, Runtime
from connectors.config import ChunkConfig
from connectors.identity import chunk_id, text_hash
from connectors.store import ChunkRecord, DocumentRecord, ParseRecord


@dataclass
class ChunkStats:
    documents: int = 0
    chunked: int = 0
    chunks: int = 0
    cached: int = 0
    failed: int = 0
    seconds: float = 0.0


def needs_chunking(current: dict[str, tuple[str, str]], doc: DocumentRecord, parse_version: str) -> bool:
    """True unless this chunk version's chunks of `doc` were cut from its current content and parse."""
    return current.get(doc.doc_id) != (doc.content_hash, parse_version)


def chunk_rows(doc: DocumentRecord, parse: ParseRecord, chunk_cfg: ChunkConfig, chunk_version: str,
               parse_version: str) -> list[ChunkRecord]:
    """The chunk rows of one document from its stored parse (pure: the stage stores them,
    `bindery plan` only looks at their texts). A redirect page has none."""
    if is_navigation(parse):
        return []
    # a parse stored before parsers replaced lone surrogates may hold some: the tokenizer refuses them
    blocks = [Block.from_dict(without_surrogates(b)) for b in parse.blocks or []]
    drafts = chunk_blocks(blocks, chunk_cfg, title=without_surrogates(document_title(parse.title, doc.external_id)))
    return [ChunkRecord(
        chunk_id=chunk_id(doc.doc_id, chunk_version, c.ordinal), doc_id=doc.doc_id,
        chunk_version=chunk_version, content_hash=doc.content_hash or "", parse_version=parse_version,
        ordinal=c.ordinal, kind=c.kind, display_text=c.display_text,
        embed_text=c.embed_text, text_hash=text_hash(c.display_text),
        heading_path=list(c.heading_path), page=c.page, char_start=c.char_start,
        char_end=c.char_end, tokens=c.n_tokens,
        # the unit (small-to-big) is named by its first chunk; that chunk holds the unit's text
        parent_id=chunk_id(doc.doc_id, chunk_version, c.unit_start), unit_text=c.unit_text,
    ) for c in drafts]


def run_chunk(rt: Runtime, source_name: str, gens: list[Generation], *,
              progress: Progress = NO_PROGRESS) -> ChunkStats:
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
        pending: dict[str, list[ChunkRecord]] = {}

        def flush(cver: str = cver, pending: dict[str, list[ChunkRecord]] = pending, dead: set[str] = dead) -> None:
            rt.store.replace_chunks(cver, pending)
            rt.store.resolve_dead_letters([d for d in pending if d in dead], stages=("chunk",))
            progress.advance(len(pending))
            pending.clear()

        # a redirect page has no chunks, so nothing records that it was chunked: it is skipped
        # instead of being cut to nothing on every sync, unless it holds chunks of what it was
        # before it became one (they are cleared, and the index stage then drops the page)
        stale = [d for d in docs if d.doc_id in parses and needs_chunking(current, d, pver)]
        todo = [d for d in stale if d.doc_id in current or not is_navigation(parses[d.doc_id])]
        # a skipped page has no chunks: neither chunked nor cached
        stats.cached += sum(1 for d in docs if d.doc_id in parses) - len(stale)
        progress.total(len(todo))
        for d in todo:
            p = parses[d.doc_id]
            try:
                rows = chunk_rows(d, p, g.stages.chunk, cver, pver)
            except Exception as e:
                stats.failed += 1
                rt.store.add_dead_letter(doc_id=d.doc_id, source=source_name, external_id=d.external_id,
                                         stage="chunk", reason=f"crash:{type(e).__name__}", error=str(e),
                                         trace=traceback.format_exc(), content_hash=d.content_hash)
                progress.advance(1)
                continue
            pending[d.doc_id] = rows
            stats.chunked += 1
            stats.chunks += len(rows)
            if len(pending) >= 64:
                flush()
        flush()
    stats.seconds = time.perf_counter() - started
    return stats
