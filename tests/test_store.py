"""The document store on both engines: migrations, idempotent upserts, the binding flip,
dead letters. Every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from connectors.errors import BindingError
from connectors.store import ChunkRecord, DocumentStore
from connectors.store import schema as t
from tests.sync_helpers import generation_row


def _gen(store: DocumentStore, name: str) -> int:
    return store.create_generation(
        name=name, status="building", stage_versions={"chunk": "c1"}, stage_configs={},
        embedder_id="e1", vector_index=name, keyword_index=name, counts={}, created_at=time.time())


def _doc(doc_id: str, **kw: Any) -> dict[str, Any]:
    now = time.time()
    row = {"doc_id": doc_id, "source": "s", "external_id": f"{doc_id}.md", "uri": f"file:///{doc_id}.md",
           "content_hash": "h-" + doc_id, "fingerprint": "f", "size": 1, "acl": ["*"], "acl_hash": "a",
           "metadata": {}, "source_modified_at": now, "first_seen": now, "last_seen": now, "changed_at": now,
           "deleted_at": None}
    row.update(kw)
    return row


def test_migrations_create_every_table_and_are_idempotent(db_url: str) -> None:
    store = DocumentStore(db_url)
    store.migrate()  # a second upgrade is a no-op
    names = set(sa.inspect(store.engine).get_table_names())
    assert {tb.name for tb in t.metadata.sorted_tables} <= names
    assert "alembic_version" in names


def test_preview_reads_without_writing_and_migrates_only_a_store_that_is_behind(db_url: str) -> None:
    """`bindery plan`'s view of the store: an empty database gets no schema (an in-memory
    store of the current schema stands in), a current one is read as it is, an older one is
    brought to head first (today's reads need today's columns)."""
    from alembic import command
    from alembic.config import Config

    from connectors.store.engine import _MIGRATIONS, head_revision

    empty = DocumentStore.preview(db_url)
    assert empty.url == "sqlite://" and empty.documents("s") == []
    raw = DocumentStore(db_url, migrate=False)
    assert not raw.initialised() and raw.schema_revision() is None, "preview created the schema"
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with raw.tx() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
    assert raw.schema_revision() == "0003"
    behind = DocumentStore.preview(db_url)
    assert behind.url == db_url and behind.schema_revision() == head_revision()
    behind.upsert_documents([_doc("d1")])
    assert [d.doc_id for d in DocumentStore.preview(db_url).documents("s")] == ["d1"]


def test_the_written_down_head_revision_is_alembics_head() -> None:
    """A new migration without HEAD_REVISION moved on would make every plan migrate a store it
    only reads (or read today's columns from yesterday's schema): the two must agree."""
    from connectors.store.store import HEAD_REVISION, head_revision

    assert HEAD_REVISION == head_revision()


def test_preview_of_a_missing_sqlite_file_creates_no_file(tmp_path: Any) -> None:
    path = tmp_path / "nowhere" / "bindery.db"
    assert DocumentStore.preview(f"sqlite:///{path}").documents("s") == []
    assert not path.parent.exists()


def test_document_upsert_is_idempotent(db_url: str) -> None:
    store = DocumentStore(db_url)
    store.upsert_documents([_doc("a"), _doc("b")])
    store.upsert_documents([_doc("a", content_hash="h2"), _doc("b")])
    docs = {d.doc_id: d for d in store.documents("s")}
    assert len(docs) == 2 and docs["a"].content_hash == "h2"


def test_replace_chunks_never_duplicates(db_url: str) -> None:
    store = DocumentStore(db_url)
    row = ChunkRecord(chunk_id="c0", doc_id="a", chunk_version="v", content_hash="h", parse_version="p",
                      ordinal=0, kind="text", display_text="x", embed_text="x", text_hash="t",
                      heading_path=[], page=None, char_start=0, char_end=1, tokens=1, parent_id=None)
    for _ in range(3):
        store.replace_chunks("v", {"a": [row, row.replace(chunk_id="c1", ordinal=1)]})
    assert [c.chunk_id for c in store.chunks_for(["a"], "v")] == ["c0", "c1"]
    store.replace_chunks("v", {"a": [row]})
    assert [c.chunk_id for c in store.chunks_for(["a"], "v")] == ["c0"]


def test_flip_keeps_previous_and_rollback_restores(db_url: str) -> None:
    store = DocumentStore(db_url)
    g1, g2, g3 = _gen(store, "g1"), _gen(store, "g2"), _gen(store, "g3")
    store.flip_binding(g1)
    b = store.flip_binding(g2)
    assert (b.generation_id, b.previous_generation_id) == (g2, g1)
    assert generation_row(store, g1).status == "previous"
    with pytest.raises(BindingError):
        store.flip_binding(g2)
    b = store.flip_binding(g3)
    assert generation_row(store, g1).status == "retired"  # only one previous is kept
    b = store.flip_binding(g2, previous_id=g3)  # rollback
    assert (b.generation_id, b.previous_generation_id) == (g2, g3)
    assert generation_row(store, g2).status == "live"
    assert generation_row(store, g3).status == "previous"


def test_a_flip_decided_on_a_binding_that_moved_is_refused_and_never_leaves_two_live(db_url: str) -> None:
    """A rollback reads (live, previous), a promotion flips meanwhile, then the rollback flips:
    it left the promoted generation marked live beside the restored one, out of status and gc
    for good (a concurrency pass on PostgreSQL). Now the stale flip is refused, and a flip never
    leaves a generation the binding no longer names marked live."""
    store = DocumentStore(db_url)
    g1, g2, g3 = _gen(store, "g1"), _gen(store, "g2"), _gen(store, "g3")
    store.flip_binding(g1)
    store.flip_binding(g2)
    read = store.get_binding()
    assert read is not None and (read.generation_id, read.previous_generation_id) == (g2, g1)
    store.flip_binding(g3, expect_live=g2)  # the promotion, judged against g2: lands first
    with pytest.raises(BindingError, match="moved while this ran"):
        store.flip_binding(g1, previous_id=g2, expect_live=read.generation_id,
                           expect_previous=read.previous_generation_id)
    b = store.get_binding()
    assert b is not None and (b.generation_id, b.previous_generation_id) == (g3, g2)
    assert [g.id for g in store.generations(["live"])] == [g3]
    # and a flip that names another previous than the live it replaces retires that live one
    store.flip_binding(g1, previous_id=g2)
    assert [g.id for g in store.generations(["live"])] == [g1] and generation_row(store, g3).status == "retired"


def test_a_dropped_generation_is_never_bound_and_a_bound_one_never_dropped(db_url: str) -> None:
    """`bindery discard` and `bindery promote` at the same moment: whichever writes first wins,
    the other refuses, and the binding never points at a generation whose files are going."""
    store = DocumentStore(db_url)
    g1, g2, g3 = _gen(store, "g1"), _gen(store, "g2"), _gen(store, "g3")
    store.flip_binding(g1)
    assert store.drop_generation_row(g2, statuses=("building", "retired"))
    with pytest.raises(BindingError, match="was dropped"):
        store.flip_binding(g2)
    b = store.get_binding()
    assert b is not None and (b.generation_id, b.previous_generation_id) == (g1, None)  # rolled back whole
    assert generation_row(store, g1).status == "live"
    store.flip_binding(g3)
    assert not store.drop_generation_row(g3, statuses=("building", "retired"))
    assert generation_row(store, g3).status == "live"


def test_long_embedder_ids_and_operator_names(db_url: str) -> None:
    """A local fine-tuned model in a folder with a long name made an embedder id over 64
    characters: PostgreSQL refused it on every sync (migration 0005 widens the columns; SQLite
    never checked). A `--by` longer than the store keeps is refused before anything is judged
    (PostgreSQL refused it at the flip, after the gate had passed)."""
    from connectors.errors import UsageError
    from connectors.lifecycle import operator_name

    long_id = "all-MiniLM-L6-v2-finetuned-internal-support-tickets-2026-q4-extra-words-0123abcd"
    assert len(long_id) > 64
    store = DocumentStore(db_url)
    gid = store.create_generation(name="g1", status="building", stage_versions={}, stage_configs={},
                                  embedder_id=long_id, vector_index="g1", keyword_index="g1", counts={})
    store.put_embeddings([{"text_hash": "t1", "embedder_id": long_id, "dim": 1, "vector": b"\0\0\0\0",
                           "content_hash": "h", "created_at": time.time()}])
    assert generation_row(store, gid).embedder_id == long_id
    assert store.missing_embeddings(["t1", "t2"], long_id) == {"t2"}
    assert operator_name("x" * 128) == "x" * 128
    with pytest.raises(UsageError, match="--by: at most 128 characters, got 129"):
        operator_name("x" * 129)


def test_concurrent_flips_leave_one_consistent_binding(db_url: str) -> None:
    store = DocumentStore(db_url)
    gens = [_gen(store, f"g{i}") for i in range(6)]
    store.flip_binding(gens[0])
    errors: list[Exception] = []

    def flip(g: int) -> None:
        try:
            store.flip_binding(g)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=flip, args=(g,)) for g in gens[1:]]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    b = store.get_binding()
    assert b is not None and b.version == 6
    live = [g for g in store.generations() if g.status == "live"]
    assert [g.id for g in live] == [b.generation_id]


def test_dead_letters_replace_and_resolve(db_url: str) -> None:
    store = DocumentStore(db_url)
    for _ in range(2):
        store.add_dead_letter(doc_id="a", source="s", external_id="a.pdf", stage="parse", reason="corrupt",
                              error="truncated")
    assert len(store.dead_letters()) == 1
    assert store.resolve_dead_letters(["a"], stages=("parse",)) == 1
    assert store.dead_letters() == []


def _embedding(text_hash: str, content_hash: str) -> dict[str, Any]:
    """An embedding row of a one-dimensional vector, made now."""
    return {"text_hash": text_hash, "embedder_id": "e", "dim": 1, "vector": b"\0\0\0\0",
            "content_hash": content_hash, "created_at": time.time()}


def test_gc_drops_caches_of_deleted_content(db_url: str) -> None:
    store = DocumentStore(db_url)
    store.upsert_documents([_doc("a", content_hash="live"), _doc("b", content_hash="gone")])
    for h in ("live", "gone"):
        store.put_parses([{"content_hash": h, "parse_version": "p", "format": "md", "status": "ok",
                           "created_at": time.time()}])
        store.put_embeddings([_embedding("t" + h, h)])
    store.mark_deleted(["b"], time.time())
    assert store.gc_orphan_caches() == {"parses": 1, "contexts": 0, "embeddings": 1}
    assert set(store.get_embeddings(["tlive", "tgone"], "e")) == {"tlive"}


def test_preview_of_an_unreachable_database_is_a_store_error() -> None:
    from connectors.errors import StoreError

    with pytest.raises(StoreError, match="cannot open document store"):
        DocumentStore.preview("postgresql+psycopg://nobody@127.0.0.1:1/nothere")


@pytest.mark.postgres
def test_a_database_that_does_not_exist_says_to_create_it(pg_url: str) -> None:
    """Bindery creates its tables, not the PostgreSQL database: a new user's first mistake, told
    by the store and by the Dagster instance alike (two wordings of one failure: a new-user pass)."""
    from connectors.errors import StoreError
    from orchestration.instance import _ensure_schema

    url = pg_url.split("?", 1)[0].rsplit("/", 1)[0] + "/bindery_no_such_database"
    with pytest.raises(StoreError, match=r"cannot open document store .*does not exist \(create it first"):
        DocumentStore(url)
    with pytest.raises(StoreError, match=r"cannot open the Dagster instance's .*\(create it first"):
        _ensure_schema(url, "dagster")


@pytest.mark.postgres
def test_a_user_that_may_not_create_tables_is_told_what_to_grant(pg_url: str) -> None:
    """An operator pass: a database made by `createdb` as the superuser and used as an app role
    (PostgreSQL 15 lets only the owner create in `public`) was `internal error: ProgrammingError`
    from every command reaching the Dagster instance, and a bare "permission denied" from the store."""
    from connectors.errors import StoreError
    from orchestration.instance import _ensure_schema

    role = f"bindery_noperm_{uuid.uuid4().hex[:8]}"
    schema = str(sa.engine.make_url(pg_url).query["options"]).rpartition("search_path=")[2]  # the fixture's own schema
    admin = sa.create_engine(pg_url)
    with admin.begin() as c:
        c.execute(sa.text(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'"))
        c.execute(sa.text(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}'))
    user_url = sa.engine.make_url(pg_url).set(username=role, password="pw").render_as_string(hide_password=False)
    try:
        with pytest.raises(StoreError, match=r"cannot open the Dagster instance's .*permission denied.*createdb -O"):
            _ensure_schema(user_url, "dagster")
        with pytest.raises(StoreError, match=r"cannot open document store .*permission denied.*createdb -O"):
            DocumentStore(user_url)
    finally:
        with admin.begin() as c:
            c.execute(sa.text(f"DROP OWNED BY {role}"))
            c.execute(sa.text(f"DROP ROLE {role}"))
        admin.dispose()


def test_gc_keeps_an_embedding_a_current_text_still_uses(db_url: str) -> None:
    """An embedding row names the content it was first computed for; once that content is gone
    (the document was edited) the row is kept while a current text uses it, re-pointed at that
    text's content, and dropped like any other once nothing does."""
    store = DocumentStore(db_url)
    store.upsert_documents([_doc("a", content_hash="new")])
    store.put_embeddings([_embedding(h, "old") for h in ("shared", "edited-away")])
    assert store.gc_orphan_caches({"shared": "new"}) == {"parses": 0, "contexts": 0, "embeddings": 1}
    assert set(store.get_embeddings(["shared", "edited-away"], "e")) == {"shared"}
    store.mark_deleted(["a"], time.time())
    assert store.gc_orphan_caches({}) == {"parses": 0, "contexts": 0, "embeddings": 1}


def test_gc_drops_embeddings_no_current_text_uses(db_url: str) -> None:
    """Found by an audit: after two chunk-size changes and the oldest generation dropped, the
    embeddings of its chunks stayed (their contents are live documents), and gc said "no orphaned
    cache rows". A text no retained generation embeds is garbage whatever its content."""
    store = DocumentStore(db_url)
    store.upsert_documents([_doc("a", content_hash="live")])
    store.put_embeddings([_embedding(h, "live") for h in ("current", "old-cut")])
    assert store.gc_orphan_caches({"current": "live"}) == {"parses": 0, "contexts": 0, "embeddings": 1}
    assert set(store.get_embeddings(["current", "old-cut"], "e")) == {"current"}
    assert store.gc_orphan_caches({"current": "live"})["embeddings"] == 0  # and nothing more the second time
    # one a run wrote while gc read what is in use stays: that run's index stage reads it next
    store.put_embeddings([_embedding("just-written", "live")])
    assert store.gc_orphan_caches({"current": "live"}, created_before=time.time() - 60)["embeddings"] == 0


def test_held_doc_ids_leaves_out_only_withheld_rows(db_url: str) -> None:
    """`unindex_source` asks which documents of a removed source may still be indexed on every
    index run until gc: in SQL, leaving out the withheld rows (nothing of them is indexed)."""
    from connectors.store import IndexStateRecord

    store = DocumentStore(db_url)
    g = _gen(store, "g1")
    rows = {"held": ("d1", "a"), "pending": ("", "a"), "legacy": ("d2", None), "crashed": ("", None),
            "withheld": ("", IndexStateRecord.WITHHELD)}
    store.set_index_state([{"generation_id": g, "doc_id": did, "source": "s", "digest": digest, "chunks": 1,
                            "indexed_at": 0.0, "acl_hash": acl} for did, (digest, acl) in rows.items()])
    assert sorted(store.held_doc_ids(g, "s")) == ["crashed", "held", "legacy", "pending"]
    assert store.index_state(g)["withheld"].withheld and not store.index_state(g)["crashed"].withheld
    assert store.held_doc_ids(g, "other") == []


def test_gc_keeps_the_caches_of_a_kept_version(db_url: str) -> None:
    """A document whose new content failed to parse keeps chunks cut from its older content (a
    kept version): that content's parse and embeddings are what a reindex rebuilds it from."""
    store = DocumentStore(db_url)
    store.upsert_documents([_doc("a", content_hash="new")])
    store.replace_chunks("c1", {"a": [ChunkRecord(
        chunk_id="a:0", doc_id="a", chunk_version="c1", content_hash="old", parse_version="p", ordinal=0,
        kind="text", display_text="x", embed_text="x", text_hash="t", heading_path=[], page=None,
        char_start=0, char_end=1)]})
    for h in ("old", "older"):
        store.put_parses([{"content_hash": h, "parse_version": "p", "format": "md", "status": "ok",
                           "created_at": time.time()}])
        store.put_embeddings([_embedding("t" + h, h)])
    assert store.gc_orphan_caches() == {"parses": 1, "contexts": 0, "embeddings": 1}  # "older" only
    assert set(store.get_embeddings(["told", "tolder"], "e")) == {"told"}
    store.mark_deleted(["a"], time.time())
    assert store.gc_orphan_caches() == {"parses": 1, "contexts": 0, "embeddings": 1}  # gone with it


def test_a_new_sqlite_file_and_the_folders_made_for_it_are_owner_only(tmp_path: Any) -> None:
    """It holds every source's text: outside data_dir (itself 0700) it came out 0644 under
    0755 folders (a robustness pass). What exists already keeps its mode."""
    import stat

    path = tmp_path / "made" / "deeper" / "x.db"
    DocumentStore(f"sqlite:///{path}").dispose()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == stat.S_IMODE((tmp_path / "made").stat().st_mode) == 0o700
    assert DocumentStore(f"sqlite:///{path}").counts()["documents"] == 0  # the empty file is a database


def test_in_any_index_finds_held_pending_and_withheld_rows_by_key_or_by_scan(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the delete guard weighs (`assets.listing.indexed_to_delete`): rows of any state in a
    generation not dropped, the same whether looked up by key (a few ids) or by a scan (many)."""
    import connectors.store.bindings as store_module

    store = DocumentStore(db_url)
    try:
        gens = [store.create_generation(name=f"g{i}", stage_versions={}, stage_configs={}, embedder_id="e",
                                        vector_index="v", keyword_index="k") for i in range(3)]
        store.update_generation(gens[2], status="dropped")
        now = time.time()

        def rows(gen: int, ids: range, digest: str, acl_hash: str | None = None) -> list[dict[str, Any]]:
            return [{"generation_id": gen, "doc_id": f"d{i}", "source": "docs", "digest": digest, "chunks": 1,
                     "indexed_at": now, "acl_hash": acl_hash} for i in ids]

        store.set_index_state(rows(gens[0], range(0, 10), "held") + rows(gens[0], range(10, 12), ""))  # pending
        store.set_index_state(rows(gens[1], range(12, 14), "held", "withheld") + rows(gens[2], range(20, 25), "x"))
        store.set_index_state([{**r, "source": "other"} for r in rows(gens[0], range(30, 32), "held")])
        asked = {f"d{i}" for i in range(40)}
        expected = {f"d{i}" for i in range(14)}  # not the dropped generation's, not another source's
        assert store.in_any_index("docs", asked) == expected
        # of the generations that can be served only (a moved file's old path, kept while one
        # holds it: a retired generation, which deletes no longer reach, kept it a week)
        assert store.in_any_index("docs", asked, {gens[1]}) == {"d12", "d13"}
        monkeypatch.setattr(store_module, "_LOOKUP_BY_KEY", 0)  # many ids: read by scanning each generation
        assert store.in_any_index("docs", asked) == expected
        assert store.in_any_index("docs", asked, {gens[1]}) == {"d12", "d13"}
    finally:
        store.dispose()


def test_confirm_indexed_moves_only_rows_that_still_hold_the_digest(db_url: str) -> None:
    """`index_stage._confirm` brings a row's time up when the generation already holds a
    document's current digest; a row another writer changed meanwhile keeps its state, and a row
    cleared meanwhile (its generation dropped) is not made again (a review pass)."""
    store = DocumentStore(db_url)
    row = {"generation_id": 1, "doc_id": "d1", "source": "s", "digest": "a", "chunks": 1, "indexed_at": 1.0,
           "acl_hash": "h"}
    store.set_index_state([row, {**row, "doc_id": "d2", "digest": "b"}])
    assert store.confirm_indexed(1, {"d1": "a", "d2": "stale", "d3": "c"}, 5.0) == 1
    state = store.index_state(1)
    assert state["d1"].indexed_at == 5.0 and state["d1"].acl_hash == "h"
    assert state["d2"].indexed_at == 1.0 and "d3" not in state
    store.dispose()
