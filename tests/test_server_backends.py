"""The production backend pair through the whole pipeline: Qdrant server + Elasticsearch, each a
local HTTP stub that follows the engine's documented REST API (tests/qdrant_stub.py,
tests/es_stub.py), driven by the real clients through the real Dagster jobs via the CLI.

A first sync into an empty cluster builds and binds generation 1; verify, query, promote and
rollback work; every flip moves the live alias on both engines in one request each; `gc`
leaves no collection or index of an expired generation behind. The embedded pair gets the
same gc check on its local files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.config import load_config
from connectors.generations import GenerationPaths
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore
from tests.bindery_fixture import Deployment
from tests.es_stub import ESStub
from tests.qdrant_stub import QdrantStub
from tests.sync_helpers import assert_converged, generation_row

pytestmark = [pytest.mark.slow, pytest.mark.backends]

ALIAS = "bindery_live"


@pytest.fixture
def stubs() -> Iterator[tuple[QdrantStub, ESStub]]:
    with QdrantStub() as qdrant, ESStub() as es:
        yield qdrant, es


@pytest.fixture
def dep(tmp_path: Path, stubs: tuple[QdrantStub, ESStub]) -> Deployment:
    qdrant, es = stubs
    return Deployment(tmp_path, backends={"vector": "qdrant-server", "qdrant_url": qdrant.url,
                                          "keyword": "elasticsearch", "elasticsearch_url": es.url,
                                          "qdrant_on_disk": True,
                                          "qdrant_quantization": {"scalar": {"type": "int8", "always_ram": True}}})


def _alias_requests(qdrant: QdrantStub, es: ESStub) -> tuple[list[Any], list[Any]]:
    return ([r.body for r in qdrant.calls("POST", "/collections/aliases")],
            [r.body for r in es.calls("POST", "/_aliases")])


def _live_name(dep: Deployment) -> str:
    store = DocumentStore(load_config(dep.config_path).database_url)
    try:
        return str(generation_row(store).name)
    finally:
        store.dispose()


def test_first_sync_into_empty_clusters_builds_binds_and_aliases_generation_one(
        dep: Deployment, stubs: tuple[QdrantStub, ESStub]) -> None:
    qdrant, es = stubs
    assert not qdrant.collections and not es.indices  # nothing exists yet
    out = dep.cli("sync")
    assert out["generation"] == 1 and out["errors"] == {}
    name = _live_name(dep)
    assert set(qdrant.collections) == {name} and set(es.indices) == {name}
    assert qdrant.aliases == {ALIAS: name} and es.aliases == {ALIAS: {name}}
    # payload indexes on every filter field; on-disk vectors and quantisation passed through
    assert set(qdrant.collections[name].payload_schema) >= {"doc_id", "source", "external_id", "acl"}
    created = qdrant.calls("PUT", f"/collections/{name}")[0].body
    assert created["vectors"]["on_disk"] is True and created["on_disk_payload"] is True
    assert created["quantization_config"] == {"scalar": {"type": "int8", "always_ram": True}}
    assert_converged(dep)  # store == Qdrant == Elasticsearch, and `bindery verify` agrees
    hits = dep.cli("query", "ERR-0x1F", "-k", "3")["hits"]
    assert hits and hits[0]["doc"] == "ops/errors.html"
    (dep.root / "people/lyon.md").unlink()
    assert dep.cli("sync")["written"]["deleted"] == 1
    assert_converged(dep)


def test_flips_move_both_aliases_in_one_request_each_and_gc_leaves_nothing(
        dep: Deployment, stubs: tuple[QdrantStub, ESStub]) -> None:
    qdrant, es = stubs
    dep.cli("sync")
    first = _live_name(dep)
    q_before, e_before = (len(x) for x in _alias_requests(qdrant, es))
    cand = dep.cli("reindex", "--force")["candidate"]
    out = dep.cli("promote")
    assert out["promoted"] and out["live"] == cand
    second = _live_name(dep)
    assert qdrant.aliases == {ALIAS: second} and es.aliases == {ALIAS: {second}}
    q_moves, e_moves = (x[n:] for x, n in zip(_alias_requests(qdrant, es), (q_before, e_before), strict=True))
    assert q_moves == [{"actions": [{"delete_alias": {"alias_name": ALIAS}},
                                    {"create_alias": {"collection_name": second, "alias_name": ALIAS}}]}]
    assert e_moves == [{"actions": [{"remove": {"index": first, "alias": ALIAS}},
                                    {"add": {"index": second, "alias": ALIAS}}]}]

    assert dep.cli("rollback")["live"] == 1
    assert qdrant.aliases == {ALIAS: first} and es.aliases == {ALIAS: {first}}
    assert dep.cli("query", "ERR-0x1F", "-k", "1")["generation"] == 1

    # Two more generations: with a retention of 2 and no rollback window, everything that is
    # neither live nor previous is dropped -- on the servers too.
    for _ in range(2):
        dep.cli("reindex", "--force")
        dep.cli("promote")
    cfg = load_config(dep.config_path)
    cfg.retention.keep_generations, cfg.retention.rollback_window_hours = 2, 0
    store = DocumentStore(cfg.database_url)
    dropped = Lifecycle(cfg, store).collect_garbage()
    kept = {g.name for g in store.generations() if g.status != "dropped"}
    assert dropped and len(kept) == 2
    assert set(qdrant.collections) == kept and set(es.indices) == kept
    assert qdrant.aliases[ALIAS] in kept and es.aliases[ALIAS] <= kept
    assert_converged(dep)


def test_gc_on_embedded_engines_leaves_no_files_of_dropped_generations(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    for _ in range(3):
        dep.cli("reindex", "--force")
        dep.cli("promote")
    cfg = load_config(dep.config_path)
    cfg.retention.keep_generations, cfg.retention.rollback_window_hours = 2, 0
    store = DocumentStore(cfg.database_url)
    dropped = Lifecycle(cfg, store).collect_garbage()
    assert len(dropped) == 2
    for name in dropped:
        paths = GenerationPaths.of(cfg, name)
        assert not paths.root.exists() and not paths.snapshots.exists()
    left = {p.name for p in (cfg.data_path / "indexes").iterdir()}
    assert left == {g.name for g in store.generations() if g.status != "dropped"}
