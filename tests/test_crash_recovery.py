"""Crash, then re-run: a REAL `bindery sync` subprocess is killed with SIGKILL in the middle of
a sync, the sync is run again, and the system must converge — the document store, the vector
index and the keyword index hold exactly the same chunk ids, no duplicates, no orphans,
`bindery verify` says consistent, queries work, and no dead run is left blocking the source.

Two ways to land the kill:
- from outside: poll the data dir until a stage has started (documents listed, parses being
  written, contexts written so the embedding stage is running, the index writer opened) and
  SIGKILL the process group right then;
- from inside, exactly: a wrapper runs the same CLI with one store/index function replaced by
  `os.kill(os.getpid(), SIGKILL)`, so the process dies between two precise writes.

Also: `bindery verify --repair` repairs drift introduced directly in the Qdrant working index.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import dagster as dg
import pytest

from connectors.config import load_config
from connectors.generations import GenerationPaths, open_writer, publish, writer_lock
from tests.sync_helpers import (
    LocalDeployment,
    assert_converged,
    generation_row,
    hits,
    index_sets,
    indexed_docs,
    store_of,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
BINDERY = REPO / ".venv" / "bin" / "bindery"
PYTHON = REPO / ".venv" / "bin" / "python"

EXTRA_DOCS = {
    "guides/charging.md": "# Charging guide\n\n## Docks\n\n" + " ".join(
        f"Dock CD-{i} charges robots in bay {i} and reports its temperature every {i + 2} minutes."
        for i in range(1, 25)) + "\n\n## Faults\n\n" + " ".join(
        f"Fault F{i:02} means the dock contact plate {i} needs cleaning with isopropyl alcohol."
        for i in range(1, 25)) + "\n",
    "guides/maintenance.md": "# Maintenance schedule\n\n" + "\n\n".join(
        f"## {part.title()}\n\nInspect the {part} every {w + 1} weeks; {task}."
        for w, (part, task) in enumerate([
            ("drive belts", "replace a belt when its cracks are deeper than one millimetre"),
            ("wheel bearings", "grease them with lithium paste after cleaning off the old grease"),
            ("lidar window", "wipe it with a dry microfibre cloth and check the protective field"),
            ("battery pack", "log the cell voltages and retire packs below eighty percent capacity"),
            ("emergency stop", "press it during a slow run and confirm the robot halts within a second"),
            ("odometer", "compare the reading with the fleet log and recalibrate the encoder on drift"),
        ])) + "\n",
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(REPO))
    return env


class CrashDeployment(LocalDeployment):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        for rel, text in EXTRA_DOCS.items():
            self.write(rel, text)
        self.logs = tmp / "logs"
        self.logs.mkdir()
        self.n = 0

    # -- the data dir, read from outside the running process -------------------------------
    def db_count(self, table: str, where: str = "") -> int:
        db = self.data / "bindery.db"
        if not db.exists():
            return 0
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.5)
            try:
                return int(con.execute(f"SELECT count(*) FROM {table} {where}").fetchone()[0])
            finally:
                con.close()
        except sqlite3.Error:
            return 0  # not migrated yet, or busy: ask again

    def index_dir_opened(self) -> bool:
        return any((p / "tantivy").exists() for p in (self.data / "indexes").glob("g*"))  # made by open_writer

    # -- processes ---------------------------------------------------------------------------
    def spawn(self, argv: list[str]) -> subprocess.Popen[bytes]:
        self.n += 1
        out = open(self.logs / f"run{self.n}.log", "wb")
        # its own process group, so the kill also reaches anything it started
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=_env(), cwd=self.data.parent,
                                start_new_session=True)

    def sync_process(self) -> subprocess.Popen[bytes]:
        return self.spawn([str(BINDERY), "--config", str(self.config_path), "--json", "sync"])

    def log(self) -> str:
        return (self.logs / f"run{self.n}.log").read_text(errors="replace")[-3000:]

    def kill_when(self, proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str,
                  timeout: float = 240.0) -> None:
        """SIGKILL the process group as soon as `ready()` holds; fail if the run ended first."""
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None:
                pytest.fail(f"sync ended (exit {proc.returncode}) before the kill point {what!r}:\n{self.log()}")
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                pytest.fail(f"kill point {what!r} not reached in {timeout:.0f} s:\n{self.log()}")
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL

    def crash_at_hook(self, hook: str) -> None:
        """Run `bindery sync` in a subprocess that SIGKILLs itself at `hook` (see HOOKS)."""
        proc = self.spawn([str(PYTHON), str(Path(__file__).resolve()), hook, str(self.config_path)])
        rc = proc.wait(timeout=280)
        assert rc == -signal.SIGKILL, f"expected to die at {hook}, exited {rc}:\n{self.log()}"

    # -- Dagster ----------------------------------------------------------------------------
    def runs_in_progress(self) -> list[Any]:
        from orchestration.instance import get_instance

        instance = get_instance(load_config(self.config_path))
        return list(instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])))


@pytest.fixture
def dep(tmp_path: Path) -> CrashDeployment:
    return CrashDeployment(tmp_path)


ALL_DOCS = {"robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/oncall.txt", "ops/errors.html",
            "people/lyon.md", *EXTRA_DOCS}


def _assert_recovered(dep: CrashDeployment, docs: set[str]) -> None:
    assert_converged(dep, min_chunks=len(docs))
    assert indexed_docs(dep) == docs
    assert dep.runs_in_progress() == [], "a killed run is still marked as in progress"
    again = dep.cli("sync")
    assert again["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert again["written"] == {"documents": 0, "chunks": 0, "deleted": 0}


# -- killed from outside, at stages found by watching the data dir --------------------------


def test_first_sync_killed_three_times_then_rerun_converges(dep: CrashDeployment) -> None:
    """Kill while parsing, again while embedding, again while writing the indexes; each run
    resumes from what the previous one stored; the final run converges."""
    proc = dep.sync_process()
    dep.kill_when(proc, lambda: dep.db_count("parses") >= 2, "parse stage running")
    assert dep.db_count("embeddings") == 0

    proc = dep.sync_process()
    dep.kill_when(proc, lambda: dep.db_count("contexts") > 0, "embedding stage running")
    assert not dep.index_dir_opened()

    proc = dep.sync_process()
    dep.kill_when(proc, dep.index_dir_opened, "index writer opened")

    out = dep.cli("sync")
    assert out["generation"] == 1 and out["errors"] == {}
    _assert_recovered(dep, ALL_DOCS)
    assert hits(dep, "which fault means the contact plate needs isopropyl alcohol", k=1)[0]["doc"] == \
        "guides/charging.md"


def test_incremental_sync_killed_while_embedding_then_rerun_converges(dep: CrashDeployment) -> None:
    dep.cli("sync")
    _change_everything(dep)
    contexts, embedded = dep.db_count("contexts"), dep.db_count("embeddings")
    proc = dep.sync_process()
    # new prefixes are stored and no new vector yet: the embedding stage is loading the model
    dep.kill_when(proc, lambda: dep.db_count("contexts") > contexts, "embedding stage running")
    assert dep.db_count("embeddings") == embedded
    # an edit, a delete, a move and a narrowed ACL wait for their index step: verify reports the
    # drift and says a sync is the first step (it sent operators to a whole rebuild after a cancel:
    # a Dagster UI pass); readers see them through the store, which holds the narrowed ACL already
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, "Lyon office Part-Dieu"))
    v = dep.cli("verify", expect=1)
    assert v["generations"][index_sets(dep)["gen"].name]["pending"] >= 3, v
    assert "run `bindery sync`, then verify again" in v["error"]
    from orchestration.report import human
    status = dep.cli("status")  # and status says there is work left (it showed nothing to do)
    assert status["sources"]["docs"]["waiting"] >= 2, status["sources"]
    assert "waiting for a sync" in human("status", status)
    out = dep.cli("sync")
    assert out["errors"] == {}
    _assert_changed(dep)


def test_incremental_sync_killed_while_writing_the_indexes_then_rerun_converges(dep: CrashDeployment) -> None:
    dep.cli("sync")
    _change_everything(dep)
    snapshots = GenerationPaths.of(load_config(dep.config_path), index_sets(dep)["gen"].name).snapshots
    published = len(list(snapshots.iterdir()))
    embedded = dep.db_count("embeddings")
    proc = dep.sync_process()
    # the embeddings of the changed documents are stored: the index stage is running now
    dep.kill_when(proc, lambda: dep.db_count("embeddings") > embedded, "index stage running")
    assert len(list(snapshots.iterdir())) == published, "killed too late: a new snapshot was already published"
    dep.cli("sync")
    _assert_changed(dep)


def _change_everything(dep: CrashDeployment) -> None:
    dep.edit("guides/charging.md", EXTRA_DOCS["guides/charging.md"].replace("isopropyl alcohol", "a lint-free swab"))
    dep.edit("ops/new-runbook.md", "# Conveyor runbook\n\nRestart conveyor KX-19 by holding the green button.\n")
    dep.remove("ops/errors.html")
    dep.rename("ops/oncall.txt", "policies/oncall.txt")
    dep.set_acl("people/lyon.md", ["hr-team"])


CHANGED_DOCS = (ALL_DOCS - {"ops/errors.html", "ops/oncall.txt"}) | {"ops/new-runbook.md", "policies/oncall.txt"}


def _assert_changed(dep: CrashDeployment) -> None:
    _assert_recovered(dep, CHANGED_DOCS)
    assert "lint-free swab" in hits(dep, "how to clean the dock contact plate", k=1)[0]["text"]
    assert all("isopropyl" not in h["text"] for h in hits(dep, "isopropyl alcohol contact plate", k=20))
    assert hits(dep, "restart conveyor KX-19", k=1)[0]["doc"] == "ops/new-runbook.md"
    assert hits(dep, "acknowledge a page within fifteen minutes", k=1)[0]["doc"] == "policies/oncall.txt"
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, "Lyon office Part-Dieu"))
    assert hits(dep, "Lyon office Part-Dieu", "--principal", "hr-team", k=1)[0]["doc"] == "people/lyon.md"
    assert all(h["doc"] != "ops/errors.html" for h in hits(dep, "ERR-0x1F drive controller heartbeat", k=20))


# -- killed from inside, between two exact writes ---------------------------------------------

# hook -> (what is replaced by a SIGKILL, whether the kill happens on the first or an
# incremental sync)
HOOKS = {
    "purge": "listing: documents marked deleted, their chunks not yet purged",
    "publish": "index: working indexes written, no snapshot published yet",
    "index-state": "index: snapshot published, index state not yet recorded",
    "snapshot-recorded": "index: index state recorded, snapshot not yet on the generation row",
    "first-flip": "index: generation 1 complete, binding not yet flipped",
}


def _install_hook(hook: str) -> None:
    """Runs in the child: replace one function by a SIGKILL of this very process."""
    import assets.index_stage
    import assets.pipeline
    from connectors.store.store import DocumentStore

    def die(*_: Any, **__: Any) -> NoReturn:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable: the process was killed")

    if hook == "purge":
        DocumentStore.purge_documents = die  # type: ignore[method-assign]
    elif hook == "publish":
        setattr(assets.index_stage, "publish", die)  # the name index_stage calls (from connectors.generations)
    elif hook == "index-state":
        DocumentStore.set_index_state = die  # type: ignore[method-assign]
    elif hook == "snapshot-recorded":
        real = DocumentStore.set_index_state

        def then_die(self: DocumentStore, rows: list[dict[str, Any]]) -> None:
            real(self, rows)
            die()

        DocumentStore.set_index_state = then_die  # type: ignore[method-assign,assignment]
    elif hook == "first-flip":
        DocumentStore.flip_binding = die  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown hook {hook}")


@pytest.mark.parametrize("hook", ["publish", "index-state", "snapshot-recorded", "first-flip"])
def test_first_sync_killed_between_two_writes_then_rerun_converges(dep: CrashDeployment, hook: str) -> None:
    dep.crash_at_hook(hook)
    out = dep.cli("sync")
    assert out["generation"] == 1 and out["errors"] == {}
    _assert_recovered(dep, ALL_DOCS)
    assert hits(dep, "How long does the XR-4471 battery last?", k=1)[0]["doc"] == "robots/xr4471.md"


@pytest.mark.parametrize("hook", ["purge", "snapshot-recorded"])
def test_incremental_sync_killed_between_two_writes_then_rerun_converges(dep: CrashDeployment, hook: str) -> None:
    dep.cli("sync")
    _change_everything(dep)
    dep.crash_at_hook(hook)
    dep.cli("sync")
    _assert_changed(dep)


# -- verify --repair -------------------------------------------------------------------------------


def test_verify_repair_rebuilds_a_drifted_index_from_the_store(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    assert dep.cli("verify")["consistent"] is True
    cfg = load_config(dep.config_path)
    store = store_of(dep)
    gen = generation_row(store)
    victims = [d.doc_id for d in store.documents() if d.external_id in ("people/lyon.md", "ops/oncall.txt")]
    with writer_lock(cfg, gen.name):
        pair = open_writer(cfg, gen, None)
        try:
            pair.vector.delete_docs(victims)  # drift: points gone from the vector index only
        finally:
            pair.close()
        # ... and published, so readers see it too (as a sync after the drift would publish it)
        vec, kw = publish(cfg, gen)
    store.update_generation(gen.id, vector_snapshot=vec, keyword_snapshot=kw)
    store.bump_binding()
    # users see the damage: a chunk without its vector point is never served
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, "Lyon office Part-Dieu"))
    s = index_sets(dep)
    missing = s["keyword"] - s["vector"]
    assert missing and s["store"] == s["keyword"]

    out = dep.cli("verify", expect=1)
    assert out["consistent"] is False and "verify --repair" in out["error"]
    g = out["generations"][gen.name]
    assert g["missing_in_vector"] == len(missing) and g["orphans_in_vector"] == 0 and g["missing_in_keyword"] == 0

    out = dep.cli("verify", "--repair")
    assert out["generations"][gen.name]["repaired"] is True
    assert dep.cli("verify")["consistent"] is True
    assert_converged(dep)
    assert hits(dep, "Lyon office Part-Dieu", k=1)[0]["doc"] == "people/lyon.md"
    assert hits(dep, "acknowledge a page within fifteen minutes", k=1)[0]["doc"] == "ops/oncall.txt"
    # the repair used the store alone: nothing re-parsed or re-embedded, and a sync finds nothing to do
    again = dep.cli("sync")
    assert again["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert again["written"]["documents"] == 0


def test_an_index_that_cannot_be_opened_is_rebuilt_and_a_previous_one_stops_no_sync(tmp_path: Path) -> None:
    """Found by an operator pass: a truncated index file made `verify --repair` end with the open
    error (nothing repaired), and when it was the previous generation's, every sync of the source
    failed at the index step, though only a rollback target was damaged."""
    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "t")
    store = store_of(dep)
    live = generation_row(store)
    previous = next(g for g in store.generations(["previous"]))
    segment = next(GenerationPaths.of(load_config(dep.config_path), previous.name).keyword.glob("*.store"))
    segment.write_bytes(b"")  # a damaged file: the index cannot be opened at all
    dep.remove("ops/oncall.txt")
    out = dep.cli("sync")  # the live index is synced all the same
    assert out["written"]["deleted"] == 1
    assert len(out["warnings"]) == 1 and previous.name in out["warnings"][0]
    assert all(h["doc"] != "ops/oncall.txt" for h in hits(dep, "acknowledge a page within fifteen minutes"))
    error = dep.cli("status")["sources"]["docs"]["last_error"]
    assert previous.name in error and "verify --repair" in error and live.name not in error
    out = dep.cli("verify", expect=1)
    assert "cannot open" in out["generations"][previous.name]["unreadable"]
    assert out["generations"][live.name]["consistent"] is True
    out = dep.cli("verify", "--repair")
    assert out["generations"][previous.name]["repaired"] is True
    assert dep.cli("verify")["consistent"] is True
    dep.remove("people/lyon.md")
    dep.cli("sync")
    assert dep.cli("status")["sources"]["docs"]["last_error"] is None  # the next clean run clears it


if __name__ == "__main__":  # the child of crash_at_hook: bindery sync that dies at the hook
    sys.path.insert(0, str(REPO))
    _install_hook(sys.argv[1])
    from orchestration.cli import main

    sys.exit(main(["--config", sys.argv[2], "--json", "sync"]))


def test_verify_finds_a_published_snapshot_gone_and_repair_publishes_it_again(tmp_path: Path) -> None:
    """Found by an audit: readers open the published snapshot, never the working indexes, so
    with the snapshot deleted every query failed ("no published vector snapshot") while
    `verify` said consistent, `--repair` did nothing and a quiet sync did not publish."""
    import shutil

    dep = LocalDeployment(tmp_path)
    dep.cli("sync")
    gen = generation_row(store_of(dep))
    assert gen.vector_snapshot and gen.keyword_snapshot
    shutil.rmtree(Path(gen.vector_snapshot).parent)  # the snapshot folder holds both copies
    # a query says what mends it (it said only "never built, or discarded or collected")
    assert "bindery verify --repair" in dep.cli("query", "Lyon office", expect=1)["error"]
    out = dep.cli("verify", expect=1)
    g = out["generations"][gen.name]
    assert out["consistent"] is False and g["missing_snapshots"] == 2 and g["missing_in_vector"] == 0
    out = dep.cli("verify", "--repair")
    assert out["generations"][gen.name]["repaired"] is True
    assert dep.cli("verify")["consistent"] is True
    assert hits(dep, "Lyon office Part-Dieu", k=1)[0]["doc"] == "people/lyon.md"
    assert dep.cli("sync")["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
