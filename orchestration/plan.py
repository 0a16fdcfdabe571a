"""`bindery plan`: what the next sync or reindex would do, computed without writing anything.

    listing (read-only) --> documents after the sync --> per stage: to compute / cached
                                                     --> time (throughput of past runs), LLM tokens, cost

The plan lists each source (as the sync would) and classifies every item with the listing's
own rules (`orchestration.plan_listing`: `assets.listing.change_class`, `check_delete_safety`);
reads the bytes of items whose listing entry changed, to hash them, as the listing does; then
walks the stages over the documents the sync would leave, asking the store what is cached with the stages' own helpers
(`pending_parses`, `needs_chunking`, `chunk_rows`, `missing_contexts`, `embed_text_of`,
`doc_digest`) so plan and run cannot drift. The cheap stages are *run in memory* where their
output decides what the expensive ones must do: pending documents are parsed and chunked (never
stored) so the number of chunks to contextualise and texts to embed is exact, and offline
prefixes are computed so embedding cache hits are exact. Anthropic prefixes are not (that would
be the spending the plan exists to predict): their chunks count as texts to embed. Nor is OCR
(seconds a page: a plan of six scanned papers took 298 s against the sync's 301 s): a page to
OCR stands for a page's worth of text (`assets.parsing.ocr.placeholder_blocks`), and the
plan says how many documents and pages its later counts estimate (`scans_estimated`);
`bindery plan --ocr` reads them, for exact counts.

Those in-memory passes run on every core (`orchestration.plan_pool`): they are the plan's whole
cost on a first sync, where the sync's own time goes mostly to the model.

Nothing is written: no store rows, no spool, no index files, no Dagster run. The estimate of
time fits each stage's step time in past runs on this instance (a fixed cost and a rate, from
Dagster's step timings and materialisation metadata, `orchestration.estimate`), prices parsing
by document kind from the store's past parses, and adds the CLI's start; with no history it
says so.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assets.chunk_stage import chunk_rows, needs_chunking
from assets.context_stage import context_input_hash, document_context, embed_text_of, missing_contexts
from assets.embed_stage import capped_chars
from assets.includes import include_reader, own_hash, withdrawn
from assets.index_stage import doc_digest, kept_moves, live_rows, never_held, unsafe_kept_versions
from assets.listing import read_content
from assets.parse_quality import judge_versions, quality_rows
from assets.parse_stage import (
    cached_failure,
    good_parse_ids,
    good_parses,
    is_navigation,
    max_bytes,
    parse_key,
    parse_problems,
    pending_parses,
    stored_metadata,
)
from assets.parse_watch import killed_parses, killed_row, time_limit
from assets.parsing import parse_document
from assets.parsing.ocr import ESTIMATED_PAGES_KEY, ocr_deferred
from assets.runtime import Generation, Runtime
from connectors.config import BinderyConfig, ChunkConfig, SourceConfig
from connectors.contextualizers import ChunkContext, Contextualizer, DocumentContext, make_contextualizer
from connectors.errors import BinderyError
from connectors.generations import working_index_damage
from connectors.identity import text_hash
from connectors.sources import make_source
from connectors.sources.base import Source
from connectors.store import ChunkRecord, DocumentRecord, IndexStateRecord, ParseRecord
from orchestration.plan_listing import Failure, SourcePlan, predict_listing
from orchestration.plan_pool import fork_map

__all__ = ["STAGES", "compute_plan"]

STAGES = ("parse", "chunk", "context", "embed", "index")
UNITS = {"parse": "documents", "chunk": "documents", "context": "chunks", "embed": "texts", "index": "documents"}


@dataclass
class StageCount:
    compute: int = 0
    cached: int = 0


# -- the stages, simulated -------------------------------------------------------------------


def _cut(d: DocumentRecord, parse: ParseRecord, cfg: ChunkConfig, cver: str, pver: str) -> list[ChunkRecord] | Failure:
    """The chunk rows the sync will cut, or why the chunker fails (the sync dead-letters the
    document and leaves its indexed version alone)."""
    try:
        return chunk_rows(d, parse, cfg, cver, pver)
    except Exception as e:
        return Failure("chunk", f"crash:{type(e).__name__}", str(e) or type(e).__name__)


def _offline_prefixes(d: DocumentRecord, parse: ParseRecord, rows: dict[str, list[ChunkRecord] | Failure],
                      prefixers: dict[tuple[str, str], Contextualizer]) -> dict[tuple[str, str], str]:
    """(context input hash, context version) -> prefix, for each offline context version over
    each chunk version cut; empty where it fails (walk_context then meets the same error)."""
    out: dict[tuple[str, str], str] = {}
    try:
        doc = document_context(parse, d.external_id)
        for (cver, ctxver), ctx in prefixers.items():
            cut = rows.get(cver)
            cs = cut if isinstance(cut, list) else []
            results = ctx.contextualize(doc, [ChunkContext(list(c.heading_path), c.display_text) for c in cs])
            out.update(((context_input_hash(c), ctxver), r.prefix) for c, r in zip(cs, results, strict=True))
    except Exception:
        return {}
    return out


def _failure(e: Exception) -> Failure:
    reason = e.reason if isinstance(e, BinderyError) else f"crash:{type(e).__name__}"
    return Failure("parse", reason, str(e) or type(e).__name__)


@dataclass
class RunMemory:
    """What the sources planned so far compute, shared as the run shares it: identical bytes in
    two sources are parsed once (a parse is stored by its key: bytes, parse version, format), and
    identical chunks are prefixed and embedded once."""

    parses: dict[tuple[str, str, str], ParseRecord | None] = field(default_factory=dict)  # None: fails
    failures: dict[tuple[str, str, str], Failure] = field(default_factory=dict)  # why those fail
    # the size limit a too-large failure was made under: a source allowing more parses the bytes
    # again, as the sync does (`assets.parse_stage.pending_parses`)
    refused_under: dict[tuple[str, str, str], int] = field(default_factory=dict)
    prefixes: dict[tuple[str, str], str] = field(default_factory=dict)  # (input hash, context version)
    contexts_done: set[tuple[str, str]] = field(default_factory=set)  # (input hash, context version)
    embedded: set[tuple[str, str]] = field(default_factory=set)  # (text hash, embedder id)


class StageWalk:
    """Walks parse -> chunk -> context -> embed -> index for one source over the documents the
    sync would leave, counting what each stage would compute and what it finds cached."""

    def __init__(self, rt: Runtime, sp: SourcePlan, source: Source | None = None, memory: RunMemory | None = None,
                 *, read_scans: bool = False):
        self.rt, self.sp, self.source = rt, sp, source
        self.read_scans = read_scans  # OCR scanned pages in memory too (`bindery plan --ocr`), not estimate them
        self.memory = memory or RunMemory()
        self.counts = {s: StageCount() for s in STAGES}
        self.index = {"write": 0, "delete": 0, "chunks": 0}
        self.writes_to: set[str] = set()  # the generations (not only maintained) the sync writes or deletes in
        self.parsed: dict[tuple[str, str], ParseRecord | None] = {}  # (doc, parse version) -> parse
        self.chunked: dict[tuple[str, str], list[ChunkRecord]] = {}  # (doc, chunk version) -> rows
        self.prefixes = self.memory.prefixes  # (input hash, context version) -> prefix
        self.walked: set[tuple[str, str]] = set()  # (stage, version) already counted
        self.contexts_done = self.memory.contexts_done  # (input hash, context version) the run computes
        self.embedded = self.memory.embedded  # (text hash, embedder id) the run computes
        self.llm_docs: list[tuple[DocumentContext, list[ChunkRecord]]] = []
        self.unknown_texts: set[str] = set()  # chunk ids whose prefix only the LLM would know
        self._input_hashes: dict[tuple[str, str, str], str] = {}
        self.cut_failed: set[str] = set()  # documents the chunker fails on: the sync leaves them be
        self.failures: dict[str, tuple[str, Failure]] = {}  # doc id -> (path, why the sync dead-letters it)
        self.searchable: dict[str, int] = {}  # generation -> documents it holds after the run
        self.blocked: str | None = None  # the parse-quality check's error: the sync stops after parsing
        # the texts to embed whose words are known here, and their characters (`capped_chars`): a
        # text's model time grows with its length, so the estimate scales by them
        self.embed_known = self.embed_chars = 0
        self.parse_formats: Counter[str] = Counter()  # format -> documents to parse
        self.by_path = {d.external_id: d for d in sp.docs if d.content_hash}  # what an AsciiDoc page may include

    def keep_cut(self, d: DocumentRecord, cver: str, rows: list[ChunkRecord] | Failure) -> None:
        if isinstance(rows, Failure):
            self.cut_failed.add(d.doc_id)
            self.failures.setdefault(d.doc_id, (d.external_id, rows))
            rows = []
        self.chunked[(d.doc_id, cver)] = rows

    def input_hash(self, c: ChunkRecord) -> str:
        """`context_input_hash(c)`, made once per chunk: the context and embed walks ask for
        each chunk's several times, and on a documentation tree that was a tenth of the plan."""
        key = (c.chunk_id, c.content_hash, c.text_hash)  # the heading path follows from these
        h = self._input_hashes.get(key)
        if h is None:
            h = self._input_hashes[key] = context_input_hash(c)
        return h

    # parse
    def parse_check(self, targets: list[Generation]) -> str | None:
        """The sync's blocking parse_quality check (`assets.parse_quality`), judged over the
        parses the store holds and those made here in memory: the run's error when it would
        fail, else None. A warning does not stop a sync, so the plan does not name it."""
        now = time.time()
        made: dict[tuple[str, str], ParseRecord] = {}
        for (doc, pver), p in self.parsed.items():
            if p is None:  # would be stored as a failed parse, created now
                _, f = self.failures.get(doc, ("", Failure("parse", "failed", "")))
                p = ParseRecord(content_hash="", parse_version=pver, format="", doc_id=doc, status="failed",
                                title=None, blocks=[], metrics={}, page_metrics=[], error=f.error, reason=f.reason,
                                doc_metadata={}, seconds=None, created_at=now)
            made[(doc, pver)] = p
        rows = quality_rows(self.rt, self.sp.name, targets, docs=self.sp.docs, unstored=made)
        source = self.rt.store.get_source(self.sp.name)
        verdict = judge_versions(rows, source.parse_accepted_at if source else None,
                                 self.rt.cfg.source(self.sp.name).quality)
        return f"blocking check parse_quality failed: {verdict.description}" if verdict.severity == "error" else None

    def good_ids(self, g: Generation) -> set[str]:
        """The documents with a good parse (stored, or made in memory now) for generation `g`;
        the stored ones by status alone: their blocks are read only where they are needed."""
        pver = g.versions["parse"]
        return good_parse_ids(self.rt, self.sp.docs, pver) | {
            d.doc_id for d in self.sp.docs if self.parsed.get((d.doc_id, pver)) is not None}

    def parses(self, g: Generation, doc_ids: set[str]) -> dict[str, ParseRecord]:
        """doc_id -> a good parse for generation `g`, for the documents in `doc_ids`."""
        pver = g.versions["parse"]
        want = [d for d in self.sp.docs if d.doc_id in doc_ids]
        made = {d.doc_id: p for d in want if (p := self.parsed.get((d.doc_id, pver))) is not None}
        return {**good_parses(self.rt, [d for d in want if d.doc_id not in made], pver), **made}

    def walk_parse(self, g: Generation, targets: list[Generation]) -> None:
        """Counts `g`'s parses and makes the missing ones in memory, each cut into the chunks of
        every target chunk version over this parse version in the same pass: one fork, and a
        document's blocks never cross a pipe twice."""
        pver = g.versions["parse"]
        if ("parse", pver) in self.walked:
            return
        self.walked.add(("parse", pver))
        scfg = self.rt.cfg.source(self.sp.name)
        todo, cached_failures = pending_parses(self.rt, self.sp.docs, pver, max_bytes(scfg))
        todo, unparsed = self._after_a_dead_run(todo, pver)
        if cached_failures:  # a copy or a move of bytes that already failed: dead-lettered, unparsed
            dead = self.rt.store.dead_letter_docs(("parse", "listing"))
            for d in self.sp.docs:
                if (c := cached_failures.get(parse_key(d, pver))) is not None and d.doc_id not in dead:
                    why = Failure("parse", *cached_failure(self.rt, d, c))
                    self.failures.setdefault(d.doc_id, (d.external_id, why))
        limit = max_bytes(scfg)
        # parsed by an earlier source of this run, stored by the time this one asks; but bytes it
        # refused as too large under a lower limit than this source's are parsed again here
        made = {k: p for k, p in self.memory.parses.items() if self.memory.refused_under.get(k, limit) >= limit}
        for d in todo:
            if (key := parse_key(d, pver)) in made:
                self.parsed[(d.doc_id, pver)] = made[key]
                if key in self.memory.failures:
                    self.failures[d.doc_id] = (d.external_id, self.memory.failures[key])
        todo = [d for d in todo if parse_key(d, pver) not in made]
        self.counts["parse"].compute += len(todo) + len(unparsed)
        # what each costs depends on its kind (`estimate.parse_seconds`)
        self.parse_formats.update(parse_key(d, pver)[2] for d in todo + unparsed)
        self.counts["parse"].cached += len(self.sp.docs) - len(todo) - len(unparsed)
        over = [t for t in targets if t.versions["parse"] == pver]
        cuts = {t.versions["chunk"]: t.stages.chunk for t in over}
        # offline prefixes are a pure function of the document and the chunk, so they are made in
        # the same pass; the LLM's are only counted (walk_context)
        prefixers = {(t.versions["chunk"], t.versions["context"]): make_contextualizer(t.stages.context)
                     for t in over if t.stages.context.provider != "anthropic"}

        def parse_and_cut(d: DocumentRecord) -> tuple[ParseRecord | Failure, dict[str, list[ChunkRecord] | Failure],
                                                      dict[tuple[str, str], str]]:
            parse = self._parse_in_memory(d, g, scfg)
            if isinstance(parse, Failure):
                return parse, {}, {}
            rows = {cver: _cut(d, parse, cfg, cver, pver) for cver, cfg in cuts.items()}
            return parse, rows, _offline_prefixes(d, parse, rows, prefixers)

        # files with the same bytes have the same parse (a parse holds nothing of a file's name)
        for d, (parse, rows, prefixes) in zip(todo, fork_map(parse_and_cut, todo), strict=True):
            key = parse_key(d, pver)
            self.memory.failures.pop(key, None)
            self.memory.refused_under.pop(key, None)
            if isinstance(parse, Failure):
                self.memory.failures[key] = parse
                self.failures[d.doc_id] = (d.external_id, parse)
                if parse.reason == "too-large":
                    self.memory.refused_under[key] = limit
            self.parsed[(d.doc_id, pver)] = made[key] = self.memory.parses[key] = \
                None if isinstance(parse, Failure) else parse
            for cver, r in rows.items():
                self.keep_cut(d, cver, r)
            self.prefixes.update(prefixes)

    def _after_a_dead_run(self, todo: list[DocumentRecord], pver: str) -> tuple[list[DocumentRecord],
                                                                               list[DocumentRecord]]:
        """(`todo` without the document the last run died parsing, that document when the sync
        parses it again). The plan never parses it (it may hang the plan too): the second death
        makes it a stored failure the sync dead-letters; after the first, the sync parses it again
        and the plan counts that parse, taking it to fail (`assets.parse_watch`)."""
        again: list[DocumentRecord] = []
        for killed in killed_parses(self.rt.cfg.data_path, self.sp.name, self.rt.cfg.source(self.sp.name).shards):
            hit = [d for d in todo if parse_key(d, pver) == killed.key]  # each shard's run reads its own
            for d in hit:
                why = killed_row(killed)
                self.failures[d.doc_id] = (d.external_id, Failure("parse", why["reason"], why["error"]))
                self.parsed[(d.doc_id, pver)] = None
            todo = [d for d in todo if d not in hit]
            again += [] if killed.final else hit
        return todo, again

    def read(self, d: DocumentRecord, scfg: SourceConfig) -> bytes:
        """A document's bytes: as the listing read them, else from the source."""
        data = self.sp.data.get(own_hash(d) or "")
        if data is None:
            self.source = self.source or make_source(scfg)
            data = read_content(self.rt, self.source, d)
        return data

    def _parse_in_memory(self, d: DocumentRecord, g: Generation, scfg: SourceConfig) -> ParseRecord | Failure:
        """The parse the sync would store, or why it would dead-letter the document instead."""
        try:
            data = self.read(d, scfg)
            include = include_reader(d, self.by_path, lambda dep: self.read(dep, scfg))
            # as the sync would stop it; a page to OCR is estimated unless asked (`assets.parsing.ocr`)
            with time_limit(g.stages.parse.max_parse_seconds, d.external_id), ocr_deferred(not self.read_scans):
                result = parse_document(data, d.external_id, g.stages.parse, max_bytes=max_bytes(scfg),
                                        include=include)
        except Exception as e:
            return _failure(e)  # nothing to chunk
        if problems := parse_problems(result, scfg.quality):
            return Failure("parse", "low-quality", "; ".join(problems))
        chash, pver, fmt = parse_key(d, g.versions["parse"])
        return ParseRecord(content_hash=chash, parse_version=pver, format=fmt, doc_id=d.doc_id, status="ok",
                           title=result.title, blocks=[b.to_dict() for b in result.blocks], metrics=result.metrics,
                           page_metrics=result.page_metrics, error=None, reason=None,
                           doc_metadata=stored_metadata(result),
                           seconds=None, created_at=time.time())

    # chunk
    def chunks(self, g: Generation) -> list[ChunkRecord]:
        """Every chunk row of the source's documents for `g`'s chunk version, after the sync."""
        cver, pver = g.versions["chunk"], g.versions["parse"]
        good = self.good_ids(g)
        current = self.rt.store.chunk_keys(sorted(good), cver)
        fresh = [d for d in self.sp.docs if d.doc_id in good and needs_chunking(current, d, pver)]
        todo = [d for d in fresh if (d.doc_id, cver) not in self.chunked]  # stored parses, new chunk version
        parses = self.parses(g, {d.doc_id for d in todo})
        # redirect pages are not chunked unless they hold chunks of their former content (run_chunk);
        # they are neither computed nor cached: they have no chunks
        skipped = len(fresh)
        fresh = [d for d in fresh if d.doc_id in current
                 or not is_navigation(parses.get(d.doc_id) or self.parsed.get((d.doc_id, pver)))]
        skipped -= len(fresh)
        todo = [d for d in todo if d.doc_id in current or not is_navigation(parses.get(d.doc_id))]
        cut = fork_map(lambda d: _cut(d, parses[d.doc_id], g.stages.chunk, cver, pver), todo)
        for d, rows in zip(todo, cut, strict=True):
            self.keep_cut(d, cver, rows)
        if ("chunk", cver) not in self.walked:
            self.walked.add(("chunk", cver))
            # one the chunker fails on is dead-lettered, neither chunked nor cached (run_chunk)
            self.counts["chunk"].compute += sum(1 for d in fresh if d.doc_id not in self.cut_failed)
            self.counts["chunk"].cached += len(good) - len(fresh) - skipped
        fresh_ids = {d.doc_id for d in fresh}
        stored = self.rt.store.chunks_for([d.doc_id for d in self.sp.docs
                                           if d.doc_id in good and d.doc_id not in fresh_ids], cver)
        return stored + [c for d in fresh for c in self.chunked[(d.doc_id, cver)]]

    def kept_versions(self, g: Generation) -> list[ChunkRecord]:
        """The stored chunk rows of the documents without a good parse of their current content:
        the version a failed parse left indexed, which the index step still rewrites when its
        access changes (`index_stage._complete` reads every document's chunks). Found by an
        adversarial pass: the plan left them out and counted one written document fewer."""
        good = self.good_ids(g)
        return self.rt.store.chunks_for([d.doc_id for d in self.sp.docs if d.doc_id not in good], g.versions["chunk"])

    # context
    def walk_context(self, g: Generation, chunks: list[ChunkRecord]) -> None:
        ctxver = g.versions["context"]
        key = ("context", f"{g.versions['chunk']}/{ctxver}")
        if key in self.walked:
            return
        self.walked.add(key)
        # what an earlier generation of this run computes is cached by the time this one asks
        todo = {h: c for h, c in missing_contexts(self.rt, chunks, ctxver, self.input_hash).items()
                if (h, ctxver) not in self.contexts_done}
        self.contexts_done.update((h, ctxver) for h in todo)
        self.counts["context"].compute += len(todo)
        self.counts["context"].cached += len({self.input_hash(c) for c in chunks}) - len(todo)
        by_doc: dict[str, list[ChunkRecord]] = {}
        for c in todo.values():
            by_doc.setdefault(c.doc_id, []).append(c)
        if not by_doc:
            return
        parses = self.parses(g, set(by_doc))
        names = {d.doc_id: d.external_id for d in self.sp.docs if d.doc_id in by_doc}
        offline = g.stages.context.provider != "anthropic"
        ctx = make_contextualizer(g.stages.context) if offline else None
        for did, cs in by_doc.items():
            if ctx is not None:  # what the parse pass already prefixed is not made twice
                cs = [c for c in cs if (self.input_hash(c), ctxver) not in self.prefixes]
                if not cs:
                    continue
            doc = document_context(parses.get(did), names[did])
            if ctx is None:
                self.llm_docs.append((doc, cs))
                self.unknown_texts.update(c.chunk_id for c in cs)
                continue
            results = ctx.contextualize(doc, [ChunkContext(list(c.heading_path), c.display_text) for c in cs])
            for c, r in zip(cs, results, strict=True):
                self.prefixes[(self.input_hash(c), ctxver)] = r.prefix

    # embed + index
    def final_texts(self, g: Generation, chunks: list[ChunkRecord]) -> dict[str, str]:
        ctxver = g.versions["context"]
        stored = self.rt.store.get_contexts([self.input_hash(c) for c in chunks], ctxver)
        out = {}
        for c in chunks:
            h = self.input_hash(c)
            prefix = stored[h].prefix if h in stored else self.prefixes.get((h, ctxver))
            if prefix is not None or h in stored:
                out[c.chunk_id] = embed_text_of(c, prefix)
        return out

    def walk_embed(self, g: Generation, texts: dict[str, str]) -> None:
        ever = g.versions["embed"]
        key = ("embed", f"{g.versions['chunk']}/{g.versions['context']}/{ever}")
        if key in self.walked:
            return
        self.walked.add(key)
        by_hash = {text_hash(t): t for t in texts.values()}
        missing = {h for h in self.rt.store.missing_embeddings(sorted(by_hash), ever) if (h, ever) not in self.embedded}
        self.embedded.update((h, ever) for h in missing)
        unknown = len(self.unknown_texts - texts.keys())
        self.counts["embed"].compute += len(missing) + unknown
        self.counts["embed"].cached += len(by_hash) - len(missing)
        self.embed_known += len(missing)
        self.embed_chars += capped_chars(by_hash[h] for h in missing)

    def walk_index(self, g: Generation, chunks: list[ChunkRecord], texts: dict[str, str]) -> None:
        docs = {d.doc_id: d for d in self.sp.docs}
        state = self.rt.store.index_state(g.id, self.sp.name) if g.id else {}
        good = self.good_ids(g) if g.id else set()
        stale = withdrawn(docs, state, good)  # out of the indexes (index_stage._plan)
        by_doc: dict[str, list[ChunkRecord]] = {}
        for c in chunks:
            if c.doc_id not in stale:
                by_doc.setdefault(c.doc_id, []).append(c)
        digests = {did: doc_digest(docs[did], cs, texts) for did, cs in by_doc.items()
                   if all(c.chunk_id in texts for c in cs)}
        unsafe = unsafe_kept_versions(docs, state, by_doc, texts,  # revoked or left out, not written
                                      live_rows(self.rt.store, g.id, docs, state, by_doc))
        by_doc = {did: cs for did, cs in by_doc.items() if did not in unsafe}
        written = 0
        for did, cs in by_doc.items():
            if did not in digests:
                changed = any(c.chunk_id in self.unknown_texts for c in cs)  # an LLM prefix is coming
            else:
                held = state.get(did)
                changed = (held.digest if held else None) != digests[did]
            if changed:
                written += 1
                self.index["chunks"] += len(cs)
        self.index["write"] += written
        # a document whose current content has a good parse but no chunks left is removed
        # (index_stage._emptied): a page that became a redirect
        emptied = sum(1 for did, st in state.items() if did in docs and did not in by_doc and did in good
                      and did not in self.cut_failed and did not in stale
                      and st.digest and st.acl_hash == docs[did].acl_hash)  # else revoked, not deleted
        holds = {did for did in digests if did not in unsafe} | {
            did for did in state if did in docs and did not in stale}
        moved = self.kept_moves(docs, state, holds)  # a moved file's old path (index_stage._plan)
        self.index["delete"] += sum(1 for did in state if (did not in docs and did not in moved) or did in stale) \
            + emptied
        # a kept version not written stays where it is held under the current ACL, else is revoked
        kept = sum(1 for did, st in state.items() if did in docs and did not in by_doc and st.digest
                   and did not in stale and (did not in unsafe or st.acl_hash == docs[did].acl_hash))
        self.searchable[g.name] = kept - emptied + sum(
            1 for cs in by_doc.values() if all(c.chunk_id in texts or c.chunk_id in self.unknown_texts for c in cs))
        self.counts["index"].compute += written
        self.counts["index"].cached += len(by_doc) - written

    def kept_moves(self, docs: Mapping[str, DocumentRecord], state: Mapping[str, IndexStateRecord],
                   holds: set[str]) -> set[str]:
        """`index_stage.kept_moves` after this run's listing (`docs`: the documents it leaves): the
        moves it marks (`SourcePlan.moves`) and those earlier runs marked."""
        now = {old for old, new in self.sp.moves.items()
               if old in state and new not in holds and not (new in docs and never_held(docs[new]))}
        return now | kept_moves(self.rt.store, docs, state, holds)

    def walk_deletes_only(self, g: Generation) -> None:
        """A generation the run only maintains (the previous one, kept for a rollback): deletes
        reach it, and so does a document it holds whose chunks for its chunk version are cut
        from the current content (index_stage._plan, not writing): one cut this run for a
        target sharing that version, or one whose access changed."""
        docs = {d.doc_id: d for d in self.sp.docs}
        state = self.rt.store.index_state(g.id, self.sp.name)
        stale = withdrawn(docs)
        kept = self.kept_moves(docs, state, {did for did in state if did in docs and did not in stale})
        self.index["delete"] += sum(1 for did in state if (did not in docs and did not in kept) or did in stale)
        cver = g.versions["chunk"]
        # a pending row (one a source put back left withheld, `unindex_source`) is written again
        # where complete records exist, as any document whose access changed
        held = [did for did, st in state.items() if did in docs and did not in stale
                and (not st.digest or (did, cver) in self.chunked or st.acl_hash != docs[did].acl_hash
                     or did in self.sp.relocated)]
        stored = self.rt.store.chunks_for([did for did in held if (did, cver) not in self.chunked], cver)
        rows: dict[str, list[ChunkRecord]] = {did: list(self.chunked.get((did, cver), [])) for did in held}
        for c in stored:
            if c.content_hash == docs[c.doc_id].content_hash:
                rows[c.doc_id].append(c)
        texts = self.final_texts(g, [c for cs in rows.values() for c in cs])
        ever = g.versions["embed"]
        missing = set(self.rt.store.missing_embeddings(sorted({text_hash(t) for t in texts.values()}), ever))
        for did, cs in rows.items():
            complete = bool(cs) and all(c.chunk_id in texts and c.chunk_id not in self.unknown_texts and (
                text_hash(texts[c.chunk_id]) not in missing or (text_hash(texts[c.chunk_id]), ever) in self.embedded)
                for c in cs)
            if complete and doc_digest(docs[did], cs, texts) != state[did].digest:
                self.index["write"] += 1
                self.index["chunks"] += len(cs)

    def run(self, targets: list[Generation], delete_only: list[Generation]) -> None:
        """Every stage, as the sync runs them; the parse-quality check between parse and chunk
        (`parse_check`) stops the walk where it would stop the sync."""
        for g in targets:
            self.walk_parse(g, targets)
        self.blocked = self.parse_check(targets)
        if self.blocked is not None:
            # the sync parses and dead-letters, then its blocking check stops chunking, embedding
            # and indexing for this source: no cut fails, nothing is counted as written (its
            # deletes and access changes still reach the indexes, `index_stage.settle_access`,
            # which the sync does not count in `written` either)
            self.failures = {k: v for k, v in self.failures.items() if v[1].stage == "parse"}
            return
        per_generation = []
        for g, maintained_only in [(g, False) for g in targets] + [(g, True) for g in delete_only]:
            before = dict(self.index)
            if maintained_only:
                self.walk_deletes_only(g)
            else:
                # the stages read every stored chunk row of the version: a kept version's too (one a
                # stopped run cut may still lack its prefixes and embeddings)
                chunks = self.chunks(g) + self.kept_versions(g)
                self.walk_context(g, chunks)
                texts = self.final_texts(g, chunks)
                self.walk_embed(g, texts)
                self.walk_index(g, chunks, texts)
            per_generation.append({k: self.index[k] - before[k] for k in before})
            if not maintained_only and (per_generation[-1]["write"] or per_generation[-1]["delete"]):
                self.writes_to.add(g.name)
        # documents, not document x generation: one removed from the live and the previous
        # generation is one removal (summaries.sync_summary counts the sync the same way)
        self.index = {k: max((n[k] for n in per_generation), default=0) for k in self.index}


def _still_indexed(rt: Runtime, removed: dict[str, int]) -> dict[str, int]:
    """source -> documents of a source no longer configured that a retained generation's index
    still holds: what the next index step takes out (none once one has; a plan said it would
    still "take them out" after the sync had, an operator pass)."""
    from connectors.lifecycle import RETAINED

    gens = rt.lifecycle.generations(RETAINED) if removed else []
    return {name: len({did for g in gens for did in rt.store.held_doc_ids(g.id, name)}) for name in removed}


EXAMPLES = 20  # failures named per source; the count covers them all


def _dead_letters(walk: StageWalk) -> dict[str, Any]:
    """What the sync would newly dead-letter in one source: the documents whose parse or cut,
    made in memory, fails. Cached failures are already in `bindery dlq`, and so is a failure
    the sync retries every time (a source that was down) once it is recorded for the same bytes
    and reason: neither is new."""
    every = {**walk.sp.failures, **walk.failures}
    recorded = {(r.doc_id, r.stage, r.reason, r.content_hash)
                for r in walk.rt.store.dead_letters(source=walk.sp.name)} if every else set()
    hashes = {d.doc_id: d.content_hash for d in walk.sp.docs}
    failures = sorted(((path, f) for did, (path, f) in every.items()
                       if (did, f.stage, f.reason, None if f.stage == "listing" else hashes.get(did)) not in recorded),
                      key=lambda pf: pf[0])
    by_reason: dict[str, int] = {}
    for _, f in failures:
        key = f"{f.stage}:{f.reason}"
        by_reason[key] = by_reason.get(key, 0) + 1
    return {"count": len(failures), "by_reason": by_reason,
            "examples": [{"path": path, "stage": f.stage, "reason": f.reason, "error": f.error[:300]}
                         for path, f in failures[:EXAMPLES]]}


def _nothing_searchable(kind: str, targets: list[Generation], walk: StageWalk) -> str | None:
    """The error a sync reports when a source has documents and the live generation would hold
    none of them (orchestration.summaries._nothing_indexed): every parse failing, say."""
    live = next((g for g in targets if g.status == "live" or g.id == 0), None)
    docs = walk.sp.docs
    if kind != "sync" or live is None or not docs or walk.searchable.get(live.name, 1):
        return None
    return (f"nothing could be indexed: none of the {len(docs)} documents of {walk.sp.name!r} would be "
            "searchable (see `bindery dlq` after the sync)")


def _scans_estimated(walk: StageWalk) -> dict[str, int]:
    """The documents of a source, and their pages, whose OCR the plan estimated rather than ran."""
    pages: dict[str, int] = {}  # by document: a reindex plan parses it under two parse versions
    for (doc, _), p in walk.parsed.items():
        if p is not None and (n := (p.doc_metadata or {}).get(ESTIMATED_PAGES_KEY)):
            pages[doc] = max(pages.get(doc, 0), n)
    return {"documents": len(pages), "pages": sum(pages.values())}


def _ocr_read(walk: StageWalk) -> int:
    """The pages the plan OCR'd in memory (`--ocr`), which the sync will OCR too."""
    return sum(1 for p in walk.parsed.values() if p is not None for m in p.page_metrics or []
               if isinstance(m, dict) and m.get("route") == "ocr")


def compute_plan(cfg: BinderyConfig, rt: Runtime, kind: str = "sync", sources: list[str] | None = None, *,
                 allow_mass_delete: bool = False, history: dict[str, float] | None = None,
                 read_scans: bool = False) -> dict[str, Any]:
    """The plan as the `--json` contract (docs/json-contract.md); `history` is seconds per item
    per stage measured in past runs (`orchestration.history.throughput`). Pages to OCR are
    estimated (`assets.parsing.ocr`) unless `read_scans`."""
    started = time.perf_counter()
    targets, delete_only = rt.lifecycle.preview_targets(kind)  # describes, never creates
    names = sources or [s.name for s in cfg.sources]
    if kind == "reindex":
        names = [s.name for s in cfg.sources]
    out_sources: dict[str, Any] = {}
    totals = {s: StageCount() for s in STAGES}
    index = {"write": 0, "delete": 0, "chunks": 0}
    llm_docs: list[tuple[DocumentContext, list[ChunkRecord]]] = []
    memory = RunMemory()
    formats: Counter[str] = Counter()  # documents to parse, by format
    # what scales the estimate beside the counts
    work = {"listed": 0, "embed_known": 0, "embed_chars": 0, "runs": 0, "ocr_read": 0}
    # a generation the sync would write whose working index cannot be opened fails the sync's
    # index step (`assets.index_stage`); its tantivy index probed read-only (Qdrant Edge's would
    # take the writer lock: the sync alone finds a damaged one)
    damaged = {g.name: d.reason for g in targets if g.id
               and (d := working_index_damage(cfg, g.record, write_nothing=True)) is not None and d.checked}
    for name in names:
        scfg = cfg.source(name)
        sp = predict_listing(rt, scfg, allow_mass_delete=allow_mass_delete)
        entry: dict[str, Any] = {"listed": sp.listed, "changes": sp.changes,
                                 "delete_guard": {"safe": sp.unsafe is None, "would_delete": sp.would_delete,
                                                  "reason": sp.unsafe},
                                 "error": sp.error}
        if sp.proceeds:
            walk = StageWalk(rt, sp, memory=memory, read_scans=read_scans)
            walk.run(targets, delete_only)
            entry["scans_estimated"] = _scans_estimated(walk)
            for s in STAGES:
                totals[s].compute += walk.counts[s].compute
                totals[s].cached += walk.counts[s].cached
            for k in index:
                index[k] += walk.index[k]
            llm_docs += walk.llm_docs
            work["embed_known"] += walk.embed_known
            work["embed_chars"] += walk.embed_chars
            formats += walk.parse_formats
            if read_scans:  # else its scanned pages are placeholders, counted in `scans_estimated`
                work["ocr_read"] += _ocr_read(walk)
            entry["stages"] = {s: {"compute": c.compute, "cached": c.cached} for s, c in walk.counts.items()}
            entry["dead_letters"] = _dead_letters(walk)
            entry["error"] = entry["error"] or walk.blocked or _nothing_searchable(kind, targets, walk) or next(
                (f"generation {g}: {damaged[g]} (`bindery verify --repair` rebuilds it from the store)"
                 for g in sorted(walk.writes_to) if g in damaged), None)
        else:  # the sync would stop at the listing: no stage runs
            entry["stages"] = {s: {"compute": 0, "cached": 0} for s in STAGES}
            entry["dead_letters"] = {"count": 0, "by_reason": {}, "examples": []}
            entry["scans_estimated"] = {"documents": 0, "pages": 0}
        out_sources[name] = entry
        work["listed"] += sp.listed
        work["runs"] += 1
    from orchestration.estimate import estimate_seconds, llm_estimate, parse_seconds

    stages = {s: {"compute": c.compute, "cached": c.cached, "unit": UNITS[s]} for s, c in totals.items()}
    scans = {k: sum(e["scans_estimated"][k] for e in out_sources.values()) for k in ("documents", "pages")}
    ocr_pages = scans["pages"] + work.pop("ocr_read")
    timed = parse_seconds(formats, ocr_pages, rt.store.parse_times() if formats else {})
    return {
        "kind": kind, "generations": [g.name for g in targets],
        "new_generation": next((g.name for g in targets if g.id == 0), None),
        "sources": out_sources, "stages": stages,
        "recomputed": {s: totals[s].compute for s in ("parse", "chunk", "context", "embed")},
        "written": {"documents": index["write"], "chunks": index["chunks"], "deleted": index["delete"]},
        # withheld by any listing, taken out of the indexes by any index step
        # (`listing_access.withhold_removed_sources`)
        "removed_sources": (removed := rt.store.removed_sources(cfg.source_names())),
        "removed_sources_indexed": _still_indexed(rt, removed),
        # documents whose scanned pages the plan did not OCR: the counts after parse hold estimates
        "scans_estimated": scans,
        "estimate": estimate_seconds(stages, history, parse_seconds=timed, **work),
        "llm": llm_estimate(cfg, targets, llm_docs, history),
        "seconds": round(time.perf_counter() - started, 3),
    }
