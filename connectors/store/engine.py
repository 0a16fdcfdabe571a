"""The document store's engine: connections, transactions, upserts and the schema's revision.

Writes are idempotent: upserts on natural keys, per-document delete-then-insert for chunks.
SQLite runs in WAL mode with a busy timeout so the query service can read while a sync writes.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

_MIGRATIONS = Path(__file__).parent / "migrations"
_CHUNK = 500  # rows per IN (...) clause; keeps SQLite under its variable limit


def batches(items: Sequence[Any], n: int = _CHUNK) -> Iterator[Sequence[Any]]:
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
    elif re.search(r"permission denied for (database|schema)", why):
        # PostgreSQL 15 and later let only the database's owner create tables in `public`
        why += (" (Bindery creates its tables and the Dagster schema itself: make the user it connects as"
                " the database's owner, `createdb -O USER NAME` or ALTER DATABASE NAME OWNER TO USER, or"
                " GRANT it CREATE on the database and on schema public)")
    return why




class StoreBase:
    """What every part of `DocumentStore` writes through: its engine, write transactions and upserts."""

    engine: Engine

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
        for batch in batches(rows, 200):
            conn.execute(stmt, list(batch))

