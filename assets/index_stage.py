"""The `vector_index` + `keyword_index` stage: make each generation's two indexes hold exactly
the store's current chunks of a source, then publish a snapshot for readers.

State-based and idempotent: `index_state` records a digest of what each document has in each
generation (chunk ids, final texts, ACL, location) and the ACL hash it was written with. A
document is rewritten (delete by doc id, then upsert, in both indexes) only when its digest
changed; a second run writes nothing. Both indexes use the same chunk ids and carry the same
filter fields.

Access changes and deletes reach every retained generation, so a rollback can never widen
access or bring a deleted document back:

- the generations a run *writes* (live + a building candidate, or the candidate of a reindex)
  get every document whose records are complete for their stage versions;
- the other retained generations (the previous one; live during a reindex) are *maintained*:
  the documents they hold are rewritten from the store when complete records of the
  document's current content exist for that generation's stage versions (an ACL-only change
  always qualifies while the caches hold them), and never gain new documents;
- in any generation, a document whose ACL changed but that cannot be rewritten there is
  removed from it rather than left under its old ACL. A rollback then serves that document
  only after the next sync writes it into the restored generation.

A document a generation does not hold yet is recorded as *pending* there (an index-state row
with an empty digest) before anything is written, so a run killed after writing but before
recording leaves a row that says so. The next run rewrites a pending document, or removes it
where it cannot be rewritten — also when that generation is by then only maintained (a crashed
sync, then a reindex and a promotion before any sync): no generation keeps chunks that its
index state does not account for.
"""

from __future__ import annotations

import functools
import re
import time
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from assets.embed_stage import final_texts, stored_final_texts
from assets.includes import withdrawn
from assets.parse_stage import good_parse_ids, parse_key
from assets.parsing import document_title
from assets.parsing.site_files import site_file_role
from assets.progress import NO_PROGRESS, Progress
from assets.runtime import Generation, Runtime
from connectors.acl import ACL_BEFORE, within
from connectors.analysis import space_cjk
from connectors.embedder import compact_vector
from connectors.errors import IndexUnreadable
from connectors.generations import drop_generation_files, publish, writer_lock
from connectors.identity import doc_id, short_hash, text_hash
from connectors.indexes.base import IndexRecord
from connectors.mail_attribution import sent_keys
from connectors.store import ChunkRecord, DocumentRecord, DocumentStore, GenerationRecord, IndexStateRecord


@dataclass
class IndexStats:
    written_docs: int = 0
    written_chunks: int = 0
    deleted_docs: int = 0
    unchanged_docs: int = 0
    incomplete_docs: int = 0  # no complete chunk set yet (failed stage); old index content kept
    # of those, the ones with chunk rows still waiting for a prefix or an embedding; the rest are
    # dead letters or were cut to no chunks (a redirect page): nothing more to index
    waiting_docs: int = 0
    revoked_docs: int = 0  # removed from a generation: ACL changed there and no records to rewrite
    # per generation name, the same counts for that generation alone, and its seconds
    generations: dict[str, dict[str, float]] = field(default_factory=dict)
    # generations only maintained (deletes, access changes) whose index could not be opened: why
    unwritable: dict[str, str] = field(default_factory=dict)
    lag_seconds: list[float] = field(default_factory=list)
    seconds: float = 0.0


@functools.lru_cache(maxsize=4096)  # asked for every chunk of a document, and again for its units
def name_terms(external_id: str) -> str:
    """The file name as words, added to what the keyword index sees: names carry identity that
    the text often lacks (`bitfield.md` whose first heading is "Supported subcommands"). Only the
    keyword index gets it, so a rename never re-embeds."""
    return re.sub(r"[-_.\s]+", " ", PurePosixPath(external_id).stem).strip()


@dataclass
class _Cut:
    """A generation's chunk rows for some documents, with their final texts and the hashes of
    those texts: enough to tell which documents are complete and what each would hold (its
    digest) without reading a vector."""

    by_doc: dict[str, list[ChunkRecord]]
    texts: dict[str, str]  # chunk id -> final text (chunks whose prefix failed are absent)
    hashes: dict[str, str]  # chunk id -> text hash of its final text


def _complete(rt: Runtime, g: Generation, docs: dict[str, DocumentRecord]) -> tuple[dict[str, str], _Cut]:
    """Digests of the documents whose records are complete for generation `g` (every chunk has
    its final text and a cached embedding), and their chunk rows. An unchanged document costs
    its chunk rows and one key lookup per text: no vector is read until it is written."""
    chunks = rt.store.chunks_for(list(docs), g.versions["chunk"])
    texts = final_texts(rt, chunks, g.versions["context"])
    hashes = {cid: text_hash(t) for cid, t in texts.items()}
    missing = rt.store.missing_embeddings(sorted(set(hashes.values())), g.versions["embed"])
    by_doc: dict[str, list[ChunkRecord]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    digests = {did: doc_digest(docs[did], cs, texts) for did, cs in by_doc.items()
               if all(c.chunk_id in hashes and hashes[c.chunk_id] not in missing for c in cs)}
    return digests, _Cut(by_doc, texts, hashes)


def _records(rt: Runtime, g: Generation, docs: dict[str, DocumentRecord], cut: _Cut,
             wanted: list[str]) -> dict[str, list[IndexRecord]]:
    """The index records of the `wanted` (complete) documents: their vectors, and their parse's
    title and e-mail keys. One whose embedding vanished since `_complete` (a `gc` in between)
    is left out: it stays as it was, and the next run writes it."""
    vectors = rt.store.get_embeddings(sorted({cut.hashes[c.chunk_id] for did in wanted for c in cut.by_doc[did]}),
                                      g.versions["embed"])
    # the parse the chunks were cut from: a document whose new content failed to parse keeps them
    heads = cut_heads(rt.store, {did: (docs[did], cut.by_doc[did]) for did in wanted}, g.versions["parse"])
    records: dict[str, list[IndexRecord]] = {}
    for did in wanted:
        d, cs = docs[did], cut.by_doc[did]
        if any(cut.hashes[c.chunk_id] not in vectors for c in cs):
            continue
        title, meta = heads.get(did, (None, {}))
        title = document_title(title, d.external_id)
        mk = _message_keys(meta) or _NO_MESSAGE
        included = included_ids(d, meta)
        unit_texts = _unit_index_texts(d, cs, cut.texts)
        records[did] = [IndexRecord(
            chunk_id=c.chunk_id, doc_id=did, source=d.source, external_id=d.external_id,
            text=index_text(d, cut.texts[c.chunk_id]),
            vector=compact_vector(vectors[cut.hashes[c.chunk_id]]),
            acl=tuple(d.acl),
            payload=_payload(d, c, mk, title, included),
            heading=space_cjk(" ".join(c.heading_path)),
            unit_text=unit_texts.get(c.chunk_id),
            message_id=mk.message_id, reply_to=mk.reply_to, author=mk.author, sent=sent_keys(mk.sent),
            thread=mk.thread,
        ) for c in cs]
    return records


def _payload(doc: DocumentRecord, chunk: ChunkRecord, mk: MessageKeys | None = None,
             title: str | None = None, included: list[str] | None = None) -> dict[str, Any]:
    """What a vector point shows besides its filter fields: display text and provenance (the
    document's title too), its unit (the chunk id of the unit's first chunk), on that first chunk
    the unit's text, and an e-mail's thread keys, writer and date (`MessageKeys`). The title and
    the thread keys are the parse's: the chunk ids (their version names the parse version) and
    the digest's content hash change whenever they can, so `doc_digest` needs neither."""
    out = {"display_text": chunk.display_text, "heading_path": chunk.heading_path, "page": chunk.page,
           "ordinal": chunk.ordinal, "kind": chunk.kind, "uri": doc.uri,
           "unit": chunk.parent_id or chunk.chunk_id}
    if title:
        out["title"] = title
    if chunk.unit_text:
        out["unit_text"] = chunk.unit_text
    if included:  # the documents an AsciiDoc page read in place: the query service checks them too
        out["included"] = included
    for name, value in (mk or _NO_MESSAGE)._asdict().items():
        if value:
            out[name] = value
    return out


class MessageKeys(NamedTuple):
    """What the indexes keep of a single-message e-mail besides its text."""

    message_id: str | None  # its Message-ID
    reply_to: str | None  # the Message-ID it replies to: In-Reply-To, else the last of References
    author: str | None  # its From header
    sent: str | None  # its Date, ISO 8601 as the parser stored it
    thread: str | None  # its thread's root Message-ID (References[0], else In-Reply-To, else its own)


_NO_MESSAGE = MessageKeys(None, None, None, None, None)


def doc_heads(rt: Runtime, docs: list[DocumentRecord], parse_version: str) -> dict[str, tuple[str | None,
                                                                                           dict[str, Any]]]:
    """doc_id -> (title, metadata) of its parse, read without its blocks; good parses only."""
    return _heads(rt.store, docs, parse_version)


def _heads(store: DocumentStore, docs: list[DocumentRecord], parse_version: str) -> dict[str, tuple[str | None,
                                                                                                 dict[str, Any]]]:
    keys = {d.doc_id: parse_key(d, parse_version) for d in docs if d.content_hash}
    heads = store.parse_heads(keys.values())
    return {did: heads[key] for did, key in keys.items() if key in heads}


def cut_heads(store: DocumentStore, cut: Mapping[str, tuple[DocumentRecord, list[ChunkRecord]]],
              parse_version: str) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """`doc_heads` of the parse each document's chunks were cut from (`cut`: doc_id -> the
    document and its chunks): a document whose new content failed to parse keeps older chunks,
    and their title, thread keys and included files are that older parse's."""
    return _heads(store, [d.replace(content_hash=cs[0].content_hash) for d, cs in cut.values() if cs], parse_version)


def included_ids(doc: DocumentRecord, meta: Mapping[str, Any]) -> list[str]:
    """The ids of the documents a parse of `doc` read in place (an AsciiDoc page's `included`
    files, from the parse's metadata): whoever reads its chunks must be let read them too."""
    return [doc_id(doc.source, path) for path in meta.get("included") or []]


def message_keys(rt: Runtime, docs: list[DocumentRecord], parse_version: str) -> dict[str, MessageKeys]:
    """doc_id -> `MessageKeys` for single-message e-mails (an .eml, or an mbox of one message),
    read from the parse's metadata, not its blocks."""
    return {did: mk for did, (_, meta) in doc_heads(rt, docs, parse_version).items()
            if (mk := _message_keys(meta)) is not None}


def _message_keys(m: dict[str, Any]) -> MessageKeys | None:
    """A single-message e-mail's keys from its parse metadata; None for anything else."""
    if "messages" in m:  # an mbox: one message of a thread only when it holds one
        if len(m["messages"]) != 1:
            return None
        m = m["messages"][0]
    elif "message_id" not in m:  # not an e-mail (the e-mail parser always writes the key)
        return None
    parent = m.get("in_reply_to") or ((m.get("references") or [None])[-1])
    if not (m.get("message_id") or parent or m.get("from")):
        return None
    return MessageKeys(m.get("message_id"), parent if parent != m.get("message_id") else None,
                       m.get("from") or None, m.get("date") or None, m.get("thread_id") or None)


def _unit_index_texts(doc: DocumentRecord, chunks: list[ChunkRecord], texts: dict[str, str]) -> dict[str, str]:
    """First chunk id of each unit -> what the unit-level keyword field reads: the file name's
    words and the final texts of the unit's chunks (no side text: chunks hold none)."""
    members: dict[str, list[str]] = defaultdict(list)
    for c in chunks:
        members[c.parent_id or c.chunk_id].append(texts[c.chunk_id])
    return {head: space_cjk(f"{name_terms(doc.external_id)}\n" + "\n".join(ts)) for head, ts in members.items()}


def index_text(doc: DocumentRecord, final_text: str) -> str:
    """What the keyword index reads for a chunk: the file name's words, then the final text
    (CJK characters spaced apart, `connectors.analysis.space_cjk`)."""
    return space_cjk(f"{name_terms(doc.external_id)}\n{final_text}")


def doc_digest(doc: DocumentRecord, chunks: list[ChunkRecord], texts: dict[str, str]) -> str:
    """What a document holds in an index, from its chunk rows and their final texts (every
    field both indexes are written with): a document is rewritten only when this changes.
    `bindery plan` calls it too, so plan and run cannot disagree on what is rewritten."""
    units = _unit_index_texts(doc, chunks, texts)
    # the content hash stands for what is read from the parse besides the chunks (thread keys):
    # that of the content the chunks were cut from, which is the document's own unless its new
    # content failed to parse (its indexed version then stays as it is, rewritten by no one)
    cut_from = chunks[0].content_hash if chunks else doc.content_hash
    return short_hash([doc.external_id, doc.uri, doc.acl_hash, cut_from, [
        (c.chunk_id, text_hash(index_text(doc, texts[c.chunk_id])), c.heading_path,
         c.parent_id, text_hash(c.unit_text or ""), text_hash(units.get(c.chunk_id, "")))
        for c in chunks]], 32)


def _kept(docs: Mapping[str, DocumentRecord], by_doc: Mapping[str, list[ChunkRecord]]) -> list[str]:
    """The documents whose chunks are cut from older content than theirs (a kept version)."""
    return [did for did, cs in by_doc.items() if cs and cs[0].content_hash != docs[did].content_hash]


def live_rows(store: DocumentStore, gen_id: int | None, docs: Mapping[str, DocumentRecord],
              state: Mapping[str, IndexStateRecord], by_doc: Mapping[str, list[ChunkRecord]],
              ) -> dict[str, IndexStateRecord]:
    """The live generation's index-state rows of the kept versions generation `gen_id` holds no
    row of (one being built): what `unsafe_kept_versions` carries over. Read only when there are
    such documents."""
    need = [did for did in _kept(docs, by_doc) if did not in state]
    b = store.get_binding() if need else None
    if b is None or b.generation_id == gen_id:
        return {}
    rows = store.index_state(b.generation_id, docs[need[0]].source)
    return {did: rows[did] for did in need if did in rows}


def unsafe_kept_versions(docs: Mapping[str, DocumentRecord], state: Mapping[str, IndexStateRecord],
                         by_doc: Mapping[str, list[ChunkRecord]], texts: dict[str, str],
                         live: Mapping[str, IndexStateRecord]) -> set[str]:
    """The documents whose chunks are a kept version (cut from older content: the current one
    could not be parsed or cut) that a generation may not be given. A kept version is written
    only where the generation holds these very chunks (their digest under the held ACL is the
    held one), and then only to take access away: the ACL is the held one, or the one the
    listing read before the current ACL (`acl_before`, trusted only when it is the held one)
    and the current ACL narrows it. A generation being built (no row of the document) takes it
    only as the live generation holds it (`live`: `live_rows`), under the current ACL. Anything
    else is old text under an ACL it was never published with: a file published or shared
    sideways together with a "redacted" version that fails to parse served its old, private
    text to its new readers; chunks a run cut before it stopped were never indexed at all (both
    found by adversarial reviews). Such a document leaves the generation (revoked: its ACL
    changed) or stays out of it until it parses again. `bindery plan` applies the same rule."""
    out = set()
    for did in _kept(docs, by_doc):
        d, cs = docs[did], by_doc[did]
        st = state.get(did) or live.get(did)
        # a row written before index state named its ACL (migration 0003) is judged by its digest,
        # which covers the ACL the document was written under
        held_acl = (st.acl_hash or d.acl_hash) if st is not None else None
        held = (st is not None and bool(st.digest) and all(c.chunk_id in texts for c in cs)
                and doc_digest(d.replace(acl_hash=held_acl), cs, texts) == st.digest)
        if held and held_acl == d.acl_hash:
            continue  # held exactly so (here, or live for a generation being built)
        before = d.metadata.get(ACL_BEFORE)
        if held and did in state and st is not None and isinstance(before, list) \
                and st.acl_hash == short_hash(before, 16) and within(d.acl, before):
            continue  # held here under the ACL before the current one, which narrows it
        out.add(did)
    return out


def indexed_chunks(store: DocumentStore, gen: GenerationRecord, docs: list[DocumentRecord]) -> list[ChunkRecord]:
    """The stored chunk rows of `docs` that generation `gen` holds as they are: those whose digest
    is the generation's for the document. The store's newest chunks of a document may be newer
    than what it indexed (cut by a run that stopped before its index step, kept back because a
    later version failed to parse): what reads "the generation's text" (`evalset draft`) reads these."""
    state = store.index_state(gen.id)
    held = [d for d in docs if (st := state.get(d.doc_id)) is not None and st.digest]
    chunks = store.chunks_for([d.doc_id for d in held], gen.stage_versions["chunk"])
    texts = stored_final_texts(store, chunks, gen.stage_versions["context"])
    by_doc: dict[str, list[ChunkRecord]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    out: list[ChunkRecord] = []
    for d in held:
        cs = by_doc.get(d.doc_id, [])
        if cs and all(c.chunk_id in texts for c in cs) and doc_digest(d, cs, texts) == state[d.doc_id].digest:
            out.extend(cs)
    return out


@dataclass
class _Plan:
    """What one run does to one generation's indexes for one source."""

    records: dict[str, list[IndexRecord]]
    digests: dict[str, str]
    changed: list[str]  # rewritten (delete by document, then upsert)
    gone: list[str]  # removed: deleted documents, and ACL changes or pending ones that cannot be rewritten here
    revoked: int  # of `gone`: removed because their ACL changed (or they were pending) and no records could be written
    waiting: int  # documents with chunk rows whose set is not complete yet (a prefix or an embedding missing)
    # held as they are now although listed as changed since their indexing (a kept version whose
    # file was restored to the bytes indexed): nothing to write, only the row's time to bring up
    confirmed: list[str] = field(default_factory=list)


def _current_only(rt: Runtime, g: Generation, docs: dict[str, DocumentRecord]) -> dict[str, DocumentRecord]:
    """The documents whose chunks for `g`'s chunk version were cut from their current content:
    a generation that is only maintained never gets content that no longer exists."""
    cut_from = rt.store.chunk_keys(list(docs), g.versions["chunk"])
    return {did: d for did, d in docs.items() if did in cut_from and cut_from[did][0] == d.content_hash}


def _plan(rt: Runtime, g: Generation, docs: dict[str, DocumentRecord], state: dict[str, IndexStateRecord],
          writing: bool) -> _Plan:
    """Which documents to rewrite and which to remove in generation `g` (module docstring)."""
    # a page kept at a version whose included files changed since leaves every generation
    # (`assets.includes.flagged_stale`) until it reads well again; one this run writes, also when
    # its current content has no good parse (its included files changed, it could not be read)
    held = [docs[did] for did in state if did in docs and docs[did].metadata.get("includes")] if writing else []
    stale = withdrawn(docs, state, good_parse_ids(rt, held, g.versions["parse"]) if writing else None)
    # maintained: only the documents it holds, only from their current content
    candidates = docs if writing else _current_only(rt, g, {did: docs[did] for did in state if did in docs})
    candidates = {did: d for did, d in candidates.items() if did not in stale}
    digests, rows = _complete(rt, g, candidates)
    unsafe = unsafe_kept_versions(docs, state, rows.by_doc, rows.texts,
                                  live_rows(rt.store, g.id, docs, state, rows.by_doc))
    digests = {did: dg for did, dg in digests.items() if did not in unsafe}
    changed = [did for did, dg in digests.items() if did not in state or state[did].digest != dg]
    records = _records(rt, g, candidates, rows, changed)
    changed = [did for did in changed if did in records]
    cut = set(rows.by_doc)
    holds = set(digests) | {did for did in state if did in docs and did not in stale}
    kept = kept_moves(rt.store, docs, state, holds)
    gone = [did for did in state if (did not in docs and did not in kept) or did in stale]
    revoked = [did for did, st in state.items()
               if did in docs and did not in digests and did not in stale
               and (not st.digest or st.acl_hash != docs[did].acl_hash)]
    emptied = [did for did in _emptied(rt, g, docs, state, cut) if did not in revoked and did not in stale] \
        if writing else []
    waiting = sum(1 for did in cut if did not in digests and did not in unsafe) if writing else 0
    confirmed = [did for did, dg in digests.items() if did in state and state[did].digest == dg
                 and state[did].behind(docs[did]) and not _kept(docs, {did: rows.by_doc[did]})]
    return _Plan(records, digests, changed, gone + revoked + emptied, len(revoked), waiting, confirmed)


def kept_moves(store: DocumentStore, docs: Mapping[str, DocumentRecord], state: Mapping[str, IndexStateRecord],
               holds: Collection[str]) -> set[str]:
    """Documents a generation holds (`state`) that a move deleted and that it keeps: the file sits
    unchanged at its new path (`DocumentStore.current_acls` serves the old one meanwhile) and the
    new path is not among what the generation holds after this run (`holds`). A generation only
    maintained never gets the new path, so it keeps the old one: a rollback to the generation a
    sync had only maintained found the moved file under neither path, and a reindex took it out
    of live until the next sync (an operator pass). Where the new path is written, the old goes."""
    away = [did for did in state if did not in docs]
    rows = store.get_documents(away) if away else {}
    # judged against `docs`, the run's documents (the plan's predicted ones: an edit the plan
    # foresees ends the old path's stay as the sync's listing will)
    return {old for old, r in rows.items()
            if r.deleted_at is not None and (new := r.moved_to) is not None and new in docs
            and docs[new].content_hash == r.content_hash and new not in holds and not never_held(docs[new])}


def never_held(doc: DocumentRecord) -> bool:
    """A document no generation ever holds, whatever its bytes: a documentation build's own file,
    told by its path (`assets.parsing.site_files`). A file moved to such a path is gone from the
    indexes, not waiting at its new path: its old path was kept forever (a helper's pass)."""
    return site_file_role(doc.external_id) is not None


def _emptied(rt: Runtime, g: Generation, docs: dict[str, DocumentRecord], state: dict[str, IndexStateRecord],
             cut: set[str]) -> list[str]:
    """Documents `g` holds whose current content was cut to no chunks at all (a page that
    became a redirect; `cut`: the documents with chunk rows): they leave the indexes. A
    document that is only incomplete (chunks still waiting for a prefix or an embedding) has
    chunk rows, and keeps its old version."""
    bare = [did for did in state if did in docs and did not in cut]
    return sorted(good_parse_ids(rt, [docs[did] for did in bare], g.versions["parse"])) if bare else []


def unindexed_reason(store: DocumentStore, source: str, live_generation_id: int | None) -> str | None:
    """Why a source whose run succeeded is not searchable: it has documents and none of them is
    in the live index (every parse failed, say), else None. A sync that indexed nothing must not
    read as a success, in the CLI's summary or on the source's row that `status` shows."""
    docs = store.documents(source)
    state = store.index_state(live_generation_id, source) if live_generation_id is not None else {}
    if docs and not any(r.digest for r in state.values()):  # pending rows are not indexed
        return (f"nothing could be indexed: none of the {len(docs)} documents of {source!r} is searchable "
                "(see `bindery dlq`)")
    return None


def _totals(counts: dict[str, Any]) -> dict[str, float]:
    """What the whole generation holds after this step, every source: the UI's `generation`
    partition showed only what one step wrote, so a glance read a 3-document generation."""
    return {"generation_documents": int(counts.get("documents") or 0),
            "generation_chunks": int(counts.get("chunks") or 0)}


def _planned(rt: Runtime, source_name: str, g: Generation, writing: bool, docs: dict[str, DocumentRecord],
             only: Collection[str] | None) -> tuple[Generation, dict[str, IndexStateRecord], _Plan, float]:
    """(generation, its index state, its plan, the seconds planning took) for one generation."""
    started = time.perf_counter()
    state = rt.store.index_state(g.id, source_name)
    if only is not None:  # the others are not in `docs`: they must not read as deleted
        state = {did: st for did, st in state.items() if did in only}
    return g, state, _plan(rt, g, docs, state, writing), time.perf_counter() - started


def run_index(rt: Runtime, source_name: str, gens: list[Generation],
              maintain: list[Generation] | None = None, *, progress: Progress = NO_PROGRESS,
              only: Collection[str] | None = None) -> IndexStats:
    """Bring `gens` up to date with the store for one source, and apply access changes and
    deletes to the generations in `maintain` (module docstring). With `only`, just those
    documents: the rest of the source is neither read nor touched."""
    started = time.perf_counter()
    stats = IndexStats()
    if only is None:
        for removed in rt.store.removed_sources(rt.cfg.source_names()):  # withheld by the listing
            stats.unwritable.update(unindex_source(rt, removed))
    docs = {d.doc_id: d for d in rt.store.documents(source_name) if only is None or d.doc_id in only}
    # every generation planned before any is written: the progress total is known once, not
    # grown generation by generation (a bar at 100 % that then fell back)
    planned = [_planned(rt, source_name, g, g in gens, docs, only) for g in gens + (maintain or [])]
    progress.total(sum(len(plan.changed) + len(plan.gone) for _, _, plan, _ in planned))
    for g, state, plan, plan_seconds in planned:
        g_started = time.perf_counter() - plan_seconds
        writing = g in gens
        records, digests, changed, gone = plan.records, plan.digests, plan.changed, plan.gone
        stats.unchanged_docs += len(digests) - len(changed) if writing else 0
        stats.incomplete_docs += len(docs) - len(digests) if writing else 0
        stats.waiting_docs += plan.waiting
        stats.revoked_docs += plan.revoked
        gstats: dict[str, float] = {
            "written_docs": len(changed), "written_chunks": 0, "deleted_docs": len(gone) - plan.revoked,
            "revoked_docs": plan.revoked, "unchanged_docs": len(digests) - len(changed) if writing else 0,
            "incomplete_docs": len(docs) - len(digests) if writing else 0, "seconds": 0.0}
        stats.generations[g.name] = gstats
        _confirm(rt, g, state, plan.confirmed)
        if not changed and not gone:
            # the stored row, not the one planned from: `unindex_source` above may have taken a
            # removed source's documents out since (the totals were theirs too: a Dagster UI pass)
            now_held = rt.store.get_generation(g.id)
            gstats.update(_totals((now_held or g.record).counts or {}))
            gstats["seconds"] = round(time.perf_counter() - g_started, 3)
            continue
        recs = [r for did in changed for r in records[did]]
        try:
            with _writing(rt, g.record) as kept:
                if kept:
                    now, counts = _write(rt, g, source_name, docs, state, plan, recs)
                    gstats.update(_totals(counts))
        except IndexUnreadable as e:  # damaged files; a lock, an engine down or a failed write stays fatal
            if writing:  # what this run builds or serves: the run fails, saying why and what mends it
                raise IndexUnreadable(f"generation {g.name}: {e} (`bindery verify --repair` rebuilds it "
                                      "from the store)") from e
            # a generation only kept up to date (the previous one, for a rollback) whose index
            # cannot be opened (a damaged file) must not stop the live index's sync: it is named,
            # and `bindery verify` finds it and `--repair` rebuilds it
            stats.unwritable[g.name] = str(e)
            kept = False
        progress.advance(len(changed) + len(gone))
        if not kept:  # dropped (`bindery discard`) while this run went on, or unwritable: nothing written
            stats.generations.pop(g.name)
            continue
        gstats["written_chunks"] = len(recs)
        gstats["seconds"] = round(time.perf_counter() - g_started, 3)
        stats.written_docs += len(changed)
        stats.written_chunks += len(recs)
        stats.deleted_docs += len(gone) - plan.revoked
        if g.status == "live":
            stats.lag_seconds += [now - docs[did].changed_at for did in changed]
    # documents deleted by a move are kept (and served, `DocumentStore.current_acls`) while an
    # index that can be served holds them: once none does, they are deleted like any other (a
    # retired generation, which deletes no longer reach, is refused them by the store)
    if moved := {d for d in rt.store.moved_away(source_name) if only is None or d in only}:
        from connectors.lifecycle import RETAINED

        served = {g.id for g in rt.lifecycle.generations(RETAINED)}
        rt.store.retire_moved(sorted(moved - rt.store.in_any_index(source_name, moved, served)))
    stats.seconds = time.perf_counter() - started
    return stats


def _confirm(rt: Runtime, g: Generation, state: dict[str, IndexStateRecord], confirmed: list[str]) -> None:
    """Record that `g` holds the `confirmed` documents as they are now: their digest is the one
    indexed, so nothing is written, but their listed change (a dead letter's file restored to
    the bytes its kept version was cut from) is newer than the row. Left as it was, `bindery
    status` counted them as waiting and `bindery verify` as pending after every sync."""
    if confirmed:
        # only where the row still holds that digest: a writer that changed it meanwhile (another
        # source's access change) or a `gc` that dropped the generation is not undone (a review pass)
        rt.store.confirm_indexed(g.id, {did: state[did].digest for did in confirmed}, time.time())


def _write(rt: Runtime, g: Generation, source_name: str, docs: dict[str, DocumentRecord],
           state: dict[str, IndexStateRecord], plan: _Plan, recs: list[IndexRecord]) -> tuple[float, dict[str, int]]:
    """Write one generation's changed and gone documents (its writer lock held), publish its
    snapshot, then record what it holds; (when it was published, its counts)."""
    changed, gone = plan.changed, plan.gone
    # what this write may leave behind if the process dies before the bookkeeping below (a
    # withheld row too: it would tell a later `unindex_source` that nothing is indexed)
    rt.store.set_index_pending([
        {"generation_id": g.id, "doc_id": did, "source": source_name, "digest": "", "chunks": 0,
         "indexed_at": time.time(), "acl_hash": docs[did].acl_hash}
        for did in changed if did not in state or state[did].withheld])
    dim = next((len(rs[0].vector or []) for rs in plan.records.values() if rs), None)
    # every changed document is deleted first, recorded or not: a run killed after writing but
    # before recording leaves chunks that only a delete by document removes
    counts = _rewrite(rt, g.record, dim, changed + gone, recs)
    vec_snap, kw_snap = publish(rt.cfg, g.record)
    now = time.time()
    # Readers first, bookkeeping last: the snapshot is recorded (and live readers told) before
    # the index state says "written". A process killed in between leaves these documents "not
    # written", so the next run rewrites and publishes them again; the other order would leave
    # readers on an old (or no) snapshot that no run refreshes.
    rt.store.update_generation(g.id, vector_snapshot=vec_snap, keyword_snapshot=kw_snap, published_at=now)
    if g.status == "live":
        rt.store.bump_binding()
    rt.store.clear_index_state(g.id, gone)
    rt.store.set_index_state([
        {"generation_id": g.id, "doc_id": did, "source": source_name, "digest": plan.digests[did],
         "chunks": len(plan.records[did]), "indexed_at": now, "acl_hash": docs[did].acl_hash}
        for did in changed])
    counts["documents"] = indexed_documents(rt.store, g.id)
    rt.store.update_generation(g.id, counts=counts)
    return now, counts


@contextmanager
def _writing(rt: Runtime, gen: GenerationRecord) -> Iterator[bool]:
    """`gen`'s writer lock, and whether it is still kept: one dropped (`bindery discard`) while
    this run went on is not written again. Its files went under this same lock; taking the lock
    made its folder again, which goes too."""
    with writer_lock(rt.cfg, gen.name):
        row = rt.store.get_generation(gen.id)
        if row is not None and row.status != "dropped":
            yield True
            return
    drop_generation_files(rt.cfg, gen.name)
    yield False


def _rewrite(rt: Runtime, gen: GenerationRecord, dim: int | None, delete: list[str],
             records: list[IndexRecord]) -> dict[str, int]:
    """Delete `delete` documents, then write `records`, in both working indexes of `gen` (its
    writer lock held); their chunk counts after. An empty index (a first build) holds nothing to
    delete, and a filtered delete is a full scan in Qdrant local mode: it is skipped there."""
    pair = rt.open_writer(gen, dim)
    try:
        stale = delete if pair.vector.count() or pair.keyword.count() else []
        pair.vector.delete_docs(stale)
        pair.keyword.delete_docs(stale)
        pair.vector.upsert(records)
        pair.keyword.upsert(records)
        pair.keyword.commit()
        return {"chunks": pair.vector.count(), "keyword_chunks": pair.keyword.count()}
    finally:
        pair.close()


def apply_access(rt: Runtime, source: str, doc_ids: Collection[str]) -> int:
    """Write the store's ACL of `doc_ids` into every retained generation's indexes, nothing else
    of theirs changed: what a listing narrows or withholds in a run that then stops before its
    index step (a delete sweep the guard refused, an ACL file that cannot be read). The query
    service already refused them (it checks every hit against the store); without this the
    indexes kept the wider ACL until the next successful run, and `bindery verify` rightly
    reported drift. Returns the documents rewritten or removed, over all generations. It never
    raises: its callers are stopping a run for a reason of their own, which must stay the run's
    error; a failure here is an event, and the next successful run writes the indexes."""
    from connectors.lifecycle import RETAINED

    if not doc_ids:
        return 0
    try:
        stats = run_index(rt, source, [], rt.lifecycle.generations(RETAINED), only=set(doc_ids))
    except Exception as e:
        rt.store.add_event("access-not-indexed", f"the access changes and deletes of {len(doc_ids)} document(s) "
                           f"are enforced by the store but not yet in the indexes: {e}", source=source)
        return 0
    return stats.written_docs + stats.deleted_docs + stats.revoked_docs


def settle_access(rt: Runtime, source: str) -> int:
    """Carry the listing's deletes and access changes into every retained generation's indexes
    in a run stopped before its index step by the blocking parse-quality check: a document
    deleted from the store leaves them, and one whose ACL changed is rewritten with its new ACL
    where its content did not change, else removed until the next good run writes it (the
    module's rule: never left under its old ACL). Without this `bindery verify` reported drift
    after every blocked run. Returns the documents rewritten or removed."""
    from connectors.lifecycle import RETAINED

    live = {d.doc_id: d for d in rt.store.documents(source)}
    due: set[str] = set()
    for g in rt.lifecycle.generations(RETAINED):
        state = rt.store.index_state(g.id, source)
        due.update(did for did in state if did not in live)
        due.update(did for did, st in state.items() if did in live and st.acl_hash != live[did].acl_hash)
    return apply_access(rt, source, due)


def unindex_source(rt: Runtime, source: str, *, forget: bool = False) -> dict[str, str]:
    """Take a source's documents out of the indexes of every retained generation, keeping their
    store rows, chunks and embeddings (a source the configuration no longer names: put back, its
    next index run writes them again from the caches, into every generation that held them: the
    rows left are `IndexStateRecord.withheld`; without them a rollback target lost a renamed and
    restored source for good, and a rollback then served nothing of it).
    With `forget` (gc), their index-state rows go too.

    A generation other than the live one whose index cannot be opened (a damaged file) is
    skipped, as `run_index` skips one it only maintains: a rollback target's damage must not stop
    the live index's sync (the query service re-reads every hit's ACL from the store, so it
    serves none of the withheld documents; `bindery verify --repair` rebuilds it). Returns
    generation name -> why, for those; the live generation's damage is raised."""
    from connectors.lifecycle import RETAINED

    unwritable: dict[str, str] = {}
    for g in rt.lifecycle.generations(RETAINED):
        held = rt.store.held_doc_ids(g.id, source)  # withheld rows were taken out before: nothing to write
        if not held:
            if forget and (rows := list(rt.store.index_state(g.id, source))):
                rt.store.clear_index_state(g.id, rows)
            continue
        # pending first: a process killed after the delete leaves rows that the next call takes
        # out again, or that the source put back rewrites (rows that still named their digest
        # read "unchanged" to the put-back sync, and the documents stayed out: a review)
        rt.store.set_index_state([{"generation_id": g.id, "doc_id": did, "source": source, "digest": "",
                                   "chunks": 0, "indexed_at": time.time(), "acl_hash": None} for did in held])
        try:
            with _writing(rt, g.record) as kept:
                if kept:
                    counts = _rewrite(rt, g.record, None, held, [])
                    vec, kw = publish(rt.cfg, g.record)
        except IndexUnreadable as e:
            if g.status == "live":
                raise
            unwritable[g.name] = str(e)
            continue
        if not kept:
            continue
        # readers first, bookkeeping last (as `run_index`)
        rt.store.update_generation(g.id, vector_snapshot=vec, keyword_snapshot=kw, published_at=time.time())
        if g.status == "live":
            rt.store.bump_binding()
        if forget:
            rt.store.clear_index_state(g.id, list(rt.store.index_state(g.id, source)))
        else:
            rt.store.set_index_state([
                {"generation_id": g.id, "doc_id": did, "source": source, "digest": "", "chunks": 0,
                 "indexed_at": time.time(), "acl_hash": IndexStateRecord.WITHHELD} for did in held])
        rt.store.update_generation(g.id, counts={**counts, "documents": indexed_documents(rt.store, g.id)})
    return unwritable


def indexed_documents(store: DocumentStore, generation_id: int) -> int:
    """How many documents a generation's indexes hold (pending and withheld rows hold none)."""
    return sum(1 for r in store.index_state(generation_id).values() if r.digest)
