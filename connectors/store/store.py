"""`DocumentStore`: typed access to the document store over SQLAlchemy (SQLite or PostgreSQL).

Writes are idempotent: upserts on natural keys, per-document delete-then-insert for chunks.
SQLite runs in WAL mode with a busy timeout so the query service can read while a sync writes.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connectors.acl import both
from connectors.errors import BindingError, StoreError
from connectors.store import schema as t
from connectors.store.records import (
    BindingRecord,
    ChunkRecord,
    ContextRecord,
    DeadLetterRecord,
    DocumentRecord,
    EventRecord,
    GenerationRecord,
    IndexStateRecord,
    ParseRecord,
    SourceRecord,
    records_of,
)

_MIGRATIONS = Path(__file__).parent / "migrations"
_UNSET: Any = object()  # "keep the current target as previous" (the normal flip)
_CHUNK = 500  # rows per IN (...) clause; keeps SQLite under its variable limit


def _batches(items: Sequence[Any], n: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL, None for any other (or an in-memory one)."""
    if not url.startswith("sqlite") or "///" not in url:
        return None
    path = url.split("///", 1)[1].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" and not path.startswith("file:") else None


# A SQLite store holds the parsed text of every source, whatever their own permissions: its file
# and the folders made for it are owner-only, as data_dir is. One outside data_dir came out 0644
# under 0755 folders (a robustness pass). SQLite gives its -wal and -shm files the database
# file's mode. What exists already keeps what its owner chose.
# Any other failure to create them (a read-only folder) is left to SQLite, whose "unable to open
# database file" becomes the store's one-line error, not an internal one.
def _owner_only_folders(folder: Path) -> None:
    for missing in reversed([p for p in (folder, *folder.parents) if not p.exists()]):
        with contextlib.suppress(OSError):  # made by another process first, or not ours to make
            missing.mkdir(mode=0o700)


def _owner_only_file(path: Path) -> None:
    """Create the database file 0600 before SQLite does (writers only: a reader of a fresh
    data dir must leave no file behind, `DocumentStore.initialised`)."""
    with contextlib.suppress(OSError):  # it exists (its owner's mode stays), or SQLite says why not
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        if (path := _sqlite_file(url)) is not None:
            _owner_only_folders(path.parent)
        engine = sa.create_engine(url, connect_args={"timeout": 60})

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _rec: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.close()

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            # Write transactions take SQLite's write lock up front, so read-modify-write (the
            # binding flip) is atomic; read-only ones stay deferred and never block a writer.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.pop("immediate", False) else "BEGIN")

        return engine
    return sa.create_engine(url, pool_pre_ping=True)


# The newest migration's revision, written down: asking Alembic loads every migration script
# (~0.15 s, a tenth of a `bindery plan`). tests/test_store.py holds it equal to Alembic's head.
HEAD_REVISION = "0007"


def head_revision() -> str:
    """The newest migration's revision, as Alembic reads it from the scripts: the schema this
    code reads and writes (`HEAD_REVISION`)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None, "the migrations have one head"
    return head


def open_error_reason(e: sa.exc.DatabaseError) -> str:
    """The driver's reason, with what to do where it is the usual first-setup mistake: Bindery
    creates its tables, not the PostgreSQL database that holds them (a new-user pass)."""
    why = " ".join(str(e.orig).split())
    if re.search(r'database "[^"]*" does not exist', why):
        why += " (create it first: `createdb NAME`, or CREATE DATABASE; Bindery creates its tables in it)"
    return why


_LOOKUP_BY_KEY = 5000  # `in_any_index`: fewer ids than this are looked up by key, more by a scan


class DocumentStore:
    """The source of truth. One instance per process; cheap to create."""

    def __init__(self, url: str, *, migrate: bool = True):
        self.url = url
        try:
            self.engine = make_engine(url)
            if migrate:
                if (path := _sqlite_file(url)) is not None:
                    _owner_only_file(path)
                self.migrate()
        except sa.exc.DatabaseError as e:  # down, refused, or not a database at all (a corrupt file)
            raise StoreError(f"cannot open document store {self._safe_url()}: {open_error_reason(e)}") from e

    @classmethod
    def preview(cls, url: str) -> DocumentStore:
        """The store as `bindery plan` reads it, writing nothing: the real one where a writer
        has brought it to the current schema; on a fresh data dir (no database file, no schema
        yet) an empty in-memory store of the current schema, so a plan neither creates the file
        nor runs a migration. A store whose schema is behind is migrated first, as any writer
        would: reading it with today's columns would fail."""
        path = url.split("///", 1)[-1] if url.startswith("sqlite") else None
        if path is not None and (not path or path == ":memory:" or not Path(path).exists()):
            return cls._empty()
        store = cls(url, migrate=False)
        try:
            if not store.initialised():
                return cls._empty()
            if store.schema_revision() != HEAD_REVISION:
                store.migrate()
        except sa.exc.DatabaseError as e:  # down, refused, or not a database at all (a corrupt file)
            raise StoreError(f"cannot open document store {store._safe_url()}: {open_error_reason(e)}") from e
        return store

    @classmethod
    def _empty(cls) -> DocumentStore:
        store = cls("sqlite://", migrate=False)  # one connection per thread; the plan reads from one
        t.metadata.create_all(store.engine)  # a throwaway database, not a live one: no Alembic
        return store

    def schema_revision(self) -> str | None:
        """The Alembic revision the database is at (None before the first migration)."""
        with self.engine.connect() as conn:
            if not sa.inspect(conn).has_table("alembic_version"):
                return None
            return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()

    def _safe_url(self) -> str:
        return sa.engine.make_url(self.url).render_as_string(hide_password=True)

    # -- schema -------------------------------------------------------------------------
    def initialised(self) -> bool:
        """Whether a writer has created the schema yet. Readers (the query service) never
        migrate; on a fresh data dir they report "nothing synced yet" instead of failing, and
        leave no empty database file behind (connecting to SQLite creates one)."""
        url = self.engine.url
        if (url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
                and "uri" not in url.query and not Path(url.database).exists()):
            return False
        return sa.inspect(self.engine).has_table(t.bindings.name)

    def migrate(self) -> None:
        """Bring the schema to head through Alembic (never create_all on a live database)."""
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(_MIGRATIONS))
        with self.tx() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """A write transaction (BEGIN IMMEDIATE on SQLite, row locks on PostgreSQL)."""
        with self.engine.connect() as conn:
            conn.info["immediate"] = True
            with conn.begin():
                yield conn

    def _upsert(self, conn: Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        keys = [c.name for c in table.primary_key.columns]
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            stmt = pg_insert(table)
        else:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            stmt = sqlite_insert(table)  # type: ignore[assignment]
        cols = {c: getattr(stmt.excluded, c) for c in rows[0] if c not in keys}
        stmt = stmt.on_conflict_do_update(index_elements=keys, set_=cols) if cols else (
            stmt.on_conflict_do_nothing(index_elements=keys)
        )
        for batch in _batches(rows, 200):
            conn.execute(stmt, list(batch))

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
        return DocumentStore.documents(self, source)

    def get_documents(self, doc_ids: Iterable[str]) -> dict[str, DocumentRecord]:
        ids = list(doc_ids)
        out: dict[str, DocumentRecord] = {}
        with self.engine.connect() as c:
            for batch in _batches(ids):
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
            for batch in _batches(list(doc_ids)):
                q = sa.select(d.doc_id, d.acl, d.deleted_at, d.moved_to, d.content_hash).where(
                    d.doc_id.in_(batch), d.deleted_at.is_(None) | d.moved_to.is_not(None))
                for doc, acl, deleted_at, moved_to, chash in c.execute(q):
                    if deleted_at is None:
                        out[doc] = list(acl or ())
                    else:
                        moved[doc] = (moved_to, list(acl or ()), chash)
            for batch in _batches(sorted({new for new, _, _ in moved.values()})):
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
            for batch in _batches(doc_ids):
                c.execute(t.documents.update().where(t.documents.c.doc_id.in_(batch)).values(last_seen=at))

    def mark_deleted(self, doc_ids: Sequence[str], at: float) -> None:
        with self.tx() as c:
            for batch in _batches(doc_ids):
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
            for batch in _batches([old for old, _ in moves]):
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
            for batch in _batches(doc_ids):
                c.execute(t.chunks.delete().where(t.chunks.c.doc_id.in_(batch)))
                c.execute(t.documents.update().where(t.documents.c.doc_id.in_(batch),
                                                     t.documents.c.moved_to.is_not(None)).values(moved_to=None))

    def purge_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every trace of deleted documents that lives per document (chunks, DLQ)."""
        with self.tx() as c:
            for batch in _batches(doc_ids):
                c.execute(t.chunks.delete().where(t.chunks.c.doc_id.in_(batch)))
                c.execute(t.dead_letters.delete().where(t.dead_letters.c.doc_id.in_(batch)))

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
                for batch in _batches(stale):
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
            for batch in _batches(hashes):
                q = sa.select(*cols).where(t.parses.c.content_hash.in_(batch))
                for r in c.execute(q).mappings():
                    row = r if blocks else {**r, **dict.fromkeys(heavy)}
                    out[(r["content_hash"], r["parse_version"], r["format"])] = ParseRecord.from_row(row)
        wanted = set(keys)
        return {k: v for k, v in out.items() if k in wanted}

    def parse_statuses(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
        """(content hash, parse version, format) -> the stored parse's status, for those stored,
        without reading their blocks (what is parsed already, and did it pass)."""
        keys = list(keys)
        wanted = set(keys)
        out: dict[tuple[str, str, str], str] = {}
        cols = (t.parses.c.content_hash, t.parses.c.parse_version, t.parses.c.format, t.parses.c.status)
        with self.engine.connect() as c:
            for batch in _batches(sorted({k[0] for k in keys})):
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
            for batch in _batches(sorted({k[0] for k in keys})):
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
            for batch in _batches(doc_ids):
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
            for batch in _batches(list(per_doc)):
                c.execute(t.chunks.delete().where(t.chunks.c.doc_id.in_(batch),
                                                  t.chunks.c.chunk_version == chunk_version))
            rows = [r.columns() for rs in per_doc.values() for r in rs]
            for batch in _batches(rows):
                c.execute(t.chunks.insert(), list(batch))

    def chunks_for(self, doc_ids: Sequence[str], chunk_version: str) -> list[ChunkRecord]:
        """The chunks of these documents for one chunk version, by document and ordinal."""
        out: list[ChunkRecord] = []
        with self.engine.connect() as c:
            for batch in _batches(doc_ids):
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
            for batch in _batches(chunk_ids):
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
            for batch in _batches(list(input_hashes)):
                q = sa.select(t.contexts).where(
                    t.contexts.c.input_hash.in_(batch), t.contexts.c.context_version == version
                )
                out.update({r.input_hash: r for r in records_of(ContextRecord, c.execute(q))})
        return out

    def cached_contexts(self, input_hashes: Sequence[str], version: str) -> set[str]:
        """Which of these inputs have a prefix stored for `version` (the hashes alone)."""
        have: set[str] = set()
        with self.engine.connect() as c:
            for batch in _batches(list(input_hashes)):
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
            for batch in _batches(list(text_hashes)):
                q = sa.select(t.embeddings.c.text_hash, t.embeddings.c.vector).where(
                    t.embeddings.c.text_hash.in_(batch), t.embeddings.c.embedder_id == embedder_id
                )
                out.update({r[0]: r[1] for r in c.execute(q)})
        return out

    def missing_embeddings(self, text_hashes: Sequence[str], embedder_id: str) -> set[str]:
        have: set[str] = set()
        with self.engine.connect() as c:
            for batch in _batches(list(text_hashes)):
                q = sa.select(t.embeddings.c.text_hash).where(
                    t.embeddings.c.text_hash.in_(batch), t.embeddings.c.embedder_id == embedder_id
                )
                have.update(r[0] for r in c.execute(q))
        return set(text_hashes) - have

    def put_embeddings(self, rows: list[dict[str, Any]]) -> None:
        with self.tx() as c:
            self._upsert(c, t.embeddings, rows)

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

    def set_index_pending(self, rows: list[dict[str, Any]]) -> None:
        """Rows (empty digest) for documents about to be written into a generation that does
        not hold them yet: a run that dies before `set_index_state` leaves them, and the next run
        rewrites or removes those documents (assets/index_stage.py)."""
        if rows:
            with self.tx() as c:
                self._upsert(c, t.index_state, rows)

    def clear_index_state(self, generation_id: int, doc_ids: Sequence[str]) -> None:
        with self.tx() as c:
            for batch in _batches(doc_ids):
                c.execute(t.index_state.delete().where(
                    t.index_state.c.generation_id == generation_id, t.index_state.c.doc_id.in_(batch)))

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
            for batch in _batches(doc_ids):
                q = t.dead_letters.update().where(
                    t.dead_letters.c.doc_id.in_(batch), t.dead_letters.c.resolved_at.is_(None))
                if stages is not None:
                    q = q.where(t.dead_letters.c.stage.in_(list(stages)))
                n += c.execute(q.values(resolved_at=time.time())).rowcount or 0
        return n

    def delete_dead_letters(self, ids: Sequence[int]) -> None:
        """Remove dead-letter rows by id (their item no longer exists: nothing to retry)."""
        with self.tx() as c:
            for batch in _batches(ids):
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

    def dispose(self) -> None:
        self.engine.dispose()
