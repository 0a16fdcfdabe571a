"""The store's generations, the live binding and each generation's index state."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from connectors.errors import BindingError
from connectors.store import schema as t
from connectors.store.engine import StoreBase, batches
from connectors.store.records import (
    BindingRecord,
    GenerationRecord,
    IndexStateRecord,
    records_of,
)

_UNSET: Any = object()  # "keep the current target as previous" (the normal flip)
_LOOKUP_BY_KEY = 5000  # `in_any_index`: fewer ids than this are looked up by key, more by a scan


class GenerationRows(StoreBase):
    """Generations, the binding that names the live one, and what each index holds."""

    # -- generations & the binding ----------------------------------------------------------
    def create_generation(self, *, name: str, stage_versions: dict[str, str], stage_configs: dict[str, Any],
                          embedder_id: str, vector_index: str, keyword_index: str, vector_engine: str | None = None,
                          status: str = "building", counts: dict[str, Any] | None = None,
                          eval_report: dict[str, Any] | None = None, created_at: float | None = None) -> int:
        """Insert a generation row (the columns of `GenerationRecord` a new generation has); its id."""
        row = {"name": name, "status": status, "stage_versions": stage_versions, "stage_configs": stage_configs,
               "embedder_id": embedder_id, "vector_index": vector_index, "vector_engine": vector_engine,
               "keyword_index": keyword_index, "counts": counts or {}, "eval_report": eval_report,
               "created_at": time.time() if created_at is None else created_at}
        with self.tx() as c:
            res = c.execute(t.generations.insert().values(**row))
            return int(res.inserted_primary_key[0])  # type: ignore[index]

    def get_generation(self, gen_id: int) -> GenerationRecord | None:
        with self.engine.connect() as c:
            row = c.execute(sa.select(t.generations).where(t.generations.c.id == gen_id)).mappings().first()
            return GenerationRecord.from_row(row) if row else None

    def generations(self, statuses: Iterable[str] | None = None) -> list[GenerationRecord]:
        q = sa.select(t.generations).order_by(t.generations.c.id)
        if statuses is not None:
            q = q.where(t.generations.c.status.in_(list(statuses)))
        with self.engine.connect() as c:
            return [GenerationRecord.from_row(r) for r in c.execute(q).mappings()]

    def update_generation(self, gen_id: int, **values: Any) -> None:
        with self.tx() as c:
            c.execute(t.generations.update().where(t.generations.c.id == gen_id).values(**values))

    def owner(self) -> tuple[str, str] | None:
        """(store id, data_dir) of the deployment this store belongs to; None before one claimed it."""
        with self.engine.connect() as c:
            row = c.execute(sa.select(t.store_owner.c.store_id, t.store_owner.c.data_dir)).first()
            return (row.store_id, row.data_dir) if row else None

    def claim_owner(self, store_id: str, data_dir: str) -> tuple[str, str]:
        """Record (store id, data_dir) as the owner unless one is recorded; the owner as stored
        (two first runs racing: both get the winner's)."""
        try:
            with self.tx() as c:
                if c.execute(sa.select(t.store_owner.c.id)).first() is None:
                    c.execute(t.store_owner.insert().values(id=1, store_id=store_id, data_dir=data_dir,
                                                            claimed_at=time.time()))
        except sa.exc.IntegrityError:  # PostgreSQL: the other first run inserted between our read and write
            pass
        owner = self.owner()
        assert owner is not None, "claimed above, by this process or another"
        return owner

    def drop_generation_row(self, gen_id: int, *, statuses: tuple[str, ...]) -> bool:
        """Mark generation `gen_id` dropped if its status is one of `statuses`, in one conditional
        write: a promotion that flips to it at the same moment either sees it dropped (and refuses,
        `flip_binding`) or has made it live first (and this returns False)."""
        with self.tx() as c:
            done = c.execute(t.generations.update()
                             .where(t.generations.c.id == gen_id, t.generations.c.status.in_(statuses))
                             .values(status="dropped", vector_snapshot=None, keyword_snapshot=None,
                                     retired_at=time.time()))
            return bool(done.rowcount)

    def get_binding(self, alias: str = "live") -> BindingRecord | None:
        with self.engine.connect() as c:
            row = c.execute(sa.select(t.bindings).where(t.bindings.c.alias == alias)).mappings().first()
            return BindingRecord.from_row(row) if row else None

    def flip_binding(self, generation_id: int, *, alias: str = "live", by: str | None = None,
                     previous_id: Any = _UNSET, forced: dict[str, Any] | None = None,
                     expect_live: Any = _UNSET, expect_previous: Any = _UNSET) -> BindingRecord:
        """Point `alias` at `generation_id` in ONE transaction, keeping the old target as previous.

        Generation statuses move in the same transaction: the new one becomes live, the old live
        one previous, an older previous retired. `previous_id` overrides what is kept as
        previous (a rollback keeps the generation it rolled back from). `expect_live` and
        `expect_previous`: what the caller decided on (the gate judged against that live; a
        rollback read that pair); a binding that moved since (another promotion or rollback
        flipped meanwhile) is refused, not overwritten: a rollback that read the binding before
        a promotion's flip left two generations marked live (a concurrency pass).
        """
        now = time.time()
        with self.tx() as c:
            cur = c.execute(
                sa.select(t.bindings).where(t.bindings.c.alias == alias).with_for_update()
            ).mappings().first()
            old = cur["generation_id"] if cur else None
            previous_now = cur["previous_generation_id"] if cur else None
            if (expect_live is not _UNSET and old != expect_live) or (
                    expect_previous is not _UNSET and previous_now != expect_previous):
                raise BindingError(f"the {alias} binding moved while this ran (another promotion or rollback: "
                                   f"generation {old} is {alias} now): see `bindery status` and run again")
            prev = old if previous_id is _UNSET else previous_id
            if old == generation_id and previous_id is _UNSET:
                raise BindingError(f"generation {generation_id} is already {alias}")
            if cur:
                old_prev = cur["previous_generation_id"]
                c.execute(t.bindings.update().where(t.bindings.c.alias == alias).values(
                    generation_id=generation_id, previous_generation_id=prev, flipped_at=now,
                    flipped_by=by, version=cur["version"] + 1))
                # whatever the binding named and no longer does is retired: never a second "live"
                for gone in {old_prev, old} - {None, generation_id, prev}:
                    c.execute(t.generations.update().where(t.generations.c.id == gone)
                              .values(status="retired", retired_at=now))
            else:
                c.execute(t.bindings.insert().values(alias=alias, generation_id=generation_id,
                                                     previous_generation_id=prev, flipped_at=now,
                                                     flipped_by=by, version=1))
            if prev is not None:
                c.execute(t.generations.update().where(t.generations.c.id == prev).values(status="previous"))
            values: dict[str, Any] = {"status": "live", "promoted_at": now}
            if forced:
                values.update(forced_by=forced.get("by"), force_reason=forced.get("reason"))
            # conditional, as `drop_generation_row` is: one dropped meanwhile is refused, and the
            # transaction (the binding row included) rolls back
            made = c.execute(t.generations.update()
                             .where(t.generations.c.id == generation_id, t.generations.c.status != "dropped")
                             .values(**values))
            if not made.rowcount:
                raise BindingError(f"generation {generation_id} was dropped: it cannot be bound")
            row = c.execute(sa.select(t.bindings).where(t.bindings.c.alias == alias)).mappings().one()
            return BindingRecord.from_row(row)

    def bump_binding(self, alias: str = "live") -> None:
        """Tell readers that the bound generation's published snapshot changed."""
        with self.tx() as c:
            c.execute(t.bindings.update().where(t.bindings.c.alias == alias)
                      .values(version=t.bindings.c.version + 1))

    # -- index state ----------------------------------------------------------------------
    def index_state(self, generation_id: int, source: str | None = None) -> dict[str, IndexStateRecord]:
        """doc_id -> what generation `generation_id`'s indexes hold of it (pending rows included)."""
        q = sa.select(t.index_state).where(t.index_state.c.generation_id == generation_id)
        if source is not None:
            q = q.where(t.index_state.c.source == source)
        with self.engine.connect() as c:
            return {r.doc_id: r for r in records_of(IndexStateRecord, c.execute(q))}

    def in_any_index(self, source: str, doc_ids: set[str], generations: Collection[int] | None = None) -> set[str]:
        """Those of `doc_ids` (of `source`) with a row in the index state of a generation not
        dropped: held, being written (a pending row: a run killed between its write and its
        bookkeeping leaves documents served under one) or withheld (kept for a removed source's
        return). What a delete would take out of an index; the others leave every index as it
        is. Looked up by the table's key, (generation, document): a few ids by batches, many by
        reading the source's rows of each generation (source and document alone are not indexed).
        `generations`: only these."""
        s = t.index_state.c
        out: set[str] = set()
        with self.engine.connect() as c:
            gens = c.execute(sa.select(t.generations.c.id).where(t.generations.c.status != "dropped")).scalars().all()
            gens = [g for g in gens if generations is None or g in generations]
            for gen in gens:
                want = sorted(doc_ids - out)
                if not want:
                    break
                if len(want) <= _LOOKUP_BY_KEY:
                    for i in range(0, len(want), 500):  # within every engine's limit on bound parameters
                        q = sa.select(s.doc_id).where(s.generation_id == gen, s.doc_id.in_(want[i:i + 500]),
                                                      s.source == source)
                        out.update(c.execute(q).scalars())
                else:
                    q = sa.select(s.doc_id).where(s.generation_id == gen, s.source == source)
                    out.update(did for did in c.execute(q).scalars() if did in doc_ids)
        return out

    def held_doc_ids(self, generation_id: int, source: str) -> list[str]:
        """The documents of a source that generation `generation_id`'s index state says may be
        in its indexes: every row but the withheld ones (`IndexStateRecord.withheld`), selected
        in SQL: a removed source's withheld rows are read by every index run until gc."""
        s = t.index_state.c
        q = sa.select(s.doc_id).where(s.generation_id == generation_id, s.source == source, sa.or_(
            s.digest != "", s.acl_hash.is_(None), s.acl_hash != IndexStateRecord.WITHHELD))
        with self.engine.connect() as c:
            return [r.doc_id for r in c.execute(q)]

    def set_index_state(self, rows: list[dict[str, Any]]) -> None:
        """Upsert index-state rows (mappings with the `IndexStateRecord` fields: a batch write)."""
        with self.tx() as c:
            self._upsert(c, t.index_state, rows)

    def confirm_indexed(self, generation_id: int, digests: Mapping[str, str], at: float) -> int:
        """Move `indexed_at` of these documents' rows in a generation to `at`, each only while
        its row still holds the digest given (doc id -> digest): a row another writer changed
        meanwhile, or one cleared with a dropped generation, is left as it is. Returns how many."""
        n = 0
        with self.tx() as c:
            for doc, digest in digests.items():
                n += c.execute(t.index_state.update().where(
                    t.index_state.c.generation_id == generation_id, t.index_state.c.doc_id == doc,
                    t.index_state.c.digest == digest).values(indexed_at=at)).rowcount or 0
        return n

    def set_index_pending(self, rows: list[dict[str, Any]]) -> None:
        """Rows (empty digest) for documents about to be written into a generation that does
        not hold them yet: a run that dies before `set_index_state` leaves them, and the next run
        rewrites or removes those documents (assets/index_stage.py)."""
        if rows:
            with self.tx() as c:
                self._upsert(c, t.index_state, rows)

    def clear_index_state(self, generation_id: int, doc_ids: Sequence[str]) -> None:
        with self.tx() as c:
            for batch in batches(doc_ids):
                c.execute(t.index_state.delete().where(
                    t.index_state.c.generation_id == generation_id, t.index_state.c.doc_id.in_(batch)))

