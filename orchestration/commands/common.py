"""What every `bindery` command shares: the store, lifecycle and runner of a configuration, the
partitions to run, the generation a command reads, the eval-set checks, and the failure that
carries a command's JSON. The commands themselves live beside this module, by concern."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from connectors.config import BinderyConfig, check_sources
from connectors.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from connectors.lifecycle import Lifecycle
    from connectors.store import DocumentStore, GenerationRecord
    from orchestration.runs import Runner

__all__ = ["CommandFailed", "check_eval_set", "check_queries", "lifecycle_for", "new_runner", "partitions_of",
           "queries_named", "searchable_generation", "set_debug", "store_for"]


class CommandFailed(Exception):
    """A command ran but did not succeed; carries the JSON to print."""

    def __init__(self, message: str, payload: dict[str, Any]):
        super().__init__(message)
        self.payload = payload


_DEBUG = [False]  # --debug: tracebacks and Dagster's full run log on the terminal


def set_debug(on: bool) -> None:
    """`--debug` for the runs the commands start (Dagster's full run log on the terminal)."""
    _DEBUG[0] = on


def new_runner(cfg: BinderyConfig) -> Runner:
    from orchestration.runs import Runner

    return Runner(cfg, debug=_DEBUG[0])


def store_for(cfg: BinderyConfig) -> DocumentStore:
    """The configuration's document store. The default one lives in data_dir, which a sync
    creates: a command that only reads what a sync made (`dlq`, `query`, `verify`, `promote`, ...)
    on a data_dir that does not exist names it rather than create an empty store there (a
    mistyped data_dir read as "no dead letters", exit 0)."""
    from connectors.store.ownership import indexes_in_data_dir, open_store

    if cfg.backends.database_url is None or indexes_in_data_dir(cfg):  # what a sync made lives in data_dir
        require_data_dir(cfg)
    return open_store(cfg)


def require_data_dir(cfg: BinderyConfig) -> None:
    """Raise the one-line ConfigError of a command that reads what a sync made from a data_dir
    that does not exist (a mistyped path, or no sync yet): nothing is created."""
    if not cfg.data_path.exists():
        raise ConfigError(f"data_dir: {cfg.data_path} does not exist: nothing has been synced with this "
                          "configuration (run `bindery sync`, or check data_dir)")


def lifecycle_for(cfg: BinderyConfig) -> Lifecycle:
    """The generation lifecycle over this configuration's document store."""
    from connectors.lifecycle import Lifecycle

    return Lifecycle(cfg, store_for(cfg))


def partitions_of(cfg: BinderyConfig, only: list[str] | None) -> list[str]:
    """The partitions to run: one per source, or one per shard of a sharded source."""
    from connectors.shards import all_partition_keys

    check_sources(cfg)
    return all_partition_keys(cfg, [cfg.source(s).name for s in only] if only else None)


def searchable_generation(cfg: BinderyConfig, store: Any, which: str) -> GenerationRecord:
    """The row of `--generation`: live, candidate, an id or a name (connectors.lifecycle), not a
    dropped one."""
    from connectors.lifecycle import Lifecycle

    gen = Lifecycle(cfg, store).resolve_searchable(which)
    if gen.status == "retired":  # searchable, but frozen: say so before its answers are taken as current
        print(f"note: generation {gen.id} ({gen.name}) is retired: its indexes have not received the deletes, "
              "edits and access changes since it retired", file=sys.stderr)
    return gen


def check_eval_set(cfg: BinderyConfig, store: Any) -> None:
    """The gate's eval set, checked before anything is built or judged: `gate.queries` unset
    (once a generation is live: the gate needs it), missing, unreadable or malformed is a
    configuration mistake (exit 2) naming the key, not a failed promotion run."""
    if cfg.gate.queries:
        check_queries(cfg, None)
    elif store.get_binding() is not None:
        raise ConfigError("gate.queries: no eval set configured, and the gate judges a candidate against live on it "
                          "(`bindery evalset draft` proposes one; or promote with --force --reason)")


@contextmanager
def queries_named(queries: str | None) -> Iterator[None]:
    """A mistake in the eval set (a ConfigError) named by where its path came from: `--queries`
    (a usage error) or `gate.queries` (a configuration error). Around the file's own checks and
    those that need the store too (its names against the documents, tune's split)."""
    try:
        yield
    except ConfigError as e:
        if queries:
            raise UsageError(f"--queries: {e}") from None
        raise ConfigError(f"gate.queries: {e}") from None


def check_queries(cfg: BinderyConfig, queries: str | None) -> None:
    """The eval set a command asks (`queries`, from --queries, else gate.queries), checked before
    any work: its mistake names where the path came from (`queries_named`)."""
    from evals.evalset import load_eval_set

    path = queries or cfg.gate.queries
    if not path:
        raise ConfigError("no eval set: pass --queries FILE or set gate.queries in bindery.yaml")
    with queries_named(queries):
        cases = load_eval_set(path)
    if drafts := sum(c.draft for c in cases):  # a gate judging by unread questions judges by guesses
        print(f"warning: {path}: {drafts} of {len(cases)} questions are still marked \"draft\": true (as "
              "`bindery evalset draft` wrote them): review them and remove the mark", file=sys.stderr)
