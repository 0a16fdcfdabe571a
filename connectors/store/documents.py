"""The store's sources and documents: listing results, ACLs, deletes and moves."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from connectors.acl import both
from connectors.store import schema as t
from connectors.store.engine import StoreBase, batches
from connectors.store.records import (
    DocumentRecord,
    SourceRecord,
    records_of,
)


class DocumentRows(StoreBase):
    """Sources and documents: what a listing found, and what may be served to whom."""

    # -- sources --------------------------------------------------------------------------
    def upsert_source(self, name: str, kind: str, config: dict[str, Any]) -> None:
        with self.tx() as c:
            existing = c.execute(sa.select(t.sources.c.name).where(t.sources.c.name == name)).first()
            if existing:
                c.execute(t.sources.update().where(t.sources.c.name == name).values(kind=kind, config=config))
            else:
                c.execute(t.sources.insert().values(name=name, kind=kind, config=config))

    def get_source(self, name: str) -> SourceRecord | None:
        with self.engine.connect() as c:
            row = c.execute(sa.select(t.sources).where(t.sources.c.name == name)).mappings().first()
            return SourceRecord.from_row(row) if row else None

    def list_sources(self) -> list[SourceRecord]:
        with self.engine.connect() as c:
            rows = c.execute(sa.select(t.sources).order_by(t.sources.c.name)).mappings()
            return [SourceRecord.from_row(r) for r in rows]

    def record_listing(self, name: str, count: int | None, *, ok: bool, error: str | None = None,
                       probe: str | None = None) -> None:
        now = time.time()
        values: dict[str, Any] = {"last_listing_at": now, "last_listing_count": count, "last_error": error}
        if ok:
            values.update(last_good_listing_at=now, last_good_listing_count=count, last_error=None)
        if probe is not None:
            values["probe"] = probe
        with self.tx() as c:
            c.execute(t.sources.update().where(t.sources.c.name == name).values(**values))

    # -- documents ------------------------------------------------------------------------
    def documents(self, source: str | None = None, *, include_deleted: bool = False) -> list[DocumentRecord]:
        q = sa.select(t.documents)
        if source is not None:
            q = q.where(t.documents.c.source == source)
        if not include_deleted:
            q = q.where(t.documents.c.deleted_at.is_(None))
        with self.engine.connect() as c:
            return list(records_of(DocumentRecord, c.execute(q.order_by(t.documents.c.external_id))))

    def documents_of_every_shard(self, source: str) -> list[DocumentRecord]:
        """A source's live documents, every shard's (`ShardStore.documents` gives a stage only its
        shard's): what an AsciiDoc page may include lives anywhere in the source."""
        return DocumentRows.documents(self, source)

    def get_documents(self, doc_ids: Iterable[str]) -> dict[str, DocumentRecord]:
        ids = list(doc_ids)
        out: dict[str, DocumentRecord] = {}
        with self.engine.connect() as c:
            for batch in batches(ids):
                q = sa.select(t.documents).where(t.documents.c.doc_id.in_(batch))
                out.update({r.doc_id: r for r in records_of(DocumentRecord, c.execute(q))})
        return out

    def current_acls(self, doc_ids: Iterable[str]) -> dict[str, list[str]]:
        """doc_id -> current ACL, for documents that exist and are not deleted; and for one
        deleted by a move (`mark_moved`) while the document it moved to is live with the same
        bytes, the access both give (that document's access taken away, or it deleted or edited,
        takes the old path's at once). A few indexed SELECTs on the primary key per batch; the
        query service calls it once per query."""
        d = t.documents.c
        out: dict[str, list[str]] = {}
        moved: dict[str, tuple[str, list[str], str | None]] = {}  # old id -> (new id, its ACL, its bytes)
        with self.engine.connect() as c:
            for batch in batches(list(doc_ids)):
                q = sa.select(d.doc_id, d.acl, d.deleted_at, d.moved_to, d.content_hash).where(
                    d.doc_id.in_(batch), d.deleted_at.is_(None) | d.moved_to.is_not(None))
                for doc, acl, deleted_at, moved_to, chash in c.execute(q):
                    if deleted_at is None:
                        out[doc] = list(acl or ())
                    else:
                        moved[doc] = (moved_to, list(acl or ()), chash)
            for batch in batches(sorted({new for new, _, _ in moved.values()})):
                q = sa.select(d.doc_id, d.acl, d.content_hash).where(d.doc_id.in_(batch), d.deleted_at.is_(None))
                now: dict[str, tuple[list[str], str | None]] = {r[0]: (list(r[1] or ()), r[2]) for r in c.execute(q)}
                for old, (new, acl, chash) in moved.items():
                    if new in now and now[new][1] == chash:
                        out[old] = both(acl, now[new][0])
        return out

    def set_acls(self, changes: Sequence[tuple[str, str, list[str], str]]) -> int:
        """Give documents a new ACL: (doc_id, the acl_hash it was read with, ACL, its hash). Only a
        live row still holding the ACL it was read with changes (a concurrent run's newer write
        stands); touches nothing else. Returns how many rows changed."""
        n = 0
        with self.tx() as c:
            for did, old_hash, acl, acl_hash in changes:
                n += c.execute(t.documents.update().where(
                    t.documents.c.doc_id == did, t.documents.c.acl_hash == old_hash,
                    t.documents.c.deleted_at.is_(None)).values(acl=acl, acl_hash=acl_hash)).rowcount or 0
        return n

    def removed_sources(self, configured: Iterable[str]) -> dict[str, int]:
        """source -> live documents the store still holds for a source the configuration no longer
        names (a listing withholds them from search; `bindery gc` removes them)."""
        names = set(configured)
        d = t.documents.c
        with self.engine.connect() as c:
            # every listing and index run asks: the source names alone come from the index on
            # `source`, and only a source found missing has its documents counted
            gone = [s for (s,) in c.execute(sa.select(d.source).distinct()) if s not in names]
            if not gone:
                return {}
            q = (sa.select(d.source, sa.func.count()).where(d.deleted_at.is_(None), d.source.in_(gone))
                 .group_by(d.source))
            return {r[0]: int(r[1]) for r in c.execute(q)}

    def upsert_documents(self, rows: list[dict[str, Any]]) -> None:
        """Insert or update document rows: mappings of `DocumentRecord` fields (a batch write;
        `DocumentRecord.to_dict()` gives one)."""
        with self.tx() as c:
            self._upsert(c, t.documents, rows)

    def touch_documents(self, doc_ids: Sequence[str], at: float) -> None:
        with self.tx() as c:
            for batch in batches(doc_ids):
                c.execute(t.documents.update().where(t.documents.c.doc_id.in_(batch)).values(last_seen=at))

    def mark_deleted(self, doc_ids: Sequence[str], at: float) -> None:
        with self.tx() as c:
            for batch in batches(doc_ids):
                c.execute(t.documents.update().where(t.documents.c.doc_id.in_(batch)).values(deleted_at=at))

    def mark_moved(self, moves: Sequence[tuple[str, str]], at: float) -> None:
        """Delete documents whose bytes the listing found at a new path ((old doc id, new doc
        id) pairs), keeping them served (`current_acls`): their chunk rows and index entries
        stay until no index holds them (`retire_moved`), so a rename never takes a document out
        of search, even in a sync interrupted before its index step. Their dead letters go now
        (the path is gone)."""
        with self.tx() as c:
            for old, new in moves:
                c.execute(t.documents.update().where(t.documents.c.doc_id == old).values(deleted_at=at, moved_to=new))
                # a path kept for an earlier move of the same bytes follows them on (plan.md ->
                # plan-b.md -> plan-c.md: plan.md, which a rollback target still held, was lost
                # once plan-b.md was deleted in its turn; a review)
                c.execute(t.documents.update().where(t.documents.c.moved_to == old).values(moved_to=new))
            for batch in batches([old for old, _ in moves]):
                c.execute(t.dead_letters.delete().where(t.dead_letters.c.doc_id.in_(batch)))

    def moved_away(self, source: str) -> list[str]:
        """The source's documents deleted by a move and still kept (`mark_moved`)."""
        with self.engine.connect() as c:
            q = sa.select(t.documents.c.doc_id).where(t.documents.c.source == source,
                                                       t.documents.c.moved_to.is_not(None))
            return [r[0] for r in c.execute(q)]

    def retire_moved(self, doc_ids: Sequence[str]) -> None:
        """Moved documents no index holds any more: their chunk rows go, and they are deleted
        like any other."""
        with self.tx() as c:
            for batch in batches(doc_ids):
                c.execute(t.chunks.delete().where(t.chunks.c.doc_id.in_(batch)))
                c.execute(t.documents.update().where(t.documents.c.doc_id.in_(batch),
                                                     t.documents.c.moved_to.is_not(None)).values(moved_to=None))

    def purge_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every trace of deleted documents that lives per document (chunks, DLQ)."""
        with self.tx() as c:
            for batch in batches(doc_ids):
                c.execute(t.chunks.delete().where(t.chunks.c.doc_id.in_(batch)))
                c.execute(t.dead_letters.delete().where(t.dead_letters.c.doc_id.in_(batch)))

