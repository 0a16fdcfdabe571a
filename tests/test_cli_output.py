"""What the CLI prints to a person and the flags every command shares (issue 11, item 4).

Fast: the store is set up directly (generations rows and the binding), no model, no run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pytest

from assets.listing import CLASSES
from connectors.config import load_config
from connectors.errors import IndexError_
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore
from connectors.versions import stage_configs_dump, stage_versions
from evals.gate import compare, minimum_detectable_difference
from evals.metrics import METRIC_NAMES, CaseResult
from evals.runner import EvalReport
from orchestration import report
from orchestration.cli import main
from orchestration.cli_parser import build_parser, parse_command_line, share_common_options
from tests.bindery_fixture import DOCS, Deployment


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    return Deployment(tmp_path)


def add_generation(dep: Deployment, n: int, *, chunk_tokens: int | None = None) -> int:
    """A generation row as a build leaves it (stage versions of the current or a changed config)."""
    cfg = load_config(dep.config_path)
    stages = cfg.stages.model_copy(deep=True)
    if chunk_tokens:
        stages.chunk.max_tokens = chunk_tokens
    versions = stage_versions(stages)
    store = DocumentStore(cfg.database_url)
    try:
        return store.create_generation(
            name=f"g{n}_test", status="building", stage_versions=versions,
            stage_configs=stage_configs_dump(stages), embedder_id=versions["embed"],
            vector_index=f"v{n}", keyword_index=f"k{n}", counts={"documents": 6, "chunks": 40 + n},
            created_at=time.time() - 3600)
    finally:
        store.dispose()


def flip(dep: Deployment, gen_id: int) -> None:
    store = DocumentStore(load_config(dep.config_path).database_url)
    try:
        store.flip_binding(gen_id, by="test")
    finally:
        store.dispose()


def test_json_flag_before_or_after_the_command(dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = str(dep.config_path)
    before = run(capsys, "--json", "--config", cfg, "status")
    after = run(capsys, "status", "--json", "--config", cfg)
    assert before[0] == after[0] == 0
    a, b = json.loads(before[1]), json.loads(after[1])
    assert a.keys() == b.keys() and {"live", "candidate", "documents", "chunks", "dead_letters", "sources"} <= a.keys()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("bindery ") and out.split()[1][0].isdigit()
    for argv in (["--version", "--json"], ["--json", "--version"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and json.loads(out) == {"version": version("bindery")}


def test_every_option_has_help_text() -> None:
    parser = build_parser()
    share_common_options(parser)
    missing = []
    for sub in (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)):
        for name, p in sub.choices.items():
            missing += [f"{name} {'/'.join(act.option_strings) or act.dest}" for act in p._actions
                        if not isinstance(act, argparse._HelpAction) and not act.help]
    assert missing == []


def test_human_status_is_a_table_not_raw_dicts(dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--config", str(dep.config_path), "status")
    assert code == 0 and "none yet: run `bindery sync`" in out
    live = add_generation(dep, 1)
    flip(dep, live)
    add_generation(dep, 2, chunk_tokens=120)
    code, out, _ = run(capsys, "--config", str(dep.config_path), "status")
    assert code == 0
    assert "{" not in out and "}" not in out  # no raw Python dicts
    lines = out.splitlines()
    header = next(line for line in lines if line.strip().startswith("role"))
    assert header.split() == ["role", "id", "name", "status", "documents", "chunks", "age", "gate"]
    live_row = next(line for line in lines if line.strip().startswith("live ")).split()
    assert live_row[:4] == ["live", "1", "g1_test", "live"] and live_row[5] == "41"
    assert any(line.strip().startswith("candidate") and "g2_test" in line for line in lines)
    stage_rows = {line.split()[0]: line.split()[1:] for line in lines[lines.index("stage versions") + 3:]
                  if line.startswith("  ") and line.split()[0] in ("parse", "chunk", "context", "embed")}
    assert stage_rows["chunk"][0] != stage_rows["chunk"][1] and stage_rows["embed"][0] == stage_rows["embed"][1]
    assert any(line.strip().startswith("docs") and "local" in line for line in lines)


def test_a_flip_back_to_a_generation_without_a_source_says_it_leaves_search(
        dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    """A UI pass: promoting the previous generation, built before a source was added, took that
    source's documents out of search with no word (as `bindery rollback` would). Both say so now."""
    g1, g2 = add_generation(dep, 1), add_generation(dep, 2)
    flip(dep, g1)
    flip(dep, g2)
    store = DocumentStore(load_config(dep.config_path).database_url)
    store.set_index_state([{"generation_id": g2, "doc_id": "d1", "source": "docs", "digest": "x", "chunks": 1,
                            "indexed_at": time.time(), "acl_hash": ""}])  # only the live one holds 'docs'
    store.dispose()
    code, out, _ = run(capsys, "--config", str(dep.config_path), "rollback")
    assert code == 0 and f"warning: generation {g1} holds nothing of 'docs'" in out
    code, out, _ = run(capsys, "--config", str(dep.config_path), "--json", "rollback")  # back: g2 holds it
    assert code == 0 and json.loads(out)["warnings"] == []


def _hold(dep: Deployment, gen_id: int, docs: range) -> None:
    store = DocumentStore(load_config(dep.config_path).database_url)
    store.set_index_state([{"generation_id": gen_id, "doc_id": f"d{i}", "source": "docs", "digest": "x",
                            "chunks": 1, "indexed_at": time.time(), "acl_hash": ""} for i in docs])
    store.dispose()


def test_a_flip_back_to_a_generation_lacking_documents_of_a_source_names_how_many(
        dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    """An operator pass: `promote --candidate` of the previous generation, which lacked 705 of a
    source's documents added since (a sync writes new ones into live alone), passed in silence:
    only a source it held nothing of was warned of. A material share lacking is named, with counts."""
    g1, g2 = add_generation(dep, 1), add_generation(dep, 2)
    flip(dep, g1)
    flip(dep, g2)
    _hold(dep, g1, range(10))
    _hold(dep, g2, range(40))  # 30 documents added since g1 was live
    lifecycle = Lifecycle(load_config(dep.config_path), DocumentStore(load_config(dep.config_path).database_url))
    previous = lifecycle.store.get_generation(g1)
    assert previous is not None and previous.status == "previous"
    out = lifecycle.promote(previous, {"passed": True, "reasons": []})
    assert out["warnings"] == [f"generation {g1} lacks 30 of the 40 documents of 'docs' the live generation serves "
                               "(75%): they are out of search until the next `bindery sync` writes them into it"]
    lifecycle.store.dispose()
    code, out_json, _ = run(capsys, "--config", str(dep.config_path), "--json", "rollback")  # back to g2: holds them
    assert code == 0 and json.loads(out_json)["warnings"] == []
    code, out_txt, _ = run(capsys, "--config", str(dep.config_path), "rollback")  # and to g1 again: said in words
    assert code == 0 and f"warning: generation {g1} lacks 30 of the 40 documents of 'docs'" in out_txt
    run(capsys, "--config", str(dep.config_path), "rollback")
    _hold(dep, g1, range(10, 399))
    _hold(dep, g2, range(400))  # one of 400 lacking: under LEFT_OUT_SHARE, not a warning
    code, out_json, _ = run(capsys, "--config", str(dep.config_path), "--json", "rollback")
    assert code == 0 and json.loads(out_json)["warnings"] == []


def test_rollback_says_rolled_back_not_promoted(dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    g1, g2 = add_generation(dep, 1), add_generation(dep, 2)
    flip(dep, g1)
    flip(dep, g2)
    code, out, _ = run(capsys, "--config", str(dep.config_path), "rollback")
    assert code == 0
    assert "promoted" not in out and out.startswith("rolled back: generation 1 is live again")
    code, out, _ = run(capsys, "--config", str(dep.config_path), "--json", "rollback")
    doc = json.loads(out)
    assert doc["live"] == 2 and doc["previous"] == 1 and doc["rolled_back"] is True and "promoted" in doc


def test_reindex_with_nothing_to_change_does_not_say_promote(dep: Deployment,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    flip(dep, add_generation(dep, 1))
    code, out, err = run(capsys, "--config", str(dep.config_path), "reindex")
    assert code == 0 and err == ""
    assert out.startswith("nothing to reindex") and "promote" not in out
    code, out, _ = run(capsys, "--config", str(dep.config_path), "reindex", "--json")
    assert code == 0 and json.loads(out)["candidate"] is None
    # options that cannot work together are refused whatever the state, not only when there is work
    code, _, err = run(capsys, "--config", str(dep.config_path), "reindex", "--submit", "--promote")
    assert code == 2 and "needs --wait" in err


def _report(values: list[float]) -> EvalReport:
    return EvalReport.from_cases([CaseResult(f"q{i}", "c", f"query number {i}", dict.fromkeys(METRIC_NAMES, v),
                                             1 if v else None, 1, 10) for i, v in enumerate(values)])


def test_refused_promotion_prints_the_full_paired_report() -> None:
    gate = compare(_report([1.0] * 8), _report([1.0] * 6 + [0.0, 0.0]), tolerance=0.01, max_regressions=0)
    payload: dict[str, Any] = {"promoted": False, "live": 1, "previous": None, "candidate": 2,
                               "report": gate.to_json(), "error": "gate refused"}
    out = report.human("promote", payload)
    assert out.splitlines()[0] == "gate: REFUSED"
    for m in METRIC_NAMES:  # the whole metric table, not only the failing metric
        assert any(line.split()[:1] == [m] for line in out.splitlines()), m
    assert "regressed on recall@10 (2)" in out and "q6: 1.0000 -> 0.0000" in out
    assert "not promoted: generation 1 stays live" in out and "promoted: True" not in out


def test_gate_warns_when_the_eval_set_is_too_small_for_the_tolerance() -> None:
    small = compare(_report([1.0] * 8), _report([1.0] * 8), tolerance=0.01)
    assert small.passed and len(small.warnings) == 1
    assert "8 questions" in small.warnings[0] and "tolerance 0.01" in small.warnings[0]
    assert "for recall@10 and" in small.warnings[0] and "for mrr@10" in small.warnings[0]  # each gated metric
    assert small.to_json()["warnings"] == small.warnings
    # a refusal on a drop far beyond the noise is no accident of the set's size: no "may refuse on
    # noise" beside it (an operator pass: it quoted recall's noise beside a refusal on MRR)
    live = _report([1.0] * 300)
    halved = EvalReport.from_cases([CaseResult(c.id, c.category, c.query, {**c.values, "mrr@10": 0.5}, 2, 1, 10)
                                    for c in live.per_case])
    refused = compare(live, halved, tolerance=0.001)
    assert not refused.passed and "mrr@10 fell" in refused.reasons[0] and refused.warnings == []
    values = [1.0, 0.0] * 200
    big = compare(_report(values), _report(values), tolerance=0.2)
    assert big.warnings == []


def test_minimum_detectable_difference_shrinks_with_the_set() -> None:
    """MDD = (1.96 + 0.84) * sd / sqrt(n), and never below one question's step 1/n."""
    live = [1.0, 0.0] * 50
    cand = [1.0, 0.0] * 45 + [0.0, 1.0] * 5
    n = len(live)
    diffs = [c - v for v, c in zip(live, cand, strict=True)]
    mean = sum(diffs) / n
    sd = (sum((d - mean) ** 2 for d in diffs) / (n - 1)) ** 0.5
    assert minimum_detectable_difference(live, cand) == pytest.approx(2.8 * sd / n ** 0.5)
    assert minimum_detectable_difference(live * 4, cand * 4) < minimum_detectable_difference(live, cand)
    assert minimum_detectable_difference([1.0] * 4, [1.0] * 4) >= 0.25


def test_failed_sync_summary_does_not_claim_nothing_changed() -> None:
    out = report.human("sync", {"sources": {"s3": dict.fromkeys(CLASSES, 0)},
                                "recomputed": {"parse": 0, "chunk": 0, "context": 0, "embed": 0},
                                "written": {"documents": 0, "chunks": 0, "deleted": 0}, "errors": {"s3": "down"},
                                "generation": None, "seconds": 1.0})
    assert "nothing changed" not in out and "s3: FAILED" in out


def test_table_aligns_numbers_right() -> None:
    out = report.table(["name", "n"], [["a", 5], ["bbb", 12345]]).splitlines()
    assert out[0] == "name       n" and out[2] == "a          5" and out[3] == "bbb   12,345"


def test_status_calls_the_very_first_build_a_first_build_not_a_candidate(dep: Deployment,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from connectors.config import load_config
    from connectors.lifecycle import Lifecycle
    from connectors.store import DocumentStore

    cfg = load_config(dep.config_path)
    Lifecycle(cfg, DocumentStore(cfg.database_url)).ensure_candidate()  # what a first sync creates before it binds
    code, out, _ = run(capsys, "--config", str(dep.config_path), "--json", "status")
    doc = json.loads(out)
    assert code == 0 and doc["live"] is None and doc["candidate"] is None and doc["first_build"] == 1
    code, out, _ = run(capsys, "--config", str(dep.config_path), "status")
    assert code == 0 and "first build" in out


def test_rollback_json_has_the_promote_shape(dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/json-contract.md: rollback returns promote's keys (promoted, live, previous, candidate,
    forced, report) plus rolled_back; the report says what was rolled back, by whom."""
    g1, g2 = add_generation(dep, 1), add_generation(dep, 2)
    flip(dep, g1)
    flip(dep, g2)
    code, out, _ = run(capsys, "--config", str(dep.config_path), "--json", "rollback", "--by", "alice")
    doc = json.loads(out)
    assert code == 0 and {"promoted", "live", "previous", "candidate", "forced", "report", "rolled_back"} <= doc.keys()
    assert (doc["live"], doc["previous"], doc["candidate"], doc["forced"]) == (g1, g2, None, False)
    assert doc["report"]["rollback"] is True and (doc["report"]["from"], doc["report"]["to"]) == (g2, g1)
    assert doc["report"]["by"] == "alice" and doc["report"]["reasons"]


def test_status_says_when_live_is_behind_the_configuration_or_the_release(dep: Deployment,
                                                                          capsys: pytest.CaptureFixture[str],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed stage setting, or a release with a new parser, leaves live as it was built and
    syncs writing at its versions until a reindex is promoted: `status` names the stages (an
    upgrade audit found nothing said so), and the next step."""
    cfg = str(dep.config_path)
    flip(dep, add_generation(dep, 1))
    assert json.loads(run(capsys, "--config", cfg, "--json", "status")[1])["live_outdated"] is None
    assert "differs from the current configuration" not in run(capsys, "--config", cfg, "status")[1]
    dep.config["stages"] = {"chunk": {"max_tokens": 120}}
    dep.save()
    doc = json.loads(run(capsys, "--config", cfg, "--json", "status")[1])
    assert doc["live_outdated"] == {"stages": ["chunk"], "index_fields": [], "candidate_current": None,
                                    "previous_current": None}  # no previous generation
    line = next(x for x in run(capsys, "--config", cfg, "status")[1].splitlines() if "differs" in x)
    assert "stage chunk" in line and "`bindery reindex` builds it" in line
    add_generation(dep, 2, chunk_tokens=120)  # the reindex has started
    line = next(x for x in run(capsys, "--config", cfg, "status")[1].splitlines() if "differs" in x)
    assert "candidate g2_test is building" in line
    dep.config["stages"] = {"chunk": {"max_tokens": 150}}  # changed again: that candidate is not it either
    dep.save()
    line = next(x for x in run(capsys, "--config", cfg, "status")[1].splitlines() if "differs" in x)
    assert "g2_test was built for other settings" in line and "`bindery reindex` builds one" in line

    def unreachable(*args: Any, **kwargs: Any) -> list[str]:
        raise IndexError_("cannot reach Elasticsearch at http://127.0.0.1:9")

    # an engine that is down must not take the status report with it
    monkeypatch.setattr("orchestration.summaries.keyword_missing_fields", unreachable)
    code, out, _ = run(capsys, "--config", cfg, "--json", "status")
    assert code == 0 and json.loads(out)["live_outdated"]["index_fields"] is None


def test_status_says_a_finished_candidate_is_built_not_building(dep: Deployment,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    live = add_generation(dep, 1)
    flip(dep, live)
    cand = add_generation(dep, 2, chunk_tokens=120)
    store = DocumentStore(load_config(dep.config_path).database_url)
    row = {"doc_id": "d1", "source": "docs", "digest": "abc", "chunks": 1, "indexed_at": time.time()}
    cfg = str(dep.config_path)

    def candidate_row() -> list[str]:
        code, out, _ = run(capsys, "--config", cfg, "status")
        assert code == 0
        return next(line for line in out.splitlines() if line.strip().startswith("candidate")).split()

    try:
        store.set_index_state([{**row, "generation_id": live}])
        store.update_generation(cand, published_at=time.time())  # a first source written, not the others
        assert json.loads(run(capsys, "--config", cfg, "--json", "status")[1])["generations"]["candidate"][
            "built"] is False
        assert candidate_row()[3] == "building" and candidate_row()[-2:] == ["not", "judged"]
        store.set_index_state([{**row, "generation_id": cand}])  # every source the live generation holds
        doc = json.loads(run(capsys, "--config", cfg, "--json", "status")[1])["generations"]["candidate"]
        assert doc["built"] is True and doc["eval"]["passed"] is None
        assert candidate_row()[3] == "built" and candidate_row()[-3:] == ["not", "judged", "yet"]
    finally:
        store.dispose()


def test_verify_always_says_whether_it_repaired(dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/json-contract.md: `"repaired": bool` per generation, also when nothing needed a repair."""
    gen = add_generation(dep, 1)
    store = DocumentStore(load_config(dep.config_path).database_url)
    try:
        store.update_generation(gen, vector_engine="qdrant-edge")  # as a build records it (empty indexes)
    finally:
        store.dispose()
    flip(dep, gen)
    for argv in (["verify"], ["verify", "--repair"]):
        code, out, _ = run(capsys, "--config", str(dep.config_path), "--json", *argv)
        doc = json.loads(out)
        assert code == 0 and doc["generations"]["g1_test"]["repaired"] is False, argv


def test_gc_and_hash_key_print_a_human_summary(dep: Deployment, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from query_service.auth import hash_key

    dep.data.mkdir()  # a data_dir that holds nothing yet (a missing one is refused)
    code, out, _ = run(capsys, "--config", str(dep.config_path), "gc")
    assert code == 0 and out.splitlines() == ["no expired generations to drop", "no orphaned cache rows"]
    assert report.human("gc", {"dropped": ["g1_a", "g2_b"], "caches": {"parses": 3, "contexts": 0}}) == (
        "dropped 2 expired generations: g1_a, g2_b\nremoved orphaned cache rows: parses 3")
    monkeypatch.setattr("sys.stdin", io.StringIO("k"))
    code, out, _ = run(capsys, "hash-key")
    assert code == 0 and "{" not in out and out.splitlines()[0] == f"hash: {hash_key('k')}"
    monkeypatch.setattr("sys.stdin", io.StringIO("k1\nk2\n"))  # a file of keys: only the first was hashed
    code, _, err = run(capsys, "hash-key")
    assert code == 2 and err.strip() == \
        "bindery hash-key: 2 lines on standard input: pipe in one key (one line) at a time"
    code, out, _ = run(capsys, "hash-key", "--new")
    key = out.splitlines()[0].split()[1]
    assert code == 0 and "{" not in out and out.splitlines()[1] == f"hash: {hash_key(key)}"


def test_query_k_defaults_to_the_configuration(dep: Deployment, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    class Retriever:  # records k; no model is loaded
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def search(self, text: str, k: int, filters: Any, *, neighbours: int | None = None) -> Any:
            asked.append(k)
            return argparse.Namespace(to_json=lambda: {"generation": 1, "generation_name": "g1_test", "hits": [],
                                                       "reason": "none"})

        def close(self) -> None:
            pass

    monkeypatch.setattr("query_service.retrieval.GenerationRetriever", Retriever)
    flip(dep, add_generation(dep, 1))
    dep.config["query"] = {**dep.config["query"], "k": 7}
    dep.save()
    assert run(capsys, "--config", str(dep.config_path), "query", "battery")[0] == 0
    assert run(capsys, "--config", str(dep.config_path), "query", "battery", "-k", "2")[0] == 0
    assert asked == [7, 2]


def test_runs_with_a_status_filter_that_matches_nothing_says_so(dep: Deployment, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    dep.data.mkdir()  # a data_dir that holds nothing yet (a missing one is refused)

    def list_runs(instance: Any, *, limit: int, statuses: list[str] | None) -> list[dict[str, Any]]:
        seen.append(statuses)
        return []

    # runs first: importing orchestration.runs while get_instance is patched would bind the fake
    # into it for good, and every later sync in this process would get no Dagster instance
    monkeypatch.setattr("orchestration.runs.list_runs", list_runs)
    monkeypatch.setattr("orchestration.runs.fail_dead_runs", lambda instance: None)
    monkeypatch.setattr("orchestration.instance.get_instance", lambda cfg: None)
    code, out, _ = run(capsys, "--config", str(dep.config_path), "runs", "--status", "queued")
    assert code == 0 and out.strip() == "no runs with status queued" and seen == [["queued"]]
    code, out, _ = run(capsys, "--config", str(dep.config_path), "runs")
    assert code == 0 and out.strip() == "no runs in the instance yet"


def test_runs_name_who_launched_them() -> None:
    """A sensor's run was listed as launched by `ui` (only Bindery's own tag was read)."""
    from orchestration.source_locks import launched_by

    assert launched_by({"bindery/launched-by": "cli-submit"}) == "cli-submit"
    assert launched_by({"dagster/sensor_name": "source_change_sensor", "bindery/trigger": "sensor"}) == "sensor"
    assert launched_by({"dagster/schedule_name": "reconcile"}) == "schedule"
    assert launched_by({}) == "ui"


def test_an_unchanged_touch_leaves_no_negative_lag(tmp_path: Path) -> None:
    """A file touched (or an object re-uploaded) with the same bytes is newer than its indexing
    but not re-indexed: its lag read negative (-68 s in an audit). It is current: 0. And lag
    runs from the listing that saw a change, as the UI's run metadata has it: `status` counted
    from the file's mtime, so an old file's first sync read years late."""
    import os

    dep = Deployment(tmp_path)
    for p in dep.root.rglob("*"):  # written years before the first sync: not years late
        if p.is_file():
            os.utime(p, (1e9, 1e9))
    dep.cli("sync")
    first = dep.cli("status")["sources"]["docs"]
    assert 0 <= first["lag_p50_s"] <= first["lag_p95_s"] < 600
    later = time.time() + 120
    for p in dep.root.rglob("*"):
        if p.is_file():
            os.utime(p, (later, later))
    out = dep.cli("sync")
    assert out["recomputed"]["parse"] == 0
    src = dep.cli("status")["sources"]["docs"]
    assert src["lag_p50_s"] is not None and src["lag_p50_s"] >= 0 and src["lag_p95_s"] >= 0


def test_a_store_that_refuses_the_generation_row_is_the_sources_last_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL an embedder id over 64 characters made every sync fail while creating the
    generation, before the stage recorded failures: `status` showed no error for the source (a
    PostgreSQL pass's find). Whatever fails in a stage is now the source's last error."""
    from connectors.errors import StoreError
    from connectors.lifecycle import Lifecycle

    def refused(*_a: object, **_k: object) -> None:
        raise StoreError("the store refused the generation row")

    dep = Deployment(tmp_path)
    monkeypatch.setattr(Lifecycle, "targets", refused)
    dep.cli("sync", expect=1)
    err = dep.cli("status")["sources"]["docs"]["last_error"] or ""
    assert err.startswith("parse: the store refused the generation row"), err  # the reason, no class name


@pytest.mark.slow
def test_promoting_the_previous_generation_says_what_it_leaves_out_of_search(tmp_path: Path) -> None:
    """A new-user review: `bindery promote --candidate` of the previous generation, built before a
    source was added, took that source out of search and printed no warning (rollback did)."""
    d = Deployment(tmp_path)
    d.cli("sync")
    first = d.cli("status")["live"]
    d.cli("reindex", "--force")
    d.cli("promote", "--force", "--reason", "test")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "mqtt.md").write_text("# Broker\n\nThe mosquitto broker relays MQTT messages.\n")
    d.config["sources"].append({"name": "extra", "kind": "local", "root": str(extra)})
    d.save()
    d.write("notes/dock.md", "# Dock\n\nQuarterly dock maintenance is on Tuesdays.\n")  # written into live alone
    d.cli("sync")
    out = d.cli("promote", "--candidate", str(first), "--force", "--reason", "back")
    assert any(f"generation {first} holds nothing of 'extra'" in w for w in out["warnings"]), out
    assert any(w.startswith(f"generation {first} lacks 1 of the {len(DOCS) + 1} documents of 'docs'")
               for w in out["warnings"]), out


@pytest.mark.parametrize("command", ["sync", "plan", "query"])
def test_a_source_named_twice_is_run_once(command: str) -> None:
    """An operator pass: `sync --source docs --source docs` ran the source twice (two runs whose
    counts were summed, no longer the plan's)."""
    argv = [command, *(["x"] if command == "query" else []), "--source", "docs", "--source", "b", "--source", "docs"]
    assert parse_command_line(build_parser(), argv).source == ["docs", "b"]
