"""The query service over HTTP semantics (FastAPI TestClient): contract, provenance, trace,
filters on both retrievers, 4xx on bad input, fail-closed identity, embedder mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from connectors.config import load_config
from connectors.store import DocumentStore
from query_service.app import create_app
from query_service.fusion import rrf
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import Deployment


def test_rrf_matches_the_formula_and_is_deterministic() -> None:
    fused = rrf({"dense": ["a", "b", "c"], "sparse": ["c", "a", "d", "a"]}, k=60)
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 63}
    assert {f.chunk_id: round(f.score, 12) for f in fused} == {k: round(v, 12) for k, v in expected.items()}
    assert [f.chunk_id for f in fused] == ["a", "c", "b", "d"]
    assert fused[0].ranks == {"dense": 1, "sparse": 2}
    assert rrf({"x": ["b", "a"], "y": ["a", "b"]}) == rrf({"y": ["a", "b"], "x": ["b", "a"]})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    dep = Deployment(tmp_path_factory.mktemp("qs"))
    (dep.root / "people" / ".bindery-acl").write_text("hr-team\n")
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    retriever = LiveRetriever(cfg)
    with TestClient(create_app(cfg, retriever)) as client:
        yield dep, client
    retriever.close()


pytestmark = pytest.mark.slow


def test_health_ready_and_binding(served) -> None:  # type: ignore[no-untyped-def]
    _, c = served
    assert c.get("/healthz").json() == {"status": "ok"}
    ready = c.get("/readyz").json()
    assert ready["ready"] and ready["generation"] == 1
    b = c.get("/binding").json()
    assert b["generation"] == 1 and b["served_generation"] == 1 and b["embedder_id"]


def test_search_returns_provenance_and_a_trace(served) -> None:  # type: ignore[no-untyped-def]
    _, c = served
    r = c.post("/search", json={"query": "ERR-0x1F", "k": 3, "principal": "anonymous"})
    assert r.status_code == 200
    body = r.json()
    top = body["hits"][0]
    assert top["doc"] == "ops/errors.html" and "heartbeat" in top["text"] and top["source"] == "docs"
    assert top["heading_path"] and top["chunk_id"]
    assert "navigation chrome" not in top["text"] and "footer chrome" not in top["text"]
    tr = body["trace"]
    assert tr["binding"]["generation"] == body["generation"] == 1
    assert tr["sparse"] and tr["dense"] and "total_ms" in tr["timings"]
    assert tr["sparse"][0]["chunk_id"] == top["chunk_id"]


def test_acl_filters_apply_to_both_retrievers(served) -> None:  # type: ignore[no-untyped-def]
    _, c = served
    body = {"query": "Lyon office Part-Dieu", "k": 10}
    public = c.post("/search", json={**body, "principal": "anonymous"}).json()
    assert all(h["doc"] != "people/lyon.md" for h in public["hits"])
    hr = c.post("/search", json={**body, "principal": ["hr-team"]}).json()
    assert hr["hits"][0]["doc"] == "people/lyon.md"
    assert hr["hits"][0]["ranks"].keys() == {"dense", "sparse"}
    only = c.post("/search", json={**body, "principal": "hr-team", "filters": {"docs": ["ops/oncall.txt"]}}).json()
    assert {h["doc"] for h in only["hits"]} == {"ops/oncall.txt"}
    assert {t["chunk_id"] for t in only["trace"]["dense"]} == {t["chunk_id"] for t in only["trace"]["sparse"]} or \
        not only["trace"]["sparse"]


@pytest.mark.parametrize("payload,status", [
    ({"query": "x", "k": 3}, 422),  # no principal: no identity, no results
    ({"query": "", "principal": "a"}, 422),
    ({"query": "x", "k": 0, "principal": "a"}, 422),
    ({"query": "x", "k": 10_000, "principal": "a"}, 422),
    ({"query": "x", "principal": "a", "filters": {"bogus": 1}}, 422),
    ({"query": "   ", "principal": "a"}, 400),
    ({"query": "x", "principal": []}, 400),
    ({"query": "AND OR NOT ( [ { :\\ ~ * ?", "principal": "a"}, 200),
])
def test_bad_input_is_a_4xx_never_a_500(served, payload, status) -> None:  # type: ignore[no-untyped-def]
    _, c = served
    r = c.post("/search", json=payload)
    assert r.status_code == status, r.text
    if status != 200:
        assert r.json().get("detail")


def test_non_json_body_is_a_4xx(served) -> None:  # type: ignore[no-untyped-def]
    _, c = served
    assert c.post("/search", content=b"not json", headers={"content-type": "application/json"}).status_code == 422


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
    with TestClient(create_app(cfg, r)) as c:
        assert c.get("/readyz").status_code == 503
        resp = c.post("/search", json={"query": "battery", "principal": "a"})
        assert resp.status_code == 503 and "differs" in resp.json()["detail"]
    r.close()


def test_diversify_decays_repeated_documents_only() -> None:
    from query_service.fusion import Fused
    from query_service.retrieval import diversify

    fused = [Fused("a1", 0.030, {"d": 1}), Fused("a2", 0.029, {"d": 2}), Fused("b1", 0.0285, {"d": 3})]
    payloads = {"a1": {"doc_id": "A"}, "a2": {"doc_id": "A"}, "b1": {"doc_id": "B"}}
    assert [f.chunk_id for f in diversify(fused, payloads, 1.0)] == ["a1", "a2", "b1"]
    out = diversify(fused, payloads, 0.9)
    assert [f.chunk_id for f in out] == ["a1", "b1", "a2"]
    assert out[2].score == pytest.approx(0.029 * 0.9)
