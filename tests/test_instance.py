"""The Dagster instance: what `dagster.yaml` Bindery writes for each configuration (validated by
Dagster's own config checks), and, on PostgreSQL, that a CLI sync's run, materialisations and
checks are visible to a separately started `dagster-webserver` sharing only the database."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from connectors.config import BinderyConfig, config_from_dict
from connectors.errors import ConfigError, StoreError
from orchestration.instance import GENERATED_MARK, checked_home, dagster_home, get_instance, instance_settings
from tests.bindery_fixture import Deployment
from tests.conftest import PG_URL
from tests.instance_check import validate_instance_yaml
from tests.webserver import graphql, webserver

PG = "postgresql+psycopg://bindery:s3cret@db.internal:5433/bindery"


def _cfg(tmp_path: Path, **raw: Any) -> BinderyConfig:
    return config_from_dict({"data_dir": str(tmp_path / "data"), **raw})


def test_embedded_default_is_sqlite_with_a_per_source_queue(tmp_path: Path) -> None:
    home = dagster_home(_cfg(tmp_path))
    text = (home / "dagster.yaml").read_text()
    assert text.startswith(GENERATED_MARK)
    value = validate_instance_yaml(home / "dagster.yaml")
    assert "storage" not in value and "run_launcher" not in value  # SQLite under DAGSTER_HOME
    limits = value["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert limits == [{"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}]
    assert value["telemetry"] == {"enabled": False}


def test_store_on_postgresql_puts_the_instance_there_in_its_own_schema(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, backends={"database_url": PG + "?sslmode=require"},
               orchestration={"max_concurrent_runs": 8, "runs_per_source": 2})
    home = dagster_home(cfg)
    value = validate_instance_yaml(home / "dagster.yaml")
    db = sa.engine.make_url(value["storage"]["postgres"]["postgres_url"])
    assert (db.drivername, db.username, db.password, db.host, db.port, db.database) == (
        "postgresql+psycopg2", "bindery", "s3cret", "db.internal", 5433, "bindery")
    assert dict(db.query) == {"sslmode": "require", "options": "-csearch_path=dagster"}
    conf = value["run_coordinator"]["config"]
    assert conf["max_concurrent_runs"] == 8 and conf["tag_concurrency_limits"][0]["limit"] == 2
    assert oct((home / "dagster.yaml").stat().st_mode & 0o777) == "0o600"


def test_storage_can_be_forced_either_way(tmp_path: Path) -> None:
    pinned = _cfg(tmp_path, backends={"database_url": PG}, orchestration={"storage": "sqlite"})
    assert "storage" not in instance_settings(pinned)
    separate = _cfg(tmp_path, orchestration={"storage": "postgres", "postgres_url": PG,
                                              "postgres_schema": "ops_dagster"})
    db = sa.engine.make_url(instance_settings(separate)["storage"]["postgres"]["postgres_url"])
    assert db.query["options"] == "-csearch_path=ops_dagster"
    with pytest.raises(ConfigError, match="postgres_url"):
        instance_settings(_cfg(tmp_path, orchestration={"storage": "postgres"}))


def test_what_the_store_url_leaves_to_libpq_the_instance_url_leaves_too(tmp_path: Path) -> None:
    """A URL without user, host or database lets libpq fill them from PGUSER, PGHOST and
    PGDATABASE for the store; the instance's URL filled them with fixed defaults (`postgres`,
    `localhost`), so Dagster ran as another user, or in another database, than the store. Options
    the URL gives are kept, the instance's schema set last (the last setting wins)."""
    cfg = _cfg(tmp_path, backends={"database_url": "postgresql+psycopg:///?options=-cstatement_timeout%3D5000"})
    value = validate_instance_yaml(dagster_home(cfg) / "dagster.yaml")
    db = sa.engine.make_url(value["storage"]["postgres"]["postgres_url"])
    assert (db.username, db.password, db.host, db.port, db.database or None) == (None, None, None, None, None)
    assert db.query["options"] == "-cstatement_timeout=5000 -csearch_path=dagster"


@pytest.mark.postgres
def test_the_instance_follows_the_store_into_the_database_libpq_names(
        tmp_path: Path, pg_url: str, dagster_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the user and the database left to PGUSER and PGDATABASE, the store opened the
    database they name and Dagster `postgres`: the instance's schema, made where the store
    is, was missing where Dagster looked ("no schema has been selected to create in")."""
    named = sa.engine.make_url(pg_url)
    monkeypatch.setenv("PGUSER", named.username or "postgres")
    monkeypatch.setenv("PGDATABASE", named.database or "postgres")
    left_out = named._replace(username=None, database=None).render_as_string(hide_password=False)  # set() keeps None
    cfg = _cfg(tmp_path, backends={"database_url": left_out}, orchestration={"postgres_schema": dagster_schema})
    with get_instance(cfg) as instance:
        assert instance.get_runs(limit=1) == []
    eng = sa.create_engine(PG_URL)
    try:
        with eng.connect() as c:
            tables = c.execute(sa.text("SELECT count(*) FROM information_schema.tables WHERE table_schema = :s"),
                               {"s": dagster_schema}).scalar_one()
    finally:
        eng.dispose()
    assert tables > 0  # Dagster's tables, in the database the store uses


def test_named_run_launcher_is_written_and_validates(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, orchestration={"run_launcher": "docker", "run_launcher_config": {
        "network": "bindery", "env_vars": ["BINDERY_CONFIG"], "container_kwargs": {"volumes": ["/data:/data"]}}})
    value = validate_instance_yaml(dagster_home(cfg) / "dagster.yaml")
    assert value["run_launcher"]["class"] == "DockerRunLauncher"
    bad = _cfg(tmp_path / "bad", orchestration={"run_launcher": "docker", "run_launcher_config": {"netwrk": "x"}})
    with pytest.raises(AssertionError, match="netwrk"):
        validate_instance_yaml(dagster_home(bad) / "dagster.yaml")


def test_configuration_changes_rewrite_only_bindery_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _cfg(tmp_path)
    path = dagster_home(cfg) / "dagster.yaml"
    cfg.orchestration.max_concurrent_runs = 2
    dagster_home(cfg)
    assert yaml.safe_load(path.read_text())["run_coordinator"]["config"]["max_concurrent_runs"] == 2
    own = tmp_path / "ops_home"
    own.mkdir()
    (own / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # a deployment's own file
    monkeypatch.setenv("DAGSTER_HOME", str(own))
    assert dagster_home(cfg) == own
    assert (own / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


def test_a_refused_database_leaves_the_instance_file_as_it_was(tmp_path: Path) -> None:
    """A command refused because the instance's PostgreSQL rejects the configured connection
    (a wrong port or user) rewrote dagster.yaml first: a daemon started next read the bad
    settings and failed on every retry. The file keeps the last settings that worked."""
    from tests.moto_server import free_port

    good = _cfg(tmp_path)
    path = dagster_home(good) / "dagster.yaml"
    before = path.read_text()
    bad = _cfg(tmp_path, backends={"database_url": f"postgresql+psycopg://nouser:pw@127.0.0.1:{free_port()}/x"})
    # which URL was refused (a verification pass: the line named neither schema nor URL)
    named = r"PostgreSQL storage \(schema 'dagster' at postgresql\+psycopg://nouser:\*\*\*@127.0.0.1:\d+/x;"
    with pytest.raises(StoreError, match=named):
        get_instance(bad)
    with pytest.raises(StoreError, match=named):  # `bindery ui` prepares the home itself
        checked_home(bad)
    assert path.read_text() == before and "nouser" not in before


# -- the shared instance on PostgreSQL --------------------------------------------------------


@pytest.fixture
def dagster_schema(pg_url: str) -> Iterator[str]:
    """A private schema for the Dagster instance tables, dropped afterwards."""
    schema = f"dg_{uuid.uuid4().hex[:12]}"
    yield schema
    eng = sa.create_engine(PG_URL)
    with eng.begin() as c:
        c.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    eng.dispose()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_cli_sync_is_visible_to_a_separate_webserver_on_the_same_database(
        tmp_path: Path, pg_url: str, dagster_schema: str) -> None:
    dep = Deployment(tmp_path, backends={"database_url": pg_url},
                     orchestration={"postgres_schema": dagster_schema})
    out = dep.cli("sync")
    assert out["generation"] == 1
    run_id = get_instance(config_from_dict(dep.config)).get_runs(limit=1)[0].run_id

    # The webserver shares nothing with the CLI but the database: its DAGSTER_HOME is a fresh
    # folder holding only a copy of the instance configuration.
    web_home = tmp_path / "webserver_home"
    web_home.mkdir()
    shutil.copy(dep.data / "dagster_home" / "dagster.yaml", web_home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(web_home), "BINDERY_CONFIG": str(dep.config_path)}
    with webserver(env, tmp_path / "webserver.log") as port:
        runs = graphql(port, '{ runsOrError { ... on Runs { results { runId status jobName '
                             'tags { key value } } } } }')["runsOrError"]["results"]
        run = next(r for r in runs if r["runId"] == run_id)
        assert run["status"] == "SUCCESS" and run["jobName"] == "sync"
        assert {"key": "dagster/partition", "value": "docs"} in run["tags"]
        mats = graphql(port, '{ assetOrError(assetKey: {path: ["vector_index"]}) { ... on Asset { '
                             'assetMaterializations(limit: 5) { runId partition } } } }')
        assert {"runId": run_id, "partition": "docs"} in mats["assetOrError"]["assetMaterializations"]
        checks = graphql(port, '{ assetCheckExecutions(assetKey: {path: ["parsed_documents"]}, '
                               'checkName: "parse_quality", limit: 5) { runId status evaluation { success } } }')
        execution = next(c for c in checks["assetCheckExecutions"] if c["runId"] == run_id)
        assert execution["status"] == "SUCCEEDED" and execution["evaluation"]["success"] is True


def test_two_configurations_in_one_process_get_their_own_instances(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The first `get_instance` sets DAGSTER_HOME for Dagster; a second configuration used in the
    same process (a benchmark over several corpora, a test) must not land on the first one's
    instance, where a partition sync would delete the other's partitions. A DAGSTER_HOME the
    user set stays the user's choice."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    a = config_from_dict({"data_dir": str(tmp_path / "a")})
    b = config_from_dict({"data_dir": str(tmp_path / "b")})
    with get_instance(a) as first:
        assert Path(first.root_directory) == tmp_path / "a" / "dagster_home"
    with get_instance(b) as second:
        assert Path(second.root_directory) == tmp_path / "b" / "dagster_home"
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "mine"))
    assert dagster_home(a) == tmp_path / "mine"
