"""Index contracts shared by ingestion (writer) and the query service (reader).

Both index kinds store the same chunk ids (connectors.identity.chunk_id) and the same
filterable fields, so a filter applies to both retrievers identically (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from connectors.acl import PUBLIC  # the ACL principal meaning "anyone" (semantics: connectors.acl)


@dataclass(frozen=True)
class IndexRecord:
    chunk_id: str
    doc_id: str
    source: str
    external_id: str  # document path relative to its source root
    text: str  # what the keyword index analyses: contextual prefix + display text
    vector: Sequence[float] | None = None
    acl: tuple[str, ...] = (PUBLIC,)
    payload: dict[str, Any] = field(default_factory=dict)  # heading_path, page, display_text, ...


@dataclass(frozen=True)
class Filters:
    """Applied identically by both retrievers. `principals=None` means no identity: the query
    service refuses such queries before they reach an index (fail closed); an empty tuple
    matches only public chunks."""

    principals: tuple[str, ...] | None = (PUBLIC,)
    sources: tuple[str, ...] | None = None
    docs: tuple[str, ...] | None = None  # external ids to restrict to
    exclude_docs: tuple[str, ...] = ()


class ScoredId(NamedTuple):
    chunk_id: str
    score: float


class KeywordIndex(Protocol):
    def upsert(self, records: Iterable[IndexRecord]) -> int: ...
    def delete_docs(self, doc_ids: Iterable[str]) -> None: ...
    def commit(self) -> None: ...
    def search(self, query: str, k: int, filters: Filters) -> list[ScoredId]: ...
    def chunk_ids(self) -> set[str]: ...
    def acls(self) -> dict[str, tuple[str, ...]]: ...
    def count(self) -> int: ...
    def close(self) -> None: ...


class VectorIndex(Protocol):
    def upsert(self, records: Iterable[IndexRecord]) -> int: ...
    def delete_docs(self, doc_ids: Iterable[str]) -> None: ...
    def search(self, vector: Sequence[float], k: int, filters: Filters) -> list[ScoredId]: ...
    def chunk_ids(self) -> set[str]: ...
    def acls(self) -> dict[str, tuple[str, ...]]:
        """chunk id -> the ACL it is indexed with (sorted principals), for `bindery verify`."""
        ...
    def count(self) -> int: ...
    def close(self) -> None: ...
