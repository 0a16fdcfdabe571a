"""A new embedded home's SQLite storage is copied from a per-Dagster-version template: the copy
must be exactly what Dagster would have created, and an existing storage is never touched."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import dagster as dg
import pytest

from connectors.config import config_from_dict
from orchestration.instance import get_instance
from orchestration.storage_seed import STORAGE_FILES, seed_sqlite_storage, template_dir


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _contents(db: Path) -> dict[str, object]:
    """Tables with their columns, and the rows of the bookkeeping ones (timestamps left out)."""
    with sqlite3.connect(db) as c:
        tables = sorted(t for (t,) in c.execute("select name from sqlite_master where type='table'"))
        out: dict[str, object] = {t: [r[1] for r in c.execute(f'pragma table_info("{t}")')] for t in tables}
        out["alembic"] = c.execute("select version_num from alembic_version").fetchall()
        out["markers"] = sorted(n for (n,) in c.execute("select name from secondary_indexes"))
        out["rows"] = {t: c.execute(f'select count(*) from "{t}"').fetchone()[0]
                       for t in tables if t not in ("alembic_version", "secondary_indexes")}
        out["journal"] = c.execute("pragma journal_mode").fetchone()
    return out


def test_a_seeded_home_holds_what_dagster_itself_creates(tmp_path: Path) -> None:
    created = tmp_path / "created"
    created.mkdir()
    dg.DagsterInstance.local_temp(str(created)).dispose()
    seeded = tmp_path / "seeded"
    seeded.mkdir()
    assert seed_sqlite_storage(seeded)
    assert all((template_dir() / f).is_file() for f in STORAGE_FILES)
    for name in STORAGE_FILES:
        got = _contents(seeded / name)
        assert got == _contents(created / name)
        assert not any(got["rows"].values()), name  # type: ignore[attr-defined]
    assert not list(seeded.rglob(".*.db.*")), "no temporary copy is left behind"


def test_a_cli_sync_runs_on_a_seeded_home_and_a_second_start_leaves_it_alone(tmp_path: Path) -> None:
    from tests.bindery_fixture import Deployment

    dep = Deployment(tmp_path)
    dep.cli("sync")
    home = tmp_path / "data" / "dagster_home"
    runs = home / "history" / "runs.db"
    assert (template_dir() / STORAGE_FILES[0]).is_file(), "the first start made the template"
    with sqlite3.connect(runs) as c:
        assert c.execute("select count(*) from runs").fetchone()[0] == 1
    before = runs.read_bytes()
    assert not seed_sqlite_storage(home)  # has storage: nothing is copied over it
    assert runs.read_bytes() == before
    dep.cli("sync")
    with sqlite3.connect(runs) as c:
        assert c.execute("select count(*) from runs").fetchone()[0] == 2


def test_without_a_writable_cache_dagster_creates_the_storage_as_before(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    cfg = config_from_dict({"data_dir": str(tmp_path / "data")})
    instance = get_instance(cfg)
    assert instance.get_runs_count() == 0
    assert all((tmp_path / "data" / "dagster_home" / f).is_file() for f in STORAGE_FILES)


def test_a_template_dagster_cannot_make_leaves_the_first_start_to_dagster(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object, **__: object) -> dg.DagsterInstance:
        raise RuntimeError("storage plugin exploded")

    monkeypatch.setattr(dg.DagsterInstance, "local_temp", broken)
    home = tmp_path / "home"
    home.mkdir()
    assert not seed_sqlite_storage(home)
    assert not home.joinpath("history").exists() and not list(template_dir().parent.glob(".tmp-*"))


def test_concurrent_first_starts_seed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warm = tmp_path / "warm"
    warm.mkdir()
    assert seed_sqlite_storage(warm)  # the template exists: only the home's copies are counted
    home = tmp_path / "home"
    home.mkdir()
    copies: list[str] = []
    real_copy = shutil.copyfile

    def slow_copy(src: Path, dst: Path) -> Path:
        copies.append(str(dst))
        threading.Event().wait(0.05)  # widen the window between the check and the link
        return real_copy(src, dst)

    monkeypatch.setattr(shutil, "copyfile", slow_copy)  # the module the seed copies with
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(seed_sqlite_storage(home))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, True]
    assert len(copies) == len(STORAGE_FILES)
    assert all(_contents(home / f)["alembic"] for f in STORAGE_FILES)
