"""The `contextual_prefixes` stage: a short prefix per chunk situating it in its document.

Cached by (input hash, context version), where the input hash covers the document content and
the chunk text: a re-embed or a re-run never pays for a prefix twice (with Anthropic, never
makes the same LLM call twice). A failure for one document dead-letters that document only; a
provider-wide failure (`ProviderUnavailable`: rejected key, quota, endpoint down) stops the
stage at once and fails the run with the reason, keeping the prefixes already computed.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assets.chunking import is_side_text
from assets.parse_stage import good_parses
from assets.parsing import document_title
from assets.progress import NO_PROGRESS, Progress
from assets.runtime import Generation, Runtime
from connectors.contextualizers import (
    ChunkContext,
    DocumentContext,
    ProviderUnavailable,
    summary_sentence,
)
from connectors.documents import Block
from connectors.errors import BinderyError
from connectors.identity import text_hash
from connectors.store import ChunkRecord, ParseRecord


@dataclass
class ContextStats:
    chunks: int = 0
    computed: int = 0
    cached: int = 0
    failed_docs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    seconds: float = 0.0


def context_input_hash(chunk: ChunkRecord) -> str:
    return text_hash(f"{chunk.content_hash}\x00{json.dumps(chunk.heading_path)}\x00{chunk.text_hash}")


def missing_contexts(rt: Runtime, chunks: list[ChunkRecord], context_version: str,
                     hash_of: Callable[[ChunkRecord], str] = context_input_hash) -> dict[str, ChunkRecord]:
    """input hash -> chunk, for the chunks whose prefix is not cached for this context version
    (one entry per distinct input: identical chunks share a prefix). `hash_of` is
    `context_input_hash` or a memo of it."""
    by_hash = {hash_of(c): c for c in chunks}
    have = rt.store.cached_contexts(list(by_hash), context_version)
    return {h: c for h, c in by_hash.items() if h not in have}


def run_context(rt: Runtime, source_name: str, gens: list[Generation], *,
                progress: Progress = NO_PROGRESS) -> ContextStats:
    started = time.perf_counter()
    stats = ContextStats()
    docs = {d.doc_id: d for d in rt.store.documents(source_name)}
    done: set[tuple[str, str]] = set()
    for g in gens:
        key = (g.versions["chunk"], g.versions["context"])
        if key in done:
            continue
        done.add(key)
        chunks = rt.store.chunks_for(list(docs), g.versions["chunk"])
        stats.chunks += len(chunks)
        todo = missing_contexts(rt, chunks, g.versions["context"])
        stats.cached += len({context_input_hash(c) for c in chunks}) - len(todo)
        missing: dict[str, list[ChunkRecord]] = {}
        for c in todo.values():
            missing.setdefault(c.doc_id, []).append(c)
        if not missing:
            continue
        progress.total(len(todo))
        ctx = rt.contextualiser(g.stages.context)
        parses = good_parses(rt, [docs[d] for d in missing], g.versions["parse"])
        dead = rt.store.dead_letter_docs(("context",))
        pending: list[dict[str, Any]] = []
        done_docs: list[str] = []

        def flush(pending: list[dict[str, Any]] = pending, done_docs: list[str] = done_docs,
                  dead: set[str] = dead) -> None:
            rt.store.put_contexts(pending)
            rt.store.resolve_dead_letters([d for d in done_docs if d in dead], stages=("context",))
            progress.advance(len(pending))
            pending.clear()
            done_docs.clear()

        for did, doc_chunks in missing.items():
            parse = parses.get(did)
            doc = document_context(parse, docs[did].external_id)
            try:
                results = ctx.contextualize(doc, [ChunkContext(list(c.heading_path), c.display_text)
                                                  for c in doc_chunks])
            except ProviderUnavailable:
                flush()  # keep what was computed: a re-run after the fix pays only for the rest
                raise
            except Exception as e:
                stats.failed_docs += 1
                d = docs[did]
                rt.store.add_dead_letter(doc_id=did, source=source_name, external_id=d.external_id,
                                         stage="context", reason=e.reason if isinstance(e, BinderyError)
                                         else "context-failed", error=str(e), trace=traceback.format_exc(),
                                         content_hash=d.content_hash)
                progress.advance(len(doc_chunks))
                continue
            now = time.time()
            rows = [{"input_hash": context_input_hash(c), "context_version": g.versions["context"],
                     "prefix": r.prefix, "content_hash": c.content_hash, "input_tokens": r.input_tokens,
                     "output_tokens": r.output_tokens, "cache_read_tokens": r.cache_read_tokens,
                     "cache_creation_tokens": r.cache_creation_tokens, "created_at": now}
                    for c, r in zip(doc_chunks, results, strict=True)]
            pending.extend(rows)
            done_docs.append(did)
            if len(pending) >= 512:
                flush()
            stats.computed += len(rows)
            stats.input_tokens += sum(r.input_tokens for r in results)
            stats.output_tokens += sum(r.output_tokens for r in results)
            stats.cache_read_tokens += sum(r.cache_read_tokens for r in results)
        flush()
    stats.seconds = time.perf_counter() - started
    return stats


def document_context(parse: ParseRecord | None, external_id: str) -> DocumentContext:
    """What a contextualiser knows of a document, from its stored parse (the stage and `bindery
    plan` both build it here): its title, its whole text, and a summary sentence of its own words."""
    blocks = (parse.blocks if parse else None) or []
    return DocumentContext(title=document_title(parse.title if parse else None, external_id),
                           summary=summary_sentence(own_text(blocks)),
                           full_text="\n\n".join(b["text"] for b in blocks))


def own_text(blocks: list[dict[str, Any]]) -> str:
    """The document's own running text: no headings (a FAQ page's first question is no summary
    of the page) and no side text (a reply's summary must not be the message it quotes)."""
    return "\n\n".join(b["text"] for b in blocks if b["kind"] not in ("title", "heading")
                       and not is_side_text(Block.from_dict(b)))


def embed_text_of(chunk: ChunkRecord, prefix: str | None) -> str:
    """The exact text the embedder and the keyword index see for a chunk."""
    return f"{prefix}\n{chunk.embed_text}" if prefix else chunk.embed_text
