"""Shared pytest fixtures: a clean environment, document stores on SQLite and PostgreSQL,
a real moto S3 server, and small configured Bindery instances under tmp_path."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.moto_server import moto_endpoint as _moto_endpoint

PG_URL = os.environ.get("BINDERY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "BINDERY_REQUIRE_POSTGRES",
             "BINDERY_TEST_PG_URL", "TESSDATA_PREFIX", "USER", "BINDERY_REQUIRE_BROWSER", "BINDERY_SCREENSHOTS")

# A real moto S3 server over HTTP, one per test session; yields its endpoint URL.
moto_endpoint = pytest.fixture(scope="session")(_moto_endpoint)


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's environment out of tests (no stray BINDERY_CONFIG, keys, homes)."""
    for key in list(os.environ):
        if key not in _KEEP_ENV:
            monkeypatch.delenv(key, raising=False)
    for key, value in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
                       "UNSTRUCTURED_DISABLE_NOTICE": "1", "TOKENIZERS_PARALLELISM": "false",
                       "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)


def _pg_available() -> str | None:
    try:
        eng = sa.create_engine(PG_URL)
        with eng.connect() as c:
            c.execute(sa.text("select 1"))
        eng.dispose()
        return None
    except Exception as e:
        return f"PostgreSQL not reachable at {PG_URL}: {type(e).__name__}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL: a SQLite file, or a private schema in PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    yield request.getfixturevalue("pg_url")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A private, empty schema in the PostgreSQL at 127.0.0.1:5432 (skips, or fails in CI, without it)."""
    why = _pg_available()
    if why:
        if os.environ.get("BINDERY_REQUIRE_POSTGRES"):
            pytest.fail(why)
        pytest.skip(why)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    eng = sa.create_engine(PG_URL)
    with eng.begin() as c:
        c.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    with eng.begin() as c:
        c.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    eng.dispose()
