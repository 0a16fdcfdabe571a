"""`bindery plan` predicts what a sync or reindex will do, and writes nothing (issue 11, item 1).

Real engines, real Dagster runs: the plan's counts are compared with the counts the following
run reports, over adds, edits, deletes, a move and an ACL change, a chunker change (reindex)
and the Anthropic contextualiser (against the local stub that follows the Messages API).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any, cast

import pytest
import sqlalchemy as sa

from connectors.config import load_config
from connectors.store import DocumentStore
from orchestration.estimate import estimate_seconds, throughput
from orchestration.instance import get_instance
from orchestration.report import _human_plan
from tests.anthropic_stub import AnthropicStub
from tests.bindery_fixture import DOCS, Deployment
from tests.fixtures import docgen
from tests.fixtures.ocr import needs_tesseract
from tests.sync_helpers import LocalDeployment

pytestmark = pytest.mark.slow


def footprint(dep: Deployment) -> dict[str, Any]:
    """Everything a run would change: row counts of every store table, every file under the
    data dir outside the Dagster home (indexes, snapshots, spool, locks), and the Dagster runs.

    Collected first: a connection an earlier run left to the garbage collector checkpoints
    SQLite's write-ahead log into bindery.db when it is finally closed, whenever that is."""
    import gc

    gc.collect()
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    try:
        with store.engine.connect() as c:
            tables = sa.inspect(store.engine).get_table_names()
            rows = {t: c.execute(sa.text(f'SELECT count(*) FROM "{t}"')).scalar_one() for t in tables}
    finally:
        store.dispose()
    files = {}
    for p in sorted(dep.data.rglob("*")):
        rel = p.relative_to(dep.data)
        if p.is_file() and rel.parts[0] != "dagster_home" and not p.name.endswith(("-wal", "-shm", "-journal")):
            files[str(rel)] = (p.stat().st_size, p.stat().st_mtime_ns)
    from orchestration.instance import get_instance

    runs = len(get_instance(cfg).get_runs()) if (dep.data / "dagster_home").exists() else 0
    return {"rows": rows, "files": files, "runs": runs}


def assert_plan_matches(plan: dict[str, Any], run: dict[str, Any]) -> None:
    assert plan["recomputed"] == run["recomputed"], (plan["recomputed"], run["recomputed"])
    assert plan["written"] == run["written"], (plan["written"], run["written"])
    for name, s in run["sources"].items():
        assert {k: v for k, v in plan["sources"][name]["changes"].items() if k in s} == s, (name, plan, s)


def plan_then_sync(dep: Deployment, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    before = footprint(dep)
    plan = dep.cli("plan", *args)
    assert footprint(dep) == before, "bindery plan wrote something"
    return plan, dep.cli(*(args or ("sync",)))


def test_plan_predicts_every_sync_exactly_and_writes_nothing(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    plan, first = plan_then_sync(dep)
    assert plan["new_generation"] and plan["generations"] == [plan["new_generation"]]
    assert plan["recomputed"]["parse"] == 6 and plan["recomputed"]["embed"] >= 6
    assert plan["estimate"]["seconds"] is None and set(plan["estimate"]["no_history"]) >= {"parse", "embed"}
    assert_plan_matches(plan, first)

    nothing, again = plan_then_sync(dep)
    assert nothing["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert_plan_matches(nothing, again)

    dep.write("robots/xr6000.md", "# XR-6000\n\nThe XR-6000 climbs ramps of twelve degrees with full load.\n")
    dep.edit("ops/oncall.txt", dep.read("ops/oncall.txt") + "\nPagers are tested every Friday.\n")
    dep.remove("people/lyon.md")
    dep.rename("ops/firmware.md", "ops/firmware-rollback.md")
    dep.set_acl("ops/errors.html", ["support-team"])
    plan, changed = plan_then_sync(dep)
    # the rename counts as moved alone; the guard weighs both paths gone
    expected = {"new": 1, "updated": 1, "deleted": 1, "moved": 1, "acl": 1}
    assert {k: plan["sources"]["docs"]["changes"][k] for k in expected} == expected
    assert plan["sources"]["docs"]["delete_guard"] == {"safe": True, "would_delete": 2, "reason": None}
    assert_plan_matches(plan, changed)
    # the time estimate now comes from the runs measured on this instance
    timed = dep.cli("plan")
    assert timed["estimate"]["runs_measured"]["embed"] >= 1
    # ... the listing too, although nothing changed, and the lengths of the texts embedded
    assert timed["estimate"]["runs_measured"]["listing"] >= 3 and "listing" in timed["estimate"]["by_stage"]
    assert throughput(get_instance(load_config(dep.config_path)))["chars_per_text"] > 20


def test_an_edit_that_no_longer_parses_keeps_the_indexed_version_and_the_plan_says_so(tmp_path: Path) -> None:
    """The new bytes fail to parse: the sync dead-letters them and leaves the indexed version
    alone (no rewrite of the old chunks either), and the plan predicts exactly that."""
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    dep.write("ops/oncall.txt", bytes(range(256)) * 16)
    plan, out = plan_then_sync(dep)
    assert_plan_matches(plan, out)
    assert out["written"] == {"documents": 0, "chunks": 0, "deleted": 0} and out["dead_letters"] == 1
    assert out["kept_versions"] == 1  # and the summary says the old version is still searchable
    assert "ops/oncall.txt" in {h["doc"] for h in dep.cli("query", "pager rotation on call", "-k", "10")["hits"]}


def test_access_narrowed_on_a_version_a_failed_parse_left_indexed_is_planned_as_written(tmp_path: Path) -> None:
    """Found by an adversarial pass: the sync rewrites such a document's indexed version with
    its narrower ACL, and the plan counted one written document fewer."""
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    dep.write("ops/oncall.txt", b"")  # dead-lettered as empty; its indexed version stays
    dep.cli("sync")
    dep.set_acl("ops/oncall.txt", ["support-team"])
    plan, out = plan_then_sync(dep)
    assert_plan_matches(plan, out)
    assert "ops/oncall.txt" not in {h["doc"] for h in dep.cli("query", "pager rotation on call", "-k", "10")["hits"]}


def test_files_with_the_same_bytes_under_other_names_are_planned_as_the_sync_stores_them(tmp_path: Path) -> None:
    """Found by an adversarial review: one parse row holds identical bytes, with the title of the
    file parsed last; the plan cut each file from its own parse (its own title) and counted two
    prefixes and embeddings where the sync made one."""
    dep = LocalDeployment(tmp_path)
    for rel in ("dup/a/x.txt", "dup/b/x.txt", "dup/b/y.txt"):
        dep.write(rel, "Dup text: albatross key 555.\n")
    plan, out = plan_then_sync(dep)
    assert_plan_matches(plan, out)


def test_a_document_the_chunker_fails_on_is_predicted_as_the_sync_leaves_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunker raising on a document's new content: the sync dead-letters it and keeps its
    indexed version; the plan counts it neither chunked nor deleted."""
    import assets.chunk_stage as chunk_stage

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    real = chunk_stage.chunk_blocks  # type: ignore[attr-defined]  # the name chunk_rows calls

    def chunker(blocks: Any, *args: Any, **kw: Any) -> Any:
        if any("CRASH" in b.text for b in blocks):
            raise RuntimeError("chunker bug")
        return real(blocks, *args, **kw)

    monkeypatch.setattr(chunk_stage, "chunk_blocks", chunker)
    dep.edit("ops/oncall.txt", dep.read("ops/oncall.txt") + "\nCRASH the chunker.\n")
    plan, out = plan_then_sync(dep)
    assert_plan_matches(plan, out)
    assert out["recomputed"]["chunk"] == 0 and out["written"]["deleted"] == 0 and out["dead_letters"] == 1
    assert "ops/oncall.txt" in {h["doc"] for h in dep.cli("query", "pager rotation on call", "-k", "10")["hits"]}


def test_the_same_file_in_two_sources_is_planned_once_as_the_sync_parses_it_once(tmp_path: Path) -> None:
    """Parses are stored by their bytes, prefixes and embeddings by their inputs: the run does
    the work for a file two sources hold once, and the plan counts it once."""
    dep = LocalDeployment(tmp_path)
    two = tmp_path / "two"
    two.mkdir()
    dep.config["sources"].append({"name": "two", "kind": "local", "root": str(two)})
    dep.save()
    policy = "# Travel policy\n\nBook trains for trips under four hours; flights need a manager's approval.\n"
    dep.write("policies/travel.md", policy)
    (two / "travel-copy.md").write_text(policy)
    plan, first = plan_then_sync(dep)
    assert_plan_matches(plan, first)
    assert first["recomputed"]["parse"] == len(list(dep.root.rglob("*.*")))  # the copy is not parsed again
    dep.write("policies/expenses.md", "# Expenses\n\nReceipts are due within thirty days.\n")
    (two / "expenses.md").write_text("# Expenses\n\nReceipts are due within thirty days.\n")
    plan, again = plan_then_sync(dep)
    assert_plan_matches(plan, again)
    assert again["recomputed"]["parse"] == 1 and again["written"]["documents"] == 2


def test_bytes_one_source_refuses_as_too_large_are_planned_as_parsed_by_a_source_that_allows_them(
        tmp_path: Path) -> None:
    """A compressed file in two sources, one of whose `max_file_mb` its unpacked bytes pass: the
    sync parses them again for the source that allows them (a refusal made under a lower limit
    does not stand for a higher one). The plan reused the first source's refusal for the second
    (parse 2 planned, 3 done; 1 document to write, 2 written: an operator pass)."""
    dep = LocalDeployment(tmp_path)
    dep.config["sources"][0]["max_file_mb"] = 0.035  # 36,700 bytes
    two = tmp_path / "two"
    two.mkdir()
    dep.config["sources"].append({"name": "two", "kind": "local", "root": str(two)})
    dep.save()
    packed = gzip.compress(b"A line of prose about sailing ships and harbours.\n" * 2500)  # 125,000 bytes unpacked
    (dep.root / "notes.txt.gz").write_bytes(packed)
    (two / "notes.txt.gz").write_bytes(packed)
    plan, first = plan_then_sync(dep)
    assert_plan_matches(plan, first)
    assert plan["sources"]["two"]["dead_letters"]["count"] == 0
    assert plan["sources"][dep.config["sources"][0]["name"]]["dead_letters"]["by_reason"] == {"parse:too-large": 1}
    letters = dep.cli("dlq", "list")
    assert [(d["doc"], d["reason"]) for d in letters] == [("notes.txt.gz", "too-large")]
    assert "over the 36,700 bytes limit" in letters[0]["error"]  # not "the 0.0 MB limit"


def test_a_source_whose_every_document_fails_is_predicted_to_index_nothing(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The sync exits 1 when a source has documents and none is searchable; the plan says so
    for that source, and only for it. The reason is one line on stderr (the index step's warning
    printed it a second time: a lifecycle fuzz)."""
    dep = LocalDeployment(tmp_path)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "blob.txt").write_bytes(bytes(range(256)) * 16)
    dep.config["sources"].append({"name": "junk", "kind": "local", "root": str(junk)})
    dep.save()
    plan = dep.cli("plan")
    capsys.readouterr()
    out = dep.cli("sync", expect=1)
    assert capsys.readouterr().err.count("nothing could be indexed") == 1
    assert plan["sources"]["junk"]["error"].startswith("nothing could be indexed: none of the 1 documents")
    assert out["errors"]["junk"].startswith("nothing could be indexed") and "docs" not in out["errors"]
    assert plan["sources"]["docs"]["error"] is None and plan["recomputed"] == out["recomputed"]


def test_a_plan_before_the_first_sync_creates_nothing(tmp_path: Path) -> None:
    """No data dir, no database file, no schema: a fresh deployment's plan reads an empty
    in-memory store (`DocumentStore.preview`) instead of migrating a real one into being."""
    dep = LocalDeployment(tmp_path)
    assert not dep.data.exists()
    plan = dep.cli("plan")
    assert plan["recomputed"]["parse"] == 6
    assert not dep.data.exists(), sorted(str(p) for p in dep.data.rglob("*"))


_FORKED_PLAN = """
import json, sys
from orchestration import plan_pool
from orchestration.cli import main

plan_pool.MIN_ITEMS = 2  # every batch of this small corpus forks
forks = []
real = plan_pool.ProcessPoolExecutor
plan_pool.ProcessPoolExecutor = lambda *a, **k: (forks.append(1), real(*a, **k))[1]
rc = main(["--config", sys.argv[1], "--json", "plan", *sys.argv[2:]])
print(json.dumps({"rc": rc, "forks": len(forks)}))
"""


def _forked_plan(dep: Deployment, *args: str) -> dict[str, Any]:
    """`bindery plan` in a fresh single-threaded process, where the plan pool forks (this
    test process has threads: there it runs serially, see orchestration.plan_pool)."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", _FORKED_PLAN, str(dep.config_path), *args], capture_output=True,
                          text=True, timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, proc.stderr
    status = json.loads(lines[-1])
    assert status["rc"] == 0 and status["forks"] >= 1, status
    plan: dict[str, Any] = json.loads("\n".join(lines[:-1]))
    return plan


def test_the_forked_plan_counts_what_the_serial_one_does(tmp_path: Path) -> None:
    """Parse and chunk run in forked children on a big enough corpus (orchestration.plan_pool);
    the plan must not change by a single count, nor miss what the run then does."""
    dep = LocalDeployment(tmp_path)
    for i in range(12):
        dep.write(f"notes/n{i}.md", f"# Note {i}\n\nThe loading dock {i} opens at {6 + i % 3} am.\n")
    serial, forked = dep.cli("plan"), _forked_plan(dep)
    for key in ("recomputed", "written", "stages", "sources"):
        assert forked[key] == serial[key], key
    assert_plan_matches(forked, dep.cli("sync"))
    dep.set_stage("chunk", max_tokens=120, overlap_tokens=20)  # stored parses, new chunk version: forks too
    plan = _forked_plan(dep, "reindex")
    assert plan["recomputed"]["parse"] == 0 and plan["recomputed"]["chunk"] == 18
    assert_plan_matches(plan, dep.cli("reindex"))


def test_plan_reports_the_delete_guard_verdict(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    for rel in ("robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/oncall.txt"):
        dep.remove(rel)
    before = footprint(dep)
    plan = dep.cli("plan")
    assert footprint(dep) == before
    guard = plan["sources"]["docs"]["delete_guard"]
    assert guard["safe"] is False and guard["would_delete"] == 4 and "shrank to 2 items from 6" in guard["reason"]
    assert plan["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}  # the sync would abort
    # ... and the listing's classes still show what tripped the guard
    assert plan["sources"]["docs"]["changes"]["deleted"] == 4 and plan["sources"]["docs"]["changes"]["unchanged"] == 2
    assert plan["sources"]["docs"]["stages"]["parse"] == {"compute": 0, "cached": 0}
    dep.cli("sync", expect=1)


def test_plan_for_a_reindex_matches_the_reindex(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    assert dep.cli("plan", "reindex")["candidate"] is None  # nothing changed: nothing to plan
    dep.set_stage("chunk", max_tokens=120, overlap_tokens=20)
    plan = dep.cli("plan", "reindex")
    assert plan["recomputed"]["parse"] == 0 and plan["recomputed"]["chunk"] == 6
    out = dep.cli("reindex")
    assert_plan_matches(plan, out)
    assert plan["generations"] == [out["candidate_name"]]
    # promoted, then an edit, then back to the old chunking: the candidate's chunks are the
    # previous generation's too, so the run also brings the edited page up to date there
    dep.cli("promote", "--force", "--reason", "test")
    dep.edit("ops/oncall.txt", dep.read("ops/oncall.txt") + "\nPagers are tested every Friday.\n")
    assert_plan_matches(*plan_then_sync(dep))
    dep.set_stage("chunk", max_tokens=200, overlap_tokens=30)
    plan = dep.cli("plan", "reindex")
    out = dep.cli("reindex")
    assert_plan_matches(plan, out)
    # every document written to the candidate, the edited one to the previous generation too:
    # counted once each (documents, not document x generation)
    assert out["written"]["documents"] == plan["written"]["documents"] == dep.cli("status")["documents"]
    # a delete reaches the live, the previous and the candidate generation: one document removed
    (dep.root / "ops/oncall.txt").unlink()
    plan, out = plan_then_sync(dep)
    assert_plan_matches(plan, out)
    assert out["written"]["deleted"] == out["sources"]["docs"]["deleted"] == 1


def test_plan_with_the_anthropic_contextualiser_counts_calls_tokens_and_cost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicStub(api_key="sk-test") as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        dep = Deployment(tmp_path, stages={"context": {"provider": "anthropic", "base_url": stub.base_url}},
                         prices={"input_per_mtok": 1.0, "output_per_mtok": 5.0, "cache_write_per_mtok": 1.25,
                                 "cache_read_per_mtok": 0.1})
        sections = "".join(f"## {w.title()}\n\n" + " ".join(
            f"For {w}, step {j} checks valve {j * 7 + 3} and records pressure {j * 13 + 1} in the {w} log."
            for j in range(25)) + "\n\n" for w in ("installation", "calibration", "maintenance", "storage"))
        dep.write("manual/long.md", "# Long manual\n\n" + sections)  # several chunks: cache reads
        plan = dep.cli("plan")
        assert stub.message_requests == []  # planning never calls the model
        out = dep.cli("sync")
        llm = plan["llm"]
        assert llm["calls"] == len(stub.message_requests) == out["recomputed"]["context"]
        assert plan["recomputed"]["context"] == out["recomputed"]["context"]
        assert plan["recomputed"]["parse"] == out["recomputed"]["parse"]
        assert plan["recomputed"]["embed"] >= out["recomputed"]["embed"]  # LLM prefixes are unknown until written
        docs = len({(r.body or {})["messages"][0]["content"][0]["text"] for r in stub.message_requests})
        assert llm["cache_write_tokens"] > 0 and llm["cached_input_tokens"] > 0 and docs == 7
        expected = (llm["input_tokens"] * 1.0 + llm["cache_write_tokens"] * 1.25 + llm["cached_input_tokens"] * 0.1
                    + llm["output_tokens"] * 5.0) / 1e6
        assert llm["cost_usd"] == pytest.approx(expected, abs=1e-4)


def test_plan_job_in_dagster_carries_the_same_plan(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    dep.write("notes/new.md", "# New\n\nA new note about the loading dock.\n")
    cli_plan = dep.cli("plan")
    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    res = runner.defs.resolve_job_def("plan").execute_in_process(instance=runner.instance)
    assert res.success
    mat = next(e for e in res.all_events if e.event_type_value == "STEP_OUTPUT")
    meta = mat.step_output_data.metadata
    ui_plan = cast(dict[str, Any], meta["plan"].value)  # a JSON metadata entry
    assert ui_plan["recomputed"] == cli_plan["recomputed"] and ui_plan["sources"] == cli_plan["sources"]
    assert meta["parse_to_compute"].value == 1 and "plan for a sync" in cast(str, meta["summary"].value)


def test_a_reindex_launched_from_the_ui_with_nothing_changed_builds_nothing(tmp_path: Path) -> None:
    """`bindery reindex` and `bindery plan reindex` say "nothing to reindex" when the configuration
    matches the live generation; the `plan` and `reindex` jobs launched from the UI planned and
    built a copy of it (a wasted build that blocked the next real reindex). Now the plan says so
    and the reindex fails at once with the reason, unless it carries the force tag."""
    import dagster as dg

    from assets.pipeline import FORCE_TAG, STAGE_ASSETS, TARGET_TAG
    from orchestration.definitions import resources
    from orchestration.runs import Runner

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    runner = Runner(load_config(dep.config_path))
    res = runner.defs.resolve_job_def("plan").execute_in_process(
        instance=runner.instance, run_config={"ops": {"plan_next_run": {"config": {"kind": "reindex"}}}})
    meta = next(e for e in res.all_events if e.event_type_value == "STEP_OUTPUT").step_output_data.metadata
    assert cast(str, meta["summary"].value).startswith("nothing to reindex: the configuration matches live")
    # a kind the job does not know is refused at launch, naming the key, not inside the step
    with pytest.raises(dg.DagsterInvalidConfigError, match="config:kind not in enum type PlanKind got bogus"):
        runner.defs.resolve_job_def("plan").execute_in_process(
            instance=runner.instance, run_config={"ops": {"plan_next_run": {"config": {"kind": "bogus"}}}})

    def reindex(**tags: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(STAGE_ASSETS, partition_key="docs", instance=runner.instance,
                              resources=resources(str(dep.config_path)), tags={TARGET_TAG: "candidate", **tags},
                              raise_on_error=False)

    (dep.root / "robots/xr5200.md").unlink()  # the refusal comes first: the listing changes nothing
    refused = reindex()
    assert not refused.success
    failure = next(e for e in refused.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_key == "source_listing"
    user = failure.step_failure_data.user_failure_data
    assert user is not None and "nothing to reindex" in str(user.description)
    assert dep.cli("status")["generations"]["candidate"] is None  # no candidate was made
    assert dep.cli("verify")["consistent"] is True and dep.cli("status")["documents"] == len(DOCS)
    # the tag's value counts (`bindery/force=false` was taken as a force, a UI pass found)
    assert not reindex(**{FORCE_TAG: "false"}).success and dep.cli("status")["generations"]["candidate"] is None
    store = DocumentStore(load_config(dep.config_path).database_url)
    assert store.events("forced-rebuild") == []
    assert reindex(**{FORCE_TAG: "true"}).success
    assert dep.cli("status")["generations"]["candidate"] is not None
    assert len(store.events("forced-rebuild")) == 1  # recorded, as `bindery reindex --force` records it
    # ... and the candidate it built, as `bindery reindex` records it (only the CLI's were)
    built = store.events("candidate-built")
    assert len(built) == 1 and "built candidate" in built[0].message and "stages changed: none" in built[0].message
    store.dispose()


def test_a_partitioned_job_launched_without_a_partition_says_what_to_choose(tmp_path: Path) -> None:
    """A UI pass: `sync` launched with no partition failed with Dagster's "Cannot access
    partition_key for a non-partitioned run". (`promote` still does: Dagster raises it while
    reading its inputs' versions, before any of Bindery's code runs.)"""
    from orchestration.runs import Runner

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    res = Runner(load_config(dep.config_path)).run("sync")
    assert not res.success
    assert "`sources`" in (res.error or "") and "launch it choosing" in (res.error or ""), res.error
    assert "\n" not in (res.error or "")
    assert dep.cli("verify")["consistent"] is True


def test_the_plan_and_tune_jobs_refuse_what_the_cli_refuses_in_one_line(tmp_path: Path) -> None:
    """A UI pass: the `plan` job planned every source for `kind: reindex, sources: [...]` (the CLI
    exits 2), and an unknown source or a bad tune budget failed as "Error occurred while
    executing op" with the reason buried in a wrapped cause."""
    from orchestration.runs import Runner

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    runner = Runner(load_config(dep.config_path))

    def failure(job: str, op: str, config: dict[str, Any]) -> str:
        res = runner.defs.resolve_job_def(job).execute_in_process(
            instance=runner.instance, run_config={"ops": {op: {"config": config}}}, raise_on_error=False)
        assert not res.success
        event = next(e for e in res.all_events if e.event_type_value == "STEP_FAILURE")
        user = event.step_failure_data.user_failure_data
        assert user is not None and user.description is not None and "\n" not in user.description
        return user.description

    reindex_of_one = {"kind": "reindex", "sources": ["docs"]}
    assert "a reindex rebuilds every source" in failure("plan", "plan_next_run", reindex_of_one)
    assert "unknown source 'nope'" in failure("plan", "plan_next_run", {"sources": ["nope"]})
    assert "'abc'" in failure("tune", "tune_settings", {"budget": "abc"})
    assert "no candidate" in failure("tune", "tune_settings", {"generation": "candidate"})


def test_a_first_plan_never_imports_dagster(tmp_path: Path) -> None:
    """A plan before the first sync has no history to read: it must not pay Dagster's import and
    instance start (seconds, most of a small plan's time; issue 11 wants a plan under 5 % of the
    sync). A subprocess, because this test process has Dagster loaded already."""
    import json
    import os
    import subprocess
    import sys

    dep = LocalDeployment(tmp_path)
    code = ("import json, sys\n"
            "from orchestration.cli import main\n"
            f"rc = main(['--config', {str(dep.config_path)!r}, 'plan', '--json'])\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'dagster')\n"
            "print(json.dumps({'rc': rc, 'dagster': loaded}))\n")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(root)})
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, proc.stderr
    last = json.loads(lines[-1])
    assert last["rc"] == 0 and json.loads("\n".join(lines[:-1]))["recomputed"]["parse"] == 6
    assert last["dagster"] == [], last["dagster"][:5]


def test_estimate_says_when_there_is_no_history() -> None:
    stages = {"parse": {"compute": 10}, "embed": {"compute": 100}, "chunk": {"compute": 0}}
    none = estimate_seconds(stages, None)
    assert none["seconds"] is None and none["no_history"] == ["parse", "embed"] and "no history" in none["note"]
    some = estimate_seconds(stages, {"seconds_per_item": {"parse": 0.5, "embed": 0.1}, "runs": {},
                                     "fixed_seconds": {"embed": 4.0}})
    assert some["seconds"] == 19.0 and some["by_stage"] == {"parse": 5.0, "embed": 14.0} and some["note"] is None
    # one stage with work and no history (a first sync interrupted before it embedded): the time
    # is unknown, not the sum of the others ("about 0 s" for a run that took 46)
    part = estimate_seconds(stages, {"seconds_per_item": {"parse": 0.5}, "runs": {}, "fixed_seconds": {}})
    assert part["seconds"] is None and part["by_stage"] == {"parse": 5.0} and part["no_history"] == ["embed"]


def test_estimate_counts_the_listing_and_the_length_of_the_texts_to_embed() -> None:
    """A sync with nothing to compute still lists (it was estimated at 0 s and took 3); texts a
    fifth as long embed in about 40 % of the time, not 100 % (a chunk-size reindex was estimated
    at 2.5 times what it took) and not 20 %."""
    from orchestration.estimate import TEXT_OVERHEAD_CHARS

    history = {"seconds_per_item": {"listing": 0.002, "embed": 0.03}, "fixed_seconds": {"listing": 0.5},
               "runs": {}, "chars_per_text": 1000.0}
    idle = estimate_seconds({"embed": {"compute": 0}}, history, listed=1000)
    assert idle["by_stage"] == {"listing": 2.5} and idle["seconds"] == 2.5 and idle["note"] is None
    same = estimate_seconds({"embed": {"compute": 1000}}, history, embed_known=1000, embed_chars=1_000_000)
    assert same["by_stage"]["embed"] == 30.0  # beside the listing's start (0.5 s)
    short = estimate_seconds({"embed": {"compute": 1000}}, history, embed_known=1000, embed_chars=200_000)
    factor = (TEXT_OVERHEAD_CHARS + 200) / (TEXT_OVERHEAD_CHARS + 1000)
    assert short["by_stage"]["embed"] == round(30 * factor, 1) and 0.25 < factor < 0.45
    # runs that recorded no lengths (older releases), or no known texts: the plain rate
    assert estimate_seconds({"embed": {"compute": 1000}}, {**history, "chars_per_text": None},
                            embed_known=1000, embed_chars=200_000)["by_stage"]["embed"] == 30.0




def test_throughput_fit_separates_the_fixed_cost_from_the_rate() -> None:
    from orchestration.estimate import _fit

    fixed, rate = _fit([(4, 10.0), (3591, 1800.0)])  # a small and a big embed run
    assert rate == pytest.approx((1800 - 10) / (3591 - 4)) and fixed == pytest.approx(10 - 4 * rate)
    assert _fit([(10, 5.0), (10, 7.0)]) == (0.0, 0.6)  # same work every time: a plain ratio
    # runs where more work took less time: a plain ratio, never the mean run time for any run
    # (an operator pass: 106 s predicted for 2 texts, the sync took 6 s)
    fixed, rate = _fit([(1478, 121.0), (1651, 102.0)])
    assert fixed == 0.0 and rate == pytest.approx(223 / 3129) and fixed + 2 * rate < 1


def test_throughput_fit_is_not_skewed_by_a_slow_first_run_or_tiny_runs() -> None:
    """Runs of 0.5 s + 20 ms an item, but the first, the biggest, also loaded the model (+6 s)
    and two tiny runs are noisy: least squares predicted 5 items at 0.14 s and 1,000 at 24.1;
    the fit keeps the line the other runs are on (an edit of 5 files estimated at 0.0 s took
    0.5)."""
    from orchestration.estimate import _fit

    runs: list[tuple[float, float]] = [(1345, 0.5 + 1345 * 0.02 + 6.0), (5, 0.6), (7, 0.64), (1, 0.9), (2, 0.3),
            (280, 0.5 + 280 * 0.02), (564, 0.5 + 564 * 0.02), (233, 0.5 + 233 * 0.02)]
    fixed, rate = _fit(runs)
    assert rate == pytest.approx(0.02, rel=0.05) and fixed == pytest.approx(0.5, abs=0.15)
    assert 0.4 < fixed + 5 * rate < 1.0 and 18 < fixed + 1000 * rate < 23
    # a step that computed nothing still took its start: a point at zero items
    fixed, rate = _fit([(0, 0.3), (0, 0.25), (100, 2.3), (400, 8.3)])
    assert fixed == pytest.approx(0.3, abs=0.05) and rate == pytest.approx(0.02, rel=0.05)
    assert _fit([(0, 0.3), (0, 0.2)]) == (0.2, 0.0)  # never computed anything: its start only


def test_estimate_adds_the_start_of_the_run_and_of_each_idle_step() -> None:
    """A sync with nothing to compute was estimated at 0.0 s and took 3.9 (the CLI's start 2.2 s,
    six steps starting and finding nothing 1.1 s): what a run costs beside its items counts."""
    history = {"seconds_per_item": {"listing": 0.0004, "parse": 0.001, "embed": 0.015},
               "fixed_seconds": {"parse": 0.14, "embed": 0.13}, "idle_seconds": {"parse": 0.26, "embed": 0.13},
               "runs": {}, "startup_seconds": 2.0, "run_seconds": 0.2}
    idle = estimate_seconds({"parse": {"compute": 0}, "embed": {"compute": 0}}, history, listed=1000)
    assert idle["by_stage"] == {"listing": 0.4, "parse": 0.3, "embed": 0.1, "startup": 2.2}
    assert idle["seconds"] == 3.0
    # two sources: two runs, one process
    assert estimate_seconds({}, history, runs=2)["by_stage"] == {"startup": 2.4}
    # where the runs recorded no start (older releases), nothing is made up
    older = {k: v for k, v in history.items() if k not in ("startup_seconds", "run_seconds")}
    assert "startup" not in estimate_seconds({}, older)["by_stage"]


def test_parse_is_priced_by_the_kind_of_each_document() -> None:
    """A PDF costs many Markdown pages to parse, and a scanned page seconds: 62 e-mails and
    PDFs were estimated at the Markdown rate (0.1 s, took 0.7)."""
    from orchestration.estimate import OCR_SECONDS_PER_PAGE, parse_seconds

    times = {"md": {"docs": 200, "seconds": 0.4, "ocr_pages": 0, "ocr_seconds": 0},
             "pdf": {"docs": 2, "seconds": 1.0, "ocr_pages": 5, "ocr_seconds": 20.0}}
    assert parse_seconds({"md": 10, "pdf": 2}, 0, times) == pytest.approx(10 * 0.002 + 2 * 0.5)
    assert parse_seconds({"pdf": 1}, 6, times) == pytest.approx(0.5 + 6 * 4.0)
    no_ocr = {"md": times["md"]}
    assert parse_seconds({"md": 1}, 3, no_ocr) == pytest.approx(0.002 + 3 * OCR_SECONDS_PER_PAGE)
    assert parse_seconds({"eml": 1}, 0, times) is None  # a kind never parsed here: the stage's rate
    history = {"seconds_per_item": {"parse": 0.002}, "fixed_seconds": {"parse": 0.2}, "runs": {}}
    est = estimate_seconds({"parse": {"compute": 7}}, history, parse_seconds=24.5)
    assert est["by_stage"] == {"parse": 24.7}


_PLAN_IMPORTS = """
import json, sys
from orchestration.cli import main
rc = main(["--config", sys.argv[1], "--json", "plan"])
print(json.dumps({"rc": rc, "dagster": "dagster" in sys.modules}))
"""


def _plan_in_fresh_process(dep: Deployment) -> tuple[dict[str, Any], bool]:
    """(the plan, whether it imported Dagster) from a fresh `bindery plan` process."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}  # as an operator's shell has it
    proc = subprocess.run([sys.executable, "-c", _PLAN_IMPORTS, str(dep.config_path)], capture_output=True,
                          text=True, timeout=300, cwd=root, env={**env, "PYTHONPATH": str(root)})
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, proc.stderr
    status = json.loads(lines[-1])
    assert status["rc"] == 0, status
    return json.loads("\n".join(lines[:-1])), status["dagster"]


def test_a_plan_after_a_cli_run_reads_its_history_without_dagster(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Each CLI run leaves the throughput it measured beside the instance; the next plan uses it
    (no Dagster import, ~1 s saved) while the instance is unchanged, and asks Dagster again
    once anything else wrote to it."""
    from orchestration import runs
    from orchestration.estimate import CACHE_FILE, cached_throughput, throughput
    from orchestration.instance import get_instance

    # the process's first run records its start: this test's sync stands for a fresh `bindery`
    # (in the test runner an earlier test's run was the first)
    monkeypatch.setattr(runs, "_STARTED_RUNS", [])
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    home = dep.data / "dagster_home"
    instance = get_instance(load_config(dep.config_path))
    assert cached_throughput(home) == json_round_trip(throughput(instance))
    plan, imported = _plan_in_fresh_process(dep)
    assert not imported and plan["estimate"]["runs_measured"]["embed"] == 1
    assert plan["estimate"]["by_stage"]["startup"] > 0  # the CLI's start, which its run recorded

    # a materialisation this CLI did not make (a UI or daemon run): the copy is stale; the
    # history is of runs (their step times), so a runless event adds none
    import dagster as dg

    instance.report_runless_asset_event(dg.AssetMaterialization("embeddings", metadata={"embedded": 7, "seconds": 1.0}))
    assert cached_throughput(home) is None
    plan, imported = _plan_in_fresh_process(dep)
    assert imported and plan["estimate"]["runs_measured"]["embed"] == 1

    (home / CACHE_FILE).write_text("{not json")  # a damaged copy is only a slower plan
    assert cached_throughput(home) is None
    dep.cli("sync")
    assert cached_throughput(home) is not None


def json_round_trip(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value))


def test_a_file_whose_name_is_not_utf8_is_planned_as_the_sync_counts_it(tmp_path: Path) -> None:
    """The sync dead-letters a name that is not UTF-8 (`bad-name`); the plan crashed hashing it
    (UnicodeEncodeError). It now counts it as failed, as the sync does, and reads nothing of it."""
    dep = LocalDeployment(tmp_path)
    (dep.root / "notes").mkdir(exist_ok=True)
    bad = os.fsencode(str(dep.root / "notes")) + b"/caf\xe9.txt"
    with open(bad, "wb") as f:
        f.write(b"A note about the cafe opening hours, written in Latin-1 long ago.\n")
    plan, out = plan_then_sync(dep)
    assert_plan_matches(plan, out)
    assert plan["sources"]["docs"]["changes"]["failed"] == out["sources"]["docs"]["failed"] == 1
    assert [d["reason"] for d in dep.cli("dlq")] == ["bad-name"]
    assert_plan_matches(*plan_then_sync(dep))  # and again, after the sync


def _listing_metadata(dep: Deployment) -> dict[str, Any]:
    """The metadata of the last `source_listing` step: what the sync itself says it listed."""
    import dagster as dg

    rec = get_instance(load_config(dep.config_path)).fetch_materializations(
        dg.AssetKey("source_listing"), limit=1).records[0]
    assert rec.asset_materialization is not None
    return {k: v.value for k, v in rec.asset_materialization.metadata.items()}


def test_listed_counts_the_items_the_listing_refuses_as_the_sync_does(tmp_path: Path) -> None:
    """An operator pass: a broken symlink (refused unread) counted in `failed` but not in
    `listed`, so the plan's classes added up to more than it listed. `listed` is every item the
    listing returned: the classes but `deleted` add up to it, in the plan and in the sync."""
    dep = LocalDeployment(tmp_path)
    (dep.root / "notes").mkdir(exist_ok=True)
    (dep.root / "notes" / "gone.md").symlink_to(dep.root / "nowhere.md")
    dep.write("big/huge.txt", "The pump runs. " * 8000)  # 120 KB, over the 64 KB limit
    dep.config["sources"][0]["max_file_mb"] = 0.0625
    dep.save()
    plan, synced = plan_then_sync(dep)
    assert_plan_matches(plan, synced)
    s = plan["sources"]["docs"]
    assert s["changes"]["failed"] == synced["sources"]["docs"]["failed"] == 2
    assert s["listed"] == sum(v for k, v in s["changes"].items() if k != "deleted") == len(DOCS) + 2
    assert _listing_metadata(dep)["listed"] == s["listed"]
    plan, synced = plan_then_sync(dep)  # and again: the refused items are still listed, and failed
    assert plan["sources"]["docs"]["listed"] == _listing_metadata(dep)["listed"] == len(DOCS) + 2


def test_plan_names_the_documents_the_sync_would_dead_letter(tmp_path: Path) -> None:
    """The plan parses pending documents in memory; the ones that fail are named with the stage
    and reason the sync then records in the dead-letter table (and cached failures are not new)."""
    dep = LocalDeployment(tmp_path)
    dep.write("broken/empty.md", "")
    dep.write("broken/truncated.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog")
    dep.write("broken/noise.txt", "\n".join(["== == == == == =="] * 40))
    # 6 KB of gzip that unpacks past the source's max_file_mb (64 KB): refused, not parsed
    dep.write("broken/expands.txt.gz", gzip.compress(("The pump runs. " * 20000).encode()))
    dep.config["sources"][0]["max_file_mb"] = 0.0625
    dep.save()
    plan, _ = plan_then_sync(dep)
    dl = plan["sources"]["docs"]["dead_letters"]
    letters = {(d["doc"], d["stage"], d["reason"]) for d in dep.cli("dlq")}
    assert {(e["path"], e["stage"], e["reason"]) for e in dl["examples"]} == letters and dl["count"] == 4
    assert ("broken/expands.txt.gz", "parse", "too-large") in letters
    assert sum(dl["by_reason"].values()) == 4 and all(e["error"] for e in dl["examples"])
    human = _human_plan(plan)
    assert "docs: 4 documents would be dead-lettered" in human and "  broken/empty.md: parse " in human
    again = dep.cli("plan")
    assert again["sources"]["docs"]["dead_letters"] == {"count": 0, "by_reason": {}, "examples": []}  # in dlq
    assert "dead-lettered" not in _human_plan(again)
    # a too-large refusal is cached with its limit: raised, the plan and the next sync parse it
    dep.config["sources"][0]["max_file_mb"] = 1
    dep.save()
    plan, synced = plan_then_sync(dep)
    assert_plan_matches(plan, synced)
    assert plan["stages"]["parse"]["compute"] == 1
    assert "broken/expands.txt.gz" not in {d["doc"] for d in dep.cli("dlq")}
    assert dep.cli("plan")["stages"]["parse"]["compute"] == 0  # and then it is cached


def test_a_sync_the_parse_quality_check_would_stop_is_planned_as_stopped(tmp_path: Path) -> None:
    """Found by an audit: ten unreadable scans and one new note, and the plan said "1 document to
    write" while the sync's blocking parse_quality check failed and wrote nothing. The plan
    judges the check over the stored parses and its own, and stops where the sync stops."""
    dep = LocalDeployment(tmp_path)
    dep.config["sources"][0]["quality"] = {"min_batch": 3}
    dep.save()
    dep.cli("sync")
    for i in range(3):
        dep.write(f"inbox/scan-{i}.pdf", b"%PDF-1.4\n" + os.urandom(900))
    dep.write("notes/dock.md", "# Dock\n\nQuarterly dock maintenance is on Tuesdays.\n")
    before = footprint(dep)
    plan = dep.cli("plan")
    assert footprint(dep) == before, "bindery plan wrote something"
    synced = dep.cli("sync", expect=1)
    error = plan["sources"]["docs"]["error"]
    assert error and error.startswith("blocking check parse_quality failed: 75% of 4 documents (batch)"), error
    assert synced["errors"]["docs"] == error
    assert_plan_matches(plan, synced)
    assert plan["written"] == {"documents": 0, "chunks": 0, "deleted": 0} and plan["recomputed"]["chunk"] == 0
    assert plan["sources"]["docs"]["dead_letters"]["count"] == 3  # parsed and dead-lettered all the same
    assert "FAILS" in _human_plan(plan)
    # a threshold that tolerates them: the plan says the note goes in, and the sync agrees
    dep.config["sources"][0]["quality"] = {"min_batch": 3, "max_failure_share": 0.9}
    dep.save()
    plan, synced = plan_then_sync(dep, "sync")
    assert plan["sources"]["docs"]["error"] is None and not synced.get("errors"), synced.get("errors")
    assert_plan_matches(plan, synced)
    assert plan["written"]["documents"] == 1


def test_the_plan_counts_listing_refusals_and_copies_of_failed_bytes_as_dead_letters(tmp_path: Path) -> None:
    """Found by an audit: a file over max_file_mb (refused by the listing) and a copy of bytes
    that already failed (dead-lettered from the cached verdict, never parsed) were dead letters
    of the sync the plan did not name; and the copy's dead letter named the other file."""
    dep = LocalDeployment(tmp_path)
    dep.config["sources"][0]["max_file_mb"] = 0.0625
    dep.save()
    dep.write("broken/empty.md", "   \n")
    dep.cli("sync")
    before = {(d["doc"], d["stage"], d["reason"]) for d in dep.cli("dlq")}
    dep.write("big/huge.txt", "The pump runs. " * 8000)  # 120 KB, over the 64 KB limit
    dep.write("copies/blank-again.md", "   \n")  # the bytes of broken/empty.md
    plan, synced = plan_then_sync(dep)
    assert_plan_matches(plan, synced)
    letters = {d["doc"]: d for d in dep.cli("dlq")}
    new = {(d, v["stage"], v["reason"]) for d, v in letters.items()} - before
    dl = plan["sources"]["docs"]["dead_letters"]
    assert {(e["path"], e["stage"], e["reason"]) for e in dl["examples"]} == new and dl["count"] == 2
    assert {d for d, _, _ in new} == {"big/huge.txt", "copies/blank-again.md"}
    copy = letters["copies/blank-again.md"]["error"]
    assert copy.startswith("blank-again.md: the file is empty") and copy.endswith(": broken/empty.md)"), copy
    assert dep.cli("plan")["sources"]["docs"]["dead_letters"]["count"] == 0  # recorded now: not new


def test_a_reindex_is_judged_on_its_candidate_not_on_live(tmp_path: Path) -> None:
    """A reindex builds a candidate: a source live holds none of the current documents of (every
    file moved, here) must not fail it as "nothing could be indexed" while the candidate holds
    them all (a lifecycle fuzz: exit 1, and `reindex --promote` never promoted)."""
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    for p in sorted(q for q in dep.root.rglob("*") if q.is_file()):
        p.rename(p.with_name("moved-" + p.name))
    dep.set_stage("chunk", max_tokens=60, overlap_tokens=5)
    plan = dep.cli("plan", "reindex")
    out = dep.cli("reindex")
    assert out["errors"] == {} and plan["sources"]["docs"]["error"] is None
    status = dep.cli("status")
    assert status["generations"]["candidate"]["counts"]["documents"] == status["documents"]


def test_a_data_dir_inside_the_source_root_is_never_listed(tmp_path: Path) -> None:
    """Bindery's own database, WAL and run history are nobody's documents: a data_dir under a
    source's root (or a symlink to it there) is skipped by the listing, and the plan says so
    too. It was listed: a sync dead-lettered its own state files and failed its parse-quality
    check, and every later run listed more of them (an operator pass)."""
    dep = LocalDeployment(tmp_path)
    dep.data = dep.root / "state"
    dep.config["data_dir"] = str(dep.data)
    dep.save()
    documents = len(DOCS)
    plan, first = plan_then_sync(dep)
    assert_plan_matches(plan, first)
    assert first["sources"]["docs"]["new"] == documents and first["recomputed"]["parse"] == documents
    assert (dep.data / "bindery.db").exists() and dep.cli("dlq") == []
    (dep.root / "state-link").symlink_to(dep.data, target_is_directory=True)
    plan, again = plan_then_sync(dep)
    assert_plan_matches(plan, again)
    assert again["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert sum(again["sources"]["docs"].get(k, 0) for k in ("new", "updated", "deleted", "moved")) == 0


def test_a_probe_that_fails_is_no_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: any failure of the probe itself (not of the index) read as damage, and the
    plan made it the source's error. Only what the index refuses counts; the rest is unchecked."""
    import connectors.generations as generations

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    live = store.generations(["live"])[0]
    store.dispose()
    assert generations.working_index_damage(cfg, live) is None

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("the probe's own failure")

    monkeypatch.setattr(generations, "_open_keyword", broken)
    damage = generations.working_index_damage(cfg, live)
    assert damage is not None and not damage.checked and "the probe's own failure" in damage.reason
    dep.write("robots/xr6000.md", "# XR-6000\n\nThe XR-6000 climbs ramps of twelve degrees.\n")
    assert dep.cli("plan")["sources"]["docs"]["error"] is None


def test_a_damaged_live_index_is_planned_as_the_sync_fails_on_it(tmp_path: Path) -> None:
    """An operator pass: the live generation's working index could not be opened, every sync
    failed on it, and `bindery plan` said `error: null`. The plan reads it (read-only, writing
    nothing) and says what the sync will."""
    from connectors.generations import GenerationPaths

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    live = store.generations(["live"])[0].name
    store.dispose()
    for segment in GenerationPaths.of(cfg, live).keyword.glob("*.store"):
        segment.write_bytes(b"")
    assert dep.cli("plan")["sources"]["docs"]["error"] is None  # nothing to write: the sync opens nothing
    dep.cli("sync")
    dep.write("robots/xr6000.md", "# XR-6000\n\nThe XR-6000 climbs ramps of twelve degrees.\n")
    before = footprint(dep)
    plan = dep.cli("plan")
    assert footprint(dep) == before
    error = plan["sources"]["docs"]["error"]
    assert error and live in error and "verify --repair" in error, plan
    sync = dep.cli("sync", expect=1)
    assert "cannot open tantivy index" in sync["error"] and live in sync["error"]


@needs_tesseract
def test_scanned_pages_are_estimated_unless_the_plan_is_asked_to_read_them(tmp_path: Path) -> None:
    """A plan of six scanned papers (53 pages) took 298 s against the sync's 301 s: it OCR'd every
    page in memory. It now stands each page to OCR for the chunks a scanned page gives and says
    which counts are estimates; `--ocr` reads them, and its counts are the sync's."""
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    dep.write("scans/notice.pdf", docgen.pdf_image_only(pages=2))
    quick = dep.cli("plan")
    assert quick["scans_estimated"] == {"documents": 1, "pages": 2}
    assert quick["sources"]["docs"]["scans_estimated"] == {"documents": 1, "pages": 2}
    assert quick["stages"]["parse"]["compute"] == 1 and quick["stages"]["chunk"]["compute"] == 1
    # estimated, not read: a page's worth of text cut at the configured size (a 1x1 px scan reads as nothing)
    assert quick["stages"]["context"]["compute"] == quick["written"]["chunks"] > 2 * 5
    smaller = LocalDeployment(tmp_path / "smaller", stages={"chunk": {"max_tokens": 100, "overlap_tokens": 10}})
    without = smaller.cli("plan")["written"]["chunks"]
    smaller.write("scans/notice.pdf", docgen.pdf_image_only(pages=2))
    # smaller chunks, more of them, as a real page cut smaller (a fixed count a page said the same)
    assert smaller.cli("plan")["written"]["chunks"] - without > 1.5 * quick["written"]["chunks"]
    assert "1 document holds 2 scanned pages to OCR" in _human_plan(quick)
    # the plan job in the UI: the same estimate by default, the pages read with `ocr`
    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    for ocr, estimated in ((False, {"documents": 1, "pages": 2}), (True, {"documents": 0, "pages": 0})):
        res = runner.defs.resolve_job_def("plan").execute_in_process(
            instance=runner.instance, run_config={"ops": {"plan_next_run": {"config": {"ocr": ocr}}}})
        out = next(e for e in res.all_events if e.event_type_value == "STEP_OUTPUT").step_output_data.metadata
        assert cast(dict[str, Any], out["plan"].value)["scans_estimated"] == estimated
    before = footprint(dep)
    exact = dep.cli("plan", "--ocr")
    assert footprint(dep) == before, "bindery plan --ocr wrote something"
    assert exact["scans_estimated"] == {"documents": 0, "pages": 0}
    assert_plan_matches(exact, dep.cli("sync"))
    assert exact["stages"]["context"]["compute"] != quick["stages"]["context"]["compute"]
