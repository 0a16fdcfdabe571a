"""Sharded sources (connectors.shards): `shards: N` splits a source's work into N stable
partitions without changing what gets indexed.

Two layers: the split and the listing against a real folder and store (fast, no model), and
the real Dagster sync job through the CLI (the model loads): 4 shards index exactly the chunk
ids 1 shard does, a failing shard leaves the others' documents published, and changing N
loses nothing and recomputes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import assets.pipeline
from assets.chunk_stage import run_chunk
from assets.listing import run_listing
from assets.runtime import Runtime
from connectors.config import config_from_dict
from connectors.errors import UnsafeDeleteError
from connectors.identity import doc_id
from connectors.shards import Shard, ShardStore, all_partition_keys, parse_key, shard_of
from tests.bindery_fixture import DOCS
from tests.sync_helpers import LocalDeployment, assert_converged, hits, index_sets, mark_indexed, store_of

slow = pytest.mark.slow

# -- the split ------------------------------------------------------------------------------


def test_every_document_falls_in_exactly_one_stable_shard() -> None:
    ids = [doc_id("docs", f"file-{i}.md") for i in range(400)]
    for n in (1, 2, 4, 7):
        shards = [Shard("docs", k, n) for k in range(n)]
        for d in ids:
            assert sum(s.holds(d) for s in shards) == 1
    # sha256, not Python's per-process salted hash(): the same id always lands in the same shard
    assert shard_of(doc_id("docs", "a.md"), 4) == shard_of(doc_id("docs", "a.md"), 4) == 1
    counts = [sum(shard_of(d, 4) == k for d in ids) for k in range(4)]
    assert min(counts) > 60, counts  # roughly even: no shard is starved


def test_partition_keys_round_trip() -> None:
    cfg = config_from_dict({"sources": [{"name": "big", "root": "/x", "shards": 3},
                                        {"name": "small", "root": "/y"}]})
    keys = all_partition_keys(cfg)
    assert keys == ["big:shard-0-of-3", "big:shard-1-of-3", "big:shard-2-of-3", "small"]
    assert parse_key("big:shard-2-of-3") == ("big", Shard("big", 2, 3))
    assert parse_key("small") == ("small", None)
    assert all_partition_keys(cfg, ["small"]) == ["small"]


# -- the listing: judged whole, applied per shard ---------------------------------------------


def _folder(tmp: Path, n: int = 12) -> tuple[Path, Runtime]:
    root = tmp / "corpus"
    root.mkdir()
    for i in range(n):
        (root / f"d{i:02}.md").write_text(f"# Document {i}\n\nBody of document number {i}.\n")
    cfg = config_from_dict({"data_dir": str(tmp / "data"), "sources": [
        {"name": "docs", "kind": "local", "root": str(root), "shards": 4, "min_ratio": 0.5}]})
    return root, Runtime(cfg)


def _list_all_shards(rt: Runtime, **kw: Any) -> None:
    for k in range(4):
        run_listing(rt, "docs", shard=Shard("docs", k, 4), **kw)


def test_partitions_overlap_within_a_source_unless_two_shards_of_one_sharding() -> None:
    """After `shards:` changes, a run of `docs` and one of `docs:shard-0-of-2` write the same
    documents (a scale-out pass: a CLI sync ran beside the daemon's shard runs); two shards of
    one sharding do not, and run side by side."""
    from connectors.shards import overlapping

    assert overlapping("docs", "docs") and overlapping("docs", "docs:shard-0-of-2")
    assert overlapping("docs:shard-0-of-2", "docs:shard-1-of-4")
    assert overlapping("docs:shard-1-of-2", "docs:shard-1-of-2")
    assert not overlapping("docs:shard-0-of-2", "docs:shard-1-of-2")
    assert not overlapping("docs", "wiki") and not overlapping("docs", "wiki:shard-0-of-2")
    assert not overlapping("docs", "")  # a run without a partition (tune, promote)


def test_a_shards_listing_reports_its_own_failures_only(tmp_path: Path) -> None:
    """The listing step names what it dead-lettered (`ListingResult.failures`, the UI's
    `failed_items`): a shard's run names its own items, not the other shards' (a review)."""
    root, rt = _folder(tmp_path)
    for i in range(6):
        (root / f"broken{i}.md").symlink_to(tmp_path / f"nowhere{i}")
    named = []
    for k in range(4):
        res = run_listing(rt, "docs", shard=Shard("docs", k, 4))
        assert len(res.failures) == res.counts["failed"]
        assert all(shard_of(doc_id("docs", path), 4) == k for path, _, _ in res.failures)
        named += [(path, reason) for path, reason, _ in res.failures]
    assert sorted(named) == [(f"broken{i}.md", "broken-symlink") for i in range(6)]


def test_shard_listings_together_record_the_whole_source(tmp_path: Path) -> None:
    root, rt = _folder(tmp_path)
    run_listing(rt, "docs", shard=Shard("docs", 0, 4))
    first = {d.doc_id for d in rt.store.documents("docs")}
    assert first and all(shard_of(d, 4) == 0 for d in first)  # shard 0 wrote only its own documents
    _list_all_shards(rt)
    assert {d.external_id for d in rt.store.documents("docs")} == {p.name for p in root.iterdir()}
    narrowed = ShardStore(rt.store, Shard("docs", 0, 4))
    assert {d.doc_id for d in narrowed.documents("docs")} == first


def test_delete_guard_judges_the_whole_listing_not_the_shard(tmp_path: Path) -> None:
    root, rt = _folder(tmp_path)
    _list_all_shards(rt)
    mark_indexed(rt.store, "docs")
    before = {d.doc_id for d in rt.store.documents("docs")}
    # remove 7 of 12 (below min_ratio 50%), all outside one shard: that shard alone deletes nothing
    spared = next(k for k in range(4) if any(shard_of(d, 4) == k for d in before))
    victims = [p for p in sorted(root.iterdir()) if shard_of(doc_id("docs", p.name), 4) != spared][:7]
    assert len(victims) == 7
    for p in victims:
        p.unlink()
    for k in range(4):  # every shard refuses, the spared one included: the whole listing shrank
        with pytest.raises(UnsafeDeleteError, match="shrank to 5 items from 12"):
            run_listing(rt, "docs", shard=Shard("docs", k, 4))
    assert {d.doc_id for d in rt.store.documents("docs")} == before  # nothing deleted
    _list_all_shards(rt, allow_mass_delete=True)
    assert len(rt.store.documents("docs")) == 5


# -- the whole pipeline through the CLI ---------------------------------------------------------


def _sharded(tmp: Path, shards: int) -> LocalDeployment:
    dep = LocalDeployment(tmp)
    dep.config["sources"][0]["shards"] = shards
    dep.save()
    return dep


@slow
def test_four_shards_index_exactly_what_one_shard_does(tmp_path: Path) -> None:
    one, four = _sharded(tmp_path / "one", 1), _sharded(tmp_path / "four", 4)
    out1, out4 = one.cli("sync"), four.cli("sync")
    # the JSON reports the source, as the contract and `bindery plan` do: its shards' counts summed
    assert list(out1["sources"]) == list(out4["sources"]) == ["docs"]
    assert out4["sources"]["docs"] == out1["sources"]["docs"] and out4["sources"]["docs"]["new"] == len(DOCS)
    s1, s4 = assert_converged(one), assert_converged(four)
    assert s1["store"] == s4["store"] == s4["vector"] == s4["keyword"]
    assert hits(four, "heavy carrier payload")[0]["doc"] == "robots/xr5200.md"
    assert _check_partitions(four) == {f"docs:shard-{k}-of-4" for k in range(4)}  # each verdict names its shard


def _check_partitions(dep: LocalDeployment) -> set[str | None]:
    """Partitions the stored parse_quality evaluations name (what the UI shows per verdict)."""
    import dagster as dg

    from connectors.config import load_config
    from orchestration.instance import get_instance

    instance = get_instance(load_config(dep.config_path))
    key = dg.AssetCheckKey(dg.AssetKey("parsed_documents"), "parse_quality")
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=50)
    return {r.event.dagster_event.asset_check_evaluation_data.partition for r in records
            if r.event is not None and r.event.dagster_event is not None}


@slow
def test_a_failing_shard_leaves_the_other_shards_published(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    dep = _sharded(tmp_path, 4)
    doomed = shard_of(doc_id("docs", "robots/xr5200.md"), 4)  # shard 3 holds only this document
    real = run_chunk  # the name assets.pipeline calls

    def failing_chunk(rt: Runtime, source: str, *a: Any, **kw: Any) -> Any:
        shard = getattr(rt.store, "shard", None)
        if shard is not None and shard.index == doomed:
            raise RuntimeError("injected chunker failure")
        return real(rt, source, *a, **kw)

    monkeypatch.setattr(assets.pipeline, "run_chunk", failing_chunk)
    out = dep.cli("sync", expect=1)
    assert list(out["errors"]) == ["docs"] and out["errors"]["docs"].startswith(f"docs:shard-{doomed}-of-4: ")
    indexed = {h["doc"] for q in ("robot", "firmware rollback", "Lyon office", "on-call", "error codes")
               for h in hits(dep, q)}
    assert "robots/xr5200.md" not in indexed
    assert {"robots/xr4471.md", "ops/firmware.md", "people/lyon.md"} <= indexed
    monkeypatch.setattr(assets.pipeline, "run_chunk", real)
    dep.cli("sync")  # the failed shard catches up; the others find their work done
    assert_converged(dep)
    assert hits(dep, "heavy carrier payload")[0]["doc"] == "robots/xr5200.md"


@slow
def test_resharding_loses_nothing_and_recomputes_nothing(tmp_path: Path) -> None:
    dep = _sharded(tmp_path, 4)
    dep.cli("sync")
    before = assert_converged(dep)
    for n in (3, 1, 2):
        dep.config["sources"][0]["shards"] = n
        dep.save()
        out = dep.cli("sync")
        assert out["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}, n
        assert out["written"]["deleted"] == 0 and out["written"]["documents"] == 0, n
        assert sum(c["unchanged"] for c in out["sources"].values()) == len(DOCS), n
        after = assert_converged(dep)
        assert after["store"] == before["store"] and after["vector"] == before["vector"], n
    store = store_of(dep)
    try:
        assert len(store.documents("docs")) == len(DOCS)
    finally:
        store.dispose()
    assert parse_key(f"docs:shard-0-of-{2}")[1] == Shard("docs", 0, 2)
    assert index_sets(dep)["gen"].name == before["gen"].name  # the same live generation throughout


@slow
def test_a_dead_letter_of_a_sharded_source_is_retried_in_every_shard(tmp_path: Path) -> None:
    """Found by an adversarial pass: `dlq retry` ran the sync under the source's name, which a
    sharded source has no partition of (DagsterUnknownPartitionError, exit 1, nothing retried)."""
    dep = _sharded(tmp_path, 2)
    dep.write("notes/empty.md", "")
    dep.cli("sync")
    dep.write("notes/empty.md", "# Filled\n\nIt has words now.\n")
    out = dep.cli("dlq", "retry", "--all")
    assert out["retried"] == 1 and out["resolved"] == 1 and out["still_failing"] == []


def test_shards_failing_alike_make_one_entry_of_the_error_line() -> None:
    """An operator pass: 20 shards refused by one delete guard printed its message 20 times (a
    6 KB line). Partitions that failed alike share one entry; others keep their own."""
    from orchestration.summaries import errors_line

    errors = {f"docs#{k}/20": "delete sweep aborted: shrank" for k in range(20)} | {"wiki": "source down"}
    assert errors_line(errors) == ("docs#0/20, docs#1/20, docs#2/20 and 17 more: delete sweep aborted: shrank; "
                                   "wiki: source down")
    assert errors_line({"docs": "boom"}) == "docs: boom"
