"""Production keyword index on Elasticsearch, behind the same `KeywordIndex` protocol as tantivy.

**Tested only against ``tests/es_stub.py``**, a local HTTP stub that follows the documented
Elasticsearch REST API (index creation with mappings, ``_bulk``, ``_refresh``, ``_search``,
``_delete_by_query``, ``_count``, ``_aliases``) and records every request, with the official
``elasticsearch`` Python client (9.x) talking to it over HTTP. It has **not** been run against a
live cluster: no Elasticsearch server could be obtained where it was written. The stub scores
``match`` by plain term overlap, so relevance (BM25, the ``bindery_english`` analyser) is real
Elasticsearch behaviour that only a live cluster can confirm. Client and cluster majors must
agree: the 9.x client sends ``compatible-with=9`` headers, which an 8.x cluster rejects.

Index layout (one document per chunk, ``_id`` = chunk id, ``dynamic: strict``):

* ``text``: analysed by ``bindery_english`` (standard tokenizer, possessive stemmer, lowercase,
  Porter2 stemmer; no stop words), mirroring tantivy's ``en_stem``.
* ``ident``: ``keyword`` with a lowercase normalizer; values from
  :func:`connectors.analysis.identifiers`, the analyser tantivy uses too. ``keyword`` fields
  keep no norms, so an identifier match scores idf x boost regardless of chunk length, as in
  the tantivy adapter.
* ``chunk_id``, ``doc_id``, ``source``, ``external_id``, ``acl``: plain (case-sensitive)
  ``keyword``, exactly like tantivy's ``raw`` fields, so a filter means the same on both.

Visibility follows tantivy's: writes become searchable on :meth:`ElasticsearchIndex.commit`
(a refresh), and generations are switched with :meth:`ElasticsearchIndex.point_alias`, which
removes and adds the alias in one atomic ``_aliases`` request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

from elasticsearch import ApiError, BadRequestError, Elasticsearch, NotFoundError, TransportError
from elasticsearch.helpers import BulkIndexError, bulk

from connectors.analysis import IDENT_BOOST, identifiers, proximity_pairs, sanitize_query
from connectors.errors import IndexError_, QueryError, without_secrets
from connectors.indexes.base import PUBLIC, Filters, IndexRecord, ScoredId, SearchLevel

__all__ = ["IDENT_BOOST", "INDEX_MAPPINGS", "ElasticsearchIndex", "index_settings"]

_BULK_CHUNK = 500
_DELETE_BATCH = 1_000  # doc ids per delete_by_query (terms queries allow 65,536)
_PAGE = 5_000  # chunk ids per page when listing all of them
# A cluster under write pressure answers 429 (whole request or per item): retry with
# exponential backoff (1, 2, 4, 8, 16 s), not the transport's immediate retries alone.
_BULK_RETRIES = 5
_BULK_BACKOFF_S = 1.0
_BULK_MAX_BACKOFF_S = 30.0
_INDEX_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.\-]*")  # ES rejects upper case, most symbols

INDEX_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "chunk_id": {"type": "keyword"},
        "doc_id": {"type": "keyword"},
        "source": {"type": "keyword"},
        "external_id": {"type": "keyword"},
        "acl": {"type": "keyword"},
        "text": {"type": "text", "analyzer": "bindery_english"},
        "ident": {"type": "keyword", "normalizer": "bindery_lowercase"},
        "heading": {"type": "text", "analyzer": "bindery_english"},
        "text_plain": {"type": "text", "analyzer": "standard"},
        "unit": {"type": "text", "analyzer": "bindery_english"},
        "unit_plain": {"type": "text", "analyzer": "standard"},
        "msgid": {"type": "keyword"},
        "reply_to": {"type": "keyword"},
        # `simple` (runs of letters, lowercased) splits "tim.one@comcast.net" as tantivy's default
        # tokenizer does; `standard` would keep "tim.one" one word, and "tim" would not find it
        "author": {"type": "text", "analyzer": "simple"},
        "sent": {"type": "keyword"},
        "thread": {"type": "keyword"},
    },
}
# Fields added with units, thread neighbours and attribution lines: put into an index created
# before them (additive; their analysers are built in, so the settings need no change).
_ADDED_FIELDS = ("heading", "text_plain", "unit", "unit_plain", "msgid", "reply_to", "author", "sent", "thread")
_DAY_BOOST = (3000.0, 1000.0, 1000.0)  # as TantivyIndex.by_author: the day, the day before, after


def index_settings(shards: int = 1, replicas: int | None = None) -> dict[str, Any]:
    """Index settings: shard counts plus the ``bindery_english`` analyser and the
    ``bindery_lowercase`` normalizer. One shard by default: BM25 statistics are per shard, so
    a small index split across shards scores the same text differently on each."""
    settings: dict[str, Any] = {
        "number_of_shards": shards,
        "analysis": {
            "filter": {
                "bindery_possessive": {"type": "stemmer", "language": "possessive_english"},
                "bindery_stemmer": {"type": "stemmer", "language": "porter2"},
            },
            "analyzer": {
                "bindery_english": {
                    "type": "custom",
                    "tokenizer": "standard",
                    "filter": ["bindery_possessive", "lowercase", "bindery_stemmer"],
                }
            },
            "normalizer": {
                "bindery_lowercase": {"type": "custom", "char_filter": [], "filter": ["lowercase"]}
            },
        },
    }
    if replicas is not None:
        settings["number_of_replicas"] = replicas
    return settings


class ElasticsearchIndex:
    """One Elasticsearch index (or an alias to one, for reads) as a `KeywordIndex`.

    ``client`` lets callers share a configured client (auth, TLS); otherwise one is built from
    ``url`` with ``timeout`` seconds per request (and closed by :meth:`close`). The index is
    created with :data:`INDEX_MAPPINGS` and :func:`index_settings` on the first write if it
    does not exist yet; call :meth:`create_index` to create it up front.
    """

    def __init__(
        self,
        url: str,
        index_name: str,
        *,
        client: Elasticsearch | None = None,
        timeout: float = 10,
        shards: int = 1,
        replicas: int | None = None,
        api_key: str | None = None,
    ) -> None:
        if not _INDEX_NAME_RE.fullmatch(index_name):
            raise IndexError_(
                f"invalid Elasticsearch index name {index_name!r}: use lowercase letters, "
                "digits, '_', '-' and '.', not starting with a symbol"
            )
        self.url = url
        self.index_name = index_name
        self._owns_client = client is None
        self._client = client or Elasticsearch(
            url, api_key=api_key, request_timeout=timeout, max_retries=2, retry_on_timeout=True
        )
        self._settings = index_settings(shards, replicas)
        self._ensured = False

    # -- index management ----------------------------------------------------------------

    def create_index(self) -> bool:
        """Create the index with explicit mappings and settings; False if it already exists."""
        with self._errors("create index"):
            if self._client.indices.exists(index=self.index_name):
                # an index created before units or authors: add their fields (additive, idempotent)
                self._client.indices.put_mapping(index=self.index_name, properties={
                    f: INDEX_MAPPINGS["properties"][f] for f in _ADDED_FIELDS})
                self._ensured = True
                return False
            try:
                self._client.indices.create(
                    index=self.index_name, mappings=INDEX_MAPPINGS, settings=self._settings
                )
            except BadRequestError as exc:
                if _error_type(exc) != "resource_already_exists_exception":  # lost a race
                    raise
                self._ensured = True
                return False
        self._ensured = True
        return True

    def drop_index(self) -> None:
        """Delete the index; a missing one is fine. Elasticsearch refuses an alias name here."""
        with self._errors("drop index"):
            self._client.indices.delete(index=self.index_name, ignore_unavailable=True)
        self._ensured = False

    def alias_targets(self, alias: str) -> list[str]:
        """The indices ``alias`` points to now (empty when the alias does not exist)."""
        with self._errors("read alias"):
            try:
                resp = self._client.indices.get_alias(name=alias)
            except NotFoundError:
                return []
        return sorted(resp.body)

    def point_alias(self, alias: str, index_name: str | None = None) -> list[str]:
        """Point ``alias`` at ``index_name`` (default: this index) and at nothing else.

        Removing it from its current indices and adding it to the new one happen in ONE
        ``_aliases`` request, which Elasticsearch applies atomically: readers through the alias
        never see zero or two generations. Returns the indices it pointed to before.
        """
        target = index_name or self.index_name
        previous = self.alias_targets(alias)
        actions: list[dict[str, Any]] = [
            {"remove": {"index": name, "alias": alias}} for name in previous if name != target
        ]
        actions.append({"add": {"index": target, "alias": alias}})
        with self._errors(f"point alias {alias} at {target}"):
            self._client.indices.update_aliases(actions=actions)
        return previous

    # -- writes --------------------------------------------------------------------------

    def upsert(self, records: Iterable[IndexRecord]) -> int:
        """Index (create or replace) chunks with ``_id`` = chunk id; returns how many."""
        if not self._ensured:
            self.create_index()
        with self._errors("bulk upsert"):
            # raise_on_error=False: the helper retries items rejected with 429 only when it
            # does not raise on the first error; what is left after the retries is raised here.
            ok, errors = bulk(
                self._client,
                self._actions(records),
                chunk_size=_BULK_CHUNK,
                raise_on_error=False,
                stats_only=False,
                max_retries=_BULK_RETRIES,
                initial_backoff=_BULK_BACKOFF_S,
                max_backoff=_BULK_MAX_BACKOFF_S,
            )
            if errors:
                assert isinstance(errors, list)
                raise BulkIndexError(f"{len(errors)} document(s) failed to index.", errors)
        return int(ok)

    def _actions(self, records: Iterable[IndexRecord]) -> Iterator[dict[str, Any]]:
        for rec in records:
            if not rec.chunk_id:
                raise IndexError_(f"record of doc {rec.doc_id!r} has an empty chunk_id")
            yield {
                "_op_type": "index",
                "_index": self.index_name,
                "_id": rec.chunk_id,
                "_source": {
                    "chunk_id": rec.chunk_id,
                    "doc_id": rec.doc_id,
                    "source": rec.source,
                    "external_id": rec.external_id,
                    "acl": list(rec.acl),  # empty: matches no filter, nobody sees the chunk
                    "text": rec.text,
                    "ident": identifiers(rec.text),
                    "heading": rec.heading,
                    "text_plain": rec.text,
                    **({"unit": rec.unit_text, "unit_plain": rec.unit_text} if rec.unit_text is not None else {}),
                    **({"msgid": rec.message_id} if rec.message_id else {}),
                    **({"reply_to": rec.reply_to} if rec.reply_to else {}),
                    **({"author": rec.author} if rec.author else {}),
                    **({"sent": list(rec.sent)} if rec.sent else {}),
                    **({"thread": rec.thread} if rec.thread else {}),
                },
            }

    def delete_docs(self, doc_ids: Iterable[str]) -> None:
        """Delete every chunk of the given documents (searchable after :meth:`commit`).

        ``_delete_by_query`` only sees refreshed documents, so the index is refreshed first:
        chunks upserted earlier in the same batch are deleted too, as they are in tantivy.
        """
        ids = list(dict.fromkeys(doc_ids))
        if not ids:
            return
        with self._errors("delete documents"):
            if not self._client.indices.exists(index=self.index_name):
                return  # nothing written yet: nothing to delete (a first sync into an empty cluster)
            self._client.indices.refresh(index=self.index_name)
            for start in range(0, len(ids), _DELETE_BATCH):
                batch = ids[start : start + _DELETE_BATCH]
                resp = self._client.delete_by_query(
                    index=self.index_name,
                    query={"terms": {"doc_id": batch}},
                    conflicts="proceed",
                )
                if resp.get("failures"):
                    raise IndexError_(f"delete_by_query failures: {resp['failures'][:3]}")

    def commit(self) -> None:
        """Make all writes so far searchable (``_refresh``)."""
        with self._errors("refresh"):
            self._client.indices.refresh(index=self.index_name)

    # -- reads ---------------------------------------------------------------------------

    def search(self, query: str, k: int, filters: Filters, *, level: SearchLevel = "chunk",
               heading_weight: float = 0.0, plain_weight: float = 0.0, proximity_weight: float = 0.0,
               proximity_slop: int = 1) -> list[ScoredId]:
        """BM25 ``match`` on ``text`` (plus ``heading`` x ``heading_weight``) plus boosted exact
        ``ident`` terms, or at ``level="unit"`` a ``match`` on ``unit``; filters in ``filter``;
        ``proximity_weight`` adds the query's adjacent word pairs as ``match_phrase`` queries.

        Semantics match :meth:`TantivyIndex.search`: ``principals=None`` raises
        :class:`QueryError` (fail closed), public chunks always pass the ACL filter, a blank
        query returns ``[]`` and an empty ``sources``/``docs`` tuple matches nothing.
        """
        if k < 1:
            raise QueryError(f"k must be at least 1, got {k}")
        body = build_query(query, filters, level=level, heading_weight=heading_weight, plain_weight=plain_weight,
                           proximity_weight=proximity_weight, proximity_slop=proximity_slop)
        if body is None:
            return []
        with self._errors("search"):
            try:
                resp = self._client.search(
                    index=self.index_name, query=body, size=k, source=False, track_total_hits=False,
                    allow_partial_search_results=False)
            except BadRequestError as exc:
                raise QueryError(f"Elasticsearch rejected the query: {_error_type(exc)}") from exc
        return [ScoredId(hit["_id"], float(hit["_score"] or 0.0)) for hit in self._hits(resp, "search")]

    def thread_neighbours(self, message_ids: Sequence[str], k: int, filters: Filters,
                          threads: Sequence[str] = ()) -> list[str]:
        """Chunk ids of messages whose ``msgid`` or ``reply_to`` is in `message_ids`, or whose
        ``thread`` is in `threads` (see `KeywordIndex.thread_neighbours`), under the same
        filters as `search`."""
        ids = sorted({m for m in message_ids if m})
        roots = sorted({t for t in threads if t})
        body = build_filter_query(filters)
        if not (ids or roots) or body is None:
            return []
        body["bool"]["should"] = ([{"terms": {"msgid": ids}}, {"terms": {"reply_to": ids}}] if ids else []) + (
            [{"terms": {"thread": roots}}] if roots else [])
        body["bool"]["minimum_should_match"] = 1
        with self._errors("thread lookup"):
            if not self._client.indices.exists(index=self.index_name):
                return []
            resp = self._client.search(index=self.index_name, query=body, size=k, source=False,
                                       track_total_hits=False, allow_partial_search_results=False)
        return [hit["_id"] for hit in self._hits(resp, "thread lookup")]

    def by_author(self, names: Sequence[str], address: str | None, message_ids: Sequence[str],
                  days: Sequence[str], query: str, k: int, filters: Filters) -> list[ScoredId]:
        """Chunks of the e-mails an attribution line points at (`KeywordIndex.by_author`), as
        `TantivyIndex.by_author` scores them: a ``must`` on the writer (a ``match`` on
        ``author`` for any name word, one with ``operator: and`` for the address, or the
        Message-ID), ``constant_score`` days, and the query's ``match`` on ``text``."""
        if k < 1:
            raise QueryError(f"k must be at least 1, got {k}")
        body = build_filter_query(filters)
        if body is None or not (names or address or message_ids):
            return []
        who: list[dict[str, Any]] = []
        if names:
            who.append({"match": {"author": {"query": " ".join(names)}}})
        if address:
            who.append({"match": {"author": {"query": address, "operator": "and"}}})
        if message_ids:
            who.append({"terms": {"msgid": list(message_ids)}})
        body["bool"]["must"] = [{"bool": {"should": who, "minimum_should_match": 1}}]
        should: list[dict[str, Any]] = []
        if days:  # a message scores its best day, not their sum (as TantivyIndex.by_author)
            should.append({"dis_max": {"tie_breaker": 0.0, "queries": [
                {"constant_score": {"filter": {"term": {"sent": key}}, "boost": boost}}
                for key, boost in zip(days, _DAY_BOOST, strict=False)]}})
        if text := sanitize_query(query):
            should.append({"match": {"text": {"query": text}}})
        if should:
            body["bool"]["should"] = should
        with self._errors("author lookup"):
            if not self._client.indices.exists(index=self.index_name):
                return []
            try:
                resp = self._client.search(index=self.index_name, query=body, size=k, source=False,
                                           track_total_hits=False, allow_partial_search_results=False)
            except BadRequestError as exc:
                raise QueryError(f"Elasticsearch rejected the query: {_error_type(exc)}") from exc
        return [ScoredId(hit["_id"], float(hit["_score"] or 0.0)) for hit in self._hits(resp, "author lookup")]

    def missing_fields(self) -> list[str]:
        """Fields of `INDEX_MAPPINGS` this index's mapping lacks (see `KeywordIndex`); ``[]``
        for an index not created yet (its first write creates it with every field)."""
        with self._errors("read mapping"):
            if not self._client.indices.exists(index=self.index_name):
                return []
            resp = self._client.indices.get_mapping(index=self.index_name)
        have: set[str] = set()
        for body in dict(resp).values():  # one entry per concrete index (an alias resolves to one)
            have |= set((body.get("mappings") or {}).get("properties") or {})
        return [f for f in INDEX_MAPPINGS["properties"] if f not in have]

    def chunk_ids(self) -> set[str]:
        """Every searchable chunk id, paged with ``search_after`` on ``chunk_id``."""
        out: set[str] = set()
        after: list[Any] | None = None
        with self._errors("list chunk ids"):
            if not self._client.indices.exists(index=self.index_name):
                return out  # like a missing Qdrant collection: holds no chunks
            while True:
                resp = self._client.search(
                    index=self.index_name,
                    query={"match_all": {}},
                    size=_PAGE,
                    sort=[{"chunk_id": "asc"}],
                    search_after=after,
                    source=False,
                    track_total_hits=False, allow_partial_search_results=False,
                )
                hits = self._hits(resp, "list chunk ids")
                out.update(hit["_id"] for hit in hits)
                if len(hits) < _PAGE:
                    return out
                after = hits[-1]["sort"]

    def acls(self) -> dict[str, tuple[str, ...]]:
        """chunk id -> its indexed ACL (sorted), paged like :meth:`chunk_ids` (for `bindery verify`)."""
        out: dict[str, tuple[str, ...]] = {}
        after: list[Any] | None = None
        with self._errors("list ACLs"):
            while True:
                resp = self._client.search(
                    index=self.index_name,
                    query={"match_all": {}},
                    size=_PAGE,
                    sort=[{"chunk_id": "asc"}],
                    search_after=after,
                    source={"includes": ["acl"]},
                    track_total_hits=False, allow_partial_search_results=False,
                )
                hits = self._hits(resp, "list ACLs")
                out.update((hit["_id"], tuple(sorted(hit.get("_source", {}).get("acl") or ()))) for hit in hits)
                if len(hits) < _PAGE:
                    return out
                after = hits[-1]["sort"]

    def count(self) -> int:
        """Searchable chunks (as of the last refresh); 0 while the index does not exist yet,
        as in every adapter, so a first sync into an empty cluster needs no special case."""
        with self._errors("count"):
            try:
                return int(self._client.count(index=self.index_name)["count"])
            except NotFoundError:
                return 0

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the HTTP client if this instance created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _hits(self, resp: Any, action: str) -> list[dict[str, Any]]:
        """The hits of a search response, refused when they are partial. Every search asks for
        ``allow_partial_search_results=false``, so a failed shard is an error already; this also
        catches a shard that timed out, or a proxy or version that ignores the flag. Partial hits
        would be taken as the whole answer: a short keyword list is fused as holding every match,
        and `verify` would see the missing shard's chunks as lost."""
        shards = resp.get("_shards") or {}
        if resp.get("timed_out") or shards.get("failed"):
            failed = f"{shards.get('failed')} of {shards.get('total')} shards failed"
            what = "timed out" if resp.get("timed_out") else failed
            raise IndexError_(f"{action} on {self.index_name} returned partial results ({what}); not used")
        hits: list[dict[str, Any]] = resp["hits"]["hits"]
        return hits

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Translate client exceptions into :class:`IndexError_` naming the index and action."""
        try:
            yield
        except BulkIndexError as exc:
            first = exc.errors[:3]
            raise IndexError_(
                f"{action} on {self.index_name}: {len(exc.errors)} chunk(s) rejected: {first}"
            ) from exc
        except ApiError as exc:
            raise IndexError_(
                f"{action} on {self.index_name} failed: HTTP {exc.status_code} {_error_type(exc)}"
            ) from exc
        except TransportError as exc:
            raise IndexError_(
                without_secrets(f"{action} on {self.index_name}: cannot reach Elasticsearch at {self.url}: {exc}")
            ) from exc


def build_query(query: str, filters: Filters, *, level: SearchLevel = "chunk",
                heading_weight: float = 0.0, plain_weight: float = 0.0, proximity_weight: float = 0.0,
                proximity_slop: int = 1) -> dict[str, Any] | None:
    """The ``bool`` query for ``query`` under ``filters``; ``None`` when nothing can match.

    ``should``: a ``match`` on ``text`` and one boosted ``term`` per identifier (a ``term``
    query is BM25-scored, so rarer identifiers weigh more; a single ``terms`` query would give
    every identifier the same constant score). ``minimum_should_match: 1`` is required because
    a bool query with ``filter`` clauses otherwise treats ``should`` as optional. ``filter``
    clauses restrict without scoring; ``must_not`` drops excluded documents.
    """
    if filters.principals is None:
        raise QueryError("keyword search without a principal is refused (fail closed)")
    text = sanitize_query(query)
    if not text or filters.sources == () or filters.docs == ():
        return None
    should: list[dict[str, Any]]
    field = "unit" if level == "unit" else "text"
    if level == "unit":
        should = [{"match": {"unit": {"query": text}}}]
    else:
        should = [{"match": {"text": {"query": text}}}]
        if heading_weight > 0:
            should.append({"match": {"heading": {"query": text, "boost": heading_weight}}})
        should += [
            {"term": {"ident": {"value": ident, "boost": IDENT_BOOST}}} for ident in identifiers(query)
        ]
    if plain_weight > 0:
        should.append({"match": {f"{field}_plain": {"query": text, "boost": plain_weight}}})
    if proximity_weight > 0:  # the pairs' distance in the query (a stopword between) widens the slop
        weights = {field: 1.0, **({f"{field}_plain": plain_weight} if plain_weight > 0 else {})}
        pairs = proximity_pairs(query)
        should += [{"match_phrase": {f: {"query": f"{a} {b}", "slop": proximity_slop + gap - 1,
                                         "boost": proximity_weight * w}}}
                   for f, w in weights.items() for a, b, gap in pairs]
    body = build_filter_query(filters)
    if body is None:
        return None
    body["bool"].update(should=should, minimum_should_match=1)
    return body


def build_filter_query(filters: Filters) -> dict[str, Any] | None:
    """A ``bool`` query holding only ``filters`` (``filter`` clauses score nothing; ``must_not``
    drops excluded documents); ``None`` when nothing can match. Fail closed without principals."""
    if filters.principals is None:
        raise QueryError("keyword search without a principal is refused (fail closed)")
    if filters.matches_nothing:
        return None
    filter_: list[dict[str, Any]] = [{"terms": {"acl": sorted({PUBLIC, *filters.principals})}}]
    if filters.sources is not None:
        filter_.append({"terms": {"source": list(filters.sources)}})
    if filters.docs is not None:
        filter_.append({"terms": {"external_id": list(filters.docs)}})
    bool_: dict[str, Any] = {"filter": filter_}
    if filters.exclude_docs:
        bool_["must_not"] = [{"terms": {"external_id": list(filters.exclude_docs)}}]
    return {"bool": bool_}


def _error_type(exc: ApiError) -> str:
    """The ``error.type`` of an Elasticsearch error body (e.g. ``index_not_found_exception``)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("type") or error.get("reason") or exc.message)
    return str(error or exc.message)
