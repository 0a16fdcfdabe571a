"""A document store belongs to one data_dir (`connectors.store.ownership`). Two deployments given
one database used to empty each other's search without a word: each took the other's sources for
removed ones and published its own snapshots into the shared generation rows."""

from __future__ import annotations

import shutil
from pathlib import Path

from connectors.store.ownership import STORE_ID_FILE
from tests.bindery_fixture import Deployment


def test_a_second_deployment_on_the_same_database_is_refused(db_url: str, tmp_path: Path) -> None:
    a = Deployment(tmp_path / "a", backends={"database_url": db_url})
    b = Deployment(tmp_path / "b", backends={"database_url": db_url})
    first = a.cli("sync")
    chunks = first["written"]["chunks"]
    for command in ("sync", "plan", "status"):
        err = b.cli(command, expect=2)
        assert err["reason"] == "config" and "backends.database_url" in err["error"]
        assert f"data_dir is {a.data.resolve()}" in err["error"] and "has never used it" in err["error"]
    assert not (b.data / STORE_ID_FILE).exists()
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
