"""`bindery discard` while a run is writing the candidate it drops: the run writes no more to it
(its folder, its snapshots and its index state stay gone) and the reindex says what happened,
instead of "run `bindery promote`" for a candidate no one can promote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from connectors.config import load_config
from connectors.generations import GenerationPaths
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore
from tests.bindery_fixture import Deployment


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    d = Deployment(tmp_path)
    d.cli("sync")
    d.set_stage("chunk", max_tokens=40, overlap_tokens=0)
    return d


def test_a_run_that_planned_a_candidate_discarded_since_writes_nothing_to_it(dep: Deployment) -> None:
    from assets.index_stage import run_index
    from assets.runtime import Runtime

    dep.cli("reindex")
    cfg = load_config(dep.config_path)
    store = DocumentStore(f"sqlite:///{dep.data / 'bindery.db'}", migrate=False)
    try:
        cand = Lifecycle(cfg, store).candidate()
        assert cand is not None
        dep.cli("discard")  # the run below still holds the generation as it was planned: building
        stats = run_index(Runtime(cfg, store), "docs", [cand])
        row = store.get_generation(cand.id)
        assert row is not None and row.status == "dropped"
        assert row.vector_snapshot is None and row.keyword_snapshot is None
        assert store.index_state(cand.id) == {} and cand.name not in stats.generations
    finally:
        store.dispose()
    paths = GenerationPaths.of(cfg, cand.name)
    assert not paths.root.exists() and not paths.snapshots.exists()


def test_a_reindex_whose_candidate_was_discarded_meanwhile_says_so(dep: Deployment,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestration.runs import Runner

    real = Runner.run_sources

    def discarded_meanwhile(self: Runner, *args: Any, **kw: Any) -> Any:
        out = real(self, *args, **kw)
        dep.cli("discard")
        return out

    monkeypatch.setattr(Runner, "run_sources", discarded_meanwhile)
    err = dep.cli("reindex", expect=1)
    assert "was dropped while this reindex ran" in err["error"] and "promote" not in err["error"]
