"""Access changes reach every retained generation, so a rollback can never widen access.

The repro of issue 9 item 1, run through the real CLI: an ACL-only change reaches the previous
generation too; a document whose content changed leaves a previous generation that cannot be
brought up to date from the store; the query path re-checks every hit against the store's
current ACL; `bindery verify` compares ACL payloads across the store and every generation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from connectors.config import load_config
from connectors.generations import open_writer, writer_lock
from connectors.indexes.base import IndexRecord
from connectors.store import DocumentStore, GenerationRecord
from tests.bindery_fixture import Deployment

pytestmark = pytest.mark.slow

BRIEF = "# Team B brief\n\nThe walrus project ships its quarterly aquarium plan to the board in June.\n"
QUERY = ("query", "walrus project aquarium plan", "-k", "10")


def _docs(out: dict[str, Any]) -> set[str]:
    return {h["doc"] for h in out["hits"]}


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    d = Deployment(tmp_path)
    d.write("team-b/brief.md", BRIEF)
    d.write("team-b/.bindery-acl", "bob\n")
    d.cli("sync")
    return d


def _store(dep: Deployment) -> DocumentStore:
    return DocumentStore(load_config(dep.config_path).database_url)


def test_rollback_never_restores_revoked_access(dep: Deployment) -> None:
    assert "team-b/brief.md" in _docs(dep.cli(*QUERY, "--principal", "bob"))
    cand = dep.cli("reindex", "--force")["candidate"]
    dep.cli("promote", "--force", "--reason", "t")
    dep.write("team-b/.bindery-acl", "carol\n")
    assert dep.cli("sync")["sources"]["docs"]["acl"] == 1
    assert "team-b/brief.md" not in _docs(dep.cli(*QUERY, "--principal", "bob"))
    assert dep.cli("verify")["consistent"] is True

    back = dep.cli("rollback")
    assert (back["live"], back["previous"]) == (1, cand)
    assert "team-b/brief.md" not in _docs(dep.cli(*QUERY, "--principal", "bob"))
    assert "team-b/brief.md" in _docs(dep.cli(*QUERY, "--principal", "carol"))
    # the index itself was updated, not only the query-time check
    assert _indexed_acls(dep, 1, "team-b/brief.md") == {("carol",)}


def test_changed_content_leaves_a_previous_generation_it_cannot_be_rewritten_in(dep: Deployment) -> None:
    dep.set_stage("chunk", max_tokens=64)  # the candidate cuts other chunks than generation 1
    cand = dep.cli("reindex")["candidate"]
    dep.cli("promote", "--force", "--reason", "t")
    dep.write("team-b/brief.md", BRIEF + "\nThe walrus budget doubled after the June review.\n")
    dep.write("team-b/.bindery-acl", "carol\n")
    dep.cli("sync")
    # generation 1 has no chunks of the new content for its own chunk version: it drops the document
    assert _indexed_acls(dep, 1, "team-b/brief.md") == set()
    assert _indexed_acls(dep, cand, "team-b/brief.md") == {("carol",)}
    assert dep.cli("verify")["consistent"] is True
    dep.cli("rollback")
    assert "team-b/brief.md" not in _docs(dep.cli(*QUERY, "--principal", "bob"))
    # the next sync writes the rolled-back generation again, from the store
    dep.cli("sync")
    assert "team-b/brief.md" in _docs(dep.cli(*QUERY, "--principal", "carol"))
    assert _indexed_acls(dep, 1, "team-b/brief.md") == {("carol",)}


def test_queries_recheck_the_stores_current_acl(dep: Deployment) -> None:
    """Defence in depth: an index that still carries a revoked principal serves nothing to it."""
    dep.write("team-b/.bindery-acl", "carol\n")
    dep.cli("sync")
    _plant_acl(dep, 1, "team-b/brief.md", ("bob",))  # as an old, unmaintained generation would
    assert _indexed_acls(dep, 1, "team-b/brief.md") == {("bob",)}
    out = dep.cli(*QUERY, "--principal", "bob")
    assert "team-b/brief.md" not in _docs(out)
    # nor in the trace, nor counted there: each would say which words the brief holds
    brief = {r.chunk_id for r in _records(dep, 1, "team-b/brief.md")}
    traced = {e["chunk_id"] for r in ("dense", "sparse", "unit") for e in out["trace"][r]}
    assert traced and not traced & brief and "access_dropped" not in out["trace"]
    # and verify names the drift, and repairs it from the store
    report = dep.cli("verify", expect=1)
    g = next(iter(report["generations"].values()))
    assert g["acl_mismatch_in_vector"] > 0 and g["acl_mismatch_in_keyword"] > 0
    assert dep.cli("verify", "--repair")["generations"]
    assert dep.cli("verify")["consistent"] is True
    assert _indexed_acls(dep, 1, "team-b/brief.md") == {("carol",)}


def test_a_deleted_document_is_never_served_even_if_an_index_still_holds_it(dep: Deployment) -> None:
    records = _records(dep, 1, "team-b/brief.md")
    (dep.root / "team-b" / "brief.md").unlink()
    dep.cli("sync")
    _write(dep, 1, records)  # a generation the delete did not reach
    assert "team-b/brief.md" not in _docs(dep.cli(*QUERY, "--principal", "bob"))


# -- helpers: read and tamper with a generation's working indexes ----------------------------


def _gen(dep: Deployment, gen_id: int) -> GenerationRecord:
    gen = _store(dep).get_generation(gen_id)
    assert gen is not None, f"no generation {gen_id}"
    return gen


def _indexed_acls(dep: Deployment, gen_id: int, external_id: str) -> set[tuple[str, ...]]:
    """The distinct ACLs the chunks of one document carry in a generation (both indexes agree)."""
    cfg = load_config(dep.config_path)
    gen = _gen(dep, gen_id)
    with writer_lock(cfg, gen.name):
        pair = open_writer(cfg, gen, None)
        try:
            vec, kw = pair.vector.acls(), pair.keyword.acls()
            payloads = pair.vector.payloads(sorted(vec))
        finally:
            pair.close()
    mine = {c for c, p in payloads.items() if p["external_id"] == external_id}
    assert {c: vec[c] for c in mine} == {c: kw[c] for c in mine}, "the two indexes disagree"
    return {vec[c] for c in mine}


def _records(dep: Deployment, gen_id: int, external_id: str) -> list[IndexRecord]:
    """The records the index stage writes for one document in generation `gen_id`, rebuilt from
    the store (chunks, prefixes, vectors), so a test can plant an out-of-date copy of them."""
    from assets.index_stage import _complete, _records
    from assets.runtime import Generation, Runtime

    rt = Runtime(load_config(dep.config_path))
    gen = Generation.of(_gen(dep, gen_id))
    docs = {d.doc_id: d for d in rt.store.documents() if d.external_id == external_id}
    digests, cut = _complete(rt, gen, docs)
    out = [r for recs in _records(rt, gen, docs, cut, list(digests)).values() for r in recs]
    assert out
    return out


def _write(dep: Deployment, gen_id: int, records: list[IndexRecord]) -> None:
    from connectors.generations import publish

    cfg = load_config(dep.config_path)
    gen = _gen(dep, gen_id)
    with writer_lock(cfg, gen.name):
        pair = open_writer(cfg, gen, None)
        try:
            pair.vector.upsert(records)
            pair.keyword.upsert(records)
            pair.keyword.commit()
        finally:
            pair.close()
        vec, kw = publish(cfg, gen)
    store = _store(dep)
    store.update_generation(gen_id, vector_snapshot=vec, keyword_snapshot=kw)
    store.bump_binding()


def _plant_acl(dep: Deployment, gen_id: int, external_id: str, principals: tuple[str, ...]) -> None:
    from dataclasses import replace

    _write(dep, gen_id, [replace(r, acl=principals) for r in _records(dep, gen_id, external_id)])
