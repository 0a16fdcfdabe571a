"""Who may write a source's stores when: the coordination of runs of one source.

Runs of one source (its partition) never write its stores side by side. Three paths start them:
- **CLI runs** (`bindery sync`, `reindex`, in-process) take a file lock per partition
  (`source_lock`) and, before they start, wait for any active run of the partition in the
  Dagster instance (`wait_for_instance_runs`): a run the UI, a sensor or a schedule started, or
  a CLI run on another machine.
- **Runs the daemon starts from its queue** (UI, sensor, schedule, `--submit`) are held back by
  the instance's tag concurrency limit on `dagster/partition` while another run of it is STARTED,
  CLI runs included (they are recorded in the instance); a run of another sharding of the source
  waits in its first step for the earlier ones (`assets.run_overlap.wait_for_earlier_runs`).
- **`bindery tune`** reads the sources as a whole for minutes: it holds every partition's lock
  for the whole search (`sources_held`; the lock is re-entrant, so its trial builds take it
  again) and names afterwards any run the daemon started meanwhile (`HeldSources.runs_beside`),
  which no file lock can hold back.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg

from assets.run_overlap import ACTIVE, CANCEL_GRACE, launched_by, wait_for_runs, writes_source
from connectors.config import BinderyConfig
from connectors.shards import overlapping, parse_key
from orchestration.instance import get_instance

__all__ = [
    "ACTIVE",
    "CANCEL_GRACE",
    "HeldSources",
    "launched_by",
    "source_lock",
    "sources_held",
    "wait_for_instance_runs",
    "writes_source",
]

_HELD = threading.local()  # the lock files this thread holds (`source_lock` is re-entrant)


@contextmanager
def source_lock(cfg: BinderyConfig, name: str) -> Iterator[float]:
    """CLI-launched runs of one source never overlap (the UI's queue enforces the same). Yields
    the seconds spent waiting for another run, which said so on stderr: a second `bindery sync`
    looked hung for the whole of the first one, then reported the wait as its own time.

    Re-entrant in one thread: `tune` holds its sources for the whole search (`sources_held`) and
    builds its trial generations through the ordinary runs, which take the same locks (a second
    flock of the file from this process would wait for itself)."""
    # one file per source, not per partition: after `shards:` changes, a run of `docs` and one of
    # `docs:shard-0-of-2` write the same documents (a scale-out pass)
    path = cfg.data_path / "locks" / f"source-{parse_key(name)[0]}.lock"
    held: set[str] = _HELD.__dict__.setdefault("paths", set())
    if str(path) in held:
        yield 0.0
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:  # not "w": that would blank the holder's pid before we can read it
        waited = 0.0
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip()
            print(f"waiting for another run of source {name!r} to finish"
                  + (f" (process {holder})" if holder.isdigit() else "") + "...", file=sys.stderr, flush=True)
            started = time.perf_counter()
            fcntl.flock(fh, fcntl.LOCK_EX)
            waited = time.perf_counter() - started
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        held.add(str(path))
        try:
            yield waited
        finally:
            held.discard(str(path))
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class HeldSources:
    """What `sources_held` holds: the partitions and when the hold began."""

    instance: dg.DagsterInstance
    partitions: list[str]
    since: float  # epoch seconds

    def runs_beside(self) -> list[dg.DagsterRun]:
        """Runs that wrote these partitions (or their sources under another sharding) since the
        hold began, other than this process's own: a run the daemon started from its queue (the
        UI, a sensor, a schedule) while no CLI run of the source was STARTED, which the file locks
        cannot hold back. A run still queued wrote nothing; one that ran before the hold ended
        before it began (`sources_held` waits)."""
        pid, host = str(os.getpid()), socket.gethostname()
        after = datetime.fromtimestamp(self.since, tz=UTC)
        waiting = (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED)
        return [r for r in self.instance.get_runs(filters=dg.RunsFilter(updated_after=after))
                if any(overlapping(p, r.tags.get("dagster/partition", "")) for p in self.partitions)
                and writes_source(r) and r.status not in waiting
                and not (r.tags.get("bindery/pid") == pid and r.tags.get("bindery/host") == host)]


@contextmanager
def sources_held(cfg: BinderyConfig, partitions: Iterable[str],
                 instance: dg.DagsterInstance | None = None) -> Iterator[HeldSources]:
    """Every partition's lock, taken in name order (two holders never wait on each other), each
    after the instance's active runs of it ended, for the whole of a command that measures the
    sources as a whole (`bindery tune`: a sync writing live beside its trials made them measure
    different corpora, and counted the sync's embeddings as a trial's). `instance`: the run's own,
    inside a Dagster step (the `tune` job)."""
    instance = instance or get_instance(cfg)
    names = sorted(set(partitions))
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(source_lock(cfg, name))
            wait_for_instance_runs(instance, name)
        yield HeldSources(instance, names, time.time())


def wait_for_instance_runs(instance: dg.DagsterInstance, name: str, poll_seconds: float = 1.0) -> float:
    """The file lock keeps CLI runs of a source apart; a run the UI, a sensor or a schedule
    started goes through the daemon's queue instead, which holds those back while a CLI run
    is STARTED but cannot hold back the CLI. So before it starts, an in-process run waits for
    any active run in the instance that may write the same documents (found by a review: a CLI
    sync wrote beside a UI run of the same source), a CLI run on another machine included: of
    the same partition, or of the same source under another sharding (`shards.overlapping`).
    Not for this machine's CLI runs: the lock is held here, so one still STARTED is dead
    (`fail_dead_runs`). Returns the seconds waited."""
    host = socket.gethostname()

    def blocks(rec: dg.RunRecord) -> bool:
        run = rec.dagster_run  # a UI "Materialize" of the stages too, not only sync and reindex
        return not (launched_by(run.tags) == "cli" and run.tags.get("bindery/host") == host)

    return wait_for_runs(instance, name, blocks, lambda line: print(
        f"{line} (`bindery runs` lists it; Ctrl-C stops waiting)...", file=sys.stderr, flush=True), poll_seconds)
