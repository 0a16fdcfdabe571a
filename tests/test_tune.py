"""The tuning/checking split of `bindery tune`: what is chosen on must never include what judges.

These tests fail if a checking-half case could reach the tuning half (overlap, a seed that is
ignored, a split that depends on file order), or if a category were left out of a half.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from connectors.config import BinderyConfig
from connectors.errors import ConfigError
from connectors.store import DocumentStore
from evals.evalset import EvalCase, Gold, load_eval_set
from evals.split import split_cases
from evals.tune import parse_budget
from tests.bindery_fixture import Deployment


def _cases(counts: dict[str, int]) -> list[EvalCase]:
    return [EvalCase(id=f"{cat}-{i}", query=f"q {cat} {i}", gold=(Gold(doc=f"{cat}/{i}.md"),), category=cat)
            for cat, n in counts.items() for i in range(n)]


def test_one_shared_question_is_named_in_the_singular() -> None:
    """"1 questions of the checking half are also in the tuning half" (an operator pass)."""
    from evals.split import EvalSplit
    from evals.tune import _shared_questions

    a, b = _cases({"a": 2})
    msg = _shared_questions(EvalSplit(tune=(a,), check=(EvalCase(id="dup", query=a.query, gold=a.gold), b)))
    assert msg is not None and msg.startswith("1 question of the checking half is also in the tuning half")


def test_halves_are_disjoint_and_complete() -> None:
    cases = _cases({"a": 11, "b": 4, "c": 1})
    split = split_cases(cases)
    tune_ids = {c.id for c in split.tune}
    check_ids = {c.id for c in split.check}
    assert not tune_ids & check_ids
    assert tune_ids | check_ids == {c.id for c in cases}


def test_split_is_stratified_by_category() -> None:
    split = split_cases(_cases({"a": 11, "b": 4, "c": 1, "d": 2}))
    tune = Counter(c.category for c in split.tune)
    check = Counter(c.category for c in split.check)
    assert tune == {"a": 6, "b": 2, "c": 1, "d": 1}
    assert check == {"a": 5, "b": 2, "d": 1}


def test_split_does_not_depend_on_file_order_and_follows_the_seed() -> None:
    cases = _cases({"a": 30, "b": 20})
    shuffled = list(cases)
    random.Random(3).shuffle(shuffled)
    first, again = split_cases(cases, seed=8), split_cases(shuffled, seed=8)
    assert {c.id for c in first.check} == {c.id for c in again.check}
    other = split_cases(cases, seed=9)
    assert {c.id for c in first.check} != {c.id for c in other.check}


def test_the_advice_prints_settings_as_yaml_the_configuration_takes() -> None:
    """`tune` tells an operator which settings to copy into bindery.yaml: as YAML that loads into
    the configuration as is (a Python dict of dotted keys could not be pasted: a new-user pass)."""
    import yaml

    from connectors.config import config_from_dict
    from orchestration.report import settings_yaml

    text = settings_yaml({"query.unit_weight": 0.3, "query.fusion": "rrf", "stages.chunk.max_tokens": 256})
    assert "{" not in text and "'" not in text
    cfg = config_from_dict(yaml.safe_load(text))
    assert (cfg.query.unit_weight, cfg.query.fusion, cfg.stages.chunk.max_tokens) == (0.3, "rrf", 256)


def test_combinations_that_are_no_configuration_are_skipped_and_said_before_any_trial() -> None:
    """A tune pass: max_tokens [200, 40] x overlap_tokens [30, 50] holds (40, 50), which no
    configuration allows; it was met after trial generations were built, and the whole search
    ended in a pydantic message. It is left out of the trials and named in a warning."""
    from connectors.config import config_from_dict
    from evals.tune import trial_settings

    cfg = config_from_dict({"data_dir": "/tmp/unused", "stages": {"chunk": {"max_tokens": 200, "overlap_tokens": 30}}})
    space = {"stages.chunk.max_tokens": [200, 40], "stages.chunk.overlap_tokens": [30, 50]}
    settings, skipped = trial_settings(cfg, space, seed=7, ingestion=True)
    pairs = [(s["stages.chunk.max_tokens"], s["stages.chunk.overlap_tokens"]) for s in settings]
    assert pairs[0] == (200, 30) and sorted(pairs[1:]) == [(40, 30), (200, 50)]
    assert skipped is not None and skipped.startswith("1 of 4 combinations") and "overlap_tokens (50)" in skipped
    assert trial_settings(cfg, {"stages.chunk.max_tokens": [200, 300]}, seed=7, ingestion=True)[1] is None


def test_fraction_outside_the_open_interval_is_refused() -> None:
    with pytest.raises(ValueError):
        split_cases(_cases({"a": 4}), fraction=1.0)


# --- bindery tune on a real, synced deployment ----------------------------------------------------

@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    dep = Deployment(tmp_path_factory.mktemp("tune"))
    dep.config["tune"] = {"space": {"query.rrf_k": [10, 60], "query.same_doc_decay": [0.5, 0.7]}, "budget": 4}
    dep.save()
    dep.cli("sync")
    return dep


def test_tune_reports_both_halves_and_recomputes_nothing(synced: Deployment) -> None:
    out = synced.cli("tune")
    assert len(out["trials"]) == 4
    assert out["trials"][0]["settings"] == {"query.rrf_k": 60, "query.same_doc_decay": 0.7}  # defaults first
    assert out["split"]["tune"] + out["split"]["check"] == 8
    for trial in out["trials"]:
        assert set(trial) >= {"settings", "tune", "check", "seconds"}
        assert trial["parsed"] == 0 and trial["embedded"] == 0  # query-time trials: no ingestion
    assert out["best"] == out["trials"][out["best_index"]]
    store = DocumentStore(f"sqlite:///{synced.data / 'bindery.db'}", migrate=False)
    try:
        event = store.events("tune", limit=1)[0]
    finally:
        store.dispose()
    assert len(event.details["trials"]) == 4


def test_choice_does_not_depend_on_the_checking_half(synced: Deployment, tmp_path: Path) -> None:
    """Relabel every checking-half case to an impossible gold: the choice and tuning scores stay."""
    cases = load_eval_set(synced.eval_path)
    check_ids = {c.id for c in split_cases(cases).check}
    rows = [json.loads(line) for line in synced.eval_path.read_text().splitlines()]
    for row in rows:
        if row["id"] in check_ids:
            row["gold"] = [{"doc": "robots/xr4471.md", "text": "words no chunk contains"}]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = synced.cli("tune")
    second = synced.cli("tune", "--queries", str(broken))
    assert [t["tune"] for t in first["trials"]] == [t["tune"] for t in second["trials"]]
    assert first["best"]["settings"] == second["best"]["settings"]
    assert all(t["check"]["recall@10"] == 0.0 for t in second["trials"])


def _refused_space(dep: Deployment, space: dict[str, list[object]]) -> str:
    """The one-line error `bindery tune` gives for `space`; the module's space put back after."""
    dep.config["tune"] = {"space": space}
    dep.save()
    try:
        return str(dep.cli("tune", expect=2)["error"])
    finally:
        dep.config["tune"] = {"space": {"query.rrf_k": [10, 60]}, "budget": 2}
        dep.save()


def _one_question_per_category(dep: Deployment, tmp_path: Path) -> Path:
    """An eval set whose checking half would be empty."""
    rows = [json.loads(line) for line in dep.eval_path.read_text().splitlines()]
    path = tmp_path / "single.jsonl"
    path.write_text("".join(json.dumps({**r, "category": f"c{i}"}) + "\n" for i, r in enumerate(rows[:3])))
    return path


def test_tune_waits_for_a_sync_of_its_sources_before_its_first_trial(
        synced: Deployment, capfd: pytest.CaptureFixture[str]) -> None:
    """A tune pass: `bindery tune` started beside a sync measured its first trial on a live
    generation the sync was writing, and counted the sync's embeddings as the trial's."""
    import threading

    from connectors.config import load_config
    from orchestration.source_locks import source_lock

    held = threading.Event()

    def sync_running() -> None:
        with source_lock(load_config(synced.config_path), "docs"):
            held.set()
            time.sleep(1.5)

    t = threading.Thread(target=sync_running)
    t.start()
    held.wait(10)
    t0 = time.perf_counter()
    out = synced.cli("tune", "--budget", "1")
    t.join()
    assert time.perf_counter() - t0 >= 1.0 and len(out["trials"]) == 1
    assert "waiting for another run of source 'docs' to finish" in capfd.readouterr().err


def test_bad_keys_and_budgets_are_refused(synced: Deployment) -> None:
    assert "stages.chunk" in _refused_space(synced, {"stages.parse.ocr": [True, False]})
    with pytest.raises(ConfigError):
        parse_budget("soon")
    assert parse_budget("10m").seconds == 600 and parse_budget(3).trials == 3


@pytest.fixture(scope="module")
def cut_apart(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """A deployment whose chunks are cut too small, each its own unit: tuning can only improve it."""
    dep = Deployment(tmp_path_factory.mktemp("tune-ingest"))
    dep.set_stage("chunk", max_tokens=24, overlap_tokens=0, min_tokens=0, parent_max_tokens=0)
    dep.config["tune"] = {"space": {"stages.chunk.parent_max_tokens": [0, 800],
                                    "query.same_doc_decay": [0.7, 0.5]}, "budget": 4}
    dep.save()
    dep.cli("sync")
    return dep


def _statuses(dep: Deployment) -> list[str]:
    store = DocumentStore(f"sqlite:///{dep.data / 'bindery.db'}", migrate=False)
    try:
        return [g.status for g in store.generations()]
    finally:
        store.dispose()


def test_a_trial_interrupted_while_it_builds_is_dropped(cut_apart: Deployment,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during a trial's reindex: no half-built candidate is left for the next sync to finish."""
    from connectors.config import load_config
    from orchestration.runs import Runner

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Runner, "run_sources", interrupted)
    dropped = _statuses(cut_apart).count("dropped")
    _tune_until_interrupted(cut_apart, load_config(cut_apart.config_path))
    statuses = _statuses(cut_apart)
    assert "building" not in statuses and statuses.count("dropped") == dropped + 1


def _tune_until_interrupted(dep: Deployment, cfg: BinderyConfig) -> None:
    """`tune_generations` against the live generation, whose trial build a test interrupts."""
    from connectors.lifecycle import Lifecycle
    from orchestration.tuning import tune_generations

    store = DocumentStore(f"sqlite:///{dep.data / 'bindery.db'}", migrate=False)
    try:
        live = Lifecycle(cfg, store).live()
        assert live is not None
        with pytest.raises(KeyboardInterrupt):
            tune_generations(cfg, store, live.record)
    finally:
        store.dispose()


def test_a_trial_of_a_sharded_source_is_built_shard_by_shard(cut_apart: Deployment,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator pass: with `shards: 3` on a source, `bindery tune` over an ingestion key ended in
    `internal error: DagsterUnknownPartitionError` (the trial reindex ran the source's bare name,
    which is no partition of a sharded source); it runs the shards, as `bindery reindex` does."""
    from connectors.config import load_config
    from connectors.shards import all_partition_keys
    from orchestration.runs import Runner

    asked: list[list[str]] = []

    def record(_runner: object, _job: str, partitions: list[str], **__: object) -> None:
        asked.append(list(partitions))
        raise KeyboardInterrupt  # stop there: the trial is dropped, as after Ctrl-C

    monkeypatch.setattr(Runner, "run_sources", record)
    cfg = load_config(cut_apart.config_path)
    cfg.sources[0].shards = 3
    _tune_until_interrupted(cut_apart, cfg)
    assert asked == [all_partition_keys(cfg)] and len(asked[0]) == 3
    assert "building" not in _statuses(cut_apart)


def test_ingestion_settings_are_tuned_through_one_generation_each(cut_apart: Deployment) -> None:
    out = cut_apart.cli("tune")
    settings = [t["settings"] for t in out["trials"]]
    assert [s["stages.chunk.parent_max_tokens"] for s in settings] == [0, 0, 800, 800]  # as it stands first
    assert settings[0]["query.same_doc_decay"] == 0.7
    # the unit budget changes no chunk text: the trial generation re-uses every parse and embedding
    assert all(t["parsed"] == 0 and t["embedded"] == 0 for t in out["trials"])
    assert out["built"] is None
    statuses = _statuses(cut_apart)
    assert statuses.count("live") == 1 and "building" not in statuses  # judged trials are dropped
    # the built trial's configuration file (trial 0 is live itself): kept while a tune may still
    # build from it, then gc's
    trials = list((cut_apart.data / "tune").glob("trial-*.yaml"))
    assert len(trials) == 1
    assert cut_apart.cli("gc")["tune_configs"] == 0 and trials[0].exists()
    hour_ago = time.time() - 3700
    os.utime(trials[0], (hour_ago, hour_ago))
    assert cut_apart.cli("gc")["tune_configs"] == 1 and not trials[0].exists()


def test_tune_build_leaves_the_best_as_a_candidate_the_gate_passes(cut_apart: Deployment) -> None:
    out = cut_apart.cli("tune", "--build")
    assert out["best"]["settings"]["stages.chunk.parent_max_tokens"] == 800  # whole sections beat 24-token bits
    assert out["built"] is not None
    status = cut_apart.cli("status")
    assert status["candidate"] == out["built"]["id"]
    promoted = cut_apart.cli("promote")
    assert promoted["promoted"] and promoted["live"] == out["built"]["id"] and not promoted["forced"]


@pytest.fixture
def drifted(tmp_path: Path) -> Deployment:
    """Live built with 200-token chunks; the file since says 40 (`bindery status`: live_outdated)."""
    dep = Deployment(tmp_path / "drifted")
    dep.config["tune"] = {"space": {"stages.chunk.parent_max_tokens": [0, 800]}, "budget": 2}
    dep.save()
    dep.cli("sync")
    dep.set_stage("chunk", max_tokens=40, overlap_tokens=0)
    assert dep.cli("status")["live_outdated"]["stages"] == ["chunk"]
    return dep


def test_trial_zero_is_built_when_live_was_built_with_other_settings(drifted: Deployment) -> None:
    """Live cannot stand for "the configuration as it stands" then: trial 0 is built from the
    file, and `--build` keeps it although it is trial 0 (it measured live under the file's labels,
    and --build said the file's settings scored best without building them)."""
    out = drifted.cli("tune", "--build", "--budget", "1")
    assert len(out["trials"]) == 1 and out["trials"][0]["embedded"] > 0  # 40-token chunks: new texts
    assert "was built with other chunk settings" in out["warnings"][0]  # the contract's warning (a tune pass)
    assert "trial 0, the configuration as it stands, was built" in out["warnings"][0]
    assert out["built"] is not None
    store = DocumentStore(f"sqlite:///{drifted.data / 'bindery.db'}", migrate=False)
    try:
        built = store.get_generation(out["built"]["id"])
    finally:
        store.dispose()
    assert built is not None and built.stage_configs["chunk"]["max_tokens"] == 40


def test_query_time_trials_on_a_drifted_live_say_what_they_measure(drifted: Deployment) -> None:
    drifted.config["tune"] = {"space": {"query.rrf_k": [60, 10]}, "budget": 2}
    drifted.save()
    out = drifted.cli("tune")
    assert "was built with other chunk settings than the configuration's" in out["warnings"][0]
    assert out["built"] is None and all(t["embedded"] == 0 for t in out["trials"])  # nothing built


def test_a_candidate_in_the_way_is_named_and_discard_drops_it(drifted: Deployment) -> None:
    cand = drifted.cli("reindex")["candidate"]
    assert cand is not None and drifted.cli("status")["candidate"] == cand
    err = drifted.cli("tune", expect=1)
    assert "exists (built, not judged yet)" in err["error"] and "bindery discard" in err["error"]
    out = drifted.cli("discard", "--by", "ana")
    assert out["discarded"]["id"] == cand and out["by"] == "ana"
    assert drifted.cli("status")["candidate"] is None
    assert "no candidate generation to discard" in drifted.cli("discard", expect=1)["error"]
    for command in ("eval", "tune", "query"):  # its indexes are gone, and the refusal says so
        args = ["x"] if command == "query" else []
        err = drifted.cli(command, *args, "--generation", str(cand), expect=1)
        assert f"generation {cand} (" in err["error"] and "was dropped" in err["error"]


def test_the_gate_warns_of_gold_documents_no_generation_holds(drifted: Deployment, tmp_path: Path) -> None:
    drifted.cli("reindex")
    rows = [json.loads(line) for line in drifted.eval_path.read_text().splitlines()]
    rows[0]["gold"] = [{"doc": "nowhere/missing.md", "text": None}]
    typo = tmp_path / "typo.jsonl"
    typo.write_text("".join(json.dumps(r) + "\n" for r in rows))
    drifted.config["gate"] = {**drifted.config["gate"], "queries": str(typo), "tolerance": 0.9,
                              "max_regressions": 100}
    drifted.save()
    out = drifted.cli("promote")
    assert any("1 gold documents are not in the generations judged" in w and "nowhere/missing.md" in w
               for w in out["report"]["warnings"])


def test_an_eval_set_mistake_costs_no_trial_build(drifted: Deployment, tmp_path: Path) -> None:
    single = _one_question_per_category(drifted, tmp_path)
    before = _statuses(drifted)
    err = drifted.cli("tune", "--queries", str(single), expect=2)
    assert "the checking half is empty" in err["error"] and _statuses(drifted) == before  # nothing built
    assert err["reason"] == "usage" and err["error"].startswith("--queries: ")  # as the file's other mistakes
    rows = [json.loads(line) for line in drifted.eval_path.read_text().splitlines()]
    rows[0]["exclude_docs"] = [f"docs:{rows[0]['gold'][0]['doc']}"]  # its own gold, written with its source
    clash = tmp_path / "clash.jsonl"
    clash.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for command in ("tune", "eval"):
        err = drifted.cli(command, "--queries", str(clash), expect=2)
        assert "are also in 'exclude_docs'" in err["error"] and f"case {rows[0]['id']!r}" in err["error"]
    assert _statuses(drifted) == before


def test_tune_warns_and_refuses_what_makes_its_table_misleading(synced: Deployment, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in synced.eval_path.read_text().splitlines()]
    # every question twice under another id, one gold document that does not exist
    twice = [*rows, *({**r, "id": f"{r['id']}-again"} for r in rows)]
    twice[0] = {**twice[0], "gold": [{"doc": "nowhere/missing.md", "text": None}]}
    path = tmp_path / "twice.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in twice))
    out = synced.cli("tune", "--queries", str(path), "--budget", "1")
    assert any("gold documents are not in the generation tuned" in w for w in out["warnings"])
    assert any("also in the tuning half under another id" in w for w in out["warnings"])
    single = _one_question_per_category(synced, tmp_path)
    err = synced.cli("tune", "--queries", str(single), expect=2)
    assert "the checking half is empty" in err["error"] and str(single) in err["error"]


def test_tune_space_values_listed_twice_run_once_and_near_miss_keys_are_named(synced: Deployment) -> None:
    synced.config["tune"] = {"space": {"query.rrf_k": [10, 60, 10]}, "budget": 10}
    synced.save()
    assert [t["settings"] for t in synced.cli("tune")["trials"]] == [{"query.rrf_k": 60}, {"query.rrf_k": 10}]
    assert "did you mean 'query.unit_weight'" in _refused_space(synced, {"query.unit_wieght": [0.3]})
    assert "did you mean" not in _refused_space(synced, {"query.poll_second": [1]})  # near a refused key


def test_tune_job_runs_in_dagster_with_the_trials_table(synced: Deployment) -> None:
    from connectors.config import load_config
    from orchestration.runs import Runner

    synced.config["tune"] = {"space": {"query.rrf_k": [10, 60]}, "budget": 2}
    synced.save()
    res = Runner(load_config(synced.config_path)).run("tune", run_config={"ops": {"tune_settings": {"config": {}}}})
    assert res.success, res.error
    store = DocumentStore(f"sqlite:///{synced.data / 'bindery.db'}", migrate=False)
    try:
        event = store.events("tune", limit=1)[0]
    finally:
        store.dispose()
    assert "Dagster job" in event.message
    assert [t["settings"] for t in event.details["trials"]] == [{"query.rrf_k": 60}, {"query.rrf_k": 10}]


def test_tune_job_metadata_and_event_have_the_cli_json_shape(synced: Deployment) -> None:
    """The job's `result` metadata and its stored event hold what `bindery tune --json` prints:
    they lacked `generation` and `built`, so the UI's JSON differed from the CLI's."""
    from connectors.config import load_config
    from orchestration.runs import Runner

    synced.config["tune"] = {"space": {"query.rrf_k": [10, 60]}, "budget": 2}
    synced.save()
    cli = synced.cli("tune")
    runner = Runner(load_config(synced.config_path))
    res = runner.run("tune", run_config={"ops": {"tune_settings": {"config": {}}}})
    assert res.success, res.error
    outputs = [ev.dagster_event.step_output_data for ev in runner.instance.all_logs(res.run_id)
               if ev.dagster_event is not None and ev.dagster_event.event_type_value == "STEP_OUTPUT"]
    result = outputs[0].metadata["result"].value  # a JsonMetadataValue: the tune JSON
    assert isinstance(result, dict)
    assert set(result) == set(cli)
    assert result["generation"] == cli["generation"] and result["built"] is None
    store = DocumentStore(f"sqlite:///{synced.data / 'bindery.db'}", migrate=False)
    try:
        job_event, cli_event = store.events("tune", limit=2)
    finally:
        store.dispose()
    assert "Dagster job" in job_event.message
    assert set(job_event.details) == set(cli_event.details)
