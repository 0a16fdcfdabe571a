"""A source taken out of the configuration: withdrawn from search at once, named by `status`,
and removed by `bindery gc` from the store and every retained generation (never by a sync)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.config import load_config
from connectors.indexes.base import PUBLIC, Filters
from connectors.store import DocumentStore
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import Deployment

pytestmark = pytest.mark.slow

SECRET = "Quartermaster Brindlewood approved the tangerine budget for the harbour annex."


def _hits(dep: Deployment, query: str) -> list[tuple[str, str]]:
    cfg = load_config(dep.config_path)
    r = LiveRetriever(cfg)
    try:
        return [(h.source, h.doc) for h in r.search(query, 10, Filters(principals=(PUBLIC,))).hits]
    finally:
        r.close()


def test_a_removed_source_is_not_served_and_gc_removes_it_everywhere(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "annex.md").write_text(f"# Annex\n\n{SECRET}\n")
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    dep.cli("sync")
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "a second generation holding the source")

    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    # withdrawn at once, before any sync or gc: the store still holds it, the service does not serve it
    assert all(src != "ext" for src, _ in _hits(dep, "tangerine budget harbour annex"))
    status = dep.cli("status")
    assert status["removed_sources"] == {"ext": 1}
    sync = dep.cli("sync")  # a sync deletes nothing of a source it does not list
    assert sync["written"]["deleted"] == 0 and "ext" not in sync["sources"]
    assert dep.cli("status")["removed_sources"] == {"ext": 1}

    out = dep.cli("gc")
    assert out["removed_sources"] == {"ext": 1}
    assert dep.cli("status")["removed_sources"] == {}
    store = DocumentStore(load_config(dep.config_path).database_url)
    try:
        assert store.documents("ext") == []
        for g in store.generations():
            assert store.index_state(g.id, "ext") == {}, g.name
    finally:
        store.dispose()
    verify = dep.cli("verify")  # the indexes of both generations no longer hold its chunks
    assert verify["consistent"] is True, verify
    assert dep.cli("gc")["removed_sources"] == {}  # idempotent

    # put back after the gc, it is ingested anew
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    assert dep.cli("sync")["sources"]["ext"]["new"] == 1
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")
