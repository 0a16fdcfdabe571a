"""The UI tells the truth about generations (issue 12, item 5), read back from a real Dagster
instance's event log: `dg.materialize()` of the stage assets and of the promotion assets on a tmp
corpus and a real store, with the embedder swapped by resource (no model loads).

- every generation's builds are its own: the index step records a materialisation on the
  `generation` partition of each generation it wrote, with that generation's counts;
- `vector_index` / `keyword_index` are the live index: a reindex that writes only the candidate
  does not materialise them (their freshness is the live index's, not the candidate's);
- a forced promotion is recorded on the candidate's own partition: a failed WARN `eval_gate`
  check saying who forced it and why, and an `index_binding` materialisation marked forced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pytest
import yaml

from assets.pipeline import (
    GENERATION,
    STAGE_ASSETS,
    SUBMITTED_CONFIG_TAG,
    SUBMITTED_DIGEST_TAG,
    TARGET_TAG,
    config_digest,
)
from connectors.config import EmbedConfig, load_config
from connectors.embedder import embedder_id
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore
from orchestration.definitions import resources
from orchestration.promotion import generation_eval, index_binding

NOTES = {"heron.md": "# Herons\n\nHerons wade in shallow water and stand still for hours before they strike.\n",
         "walrus.md": "# Walruses\n\nWalruses haul out on sea ice and use their tusks to climb out of the water.\n"}


class _Vectors:
    max_seq_length = 256

    def __init__(self, config: EmbedConfig):
        self.id = embedder_id(config)  # the id the generation's stage versions expect

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.array([[1.0, float(len(t) % 7), float(len(t) % 5), 1.0] for t in texts], dtype=np.float32)


class _FakeEmbedderResource(dg.ConfigurableResource["_FakeEmbedderResource"]):
    def embedder(self, config: EmbedConfig) -> Any:
        return _Vectors(config)


class _System:
    """A store, an instance and a configuration whose chunker can be changed (a new generation)."""

    def __init__(self, tmp_path: Path) -> None:
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        for name, text in NOTES.items():
            (corpus / name).write_text(text)
        self.config_path = tmp_path / "bindery.yaml"
        self.config: dict[str, Any] = {"data_dir": str(tmp_path / "data"),
                                       "sources": [{"name": "docs", "kind": "local", "root": str(corpus)}]}
        self.save()
        self.instance = dg.DagsterInstance.ephemeral()
        self.instance.add_dynamic_partitions("sources", ["docs"])

    def save(self) -> None:
        self.config_path.write_text(yaml.safe_dump(self.config))

    def resources(self) -> dict[str, Any]:
        return {**resources(str(self.config_path)), "embedder": _FakeEmbedderResource()}

    def lifecycle(self) -> Lifecycle:
        cfg = load_config(str(self.config_path))
        return Lifecycle(cfg, DocumentStore(cfg.database_url))

    def stages(self, **tags: str) -> dg.ExecuteInProcessResult:
        result = dg.materialize(STAGE_ASSETS, partition_key="docs", instance=self.instance,
                                resources=self.resources(), tags=tags)
        assert result.success
        return result

    def records(self, asset: str | dg.AssetKey, partition: str | None = None) -> list[dg.EventLogRecord]:
        key = dg.AssetKey(asset) if isinstance(asset, str) else asset
        flt = dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None)
        return list(self.instance.fetch_materializations(flt, limit=100).records)


def _meta(rec: dg.EventLogRecord) -> dict[str, Any]:
    mat = rec.asset_materialization
    assert mat is not None
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def test_each_generation_has_its_own_builds_and_a_reindex_never_freshens_the_live_index(tmp_path: Path) -> None:
    s = _System(tmp_path)
    first = s.stages()  # a sync on a fresh system: generation 1, bound once published
    live = s.lifecycle().live()
    assert live is not None
    (g1,) = s.records(GENERATION.key, live.name)
    assert g1.run_id == first.run_id
    meta = _meta(g1)
    assert meta["written_chunks"] >= 2 and isinstance(meta["seconds"], float)
    assert meta["generation_chunks"] == meta["written_chunks"]  # the whole generation, every source
    assert {k: v for k, v in meta.items() if k not in ("written_chunks", "generation_chunks", "seconds")} == {
        "written_docs": 2, "deleted_docs": 0, "revoked_docs": 0, "unchanged_docs": 0, "incomplete_docs": 0,
        "generation_documents": 2, "source": "docs", "role": "written", "live": True}
    (bound,) = s.records("index_binding", live.name)
    assert _meta(bound)["first_generation"] is True and _meta(bound)["live"] == live.id
    for asset in ("vector_index", "keyword_index"):
        (mat,) = s.records(asset, "docs")
        assert mat.run_id == first.run_id and _meta(mat)["generation"] == live.name
        assert _meta(mat)["written_docs"] == 2

    s.config["stages"] = {"chunk": {"max_tokens": 48, "overlap_tokens": 0, "min_tokens": 0}}
    s.save()
    reindex = s.stages(**{TARGET_TAG: "candidate"})
    cand = s.lifecycle().candidate()
    assert cand is not None and cand.name != live.name
    # the candidate's build is on its own partition, with its own counts
    (c1,) = s.records(GENERATION.key, cand.name)
    assert c1.run_id == reindex.run_id
    assert _meta(c1)["role"] == "written" and _meta(c1)["live"] is False and _meta(c1)["written_docs"] == 2
    # the live generation's record is unchanged (nothing was deleted or revoked in it)
    assert [r.storage_id for r in s.records(GENERATION.key, live.name)] == [g1.storage_id]
    # and the live index does not look freshly materialised by a run that never wrote it
    for asset in ("vector_index", "keyword_index"):
        assert [r.run_id for r in s.records(asset)] == [first.run_id], asset
    assert not [e for e in reindex.get_asset_materialization_events()
                if e.asset_key and e.asset_key.to_user_string() in ("vector_index", "keyword_index")]
    assert set(s.instance.get_dynamic_partitions("generations")) == {live.name, cand.name}

    # a sync writes both: each generation gets its own record, the live index names live
    sync = s.stages()
    for name, is_live in ((live.name, True), (cand.name, False)):
        latest = s.records(GENERATION.key, name)[0]
        assert latest.run_id == sync.run_id and _meta(latest)["live"] is is_live
    assert _meta(s.records("vector_index", "docs")[0])["generation"] == live.name


def test_a_forced_promotion_is_recorded_on_the_candidate_as_forced_with_its_reason(tmp_path: Path) -> None:
    s = _System(tmp_path)
    s.stages()
    live = s.lifecycle().live()
    s.config["stages"] = {"chunk": {"max_tokens": 48, "overlap_tokens": 0, "min_tokens": 0}}
    s.save()
    s.stages(**{TARGET_TAG: "candidate"})
    cand = s.lifecycle().candidate()
    assert live is not None and cand is not None
    conf = {"force": True, "reason": "hotfix for the heron index", "forced_by": "ops"}
    # no eval set configured: the gate cannot run, so only a forced promotion may go on
    result = dg.materialize([generation_eval, index_binding], partition_key=cand.name, instance=s.instance,
                            resources=s.resources(),
                            run_config={"ops": {"generation_eval": {"config": conf},
                                                "index_binding": {"config": conf}}})
    assert result.success
    now_live = s.lifecycle().live()
    assert now_live is not None and now_live.name == cand.name

    checks = [e.dagster_event.event_specific_data for e in s.instance.all_logs(
        result.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION) if e.dagster_event]
    assert len(checks) == 1
    check = checks[0]
    assert isinstance(check, dg.AssetCheckEvaluation)
    assert check.check_name == "eval_gate" and check.partition == cand.name
    assert check.passed is False and check.severity == dg.AssetCheckSeverity.WARN
    assert (check.description or "").startswith("FORCED by ops: hotfix for the heron index (gate: ")
    assert {k: getattr(v, "value", v) for k, v in check.metadata.items()} | {"regressed": 0, "improved": 0} == {
        "regressed": 0, "improved": 0, "forced": True, "forced_by": "ops",
        "forced_reason": "hotfix for the heron index", "candidate": cand.name}

    (judged,) = s.records("generation_eval", cand.name)
    assert _meta(judged)["passed"] is False
    flips = s.records("index_binding", cand.name)
    assert len(flips) == 1 and flips[0].run_id == result.run_id
    assert {k: _meta(flips[0])[k] for k in ("forced", "forced_by", "forced_reason")} == {
        "forced": True, "forced_by": "ops", "forced_reason": "hotfix for the heron index"}
    # the live generation's own history holds only its first binding, and no verdict
    assert [_meta(r)["first_generation"] for r in s.records("index_binding", live.name)] == [True]
    assert s.records("generation_eval", live.name) == []

    # index_binding materialised alone from the asset graph (an operator pass): one line saying
    # why, not Dagster's 'Error occurred while executing op "index_binding"' with the reason
    # in its causes, nor "the live binding moved while this ran" for a verdict from before a flip
    def alone(partition: str) -> str:
        res = dg.materialize([index_binding], partition_key=partition, instance=s.instance,
                             resources=s.resources(), raise_on_error=False)
        failure = res.failure_data_for_node("index_binding")
        assert not res.success and failure is not None and failure.error is not None
        return failure.error.message

    assert f"generation {now_live.id} is live: only a candidate or the previous" in alone(cand.name)
    # the first generation's verdict ("nothing to compare with") was judged with nothing live: it
    # does not flip back to it past the gate (a check pass: it was judged inside the flip)
    assert (f"generation {live.name}'s gate verdict was judged with no generation live, and generation "
            f"{now_live.id} is live now: launch the promote job") in alone(live.name)
    s.lifecycle().store.update_generation(live.id, eval_report=None)
    assert f"generation {live.name} has not been judged: launch the promote job" in alone(live.name)
    s.lifecycle().record_verdict(live.id, {"passed": True, "reasons": [], "live_generation": 999})
    s.lifecycle().record_verdict(now_live.id, {"passed": True, "reasons": [], "live_generation": 999})
    # the live (or a retired) generation is refused as such, whatever its stored verdict says: the
    # stale-verdict line sent an operator to promote the generation already live (a check pass)
    assert f"generation {now_live.id} is live: only a candidate or the previous" in alone(cand.name)
    assert (f"generation {live.name}'s gate verdict was judged against generation 999, and generation "
            f"{now_live.id} is live now") in alone(live.name)


def test_a_run_submitted_under_another_configuration_is_refused(tmp_path: Path) -> None:
    """`bindery sync --submit` tags its runs with its --config and the file's digest; the daemon's
    code location reads its own BINDERY_CONFIG. An audit submitted with one file and the run used
    the other's sources and endpoints without a word: the listing now refuses, naming both."""
    s = _System(tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(s.config_path.read_text() + "# another deployment's file\n")
    tags = {SUBMITTED_CONFIG_TAG: str(other), SUBMITTED_DIGEST_TAG: config_digest(str(other))}
    result = dg.materialize(STAGE_ASSETS, partition_key="docs", instance=s.instance, resources=s.resources(),
                            tags=tags, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "other.yaml" in str(failure.step_failure_data.error) and "BINDERY_CONFIG" in str(
        failure.step_failure_data.error)
    assert s.lifecycle().live() is None  # nothing ran under the wrong file
    # the same contents at another path (a worker mounts the file elsewhere) run
    same = tmp_path / "mounted" / "bindery.yaml"
    same.parent.mkdir()
    same.write_text(s.config_path.read_text())
    s.stages(**{SUBMITTED_CONFIG_TAG: str(same), SUBMITTED_DIGEST_TAG: config_digest(str(same))})
    assert s.lifecycle().live() is not None

    # a re-execution from a failed step (the UI's "from failure") starts past the listing: refused there too
    past_the_listing = ["chunks", "contextual_prefixes", "embeddings", "vector_index", "keyword_index"]
    result = dg.materialize(STAGE_ASSETS, selection=past_the_listing, partition_key="docs", instance=s.instance,
                            resources=s.resources(), tags=tags, raise_on_error=False)
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert failure.step_key == "chunks" and "other.yaml" in str(failure.step_failure_data.error)
    cfg = load_config(str(s.config_path))
    source = DocumentStore(cfg.database_url).get_source("docs")
    assert source is not None and source.last_error is None  # the run's mistake, not the source's


def test_a_configuration_edited_while_a_run_goes_on_is_the_next_runs(tmp_path: Path) -> None:
    """A run compares the digest it was started with against what its code location *loaded*, not
    against the file as it is by a later step: an operator who edits bindery.yaml during a long
    sync does not fail that sync's remaining steps."""
    from assets.pipeline import same_configuration
    from connectors.config import load_config
    from connectors.errors import ConfigError

    s = _System(tmp_path)
    cfg = load_config(s.config_path)
    tags = {SUBMITTED_CONFIG_TAG: str(s.config_path), SUBMITTED_DIGEST_TAG: config_digest(str(s.config_path))}
    s.config_path.write_text(s.config_path.read_text() + "# edited during the run\n")
    same_configuration(tags, cfg)  # the configuration this run loaded: goes on
    with pytest.raises(ConfigError, match="was edited after this run was started"):
        same_configuration(tags, load_config(s.config_path))  # a code location that loaded the edit
    # refused in the step as one line (a Dagster Failure), not a wrapped traceback
    result = dg.materialize(STAGE_ASSETS, partition_key="docs", instance=s.instance, resources=s.resources(),
                            tags=tags, raise_on_error=False)
    failure = next(e for e in result.all_events if e.is_step_failure)
    error = failure.step_failure_data.error
    assert failure.step_key == "source_listing" and error is not None
    assert error.cls_name == "Failure" and "was edited after this run was started" in error.message
