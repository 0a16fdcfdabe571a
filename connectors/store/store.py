"""`DocumentStore`: typed access to the document store over SQLAlchemy (SQLite or PostgreSQL).

Writes are idempotent: upserts on natural keys, per-document delete-then-insert for chunks.
SQLite runs in WAL mode with a busy timeout so the query service can read while a sync writes.
The rows are read and written by concept, one class each: documents (`documents`), caches
(`caches`), generations and the binding (`bindings`), dead letters and events (`journal`);
connections, transactions and upserts live in `engine`.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from connectors.errors import StoreError
from connectors.store import schema as t
from connectors.store.bindings import GenerationRows
from connectors.store.caches import CacheRows
from connectors.store.documents import DocumentRows
from connectors.store.engine import (
    _MIGRATIONS,
    HEAD_REVISION,
    _owner_only_file,
    _sqlite_file,
    head_revision,
    make_engine,
    open_error_reason,
)
from connectors.store.journal import JournalRows

__all__ = ["HEAD_REVISION", "DocumentStore", "head_revision", "make_engine", "open_error_reason"]


class DocumentStore(DocumentRows, CacheRows, GenerationRows, JournalRows):
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


    def dispose(self) -> None:
        self.engine.dispose()
