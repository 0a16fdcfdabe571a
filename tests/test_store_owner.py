"""A document store belongs to one data_dir (`connectors.store.ownership`). Two deployments given
one database used to empty each other's search without a word: each took the other's sources for
removed ones and published its own snapshots into the shared generation rows."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connectors.config import BinderyConfig, config_from_dict
from connectors.errors import ConfigError
from connectors.store import DocumentStore
from connectors.store.ownership import STORE_ID_FILE, check_owner, open_store
from tests.bindery_fixture import Deployment

ROOT = Path(__file__).resolve().parent.parent


def test_a_second_deployment_on_the_same_database_is_refused(db_url: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    a = Deployment(tmp_path / "a", backends={"database_url": db_url})
    b = Deployment(tmp_path / "b", backends={"database_url": db_url})
    first = a.cli("sync")
    chunks = first["written"]["chunks"]
    for command in ("sync", "plan", "status"):
        err = b.cli(command, expect=2)
        assert err["reason"] == "config" and "backends.database_url" in err["error"]
        assert f"data_dir is {a.data.resolve()}" in err["error"] and "has never used it" in err["error"]
    if db_url.startswith("postgresql"):  # the Dagster instance lives in that database too: its runs are a's
        err = b.cli("runs", expect=2)  # it listed them (an operator pass)
        assert f"data_dir is {a.data.resolve()}" in err["error"]
    assert not (b.data / STORE_ID_FILE).exists()
    assert not b.data.exists()  # refused before anything was made (it left dagster_home/ and locks/)
    from query_service.app import app_from_env  # the uvicorn factory, beside `bindery serve`

    with monkeypatch.context() as env:
        env.setenv("BINDERY_CONFIG", str(b.config_path))
        with pytest.raises(SystemExit, match=f"data_dir is {a.data.resolve()}"):
            app_from_env()
    status = a.cli("status")  # the owner never noticed
    assert status["chunks"] == chunks and a.cli("verify")["consistent"]


def test_a_moved_data_dir_is_still_the_owner_and_a_replacement_can_take_over(db_url: str, tmp_path: Path) -> None:
    a = Deployment(tmp_path / "a", backends={"database_url": db_url})
    a.cli("sync")
    moved = tmp_path / "moved"
    shutil.move(a.data, moved)
    a.config["data_dir"] = str(moved)
    a.save()
    assert a.cli("status")["live"] is not None  # the store-id file travelled with it
    # a data_dir restored without its file: the way out the refusal names
    shutil.rmtree(moved)
    err = a.cli("status", expect=2)
    store_id = err["error"].rsplit("write ", 1)[1].split(" into ")[0]
    moved.mkdir()  # a restore brings the folder back without the file
    (moved / STORE_ID_FILE).write_text(store_id + "\n")
    assert a.cli("status")["live"] is not None


def test_server_engines_share_a_store_between_data_dirs(db_url: str, tmp_path: Path) -> None:
    """Workers of a cluster each have a data_dir of their own and the indexes live in the servers:
    nothing is claimed, nothing refused (only `status` runs: no server is started here)."""
    servers = {"database_url": db_url, "vector": "qdrant-server", "qdrant_url": "http://127.0.0.1:9",
               "keyword": "elasticsearch", "elasticsearch_url": "http://127.0.0.1:9"}
    one = Deployment(tmp_path / "one", backends=servers)
    two = Deployment(tmp_path / "two", backends=servers)
    one.cli("status")
    two.cli("status")
    assert not (one.data / STORE_ID_FILE).exists() and not (two.data / STORE_ID_FILE).exists()


def _config(tmp_path: Path, db_url: str, name: str) -> BinderyConfig:
    return config_from_dict({"data_dir": str(tmp_path / name / "data"), "backends": {"database_url": db_url}})


def test_two_data_dirs_claiming_at_the_same_moment_leave_one_owner(db_url: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The worst interleaving: both saw no owner, the other inserted its row first. The loser takes
    its file back and is refused (it used to copy the winner's id and pass, owner for good)."""
    winner, loser = _config(tmp_path, db_url, "a"), _config(tmp_path, db_url, "b")
    store = open_store(winner)
    real, reads = DocumentStore.owner, iter([None, None])  # b's two reads came before a's insert

    def stale(self: DocumentStore) -> tuple[str, str] | None:
        return next(reads, real(self))

    monkeypatch.setattr(DocumentStore, "owner", stale)
    with pytest.raises(ConfigError, match="has never used it"):
        check_owner(loser, store, claim=True)
    monkeypatch.undo()
    assert not (loser.data_path / STORE_ID_FILE).exists()
    with pytest.raises(ConfigError):
        open_store(loser)
    store.dispose()


def test_a_deployments_processes_starting_together_all_pass(db_url: str, tmp_path: Path) -> None:
    data = tmp_path / "a" / "data"
    DocumentStore(db_url).dispose()  # the schema first, as the first of them would have made it
    script = ("import sys; from connectors.config import config_from_dict; from connectors.store.ownership import "
              "open_store; open_store(config_from_dict({'data_dir': sys.argv[1], "
              "'backends': {'database_url': sys.argv[2]}})).dispose()")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(data), db_url], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    failures = [err for p in procs if (err := p.communicate(timeout=120)[1]) and p.returncode != 0]
    assert not failures, failures
    cfg = _config(tmp_path, db_url, "a")
    store = DocumentStore(db_url, migrate=False)
    owner = store.owner()
    store.dispose()
    assert owner is not None and (cfg.data_path / STORE_ID_FILE).read_text().strip() == owner[0]


def test_a_store_from_before_owners_is_claimed_only_where_its_indexes_are(db_url: str, tmp_path: Path) -> None:
    owner, stranger = _config(tmp_path, db_url, "owner"), _config(tmp_path, db_url, "stranger")
    store = DocumentStore(db_url)  # as migration 0006 leaves a store of an older release: no owner row
    store.create_generation(name="g1_abc", status="live", stage_versions={}, stage_configs={}, embedder_id="e",
                            vector_index="g1_abc", vector_engine="qdrant-edge", keyword_index="g1_abc",
                            counts={}, created_at=time.time())
    (owner.data_path / "indexes" / "g1_abc").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"generations \(g1_abc\) were built under another data_dir"):
        check_owner(stranger, store, claim=True)
    assert store.owner() is None and not (stranger.data_path / STORE_ID_FILE).exists()
    check_owner(owner, store, claim=True)
    assert store.owner() is not None and store.owner()[1] == str(owner.data_path.resolve())  # type: ignore[index]
    store.dispose()


def test_a_failed_claim_is_one_line_and_claims_nothing(db_url: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    cfg = _config(tmp_path, db_url, "a")

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ConfigError, match=r"cannot write .*store-id: No space left on device"):
        open_store(cfg)
    monkeypatch.undo()
    store = open_store(cfg)  # nothing half-claimed: the next run claims it
    assert store.owner() is not None
    store.dispose()


def test_the_default_store_inside_data_dir_is_never_claimed(tmp_path: Path) -> None:
    cfg = config_from_dict({"data_dir": str(tmp_path / "data")})
    open_store(cfg).dispose()
    assert not (tmp_path / "data" / STORE_ID_FILE).exists()
