"""The store's content-keyed caches: parses, chunks, contextual prefixes and embeddings."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from connectors.store import schema as t
from connectors.store.engine import StoreBase, batches
from connectors.store.records import (
    ChunkRecord,
    ContextRecord,
    ParseRecord,
    records_of,
)


class CacheRows(StoreBase):
    """Parses, chunks, prefixes and embeddings, keyed by content and stage version."""

    def gc_orphan_caches(self, in_use: Mapping[str, str] | None = None, *,
                         created_before: float | None = None) -> dict[str, int]:
        """Drop content-keyed cache rows whose source content no live document has any more
        (nor has chunks cut from), so a deleted document leaves nothing behind in parses,
        contexts or embeddings.

        An embedding serves every text that hashes alike but names only the content it was
        first computed for. `in_use` maps the text hashes current documents embed to a content
        that embeds them: such a row naming a dead content is re-pointed there and kept, so an
        edited document's unchanged chunks (or a passage other documents share) are never
        embedded again. With `in_use` given, an embedding of a text no current text is (a chunk
        cut under a chunk size no retained generation uses) goes too, whatever its content; only
        one made before `created_before` (when `in_use` was read), so a run embedding while gc
        works keeps what it just wrote for its index stage."""
        live = sa.select(t.documents.c.content_hash).where(
            t.documents.c.deleted_at.is_(None), t.documents.c.content_hash.is_not(None))
        # a content is live too while a current document has chunks cut from it: a kept version
        # (new bytes that fail to parse keep the chunks of the last good ones) is rebuilt from its
        # parse, prefixes and embeddings by a reindex or `verify --repair`; dropped here, a
        # reindex after a gc left the document out of the candidate (a robustness pass). Read
        # apart, and only the few older contents: one NOT IN over every chunk's hash made
        # PostgreSQL give up its hashed lookup (82 s against 0.1 s on 200k chunks, a review)
        d, ch = t.documents.c, t.chunks.c
        kept = (sa.select(ch.content_hash).join(t.documents, d.doc_id == ch.doc_id)
                .where(d.deleted_at.is_(None), ch.content_hash.is_not(None), d.content_hash.is_not(None),
                       ch.content_hash != d.content_hash).distinct())
        out = {}
        unused = 0
        with self.tx() as c:
            if in_use is not None:
                e = t.embeddings
                old = e.c.created_at < (created_before if created_before is not None else time.time())
                stale = [h for (h,) in c.execute(sa.select(e.c.text_hash).where(old).distinct()) if h not in in_use]
                for batch in batches(stale):
                    unused += c.execute(e.delete().where(e.c.text_hash.in_(batch), old)).rowcount or 0
                dead = c.execute(sa.select(e.c.text_hash, e.c.embedder_id).where(
                    e.c.content_hash.is_not(None), e.c.content_hash.not_in(live),
                    e.c.content_hash.not_in(kept))).all()
                for text_hash, embedder_id in dead:
                    if text_hash in in_use:
                        c.execute(e.update().where(e.c.text_hash == text_hash, e.c.embedder_id == embedder_id)
                                  .values(content_hash=in_use[text_hash]))
            for name, table in (("parses", t.parses), ("contexts", t.contexts),
                                ("embeddings", t.embeddings)):
                q = table.delete().where(table.c.content_hash.is_not(None),
                                         table.c.content_hash.not_in(live), table.c.content_hash.not_in(kept))
                out[name] = c.execute(q).rowcount or 0
        out["embeddings"] += unused
        return out

    # -- parses ---------------------------------------------------------------------------
    def get_parses(self, keys: Iterable[tuple[str, str, str]], *,
                   blocks: bool = True) -> dict[tuple[str, str, str], ParseRecord]:
        """(content hash, parse version, format) -> the stored parse (any status), for those stored.
        `blocks=False` leaves out the text (`blocks` and `page_metrics` None): what the
        parse-quality check reads of every document, for a fraction of the bytes."""
        keys = list(keys)
        out: dict[tuple[str, str, str], ParseRecord] = {}
        hashes = sorted({k[0] for k in keys})
        heavy = ("blocks", "page_metrics")
        cols = list(t.parses.c) if blocks else [col for col in t.parses.c if col.name not in heavy]
        with self.engine.connect() as c:
            for batch in batches(hashes):
                q = sa.select(*cols).where(t.parses.c.content_hash.in_(batch))
                for r in c.execute(q).mappings():
                    row = r if blocks else {**r, **dict.fromkeys(heavy)}
                    out[(r["content_hash"], r["parse_version"], r["format"])] = ParseRecord.from_row(row)
        wanted = set(keys)
        return {k: v for k, v in out.items() if k in wanted}

    def parse_times(self, limit: int = 5000) -> dict[str, dict[str, float]]:
        """format -> {"docs", "seconds"} of the most recent `limit` timed parses, and for the
        documents that had pages OCR'd (`route` "ocr" in their page metrics) {"ocr_pages",
        "ocr_seconds"} apart: what `bindery plan` prices a document to parse by."""
        cols = (t.parses.c.format, t.parses.c.seconds, t.parses.c.page_metrics)
        out: dict[str, dict[str, float]] = {}
        with self.engine.connect() as c:
            rows = c.execute(sa.select(*cols).where(t.parses.c.seconds.is_not(None))
                             .order_by(t.parses.c.created_at.desc()).limit(limit))
            for r in rows:
                ocr = sum(1 for m in r.page_metrics or [] if isinstance(m, dict) and m.get("route") == "ocr")
                d = out.setdefault(r.format, dict.fromkeys(("docs", "seconds", "ocr_pages", "ocr_seconds"), 0.0))
                d["ocr_pages" if ocr else "docs"] += ocr or 1
                d["ocr_seconds" if ocr else "seconds"] += float(r.seconds)
        return out

    def parse_statuses(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
        """(content hash, parse version, format) -> the stored parse's status, for those stored,
        without reading their blocks (what is parsed already, and did it pass)."""
        keys = list(keys)
        wanted = set(keys)
        out: dict[tuple[str, str, str], str] = {}
        cols = (t.parses.c.content_hash, t.parses.c.parse_version, t.parses.c.format, t.parses.c.status)
        with self.engine.connect() as c:
            for batch in batches(sorted({k[0] for k in keys})):
                for r in c.execute(sa.select(*cols).where(t.parses.c.content_hash.in_(batch))):
                    key = (r.content_hash, r.parse_version, r.format)
                    if key in wanted:
                        out[key] = r.status
        return out

    def parse_heads(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str],
                                                                       tuple[str | None, dict[str, Any]]]:
        """(content hash, parse version, format) -> the parse's (title, `doc_metadata`), for good
        parses, without reading their blocks (the index stage needs titles and e-mail thread keys)."""
        keys = list(keys)
        wanted = set(keys)
        out: dict[tuple[str, str, str], tuple[str | None, dict[str, Any]]] = {}
        cols = (t.parses.c.content_hash, t.parses.c.parse_version, t.parses.c.format, t.parses.c.title,
                t.parses.c.doc_metadata)
        with self.engine.connect() as c:
            for batch in batches(sorted({k[0] for k in keys})):
                q = sa.select(*cols).where(t.parses.c.content_hash.in_(batch), t.parses.c.status == "ok")
                for r in c.execute(q):
                    key = (r.content_hash, r.parse_version, r.format)
                    if key in wanted:
                        out[key] = (r.title, r.doc_metadata or {})
        return out

    def put_parses(self, rows: list[dict[str, Any]]) -> None:
        """Upsert parse rows: mappings of `ParseRecord` fields (the parse stage builds each row
        up as it goes and writes them in batches)."""
        with self.tx() as c:
            self._upsert(c, t.parses, rows)

    # -- chunks ---------------------------------------------------------------------------
    def chunk_keys(self, doc_ids: Sequence[str], chunk_version: str) -> dict[str, tuple[str, str]]:
        """doc_id -> (content_hash, parse_version) its current chunks were cut from."""
        out: dict[str, tuple[str, str]] = {}
        with self.engine.connect() as c:
            for batch in batches(doc_ids):
                q = (
                    sa.select(t.chunks.c.doc_id, t.chunks.c.content_hash, t.chunks.c.parse_version)
                    .where(t.chunks.c.doc_id.in_(batch), t.chunks.c.chunk_version == chunk_version)
                    .distinct()
                )
                out.update({r[0]: (r[1], r[2]) for r in c.execute(q)})
        return out

    def replace_chunks(self, chunk_version: str, per_doc: dict[str, list[ChunkRecord]]) -> None:
        """Replace the chunks of each document (for one chunk version) in one transaction."""
        with self.tx() as c:
            for batch in batches(list(per_doc)):
                c.execute(t.chunks.delete().where(t.chunks.c.doc_id.in_(batch),
                                                  t.chunks.c.chunk_version == chunk_version))
            rows = [r.columns() for rs in per_doc.values() for r in rs]
            for batch in batches(rows):
                c.execute(t.chunks.insert(), list(batch))

    def chunks_for(self, doc_ids: Sequence[str], chunk_version: str) -> list[ChunkRecord]:
        """The chunks of these documents for one chunk version, by document and ordinal."""
        out: list[ChunkRecord] = []
        with self.engine.connect() as c:
            for batch in batches(doc_ids):
                q = (
                    sa.select(t.chunks)
                    .where(t.chunks.c.doc_id.in_(batch), t.chunks.c.chunk_version == chunk_version)
                    .order_by(t.chunks.c.doc_id, t.chunks.c.ordinal)
                )
                out.extend(records_of(ChunkRecord, c.execute(q)))
        return out

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        out: dict[str, ChunkRecord] = {}
        with self.engine.connect() as c:
            for batch in batches(chunk_ids):
                q = sa.select(t.chunks).where(t.chunks.c.chunk_id.in_(batch))
                out.update({r.chunk_id: r for r in records_of(ChunkRecord, c.execute(q))})
        return out

    def drop_chunk_versions_except(self, keep: set[str]) -> int:
        with self.tx() as c:
            return c.execute(t.chunks.delete().where(t.chunks.c.chunk_version.not_in(keep))).rowcount or 0

    # -- contexts & embeddings (content-keyed caches) --------------------------------------
    def get_contexts(self, input_hashes: Sequence[str], version: str) -> dict[str, ContextRecord]:
        out: dict[str, ContextRecord] = {}
        with self.engine.connect() as c:
            for batch in batches(list(input_hashes)):
                q = sa.select(t.contexts).where(
                    t.contexts.c.input_hash.in_(batch), t.contexts.c.context_version == version
                )
                out.update({r.input_hash: r for r in records_of(ContextRecord, c.execute(q))})
        return out

    def cached_contexts(self, input_hashes: Sequence[str], version: str) -> set[str]:
        """Which of these inputs have a prefix stored for `version` (the hashes alone)."""
        have: set[str] = set()
        with self.engine.connect() as c:
            for batch in batches(list(input_hashes)):
                q = sa.select(t.contexts.c.input_hash).where(
                    t.contexts.c.input_hash.in_(batch), t.contexts.c.context_version == version)
                have.update(r[0] for r in c.execute(q))
        return have

    def put_contexts(self, rows: list[dict[str, Any]]) -> None:
        """Upsert prefix rows: mappings of `ContextRecord` fields (a batch write)."""
        with self.tx() as c:
            self._upsert(c, t.contexts, rows)

    def get_embeddings(self, text_hashes: Sequence[str], embedder_id: str) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with self.engine.connect() as c:
            for batch in batches(list(text_hashes)):
                q = sa.select(t.embeddings.c.text_hash, t.embeddings.c.vector).where(
                    t.embeddings.c.text_hash.in_(batch), t.embeddings.c.embedder_id == embedder_id
                )
                out.update({r[0]: r[1] for r in c.execute(q)})
        return out

    def missing_embeddings(self, text_hashes: Sequence[str], embedder_id: str) -> set[str]:
        have: set[str] = set()
        with self.engine.connect() as c:
            for batch in batches(list(text_hashes)):
                q = sa.select(t.embeddings.c.text_hash).where(
                    t.embeddings.c.text_hash.in_(batch), t.embeddings.c.embedder_id == embedder_id
                )
                have.update(r[0] for r in c.execute(q))
        return set(text_hashes) - have

    def put_embeddings(self, rows: list[dict[str, Any]]) -> None:
        with self.tx() as c:
            self._upsert(c, t.embeddings, rows)

