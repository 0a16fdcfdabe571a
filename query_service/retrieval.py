"""Hybrid retrieval over whatever the binding says is live.

`LiveRetriever` follows the `bindings` row: a background poll notices a new version (a flip, a
rollback, or a newly published snapshot of the live generation) and opens the new readers
*beside* the old ones, then swaps one reference. A request takes that reference once at its
start, so it finishes on the generation it started on; the old readers close when their last
request ends. `GenerationRetriever` serves one fixed generation (the eval gate uses it for
candidates).

Retrieval: dense (Qdrant) and BM25 (tantivy: chunk level and unit level) over-retrieve
`candidates` each, in parallel, with the same filters; the lists are turned into units and fused
(`query_service.ranking`); an optional score floor. A hit is a unit: its text is the unit's,
its `chunk_id` the unit's best-matching chunk.

Access is checked twice: the indexes filter on the ACL they hold, and every candidate, before
fusion, and every answer are then re-checked against the document store's current ACL and
deleted state (`Admission`, one primary-key SELECT per query for all of them), so no
generation — a stale one restored by a rollback included — can ever widen access, and a
revoked document neither ranks nor shows in the trace.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from connectors.acl import allows
from connectors.config import BinderyConfig, EmbedConfig, QueryConfig, load_config
from connectors.embedder import Embedder
from connectors.errors import BinderyError, BindingError, ConfigError, EmbedderUnavailable, QueryError
from connectors.generations import IndexPair, open_reader
from connectors.identity import doc_id
from connectors.indexes.base import Filters, ScoredId, SearchLevel
from connectors.mail_attribution import Attribution, find_attribution
from connectors.message_text import strip_message_noise
from connectors.query_limits import check_text, query_problem
from connectors.store import DocumentStore, GenerationRecord
from query_service.attribution import attributed_units
from query_service.neighbours import MAX_NEIGHBOURS, neighbour_texts
from query_service.ranking import RankedUnit, rank_units, unit_of

log = logging.getLogger(__name__)

__all__ = ["GenerationRetriever", "Hit", "LiveRetriever", "SearchResult", "check_query"]

_EMBEDDERS: dict[str, Embedder] = {}
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="retrieve")
# A bound generation that failed to open is tried again after this long (each try copies its
# vector snapshot; a transient failure of a server backend still recovers on its own)
OPEN_RETRY_SECONDS = 60.0
_THREAD_LOOKUP_LIMIT = 2000  # chunks of thread neighbours fetched per query at most
# chunks of an attribution line's writer fetched at most when the line gives the minute: the
# lookup ranks by day, then by the query's words, and the minute is weighed only after it
# (`attribution.evidence`), so a cut at `candidates` (50) let a prolific writer's day crowd out
# the message of that very minute (45 patches of one evening, several chunks each: which fell
# under the cut followed from BM25 statistics that any unrelated edit moved, and the answered
# patch went from 1st to unranked). Past the first `candidates` only a message of that minute (or
# the quoted Message-ID) counts: the cut by the query's words is what keeps a prolific writer's
# other messages of the day, or of an undated line, from all gaining
_AUTHOR_LOOKUP_LIMIT = 500
# A thread longer than this lends nothing to its other messages: in a long discussion another
# message of the thread says little about the one asked for.
THREAD_MATES_MAX = 12


@dataclass
class Hit:
    chunk_id: str
    doc: str  # external id: path relative to the source root
    source: str
    score: float
    text: str
    heading_path: list[str]
    page: int | None
    uri: str | None
    ranks: dict[str, int]
    unit_id: str = ""  # the unit (small-to-big) this hit returns; "" = the chunk alone
    chunk_text: str = ""  # the matching chunk's own text (`text` is the whole unit's)
    # neighbour expansion (query.neighbours): the chunks just before and after the unit; None: not asked
    before: list[str] | None = None
    after: list[str] | None = None
    email: dict[str, str] | None = None  # a single-message e-mail's writer, date and thread keys
    title: str | None = None  # the document's, as its parse found it; None from an index written before

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunk_id": self.chunk_id, "unit_id": self.unit_id or self.chunk_id, "doc": self.doc,
            "source": self.source, "title": self.title, "score": self.score, "text": self.text,
            "chunk_text": self.chunk_text or self.text, "heading_path": self.heading_path,
            "page": self.page, "uri": self.uri, "ranks": self.ranks}
        if self.before is not None or self.after is not None:
            out.update(before=self.before or [], after=self.after or [])
        if self.email:
            out["email"] = self.email
        return out


# the e-mail keys the index stage puts on every chunk of a single-message e-mail
# (assets.index_stage.MessageKeys), as a hit names them
_EMAIL_FIELDS = (("author", "from"), ("sent", "date"), ("message_id", "message_id"), ("reply_to", "in_reply_to"),
                 ("thread", "thread_id"))


def _email(payload: dict[str, Any]) -> dict[str, str] | None:
    """Who wrote an e-mail hit, when, and where it sits in its thread: what a citation of a
    message names, and what its text (the subject is its heading) does not say."""
    out = {name: payload[key] for key, name in _EMAIL_FIELDS if payload.get(key)}
    if "date" in out and not _iso(out["date"]):  # a Date header no parser could read is kept as written
        del out["date"]
    return out or None


def _iso(value: str) -> bool:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


@dataclass
class SearchResult:
    generation: GenerationRecord
    hits: list[Hit]
    trace: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"generation": self.generation.id, "generation_name": self.generation.name,
               "hits": [h.to_json() for h in self.hits], "trace": self.trace}
        if self.reason:
            out["reason"] = self.reason
        return out


def _embedder_for(cfg: BinderyConfig, gen: GenerationRecord) -> Embedder:
    """The query embedder recorded with the generation (model, prefixes, backend, precision).
    A different id is a hard error; a recorded backend that cannot run here (openvino not
    importable) is refused with the reason, never replaced by another backend."""
    key = gen.embedder_id
    if key not in _EMBEDDERS:
        try:
            emb = Embedder(EmbedConfig.recorded(gen.stage_configs["embed"]), cache_dir=cfg.data_path / "models")
        except ConfigError as e:
            raise EmbedderUnavailable(f"generation {gen.name} was embedded with a backend that cannot run "
                                      f"here: {e}") from e
        emb.check(gen.embedder_id)
        if not emb.loaded:
            _announce_model_load(emb)
        emb.embed_query("warm up")  # load the model now: ready must mean the first query is fast
        _EMBEDDERS[key] = emb
    return _EMBEDDERS[key]


def _announce_model_load(emb: Embedder) -> None:
    """Say why the first query of a cold process waits (on stderr: `--json` output stays clean)."""
    print(f"loading the embedding model {emb.cfg.model} ({emb.cfg.backend} {emb.cfg.precision})...",
          file=sys.stderr, flush=True)


class _Served:
    """One generation's open readers plus a count of requests using them."""

    def __init__(self, cfg: BinderyConfig, gen: GenerationRecord, version: int | None):
        self.gen = gen
        self.version = version
        self.embedder = _embedder_for(cfg, gen)
        self.pair: IndexPair = open_reader(cfg, gen)
        self._missing_fields: list[str] | None = None
        self._users = 0
        self._retired = False
        self._lock = threading.Lock()

    @property
    def missing_fields(self) -> list[str]:
        """Fields an older release wrote this generation's keyword index without (said in the
        trace of a query that needs them). Asked once, on the first such query, not at open: a
        server backend that is briefly unreachable must not stop a generation from being served,
        and a failed answer is taken as "nothing known missing"."""
        if self._missing_fields is None:
            try:
                self._missing_fields = self.pair.keyword.missing_fields()
            except BinderyError:
                return []
        return self._missing_fields

    def acquire(self) -> bool:
        with self._lock:
            if self._retired:
                return False
            self._users += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            close = self._retired and self._users == 0
        if close:
            self.pair.close()

    def retire(self) -> None:
        with self._lock:
            self._retired = True
            close = self._users == 0
        if close:
            self.pair.close()

    def search(self, query: str, k: int, filters: Filters, qcfg: QueryConfig,
               admit: Callable[[set[str]], set[str]] | None = None) -> SearchResult:
        """The fused units of one query. `admit` (doc ids -> those the caller may read now, from
        the store) is applied to every retriever's candidates before fusion, so a document whose
        access was revoked after this generation's index was written neither ranks, nor shifts
        the others' scores, nor shows in the trace."""
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        attribution = find_attribution(query) if qcfg.attribution_weight > 0 else None
        if qcfg.strip_message_noise:
            query = strip_message_noise(query)

        def dense() -> list[ScoredId]:
            s = time.perf_counter()
            vec = self.embedder.embed_query(query).tolist()
            timings["embed_ms"] = (time.perf_counter() - s) * 1000
            s = time.perf_counter()
            out = self.pair.vector.search(vec, qcfg.candidates, filters)
            timings["dense_ms"] = (time.perf_counter() - s) * 1000
            return out

        def sparse() -> tuple[list[ScoredId], list[ScoredId], list[ScoredId]]:
            s = time.perf_counter()
            chunks, units = self._keyword_lists(query, filters, qcfg)
            by_author = self._by_author(attribution, query, qcfg.candidates, filters) if attribution else []
            timings["sparse_ms"] = (time.perf_counter() - s) * 1000
            return chunks, units, by_author

        fd, fs = _POOL.submit(dense), _POOL.submit(sparse)
        dense_hits, (sparse_hits, unit_hits, author_hits) = fd.result(), fs.result()
        # the writer's chunks past the usual cut: they count for the attributed minute only
        sure_only = {h.chunk_id for h in author_hits[qcfg.candidates:]}
        # a keyword list shorter than asked holds every match: the rest score BM25's 0 (fusion)
        complete = [name for name, hits in (("sparse", sparse_hits), ("unit", unit_hits))
                    if len(hits) < qcfg.candidates]
        s = time.perf_counter()
        ids = list(dict.fromkeys(h.chunk_id for h in (*dense_hits, *sparse_hits, *unit_hits, *author_hits)))
        payloads = self.pair.vector.payloads(ids)
        if admit is not None:
            ok = _admitted(payloads, payloads, admit)
            dense_hits, sparse_hits, unit_hits, author_hits = (
                [h for h in hits if h.chunk_id in ok] for hits in (dense_hits, sparse_hits, unit_hits, author_hits))
        timings["payloads_ms"] = (time.perf_counter() - s) * 1000
        s = time.perf_counter()
        attributed = (attributed_units(attribution, author_hits, payloads, lambda c: unit_of(c, payloads),
                                       sure_only=sure_only) if attribution else {})
        ranked = rank_units(dense_hits, sparse_hits, unit_hits, payloads, qcfg,
                            neighbours=lambda pairs: self._thread_neighbours(pairs, payloads, filters,
                                                                             qcfg.thread_mates_weight > 0, admit),
                            attributed=attributed, complete=complete)
        ranked, reason = _above_floor(ranked, qcfg.score_floor)
        ranked = ranked[:k]
        timings["fusion_ms"] = (time.perf_counter() - s) * 1000
        heads = [r.unit_id for r in ranked if r.unit_id not in payloads]
        if heads:  # a unit's text lives on its first chunk, which may not have matched itself
            payloads = {**payloads, **self.pair.vector.payloads(heads)}
        hits = [h for h in (_hit(r, payloads) for r in ranked) if h is not None]
        if qcfg.neighbours > 0 and hits:
            s = time.perf_counter()
            hits = self._with_neighbours(hits, payloads, qcfg.neighbours)
            timings["neighbours_ms"] = (time.perf_counter() - s) * 1000
        if not hits and reason is None:
            reason = "no matching chunks"
        timings["total_ms"] = (time.perf_counter() - t0) * 1000
        trace = {
            "dense": [{"chunk_id": h.chunk_id, "score": round(h.score, 6)} for h in dense_hits],
            "sparse": [{"chunk_id": h.chunk_id, "score": round(h.score, 6)} for h in sparse_hits],
            "unit": [{"chunk_id": h.chunk_id, "score": round(h.score, 6)} for h in unit_hits],
            "fusion": qcfg.fusion,
            **({"attribution": _attribution_trace(attribution, attributed, self.missing_fields)}
               if attribution else {}),
            "binding": {"generation": self.gen.id, "name": self.gen.name, "version": self.version,
                        "embedder_id": self.gen.embedder_id},
            "timings": {k_: round(v, 2) for k_, v in timings.items()},
        }
        return SearchResult(self.gen, hits, trace, reason if not hits else None)

    def _keyword_lists(self, query: str, filters: Filters, qcfg: QueryConfig) -> tuple[list[ScoredId], list[ScoredId]]:
        """BM25 over chunks and over whole units (none when both unit weights are 0), with the
        configured field weights and proximity pairs."""
        def search(level: SearchLevel, heading_weight: float) -> list[ScoredId]:
            return self.pair.keyword.search(query, qcfg.candidates, filters, level=level,
                                            heading_weight=heading_weight, plain_weight=qcfg.plain_weight,
                                            proximity_weight=qcfg.proximity_weight,
                                            proximity_slop=qcfg.proximity_slop)

        units = qcfg.unit_weight > 0 or qcfg.message_unit_weight > 0
        return search("chunk", qcfg.heading_weight), search("unit", 0.0) if units else []

    def _with_neighbours(self, hits: list[Hit], payloads: dict[str, dict[str, Any]], n: int) -> list[Hit]:
        """Each hit with the texts of the `n` chunks before and after its unit (`neighbours`)."""
        heads = {h.unit_id: payloads[h.unit_id] for h in hits if h.unit_id in payloads}
        texts = neighbour_texts(heads, n, self.gen.stage_versions["chunk"], self.pair.vector.payloads)
        out = []
        for h in hits:
            before, after = texts.get(h.unit_id, ([], []))
            out.append(replace(h, before=before, after=after))
        return out

    def _by_author(self, attr: Attribution, query: str, k: int, filters: Filters) -> list[ScoredId]:
        """The keyword index's chunks of the messages `attr` points at (`KeywordIndex.by_author`)."""
        limit = max(k, _AUTHOR_LOOKUP_LIMIT) if attr.time is not None else k
        return self.pair.keyword.by_author(attr.names, attr.address, [attr.message_id] if attr.message_id else [],
                                           attr.day_keys(), query, limit, filters)

    def _thread_neighbours(self, pairs: Sequence[tuple[str, str]], payloads: dict[str, dict[str, Any]],
                           filters: Filters, mates: bool,
                           admit: Callable[[set[str]], set[str]] | None = None) -> dict[str, dict[str, str]]:
        """unit -> {the first unit of its message's parent and of each reply: "near"; with
        `mates`, of each other message of its thread (threads of at most `THREAD_MATES_MAX`
        messages): "mate"} (`ranking.Neighbours`), found through the keyword index's thread
        fields under the query's own filters."""
        keys = {u: payloads.get(c) or {} for u, c in pairs}
        wanted = sorted({m for p in keys.values() for m in (p.get("message_id"), p.get("reply_to")) if m})
        roots = sorted({p["thread"] for p in keys.values() if p.get("thread")}) if mates else []
        if not wanted and not roots:
            return {}
        found = self.pair.keyword.thread_neighbours(wanted, _THREAD_LOOKUP_LIMIT, filters) if wanted else []
        if roots:  # apart, so a long thread cannot crowd parents and replies out of the limit
            in_threads = self.pair.keyword.thread_neighbours([], _THREAD_LOOKUP_LIMIT, filters, threads=roots)
            # a lookup cut at the limit cannot tell a long thread from a short one: no mates then
            mates = len(in_threads) < _THREAD_LOOKUP_LIMIT
            found = list(dict.fromkeys([*found, *in_threads])) if mates else found
        payloads.update(self.pair.vector.payloads([c for c in found if c not in payloads]))
        if admit is not None:  # as every other candidate: only what the store lets the caller read now
            ok = _admitted(found, payloads, admit)
            found = [c for c in found if c in ok]
        first: dict[str, tuple[int, str, dict[str, Any]]] = {}  # message id -> its first chunk
        for c in found:
            p = payloads.get(c)
            if p and p.get("message_id") and (p["message_id"] not in first or p["ordinal"] < first[p["message_id"]][0]):
                first[p["message_id"]] = (p["ordinal"], c, p)
        replies: dict[str, set[str]] = {}
        thread: dict[str, set[str]] = {}
        for _, c, p in first.values():
            if p.get("reply_to"):
                replies.setdefault(p["reply_to"], set()).add(str(p.get("unit") or c))
            if p.get("thread"):
                thread.setdefault(p["thread"], set()).add(str(p.get("unit") or c))
        out: dict[str, dict[str, str]] = {}
        for u, p in keys.items():
            mates_of = thread.get(p.get("thread") or "", set()) if mates else set()
            near = dict.fromkeys(mates_of if len(mates_of) <= THREAD_MATES_MAX else (), "mate")
            near.update(dict.fromkeys(replies.get(p.get("message_id") or "", ()), "near"))
            parent = first.get(p.get("reply_to") or "")
            if parent:
                near[str(parent[2].get("unit") or parent[1])] = "near"
            near.pop(u, None)
            if near:
                out[u] = near
        return out


def _admitted(chunk_ids: Iterable[str], payloads: dict[str, dict[str, Any]],
              admit: Callable[[set[str]], set[str]]) -> set[str]:
    """The chunks (of those with a payload) whose document `admit` lets the caller read, and every
    document whose text the chunk holds besides (an AsciiDoc page's `included` files: one withheld
    or narrowed since the page was indexed takes the page's chunks with it)."""
    docs = {c: (doc_id(payloads[c]["source"], payloads[c]["external_id"]), *(payloads[c].get("included") or ()))
            for c in chunk_ids if c in payloads}
    allowed = admit({d for ds in docs.values() for d in ds})
    return {c for c, ds in docs.items() if all(d in allowed for d in ds)}


def _above_floor(ranked: list[Any], floor: float | None) -> tuple[list[Any], str | None]:
    """The fused units scoring at least `floor` (None: all), and why none is left where none is."""
    if floor is None:
        return ranked, None
    kept = [r for r in ranked if r.score >= floor]
    return kept, (f"no result above the score floor {floor}" if ranked and not kept else None)


def _attribution_trace(attr: Attribution, attributed: dict[str, tuple[str, float]],
                       missing_fields: list[str]) -> dict[str, Any]:
    """What the trace shows of an attribution line: what was read from it, what it found, and
    whether the generation's keyword index can answer it at all (`index_outdated`: written by an
    older release without the `author` field; `bindery reindex` rebuilds it)."""
    best = sorted(attributed.items(), key=lambda kv: -kv[1][1])[:5]
    out = {"names": list(attr.names), "address": attr.address, "message_id": attr.message_id,
           "day": attr.day.isoformat() if attr.day else None,
           "time": f"{attr.time[0]:02d}:{attr.time[1]:02d}" if attr.time else None, "offset_minutes": attr.offset,
           "units": len(attributed), "best": [{"unit_id": u, "evidence": round(e, 3)} for u, (_, e) in best]}
    if "author" in missing_fields:
        out["index_outdated"] = True
    return out


def _hit(r: RankedUnit, payloads: dict[str, dict[str, Any]]) -> Hit | None:
    """The answer for one unit: its text (the unit's, else its one chunk's) and provenance from
    the unit's first chunk; None when a chunk is present in one index only (never served)."""
    chunk = payloads.get(r.chunk_id)
    head = payloads.get(r.unit_id) or chunk
    if chunk is None or head is None:
        return None
    text = head.get("unit_text") or (head["display_text"] if r.unit_id != r.chunk_id else chunk["display_text"])
    return Hit(r.chunk_id, chunk["external_id"], chunk["source"], round(r.score, 6), text,
               list(head.get("heading_path") or []), head.get("page"), head.get("uri"), r.ranks,
               unit_id=r.unit_id, chunk_text=chunk["display_text"], email=_email(chunk), title=chunk.get("title"))


def make_filters(principal: str | list[str] | None, sources: list[str] | None = None,
                 docs: list[str] | None = None, exclude_docs: list[str] | None = None, *,
                 known_sources: list[str] | None = None, allow_no_principal: bool = False) -> Filters:
    """Filters for one query. Fail closed: no principal is refused, unless the caller is
    authenticated and simply holds none (`allow_no_principal`: public documents only). An
    empty `sources` or `docs` list matches nothing; a source not in `known_sources` is an error."""
    if principal is None or principal == "" or (principal == [] and not allow_no_principal):
        raise QueryError("a principal is required: no identity, no results")
    principals = tuple([principal] if isinstance(principal, str) else principal)
    for value in (*principals, *(sources or ()), *(docs or ()), *(exclude_docs or ())):
        check_text(value)
    if sources and known_sources is not None:
        unknown = sorted(set(sources) - set(known_sources))
        if unknown:
            # the configured names are not listed: they can say what exists ("hr-layoffs-2025")
            raise QueryError(f"unknown source(s) {', '.join(map(repr, unknown))}")
    return Filters(principals=principals, sources=tuple(sources) if sources is not None else None,
                   docs=_both_forms(docs) if docs is not None else None, exclude_docs=_both_forms(exclude_docs or ()))


def _both_forms(paths: Iterable[str]) -> tuple[str, ...]:
    """Each path as given, composed (NFC) and decomposed (NFD): a file name stored decomposed,
    as macOS writes "café", matches a filter typed composed, as editors and browsers write it."""
    return tuple(dict.fromkeys(f for p in paths for f in (p, unicodedata.normalize("NFC", p),
                                                          unicodedata.normalize("NFD", p))))


class Admission:
    """Which documents the store lets one query's caller read *now* (unknown and deleted ones:
    none). Each document's current ACL is looked up once per query, whatever asks: the
    candidates before fusion, thread neighbours, the final hits."""

    def __init__(self, store: DocumentStore, filters: Filters) -> None:
        self.store = store
        self.principals = filters.principals or ()
        self.verdict: dict[str, bool] = {}

    def __call__(self, doc_ids: set[str]) -> set[str]:
        """`_Served.search`'s `admit`: of these doc ids, those the caller may read."""
        unknown = doc_ids - self.verdict.keys()
        if unknown:  # one primary-key SELECT
            acl_now = self.store.current_acls(unknown)
            self.verdict.update((d, allows(acl_now.get(d, ()), self.principals)) for d in unknown)
        return {d for d in doc_ids if self.verdict[d]}


def enforce_current_access(admit: Admission, result: SearchResult) -> SearchResult:
    """Drop hits whose document the store says is deleted (but for a moved file's old path
    while the file sits unchanged at its new one, `DocumentStore.current_acls`), unknown, or not readable by the
    caller now. An index that lags the store (a generation a rollback restored, a write that
    failed) can then never serve what the store no longer allows."""
    if not result.hits:
        return result
    allowed = admit({doc_id(h.source, h.doc) for h in result.hits})
    kept = [h for h in result.hits if doc_id(h.source, h.doc) in allowed]
    if len(kept) != len(result.hits):  # logged, never told the caller: a count is an oracle too
        log.info("dropped %d hit(s) the store no longer lets the caller read", len(result.hits) - len(kept))
        result.hits = kept
        if not kept:
            result.reason = "no matching chunks"
    return result


def redact_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """The trace a caller who is not an operator gets: each retriever's candidates by id, in
    rank order, without their raw scores. BM25 scores carry the corpus-wide document frequency
    of the query's words, documents the caller cannot read included, so a raw score would tell
    whether a word occurs in them."""
    return {**trace, **{r: [{"chunk_id": e["chunk_id"], "score": None} for e in trace.get(r, [])]
                        for r in ("dense", "sparse", "unit") if r in trace}}


def query_settings(cfg: BinderyConfig, neighbours: int | None) -> QueryConfig:
    """The configured query settings, with one request's neighbour expansion when it set one."""
    if neighbours is None or neighbours == cfg.query.neighbours:
        return cfg.query
    if not 0 <= neighbours <= MAX_NEIGHBOURS:
        raise QueryError(f"neighbours must be between 0 and {MAX_NEIGHBOURS}, got {neighbours}")
    return cfg.query.model_copy(update={"neighbours": neighbours})


def check_query(query: str, k: int) -> str:
    """The query text, stripped and checked (not empty, at most 4,000 characters), or a QueryError;
    also that k is within 1..200. The CLI calls it before loading anything."""
    if (problem := query_problem(query)) is not None:
        raise QueryError(problem)
    if not 1 <= k <= 200:
        raise QueryError(f"k must be between 1 and 200, got {k}")
    return query.strip()


class GenerationRetriever:
    """Serves one fixed generation from its published snapshot (used by evals and the gate)."""

    def __init__(self, cfg: BinderyConfig, gen: GenerationRecord, store: DocumentStore | None = None, *,
                 version: int | None = None):
        """`version`: the binding version that pointed at `gen`, for the trace (None: not the binding's)."""
        self.cfg = cfg
        self.served = _Served(cfg, gen, version)
        self._own_store = store is None
        self.store = store or DocumentStore(cfg.database_url, migrate=False)

    def search(self, query: str, k: int = 10, filters: Filters | None = None, *,
               neighbours: int | None = None) -> SearchResult:
        """`neighbours`: this request's neighbour expansion (None: `query.neighbours`)."""
        filters = filters or Filters()
        admit = Admission(self.store, filters)
        return enforce_current_access(admit, self.served.search(check_query(query, k), k, filters,
                                                                query_settings(self.cfg, neighbours), admit))

    def close(self) -> None:
        self.served.retire()
        if self._own_store:
            self.store.dispose()


# what the service sets up once, as it starts (its credentials check, its host and size guards):
# an edit of these takes a restart, as README says
_BOUND_AT_STARTUP = ("auth", "allowed_hosts", "max_body_bytes", "max_header_bytes")


def _stamp(path: str | None) -> tuple[int, int] | None:
    """(modification time, size) of the configuration file, None when there is none to follow."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class _StoreUnreadable(Exception):
    """The binding or generation rows could not be read: the store, not a generation, is down."""


class LiveRetriever:
    """Serves the live binding and follows it (see module docstring)."""

    def __init__(self, cfg: BinderyConfig, store: DocumentStore | None = None, *, follow: bool = True):
        self.cfg = cfg
        self.store = store or DocumentStore(cfg.database_url, migrate=False)
        self._current: _Served | None = None
        self._swap = threading.Lock()
        self.last_error: str | None = None
        # set while the follower cannot read the store: /readyz says not ready, with this fixed
        # phrase (a database error's text names hosts, users and SQL: it goes to the log only)
        self.store_error: str | None = None
        # ((binding version, generation), when to try again) of a generation that failed to open
        self._failed: tuple[tuple[int, int], float] | None = None
        self._stop = threading.Event()
        self._settings_stamp = _stamp(cfg.watched_path)
        self._pending_stamp: tuple[int, int] | None = None  # an edit seen once, not yet taken
        try:
            self.refresh()
        except _StoreUnreadable as e:  # at startup the caller sees the store's own error
            raise e.__cause__ or e from None
        if follow:
            threading.Thread(target=self._follow, name="binding-follower", daemon=True).start()

    @property
    def current(self) -> _Served | None:
        return self._current

    def refresh(self) -> bool:
        """Open the bound generation if the binding moved; True when a swap happened.

        Raises `_StoreUnreadable` only when the store itself cannot be read; a generation that
        cannot be opened keeps the old one serving and is reported as `last_error`."""
        with self._swap:
            try:
                b = self.store.get_binding() if self.store.initialised() else None
                cur = self._current
                moved = b is not None and not (cur is not None and cur.version == b.version
                                               and cur.gen.id == b.generation_id)
                gen = self.store.get_generation(b.generation_id) if moved and b is not None else None
            except Exception as e:
                raise _StoreUnreadable() from e
            if b is None:
                self.last_error = "no live binding yet: run `bindery sync` first"
                return False
            if not moved:
                return False
            if gen is None:
                self.last_error = f"binding points at missing generation {b.generation_id}"
                return False
            bound = (b.version, gen.id)
            if self._failed is not None and self._failed[0] == bound and time.monotonic() < self._failed[1]:
                return False  # it failed to open moments ago: retried after a pause, not every poll
            try:
                new = _Served(self.cfg, gen, b.version)
            except BindingError as e:  # keep serving the old generation; report it on /readyz
                self.last_error = str(e)
                self._failed = (bound, time.monotonic() + OPEN_RETRY_SECONDS)
                return False
            except Exception:  # a generation that cannot open is not an outage of the store
                if self._failed is None or self._failed[0] != bound:  # logged once per binding
                    log.exception("generation %s could not be opened; still serving the previous one", gen.id)
                self.last_error = (f"generation {gen.id} could not be opened "
                                   "(the service log has the cause)")
                self._failed = (bound, time.monotonic() + OPEN_RETRY_SECONDS)
                return False
            self._current = new
            self._failed = None
            self.last_error = None
        if cur is not None:
            cur.retire()
        return True

    def follow_settings(self) -> bool:
        """Take the query-time settings (`query:` but for what the service binds at startup:
        `auth`, `allowed_hosts` and the request limits) and the configured sources (what a request
        may filter by: a source added and synced while the service ran had its hits served, yet a
        filter naming it was refused as unknown, an operator pass) from the configuration file when it
        changed and then stayed unchanged for one poll (an editor writing the file in place
        leaves it half written for a moment, and an empty file loads as every default); True
        when they were taken. A file that no longer loads keeps the settings in use, said once
        in the log: the operator's edit did not take."""
        stamp = _stamp(self.cfg.watched_path)
        if stamp is None or stamp == self._settings_stamp:
            return False
        if stamp != self._pending_stamp:  # changed since the last poll: taken once it holds still
            self._pending_stamp = stamp
            return False
        self._settings_stamp = stamp
        try:
            loaded = load_config(self.cfg.watched_path)
        except BinderyError as e:
            log.warning("%s no longer loads; the query settings in use stay: %s", self.cfg.watched_path, e)
            return False
        bound = {k: getattr(self.cfg.query, k) for k in _BOUND_AT_STARTUP}
        if unapplied := [f"query.{k}" for k in _BOUND_AT_STARTUP if getattr(loaded.query, k) != bound[k]]:
            # a warning, not the info line below: an operator revoking a leaked key must see
            # that the revocation has not taken
            log.warning("%s changed in %s, which takes effect only when the service restarts: it still "
                        "runs with the old value (a removed API key still works until then)",
                        ", ".join(unapplied), self.cfg.watched_path)
        self.cfg = self.cfg.model_copy(update={"query": loaded.query.model_copy(update=bound),
                                               "sources": loaded.sources})
        log.info("query settings reloaded from %s", self.cfg.watched_path)
        return True

    def _follow(self) -> None:
        while not self._stop.wait(self.cfg.query.poll_seconds):
            try:
                self.follow_settings()
                self.refresh()
            except _StoreUnreadable:
                if self.store_error is None:  # logged once per outage, not every poll
                    log.exception("the binding could not be read; not ready until it can")
                self.store_error = "the document store cannot be read (the service log has the cause)"
            except Exception:  # never let the follower die: the next poll tries again
                log.exception("following the binding failed; the next poll retries")
            else:
                if self.store_error is not None:
                    log.warning("the document store reads again")
                self.store_error = None

    def search(self, query: str, k: int = 10, filters: Filters | None = None, *,
               neighbours: int | None = None) -> SearchResult:
        """`neighbours`: this request's neighbour expansion (None: `query.neighbours`)."""
        q = check_query(query, k)
        qcfg = query_settings(self.cfg, neighbours)
        filters = filters or Filters()
        for _ in range(3):
            served = self._current
            if served is None:
                raise BindingError(self.last_error or "no live binding")
            if served.acquire():
                try:
                    admit = Admission(self.store, filters)
                    result = served.search(q, k, filters, qcfg, admit)
                finally:
                    served.release()
                return enforce_current_access(admit, result)
        raise BindingError("the live generation changed repeatedly during the request; retry")

    def close(self) -> None:
        self._stop.set()
        if self._current is not None:
            self._current.retire()
