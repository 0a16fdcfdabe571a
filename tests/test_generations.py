"""Blue-green generations: the gate refuses a worse candidate and passes an equal one, the flip
and the rollback are single steps, syncs reach a building candidate, and queries keep working
(each answered by exactly one generation) across promotions and rollbacks."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from connectors.config import load_config
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import DOCS, Deployment
from tests.sync_helpers import generation_row, store_of
from tests.test_pipeline import chunk_sets

pytestmark = pytest.mark.slow


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    d = Deployment(tmp_path)
    d.cli("sync")
    return d


def _store(dep: Deployment) -> DocumentStore:
    return DocumentStore(load_config(dep.config_path).database_url)


def _served_id(retriever: LiveRetriever) -> int:
    served = retriever.current
    assert served is not None, "the retriever serves no generation"
    return served.gen.id


def test_gate_refuses_a_worse_candidate_and_force_records_who(dep: Deployment) -> None:
    # 16-token chunks, each its own unit, cut every gold answer apart: recall collapses. (With
    # units on, a unit still returns the whole section and the gate would rightly pass it.)
    dep.set_stage("chunk", max_tokens=16, overlap_tokens=0, min_tokens=0, parent_max_tokens=0)
    cand = dep.cli("reindex")["candidate"]
    out = dep.cli("promote", expect=1)
    assert out["promoted"] is False and out["forced"] is False and out["live"] == 1
    assert "recall@10 fell" in out["error"] or "regressed" in out["error"]
    rep = generation_row(_store(dep), cand).eval_report or {}
    assert rep["passed"] is False and rep["regressed"] and rep["live"]["recall@10"] > rep["candidate"]["recall@10"]
    assert rep["eval_set"]["path"] == str(dep.eval_path) and len(rep["eval_set"]["digest"]) == 12  # which set judged
    status = dep.cli("status")
    assert status["live"] == 1
    from orchestration.report import _gate_word  # live by default, never measured: not "passed"

    assert _gate_word(status["generations"]["live"]) == "not judged (first generation)"
    # the build and the refusal are recent events (the blocking check stopped the flip before the
    # refusal was recorded: an operator pass found none)
    kinds = [e["kind"] for e in status["events"]]
    assert "gate-refused" in kinds and "candidate-built" in kinds, kinds
    from orchestration.report import human  # what a person reads: the refused candidate and the ways out

    assert "was refused by the gate" in human("status", status) and "`bindery discard`" in human("status", status)
    # the line on live's outdated settings agrees (it said the refused candidate awaited judging)
    assert status["live_outdated"]["candidate_current"]
    assert "`bindery promote` judges it" not in human("status", status)

    out = dep.cli("promote", "--force", "--reason", "testing a forced flip", "--by", "alice")
    assert out["promoted"] and out["live"] == cand and out["forced"]
    # the UI shows the override as what it is: a failed gate (WARN, not blocking), never a green pass
    check = out["gate_check"]
    assert check["passed"] is False and check["severity"] == "WARN"
    assert check["partition"] == generation_row(_store(dep), cand).name  # under the generation it forced
    assert check["description"].startswith("FORCED by alice: testing a forced flip (gate: ")
    assert check["metadata"]["forced"] is True and check["metadata"]["forced_reason"] == "testing a forced flip"
    g = generation_row(_store(dep), cand)
    assert (g.forced_by, g.force_reason) == ("alice", "testing a forced flip")
    assert any(e["kind"] == "forced-promotion" for e in dep.cli("status")["events"])



def test_a_promotion_that_fails_before_judging_shows_no_earlier_verdict(
        dep: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gate run whose eval could not finish printed the verdict an earlier run had stored as
    its own report (a refusal on other metrics, with another case count; for the previous
    generation even "passed": first generation): the operator read a judgement that was never
    made (a gate pass's find). Such a run now reports `{}`."""
    import evals.promotion
    from connectors.errors import QueryError

    dep.set_stage("chunk", max_tokens=16, overlap_tokens=0, min_tokens=0, parent_max_tokens=0)
    cand = dep.cli("reindex")["candidate"]
    assert dep.cli("promote", expect=1)["report"]["passed"] is False  # a verdict, stored on the candidate

    def unfinished(*_a: object, **_k: object) -> None:
        raise QueryError("the eval could not finish")

    monkeypatch.setattr(evals.promotion, "evaluate", unfinished)
    out = dep.cli("promote", expect=1)
    assert out["promoted"] is False and "could not finish" in out["error"] and out["report"] == {}
    assert generation_row(_store(dep), cand).eval_report  # the earlier verdict is still on record


def test_promoting_the_live_generation_is_refused_before_it_is_judged(dep: Deployment) -> None:
    """Found by an audit: `promote --candidate <live id>` ran the gate first and recorded its
    verdict on live (live against itself, or "gate not run" with --force), so `status` showed
    the live generation as refused. Now it is refused before anything is judged or recorded."""
    live = dep.cli("status")["live"]
    before = generation_row(_store(dep), live).eval_report
    for args in (["--candidate", str(live)], ["--candidate", str(live), "--force", "--reason", "test"]):
        out = dep.cli("promote", *args, expect=1)
        assert out["reason"] == "binding" and "is live: only a candidate or the previous" in out["error"]
    assert generation_row(_store(dep), live).eval_report == before
    assert dep.cli("status")["live"] == live


def test_equal_candidate_is_promoted_and_rollback_restores_exactly(dep: Deployment) -> None:
    query = ("query", "How long does the XR-4471 battery last?", "-k", "5")
    before = dep.cli(*query)
    cand = dep.cli("reindex", "--force")["candidate"]
    out = dep.cli("promote")
    assert out["promoted"] and out["live"] == cand and out["previous"] == 1
    assert out["report"]["passed"] and out["report"]["regressed"] == []
    assert dep.cli(*query)["generation"] == cand

    # longer than the store keeps: refused before anything moves (PostgreSQL refused it at the flip)
    assert "--by: at most 128 characters" in dep.cli("rollback", "--by", "x" * 129, expect=2)["error"]
    back = dep.cli("rollback", "--by", "   ")  # blank names nobody: the login name is recorded
    import getpass

    assert back["report"]["by"] == getpass.getuser()
    assert (back["live"], back["previous"]) == (1, cand)
    # the UI's index_binding shows the flip back, not the promotion before it (an operator pass)
    import dagster as dg

    from connectors.config import load_config
    from orchestration.instance import get_instance

    event = get_instance(load_config(dep.config_path)).get_latest_materialization_event(dg.AssetKey("index_binding"))
    assert event is not None and event.asset_materialization is not None
    shown = event.asset_materialization
    assert (shown.metadata["live"].value, shown.metadata["previous"].value) == (1, cand)
    assert shown.metadata["rollback"].value is True and str(shown.partition).startswith("g1_")
    after = dep.cli(*query)
    assert after["generation"] == 1
    assert [h["chunk_id"] for h in after["hits"]] == [h["chunk_id"] for h in before["hits"]]
    assert [h["score"] for h in after["hits"]] == [h["score"] for h in before["hits"]]


def test_the_rollback_job_flips_back_as_the_cli_does_and_the_ui_shows_it(dep: Deployment) -> None:
    """Promote had a job in the UI and rollback none: an operator working in the UI had to leave
    it to undo a promotion (an operator pass)."""
    import dagster as dg

    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    job = runner.defs.resolve_job_def("rollback")
    nothing = job.execute_in_process(instance=runner.instance, raise_on_error=False)
    failure = nothing.failure_data_for_node("roll_back")
    assert failure is not None and failure.error is not None
    assert "nothing to roll back to: no previous generation is kept" in failure.error.message
    cand = dep.cli("reindex", "--force")["candidate"]
    assert dep.cli("promote")["live"] == cand
    done = job.execute_in_process(instance=runner.instance,
                                  run_config={"ops": {"roll_back": {"config": {"by": "ops-oncall"}}}})
    assert done.success
    assert dep.cli("status")["live"] == 1
    event = runner.instance.get_latest_materialization_event(dg.AssetKey("index_binding"))
    assert event is not None and event.asset_materialization is not None
    meta = event.asset_materialization.metadata
    assert (meta["live"].value, meta["previous"].value, meta["rolled_back_by"].value) == (1, cand, "ops-oncall")
    assert dep.cli("query", "How long does the XR-4471 battery last?", "-k", "1")["generation"] == 1


def test_syncs_reach_the_building_candidate(dep: Deployment) -> None:
    dep.set_stage("chunk", max_tokens=64)
    cand = dep.cli("reindex")["candidate"]
    dep.write("ops/new-runbook.md", "# Freezer runbook\n\nRobots in the freezer aisle need heated grippers.\n")
    (dep.root / "people/lyon.md").unlink()
    out = dep.cli("sync")
    assert out["sources"]["docs"]["new"] == 1 and out["sources"]["docs"]["deleted"] == 1
    for gen in (1, cand):
        sets = chunk_sets(dep, gen)
        assert sets["store"] == sets["vector"] == sets["keyword"]
    store = _store(dep)
    new_doc = next(d for d in store.documents() if d.external_id == "ops/new-runbook.md")
    assert new_doc.doc_id in store.index_state(cand) and new_doc.doc_id in store.index_state(1)
    lyon = next(d for d in store.documents(include_deleted=True) if d.external_id == "people/lyon.md")
    assert lyon.doc_id not in store.index_state(cand)


# A liveness bound, not a speed claim: the binding is polled every query.poll_seconds, but opening
# the new generation under a loaded 2-core CI machine has taken over 4 s (2 s made the test flaky).
_PICKUP_S = 20.0


def test_queries_follow_flips_without_errors_and_each_answer_has_one_generation(dep: Deployment) -> None:
    cfg = load_config(dep.config_path)
    # Another chunk version: every chunk id of the candidate differs from generation 1's, so an
    # answer that mixed the two generations would show (with an identical rebuild it could not).
    dep.set_stage("chunk", max_tokens=64)
    cand = dep.cli("reindex")["candidate"]
    chunks_of = {1: chunk_sets(dep, 1)["vector"], cand: chunk_sets(dep, cand)["vector"]}
    assert chunks_of[1] and chunks_of[cand] and not (chunks_of[1] & chunks_of[cand])
    retriever = LiveRetriever(cfg)
    errors: list[str] = []
    answers: list[tuple[int, set[str]]] = []
    stop = threading.Event()

    def client(q: str) -> None:
        while not stop.is_set():
            try:
                r = retriever.search(q, 5)
                answers.append((r.generation.id, {h.chunk_id for h in r.hits}))
            except Exception as e:
                errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(q,)) for q in
               ("XR-4471 battery", "on-call page", "ERR-0x1F heartbeat", "Lyon office")]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        dep.cli("promote", "--force", "--reason", "the test needs a different generation live")
        t0 = time.monotonic()
        while _served_id(retriever) != cand:
            assert time.monotonic() - t0 < _PICKUP_S, f"the flip was not picked up within {_PICKUP_S} s"
            time.sleep(0.05)
        time.sleep(1.0)
        dep.cli("rollback")
        t0 = time.monotonic()
        while _served_id(retriever) != 1:
            assert time.monotonic() - t0 < _PICKUP_S, f"the rollback was not picked up within {_PICKUP_S} s"
            time.sleep(0.05)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join()
        retriever.close()
    assert errors == []
    gens = {g for g, _ in answers}
    assert gens == {1, cand} and len(answers) > 20
    assert all(ids for _, ids in answers)  # every answer had hits to check
    for gen, ids in answers:
        assert ids <= chunks_of[gen], "a response mixed chunks of two generations"


def test_gc_never_drops_live_or_previous(dep: Deployment) -> None:
    cfg = load_config(dep.config_path)
    store = _store(dep)
    cfg.retention.keep_generations = 2
    cfg.retention.rollback_window_hours = 0
    for _ in range(3):
        dep.cli("reindex", "--force")
        dep.cli("promote")
    b = store.get_binding()
    assert b is not None and b.previous_generation_id is not None
    dropped = Lifecycle(cfg, store).collect_garbage()
    assert dropped
    statuses = {g.id: g.status for g in store.generations()}
    assert statuses[b.generation_id] == "live" and statuses[b.previous_generation_id] == "previous"
    assert all(statuses[g] == "dropped" for g in statuses if g not in (b.generation_id, b.previous_generation_id))
    assert dep.cli("rollback")["live"] == b.previous_generation_id


def test_gc_drops_a_generations_files_only_under_its_writer_lock(dep: Deployment) -> None:
    """A sync writing an expired generation (an access change reaching the old ones) holds its
    writer lock: gc marks the row dropped at once, so the sync writes no more, and deletes the
    files once the write is over. Without the lock a paused sync wrote a dropped generation's
    index back onto the disk after gc (a concurrency pass)."""
    from connectors.generations import GenerationPaths, writer_lock

    cfg = load_config(dep.config_path)
    store = _store(dep)
    cfg.retention.rollback_window_hours = 0
    first = store.get_binding()
    assert first is not None
    for _ in range(2):
        dep.cli("reindex", "--force")
        dep.cli("promote")
    old = generation_row(store, first.generation_id)
    assert old.status == "retired"
    root = GenerationPaths.of(cfg, old.name).root
    dropped: list[str] = []
    with writer_lock(cfg, old.name):  # a sync mid-write
        gc = threading.Thread(target=lambda: dropped.extend(Lifecycle(cfg, store).collect_garbage()))
        gc.start()
        time.sleep(1.0)
        assert generation_row(store, old.id).status == "dropped"  # no writer starts another write
        assert root.exists() and gc.is_alive()  # the files wait for the write in progress
    gc.join(30)
    assert old.name in dropped and not (root / "edge").exists() and not (root / "tantivy").exists()
    # files a dropped generation kept (a lock wait that timed out, a process killed between the
    # row and the files) go at the next gc: its row alone would never bring gc back to them
    (root / "edge").mkdir(parents=True)
    assert Lifecycle(cfg, store).collect_garbage() == [] and not root.exists()


def test_promote_and_rollback_flip_only_the_binding_they_decided_on(dep: Deployment,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The lifecycle passes what it decided on to the flip: a verdict judged against another
    live generation, or a rollback that read a binding which has moved since, is refused and
    changes nothing (a concurrency pass: two generations were left marked live)."""
    from connectors.errors import BindingError

    cand_id = dep.cli("reindex", "--force")["candidate"]
    cfg = load_config(dep.config_path)
    store = _store(dep)
    life = Lifecycle(cfg, store)
    cand = generation_row(store, cand_id)
    with pytest.raises(BindingError, match="moved while this ran"):
        life.promote(cand, {"passed": True, "reasons": ["judged"], "live_generation": 999})
    assert store.get_binding().generation_id == 1  # type: ignore[union-attr]
    dep.cli("promote")  # live 2, previous 1
    stale = store.get_binding()
    dep.cli("rollback")  # live 1, previous 2
    monkeypatch.setattr(store, "get_binding", lambda alias="live": stale)  # what a racing rollback read
    with pytest.raises(BindingError, match="moved while this ran"):
        life.rollback()
    monkeypatch.undo()
    assert [g.id for g in store.generations(["live"])] == [1]
    sets = chunk_sets(dep)  # GC kept every chunk row the remaining generations use
    assert sets["store"] == sets["vector"] == sets["keyword"] and sets["store"]


def test_reindex_promote_names_the_new_live_generation(dep: Deployment) -> None:
    """json-contract.md: `generation` is the live generation after the run, the promoted one."""
    out = dep.cli("reindex", "--force", "--promote")
    assert out["promotion"]["promoted"] and out["promotion"]["live"] == out["candidate"] != 1
    assert out["generation"] == out["candidate"] == dep.cli("status")["live"]


def test_a_first_reindex_builds_the_live_generation_not_a_candidate(tmp_path: Path) -> None:
    """On a fresh data dir the first generation binds itself: no candidate, nothing to promote."""
    dep = Deployment(tmp_path)
    out = dep.cli("reindex", "--promote")
    assert out["generation"] == 1 and out["candidate"] is None and out["candidate_name"] is None
    assert out["promotion"] is None and "first generation" in out["message"]
    status = dep.cli("status")
    assert status["live"] == 1 and status["candidate"] is None


def test_an_empty_corpus_builds_nothing_to_promote_and_says_why(tmp_path: Path) -> None:
    """Sources that list no document leave nothing live: the sync warns where to look, and a
    reindex offers no candidate (it used to say "run `bindery promote`", which then refused)."""
    dep = Deployment(tmp_path)
    for p in dep.root.rglob("*"):
        if p.is_file():
            p.unlink()
    synced = dep.cli("sync")
    assert synced["generation"] is None and any("no source lists any document" in w for w in synced["warnings"])
    out = dep.cli("reindex", "--force", "--promote")
    assert out["candidate"] is None and out["promotion"] is None and "no generation was built" in out["message"]
    dep.write("ops/oncall.txt", DOCS["ops/oncall.txt"])
    assert dep.cli("sync")["generation"] is not None  # the first sync with a document binds it

def test_gc_keeps_the_embeddings_of_an_edited_documents_unchanged_chunks(tmp_path: Path) -> None:
    """An embedding names the content it was first computed for. After an edit that content is
    gone, but the document's unchanged chunks still embed the same texts: `bindery gc` must keep
    them, or the next reindex (or a rollback's sync) embeds them all again."""
    dep = Deployment(tmp_path)
    dep.set_stage("chunk", max_tokens=40, overlap_tokens=0)
    steps = ["Close the inlet valve before the morning shift starts and note the gauge reading.",
             "Bleed the pressure line slowly until the hiss stops, then wipe the fitting dry.",
             "Inspect the gasket for cracks; a brittle gasket is replaced, never patched.",
             "Torque the flange bolts in a star pattern to thirty newton metres.",
             "Open the inlet again and listen for leaks along the whole manifold.",
             "Sign the logbook with the time, the readings and your initials."]
    sections = "".join(f"## Step {i}\n\n{text}\n\n" for i, text in enumerate(steps))
    dep.write("ops/valves.md", f"# Valve checks\n\n{sections}")
    dep.cli("sync")
    dep.write("ops/valves.md", f"# Valve checks\n\n{sections}## Step 9\n\nValve 9 was added in May.\n")
    assert 0 < dep.cli("sync")["recomputed"]["embed"] < 6  # the edit embeds only what changed
    caches = dep.cli("gc")["caches"]
    assert caches["parses"] == 1  # the old content's parse is garbage ...
    assert dep.cli("reindex", "--force")["recomputed"]["embed"] == 0  # ... its chunks' embeddings are not


def test_gc_keeps_what_a_kept_version_is_rebuilt_from(tmp_path: Path) -> None:
    """A file whose new bytes fail to parse keeps its indexed version (its chunks were cut from
    the last good content). `bindery gc` counted that content dead, as no document has it, and
    dropped its parse, prefixes and embeddings: the next reindex left the document out of the
    candidate, and a promotion took it out of search (a robustness pass)."""
    dep = Deployment(tmp_path)
    dep.write("ops/valves.md", "# Valve checks\n\nBleed the pressure line slowly until the hiss stops.\n")
    dep.cli("sync")
    dep.write("ops/valves.md", "")  # empty: a dead letter
    assert dep.cli("sync")["kept_versions"] == 1
    caches = dep.cli("gc")["caches"]
    assert caches == {"parses": 0, "contexts": 0, "embeddings": 0}, caches
    out = dep.cli("reindex", "--force")
    assert out["recomputed"]["embed"] == 0
    dep.cli("promote", "--force", "--reason", "test")
    r = LiveRetriever(load_config(dep.config_path))
    try:
        from connectors.indexes.base import PUBLIC, Filters

        hits = r.search("bleed the pressure line", 5, Filters(principals=(PUBLIC,))).hits
        assert "ops/valves.md" in {h.doc for h in hits}
    finally:
        r.close()


def test_a_kept_version_restored_to_its_indexed_bytes_is_not_waiting(tmp_path: Path) -> None:
    """A file whose new bytes failed to parse keeps its indexed version; put back as it was, the
    next sync has nothing to write (the digest is the one indexed). `bindery status` still counted
    it as waiting for a sync, and `bindery verify` as pending, after every later sync (an
    operator pass)."""
    dep = Deployment(tmp_path)
    text = "# Valve checks\n\nBleed the pressure line slowly until the hiss stops.\n"
    dep.write("ops/valves.md", text)
    dep.cli("sync")
    dep.write("ops/valves.md", "")  # empty: a dead letter, its indexed version kept
    assert dep.cli("sync")["kept_versions"] == 1
    dep.write("ops/valves.md", text)
    out = dep.cli("sync")
    assert out["sources"]["docs"]["updated"] == 1 and out["written"]["documents"] == 0
    assert dep.cli("status")["sources"]["docs"]["waiting"] == 0
    assert [g["pending"] for g in dep.cli("verify")["generations"].values()] == [0]


def test_a_promotion_that_drops_a_kept_version_says_so(tmp_path: Path) -> None:
    """A candidate cut under other chunk settings cannot take a kept version (its chunks would be
    cut anew from a parse of bytes that are gone): the promotion names the document it takes out
    of search instead of dropping it silently (a robustness pass: the gate passed without a word)."""
    dep = Deployment(tmp_path)
    dep.write("ops/valves.md", "# Valve checks\n\nBleed the pressure line slowly until the hiss stops.\n")
    dep.cli("sync")
    dep.write("ops/valves.md", "")
    assert dep.cli("sync")["kept_versions"] == 1
    dep.set_stage("chunk", max_tokens=120, overlap_tokens=10)
    dep.cli("reindex")
    out = dep.cli("promote", "--force", "--reason", "test")
    assert len(out["warnings"]) == 1 and "docs:ops/valves.md" in out["warnings"][0], out["warnings"]
    assert "1 document the live generation serves" in out["warnings"][0]


def test_a_forced_reindex_refused_by_its_checks_records_no_rebuild(dep: Deployment) -> None:
    """`reindex --promote --force` with a broken eval set exits 2 before building: no candidate,
    and no 'forced-rebuild' event claiming one was built."""
    (dep.root.parent / "broken.jsonl").write_text('{"id": "a", "query": \n')
    dep.config["gate"] = {**dep.config.get("gate", {}), "queries": str(dep.root.parent / "broken.jsonl")}
    dep.save()
    dep.cli("reindex", "--promote", "--force", expect=2)
    store = _store(dep)
    try:
        assert store.events("forced-rebuild") == [] and len(store.generations()) == 1
    finally:
        store.dispose()


def test_a_first_sync_killed_between_verdict_and_binding_completes_on_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first generation was bound live, then its "first generation" verdict recorded: a
    process killed between the two left it "not judged" for good, as later runs skip binding a
    system that has a binding (a crash pass's find). The verdict now comes first; a run killed
    after it leaves no binding, and the next sync binds the generation."""
    dep = Deployment(tmp_path)
    real = Lifecycle.record_verdict

    def killed_after(self: Lifecycle, gen_id: int, verdict: dict[str, object]) -> None:
        real(self, gen_id, verdict)
        raise KeyboardInterrupt  # the process dies right after the verdict is written

    with monkeypatch.context() as m:
        m.setattr(Lifecycle, "record_verdict", killed_after)
        dep.cli("sync", expect=130)  # as Ctrl-C: the CLI stops with one line
    assert _store(dep).get_binding() is None
    dep.cli("sync")
    live = dep.cli("status")["generations"]["live"]
    assert live is not None and live["eval"]["passed"] is True


def test_private_reader_copies_of_killed_processes_are_swept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader's private copy of a vector snapshot was removed on close or at exit only: each
    SIGKILLed `bindery serve` left one in the temp folder for ever (up to ~95 MB each, a crash
    pass's find). Each copy's owner holds a lock on it for its life; the first reader a process
    opens removes the copies whose lock nobody holds (a lock dies with its process, in any PID
    namespace), and leaves alone live ones, young ones and anything that is not a copy."""
    import fcntl
    import os
    import tempfile

    import connectors.generations as generations

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(generations, "_swept", False)
    old = time.time() - 3600

    def copy(name: str, *, age: float = old) -> Path:
        folder = tmp_path / name
        (folder / "edge").mkdir(parents=True)
        (folder / ".owner").touch()
        os.utime(folder / ".owner", (age, age))
        return folder

    copy("bindery-reader-dead")
    live = copy("bindery-reader-live")
    copy("bindery-reader-young", age=time.time())
    (tmp_path / "bindery-reader-notes").mkdir()  # no owner file: not a reader's copy
    fd = os.open(live / ".owner", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as its live owner does (another open file: another owner)
    try:
        generations._sweep_dead_readers()
    finally:
        os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bindery-reader-live", "bindery-reader-notes", "bindery-reader-young"]
    # the real thing: a copy this process makes holds its lock until it is released
    monkeypatch.setattr(generations, "_swept", False)
    snap = tmp_path / "snapshot"
    snap.mkdir()
    mine = generations._private_vector_copy("qdrant-local", str(snap))
    os.utime(mine / ".owner", (old, old))
    generations._sweep_dead_readers()
    assert mine.exists()
    generations._release(mine)
    assert not mine.exists()


def test_a_candidate_of_other_settings_than_the_configuration_is_named_and_its_promotion_warns(
        dep: Deployment) -> None:
    """A candidate built for settings bindery.yaml no longer holds (a `tune --build` one, or the
    file changed back) was invisible: status said nothing and promote took it without a word,
    leaving live on settings the next reindex would undo (an operator pass)."""
    dep.set_stage("chunk", max_tokens=120)
    cand = dep.cli("reindex")["candidate"]
    dep.config["stages"]["chunk"].pop("max_tokens")
    dep.save()
    status = dep.cli("status")
    assert status["candidate"] == cand and status["live_outdated"] is None
    assert status["candidate_outdated"]["stages"] == ["chunk"]
    assert status["candidate_outdated"]["settings"] == ["stages.chunk.max_tokens: 120 (configuration: 200)"]
    out = dep.cli("promote", "--force", "--reason", "keep the tuned chunk size")
    assert any("stages.chunk.max_tokens: 120" in w and "copy them into it" in w for w in out["warnings"]), out
    assert dep.cli("status")["candidate_outdated"] is None  # live now; status names live's drift instead


def test_reading_a_retired_generation_says_it_is_frozen(dep: Deployment, capsys: pytest.CaptureFixture[str]) -> None:
    """A retired generation still answers `query`/`eval --generation`, but it missed every delete
    and access change since it retired: the command says so (an operator pass: silent)."""
    dep.set_stage("chunk", max_tokens=120)
    first = dep.cli("reindex")["candidate"]
    dep.set_stage("chunk", max_tokens=150)  # supersedes the first candidate: retired
    dep.cli("reindex")
    capsys.readouterr()
    dep.cli("query", "--generation", str(first), "battery")
    err = capsys.readouterr().err
    assert f"generation {first} (" in err and "is retired" in err, err
    dep.cli("query", "--generation", "live", "battery")
    assert "retired" not in capsys.readouterr().err
    # by its name too, as `status` and the console show it (an operator pass: exit 2)
    store = store_of(dep)
    name = generation_row(store, first).name
    store.dispose()
    assert dep.cli("query", "--generation", name, "battery")["generation"] == first
    assert "is retired" in capsys.readouterr().err


def test_after_a_rollback_status_offers_the_generation_of_the_configuration(dep: Deployment) -> None:
    """Rolled back from the generation of the current settings, status sent the operator to
    `bindery reindex`, a rebuild of what the previous generation already is (an operator pass)."""
    from orchestration.report import human

    dep.set_stage("chunk", max_tokens=120)
    cand = dep.cli("reindex")["candidate"]
    dep.cli("promote", "--force", "--reason", "the new chunk size")
    dep.cli("rollback")
    status = dep.cli("status")
    assert status["previous"] == cand and status["live_outdated"]["previous_current"] is True
    assert f"`bindery promote --candidate {cand}` brings it back" in human("status", status)
    out = dep.cli("promote", "--candidate", str(cand))
    assert out["live"] == cand and dep.cli("status")["live_outdated"] is None


def test_a_refused_candidate_names_the_gold_document_only_live_holds(dep: Deployment) -> None:
    """A file whose new bytes fail stays in live as it was indexed, but a candidate built since
    lacks it: the refusal says that of the candidate, not that neither generation holds it (an
    operator pass; real engines, `evals.promotion.judge` end to end)."""
    dep.write("ops/oncall.txt", b"")  # now empty: a dead letter; live keeps what it indexed
    dep.cli("sync")
    dep.set_stage("chunk", max_tokens=150)
    dep.cli("reindex")
    warnings = dep.cli("promote", expect=1)["report"]["warnings"]
    assert any(w.startswith("1 gold documents are in live generation ") and "but not in the candidate" in w
               and w.endswith(": ops/oncall.txt") for w in warnings), warnings
    assert not any("not in the generations judged" in w for w in warnings), warnings


def test_an_eval_set_that_measures_nothing_refuses_the_promotion(dep: Deployment) -> None:
    """A UI pass: an eval set whose gold paths named no indexed document scored 0.0 on both
    generations, and the gate passed (0.0 -> 0.0) and flipped the binding. It refuses, saying
    why; --force promotes anyway."""
    import json

    dep.eval_path.write_text("".join(json.dumps({"id": f"q{i}", "query": q, "gold": [{"doc": f"man/nope{i}.1.gz"}],
                                                 "exclude_docs": []}) + "\n"
                                     for i, q in enumerate(["battery life", "lidar window", "firmware rollback"])))
    dep.set_stage("chunk", max_tokens=150)
    dep.cli("reindex")
    refused = dep.cli("promote", expect=1)
    assert any("scores 0 recall@10 on both generations" in r for r in refused["report"]["reasons"]), refused
    assert any("not in the generations judged" in w for w in refused["report"]["warnings"])
    assert dep.cli("promote", "--force", "--reason", "the eval set is being rewritten")["promoted"] is True


def test_a_rollback_to_a_generation_whose_index_cannot_be_opened_warns(dep: Deployment) -> None:
    """An operator pass: the previous generation's working index was damaged (syncs had said
    so), `rollback` flipped to it with no warning, and then every sync failed. It still flips
    (searches read the published copy) but says what will fail and what mends it."""
    from connectors.generations import GenerationPaths

    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "a previous generation to damage")
    store = _store(dep)
    previous = next(iter(store.generations(["previous"]))).name
    store.dispose()
    clean = dep.cli("rollback")
    assert clean["warnings"] == []
    dep.cli("rollback")  # back again: the same generation is previous once more
    for segment in GenerationPaths.of(load_config(dep.config_path), previous).keyword.glob("*.store"):
        segment.write_bytes(b"")
    out = dep.cli("rollback")
    assert len(out["warnings"]) == 1 and previous in out["warnings"][0], out
    assert "verify --repair" in out["warnings"][0]
    assert dep.cli("query", "battery")["hits"]  # served from the published copy
    dep.cli("verify", "--repair")
    assert dep.cli("sync")["errors"] == {}
    # a published snapshot gone: the query service could not open the generation rolled back to
    store = _store(dep)
    gone = next(iter(store.generations(["previous"])))
    store.dispose()
    shutil.rmtree(str(gone.keyword_snapshot))
    out = dep.cli("rollback")
    assert len(out["warnings"]) == 1 and "published snapshot is missing" in out["warnings"][0], out


def test_the_previous_generation_is_searched_by_the_name_status_gives_it(dep: Deployment) -> None:
    """`status` lists live, previous and candidate; `query --generation previous` was refused
    ("no generation previous", an operator pass). It names the rollback target."""
    first = dep.cli("status")["live"]
    assert "no previous generation" in dep.cli("query", "--generation", "previous", "battery", expect=1)["error"]
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "a second generation")
    assert dep.cli("status")["previous"] == first
    assert dep.cli("query", "--generation", "previous", "battery")["generation"] == first
    assert dep.cli("eval", "--generation", "previous")["generation"] == first


def test_a_rollback_while_a_sync_ran_is_named_in_its_summary(tmp_path: Path) -> None:
    """A sync writes the generations live when it starts; a rollback meanwhile binds one it only
    maintained. The summary said "live generation: 1" as if that one held the run's edits (an
    operator pass); it now warns that the next sync brings it up to date."""
    from orchestration.runs import RunOutcome
    from orchestration.summaries import live_moved_warning

    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.set_stage("chunk", max_tokens=64, overlap_tokens=8)
    dep.cli("reindex")
    dep.cli("promote", "--force", "--reason", "test")
    store = store_of(dep)
    first, second = sorted(store.generations(), key=lambda g: g.id)
    # what the index step records of a sync that began with the second generation live
    ran = [RunOutcome("sync", "docs", True, "r1", generations={second.name: {"role": "written"},
                                                               first.name: {"role": "maintained"}})]
    assert live_moved_warning(ran, store) is None
    dep.cli("rollback")
    warning = live_moved_warning(ran, store)
    assert warning is not None and first.name in warning and "docs" in warning and "next `bindery sync`" in warning


def test_a_rebuild_of_the_live_settings_is_not_refused_for_a_mean_the_index_history_moved(
        dep: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's `reindex --force` of an unchanged configuration was refused: one question
    of 30 went from first to second (MRR@10 -0.017, past the 0.01 tolerance), moved by the live
    keyword index's BM25 statistics. The same reports still refuse a candidate of other settings."""
    import evals.promotion
    from evals.metrics import METRIC_NAMES, CaseResult
    from evals.runner import EvalReport

    def report(mrr: list[float]) -> EvalReport:
        return EvalReport.from_cases([CaseResult(f"q{i}", "c", f"query {i}", {**dict.fromkeys(METRIC_NAMES, 1.0),
                                                                               "mrr@10": m}, 1, 1, 10)
                                      for i, m in enumerate(mrr)])

    live = dep.cli("status")["live"]

    def crafted(_cfg: object, _store: object, gen: Any, *_a: object, **_k: object) -> EvalReport:
        return report([1.0] * 30 if gen.id == live else [0.5] + [1.0] * 29)

    monkeypatch.setattr(evals.promotion, "evaluate", crafted)
    rebuilt = dep.cli("reindex", "--force")["candidate"]
    out = dep.cli("promote")
    assert out["promoted"] and out["live"] == rebuilt
    assert "own stage versions" in out["report"]["reasons"][0] and out["report"]["regressed_secondary"]
    dep.set_stage("chunk", max_tokens=16, overlap_tokens=0, min_tokens=0, parent_max_tokens=0)
    live = rebuilt
    dep.cli("reindex")
    refused = dep.cli("promote", expect=1)
    assert refused["report"]["passed"] is False and "mrr@10 fell by 0.0167" in refused["report"]["reasons"][0]
