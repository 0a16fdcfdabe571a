"""Typed records for the document store's rows: what `DocumentStore`'s read methods return.

One frozen dataclass per table, one field per column in the table's column order (so
`to_dict()` gives the same keys, in the same order, as the row itself: the JSON output of the
CLI and the query service does not change). A misspelt column is a mypy error at the call site,
not a KeyError at run time. JSON columns keep their JSON shape (`dict[str, Any]`, `list[...]`):
they are payloads, not rows.

`from_row` builds a record from a SQLAlchemy row mapping; a column the record does not know
(a migration without a matching field) is a TypeError at once, never silently dropped.
`records_of` builds the records of a whole-table SELECT by position, for the reads that return
tens of thousands of rows (chunks, prefixes, documents, index state): by name, building them was
most of reading a large source's chunks and prefixes; the columns are checked against the
fields once per result, so the same TypeError stands.
Writes of many rows at a time (`upsert_documents`, `put_parses`, `replace_chunks`,
`set_index_state`, ...) still take mappings: the rows are built once for the INSERT and a record
in between would only add a copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

__all__ = ["BindingRecord", "ChunkRecord", "ContextRecord", "DeadLetterRecord", "DocumentRecord", "EventRecord",
           "GenerationRecord", "IndexStateRecord", "ParseRecord", "SourceRecord", "records_of"]


_NAMES: dict[type, tuple[str, ...]] = {}  # record class -> its field names, in column order


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


R = TypeVar("R", bound="_Record")


def records_of(cls: type[R], result: Any) -> Iterator[R]:
    """The records of `result`, a SQLAlchemy result of `select(table)` (not `.mappings()`), built
    by position (module docstring)."""
    columns = tuple(result.keys())
    if columns != _names(cls):
        raise TypeError(f"{cls.__name__} has the fields {_names(cls)}, the rows the columns {columns}")
    return (cls(*row) for row in result)


@dataclass(frozen=True, slots=True)
class _Record:
    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Self:
        """The record of a row (a SQLAlchemy `RowMapping`, or any mapping of column -> value)."""
        return cls(**row)

    def to_dict(self) -> dict[str, Any]:
        """Every column by name, in column order (JSON columns deep-copied)."""
        return dataclasses.asdict(self)

    def columns(self) -> dict[str, Any]:
        """Every column by name, in column order, sharing the JSON values: for a write that
        only reads them (`asdict`'s deep copy was a third of storing a sync's chunks)."""
        return {name: getattr(self, name) for name in _names(type(self))}

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (records are frozen)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class SourceRecord(_Record):
    """A configured source and what its last listings found (`sources`)."""

    name: str
    kind: str
    config: dict[str, Any]
    last_listing_at: float | None = None
    last_listing_count: int | None = None
    last_good_listing_at: float | None = None
    last_good_listing_count: int | None = None
    last_error: str | None = None
    probe: str | None = None
    parse_accepted_at: float | None = None  # parses created after this form the batch the quality check judges


@dataclass(frozen=True, slots=True)
class DocumentRecord(_Record):
    """One listed item of a source (`documents`); `deleted_at` set once it is gone."""

    doc_id: str
    source: str
    external_id: str
    uri: str
    content_hash: str | None
    fingerprint: str | None
    size: int | None
    acl: list[str]
    acl_hash: str
    metadata: dict[str, Any]
    source_modified_at: float | None
    first_seen: float
    last_seen: float
    changed_at: float
    deleted_at: float | None = None
    moved_to: str | None = None  # deleted by a move to this document, served until no index holds it


@dataclass(frozen=True, slots=True)
class ParseRecord(_Record):
    """A cached parse, keyed by (content hash, parse version, format) (`parses`)."""

    content_hash: str
    parse_version: str
    format: str
    doc_id: str | None
    status: str  # ok | failed
    title: str | None
    blocks: list[dict[str, Any]] | None
    metrics: dict[str, Any] | None
    page_metrics: list[dict[str, Any]] | None
    doc_metadata: dict[str, Any] | None
    error: str | None
    reason: str | None
    seconds: float | None
    created_at: float


@dataclass(frozen=True, slots=True)
class ChunkRecord(_Record):
    """One chunk of a document for one chunk version (`chunks`)."""

    chunk_id: str
    doc_id: str
    chunk_version: str
    content_hash: str
    parse_version: str
    ordinal: int
    kind: str
    display_text: str
    embed_text: str
    text_hash: str
    heading_path: list[str]
    page: int | None = None
    char_start: int | None = None
    char_end: int | None = None
    tokens: int | None = None
    parent_id: str | None = None
    unit_text: str | None = None


@dataclass(frozen=True, slots=True)
class ContextRecord(_Record):
    """A cached contextual prefix (`contexts`)."""

    input_hash: str
    context_version: str
    prefix: str
    content_hash: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    created_at: float


@dataclass(frozen=True, slots=True)
class GenerationRecord(_Record):
    """One build of the indexes (`generations`). `connectors.lifecycle.Generation` adds the
    parsed stage configuration; every status change goes through the lifecycle."""

    id: int
    name: str
    status: str  # building | live | previous | retired | dropped
    stage_versions: dict[str, str]
    stage_configs: dict[str, Any]
    embedder_id: str
    vector_index: str  # physical location / collection
    vector_engine: str | None  # qdrant-edge | qdrant-local | qdrant-server; None: before migration 0002
    keyword_index: str
    vector_snapshot: str | None = None
    keyword_snapshot: str | None = None
    published_at: float | None = None
    counts: dict[str, Any] = dataclasses.field(default_factory=dict)
    eval_report: dict[str, Any] | None = None
    created_at: float = 0.0
    promoted_at: float | None = None
    retired_at: float | None = None
    forced_by: str | None = None
    force_reason: str | None = None

    @classmethod
    def unrecorded(cls, id: int, name: str, **fields: Any) -> GenerationRecord:
        """A generation the store does not hold (yet), with only what is known of it: `bindery plan`'s
        description of the candidate it would create, a benchmark's or a test's own index. Nothing
        recorded means no vector engine or location: it is opened with the configured engine."""
        known: dict[str, Any] = {"status": "building", "stage_versions": {}, "stage_configs": {}, "embedder_id": "",
                                 "vector_index": "", "vector_engine": None, "keyword_index": ""}
        return cls(id=id, name=name, **{**known, **fields})


@dataclass(frozen=True, slots=True)
class BindingRecord(_Record):
    """Which generation an alias (`live`) serves, and the previous one kept for rollback (`bindings`)."""

    alias: str
    generation_id: int
    previous_generation_id: int | None
    flipped_at: float
    flipped_by: str | None
    version: int  # bumped on every flip and publish


@dataclass(frozen=True, slots=True)
class IndexStateRecord(_Record):
    """What one generation's indexes hold for one document (`index_state`); an empty digest
    marks a document recorded as pending before it is written, or, with the `acl_hash`
    `WITHHELD`, one taken out with its source (`assets.index_stage.unindex_source`)."""

    #: the `acl_hash` of a row whose document left the indexes with its source (no longer
    #: configured): the generation held it, so the source put back writes it there again
    WITHHELD: ClassVar[str] = "withheld"

    generation_id: int
    doc_id: str
    source: str
    digest: str
    chunks: int
    indexed_at: float
    acl_hash: str | None = None

    @property
    def withheld(self) -> bool:
        """Taken out with its source: nothing of it is indexed, and it is written back when its
        source is configured again (a pending row, as any: rewritten where complete records
        exist for the generation's stage versions, else dropped)."""
        return not self.digest and self.acl_hash == self.WITHHELD

    def behind(self, doc: DocumentRecord | None) -> bool:
        """Whether `doc`'s last listed change (content, ACL, a move, its deletion) is newer than
        what this row says the generation holds: work a sync stopped before its index step left,
        or a document never rewritten there (a dead letter's kept version)."""
        return (not self.digest or doc is None or doc.deleted_at is not None
                or doc.changed_at > self.indexed_at)


@dataclass(frozen=True, slots=True)
class DeadLetterRecord(_Record):
    """A failure of one document at one stage (`dead_letters`)."""

    id: int
    doc_id: str
    source: str
    external_id: str
    stage: str
    reason: str
    error: str
    trace: str | None
    content_hash: str | None
    at: float
    resolved_at: float | None = None


@dataclass(frozen=True, slots=True)
class EventRecord(_Record):
    """An operator-visible event: aborted delete sweeps, promotions, rollbacks, gc (`events`)."""

    id: int
    kind: str
    source: str | None
    message: str
    details: dict[str, Any]
    at: float
