"""A source taken out of the configuration: withheld from search by the next sync (which deletes
nothing), named by `status`, and removed by `bindery gc` from the store and every retained
generation. The query service follows the store, so neither taking a source out nor adding one
needs it restarted."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.config import BinderyConfig, load_config
from connectors.indexes.base import PUBLIC, Filters
from connectors.store import DocumentStore
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import Deployment

pytestmark = pytest.mark.slow

SECRET = "Quartermaster Brindlewood approved the tangerine budget for the harbour annex."


def _hits(dep: Deployment, query: str, cfg: BinderyConfig | None = None) -> list[tuple[str, str]]:
    r = LiveRetriever(cfg or load_config(dep.config_path))
    try:
        return [(h.source, h.doc) for h in r.search(query, 10, Filters(principals=(PUBLIC,))).hits]
    finally:
        r.close()


def _with_ext(tmp_path: Path) -> tuple[Deployment, Path]:
    """A deployment with a second source, `ext`, holding one document, synced."""
    dep = Deployment(tmp_path)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "annex.md").write_text(f"# Annex\n\n{SECRET}\n")
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    dep.cli("sync")
    return dep, ext


def _put_back_everywhere(dep: Deployment) -> None:
    """The put-back sync restores the source from the caches, into the rollback target too,
    which held it (a new-user pass: it stayed empty of the source, and a rollback then served
    nothing of it), and the plan says so."""
    plan = dep.cli("plan")
    back = dep.cli("sync")
    assert back["sources"]["ext"]["acl"] == 1 and back["recomputed"]["embed"] == 0
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")
    assert (plan["recomputed"], plan["written"]) == (back["recomputed"], back["written"]), (plan, back)
    store = DocumentStore(load_config(dep.config_path).database_url)
    try:
        for g in store.generations(["live", "previous"]):
            assert [r.digest != "" for r in store.index_state(g.id, "ext").values()] == [True], g.name
    finally:
        store.dispose()
    assert dep.cli("verify")["consistent"] is True
    dep.cli("rollback")
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")
    dep.cli("rollback")  # back to the generation it was


def test_a_removed_source_is_not_served_and_gc_removes_it_everywhere(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "annex.md").write_text(f"# Annex\n\n{SECRET}\n")
    started_with = load_config(dep.config_path)  # a query service started before ext was added
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    dep.cli("sync")
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex", started_with)
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "a second generation holding the source")

    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    status = dep.cli("status")
    assert status["removed_sources"] == {"ext": 1}
    # the human total is the store's: it says which part the source rows above it do not show
    from orchestration.report import _human_status

    assert f"documents {status['documents']} (1 of sources no longer configured)" in _human_status(status)
    plan = dep.cli("plan")  # the plan says what the sync will withhold
    assert plan["removed_sources"] == {"ext": 1} and plan["removed_sources_indexed"] == {"ext": 1}
    sync = dep.cli("sync")  # withholds what it no longer lists, deletes nothing
    assert sync["written"]["deleted"] == 0 and "ext" not in sync["sources"]
    # and says so, as the plan did (an operator pass: the summary said "nothing changed" while a
    # source's documents left search)
    assert sync["removed_sources"] == {"ext": 1}
    from orchestration.report import human

    assert "source 'ext' is no longer configured: its 1 document is withheld" in human("sync", sync)
    assert all(src != "ext" for src, _ in _hits(dep, "tangerine budget harbour annex"))
    assert dep.cli("status")["removed_sources"] == {"ext": 1}
    assert dep.cli("verify")["consistent"] is True  # out of every generation's indexes, not only hidden
    # ... which the next plan says is done, not that its sync will do it (an operator pass)
    assert "its 1 document is withheld from search and out of every generation's indexes already" in human(
        "plan", plan := dep.cli("plan")) and plan["removed_sources_indexed"] == {"ext": 0}
    # every command that syncs says it (reindex and dlq retry lacked the key: a new-user review)
    assert dep.cli("reindex", "--force")["removed_sources"] == {"ext": 1}
    dep.cli("discard")

    # put back before a gc: its next listing restores it, nothing re-embedded
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    _put_back_everywhere(dep)
    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    dep.cli("sync")

    (ext / "broken.pdf").write_bytes(b"%PDF-1.7 truncated")  # a dead letter of the source, then removed
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    dep.cli("sync")
    assert [d["doc"] for d in dep.cli("dlq")] == ["broken.pdf"]
    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    live_docs = dep.cli("status")["generations"]["live"]["counts"]["documents"]
    out = dep.cli("gc")
    assert out["removed_sources"] == {"ext": 2}
    assert dep.cli("dlq") == []  # nothing of the source is left to retry
    assert dep.cli("status")["generations"]["live"]["counts"]["documents"] == live_docs - 1
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
    assert dep.cli("sync")["sources"]["ext"]["new"] == 2  # annex.md and broken.pdf
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")


def test_a_damaged_rollback_generation_stops_neither_the_withholding_sync_nor_gc(tmp_path: Path) -> None:
    """A carried-over defect: a source taken out of the configuration is taken out of every
    retained generation's indexes by the next sync; when the rollback target's index could not
    be opened, that sync failed whole (the live index was not kept current either), and gc the
    same. Now both go on, name the damaged generation, and gc keeps the source's store rows until
    a repair lets it finish the job."""
    from connectors.generations import GenerationPaths

    dep, _ = _with_ext(tmp_path)
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "a previous generation to damage")
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    try:
        previous = next(iter(store.generations(["previous"]))).name
    finally:
        store.dispose()
    for segment in GenerationPaths.of(cfg, previous).keyword.glob("*.store"):
        segment.write_bytes(b"")  # the index cannot be opened at all

    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    sync = dep.cli("sync")
    assert sync["removed_sources"] == {"ext": 1}
    assert len(sync["warnings"]) == 1 and previous in sync["warnings"][0]
    assert all(src != "ext" for src, _ in _hits(dep, "tangerine budget harbour annex"))

    gc = dep.cli("gc")
    assert gc["removed_sources"] == {} and len(gc["warnings"]) == 1
    assert previous in gc["warnings"][0] and "verify --repair" in gc["warnings"][0]
    assert dep.cli("status")["removed_sources"] == {"ext": 1}  # kept for the gc after the repair

    assert dep.cli("verify", "--repair")["generations"][previous]["repaired"] is True
    gc = dep.cli("gc")
    assert gc["removed_sources"] == {"ext": 1} and "warnings" not in gc
    assert dep.cli("status")["removed_sources"] == {}
    assert dep.cli("verify")["consistent"] is True


def test_a_dead_letter_of_a_removed_source_is_not_retried(tmp_path: Path) -> None:
    """A code review's find: `dlq retry --all` with only a removed source's dead letters synced
    every configured source (an empty source list meant all) and failed on the letter it could
    not retry. It waits for `bindery gc` now, and a `--doc` naming it says so."""
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "empty.md").write_text("")
    (ext / "annex.md").write_text("# Annex\n\nThe tangerine budget of the harbour annex.\n")
    dep = Deployment(tmp_path)
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    dep.cli("sync")
    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    assert dep.cli("dlq", "retry", "--all") == {"retried": 0, "resolved": 0, "still_failing": []}
    dep.cli("dlq", "retry", "--doc", "empty.md", expect=2)


def test_a_withholding_run_killed_after_its_delete_leaves_nothing_out_when_put_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`unindex_source` marks the rows pending before it deletes: a run that died between the
    delete and the bookkeeping left rows naming their digest, and the source put back read
    "unchanged" and stayed out of the index (a review's find)."""
    import assets.index_stage as index_stage

    dep, ext = _with_ext(tmp_path)
    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()

    def killed(*args: object, **kw: object) -> None:
        raise KeyboardInterrupt  # the process stops after the index delete, before any bookkeeping

    with monkeypatch.context() as m:
        m.setattr(index_stage, "publish", killed)
        dep.cli("sync", expect=130)
    dep.config["sources"].append({"name": "ext", "kind": "local", "root": str(ext)})
    dep.save()
    dep.cli("sync")
    assert ("ext", "annex.md") in _hits(dep, "tangerine budget harbour annex")
    assert dep.cli("verify")["consistent"] is True


def test_with_no_source_left_status_says_the_documents_stay_searchable(tmp_path: Path) -> None:
    """A sync refuses to run without sources (an emptied configuration must not withdraw the
    whole index), so status must not promise that a sync withholds them (an attacker pass: it
    did, while the documents stayed searchable)."""
    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.config["sources"] = []
    dep.save()
    from orchestration.report import _human_status

    status = dep.cli("status")
    assert status["removed_sources"] == {"docs": status["documents"]}
    text = _human_status(status)
    assert "stay searchable" in text and "a sync withholds" not in text
    dep.cli("sync", expect=2)


def test_the_first_index_step_after_a_removal_reports_the_totals_without_the_source(tmp_path: Path) -> None:
    """The step that takes a removed source out reported the generation's totals as they were
    before (a Dagster UI pass: 31 documents in the run's metadata, 28 in `bindery status`)."""
    from assets.index_stage import run_index
    from assets.runtime import Runtime

    dep, _ = _with_ext(tmp_path)
    dep.config["sources"] = [s for s in dep.config["sources"] if s["name"] != "ext"]
    dep.save()
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    try:
        rt = Runtime(cfg, store)
        live = rt.lifecycle.live()
        assert live is not None
        stats = run_index(rt, "docs", [live])
        held = store.get_generation(live.id)
        assert held is not None
        assert stats.generations[live.name]["generation_documents"] == held.counts["documents"]
        assert held.counts["documents"] == dep.cli("status")["documents"] - 1  # ext's row stays until gc
    finally:
        store.dispose()
