"""Document-store tables (SQLAlchemy Core). The store is the source of truth; every index is a
materialised view of it and can be rebuilt from these rows without touching the sources.

Caches are keyed by *content*, not by document, so a moved file or a re-run finds its work
already done: parses by (content hash, parse version), contexts by (input hash, context
version), embeddings by (embed-text hash, embedder id). Chunks are keyed by the
deterministic chunk id (doc, chunk version, ordinal), the same id every index uses.

Schema changes go through Alembic migrations (connectors/store/migrations), never create_all
on a live database.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

_ts = sa.Float  # unix seconds; portable across SQLite and PostgreSQL without tz surprises

sources = sa.Table(
    "sources",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("last_listing_at", _ts),
    sa.Column("last_listing_count", sa.Integer),
    sa.Column("last_good_listing_at", _ts),
    sa.Column("last_good_listing_count", sa.Integer),
    sa.Column("last_error", sa.Text),
    sa.Column("probe", sa.String(64)),
    # parses created after this form the batch the parse-quality check judges (moves on a pass)
    sa.Column("parse_accepted_at", _ts),
)

documents = sa.Table(
    "documents",
    metadata,
    sa.Column("doc_id", sa.String(32), primary_key=True),
    sa.Column("source", sa.String(64), nullable=False, index=True),
    sa.Column("external_id", sa.String(1024), nullable=False),
    sa.Column("uri", sa.Text, nullable=False),
    sa.Column("content_hash", sa.String(64)),
    sa.Column("fingerprint", sa.String(128)),
    sa.Column("size", sa.BigInteger),
    sa.Column("acl", sa.JSON, nullable=False),
    sa.Column("acl_hash", sa.String(16), nullable=False),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("source_modified_at", _ts),
    sa.Column("first_seen", _ts, nullable=False),
    sa.Column("last_seen", _ts, nullable=False),
    sa.Column("changed_at", _ts, nullable=False),  # when content/ACL last changed (lag = indexed - this)
    sa.Column("deleted_at", _ts, index=True),
    # set with deleted_at when the listing found the bytes at a new path: that path's document,
    # whose access (with this one's) serves it until no index holds it (`DocumentStore.mark_moved`)
    sa.Column("moved_to", sa.String(32), index=True),
    sa.UniqueConstraint("source", "external_id", name="uq_documents_source_external"),
)

parses = sa.Table(
    "parses",
    metadata,
    sa.Column("content_hash", sa.String(64), primary_key=True),
    sa.Column("parse_version", sa.String(32), primary_key=True),
    sa.Column("format", sa.String(16), primary_key=True),  # from the file name: .md and .txt differ
    sa.Column("doc_id", sa.String(32)),  # the document it was first parsed for (informational)
    sa.Column("status", sa.String(16), nullable=False),  # ok | failed
    sa.Column("title", sa.Text),
    sa.Column("blocks", sa.JSON),
    sa.Column("metrics", sa.JSON),
    sa.Column("page_metrics", sa.JSON),
    sa.Column("doc_metadata", sa.JSON),
    sa.Column("error", sa.Text),
    sa.Column("reason", sa.String(32)),
    sa.Column("seconds", sa.Float),
    sa.Column("created_at", _ts, nullable=False),
)

chunks = sa.Table(
    "chunks",
    metadata,
    sa.Column("chunk_id", sa.String(32), primary_key=True),
    sa.Column("doc_id", sa.String(32), nullable=False),
    sa.Column("chunk_version", sa.String(32), nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),  # the parse it was cut from
    sa.Column("parse_version", sa.String(32), nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),
    sa.Column("display_text", sa.Text, nullable=False),
    sa.Column("embed_text", sa.Text, nullable=False),
    sa.Column("text_hash", sa.String(32), nullable=False),
    sa.Column("heading_path", sa.JSON, nullable=False),
    sa.Column("page", sa.Integer),
    sa.Column("char_start", sa.Integer),
    sa.Column("char_end", sa.Integer),
    sa.Column("tokens", sa.Integer),
    sa.Column("parent_id", sa.String(32)),  # the chunk id of the first chunk of this chunk's unit
    sa.Column("unit_text", sa.Text),  # on a unit's first chunk, when the unit has several (0004)
    sa.Index("ix_chunks_doc_version", "doc_id", "chunk_version"),
)

contexts = sa.Table(
    "contexts",
    metadata,
    # input hash = hash(document content hash, chunk text): the same chunk in another document
    # gets another prefix, the same chunk in a moved document keeps its prefix.
    sa.Column("input_hash", sa.String(32), primary_key=True),
    sa.Column("context_version", sa.String(32), primary_key=True),
    sa.Column("prefix", sa.Text, nullable=False),
    sa.Column("content_hash", sa.String(64), index=True),  # source content, for cache GC
    sa.Column("input_tokens", sa.Integer, nullable=False, default=0),
    sa.Column("output_tokens", sa.Integer, nullable=False, default=0),
    sa.Column("cache_read_tokens", sa.Integer, nullable=False, default=0),
    sa.Column("cache_creation_tokens", sa.Integer, nullable=False, default=0),
    sa.Column("created_at", _ts, nullable=False),
)

embeddings = sa.Table(
    "embeddings",
    metadata,
    sa.Column("text_hash", sa.String(32), primary_key=True),
    sa.Column("embedder_id", sa.String(255), primary_key=True),  # 0005: was 64
    sa.Column("dim", sa.Integer, nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False),  # float32 little-endian
    # The content it was first computed for; when no live document has that content any more
    # the row is garbage (a cache miss later only costs a recompute).
    sa.Column("content_hash", sa.String(64), index=True),
    sa.Column("created_at", _ts, nullable=False),
)

generations = sa.Table(
    "generations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("status", sa.String(16), nullable=False),  # building|live|previous|retired|dropped
    sa.Column("stage_versions", sa.JSON, nullable=False),
    sa.Column("stage_configs", sa.JSON, nullable=False),
    sa.Column("embedder_id", sa.String(255), nullable=False),  # 0005: was 64
    sa.Column("vector_index", sa.Text, nullable=False),  # physical location / collection
    sa.Column("vector_engine", sa.String(32)),  # qdrant-edge|qdrant-local|qdrant-server; NULL: before 0002
    sa.Column("keyword_index", sa.Text, nullable=False),
    sa.Column("vector_snapshot", sa.Text),  # published read-only copy the query service opens
    sa.Column("keyword_snapshot", sa.Text),
    sa.Column("published_at", _ts),
    sa.Column("counts", sa.JSON, nullable=False),
    sa.Column("eval_report", sa.JSON),
    sa.Column("created_at", _ts, nullable=False),
    sa.Column("promoted_at", _ts),
    sa.Column("retired_at", _ts),
    sa.Column("forced_by", sa.String(128)),
    sa.Column("force_reason", sa.Text),
)

bindings = sa.Table(
    "bindings",
    metadata,
    sa.Column("alias", sa.String(32), primary_key=True),
    sa.Column("generation_id", sa.Integer, nullable=False),
    sa.Column("previous_generation_id", sa.Integer),
    sa.Column("flipped_at", _ts, nullable=False),
    sa.Column("flipped_by", sa.String(128)),
    sa.Column("version", sa.Integer, nullable=False),  # bumped on every flip and publish
)

index_state = sa.Table(
    "index_state",
    metadata,
    # What each generation's indexes hold per document: the digest of the records written.
    # Equal digest -> nothing to write (idempotent syncs); a row without a live document ->
    # the document is deleted from that generation's indexes.
    sa.Column("generation_id", sa.Integer, primary_key=True),
    sa.Column("doc_id", sa.String(32), primary_key=True),
    sa.Column("source", sa.String(64), nullable=False),
    sa.Column("digest", sa.String(32), nullable=False),
    sa.Column("chunks", sa.Integer, nullable=False),
    sa.Column("indexed_at", _ts, nullable=False),
    # the document's ACL hash when written here: an ACL change that cannot be rewritten into
    # this generation removes the document from it (never left under its old ACL)
    sa.Column("acl_hash", sa.String(16)),
)

dead_letters = sa.Table(
    "dead_letters",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("doc_id", sa.String(32), nullable=False, index=True),
    sa.Column("source", sa.String(64), nullable=False),
    sa.Column("external_id", sa.String(1024), nullable=False),
    sa.Column("stage", sa.String(16), nullable=False),
    sa.Column("reason", sa.String(32), nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("trace", sa.Text),
    sa.Column("content_hash", sa.String(64)),
    sa.Column("at", _ts, nullable=False),
    sa.Column("resolved_at", _ts),
)

store_owner = sa.Table(
    "store_owner",
    metadata,
    # One row: the data_dir whose embedded index files this store's generations point into
    # (`connectors.store.ownership`). Another data_dir on the same database is refused.
    sa.Column("id", sa.Integer, primary_key=True),  # always 1
    sa.Column("store_id", sa.String(64), nullable=False),
    sa.Column("data_dir", sa.Text, nullable=False),  # where it was claimed from, for the message
    sa.Column("claimed_at", _ts, nullable=False),
)

events = sa.Table(
    "events",
    metadata,
    # Operator-visible events: aborted delete sweeps, forced promotions, rollbacks, GC.
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("source", sa.String(64)),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("at", _ts, nullable=False),
)
