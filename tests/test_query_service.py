"""The query service over HTTP semantics (FastAPI TestClient): contract, provenance, trace,
filters on both retrievers, 4xx on bad input, fail-closed identity, embedder mismatch."""

from __future__ import annotations

import codecs
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fastapi.testclient import TestClient

from connectors.config import load_config
from connectors.store import DocumentStore
from query_service.app import create_app
from query_service.auth import hash_key
from query_service.fusion import rrf
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import Deployment

if TYPE_CHECKING:
    from httpx2 import Response  # what starlette's TestClient returns


def test_rrf_matches_the_formula_and_is_deterministic() -> None:
    fused = rrf({"dense": ["a", "b", "c"], "sparse": ["c", "a", "d", "a"]}, k=60)
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 63}
    assert {f.chunk_id: round(f.score, 12) for f in fused} == {k: round(v, 12) for k, v in expected.items()}
    assert [f.chunk_id for f in fused] == ["a", "c", "b", "d"]
    assert fused[0].ranks == {"dense": 1, "sparse": 2}
    assert rrf({"x": ["b", "a"], "y": ["a", "b"]}) == rrf({"y": ["a", "b"], "x": ["b", "a"]})


ANON_KEY, HR_KEY = "bk_anonymous-caller", "bk_hr-team-caller"
JWT_SECRET = "hs256-secret-for-the-query-service-tests-0123456789"
OPS_KEY = "bk_operator-caller"
AUTH = {"api_keys": [{"name": "anon", "hash": hash_key(ANON_KEY), "principals": []},
                     {"name": "hr", "hash": hash_key(HR_KEY), "principals": ["hr-team"]},
                     {"name": "ops", "hash": hash_key(OPS_KEY), "principals": ["ops-team"]}],
        "operators": ["ops-team"],
        "jwt": {"hs256_secret_env": "BINDERY_QS_JWT", "principals_claim": "groups"}}


class Client:
    """A TestClient that sends one caller's API key on every request."""

    def __init__(self, client: TestClient, retriever: LiveRetriever, key: str = ANON_KEY) -> None:
        self.client = client
        self.retriever = retriever
        self.key = key

    def get(self, url: str, **kw: Any) -> Response:
        return self.client.get(url, **kw)

    def post(self, url: str, key: str | None = None, **kw: Any) -> Response:
        headers = {"X-API-Key": key or self.key, **kw.pop("headers", {})}
        return self.client.post(url, headers=headers, **kw)


Served = tuple[Deployment, Client]  # the `served` fixture: a synced deployment and a client of its service


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    mp = pytest.MonkeyPatch()
    mp.setenv("BINDERY_QS_JWT", JWT_SECRET)
    dep = Deployment(tmp_path_factory.mktemp("qs"), query={"poll_seconds": 0.1, "auth": AUTH})
    (dep.root / "people" / ".bindery-acl").write_text("hr-team\n")
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    retriever = LiveRetriever(cfg)
    with TestClient(create_app(cfg, retriever)) as client:
        yield dep, Client(client, retriever)
    retriever.close()
    mp.undo()


pytestmark = pytest.mark.slow


def test_health_ready_and_binding(served: Served) -> None:
    _, c = served
    assert c.get("/healthz").json() == {"status": "ok"}
    ready = c.get("/readyz").json()
    assert ready["ready"] and ready["generation"] == 1
    b = c.get("/binding").json()
    assert b["generation"] == 1 and b["served_generation"] == 1 and b["embedder_id"]


def test_keyword_lists_shorter_than_asked_are_fused_as_complete(served: Served,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The retriever tells fusion which keyword lists hold every match (`fusion.zscore`): a
    rare word's few BM25 hits, never a list cut at `candidates`."""
    import query_service.retrieval as retrieval
    from query_service.ranking import rank_units as real

    seen: list[tuple[str, ...]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(tuple(kwargs.get("complete", ())))
        return real(*args, **kwargs)

    monkeypatch.setattr(retrieval, "rank_units", spy)
    _, c = served
    hits = c.post("/search", json={"query": "heartbeat", "k": 3}).json()["hits"]
    assert hits[0]["doc"] == "ops/errors.html" and seen[-1] == ("sparse", "unit")  # 3 of 50 asked


def test_search_returns_provenance_and_a_trace(served: Served) -> None:
    _, c = served
    r = c.post("/search", json={"query": "ERR-0x1F", "k": 3})
    assert r.status_code == 200
    body = r.json()
    top = body["hits"][0]
    assert top["doc"] == "ops/errors.html" and "heartbeat" in top["text"] and top["source"] == "docs"
    assert top["heading_path"] and top["chunk_id"]
    assert isinstance(top["title"], str) and top["title"]  # the page's, for a citation
    assert "email" not in top  # e-mails only
    assert "navigation chrome" not in top["text"] and "footer chrome" not in top["text"]
    tr = body["trace"]
    assert tr["binding"]["generation"] == body["generation"] == 1
    assert tr["sparse"] and tr["dense"] and "total_ms" in tr["timings"]
    assert tr["sparse"][0]["chunk_id"] == top["chunk_id"]
    assert "reason" not in body and "attribution" not in tr  # left out, as `bindery query --json` leaves them
    # every key the service answers with is declared in its OpenAPI schema
    schemas = c.get("/openapi.json").json()["components"]["schemas"]
    assert set(top) <= set(schemas["HitModel"]["properties"])
    assert set(tr) <= set(schemas["TraceModel"]["properties"])
    assert set(body) <= set(schemas["SearchResponse"]["properties"])
    # the counts are bounded integers, in JSON Schema's own words (a client generator reads them)
    req = schemas["SearchRequest"]["properties"]
    for name, bounds in (("k", (1, 200)), ("neighbours", (0, 5))):  # either may be left out: the configuration's
        assert {"type": "integer", "minimum": bounds[0], "maximum": bounds[1]} == {
            key: v for key, v in req[name]["anyOf"][0].items() if key in ("type", "minimum", "maximum")}


def test_the_published_schema_declares_every_error_the_search_answers(served: Served) -> None:
    """An API consumer's pass: `error` was optional in the schema though every error body has
    it, and /search's 431 and 500 (and the middleware's 403) were not declared, so a client
    generated from /openapi.json typed them as undocumented."""
    _, c = served
    spec = c.get("/openapi.json").json()
    err = spec["components"]["schemas"]["ErrorResponse"]
    assert sorted(err["required"]) == ["detail", "error"] and err["properties"]["error"]["type"] == "string"
    declared = set(spec["paths"]["/search"]["post"]["responses"])
    assert {"200", "400", "401", "403", "413", "422", "431", "500", "503"} <= declared
    # a number past Python's 4,300-digit limit: the reason names it, not an encoding or nesting
    r = c.post("/search", content=b'{"query": "x", "k": ' + b"9" * 4301 + b"}",
               headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "4,300 digits" in r.json()["detail"][0] and r.json()["error"] == "bad request"


def test_raw_retriever_scores_are_for_operators_only(served: Served) -> None:
    """BM25 scores carry corpus-wide document frequencies, unreadable documents included: a
    caller who is not an operator gets each retriever's candidates in order, without scores."""
    _, c = served
    body = {"query": "battery XR-4471 office", "k": 5}
    for key in (ANON_KEY, HR_KEY):
        tr = c.post("/search", key=key, json=body).json()["trace"]
        assert tr["sparse"] and all("score" in e and e["score"] is None  # null, as the contract says
                                    for r in ("dense", "sparse", "unit") for e in tr[r])
    ops = c.post("/search", key=OPS_KEY, json=body).json()["trace"]
    assert ops["sparse"] and all(isinstance(e["score"], float) for e in ops["sparse"])


def test_acl_filters_apply_to_both_retrievers(served: Served) -> None:
    _, c = served
    body = {"query": "Lyon office Part-Dieu", "k": 10}
    public = c.post("/search", json=body).json()
    assert all(h["doc"] != "people/lyon.md" for h in public["hits"])
    hr = c.post("/search", key=HR_KEY, json=body).json()
    assert hr["hits"][0]["doc"] == "people/lyon.md"
    assert {"dense", "sparse"} <= hr["hits"][0]["ranks"].keys() <= {"dense", "sparse", "unit"}
    only = c.post("/search", key=HR_KEY, json={**body, "filters": {"docs": ["ops/oncall.txt"]}}).json()
    assert {h["doc"] for h in only["hits"]} == {"ops/oncall.txt"}
    assert {t["chunk_id"] for t in only["trace"]["dense"]} == {t["chunk_id"] for t in only["trace"]["sparse"]} or \
        not only["trace"]["sparse"]
    # the trace lists every candidate, not the top k (a hit's ranks pointed past a list cut at k)
    two = c.post("/search", key=HR_KEY, json={**body, "k": 2}).json()
    assert len(two["hits"]) == 2 and len(two["trace"]["dense"]) > 2
    assert all(r <= len(two["trace"][name]) for h in two["hits"] for name, r in h["ranks"].items())


@pytest.mark.parametrize("payload,status", [
    ({"query": "", "k": 3}, 422),
    ({"query": "x", "k": 0}, 422),
    ({"query": "x", "k": 10_000}, 422),
    ({"query": "x", "filters": {"bogus": 1}}, 422),
    # strict types: a string or a boolean is not quietly read as a number
    ({"query": "x", "k": "5"}, 422),
    ({"query": "x", "neighbours": True}, 422),
    ({"query": "x", "neighbours": "2"}, 422),
    ({"query": "x", "filters": {"sources": "docs"}}, 422),
    ({"query": "x", "k": 2.5}, 422),
    ({"query": "x", "k": 5.0, "neighbours": 1.0}, 200),  # a whole float is a number (JSON Schema agrees)
    ({"query": "x", "k": 1e1}, 200),
    ({"query": "x", "principal": "a"}, 400),  # the credential says who is asking
    ({"query": "   "}, 400),
    ({"query": "AND OR NOT ( [ { :\\ ~ * ?"}, 200),
])
def test_bad_input_is_a_4xx_never_a_500(served: Served, payload: dict[str, Any], status: int) -> None:
    _, c = served
    r = c.post("/search", json=payload)
    assert r.status_code == status, r.text
    if status != 200:
        assert r.json().get("detail")


def test_non_json_body_is_a_4xx(served: Served) -> None:
    _, c = served
    r = c.post("/search", content=b'{"query": "x", "k"', headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0].startswith("body: not valid JSON at character 18"), r.text
    r = c.post("/search", content=b'{"query": "x"}', headers={"content-type": "text/plain"})  # said, not "a dictionary"
    assert r.status_code == 422 and "Content-Type: application/json" in r.json()["detail"][0], r.text
    # bodies FastAPI cannot even decode answered 400 "There was an error parsing the body", uncounted
    for body in ('{"query": "caf\xe9"}'.encode("latin-1"), b'{"query": "x", "k": ' + b"[" * 5000 + b"]" * 5000 + b"}"):
        r = c.post("/search", content=body, headers={"content-type": "application/json; charset=latin-1"})
        assert r.status_code == 422 and r.json()["error"] == "bad request", (r.status_code, r.text)


def test_a_jwt_carries_its_principals_to_both_retrievers(served: Served) -> None:
    import time

    import jwt

    _, c = served
    body = {"query": "Lyon office Part-Dieu", "k": 10}
    token = jwt.encode({"groups": ["hr-team"], "exp": time.time() + 60}, JWT_SECRET, algorithm="HS256")
    r = c.client.post("/search", json=body, headers={"Authorization": f"Bearer {token}"})
    assert r.json()["hits"][0]["doc"] == "people/lyon.md"
    other = jwt.encode({"groups": ["sales"], "exp": time.time() + 60}, JWT_SECRET, algorithm="HS256")
    r = c.client.post("/search", json=body, headers={"Authorization": f"Bearer {other}"})
    assert all(h["doc"] != "people/lyon.md" for h in r.json()["hits"])
    assert c.client.post("/search", json={**body, "principal": "hr-team"}).status_code == 401


@pytest.fixture(scope="module")
def trusted(served: Served) -> Iterator[TestClient]:
    """The same deployment behind a gateway: the body's `principal` is believed."""
    dep, c = served
    cfg = load_config(dep.config_path)
    cfg.query.auth.mode = "trusted-principal"
    with TestClient(create_app(cfg, c.retriever)) as client:
        yield client


@pytest.mark.parametrize("payload,field", [
    ({"principal": "\ud800"}, "principal"),
    ({"principal": ["hr-team", "x\udfff"]}, "principal"),
    ({"principal": "a", "filters": {"docs": ["ops/\ud800.md"]}}, "filters.docs.0"),
    ({"principal": "a", "filters": {"sources": ["\udc80"]}}, "filters.sources.0"),
    ({"principal": "a", "filters": {"exclude_docs": ["\ud83d"]}}, "filters.exclude_docs.0"),
    ({"principal": "a", "query": "battery \ud800"}, "query"),
])
def test_lone_surrogates_are_a_422_not_a_500(trusted: TestClient, payload: dict[str, Any], field: str) -> None:
    raw = json.dumps({"query": "battery", "k": 3, **payload})  # json escapes keep the lone surrogate
    r = trusted.post("/search", content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert any(d.startswith(field) and "unicode" in d for d in r.json()["detail"]), r.json()


@pytest.mark.parametrize("raw", [
    '{"query": "battery", "principal": "nobody", "principal": "hr-team"}',
    '{"query": "battery", "principal": "nobody", "filters": {"sources": ["a"], "sources": ["b"]}}',
])
def test_a_key_given_twice_is_refused_not_last_one_wins(trusted: TestClient, raw: str) -> None:
    """A gateway that checks the first `principal` and a service that believes the last would
    disagree on who asks: a body naming a key twice is refused, whichever the key."""
    r = trusted.post("/search", content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert any("more than once" in d for d in r.json()["detail"]), r.json()
    assert "hits" not in r.json()
    once = trusted.post("/search", json={"query": "battery", "principal": "hr-team"})
    assert once.status_code == 200, once.text


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32-le"])
def test_a_body_not_in_utf8_is_refused(trusted: TestClient, encoding: str) -> None:
    """An attacker pass: json.loads guesses UTF-16 and UTF-32 from the bytes, so a gateway that
    reads the body as UTF-8 looking for `principal` saw none where this service read one."""
    raw = '{"query": "battery", "principal": "hr-team"}'
    r = trusted.post("/search", content=raw.encode(encoding), headers={"content-type": "application/json"})
    assert r.status_code == 422 and any("UTF-8" in d for d in r.json()["detail"]), r.text
    bom = trusted.post("/search", content=codecs.BOM_UTF8 + raw.encode(), headers={"content-type": "application/json"})
    assert bom.status_code == 200, bom.text


def test_a_lone_surrogate_in_a_token_claim_is_a_400_not_a_500(served: Served) -> None:
    import time

    import jwt

    _, c = served
    token = jwt.encode({"groups": ["\ud800"], "exp": time.time() + 60}, JWT_SECRET, algorithm="HS256")
    r = c.client.post("/search", json={"query": "battery"}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 400 and "lone surrogate" in r.json()["detail"]


@pytest.mark.parametrize("filters", [{"docs": []}, {"sources": []}])
def test_an_empty_filter_list_means_nothing(served: Served, filters: dict[str, list[str]]) -> None:
    _, c = served
    r = c.post("/search", key=HR_KEY, json={"query": "battery XR-4471 office", "k": 10, "filters": filters})
    assert r.status_code == 200 and r.json()["hits"] == []
    assert r.json()["trace"]["dense"] == [] and r.json()["trace"]["sparse"] == []
    assert c.post("/search", key=HR_KEY, json={"query": "battery XR-4471 office", "k": 10}).json()["hits"]


def test_an_unknown_source_is_a_400_naming_it_but_not_the_others(served: Served) -> None:
    """The configured names are not listed: a source's name can say what it holds."""
    _, c = served
    r = c.post("/search", json={"query": "battery", "filters": {"sources": ["docs", "nope"]}})
    assert r.status_code == 400 and r.json()["detail"] == "unknown source(s) 'nope'"


def test_a_query_embedder_mismatch_is_a_hard_error(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    store.update_generation(1, embedder_id="some-other-model-1234")
    store.bump_binding()
    from query_service import retrieval

    retrieval._EMBEDDERS.clear()
    r = LiveRetriever(cfg, follow=False)
    cfg.query.auth.mode = "trusted-principal"
    with TestClient(create_app(cfg, r)) as c:
        assert c.get("/readyz").status_code == 503
        resp = c.post("/search", json={"query": "battery", "principal": "a"})
        assert resp.status_code == 503 and "differs" in resp.json()["detail"]
    r.close()


def test_a_generation_that_cannot_open_keeps_the_old_one_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Any failure opening a new generation once made /readyz say the *store* was down (503)
    while the old generation served fine; now the old one serves and readyz warns."""
    from query_service import retrieval
    from query_service.auth import hash_key

    keys = [{"name": "ops", "hash": hash_key("ops-key"), "principals": ["operator"]}]
    dep = Deployment(tmp_path, query={"poll_seconds": 0.1, "auth": {"api_keys": keys, "operators": ["operator"]}})
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    r = LiveRetriever(cfg, follow=False)
    DocumentStore(cfg.database_url).bump_binding()

    opens: list[int] = []

    def broken(*_a: object, **_k: object) -> None:
        opens.append(1)
        raise OSError("index file unreadable")

    monkeypatch.setattr(retrieval, "_Served", broken)
    with caplog.at_level(logging.ERROR, logger=retrieval.log.name):
        assert r.refresh() is False and r.store_error is None
        assert r.last_error is not None and "could not be opened" in r.last_error
        # every poll used to retry the open (a copy of the snapshot each) and log a traceback
        assert [r.refresh() for _ in range(5)] == [False] * 5 and len(opens) == 1
        later = time.monotonic() + retrieval.OPEN_RETRY_SECONDS + 1
        monkeypatch.setattr(time, "monotonic", lambda: later)  # the module retrieval reads it from
        assert r.refresh() is False and len(opens) == 2  # tried again after the pause ...
        monkeypatch.undo()
    assert len([x for x in caplog.records if "could not be opened" in x.getMessage()]) == 1  # ... logged once
    with TestClient(create_app(cfg, r, allowed_hosts=["testserver"])) as c:
        ready = c.get("/readyz")
        assert ready.status_code == 200 and "could not be opened" in ready.json()["warning"]
        # the console says which generation answers, not only which one is bound (an operator pass)
        gens = c.get("/console/api/generations", headers={"X-API-Key": "ops-key"})
        assert gens.status_code == 200, gens.text
        serving = gens.json()["serving"]
        assert serving["id"] == ready.json()["generation"] and "could not be opened" in serving["warning"]
    r.close()


def test_diversify_decays_repeated_documents_only() -> None:
    from query_service.fusion import Fused
    from query_service.ranking import diversify

    fused = [Fused("a1", 0.030, {"d": 1}), Fused("a2", 0.029, {"d": 2}), Fused("b1", 0.0285, {"d": 3})]
    doc = {"a1": "A", "a2": "A", "b1": "B"}.__getitem__
    assert [f.chunk_id for f in diversify(fused, doc, 1.0)] == ["a1", "a2", "b1"]
    out = diversify(fused, doc, 0.9)
    assert [f.chunk_id for f in out] == ["a1", "b1", "a2"]
    assert out[2].score == pytest.approx(0.029 * 0.9)
    # z-score fusion gives negative scores: a repeated document must still move down
    neg = [Fused("a1", -0.1, {"d": 1}), Fused("a2", -0.2, {"d": 2}), Fused("b1", -0.21, {"d": 3})]
    assert [f.chunk_id for f in diversify(neg, doc, 0.9)] == ["a1", "b1", "a2"]


def test_metrics_name_the_generation_served(served: Served) -> None:
    _, c = served
    assert c.post("/search", json={"query": "battery"}).status_code == 200
    body = c.get("/metrics").text
    assert "bindery_generation_served 1.0" in body
    assert 'bindery_http_requests_total{method="POST",route="/search",status="200"}' in body
    assert "bindery_search_hits_count" in body


def test_a_query_of_invisible_characters_is_refused_like_a_blank_one(trusted: TestClient) -> None:
    """A NUL, a zero-width space or a soft hyphen is no question: answered before with dense-only
    hits for nothing, as a blank query is refused."""
    for text in ("   ", "\u200b\u00ad", "\x00", "\ufeff\u2060"):
        r = trusted.post("/search", json={"principal": "a", "query": text, "k": 3})
        assert r.status_code == 400 and "query is empty" in r.json()["detail"], (text, r.status_code, r.text)
    from connectors.query_limits import query_problem

    # a private-use or an unassigned code point may be what a newer font draws: not "invisible"
    assert query_problem("\ue000") is None and query_problem("\U000e0fff") is None


def test_the_service_follows_query_settings_edited_in_the_file(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """Found by an operator pass: the docs say a query-time setting takes effect by editing
    bindery.yaml (`bindery tune` tells you to copy its settings there), but the service kept the
    ones it started with, and its default k was 10 whatever `query.k` said."""
    dep = Deployment(tmp_path, query={"auth": {"mode": "trusted-principal"}})
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    r = LiveRetriever(cfg, follow=False)
    with TestClient(create_app(cfg, r)) as c:
        ask = {"query": "battery warranty", "principal": "*"}
        assert len(c.post("/search", json=ask).json()["hits"]) > 3
        dep.config["query"] = {**dep.config["query"], "k": 3, "dense_weight": 2.0,
                               "auth": {"mode": "credentials"}}  # bound at startup: takes a restart
        dep.save()
        assert not r.follow_settings()  # a file just written may be half written: taken once it holds still
        assert r.follow_settings() and not r.follow_settings()  # once per edit
        assert r.cfg.query.dense_weight == 2.0 and r.cfg.query.auth.mode == "trusted-principal"
        # said where an operator looks: a revoked key that still works must not pass unnoticed
        assert any(rec.levelname == "WARNING" and "query.auth" in rec.getMessage() and "restart" in rec.getMessage()
                   for rec in caplog.records)
        assert len(c.post("/search", json=ask).json()["hits"]) == 3
        assert len(c.post("/search", json={**ask, "k": 5}).json()["hits"]) == 5
        dep.config_path.write_text("")  # an editor writing in place: for a moment, an empty file (all defaults)
        assert not r.follow_settings() and r.cfg.query.k == 3
        dep.save()
        os.utime(dep.config_path, ns=(1, 1))  # the same bytes as before, written again
        assert not r.follow_settings() and r.follow_settings() and r.cfg.query.k == 3  # the defaults never served
        dep.config_path.write_text("query: [not, a, mapping\n")  # an edit that does not load
        assert not r.follow_settings() and not r.follow_settings() and "settings in use stay" in caplog.text
        assert r.cfg.query.k == 3 and len(c.post("/search", json=ask).json()["hits"]) == 3
    r.close()


def test_a_source_added_while_the_service_runs_can_be_filtered_by(tmp_path: Path) -> None:
    """An operator pass: a source added to the file and synced while the service ran had its
    hits served, yet a filter naming it was refused as unknown until a restart."""
    dep = Deployment(tmp_path, query={"auth": {"mode": "trusted-principal"}})
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    r = LiveRetriever(cfg, follow=False)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "chinchillas.md").write_text("# Chinchillas\n\nChinchillas bathe in volcanic dust, never in water.\n")
    with TestClient(create_app(cfg, r)) as c:
        ask = {"query": "chinchillas bathe in dust", "principal": "*", "filters": {"sources": ["extra"]}}
        assert c.post("/search", json=ask).status_code == 400  # not configured: unknown
        dep.config["sources"].append({"name": "extra", "kind": "local", "root": str(extra)})
        dep.save()
        dep.cli("sync", "--source", "extra")
        assert not r.follow_settings() and r.follow_settings()
        r.refresh()
        hits = c.post("/search", json=ask).json()["hits"]
        assert hits and {h["source"] for h in hits} == {"extra"}
        assert c.post("/search", json={**ask, "filters": {"sources": ["nope"]}}).status_code == 400
    r.close()


def test_the_settings_follow_a_configmap_style_symlink_swap(tmp_path: Path) -> None:
    """From review: Kubernetes mounts a ConfigMap as `bindery.yaml -> ..data/bindery.yaml` with
    `..data` a link to a timestamped folder it replaces (and deletes) on every update; the service
    watched the resolved path, which vanished with the first update."""
    import yaml

    dep = Deployment(tmp_path / "dep")
    dep.cli("sync")
    mount = tmp_path / "etc"
    (mount / "..2026_01").mkdir(parents=True)
    (mount / "..2026_01" / "bindery.yaml").write_text(yaml.safe_dump(dep.config))
    os.symlink("..2026_01", mount / "..data")
    os.symlink("..data/bindery.yaml", mount / "bindery.yaml")
    r = LiveRetriever(load_config(mount / "bindery.yaml"), follow=False)
    try:
        (mount / "..2026_02").mkdir()
        (mount / "..2026_02" / "bindery.yaml").write_text(yaml.safe_dump({**dep.config, "query": {"k": 4}}))
        os.symlink("..2026_02", mount / "..data_tmp")
        os.replace(mount / "..data_tmp", mount / "..data")  # what kubelet does, atomically
        (mount / "..2026_01" / "bindery.yaml").unlink()
        (mount / "..2026_01").rmdir()
        assert not r.follow_settings() and r.follow_settings() and r.cfg.query.k == 4
    finally:
        r.close()
