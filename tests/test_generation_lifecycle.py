"""`connectors.lifecycle` alone: the generation state machine on a real SQLite store, without
indexes, models or Dagster (the whole pipeline around it is tests/test_generations.py and the
model-based tests/test_lifecycle.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from connectors.config import BinderyConfig, config_from_dict
from connectors.errors import BindingError, ConfigError, GateRefused, UnknownGeneration
from connectors.lifecycle import Generation, Lifecycle
from connectors.store import DocumentStore, GenerationRecord

PASSED = {"passed": True, "reasons": ["better"]}
REFUSED = {"passed": False, "reasons": ["worse"]}


def _cfg(tmp_path: Path, max_tokens: int = 200, **extra: object) -> BinderyConfig:
    return config_from_dict({"data_dir": str(tmp_path / "data"), "sources": [],
                             "stages": {"chunk": {"max_tokens": max_tokens}}, **extra})


def _row(store: DocumentStore, gen_id: int) -> GenerationRecord:
    row = store.get_generation(gen_id)
    assert row is not None
    return row


def _published(lc: Lifecycle, gen_id: int) -> None:
    lc.store.update_generation(gen_id, published_at=time.time(), vector_snapshot="/snap")


def test_a_fresh_system_builds_generation_one_and_binds_it_once_published(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    lc = Lifecycle(cfg, DocumentStore(cfg.database_url))
    with pytest.raises(BindingError, match="no live generation yet"):
        lc.resolve("live")
    with pytest.raises(BindingError, match="no candidate generation"):
        lc.resolve(None)
    planned, maintained = lc.preview_targets("sync")
    assert [g.id for g in planned] == [0] and maintained == [] and lc.store.generations() == []  # described only
    (first,) = lc.targets("sync")
    assert first.status == "building" and first.name == planned[0].name
    assert lc.first_build() == first and lc.candidate() is None
    assert lc.bind_first([first]) is None  # nothing published: readers could not open it
    _published(lc, first.id)
    assert lc.bind_first([first]) == first.name
    live = lc.live()
    assert live is not None and live.id == first.id and live.status == "live"
    assert (_row(lc.store, first.id).eval_report or {})["passed"] is True
    assert lc.bind_first([first]) is None  # bound once
    assert [g.id for g in lc.targets("sync")] == [first.id]


def test_candidate_promotion_rollback_and_gc(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    store = DocumentStore(cfg.database_url)
    lc = Lifecycle(cfg, store)
    (g1,) = lc.targets("sync")
    _published(lc, g1.id)
    lc.bind_first([g1])
    assert lc.config_drift() == [] and lc.candidate() is None

    retention = {"keep_generations": 3, "rollback_window_hours": 1}
    lc2 = Lifecycle(_cfg(tmp_path, max_tokens=100, retention=retention), store)  # another chunker: g2
    assert "chunk" in lc2.config_drift()
    assert lc2.describe_candidate().id == 0
    (g2,) = lc2.targets("candidate")
    assert lc2.ensure_candidate() == g2 and lc2.describe_candidate() == g2  # reused, never duplicated
    assert [g.id for g in lc2.targets("sync")] == [g1.id, g2.id]  # a sync dual-writes
    assert [g.id for g in lc2.maintained([g2])] == [g1.id]  # a reindex maintains live
    assert lc2.candidate() == g2 and lc2.resolve("candidate").id == g2.id

    with pytest.raises(BindingError, match="no indexed data"):
        lc2.check_promotable(g2.record, force=False, reason=None)
    _published(lc2, g2.id)
    cand = lc2.resolve(g2.id)
    with pytest.raises(ConfigError, match=r"needs a reason \(--reason; in the UI, the promote job's `reason`\)"):
        lc2.check_promotable(cand, force=True, reason=None)
    with pytest.raises(GateRefused):
        lc2.promote(cand, REFUSED)
    assert lc2.live() == lc.live() and store.events(limit=1)[0].kind == "gate-refused"
    out = lc2.promote(cand, REFUSED, force=True, reason="hotfix", by="ops")
    assert out["forced"] and out["live"] == g2.id and out["previous"] == g1.id
    assert _row(store, g2.id).forced_by == "ops"
    with pytest.raises(BindingError, match="only a candidate"):
        lc2.check_promotable(_row(store, g2.id), force=False, reason=None)

    back = lc2.rollback(by="ops")
    assert back["live"] == g1.id and back["previous"] == g2.id
    live, previous = lc2.live(), lc2.previous()
    assert live is not None and previous is not None and (live.id, previous.id) == (g1.id, g2.id)

    g3 = Lifecycle(_cfg(tmp_path, max_tokens=300), store).ensure_candidate()
    g4 = Lifecycle(_cfg(tmp_path, max_tokens=400), store).ensure_candidate()  # supersedes g3
    assert _row(store, g3.id).status == "retired"
    with pytest.raises(BindingError, match="is retired: its indexes missed the deletes"):  # not maintained
        lc2.check_promotable(_row(store, g3.id), force=True, reason="roll forward")
    assert lc2.expired() == []  # inside the rollback window, within the budget
    assert [g.id for g in lc2.expired(now=time.time() + 7200)] == [g3.id]
    assert lc2.collect_garbage() == []
    store.update_generation(g3.id, retired_at=time.time() - 7200)
    assert lc2.collect_garbage() == [g3.name]
    assert _row(store, g3.id).status == "dropped"
    with pytest.raises(UnknownGeneration, match="no generation 99"):  # the caller's mistake: exit 2
        lc2.resolve("99")

    lc2.drop_candidate(g4.record, reason="a judged tune trial")
    assert _row(store, g4.id).status == "dropped" and lc2.building() is None
    with pytest.raises(BindingError, match="only a candidate can be dropped"):
        lc2.drop_candidate(_row(store, g1.id), reason="no")


def _holds(store: DocumentStore, gen_id: int, source: str, did: str) -> None:
    """An index-state row: generation `gen_id` holds document `did` of `source`."""
    store.set_index_state([{"generation_id": gen_id, "doc_id": did, "source": source, "digest": "d",
                            "chunks": 1, "indexed_at": 0.0, "acl_hash": "h"}])


def _first_live(tmp_path: Path, sources: list[dict[str, Any]]) -> tuple[BinderyConfig, DocumentStore, Generation]:
    """A fresh system over `sources` whose first generation is published and bound live."""
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "sources": sources})
    store = DocumentStore(cfg.database_url)
    lc = Lifecycle(cfg, store)
    (g1,) = lc.targets("sync")
    _published(lc, g1.id)
    lc.bind_first([g1])
    return cfg, store, g1


def test_a_candidate_built_for_some_sources_only_is_not_promoted(tmp_path: Path) -> None:
    """The UI's reindex runs per source partition: a candidate built for one source passed a
    gate whose questions were all about that source, and promoted it dropped the other source
    from search (a UI operator's find). Refused, forced or not, until every source is built."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    sources = [{"name": n, "root": str(tmp_path / n)} for n in ("a", "b")]
    _, store, g1 = _first_live(tmp_path, sources)

    def holds(gen_id: int, source: str) -> None:
        _holds(store, gen_id, source, f"{source}-1")

    holds(g1.id, "a")
    holds(g1.id, "b")
    lc2 = Lifecycle(config_from_dict({"data_dir": str(tmp_path / "data"), "sources": sources,
                                      "stages": {"chunk": {"max_tokens": 100}}}), store)
    (g2,) = lc2.targets("candidate")
    _published(lc2, g2.id)
    holds(g2.id, "a")
    with pytest.raises(BindingError, match="holds nothing of 'b'"):
        lc2.check_promotable(lc2.resolve(g2.id), force=True, reason="the gate passed anyway")
    holds(g2.id, "b")
    lc2.check_promotable(lc2.resolve(g2.id), force=False, reason=None)


def test_a_candidate_missing_a_shard_is_not_promoted(tmp_path: Path) -> None:
    """A sharded source's reindex runs per shard: a candidate holding one shard of it held "the
    source" by name, passed, and promoted would have dropped the other shard (a review's find)."""
    from connectors.shards import parse_key, partition_keys

    (tmp_path / "a").mkdir()
    sources = [{"name": "a", "root": str(tmp_path / "a"), "shards": 2}]
    cfg, store, g1 = _first_live(tmp_path, sources)
    keys = partition_keys(cfg.source("a"))
    shards = [parse_key(k)[1] for k in keys]
    docs = [f"doc-{i}" for i in range(40)]
    first = next(d for d in docs if shards[0] is not None and shards[0].holds(d))
    second = next(d for d in docs if shards[1] is not None and shards[1].holds(d))

    def holds(gen_id: int, did: str) -> None:
        _holds(store, gen_id, "a", did)

    holds(g1.id, first)
    holds(g1.id, second)
    lc2 = Lifecycle(config_from_dict({"data_dir": str(tmp_path / "data"), "sources": sources,
                                      "stages": {"chunk": {"max_tokens": 100}}}), store)
    (g2,) = lc2.targets("candidate")
    _published(lc2, g2.id)
    holds(g2.id, first)
    with pytest.raises(BindingError, match=keys[1]):
        lc2.check_promotable(lc2.resolve(g2.id), force=True, reason="the gate passed anyway")
    holds(g2.id, second)
    lc2.check_promotable(lc2.resolve(g2.id), force=False, reason=None)
