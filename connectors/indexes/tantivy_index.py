"""Embedded keyword index on tantivy (BM25): the default `KeywordIndex` backend.

Schema (one tantivy document per chunk):

==============  ===========  ======  =================================================
field           tokenizer    stored  why
==============  ===========  ======  =================================================
``chunk_id``    raw          yes     the result id; the term deleted on upsert
``doc_id``      raw          yes     ``delete_docs`` deletes by this term
``source``      raw          no      filter
``external_id`` raw          no      filter (``docs`` / ``exclude_docs``)
``acl``         raw          no      multi-valued, one value per principal; filter
``text``        en_stem      no      BM25 over the chunk text (stemmed, lowercased)
``ident``       raw          no      multi-valued exact identifiers; SHOULD, idf-weighted
``heading``     en_stem      no      the chunk's heading path; BM25 x ``heading_weight``
``text_plain``  default      no      the same text unstemmed; BM25 x ``plain_weight``, added
``unit``        en_stem      no      on a unit's first chunk: the unit's words (``level="unit"``)
``unit_plain``  default      no      the same unit text unstemmed
``msgid``       raw          no      an e-mail's Message-ID (``thread_neighbours``)
``reply_to``    raw          no      the Message-ID it replies to (``thread_neighbours``)
``author``      default      no      an e-mail's From header as words (``by_author``)
``sent``        raw          no      its Date as ``d:YYYY-MM-DD`` days (``by_author``)
``thread``      raw          no      its thread's root Message-ID (``thread_neighbours``)
==============  ===========  ======  =================================================

Why both a stemmed and an unstemmed field: stemming helps where a query says "configuring" and the
text "configured" (the flex manual, e-mail), and hurts where exact words carry the meaning (option
descriptions in command references, PDFs); the sum of both was better than either on the dev sets
(docs/retrieval.md). ``heading``, ``text_plain``, ``unit``, ``unit_plain``, ``msgid`` and
``reply_to`` came with units (small-to-big) and thread neighbours; an index written before them
lacks them and still opens: its chunk search reads ``text`` alone, and its unit search and thread
lookups are empty. ``author``, ``sent`` and ``thread`` came later still (attribution lines,
whole threads): without them ``by_author`` is empty and thread lookups find parents and replies
only.

``ident`` design: each token from :func:`connectors.analysis.identifiers` is added as its own
value of a field using tantivy's built-in ``raw`` tokenizer, so every value is exactly one term
and a ``TermQuery`` matches it exactly. A registered custom analyser (whitespace + lowercase)
would do the same, but tantivy does not persist custom analysers: every process opening the
index, including a read-only query service, would have to register it first or fail. With
``raw`` the analysis lives once, in Python (`connectors.analysis`), shared by ingestion, query
and the Elasticsearch adapter, and the on-disk index needs nothing but tantivy to be read.

Concurrency: tantivy allows one ``IndexWriter`` per index directory (in any process) and any
number of readers. The writer is created lazily on the first write, so an instance that only
searches never takes the lock; ``read_only=True`` forbids writes outright. A second writer is
reported as :class:`IndexError_`, not a raw ``LockBusy``.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import tantivy

from connectors.analysis import IDENT_BOOST, identifiers, proximity_pairs, sanitize_query
from connectors.errors import IndexError_, IndexUnreadable, QueryError
from connectors.indexes.base import PUBLIC, Filters, IndexRecord, ScoredId, SearchLevel

__all__ = ["IDENT_BOOST", "TantivyIndex", "build_schema"]

log = logging.getLogger(__name__)


_FIELDS = ("chunk_id", "doc_id", "source", "external_id", "acl", "text", "ident")
# absent from indexes written before units
_UNIT_FIELDS = ("heading", "text_plain", "unit", "unit_plain", "msgid", "reply_to")
_MAIL_FIELDS = ("author", "sent", "thread")  # absent from indexes written before attribution lines counted
_DAY_BOOST = (3.0, 1.0, 1.0)  # the attributed day, the day before, the day after (const scores)
# the analysers of tantivy's built-in `en_stem` and `default` tokenizers, to turn query words into
# the terms a phrase query needs (a phrase query is not analysed)
_STEM = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40))
         .filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.stemmer("english")).build())
_PLAIN = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40))
          .filter(tantivy.Filter.lowercase()).build())
_STEMMED = frozenset({"text", "heading", "unit"})


def _indexable(text: str) -> bool:
    """Whether any word of `text` survives the fields' analysers. Tantivy drops every term of
    40 bytes or more (14 CJK characters between two spaces is one such term), and a query of
    such words alone fails to parse ("Only excluding terms given"): it can match nothing."""
    return bool(text) and bool(_PLAIN.analyze(text))


_MIN_HEAP_PER_THREAD_MB = 16  # tantivy refuses tiny per-thread budgets; stay well above


def build_schema() -> tantivy.Schema:
    """The keyword schema described in the module docstring."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("doc_id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("source", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("external_id", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("acl", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", tokenizer_name="en_stem", index_option="position")
    sb.add_text_field("ident", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("heading", tokenizer_name="en_stem", index_option="position")
    sb.add_text_field("text_plain", tokenizer_name="default", index_option="position")
    sb.add_text_field("unit", tokenizer_name="en_stem", index_option="position")
    sb.add_text_field("unit_plain", tokenizer_name="default", index_option="position")
    sb.add_text_field("msgid", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("reply_to", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("author", tokenizer_name="default", index_option="freq")
    sb.add_text_field("sent", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("thread", tokenizer_name="raw", index_option="basic")
    return sb.build()


class TantivyIndex:
    """A tantivy index directory implementing the `KeywordIndex` protocol.

    Opens the index at ``path`` or creates it (unless ``read_only``, which requires an existing
    index). Writes are visible to searches only after :meth:`commit`; other instances (other
    processes included) see them after their own :meth:`reload`.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, writer_heap_mb: int = 64, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._heap_mb = max(writer_heap_mb, _MIN_HEAP_PER_THREAD_MB)
        self._writer: tantivy.IndexWriter | None = None
        self._dirty = False
        self._closed = False
        self._lock = threading.Lock()
        self._index = self._open()
        self._schema = self._index.schema

    # -- opening -------------------------------------------------------------------------

    def _open(self) -> tantivy.Index:
        try:
            exists = self.path.is_dir() and tantivy.Index.exists(str(self.path))
            if self.read_only and not exists:
                raise IndexError_(f"no tantivy index at {self.path} (opened read-only)")
            if exists:  # with the schema it was written with (one from before units has fewer fields)
                index = tantivy.Index.open(str(self.path))
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                index = tantivy.Index(build_schema(), str(self.path), reuse=True)
        except (OSError, ValueError) as exc:
            raise IndexUnreadable(f"cannot open tantivy index at {self.path}: {exc}") from exc
        _check_schema(index, self.path)
        self._has_units = all(_has_field(index, f) for f in _UNIT_FIELDS)
        self._has_authors = all(_has_field(index, f) for f in _MAIL_FIELDS)
        return index

    def _check_open(self) -> None:
        if self._closed:
            raise IndexError_(f"tantivy index at {self.path} is closed")

    def _writer_or_raise(self) -> tantivy.IndexWriter:
        """The index writer, created on first use (taking tantivy's per-directory lock)."""
        self._check_open()
        if self.read_only:
            raise IndexError_(f"tantivy index at {self.path} was opened read-only")
        with self._lock:
            if self._writer is None:
                threads = max(1, min(4, os.cpu_count() or 1, self._heap_mb // 16))
                try:
                    self._writer = self._index.writer(
                        heap_size=self._heap_mb * 1_000_000, num_threads=threads
                    )
                except ValueError as exc:
                    if "LockBusy" in str(exc):
                        raise IndexError_(
                            f"tantivy index at {self.path} already has a writer (one writer "
                            "per index, in any process); open it with read_only=True to search"
                        ) from exc
                    raise IndexError_(f"cannot open a writer on {self.path}: {exc}") from exc
            return self._writer

    # -- writes --------------------------------------------------------------------------

    def upsert(self, records: Iterable[IndexRecord]) -> int:
        """Add or replace chunks (by ``chunk_id``); returns how many records were written.

        Replacing deletes the chunk id's term before adding, so upserting the same chunk twice,
        even within one uncommitted batch, leaves one document.
        """
        writer = self._writer_or_raise()
        n = 0
        for rec in records:
            if not rec.chunk_id:
                raise IndexError_(f"record of doc {rec.doc_id!r} has an empty chunk_id")
            writer.delete_documents_by_term("chunk_id", rec.chunk_id)
            writer.add_document(_to_document(rec, units=self._has_units, authors=self._has_authors))
            n += 1
        self._dirty = self._dirty or n > 0
        return n

    def delete_docs(self, doc_ids: Iterable[str]) -> None:
        """Delete every chunk of the given documents (visible after :meth:`commit`)."""
        writer = self._writer_or_raise()
        for doc_id in doc_ids:
            writer.delete_documents_by_term("doc_id", doc_id)
            self._dirty = True

    def commit(self) -> None:
        """Publish pending writes durably, then reload this instance's searcher."""
        self._check_open()
        if self._writer is not None and self._dirty:
            try:
                self._writer.commit()
            except ValueError as exc:
                raise IndexError_(f"commit failed on {self.path}: {exc}") from exc
            self._dirty = False
        self.reload()

    def reload(self) -> None:
        """Make searches see the latest commit (by any writer, in any process)."""
        self._check_open()
        self._index.reload()

    # -- reads ---------------------------------------------------------------------------

    def search(self, query: str, k: int, filters: Filters, *, level: SearchLevel = "chunk",
               heading_weight: float = 0.0, plain_weight: float = 0.0, proximity_weight: float = 0.0,
               proximity_slop: int = 1) -> list[ScoredId]:
        """BM25 best first: at ``level="chunk"`` over ``text`` (plus ``heading_weight`` x the
        ``heading`` field) plus boosted exact ``ident`` matches; at ``level="unit"`` over the
        ``unit`` field, which only a unit's first chunk carries (one hit per unit). At either
        level ``plain_weight`` adds the unstemmed field's BM25 with that weight, and
        ``proximity_weight`` the BM25 of the query's adjacent word pairs as phrases with
        ``proximity_slop`` (:func:`connectors.analysis.proximity_pairs`), on the same fields.

        Filters are MUST clauses with zero score: they restrict, never re-rank. ``principals``
        of ``None`` raises :class:`QueryError` (fail closed); public chunks (ACL ``"*"``) always
        match. An empty ``sources``/``docs`` tuple matches nothing.
        """
        self._check_open()
        if filters.principals is None:
            raise QueryError("keyword search without a principal is refused (fail closed)")
        if k < 1:
            raise QueryError(f"k must be at least 1, got {k}")
        text = sanitize_query(query)
        if not _indexable(text) or filters.sources == () or filters.docs == ():
            return []
        if level == "unit" and not self._has_units:
            return []
        fields = ["unit"] if level == "unit" else ["text"]
        boosts = {}
        if level == "chunk" and heading_weight > 0 and self._has_units:
            fields.append("heading")
            boosts["heading"] = heading_weight
        if plain_weight > 0 and self._has_units:
            plain = f"{fields[0]}_plain"
            fields.append(plain)
            boosts[plain] = plain_weight
        try:
            relevance = self._index.parse_query(text, fields, field_boosts=boosts)
        except ValueError as exc:  # sanitize_query should make this unreachable
            raise QueryError(f"query could not be parsed: {exc}") from exc
        searcher = self._index.searcher()
        should = [(tantivy.Occur.Should, relevance)]
        if level == "chunk":
            should += [(tantivy.Occur.Should, q) for q in self._ident_queries(searcher, query)]
        if proximity_weight > 0:
            field_weights = {fields[0]: 1.0}
            if plain_weight > 0 and self._has_units:
                field_weights[f"{fields[0]}_plain"] = plain_weight
            should += [(tantivy.Occur.Should, q)
                       for q in self._proximity_queries(query, field_weights, proximity_weight, proximity_slop)]
        clauses = [(tantivy.Occur.Must, tantivy.Query.boolean_query(should)), *self._filter_clauses(filters)]
        result = searcher.search(tantivy.Query.boolean_query(clauses), limit=k, count=False)
        return [
            ScoredId(str(searcher.doc(addr).get_first("chunk_id")), float(score))
            for score, addr in result.hits
        ]

    def thread_neighbours(self, message_ids: Sequence[str], k: int, filters: Filters,
                          threads: Sequence[str] = ()) -> list[str]:
        """Chunk ids of messages whose own id or replied-to id is in `message_ids`, or whose
        thread root is in `threads` (see `KeywordIndex.thread_neighbours`), under `filters`
        (fail closed as `search`)."""
        self._check_open()
        if filters.principals is None:
            raise QueryError("keyword search without a principal is refused (fail closed)")
        ids = sorted({m for m in message_ids if m})
        roots = sorted({t for t in threads if t}) if self._has_authors else []
        if not (ids or roots) or not self._has_units or filters.matches_nothing:
            return []
        should = tantivy.Occur.Should
        any_of = [(should, self._term_filter(f, ids)) for f in ("msgid", "reply_to") if ids]
        if roots:
            any_of.append((should, self._term_filter("thread", roots)))
        clauses = [(tantivy.Occur.Must, tantivy.Query.boolean_query(any_of)), *self._filter_clauses(filters)]
        searcher = self._index.searcher()
        result = searcher.search(tantivy.Query.boolean_query(clauses), limit=k, count=False)
        return [str(searcher.doc(addr).get_first("chunk_id")) for _score, addr in result.hits]

    def by_author(self, names: Sequence[str], address: str | None, message_ids: Sequence[str],
                  days: Sequence[str], query: str, k: int, filters: Filters) -> list[ScoredId]:
        """Chunks of the e-mails an attribution line points at (`KeywordIndex.by_author`): a
        MUST on the writer (any name word, every address word, or the Message-ID), constant
        scores for the attributed day (3) or else the days beside it (1), plus the query's BM25.
        The date outranks the words: a prolific writer's message of that day comes first."""
        self._check_open()
        if filters.principals is None:
            raise QueryError("keyword search without a principal is refused (fail closed)")
        if not self._has_authors or filters.matches_nothing or not (names or address or message_ids):
            return []
        must, should = tantivy.Occur.Must, tantivy.Occur.Should
        who: list[tuple[tantivy.Occur, tantivy.Query]] = [
            (should, tantivy.Query.term_query(self._schema, "author", n, index_option="freq")) for n in names]
        if words := _words(address or ""):  # the default tokenizer's terms: alphanumeric runs, lowercased
            who.append((should, tantivy.Query.boolean_query(
                [(must, tantivy.Query.term_query(self._schema, "author", w, index_option="freq")) for w in words])))
        if message_ids:
            who.append((should, self._term_filter("msgid", message_ids)))
        clauses = [(must, tantivy.Query.boolean_query(who)), *self._filter_clauses(filters)]
        # a message scores its best day, not their sum: one sent at 19:04 -0800 is on the 14th
        # where it was written and the 15th in UTC, and summed it outranked the same-day reply
        # (a 45-patch series the evening before crowded the attributed message out)
        days_of = [tantivy.Query.const_score_query(
            tantivy.Query.term_query(self._schema, "sent", key, index_option="basic"), boost * 1000.0)
            for key, boost in zip(days, _DAY_BOOST, strict=False)]
        if days_of:
            clauses.append((should, tantivy.Query.disjunction_max_query(days_of, 0.0)))
        text = sanitize_query(query)
        if _indexable(text):
            try:
                clauses.append((should, self._index.parse_query(text, ["text"])))
            except ValueError as exc:
                raise QueryError(f"query could not be parsed: {exc}") from exc
        searcher = self._index.searcher()
        result = searcher.search(tantivy.Query.boolean_query(clauses), limit=k, count=False)
        return [ScoredId(str(searcher.doc(addr).get_first("chunk_id")), float(score))
                for score, addr in result.hits]

    def missing_fields(self) -> list[str]:
        """Fields of today's schema (`build_schema`) this index lacks (see `KeywordIndex`)."""
        self._check_open()
        return [f for f in (*_UNIT_FIELDS, *_MAIL_FIELDS) if not _has_field(self._index, f)]

    def _filter_clauses(self, filters: Filters) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """The filters as zero-score MUST / MUST NOT clauses (ACL: public chunks always pass)."""
        principals = sorted({PUBLIC, *(filters.principals or ())})
        clauses = [(tantivy.Occur.Must, self._term_filter("acl", principals))]
        if filters.sources is not None:
            clauses.append((tantivy.Occur.Must, self._term_filter("source", filters.sources)))
        if filters.docs is not None:
            clauses.append((tantivy.Occur.Must, self._term_filter("external_id", filters.docs)))
        if filters.exclude_docs:
            clauses.append((tantivy.Occur.MustNot, self._term_filter("external_id", filters.exclude_docs)))
        return clauses

    def _ident_queries(self, searcher: tantivy.Searcher, query: str) -> list[tantivy.Query]:
        """One query per identifier in ``query`` that occurs in the index.

        Each scores ``IDENT_BOOST * idf`` (BM25's idf, no length normalisation): rare
        identifiers weigh more, and a long chunk that mentions many identifiers is not
        penalised for it the way BM25's field-length norm would. This is how Elasticsearch
        scores a ``term`` query on a ``keyword`` field (norms off), so both backends agree.
        """
        n_docs = searcher.num_docs
        out = []
        for ident in identifiers(query):
            df = searcher.doc_freq("ident", ident)
            if df == 0:
                continue
            idf = math.log(1.0 + (max(n_docs - df, 0) + 0.5) / (df + 0.5))
            term = tantivy.Query.term_query(self._schema, "ident", ident, index_option="basic")
            out.append(tantivy.Query.const_score_query(term, IDENT_BOOST * idf))
        return out

    def _proximity_queries(self, query: str, field_weights: dict[str, float], weight: float,
                           slop: int) -> list[tantivy.Query]:
        """One boosted phrase query per (field, adjacent word pair) of ``query``; the words
        analysed as the field analyses text (stemmed or not) and kept at their distance."""
        out: list[tantivy.Query] = []
        pairs = proximity_pairs(query)
        for field, fw in field_weights.items():
            analyzer = _STEM if field in _STEMMED else _PLAIN
            for a, b, gap in pairs:
                ta, tb = analyzer.analyze(a), analyzer.analyze(b)
                if len(ta) != 1 or len(tb) != 1:  # a word over tantivy's length limit, dropped
                    continue
                phrase = tantivy.Query.phrase_query(self._schema, field, [(0, ta[0]), (gap, tb[0])], slop)
                out.append(tantivy.Query.boost_query(phrase, weight * fw))
        return out

    def _term_filter(self, field: str, values: Iterable[str]) -> tantivy.Query:
        """Documents whose ``field`` holds any of ``values``, contributing no score."""
        terms = tantivy.Query.term_set_query(self._schema, field, list(values))
        return tantivy.Query.const_score_query(terms, 0.0)

    def chunk_ids(self) -> set[str]:
        """Every live chunk id, read from the term dictionary (fast at 50k+ chunks).

        The ``filter_query`` makes tantivy count only live documents, so chunk ids whose
        documents were deleted but not yet merged away are left out.
        """
        self._check_open()
        searcher = self._index.searcher()
        terms = searcher.terms_with_prefix("chunk_id", "", filter_query=tantivy.Query.all_query())
        return {term for term, count in terms if count > 0}

    def acls(self) -> dict[str, tuple[str, ...]]:
        """chunk id -> its indexed ACL (sorted), for `bindery verify`.

        ``acl`` is indexed, not stored, so this reads the term dictionary: one term query per
        distinct principal (few), collecting the chunk ids that carry it. A chunk with an
        empty ACL carries no term and maps to ``()``.
        """
        self._check_open()
        searcher = self._index.searcher()
        out: dict[str, list[str]] = {c: [] for c in self.chunk_ids()}
        if not out:
            return {}
        live = tantivy.Query.all_query()
        for principal, count in searcher.terms_with_prefix("acl", "", filter_query=live):
            if count <= 0:
                continue
            q = tantivy.Query.term_query(self._schema, "acl", principal, index_option="basic")
            for _score, addr in searcher.search(q, limit=len(out), count=False).hits:
                out.setdefault(str(searcher.doc(addr).get_first("chunk_id")), []).append(principal)
        return {c: tuple(sorted(p)) for c, p in out.items()}

    def count(self) -> int:
        """Live (committed, not deleted) chunks as of the last reload."""
        self._check_open()
        return int(self._index.searcher().num_docs)

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the writer (and its lock); idempotent. Uncommitted changes are rolled back,
        and any later use of this instance raises :class:`IndexError_`."""
        with self._lock:
            writer, self._writer = self._writer, None
            self._closed = True
        if writer is None:
            return
        if self._dirty:
            log.warning("closing tantivy index %s with uncommitted changes: rolled back", self.path)
            writer.rollback()
            self._dirty = False
        writer.wait_merging_threads()  # consumes the writer, releasing the directory lock

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _to_document(rec: IndexRecord, *, units: bool = True, authors: bool = True) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_text("chunk_id", rec.chunk_id)
    doc.add_text("doc_id", rec.doc_id)
    doc.add_text("source", rec.source)
    doc.add_text("external_id", rec.external_id)
    for principal in rec.acl:  # an empty ACL matches no filter: nobody can see the chunk
        doc.add_text("acl", principal)
    doc.add_text("text", rec.text)
    for ident in identifiers(rec.text):
        doc.add_text("ident", ident)
    if units:  # an index written before units has no such fields
        doc.add_text("heading", rec.heading)
        doc.add_text("text_plain", rec.text)
        if rec.unit_text is not None:
            doc.add_text("unit", rec.unit_text)
            doc.add_text("unit_plain", rec.unit_text)
        if rec.message_id:
            doc.add_text("msgid", rec.message_id)
        if rec.reply_to:
            doc.add_text("reply_to", rec.reply_to)
    if authors:  # nor one written before attribution lines counted
        if rec.author:
            doc.add_text("author", rec.author)
        for key in rec.sent:
            doc.add_text("sent", key)
        if rec.thread:
            doc.add_text("thread", rec.thread)
    return doc


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def _has_field(index: tantivy.Index, field: str) -> bool:
    try:
        tantivy.Query.term_query(index.schema, field, "x")
    except ValueError:
        return False
    return True


def _check_schema(index: tantivy.Index, path: Path) -> None:
    """Refuse an index at ``path`` that lacks one of our fields (someone else's index)."""
    for field in _FIELDS:
        try:
            tantivy.Query.term_query(index.schema, field, "x")
        except ValueError as exc:
            raise IndexError_(
                f"tantivy index at {path} has no field {field!r}: not a Bindery keyword index"
            ) from exc
