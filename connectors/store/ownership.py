"""Which data_dir a document store belongs to.

With the embedded index engines (Qdrant Edge or local mode, tantivy) a generation's index files
live under data_dir and the store's generation rows point at them. Two deployments given one
database (a staging and a production configuration that share `backends.database_url`) would
share those rows too: each takes the other's sources for removed ones and publishes its own
snapshot into the shared live generation, so one sync of the second empties the first's search.

The first process of a deployment to open the store claims it: a random id goes into
``data_dir/store-id`` (first, so a process killed halfway leaves a claim the next run completes)
and then into the store's `store_owner` row. A data_dir whose file holds another id, or none
while the store is claimed, is refused with one line naming the owner. The claim is made under a
lock in the data_dir (a deployment's processes starting together agree), and a data_dir whose
proposed id lost to another data_dir's takes its file back and is refused. A store migrated from
before owners were recorded is claimed only by a data_dir that holds its generations' index
folders. The file travels with the data_dir, so a moved or restored data_dir is still the owner.

Nothing is checked when the store is the default SQLite file inside data_dir (it cannot be
shared), nor with the server engines (Qdrant server and Elasticsearch): the indexes live in the
servers, and several machines' data_dirs share one store by design.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from connectors.config import BinderyConfig, make_data_dir
from connectors.errors import ConfigError, StoreError
from connectors.generations import GenerationPaths, is_embedded, vector_engine
from connectors.store.store import DocumentStore

__all__ = ["STORE_ID_FILE", "check_owner", "indexes_in_data_dir", "open_store", "refuse_foreign_store"]

STORE_ID_FILE = "store-id"


def open_store(cfg: BinderyConfig) -> DocumentStore:
    """The configuration's document store (migrated to the current schema), claimed for its
    data_dir or refused when it belongs to another one (`check_owner`)."""
    store = DocumentStore(cfg.database_url)
    try:
        check_owner(cfg, store, claim=True)
    except BaseException:
        store.dispose()
        raise
    return store


def refuse_foreign_store(cfg: BinderyConfig) -> None:
    """`check_owner` without claiming, before a first command makes this data_dir: the refusal
    came after the Dagster instance's folder and the locks were made, and left them behind, empty
    (an operator pass); a command that only reads said "data_dir does not exist" instead of whose
    the database is. A database that is down or refuses is left to the command's own open, which
    says so in one line."""
    if cfg.backends.database_url is None or cfg.data_path.exists():
        return
    try:
        store = DocumentStore(cfg.database_url, migrate=False)
        try:
            if store.initialised():
                check_owner(cfg, store, claim=False)
        finally:
            store.dispose()
    except (SQLAlchemyError, StoreError):
        return


def indexes_in_data_dir(cfg: BinderyConfig) -> bool:
    """Whether some index lives in data_dir (embedded Qdrant, tantivy), not in a server."""
    return is_embedded(cfg.backends.vector) or cfg.backends.keyword == "tantivy"


def check_owner(cfg: BinderyConfig, store: DocumentStore, *, claim: bool) -> None:
    """Raise ConfigError when `store` belongs to another data_dir than `cfg`'s. With `claim`, an
    unclaimed store becomes this data_dir's; without it (`bindery plan` writes nothing) it is
    only checked."""
    if cfg.backends.database_url is None:  # the SQLite file inside data_dir: nothing else can use it
        return
    if not indexes_in_data_dir(cfg):
        return
    path = cfg.data_path / STORE_ID_FILE
    owner = store.owner()
    mine = _read(path)
    if owner is None and claim:
        with _claim_lock(cfg.data_path):
            # another process of this deployment may have claimed meanwhile; after the claim, the
            # file says whether this data_dir won it
            owner = store.owner() or _claim(cfg, store, path, _read(path))
            mine = _read(path)
    if owner is None or mine == owner[0]:
        return
    store_id, where = owner
    way_out = (f" If this data_dir replaces that one (moved or restored without its {STORE_ID_FILE} file), write "
               f"{store_id} into {path}") if mine is None else ""
    here = f"belongs to another store ({mine})" if mine else "has never used it"
    raise ConfigError(
        f"backends.database_url: this database belongs to the deployment whose data_dir is {where} (store id "
        f"{store_id}), and data_dir {cfg.data_path} {here}: give each deployment its own database (two on one "
        f"take each other's sources for removed ones and overwrite each other's indexes).{way_out}")


def _claim(cfg: BinderyConfig, store: DocumentStore, path: Path, mine: str | None) -> tuple[str, str]:
    """Claim the unclaimed store for this data_dir (under `_claim_lock`): the file first, then
    the row. Returns the owner as stored, or raises ConfigError."""
    if mine is None:
        if (built := _built_elsewhere(cfg, store)) is not None:
            raise ConfigError(
                f"backends.database_url: this database's generations ({built}) were built under another data_dir "
                f"than {cfg.data_path} (their index folders are not in it): give this deployment its own database. "
                f"If this is their data_dir and its indexes were lost, claim the store by writing a new id (e.g. "
                f"from `uuidgen`) into {path}, then run `bindery verify --repair` or reindex")
        proposed = uuid.uuid4().hex
        _write(path, proposed)
    owner = store.claim_owner(mine or proposed, str(cfg.data_path.resolve()))
    if mine is None and owner[0] != proposed:  # another data_dir claimed it at the same moment
        path.unlink(missing_ok=True)
    return owner


def _built_elsewhere(cfg: BinderyConfig, store: DocumentStore) -> str | None:
    """Names of the store's kept generations built by an embedded engine, when none of their
    index folders is under this data_dir (a store from before owners were recorded)."""
    gens = [g for g in store.generations() if g.status in ("live", "previous", "building")
            and is_embedded(vector_engine(cfg, g))]
    if not gens or any(GenerationPaths.of(cfg, g.name).root.exists() for g in gens):
        return None
    return ", ".join(g.name for g in gens)


@contextmanager
def _claim_lock(data_path: Path) -> Iterator[None]:
    try:
        make_data_dir(data_path)
        fh = open(data_path / f".{STORE_ID_FILE}.lock", "w")  # noqa: SIM115 - held across the yield
    except OSError as e:
        raise ConfigError(f"data_dir: cannot claim the store from {data_path}: {e.strerror or e}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"data_dir: cannot read {path}: {e}") from None


def _write(path: Path, store_id: str) -> None:
    """Atomically: a reader never sees half an id."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(store_id + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"data_dir: cannot write {path}: {e.strerror or e}") from None
