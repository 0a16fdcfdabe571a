"""Index backends: the same behaviour over every backend of a kind (tests/backends.py), then what
only the server backends do (Qdrant server: payload indexes, API key, on-disk vectors and
quantisation, one-call alias moves, drop; Elasticsearch: bulk retries on 429, a missing index
counts 0). Server backends run against their REST stubs through the official clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.config import config_from_dict
from connectors.errors import ConfigError, IndexError_, QueryError
from connectors.indexes import elasticsearch_index as es_mod
from connectors.indexes.base import Filters, IndexRecord, KeywordIndex, VectorIndex
from connectors.indexes.elasticsearch_index import ElasticsearchIndex
from connectors.indexes.qdrant_index import QdrantIndex
from connectors.store import GenerationRecord
from tests.backends import KEYWORD_BACKENDS, VECTOR_BACKENDS, open_keyword, open_vector
from tests.es_stub import ESStub, StubError
from tests.qdrant_stub import QdrantStub

pytestmark = pytest.mark.backends


def _rec(i: int, doc: str, *, acl: tuple[str, ...] = ("*",), source: str = "docs",
         vector: list[float] | None = None) -> IndexRecord:
    return IndexRecord(f"{i:032x}", doc, source, f"{doc}.md", f"chunk {i} of {doc} about batteries",
                       vector=vector or [1.0, float(i), 0.5], acl=acl, payload={"display_text": f"text {i}"})


RECORDS = [_rec(1, "a"), _rec(2, "a"), _rec(3, "b", acl=("alice",)), _rec(4, "c", source="wiki"),
           _rec(5, "d", acl=())]


@pytest.fixture(params=VECTOR_BACKENDS)
def vector(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    with open_vector(request.param, tmp_path, dim=3) as index:
        yield index


@pytest.fixture(params=KEYWORD_BACKENDS)
def keyword(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeywordIndex]:
    with open_keyword(request.param, tmp_path) as index:
        yield index


def _ids(hits: list[Any]) -> set[str]:
    return {h.chunk_id for h in hits}


# -- the same behaviour on every vector backend ------------------------------------------------


def test_vector_upsert_is_idempotent_and_delete_removes_whole_documents(vector: VectorIndex) -> None:
    assert vector.count() == 0 and vector.chunk_ids() == set()
    assert vector.upsert(RECORDS) == 5
    vector.upsert(RECORDS)  # a retry overwrites, never duplicates
    assert vector.count() == 5 and vector.chunk_ids() == {r.chunk_id for r in RECORDS}
    vector.delete_docs(["a", "unknown"])
    assert vector.chunk_ids() == {r.chunk_id for r in RECORDS if r.doc_id != "a"}


def test_vector_filters_and_fail_closed(vector: VectorIndex) -> None:
    vector.upsert(RECORDS)
    q = [1.0, 2.0, 0.5]
    public = _ids(vector.search(q, 10, Filters(principals=())))
    assert public == {RECORDS[0].chunk_id, RECORDS[1].chunk_id, RECORDS[3].chunk_id}  # empty ACL: nobody
    assert RECORDS[2].chunk_id in _ids(vector.search(q, 10, Filters(principals=("alice",))))
    assert _ids(vector.search(q, 10, Filters(principals=("*",), sources=("wiki",)))) == {RECORDS[3].chunk_id}
    assert _ids(vector.search(q, 10, Filters(principals=("*",), docs=("a.md",)))) == {
        RECORDS[0].chunk_id, RECORDS[1].chunk_id}
    assert RECORDS[0].chunk_id not in _ids(vector.search(q, 10, Filters(principals=("*",), exclude_docs=("a.md",))))
    best = vector.search([1.0, 2.0, 0.5], 1, Filters(principals=("*",)))
    assert [h.chunk_id for h in best] == [RECORDS[1].chunk_id]  # nearest by cosine
    with pytest.raises(QueryError):
        vector.search(q, 10, Filters(principals=None))


def test_keyword_missing_index_counts_zero_and_first_writes_create_it(keyword: KeywordIndex) -> None:
    assert keyword.count() == 0 and keyword.chunk_ids() == set()
    keyword.delete_docs(["a"])  # nothing to delete yet: no error (a first sync into an empty cluster)
    keyword.upsert(RECORDS)
    keyword.commit()
    assert keyword.count() == 5 and keyword.chunk_ids() == {r.chunk_id for r in RECORDS}


def test_keyword_by_author_finds_the_writers_messages_that_day_first_under_the_filters(
        keyword: KeywordIndex) -> None:
    def mail(i: int, author: str, sent: str, text: str, acl: tuple[str, ...] = ("*",)) -> IndexRecord:
        return IndexRecord(f"m{i}", f"dm{i}", "mail", f"m{i}.eml", text, acl=acl, message_id=f"<m{i}@x>",
                           author=author, sent=(sent,))

    keyword.upsert([
        mail(1, "Joseph S. Barrera III <joe@x.org>", "d:2002-08-20", "pump impeller question"),
        mail(2, "Joseph S. Barrera III <joe@x.org>", "d:2002-08-22", "unrelated lunch plans"),
        mail(3, "Someone Else <se@y.org>", "d:2002-08-22", "pump impeller answer"),
        mail(4, "Joseph Barrera <joe@x.org>", "d:2002-08-23", "pump secret", acl=("alice",)),
        IndexRecord("doc", "dd", "docs", "pump.md", "pump impeller manual"),
    ])
    keyword.commit()
    found = keyword.by_author(["joseph", "barrera"], None, [], ["d:2002-08-22", "d:2002-08-21", "d:2002-08-23"],
                              "pump impeller", 10, Filters())
    ids = [h.chunk_id for h in found]
    assert ids[0] == "m2" and set(ids) == {"m1", "m2"}  # that day first, never another writer, ACL kept
    assert "m4" in _ids(keyword.by_author(["barrera"], None, [], [], "pump", 10, Filters(principals=("alice",))))
    # an address must match whole; a quoted Message-ID finds its message whoever wrote it
    assert _ids(keyword.by_author([], "joe@x.org", [], [], "", 10, Filters())) == {"m1", "m2"}
    assert _ids(keyword.by_author([], "other@x.org", [], [], "", 10, Filters())) == set()
    assert _ids(keyword.by_author([], None, ["<m3@x>"], [], "", 10, Filters())) == {"m3"}
    assert _ids(keyword.by_author(["joseph"], None, [], [], "pump", 10, Filters(exclude_docs=("m1.eml",)))) == {"m2"}
    assert keyword.by_author([], None, [], ["d:2002-08-22"], "pump", 10, Filters()) == []  # nobody named
    with pytest.raises(QueryError):
        keyword.by_author(["joseph"], None, [], [], "pump", 10, Filters(principals=None))


def test_keyword_by_author_scores_a_message_by_its_best_day_not_the_sum_of_its_days(
        keyword: KeywordIndex) -> None:
    """A message written at 19:04 -0800 is on the 14th where it was written and the 15th in UTC:
    it holds both days' keys. Summed, the two days outranked the writer's other message of the
    attributed day whatever the words said (45 patches of an evening crowded out the reply a
    quoted attribution named: mail_lkml_quoted 0.937 -> 0.991 recall@10 once a message scored
    its best day)."""
    keyword.upsert([
        IndexRecord("late", "dl", "mail", "late.eml", "patch series cover letter", acl=("*",),
                    message_id="<late@x>", author="Joe Perches <joe@x.org>", sent=("d:2010-11-14", "d:2010-11-15")),
        IndexRecord("reply", "dr", "mail", "reply.eml", "consistent changelogs for a series", acl=("*",),
                    message_id="<reply@x>", author="Joe Perches <joe@x.org>", sent=("d:2010-11-15",)),
    ])
    keyword.commit()
    found = keyword.by_author(["joe", "perches"], None, [], ["d:2010-11-15", "d:2010-11-14", "d:2010-11-16"],
                              "consistent changelogs", 10, Filters())
    assert [h.chunk_id for h in found] == ["reply", "late"]


def test_keyword_search_finds_chinese_and_japanese_words_inside_a_clause(keyword: KeywordIndex) -> None:
    """Found by an adversarial pass: tantivy read a CJK clause as one token, so no query word
    matched it (Elasticsearch's standard tokenizer splits it); the index stage spaces the
    characters apart (`space_cjk`) and queries are spaced the same way."""
    from assets.index_stage import index_text
    from connectors.store import DocumentRecord

    def rec(i: int, doc: str, text: str) -> IndexRecord:
        d = DocumentRecord(doc_id=doc, source="docs", external_id=f"{doc}.md", uri="", content_hash="h",
                           fingerprint=None, size=None, acl=["*"], acl_hash="", metadata={},
                           source_modified_at=None, first_seen=0.0, last_seen=0.0, changed_at=0.0)
        return IndexRecord(f"{i:032x}", doc, "docs", f"{doc}.md", index_text(d, text), vector=[1.0, 0.0, 0.0],
                           acl=("*",), payload={})

    keyword.upsert([rec(1, "tokyo", "東京の浅草寺は古いお寺です。電車が便利です。"),
                    rec(2, "beijing", "北京是中华人民共和国的首都，也是全国的政治中心。"),
                    rec(3, "pumps", "The pump runs quietly while the tank fills.")])
    keyword.commit()
    public = Filters(principals=("*",))
    assert [h.chunk_id for h in keyword.search("浅草寺", 3, public)][:1] == [f"{1:032x}"]
    assert [h.chunk_id for h in keyword.search("中国的首都是哪里", 3, public)][:1] == [f"{2:032x}"]
    assert [h.chunk_id for h in keyword.search("pump tank", 3, public)] == [f"{3:032x}"]


def test_keyword_thread_neighbours_find_a_whole_thread_by_its_root(keyword: KeywordIndex) -> None:
    def mail(i: int, reply_to: str | None, thread: str, acl: tuple[str, ...] = ("*",)) -> IndexRecord:
        return IndexRecord(f"t{i}", f"dt{i}", "mail", f"t{i}.eml", "text", acl=acl, message_id=f"<t{i}@x>",
                           reply_to=reply_to, thread=thread)

    keyword.upsert([mail(1, None, "<t1@x>"), mail(2, "<t1@x>", "<t1@x>"), mail(3, "<t2@x>", "<t1@x>"),
                    mail(4, "<t3@x>", "<t1@x>", acl=("alice",)), mail(5, None, "<t5@x>")])
    keyword.commit()
    assert set(keyword.thread_neighbours(["<t3@x>"], 10, Filters())) == {"t3"}  # t4 replies to it: alice's only
    assert set(keyword.thread_neighbours([], 10, Filters(), threads=["<t1@x>"])) == {"t1", "t2", "t3"}
    assert set(keyword.thread_neighbours([], 10, Filters(principals=("alice",)), threads=["<t1@x>"])) == {
        "t1", "t2", "t3", "t4"}
    assert keyword.thread_neighbours([], 10, Filters(), threads=[]) == []


# -- Qdrant server specifics -------------------------------------------------------------------


# The stub speaks plain HTTP; qdrant-client rightly warns when an API key travels over it.
_insecure_key = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")


@pytest.fixture
def qdrant() -> Iterator[QdrantStub]:
    with QdrantStub(api_key="k-123") as stub:
        yield stub


@_insecure_key
def test_qdrant_server_creates_payload_indexes_and_passes_storage_settings(qdrant: QdrantStub) -> None:
    quant = {"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}}
    index = QdrantIndex(url=qdrant.url, api_key="k-123", collection="g2_abc", dim=3, on_disk=True,
                        quantization=quant)
    index.close()
    assert all(r.headers.get("api-key") == "k-123" for r in qdrant.requests)
    body = qdrant.calls("PUT", "/collections/g2_abc")[0].body
    assert body["vectors"] == {"size": 3, "distance": "Cosine", "on_disk": True}
    assert body["on_disk_payload"] is True and body["quantization_config"] == quant
    fields = {r.body["field_name"]: r.body["field_schema"] for r in qdrant.calls("PUT", "/collections/g2_abc/index")}
    assert fields == {"doc_id": "keyword", "source": "keyword", "external_id": "keyword", "acl": "keyword"}


@_insecure_key
def test_qdrant_server_refuses_a_wrong_api_key(qdrant: QdrantStub) -> None:
    with pytest.raises(Exception, match="401"):
        QdrantIndex(url=qdrant.url, api_key="wrong", collection="g1", dim=3)


@_insecure_key
def test_qdrant_alias_moves_in_one_call_and_drop_takes_the_alias_along(qdrant: QdrantStub) -> None:
    old = QdrantIndex(url=qdrant.url, api_key="k-123", collection="g1_old", dim=3)
    new = QdrantIndex(url=qdrant.url, api_key="k-123", collection="g2_new", dim=3)
    old.upsert(RECORDS[:1])
    new.upsert(RECORDS)
    old.point_alias("live")
    before = len(qdrant.calls("POST", "/collections/aliases"))
    new.point_alias("live")
    assert len(qdrant.calls("POST", "/collections/aliases")) == before + 1
    assert new.alias_target("live") == "g2_new"
    through_alias = QdrantIndex(url=qdrant.url, api_key="k-123", collection="live")
    assert through_alias.count() == 5  # readers may query through the alias
    assert new.drop() is True and new.drop() is False
    assert through_alias.count() == 0 and new.alias_target("live") is None
    for ix in (old, new, through_alias):
        ix.close()


def test_invalid_quantisation_is_refused_at_config_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="qdrant_quantization"):
        config_from_dict({"data_dir": str(tmp_path), "backends": {"qdrant_quantization": {"scalar": {"type": "int4"}}}})


# -- Elasticsearch: bulk writes retry on 429 with backoff -------------------------------------


class _Busy(ESStub):
    """The ES stub, answering 429 like a cluster whose write queue is full: `whole` bulk
    requests are refused outright, then `items` documents are rejected one by one."""

    def __init__(self, whole: int = 0, items: int = 0) -> None:
        super().__init__()
        self.whole, self.items = whole, items

    def handle(self, method: str, path: str, params: dict[str, str], body: Any) -> tuple[int, Any]:
        if path.endswith("/_bulk") and self.whole:
            self.whole -= 1
            raise StubError(429, "es_rejected_execution_exception", "rejected execution of bulk")
        status, out = super().handle(method, path, params, body)
        if path.endswith("/_bulk") and self.items:
            for item in out["items"]:
                ((op, info),) = item.items()
                if self.items and info["status"] in (200, 201):
                    self.items -= 1
                    with self._lock:
                        self.indices[info["_index"]].live.pop(info["_id"], None)
                    item[op] = {**info, "status": 429, "error": {"type": "es_rejected_execution_exception"}}
                    out["errors"] = True
        return status, out


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff sleeps the bulk helper takes (recorded, not slept)."""
    slept: list[float] = []
    monkeypatch.setattr("elasticsearch.helpers.actions.time.sleep", slept.append)
    return slept


def test_bulk_retries_refused_requests_with_backoff(sleeps: list[float]) -> None:
    with _Busy(whole=4) as stub, ElasticsearchIndex(stub.url, "g1_busy", timeout=5) as index:
        assert index.upsert(RECORDS) == 5
        index.commit()
        assert index.chunk_ids() == {r.chunk_id for r in RECORDS}
    # the transport retries twice at once, then the helper backs off and tries again
    assert sleeps and sleeps[0] == es_mod._BULK_BACKOFF_S


def test_bulk_retries_only_the_rejected_documents(sleeps: list[float]) -> None:
    with _Busy(items=3) as stub, ElasticsearchIndex(stub.url, "g1_busy", timeout=5) as index:
        assert index.upsert(RECORDS) == 5
        index.commit()
        assert index.chunk_ids() == {r.chunk_id for r in RECORDS}
        bulks = stub.calls(None, "/_bulk")
        assert len(bulks[-1].body) == 2 * 3  # the retry carried the 3 rejected documents only
    assert sleeps == [es_mod._BULK_BACKOFF_S]


def test_bulk_gives_up_after_its_retries(sleeps: list[float]) -> None:
    with _Busy(whole=1000) as stub, ElasticsearchIndex(stub.url, "g1_busy", timeout=5) as index:
        with pytest.raises(IndexError_, match="429"):
            index.upsert(RECORDS)
    assert sleeps == [min(es_mod._BULK_MAX_BACKOFF_S, es_mod._BULK_BACKOFF_S * 2**i)
                      for i in range(es_mod._BULK_RETRIES)]


# -- both index kinds of a generation, opened as ingestion opens them -------------------------


@pytest.mark.parametrize("pair", [("qdrant-local", "tantivy"), ("qdrant-server", "elasticsearch")],
                         ids=lambda p: "+".join(p))
def test_a_new_generation_on_empty_engines_reads_as_empty(pair: tuple[str, str], tmp_path: Path) -> None:
    """What the index stage asks before its first write: nothing exists yet, so both count 0,
    list nothing, and deleting documents from them is a no-op (no 404 from an empty cluster)."""
    from connectors.generations import open_writer
    from tests.backends import backend_settings

    with backend_settings(*pair) as backends:
        cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "backends": backends})
        gen = GenerationRecord.unrecorded(1, "g1_empty")
        reader = open_writer(cfg, gen, None)  # no dimension yet: creates nothing
        try:
            for index in (reader.vector, reader.keyword):
                assert index.count() == 0 and index.chunk_ids() == set()
                index.delete_docs(["a", "b"])
        finally:
            reader.close()
        writer = open_writer(cfg, gen, 3)
        try:
            writer.vector.upsert(RECORDS)
            writer.keyword.upsert(RECORDS)
            writer.keyword.commit()
            assert writer.vector.count() == writer.keyword.count() == len(RECORDS)
        finally:
            writer.close()
