"""Sensors and schedules: sync a source when it changed, reconcile everything periodically.

The sensor keeps the dynamic `sources` partitions equal to the configured sources (adding and
removing them as the configuration changes), probes each source cheaply (folder: paths, mtimes
and sizes; S3: keys and ETags) and requests a sync only for sources whose fingerprint moved
since the cursor. A probe that fails is skipped and reported; it never requests a sync that
could delete on bad evidence. A sync it requested that failed is requested again, with backoff,
once the source's probe answers (`_retries`).
"""


import itertools
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from assets.pipeline import SOURCES
from assets.resources import BinderyConfigResource
from connectors.config import BinderyConfig, SourceConfig
from connectors.errors import ConfigError, SourceError
from connectors.identity import short_hash
from connectors.shards import all_partition_keys, partition_keys
from connectors.sources import make_source
from orchestration.jobs import sync_job
from orchestration.source_locks import ACTIVE

PartitionRequest = dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest
REQUESTS = "#requests"  # the cursor's count of change requests (no source name starts with '#')

# A failed sensor run is retried this long after it ended, the wait doubled for each failed run of
# its partition in a row, up to RETRY_MAX_S; after RETRY_LIMIT failed runs in a row (some 2 hours)
# the error is taken as one no retry mends (a refused delete sweep, a damaged index): the next
# change of the source, or the operator, requests the next sync.
RETRY_AFTER_S = 60.0
RETRY_MAX_S = 3600.0
RETRY_LIMIT = 8


def partition_requests(instance: dg.DagsterInstance, configured: list[str]) -> list[PartitionRequest]:
    """What makes the instance's source partitions `configured`, but a partition that a run still
    writes is kept until it ends: after `shards:` changed, deleting `docs:shard-0-of-2` under
    its running sync failed that run at its next step (a scale-out pass). The next call (a CLI
    run, the sensor's next tick, the UI's next load), after the run, removes it."""
    existing = set(instance.get_dynamic_partitions(SOURCES.name or "sources"))
    reqs: list[PartitionRequest] = []
    add = sorted(set(configured) - existing)
    remove = sorted(existing - set(configured))
    if remove:
        # a run still queued fails when dequeued, before it writes: better than a run of a
        # sharding that is no longer the configuration's beside one that is
        busy = {r.tags.get("dagster/partition", "") for r in instance.get_runs(filters=dg.RunsFilter(statuses=ACTIVE))}
        remove = [key for key in remove if key not in busy]
    if add:
        reqs.append(SOURCES.build_add_request(add))
    if remove:
        reqs.append(dg.DeleteDynamicPartitionsRequest(partitions_def_name="sources", partition_keys=remove))
    return reqs


def follow_configured_sources(instance: dg.DagsterInstance, configured: list[str]) -> None:
    """Make the instance's source partitions `configured` (`partition_requests`, applied)."""
    for req in partition_requests(instance, configured):
        if isinstance(req, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        else:
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)


def build_sensor(default_on: bool, interval: int) -> dg.SensorDefinition:
    @dg.sensor(job=sync_job, minimum_interval_seconds=interval,
               default_status=dg.DefaultSensorStatus.RUNNING if default_on else dg.DefaultSensorStatus.STOPPED,
               description="Requests a sync for each source whose listing fingerprint changed.")
    def source_change_sensor(context: dg.SensorEvaluationContext, bindery: BinderyConfigResource) -> dg.SensorResult:
        try:
            cfg = bindery.config
        except dg.Failure as e:  # a bad edit: the tick is skipped, saying why, until the file loads
            return dg.SensorResult(skip_reason=dg.SkipReason(f"configuration: {e.description}"), cursor=context.cursor)
        cursor = json.loads(context.cursor) if context.cursor else {}
        requests = int(cursor.pop(REQUESTS, 0))
        runs, skipped, answered = [], [], []
        for s in cfg.sources:
            try:
                # the source's configuration is part of its state: a changed default ACL,
                # include/exclude or size limit must be re-listed even if no file moved
                fp = short_hash([make_source(s, cfg.sources).probe(), s.model_dump(mode="json")], 64)
            except SourceError as e:
                skipped.append(dg.SkipReason(f"{s.name}: {e}"))
                context.log.warning(f"probe of {s.name} failed: {e}")
                continue
            answered.append(s)
            if cursor.get(s.name) != fp:
                requests += 1
                runs += [dg.RunRequest(partition_key=key, run_key=run_key(key, fp, requests),
                                       tags={"bindery/trigger": "sensor"}) for key in partition_keys(s)]
                cursor[s.name] = fp
            else:
                runs += _retries(context.instance, s, fp, time.time())
        runs += _withholding_run(cursor, cfg, runs, answered)
        return dg.SensorResult(
            run_requests=runs, cursor=json.dumps({**cursor, REQUESTS: requests}, sort_keys=True),
            dynamic_partitions_requests=partition_requests(context.instance, all_partition_keys(cfg)),
            skip_reason=skipped[0] if skipped and not runs else None,
        )

    return source_change_sensor


def run_key(partition: str, fp: str, n: int) -> str:
    """The run key of the sensor's `n`-th change request: Dagster launches one run per key, so a
    tick evaluated twice (the same cursor in) requests one run, but a source that comes back to
    a state it had before (a reverted exclude, a source taken out and put back) is a new change.
    Keyed by its state alone, that sync was dropped as a duplicate of the first one's, and the
    documents the revert brings back stayed out of the indexes until a reconcile."""
    return f"{partition}:{fp}:{n}"


def _retries(instance: dg.DagsterInstance, source: SourceConfig, fp: str, now: float) -> list[dg.RunRequest]:
    """Request again each partition of `source` whose latest sync run, one this sensor requested,
    failed. The cursor already holds the state that run was for, so without this a change it
    could not apply (the bucket answering the probe's listing but not the reads, the store down
    for a moment) waited for the next change of the source, or a reconcile, however long the
    source had been back. The run key names the failed run, so each failure is retried once; the
    wait after it doubles with each failed run of the partition in a row (`RETRY_AFTER_S`), and
    retries stop after `RETRY_LIMIT` of them. A failed run an operator launched is theirs to judge,
    and is not retried: a re-execution from the UI too, though it inherits the sensor's tag from
    its parent (`runs.launched_by`)."""
    out = []
    for key in partition_keys(source):
        records = instance.get_run_records(
            dg.RunsFilter(job_name=sync_job.name, tags={"dagster/partition": key}), limit=RETRY_LIMIT)
        failed = list(itertools.takewhile(lambda r: r.dagster_run.status == dg.DagsterRunStatus.FAILURE, records))
        if not failed or len(failed) >= RETRY_LIMIT or not _sensor_started(failed[0].dagster_run.tags):
            continue
        last = failed[0]
        ended = last.end_time if last.end_time is not None else _utc(last.update_timestamp).timestamp()
        if now - ended >= min(RETRY_MAX_S, RETRY_AFTER_S * 2 ** (len(failed) - 1)):
            out.append(dg.RunRequest(partition_key=key, run_key=f"{key}:{fp}:retry-of:{last.dagster_run.run_id}",
                                     tags={"bindery/trigger": "sensor"}))
    return out


def _sensor_started(tags: Mapping[str, str]) -> bool:
    """Whether this sensor requested the run: a re-execution (`dagster/parent_run_id`) is an
    operator's, whatever tags it inherited from the run it re-executes."""
    return tags.get("bindery/trigger") == "sensor" and "dagster/parent_run_id" not in tags


def _utc(stamp: datetime) -> datetime:
    """Dagster's run storage keeps UTC timestamps, read back without a zone on SQLite."""
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _withholding_run(cursor: dict[str, Any], cfg: BinderyConfig, runs: list[dg.RunRequest],
                     answered: list[SourceConfig]) -> list[dg.RunRequest]:
    """A run for a source taken out of the configuration: any sync's listing withholds its
    documents from the indexes (the query service already leaves it out), so when no other
    run is due, a source whose probe answered on this tick is synced (one that failed would
    fail its listing too, before its index step carried the withholding). The removed names
    leave the cursor only once a run is requested: with no source answering, the next tick
    tries again. The cursor keeps the configured names (a source whose probe failed stays in
    it until it probes again)."""
    removed = sorted(set(cursor) - set(cfg.source_names()))
    if not removed or not (runs or answered):
        return []
    for n in removed:
        del cursor[n]
    if runs:  # a run is due anyway: its listing withholds them
        return []
    key = partition_keys(answered[0])[0]
    return [dg.RunRequest(partition_key=key, run_key=f"{key}:removed:{','.join(removed)}:{time.time():.0f}",
                          tags={"bindery/trigger": "sensor"})]


def check_cron(cron: str, key: str) -> None:
    """Raise a one-line ConfigError naming `key` unless Dagster accepts `cron` as a schedule
    (Dagster's own parser decides: `@daily` and friends are fine, `61 * * * *` is not)."""
    try:
        dg.ScheduleDefinition(name="cron_check", cron_schedule=cron, job_name="cron_check")
    except Exception:
        raise ConfigError(f"{key}: {cron!r} is not a valid cron schedule (e.g. '0 3 * * *' for 03:00 daily)") from None


def build_schedule(default_on: bool, cron: str) -> dg.ScheduleDefinition:
    @dg.schedule(job=sync_job, cron_schedule=cron,
                 default_status=dg.DefaultScheduleStatus.RUNNING if default_on else dg.DefaultScheduleStatus.STOPPED,
                 description="Full reconciliation of every configured source.")
    def reconcile_schedule(context: dg.ScheduleEvaluationContext,
                           bindery: BinderyConfigResource) -> list[dg.RunRequest] | dg.SkipReason:
        try:
            names = all_partition_keys(bindery.config)
        except dg.Failure as e:  # a bad edit: the tick is skipped, saying why
            return dg.SkipReason(f"configuration: {e.description}")
        existing = set(context.instance.get_dynamic_partitions("sources"))
        missing = [n for n in names if n not in existing]
        if missing:
            context.instance.add_dynamic_partitions("sources", missing)
        # one run key per source: Dagster refuses a tick of several requests without them (every
        # tick failed with two sources or shards); a schedule scopes the keys to its tick
        return [dg.RunRequest(partition_key=n, run_key=n, tags={"bindery/trigger": "schedule"}) for n in names]

    return reconcile_schedule
