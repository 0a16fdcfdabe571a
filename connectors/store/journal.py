"""The store's journal: dead letters, events and per-source run outcomes."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from connectors.store import schema as t
from connectors.store.engine import StoreBase, batches
from connectors.store.records import (
    DeadLetterRecord,
    EventRecord,
)


class JournalRows(StoreBase):
    """Dead letters, events and what the last runs recorded per source."""

    # -- dead letters & events ------------------------------------------------------------
    def add_dead_letter(self, *, doc_id: str, source: str, external_id: str, stage: str, reason: str,
                        error: str, trace: str | None = None, content_hash: str | None = None) -> None:
        """Record a failure; an unresolved entry for the same doc+stage is replaced, not duplicated."""
        with self.tx() as c:
            c.execute(t.dead_letters.delete().where(
                t.dead_letters.c.doc_id == doc_id, t.dead_letters.c.stage == stage,
                t.dead_letters.c.resolved_at.is_(None)))
            c.execute(t.dead_letters.insert().values(
                doc_id=doc_id, source=source, external_id=external_id, stage=stage, reason=reason,
                error=error[:4000], trace=(trace or "")[-8000:], content_hash=content_hash, at=time.time()))

    def resolve_dead_letters(self, doc_ids: Sequence[str], stages: Iterable[str] | None = None) -> int:
        n = 0
        with self.tx() as c:
            for batch in batches(doc_ids):
                q = t.dead_letters.update().where(
                    t.dead_letters.c.doc_id.in_(batch), t.dead_letters.c.resolved_at.is_(None))
                if stages is not None:
                    q = q.where(t.dead_letters.c.stage.in_(list(stages)))
                n += c.execute(q.values(resolved_at=time.time())).rowcount or 0
        return n

    def delete_dead_letters(self, ids: Sequence[int]) -> None:
        """Remove dead-letter rows by id (their item no longer exists: nothing to retry)."""
        with self.tx() as c:
            for batch in batches(ids):
                c.execute(t.dead_letters.delete().where(t.dead_letters.c.id.in_(batch)))

    def set_parse_accepted(self, name: str, at: float) -> None:
        """Parses created up to `at` passed the source's parse-quality check."""
        with self.tx() as c:
            c.execute(t.sources.update().where(t.sources.c.name == name).values(parse_accepted_at=at))

    def set_source_error(self, name: str, error: str | None) -> None:
        """Record why the last sync of a source failed (`bindery status` shows it)."""
        with self.tx() as c:
            c.execute(t.sources.update().where(t.sources.c.name == name).values(last_error=error))

    def dead_letter_docs(self, stages: Iterable[str]) -> set[str]:
        """Documents with an unresolved dead letter at one of `stages` (to resolve on success)."""
        q = sa.select(t.dead_letters.c.doc_id).where(
            t.dead_letters.c.resolved_at.is_(None), t.dead_letters.c.stage.in_(list(stages)))
        with self.engine.connect() as c:
            return {r[0] for r in c.execute(q)}

    def dead_letters(self, *, source: str | None = None, unresolved: bool = True) -> list[DeadLetterRecord]:
        q = sa.select(t.dead_letters).order_by(t.dead_letters.c.at)
        if unresolved:
            q = q.where(t.dead_letters.c.resolved_at.is_(None))
        if source:
            q = q.where(t.dead_letters.c.source == source)
        with self.engine.connect() as c:
            return [DeadLetterRecord.from_row(r) for r in c.execute(q).mappings()]

    def add_event(self, kind: str, message: str, *, source: str | None = None,
                  details: dict[str, Any] | None = None) -> None:
        with self.tx() as c:
            c.execute(t.events.insert().values(kind=kind, source=source, message=message,
                                               details=details or {}, at=time.time()))

    def events(self, kind: str | None = None, limit: int = 50) -> list[EventRecord]:
        """The newest `limit` events (of `kind`), newest first."""
        q = sa.select(t.events).order_by(t.events.c.id.desc()).limit(limit)
        if kind:
            q = q.where(t.events.c.kind == kind)
        with self.engine.connect() as c:
            return [EventRecord.from_row(r) for r in c.execute(q).mappings()]

    def counts(self) -> dict[str, int]:
        with self.engine.connect() as c:
            docs = c.execute(sa.select(sa.func.count()).select_from(t.documents)
                             .where(t.documents.c.deleted_at.is_(None))).scalar_one()
            dl = c.execute(sa.select(sa.func.count()).select_from(t.dead_letters)
                           .where(t.dead_letters.c.resolved_at.is_(None))).scalar_one()
        return {"documents": int(docs), "dead_letters": int(dl)}
