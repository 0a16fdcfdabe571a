"""Which data_dir a document store belongs to.

With the embedded index engines (Qdrant Edge or local mode, tantivy) a generation's index files
live under data_dir and the store's generation rows point at them. Two deployments given one
database (a staging and a production configuration that share `backends.database_url`) would
share those rows too: each takes the other's sources for removed ones and publishes its own
snapshot into the shared live generation, so one sync of the second empties the first's search.

The first process of a deployment to open the store claims it: a random id goes into
``data_dir/store-id`` and into the store's `store_owner` row. A data_dir whose file holds another
id, or none while the store is claimed, is refused with one line naming the owner. The file
travels with the data_dir, so a moved or restored data_dir is still the owner. With the server
engines (Qdrant server and Elasticsearch) the indexes live in the servers, several machines'
data_dirs share one store by design, and nothing is checked.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from connectors.config import BinderyConfig
from connectors.errors import ConfigError
from connectors.generations import is_embedded
from connectors.store.store import DocumentStore

__all__ = ["STORE_ID_FILE", "check_owner", "open_store"]

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


def check_owner(cfg: BinderyConfig, store: DocumentStore, *, claim: bool) -> None:
    """Raise ConfigError when `store` belongs to another data_dir than `cfg`'s. With `claim`, an
    unclaimed store becomes this data_dir's; without it (`bindery plan` writes nothing) it is
    only checked."""
    if not (is_embedded(cfg.backends.vector) or cfg.backends.keyword == "tantivy"):
        return
    path = cfg.data_path / STORE_ID_FILE
    mine = _read(path)
    owner = store.owner()
    if owner is None:
        if not claim:
            return
        owner = store.claim_owner(mine or uuid.uuid4().hex, str(cfg.data_path.resolve()))
        if mine is None:
            _write(path, owner[0])
            mine = owner[0]
    if mine == owner[0]:
        return
    store_id, where = owner
    whose = f"belongs to another store ({mine})" if mine else "has never used it"
    raise ConfigError(
        f"backends.database_url: this database belongs to the deployment whose data_dir is {where} (store id "
        f"{store_id}), and data_dir {cfg.data_path} {whose}: give each deployment its own database (two on one "
        "take each other's sources for removed ones and overwrite each other's indexes). If this data_dir "
        f"replaces that one (moved or restored without its {STORE_ID_FILE} file), write {store_id} into {path}")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"data_dir: cannot read {path}: {e}") from None


def _write(path: Path, store_id: str) -> None:
    """Atomically: a reader never sees half an id."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(store_id + "\n", encoding="utf-8")
    os.replace(tmp, path)
