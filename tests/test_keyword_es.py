"""ElasticsearchIndex against tests/es_stub.py: the request contract, and the protocol semantics.

No live cluster is involved: the stub follows the documented REST API and records requests, so
these tests pin what the adapter sends (mappings, analysers, bulk lines, bool filters, atomic
alias moves) and check the protocol end to end through the real ``elasticsearch`` client.
Relevance itself (BM25, stemming) is not tested here: the stub scores by word overlap.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.analysis import identifiers
from connectors.errors import IndexError_, QueryError
from connectors.indexes import elasticsearch_index as es_mod
from connectors.indexes.base import Filters, IndexRecord, ScoredId
from connectors.indexes.elasticsearch_index import ElasticsearchIndex
from connectors.indexes.tantivy_index import TantivyIndex
from tests.es_stub import ESStub, StubIndex


def rec(
    chunk_id: str,
    text: str,
    *,
    doc: str | None = None,
    source: str = "docs",
    acl: tuple[str, ...] = ("*",),
) -> IndexRecord:
    doc = doc or f"d-{chunk_id}"
    return IndexRecord(chunk_id, doc, source, f"{doc}.md", text, acl=acl)


def ids(hits: list[ScoredId]) -> list[str]:
    return [h.chunk_id for h in hits]


@pytest.fixture
def stub() -> Iterator[ESStub]:
    with ESStub() as server:
        yield server


@pytest.fixture
def index(stub: ESStub) -> Iterator[ElasticsearchIndex]:
    ix = ElasticsearchIndex(stub.url, "chunks_g1_abc123", timeout=5)
    yield ix
    ix.close()


def test_create_index_sends_explicit_mappings_and_analysis(
    index: ElasticsearchIndex, stub: ESStub
) -> None:
    assert index.create_index() is True
    assert index.create_index() is False
    puts = stub.calls("PUT", "/chunks_g1_abc123")
    assert len(puts) == 1
    body = puts[0].body
    props = body["mappings"]["properties"]
    assert body["mappings"]["dynamic"] == "strict"
    assert props["text"] == {"type": "text", "analyzer": "bindery_english"}
    assert props["ident"] == {"type": "keyword", "normalizer": "bindery_lowercase"}
    for name in ("chunk_id", "doc_id", "source", "external_id", "acl"):
        assert props[name] == {"type": "keyword"}  # case-sensitive, like tantivy's raw fields
    analysis = body["settings"]["analysis"]
    analyzer = analysis["analyzer"]["bindery_english"]
    assert analyzer["tokenizer"] == "standard"
    assert "lowercase" in analyzer["filter"]
    stemmers = [analysis["filter"][f]["language"] for f in analyzer["filter"] if f != "lowercase"]
    assert stemmers == ["possessive_english", "porter2"]
    assert analysis["normalizer"]["bindery_lowercase"]["filter"] == ["lowercase"]
    assert body["settings"]["number_of_shards"] == 1


def test_client_speaks_the_v9_compatibility_media_type(
    index: ElasticsearchIndex, stub: ESStub
) -> None:
    index.upsert([rec("a", "valve")])
    bulk = stub.calls(None, "/_bulk")[0]
    assert "compatible-with=9" in bulk.headers["accept"]
    assert bulk.headers["content-type"].startswith("application/vnd.elasticsearch+x-ndjson")


def test_bulk_lines_are_well_formed_with_chunk_id_as_id(
    index: ElasticsearchIndex, stub: ESStub
) -> None:
    text = "Replace XR-4471 when ERR-0x1F shows"
    assert index.upsert([rec("c1", text, acl=("user:bob", "group:eng")), rec("c2", "b")]) == 2
    (bulk,) = stub.calls(None, "/_bulk")
    lines = bulk.body
    assert len(lines) == 4
    assert lines[0] == {"index": {"_index": "chunks_g1_abc123", "_id": "c1"}}
    assert lines[1] == {
        "chunk_id": "c1",
        "doc_id": "d-c1",
        "source": "docs",
        "external_id": "d-c1.md",
        "acl": ["user:bob", "group:eng"],
        "text": text,
        "ident": identifiers(text),
        "heading": "",
        "text_plain": text,
    }
    assert lines[2] == {"index": {"_index": "chunks_g1_abc123", "_id": "c2"}}


def test_upsert_idempotent_and_visible_only_after_commit(index: ElasticsearchIndex) -> None:
    index.upsert([rec("a", "valve alpha"), rec("a", "valve alpha")])
    assert index.count() == 0  # not refreshed yet
    index.commit()
    index.upsert([rec("a", "valve beta")])
    index.commit()
    assert index.count() == 1
    assert index.chunk_ids() == {"a"}
    assert ids(index.search("beta", 5, Filters())) == ["a"]
    assert index.search("alpha", 5, Filters()) == []


def test_search_request_contract(index: ElasticsearchIndex, stub: ESStub) -> None:
    index.upsert([rec("a", "valve")])
    index.commit()
    filters = Filters(
        principals=("user:bob",), sources=("docs",), docs=("a.md",), exclude_docs=("x.md",)
    )
    index.search("How to fix XR-4471?", 7, filters)
    (req,) = stub.calls("POST", "/_search")
    assert req.path == "/chunks_g1_abc123/_search"
    assert req.body["size"] == 7
    assert req.body["_source"] is False
    bool_ = req.body["query"]["bool"]
    assert bool_["minimum_should_match"] == 1
    assert bool_["should"][0] == {"match": {"text": {"query": "how to fix xr 4471"}}}
    assert bool_["should"][1:] == [
        {"term": {"ident": {"value": "xr-4471", "boost": es_mod.IDENT_BOOST}}},
        {"term": {"ident": {"value": "xr4471", "boost": es_mod.IDENT_BOOST}}},
    ]
    assert bool_["filter"] == [
        {"terms": {"acl": ["*", "user:bob"]}},
        {"terms": {"source": ["docs"]}},
        {"terms": {"external_id": ["a.md"]}},
    ]
    assert bool_["must_not"] == [{"terms": {"external_id": ["x.md"]}}]
    assert "must" not in bool_
    assert req.params["allow_partial_search_results"] == "false"


def test_partial_results_are_an_error_not_a_short_answer(index: ElasticsearchIndex, stub: ESStub) -> None:
    """A failed shard's hits are missing from the answer: taken as whole, a short keyword list
    would be fused as holding every match and `verify` would see the shard's chunks as lost.
    Every search asks Elasticsearch to fail instead; a partial answer that still comes back
    (a timed-out shard, a proxy that drops the flag) is refused by the adapter itself."""
    index.upsert([rec("a", "valve"), rec("b", "pump")])
    index.commit()
    stub.failed_shard = True
    with pytest.raises(IndexError_, match="search_phase_execution_exception"):
        index.search("valve", 5, Filters())
    original = stub.handle

    def dropping_the_flag(method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        return original(method, path, {k: v for k, v in params.items() if k != "allow_partial_search_results"}, body)

    stub.handle = dropping_the_flag  # type: ignore[method-assign]
    for read in (lambda: index.search("valve", 5, Filters()), index.chunk_ids, index.acls,
                 lambda: index.thread_neighbours(["<m@x>"], 5, Filters()),
                 lambda: index.by_author(["ann"], None, [], [], "valve", 5, Filters())):
        with pytest.raises(IndexError_, match=r"partial results \(1 of 2 shards failed\)"):
            read()
    stub.failed_shard = False
    assert ids(index.search("valve", 5, Filters())) == ["a"]


def test_fail_closed_and_blank_queries_send_nothing(
    index: ElasticsearchIndex, stub: ESStub
) -> None:
    before = len(stub.requests)
    with pytest.raises(QueryError):
        index.search("valve", 5, Filters(principals=None))
    with pytest.raises(QueryError):
        index.search("valve", 0, Filters())
    assert index.search("  (*) ", 5, Filters()) == []
    assert index.search("valve", 5, Filters(docs=())) == []
    assert len(stub.requests) == before


def test_identifier_term_matches_case_insensitively(index: ElasticsearchIndex) -> None:
    index.upsert([rec("long", "intro " * 50 + "XR-4471 " + "outro " * 50), rec("b", "nothing")])
    index.commit()
    assert ids(index.search("xr4471", 5, Filters())) == ["long"]
    assert ids(index.search("XR-4471", 5, Filters()))[0] == "long"


def test_delete_docs_refreshes_first_then_deletes_by_doc_id(
    index: ElasticsearchIndex, stub: ESStub
) -> None:
    index.upsert([rec("a1", "valve", doc="A"), rec("a2", "pump", doc="A"), rec("b", "valve")])
    # no commit: the delete must still catch chunks written earlier in this batch
    index.delete_docs(["A", "A"])
    paths = [(r.method, r.path) for r in stub.requests[-2:]]
    assert paths == [
        ("POST", "/chunks_g1_abc123/_refresh"),
        ("POST", "/chunks_g1_abc123/_delete_by_query"),
    ]
    dbq = stub.requests[-1]
    assert dbq.body == {"query": {"terms": {"doc_id": ["A"]}}}
    assert dbq.params["conflicts"] == "proceed"
    index.commit()
    assert index.chunk_ids() == {"b"}
    before = len(stub.requests)
    index.delete_docs([])
    assert len(stub.requests) == before  # nothing to delete: no request


def test_chunk_ids_pages_with_search_after(
    index: ElasticsearchIndex, stub: ESStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(es_mod, "_PAGE", 3)
    index.upsert([rec(f"c{i}", "valve") for i in range(7)])
    index.commit()
    assert index.chunk_ids() == {f"c{i}" for i in range(7)}
    pages = stub.calls("POST", "/_search")
    assert len(pages) == 3
    assert "search_after" not in pages[0].body
    assert pages[1].body["search_after"] == ["c2"]
    assert pages[2].body["search_after"] == ["c5"]
    assert all(p.body["sort"] == [{"chunk_id": "asc"}] for p in pages)


def test_filters_end_to_end(index: ElasticsearchIndex) -> None:
    index.upsert(_filter_corpus())
    index.commit()
    for filters, expected in _filter_cases():
        assert set(ids(index.search("valve", 10, filters))) == expected, filters


def test_filters_mean_the_same_in_tantivy_and_elasticsearch(
    index: ElasticsearchIndex, tmp_path: Path
) -> None:
    tantivy_ix = TantivyIndex(tmp_path / "kw")
    for ix in (index, tantivy_ix):
        ix.upsert(_filter_corpus())
        ix.commit()
    for filters, _ in _filter_cases():
        es_hits = set(ids(index.search("valve", 10, filters)))
        assert es_hits == set(ids(tantivy_ix.search("valve", 10, filters))), filters
    tantivy_ix.close()


def test_point_alias_is_one_atomic_request(stub: ESStub) -> None:
    g1 = ElasticsearchIndex(stub.url, "chunks_g1")
    g2 = ElasticsearchIndex(stub.url, "chunks_g2")
    g1.upsert([rec("old", "valve")])
    g2.upsert([rec("new", "valve")])
    g1.commit()
    g2.commit()
    assert g1.point_alias("live", "chunks_g1") == []
    assert stub.calls("POST", "/_aliases")[-1].body == {
        "actions": [{"add": {"index": "chunks_g1", "alias": "live"}}]
    }
    live = ElasticsearchIndex(stub.url, "live")
    assert ids(live.search("valve", 5, Filters())) == ["old"]

    assert g1.point_alias("live", "chunks_g2") == ["chunks_g1"]
    flips = stub.calls("POST", "/_aliases")
    assert len(flips) == 2
    assert flips[-1].body == {
        "actions": [
            {"remove": {"index": "chunks_g1", "alias": "live"}},
            {"add": {"index": "chunks_g2", "alias": "live"}},
        ]
    }
    assert g1.alias_targets("live") == ["chunks_g2"]
    assert ids(live.search("valve", 5, Filters())) == ["new"]
    assert live.count() == 1
    g2.point_alias("live")  # re-pointing at the current target is a no-op add
    assert g1.alias_targets("live") == ["chunks_g2"]
    for ix in (g1, g2, live):
        ix.close()


def test_errors_are_index_errors(stub: ESStub) -> None:
    with pytest.raises(IndexError_, match="invalid Elasticsearch index name"):
        ElasticsearchIndex(stub.url, "Chunks")
    missing = ElasticsearchIndex(stub.url, "nope")
    with pytest.raises(IndexError_, match="index_not_found_exception"):
        missing.search("valve", 5, Filters())
    missing.drop_index()  # missing is fine
    down = ElasticsearchIndex("http://127.0.0.1:9", "chunks", timeout=1)
    with pytest.raises(IndexError_, match="cannot reach Elasticsearch"):
        down.count()
    for ix in (missing, down):
        ix.close()


def test_rejected_bulk_items_raise_index_error(stub: ESStub) -> None:
    # an index created by someone else, whose strict mapping lacks our fields
    stub.indices["legacy"] = StubIndex({"dynamic": "strict", "properties": {"text": {}}}, {})
    legacy = ElasticsearchIndex(stub.url, "legacy")
    with pytest.raises(IndexError_, match="strict_dynamic_mapping_exception"):
        legacy.upsert([rec("a", "valve")])
    legacy.close()


def test_stub_refuses_another_compatibility_major(stub: ESStub) -> None:
    req = urllib.request.Request(
        stub.url + "/", headers={"Accept": "application/vnd.elasticsearch+json; compatible-with=8"}
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 400
    assert err.value.headers["X-Elastic-Product"] == "Elasticsearch"


def test_drop_index(index: ElasticsearchIndex, stub: ESStub) -> None:
    index.upsert([rec("a", "valve")])
    index.drop_index()
    assert "chunks_g1_abc123" not in stub.indices
    index.upsert([rec("a", "valve")])  # recreated on the next write
    assert "chunks_g1_abc123" in stub.indices


def _filter_corpus() -> list[IndexRecord]:
    return [
        rec("pub", "valve manual", doc="p"),
        rec("bob", "valve secrets", doc="b", acl=("user:bob",)),
        rec("team", "valve plans", doc="t", acl=("group:eng", "user:ann")),
        rec("other", "valve other", doc="o", source="wiki"),
        rec("nobody", "valve hidden", doc="n", acl=()),
        rec("case", "valve case", doc="c", acl=("User:Bob",)),
    ]


def _filter_cases() -> list[tuple[Filters, set[str]]]:
    return [
        (Filters(), {"pub", "other"}),
        (Filters(principals=()), {"pub", "other"}),
        (Filters(principals=("user:bob",)), {"pub", "other", "bob"}),
        (Filters(principals=("group:eng", "user:bob")), {"pub", "other", "bob", "team"}),
        (Filters(principals=("user:bob",), sources=("docs",)), {"pub", "bob"}),
        (Filters(principals=("user:bob",), docs=("b.md", "o.md")), {"bob", "other"}),
        (Filters(principals=("user:bob",), exclude_docs=("b.md",)), {"pub", "other"}),
        (Filters(sources=("nowhere",)), set()),
    ]


def test_an_index_created_before_units_gets_their_fields_and_keeps_working(stub: ESStub) -> None:
    import copy

    from connectors.indexes.elasticsearch_index import INDEX_MAPPINGS, index_settings

    old = copy.deepcopy(INDEX_MAPPINGS)
    for added in ("heading", "unit", "author", "sent", "thread"):
        del old["properties"][added]
    with ElasticsearchIndex(stub.url, "chunks_old", timeout=5) as setup:  # as an older release made it
        setup._client.indices.create(index="chunks_old", mappings=old, settings=index_settings())
    with ElasticsearchIndex(stub.url, "chunks_old", timeout=5) as ix:
        assert ix.missing_fields() == ["heading", "unit", "author", "sent", "thread"]
        ix.upsert([IndexRecord("a", "d", "docs", "d.md", "pump reset", heading="Pump",
                               unit_text="pump reset then prime", author="Joe <joe@x.org>",
                               sent=("d:2002-08-22",))])  # strict mapping: fails without the fields
        ix.commit()
        assert ids(ix.search("prime", 5, Filters(), level="unit")) == ["a"]
        assert ids(ix.by_author(["joe"], None, [], ["d:2002-08-22"], "pump", 5, Filters())) == ["a"]
        assert ix.missing_fields() == []  # the first write added them
    (put,) = stub.calls("PUT", "/chunks_old/_mapping")
    assert set(put.body["properties"]) == {"heading", "text_plain", "unit", "unit_plain", "msgid", "reply_to",
                                           "author", "sent", "thread"}


def test_proximity_pairs_become_match_phrase_clauses() -> None:
    # off by default; on, one match_phrase per pair and field, the query's stopword gap widening the slop
    plain = es_mod.build_query("start the redis server", Filters(), plain_weight=1.0)
    assert plain is not None and not any("match_phrase" in c for c in plain["bool"]["should"])
    body = es_mod.build_query("start the redis server", Filters(), level="unit", plain_weight=0.5,
                              proximity_weight=0.4, proximity_slop=1)
    assert body is not None
    phrases = [c["match_phrase"] for c in body["bool"]["should"] if "match_phrase" in c]
    assert phrases == [
        {"unit": {"query": "start redis", "slop": 2, "boost": 0.4}},
        {"unit": {"query": "redis server", "slop": 1, "boost": 0.4}},
        {"unit_plain": {"query": "start redis", "slop": 2, "boost": pytest.approx(0.2)}},
        {"unit_plain": {"query": "redis server", "slop": 1, "boost": pytest.approx(0.2)}},
    ]
