"""Which runs in the Dagster instance write the same documents as another, and waiting for them.

Two runs overlap when they may write the same documents: runs of one partition, or runs of one
source under two shardings (`connectors.shards.overlapping`: after `shards:` changed, `docs`
and `docs:shard-0-of-2` hold the same documents; two shards of one sharding never do). Who waits
for whom (`orchestration.source_locks` for the CLI; `wait_for_earlier_runs` inside every run):

- the **daemon's queue** holds a run back while another run of its *partition* is STARTED (a tag
  concurrency limit on `dagster/partition`); it cannot see another sharding's runs;
- a **CLI run** waits, before it starts, for every active run that overlaps it;
- **every run**, before the work of each step of a source's stages, waits for the active runs of
  *another sharding* of its source that started before it (a run still STARTING counts from its
  creation) (a scale-out pass: after `shards: 2` -> `1`,
  the sensor started a `docs` run beside the `docs:shard-k-of-2` runs still going, and both
  wrote the same documents). Only runs that started earlier are waited for, so two runs never
  wait for each other, and one that started later waits for this one in its own first step.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Callable, Mapping

import dagster as dg

from connectors.shards import overlapping

__all__ = [
    "ACTIVE", "CANCEL_GRACE", "launched_by", "process_alive", "wait_for_earlier_runs", "wait_for_runs", "writes_source",
]

# a run in these states is writing (or about to write) its partition's stores; a CANCELING one
# may still be (an interrupt lands at the next bytecode, a pod has a grace period), but one whose
# worker is gone stays CANCELING for ever: it is waited for CANCEL_GRACE seconds at most
ACTIVE = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
CANCEL_GRACE = 120.0
_SOURCE_JOBS = ("sync", "reindex")


@functools.cache
def _source_assets() -> frozenset[dg.AssetKey]:
    """The per-source assets a run may materialise outside those jobs (the UI's "Materialize"
    of some of them, a backfill): such a run writes the source's stores as a sync does."""
    from assets.pipeline import STAGE_ASSETS  # the pipeline waits through this module

    return frozenset(key for a in STAGE_ASSETS for key in a.keys)


def writes_source(run: dg.DagsterRun) -> bool:
    """Whether `run` writes the stores of the source its partition names."""
    return run.job_name in _SOURCE_JOBS or bool(_source_assets() & (run.asset_selection or frozenset()))


def launched_by(tags: Mapping[str, str]) -> str:
    """Who started a run: `cli` / `cli-submit` (Bindery's own tag), `sensor` or `schedule` (the
    tags Dagster puts on what they launch), else `ui` (a launch or backfill by hand, or the
    re-execution of a CLI run, which inherits the CLI's tag from its parent)."""
    who = tags.get("bindery/launched-by")
    if who and "dagster/parent_run_id" not in tags:  # a re-execution inherits its parent's tag
        return who
    if "dagster/sensor_name" in tags:
        return "sensor"
    if "dagster/schedule_name" in tags:
        return "schedule"
    return "ui"


def wait_for_runs(instance: dg.DagsterInstance, name: str, blocks: Callable[[dg.RunRecord], bool],
                  say: Callable[[str], None], poll_seconds: float = 1.0) -> float:
    """Wait while an active run that overlaps partition `name`, writes the source and `blocks`
    says to wait for, goes on; `say` announces each such run once. Returns the seconds waited
    (0.0 when there was nothing to wait for)."""
    started = time.perf_counter()
    seen: dict[str, float] = {}  # run id -> when this wait first saw it

    def waits_for(rec: dg.RunRecord) -> bool:
        run = rec.dagster_run
        if not (overlapping(name, run.tags.get("dagster/partition", "")) and writes_source(run) and blocks(rec)):
            return False
        waited = time.perf_counter() - seen.get(run.run_id, time.perf_counter())
        return run.status != dg.DagsterRunStatus.CANCELING or waited <= CANCEL_GRACE

    while active := [r.dagster_run for r in instance.get_run_records(filters=dg.RunsFilter(statuses=ACTIVE))
                     if waits_for(r)]:
        for run in active:
            if run.run_id not in seen:
                seen[run.run_id] = time.perf_counter()
                part = run.tags.get("dagster/partition", name)  # another sharding's, maybe
                say(f"waiting for run {run.run_id[:8]} ({run.job_name} of source {part!r}, "
                    f"launched by {launched_by(run.tags)}) to finish")
        time.sleep(poll_seconds)
    return time.perf_counter() - started if seen else 0.0


def process_alive(pid: int) -> bool:
    """Whether process `pid` of this machine exists (a CLI run's, from its tags)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def _began(rec: dg.RunRecord) -> float:
    """When a run started (a STARTING one has no start time yet: when it was created)."""
    return rec.start_time if rec.start_time is not None else rec.create_timestamp.timestamp()


def wait_for_earlier_runs(context: dg.AssetExecutionContext | dg.OpExecutionContext, name: str,
                          poll_seconds: float = 1.0) -> float:
    """In each step of a source's stages: wait for the active runs of partition `name`'s source
    under another sharding that started before this run (a run still STARTING counts from its
    creation, so a later step can meet one created earlier but launched later, and pauses until
    it is done). Usually the first step finds what there is. The queue keeps runs of one partition
    apart, and a CLI run waits before it starts; nothing else holds back a run of the new
    sharding the sensor, a schedule or the UI starts while the old sharding's runs go on. A
    CLI run of this machine whose process died is not waited for (the next CLI run marks it
    failed). Returns the seconds waited, which the step's log names."""
    instance = context.instance
    own = instance.get_run_record_by_id(context.run_id)
    began = _began(own) if own is not None else None
    host = socket.gethostname()

    def blocks(rec: dg.RunRecord) -> bool:
        run = rec.dagster_run
        if run.run_id == context.run_id or run.tags.get("dagster/partition") == name:
            return False
        if began is not None and (_began(rec), run.run_id) >= (began, context.run_id):
            return False  # a later run waits for this one, never the other way round
        if launched_by(run.tags) == "cli" and run.tags.get("bindery/host") == host:
            pid = int(run.tags.get("bindery/pid", "0") or 0)  # this process's own earlier run is over
            return pid != os.getpid() and process_alive(pid)
        return True

    return wait_for_runs(instance, name, blocks, lambda line: context.log.info(line + " (another sharding of "
                         "this source: both would write the same documents)"), poll_seconds)
