"""Index contracts shared by ingestion (writer) and the query service (reader).

Both index kinds store the same chunk ids (connectors.identity.chunk_id) and the same
filterable fields, so a filter applies to both retrievers identically (fail closed).

`VectorIndex` is complete: every caller (index stage, verify, query service, benchmarks) uses
only these methods, and every adapter (Qdrant Edge, Qdrant local mode, Qdrant server)
implements all of them; tests/test_vector_backends.py runs one behavioural suite over each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from connectors.acl import PUBLIC as PUBLIC  # re-exported: the principal "anyone" (semantics: connectors.acl)

# Payload fields every vector point carries and every adapter indexes for filtering.
FILTER_FIELDS = ("acl", "source", "doc_id", "external_id")


@dataclass(frozen=True)
class IndexRecord:
    chunk_id: str
    doc_id: str
    source: str
    external_id: str  # document path relative to its source root
    # what the keyword index analyses: the file name's words, then the chunk's final text
    # (contextual prefix + chunk text); built by assets.index_stage.index_text
    text: str
    vector: Sequence[float] | None = None
    acl: tuple[str, ...] = (PUBLIC,)
    payload: dict[str, Any] = field(default_factory=dict)  # heading_path, page, display_text, unit, ...
    heading: str = ""  # the chunk's heading path as words: the keyword index's `heading` field
    # On the first chunk of each unit (small-to-big): the unit's words (its chunks' texts), which
    # the keyword index's `unit` field reads; `search(..., level="unit")` ranks units by it.
    unit_text: str | None = None
    # E-mail threads: this message's Message-ID and the one it replies to (In-Reply-To, else the
    # last of References); `thread_neighbours` finds a message's parent and replies by them.
    message_id: str | None = None
    reply_to: str | None = None
    # E-mail writers: the From header (the keyword index's `author` words) and the Date as
    # `connectors.mail_attribution.sent_keys` (days); `by_author` finds a pasted reply's parent by them.
    author: str | None = None
    sent: tuple[str, ...] = ()
    thread: str | None = None  # the thread's root Message-ID (References[0]): `thread_neighbours(threads=)`

    def vector_payload(self) -> dict[str, Any]:
        """What a vector point stores: the filter fields, the chunk id and the display payload."""
        return {"chunk_id": self.chunk_id, "doc_id": self.doc_id, "source": self.source,
                "external_id": self.external_id, "acl": list(self.acl), **self.payload}


@dataclass(frozen=True)
class Filters:
    """Applied identically by both retrievers. `principals=None` means no identity: the query
    service refuses such queries before they reach an index (fail closed); an empty tuple
    matches only public chunks. An empty `sources` or `docs` tuple matches nothing."""

    principals: tuple[str, ...] | None = (PUBLIC,)
    sources: tuple[str, ...] | None = None
    docs: tuple[str, ...] | None = None  # external ids to restrict to
    exclude_docs: tuple[str, ...] = ()

    @property
    def matches_nothing(self) -> bool:
        return self.sources == () or self.docs == ()


SearchLevel = Literal["chunk", "unit"]


class ScoredId(NamedTuple):
    chunk_id: str
    score: float


class KeywordIndex(Protocol):
    def upsert(self, records: Iterable[IndexRecord]) -> int: ...
    def delete_docs(self, doc_ids: Iterable[str]) -> None: ...
    def commit(self) -> None: ...
    def search(self, query: str, k: int, filters: Filters, *, level: SearchLevel = "chunk",
               heading_weight: float = 0.0, plain_weight: float = 0.0, proximity_weight: float = 0.0,
               proximity_slop: int = 1) -> list[ScoredId]:
        """BM25 best first. ``level="chunk"``: chunk text (+ ``heading_weight`` x the heading
        field, + exact identifiers); ``level="unit"``: the unit field, one hit per unit, named
        by its first chunk (an index written before units existed returns ``[]``). Both levels
        add ``plain_weight`` x BM25 over the same text unstemmed, and ``proximity_weight`` x the
        BM25 of the query's adjacent word pairs as phrases with ``proximity_slop``."""
        ...
    def thread_neighbours(self, message_ids: Sequence[str], k: int, filters: Filters,
                          threads: Sequence[str] = ()) -> list[str]:
        """Chunk ids of the messages that have one of `message_ids` as their own id or as the id
        they reply to (parents and replies), or one of `threads` as their thread root, under the
        same filters; ``[]`` for an index written before thread fields existed."""
        ...
    def by_author(self, names: Sequence[str], address: str | None, message_ids: Sequence[str],
                  days: Sequence[str], query: str, k: int, filters: Filters) -> list[ScoredId]:
        """Chunks of e-mails an attribution line points at: whose From header holds one of
        `names` (lowercased words) or every word of `address`, or whose Message-ID is in `message_ids`; those
        sent on one of `days` (``sent`` keys) first, then by BM25 of `query`. Same filters as
        `search`; ``[]`` for an index written before author fields existed."""
        ...
    def missing_fields(self) -> list[str]:
        """Fields of today's schema this index was written without (an index from an older
        release): what a rebuild (`bindery reindex --force`) would add. ``[]`` when current."""
        ...
    def chunk_ids(self) -> set[str]: ...
    def acls(self) -> dict[str, tuple[str, ...]]: ...
    def count(self) -> int: ...
    def close(self) -> None: ...


class VectorIndex(Protocol):
    """One generation's vector collection. Writers upsert/delete and call `flush` before a
    snapshot is taken; readers search and fetch payloads."""

    def upsert(self, records: Iterable[IndexRecord]) -> int:
        """Insert or overwrite points by chunk id; returns how many were written."""
        ...

    def delete_docs(self, doc_ids: Iterable[str]) -> None:
        """Remove every point of these documents (by doc_id)."""
        ...

    def search(self, vector: Sequence[float], k: int, filters: Filters) -> list[ScoredId]:
        """Nearest chunks by cosine similarity among those the filters admit, best first."""
        ...

    def payloads(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored payloads (display text, provenance, filter fields) by chunk id; ids the index
        does not hold are absent from the result."""
        ...

    def chunk_ids(self) -> set[str]: ...
    def acls(self) -> dict[str, tuple[str, ...]]:
        """chunk id -> the ACL it is indexed with (sorted principals), for `bindery verify`."""
        ...
    def count(self) -> int: ...

    def flush(self) -> None:
        """Make every write durable and the on-disk state complete (indexes built), so a copy
        of the storage is a consistent snapshot."""
        ...

    def close(self) -> None: ...
