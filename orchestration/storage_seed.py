"""A new embedded instance's SQLite storage, copied from a template made once per Dagster version.

Creating the run, event-index and schedule databases runs Dagster's schema creation and alembic
stamps, which load every migration script: 0.35-0.65 s measured on these 2-core machines, paid
by the first command in every new data dir (a new deployment, every benchmark round, most
tests). The template is made by Dagster itself, in the user cache, the first time a Dagster
version is seen; a new home then gets byte copies of its three databases. Those hold only the
schema, the alembic revision and Dagster's migration markers (checked in the tests), so a copy
is what creating them would have written.

Only an embedded home whose `dagster.yaml` Bindery wrote and that has no storage yet is seeded.
Files are linked into place with no-clobber semantics under a lock on the home folder, so a
concurrent first start, or a storage another process just created, is never overwritten. Any
failure leaves the home as it was and Dagster creates the storage the usual way.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

__all__ = ["STORAGE_FILES", "seed_sqlite_storage", "template_dir"]

# What `SqliteStorage.from_local` creates under DAGSTER_HOME (run shards come later, per run).
STORAGE_FILES = ("history/runs.db", "history/runs/index.db", "schedules/schedules.db")


def template_dir() -> Path:
    """Where this Dagster version's template lives (`$XDG_CACHE_HOME` or ~/.cache)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "bindery" / "dagster-storage" / dg.__version__


def _has_storage(home: Path) -> bool:
    return (home / "history").exists() or (home / "schedules").exists()


def _complete(folder: Path) -> bool:
    return all((folder / f).is_file() for f in STORAGE_FILES)


def _make_template(target: Path) -> bool:
    """Let Dagster create an empty storage in a scratch folder, then move it into place; whether
    `target` now holds a complete template."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    except OSError:
        return False  # no writable cache: nothing to seed from
    try:
        (scratch / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        try:
            instance = dg.DagsterInstance.local_temp(str(scratch))
            instance.dispose()  # closes every connection: no -wal/-shm file is left beside a database
        except Exception:  # a speed-up only: whatever broke here, Dagster's own creation will say
            return False
        if not _complete(scratch) or list(scratch.rglob("*-wal")):
            return False
        (scratch / "dagster.yaml").unlink()
        try:
            scratch.rename(target)
        except OSError:
            pass  # another process made it first: use theirs
        return _complete(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def seed_sqlite_storage(home: Path) -> bool:
    """Copy the template's databases into `home` when it has no storage; True when it did."""
    if _has_storage(home):
        return False
    template = template_dir()
    if not _complete(template) and not _make_template(template):
        return False
    try:
        with _locked(home):
            if _has_storage(home):
                return False  # a concurrent first start got here first
            for name in STORAGE_FILES:
                dest = home / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
                shutil.copyfile(template / name, tmp)
                try:
                    os.link(tmp, dest)  # no-clobber: an existing database is never replaced
                except FileExistsError:
                    pass
                finally:
                    tmp.unlink()
    except OSError:
        return False  # Dagster creates whatever is missing
    return True
