"""Vector index on Qdrant through qdrant-client: local mode (embedded, on disk; selectable for one
release after Qdrant Edge became the embedded default, see qdrant_edge_index) or a server in
production.

Local mode admits ONE client per storage path in one process. Ingestion therefore owns the
generation's working path, and readers (the query service, the CLI) open a published,
immutable snapshot copy of it (see connectors.generations.publish). Payload indexes are
ignored in local mode, so filters are full scans there; a server uses the keyword payload
indexes created here.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, cast

from pydantic import TypeAdapter
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from connectors.errors import IndexError_, QueryError, without_secrets
from connectors.identity import point_id
from connectors.indexes.base import FILTER_FIELDS, PUBLIC, Filters, IndexRecord, ScoredId


def quiet_version_probe() -> None:
    """A server that is down: the first request says so in one line (`_Reporting`). The client's
    version probe, on a thread of its own, would print a stray UserWarning with a source line
    before it; a version mismatch still warns. (Process-wide: the probe's thread is not ours.)"""
    warnings.filterwarnings("ignore", message="Failed to obtain server version", category=UserWarning)


quiet_version_probe()

COLLECTION = "chunks"


class _Reporting:
    """A server's client whose transport failures say which server and why, in one line.

    qdrant-client lets them out as `ResponseHandlingException: [Errno 111] Connection refused`,
    naming neither the engine nor its address (Elasticsearch's adapter says "cannot reach
    Elasticsearch at URL"); every call goes through here, so no method can forget."""

    def __init__(self, client: QdrantClient, url: str) -> None:
        self._client = client
        self._url = url

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except ResponseHandlingException as e:  # connection refused, timeouts, DNS
                cause = e.source if getattr(e, "source", None) is not None else e
                raise IndexError_(without_secrets(f"cannot reach Qdrant at {self._url}: {cause}")) from e
            except UnexpectedResponse as e:
                raise IndexError_(without_secrets(f"Qdrant at {self._url} answered {name} with HTTP "
                                                  f"{e.status_code} {e.reason_phrase}".rstrip())) from e

        return call


class QdrantIndex:
    def __init__(self, *, path: str | None = None, url: str | None = None, collection: str = COLLECTION,
                 dim: int | None = None, timeout: int = 30, api_key: str | None = None,
                 on_disk: bool = False, quantization: dict[str, Any] | None = None):
        """`path`: local mode. `url` (+ `api_key`): a server; `on_disk` and `quantization`
        (Qdrant's own `quantization_config`) apply when this creates the collection."""
        try:
            self.client = cast(QdrantClient, QdrantClient(path=path) if path else _Reporting(
                QdrantClient(url=url, api_key=api_key, timeout=timeout), str(url)))
        except RuntimeError as e:  # local mode: the path is open in another client
            raise IndexError_(f"vector index at {path} is in use by another client: {e}") from e
        self.collection = collection
        self.local = path is not None
        self.on_disk = on_disk
        self.quantization = quantization
        if dim is not None:
            self.ensure(dim)

    def ensure(self, dim: int) -> None:
        if self.client.collection_exists(self.collection):
            info = self.client.get_collection(self.collection)
            have = info.config.params.vectors.size  # type: ignore[union-attr]
            if have != dim:
                raise IndexError_(f"collection {self.collection} has dim {have}, embedder gives {dim}")
            return
        quantization = (TypeAdapter(models.QuantizationConfig).validate_python(self.quantization)
                        if self.quantization else None)
        self.client.create_collection(
            self.collection,
            vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE, on_disk=self.on_disk or None),
            on_disk_payload=self.on_disk or None, quantization_config=quantization,
        )
        if not self.local:
            for f in FILTER_FIELDS:
                self.client.create_payload_index(self.collection, f, models.PayloadSchemaType.KEYWORD)

    def upsert(self, records: Iterable[IndexRecord]) -> int:
        # 256 points at a time: a point's vector as a list of floats is 32 bytes a dimension,
        # and a whole large document's at once took gigabytes
        n = 0
        batch: list[models.PointStruct] = []
        for r in records:
            batch.append(models.PointStruct(id=point_id(r.chunk_id), vector=[float(x) for x in r.vector or ()],
                                            payload=r.vector_payload()))
            if len(batch) == 256:
                self.client.upsert(self.collection, batch, wait=True)
                n, batch = n + len(batch), []
        if batch:
            self.client.upsert(self.collection, batch, wait=True)
        return n + len(batch)

    def delete_docs(self, doc_ids: Iterable[str]) -> None:
        ids = list(doc_ids)
        if not ids or not self.client.collection_exists(self.collection):
            return
        for i in range(0, len(ids), 256):
            flt = models.Filter(must=[models.FieldCondition(key="doc_id", match=models.MatchAny(any=ids[i : i + 256]))])
            self.client.delete(self.collection, models.FilterSelector(filter=flt), wait=True)

    @staticmethod
    def _filter(filters: Filters) -> models.Filter:
        if filters.principals is None:
            raise QueryError("no principal given: refusing to search without an identity")
        must: list[Any] = [models.FieldCondition(
            key="acl", match=models.MatchAny(any=sorted({PUBLIC, *filters.principals})))]
        if filters.sources is not None:
            must.append(models.FieldCondition(key="source", match=models.MatchAny(any=list(filters.sources))))
        if filters.docs is not None:
            must.append(models.FieldCondition(key="external_id", match=models.MatchAny(any=list(filters.docs))))
        must_not: list[Any] = []
        if filters.exclude_docs:
            must_not.append(models.FieldCondition(
                key="external_id", match=models.MatchAny(any=list(filters.exclude_docs))))
        return models.Filter(must=must, must_not=must_not or None)

    def search(self, vector: Sequence[float], k: int, filters: Filters) -> list[ScoredId]:
        """Nearest chunks under `filters` (an empty `sources`/`docs` tuple matches nothing)."""
        flt = self._filter(filters)  # refuses a missing identity even on an empty index
        if filters.matches_nothing or not self.client.collection_exists(self.collection):
            return []
        res = self.client.query_points(
            self.collection, query=[float(x) for x in vector], limit=k, query_filter=flt, with_payload=["chunk_id"],
        )
        return [ScoredId(p.payload["chunk_id"], float(p.score)) for p in res.points if p.payload]

    def payloads(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored payloads (display text, provenance) of chunks, by chunk id."""
        if not chunk_ids or not self.client.collection_exists(self.collection):
            return {}
        pts = self.client.retrieve(self.collection, ids=[point_id(c) for c in chunk_ids], with_payload=True)
        return {p.payload["chunk_id"]: dict(p.payload) for p in pts if p.payload}

    def chunk_ids(self) -> set[str]:
        if not self.client.collection_exists(self.collection):
            return set()
        out: set[str] = set()
        offset = None
        while True:
            pts, offset = self.client.scroll(self.collection, limit=2048, offset=offset,
                                             with_payload=["chunk_id"], with_vectors=False)
            out.update(p.payload["chunk_id"] for p in pts if p.payload)
            if offset is None:
                return out

    def acls(self) -> dict[str, tuple[str, ...]]:
        """chunk id -> its indexed ACL (sorted), read from the payloads (for `bindery verify`)."""
        if not self.client.collection_exists(self.collection):
            return {}
        out: dict[str, tuple[str, ...]] = {}
        offset = None
        while True:
            pts, offset = self.client.scroll(self.collection, limit=2048, offset=offset,
                                             with_payload=["chunk_id", "acl"], with_vectors=False)
            out.update((p.payload["chunk_id"], tuple(sorted(p.payload.get("acl") or ()))) for p in pts if p.payload)
            if offset is None:
                return out

    def count(self) -> int:
        if not self.client.collection_exists(self.collection):
            return 0
        return int(self.client.count(self.collection, exact=True).count)

    def flush(self) -> None:
        """Writes are acknowledged with wait=True; local mode persists on close."""

    def close(self) -> None:
        self.client.close()

    # -- server mode: generations behind an alias ----------------------------------------

    def point_alias(self, alias: str) -> None:
        """Point `alias` at this collection and nothing else, in ONE `update_collection_aliases`
        call: Qdrant applies the delete and the create together, so a reader through the alias
        never finds it missing or on the old collection after the call returns."""
        self.client.update_collection_aliases(change_aliases_operations=[
            models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)),
            models.CreateAliasOperation(create_alias=models.CreateAlias(
                collection_name=self.collection, alias_name=alias)),
        ])

    def alias_target(self, alias: str) -> str | None:
        """The collection `alias` points to, or None."""
        found = [a.collection_name for a in self.client.get_aliases().aliases if a.alias_name == alias]
        return found[0] if found else None

    def drop(self) -> bool:
        """Delete the collection (its aliases go with it); False when it did not exist."""
        return bool(self.client.delete_collection(self.collection))
