"""The source-change sensor and the reconcile schedule, evaluated with Dagster's test utilities
on a persistent instance: the cursor logic (runs only for sources whose probe moved), dynamic
partitions following the configuration, failed probes, and a requested run executed through
the CLI path.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import dagster as dg
import pytest
import yaml

from assets.resources import BinderyConfigResource
from orchestration.automation import build_schedule, build_sensor
from tests.sync_helpers import LocalDeployment, assert_converged, hits


class Tick:
    """One sensor evaluation, applied to the instance the way the daemon applies it."""

    def __init__(self, result: dg.SensorResult, instance: dg.DagsterInstance) -> None:
        self.result = result
        self.runs = {str(r.partition_key): r for r in result.run_requests or []}  # sensor runs are partitioned
        self.cursor: dict[str, str] = json.loads(result.cursor or "{}")
        self.added: list[str] = []
        self.removed: list[str] = []
        for req in result.dynamic_partitions_requests or []:
            if isinstance(req, dg.AddDynamicPartitionsRequest):
                self.added += list(req.partition_keys)
                instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
            else:
                self.removed += list(req.partition_keys)
                for key in req.partition_keys:
                    instance.delete_dynamic_partition(req.partitions_def_name, key)


class Sensor:
    def __init__(self, config_path: Path, instance: dg.DagsterInstance | None = None) -> None:
        self.config_path = config_path
        self.instance = instance or dg.DagsterInstance.ephemeral()
        self.sensor = build_sensor(False, 30)
        self.cursor: str | None = None

    def tick(self) -> Tick:
        # entered, so the resources it builds are torn down (and leave no Dagster context behind)
        bindery = BinderyConfigResource(config_path=str(self.config_path))
        with dg.build_sensor_context(instance=self.instance, cursor=self.cursor,
                                     resources={"bindery": bindery}) as ctx:
            result = self.sensor(ctx)
        assert isinstance(result, dg.SensorResult)
        self.cursor = result.cursor
        return Tick(result, self.instance)

    def partitions(self) -> set[str]:
        return set(self.instance.get_dynamic_partitions("sources"))


class Config:
    """A bindery.yaml with several folder (and optionally S3) sources; no model is loaded."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.path = tmp / "bindery.yaml"
        self.raw: dict[str, Any] = {"data_dir": str(tmp / "data"), "sources": []}

    def folder(self, name: str, files: dict[str, str] | None = None) -> Path:
        root = self.tmp / name
        root.mkdir(exist_ok=True)
        for rel, text in (files or {"a.md": f"# {name}\n\nFirst file of {name}.\n"}).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        self.raw["sources"].append({"name": name, "kind": "local", "root": str(root)})
        self.save()
        return root

    def drop(self, name: str) -> None:
        self.raw["sources"] = [s for s in self.raw["sources"] if s["name"] != name]
        self.save()

    def save(self) -> None:
        self.path.write_text(yaml.safe_dump(self.raw))


@pytest.fixture
def conf(tmp_path: Path) -> Config:
    return Config(tmp_path)


def test_first_tick_registers_partitions_and_requests_every_source(conf: Config) -> None:
    conf.folder("docs")
    conf.folder("wiki")
    sensor = Sensor(conf.path)
    tick = sensor.tick()
    assert set(tick.runs) == {"docs", "wiki"}
    assert sorted(tick.added) == ["docs", "wiki"] and tick.removed == []
    assert sensor.partitions() == {"docs", "wiki"}
    for name, rr in tick.runs.items():
        assert str(rr.run_key).startswith(f"{name}:{tick.cursor[name]}:")
        assert rr.tags == {"bindery/trigger": "sensor"}
    assert tick.result.skip_reason is None



def test_narrowing_another_sources_acl_requests_the_source_whose_links_it_narrows(conf: Config) -> None:
    """A followed external link into another source's root takes that source's `acl:` too; the
    probe was built without the other sources, so narrowing that acl re-synced only the other
    source, and the linking one kept serving the old access (a review's find)."""
    hr = conf.folder("hr", {"pay.md": "# Pay\n\nsalaries\n"})
    docs = conf.folder("docs")
    (docs / "pay.md").symlink_to(hr / "pay.md")
    conf.raw["sources"][0]["acl"] = ["group:hr", "contractors"]
    conf.raw["sources"][1]["follow_external_symlinks"] = True
    conf.save()
    sensor = Sensor(conf.path)
    sensor.tick()
    conf.raw["sources"][0]["acl"] = ["group:hr"]
    conf.save()
    assert set(sensor.tick().runs) == {"hr", "docs"}


def test_unchanged_sources_request_nothing(conf: Config) -> None:
    conf.folder("docs")
    conf.folder("wiki")
    sensor = Sensor(conf.path)
    first = sensor.tick()
    again = sensor.tick()
    assert again.runs == {} and again.added == [] and again.removed == []
    assert again.cursor == first.cursor


def test_only_the_changed_source_is_requested(conf: Config) -> None:
    docs = conf.folder("docs", {"a.md": "# A\n\nalpha\n", "sub/b.md": "# B\n\nbeta\n"})
    wiki = conf.folder("wiki")
    sensor = Sensor(conf.path)
    first = sensor.tick()

    (docs / "sub/b.md").write_text("# B\n\nbeta, edited\n")  # edit
    tick = sensor.tick()
    assert set(tick.runs) == {"docs"}
    assert tick.cursor["wiki"] == first.cursor["wiki"] and tick.cursor["docs"] != first.cursor["docs"]
    assert sensor.tick().runs == {}

    (wiki / "new.md").write_text("# New\n\nnew page\n")  # add
    assert set(sensor.tick().runs) == {"wiki"}
    (docs / "a.md").unlink()  # delete
    assert set(sensor.tick().runs) == {"docs"}
    (docs / "sub" / ".bindery-acl").write_text("hr-team\n")  # ACL only
    assert set(sensor.tick().runs) == {"docs"}
    (docs / ".hidden.md").write_text("not a document\n")  # ignored by the listing, so by the probe
    assert sensor.tick().runs == {}


def test_run_key_names_the_source_state(conf: Config) -> None:
    """The same tick evaluated twice (the same cursor in) requests the same run key, so Dagster
    launches one run (it de-duplicates run keys per sensor)."""
    conf.folder("docs")
    a = Sensor(conf.path).tick()
    b = Sensor(conf.path).tick()
    assert a.runs["docs"].run_key == b.runs["docs"].run_key


def test_a_source_back_in_a_state_it_had_before_is_synced_again(conf: Config) -> None:
    """An operator pass in the UI: an `exclude:` added then reverted, or a source taken out of
    the configuration and put back, came back to a fingerprint an earlier run's key held;
    Dagster dropped the request as a duplicate (the tick said nothing), and the documents the
    revert brings back stayed out of the indexes until a reconcile."""
    conf.folder("docs", {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    conf.folder("mail")
    sensor = Sensor(conf.path)
    first = sensor.tick()
    keys = [first.runs["docs"].run_key]
    conf.raw["sources"][0]["exclude"] = ["b.md"]
    conf.save()
    keys.append(sensor.tick().runs["docs"].run_key)
    del conf.raw["sources"][0]["exclude"]
    conf.save()
    keys.append(sensor.tick().runs["docs"].run_key)  # the first state again
    assert len(set(keys)) == 3, keys
    mail = conf.raw["sources"].pop()
    conf.save()
    removed = sensor.tick()
    assert "mail" not in removed.cursor
    conf.raw["sources"].append(mail)
    conf.save()
    back = sensor.tick()
    assert set(back.runs) == {"mail"} and back.cursor["mail"] == first.cursor["mail"]
    assert back.runs["mail"].run_key != first.runs["mail"].run_key
    assert sensor.tick().runs == {}  # and once only


def test_configuration_changes_add_and_remove_partitions(conf: Config) -> None:
    conf.folder("docs")
    conf.folder("wiki")
    sensor = Sensor(conf.path)
    sensor.tick()
    conf.drop("wiki")
    conf.folder("handbook")
    tick = sensor.tick()
    assert tick.added == ["handbook"] and tick.removed == ["wiki"]
    assert set(tick.runs) == {"handbook"}  # docs did not change; wiki is no longer configured
    assert sensor.partitions() == {"docs", "handbook"}
    conf.drop("docs")
    conf.drop("handbook")
    tick = sensor.tick()
    assert tick.runs == {} and sorted(tick.removed) == ["docs", "handbook"]
    assert sensor.partitions() == set()


def test_a_source_taken_out_of_the_configuration_requests_the_sync_that_withholds_it(conf: Config) -> None:
    """Nothing of the sources left changed, yet the removed one's documents must leave the
    indexes: a sync of any source's partition does that (its listing withholds them)."""
    conf.folder("docs")
    conf.folder("wiki")
    sensor = Sensor(conf.path)
    sensor.tick()
    conf.drop("wiki")
    assert set(sensor.tick().runs) == {"docs"}
    assert sensor.tick().runs == {}  # once


def test_the_withholding_run_goes_to_a_source_that_answers_and_waits_when_none_does(conf: Config) -> None:
    """A source whose probe failed would fail its listing too, before the index step carried
    the withholding (a review: the run went to the first source, whose root was gone, and was
    never asked again)."""
    adocs = conf.folder("adocs")
    conf.folder("bdocs")
    conf.folder("wiki")
    sensor = Sensor(conf.path)
    sensor.tick()
    adocs.rename(adocs.with_name("adocs-away"))
    conf.drop("wiki")
    assert set(sensor.tick().runs) == {"bdocs"}  # not the first source, which does not answer
    conf.drop("bdocs")
    assert sensor.tick().runs == {}  # none answers: nothing to run yet, and the removal is kept
    adocs.with_name("adocs-away").rename(adocs)
    assert set(sensor.tick().runs) == {"adocs"}
    assert sensor.tick().runs == {}


def test_changing_a_sources_configuration_requests_a_sync(conf: Config) -> None:
    """A source whose configuration changed (default ACL, include/exclude, size limit) must be
    re-listed even when its files did not move."""
    conf.folder("docs", {"a.md": "# A\n\nalpha\n", "b.txt": "beta\n"})
    sensor = Sensor(conf.path)
    sensor.tick()
    conf.raw["sources"][0]["exclude"] = ["**/*.txt"]
    conf.save()
    assert set(sensor.tick().runs) == {"docs"}
    conf.raw["sources"][0]["acl"] = ["staff"]
    conf.save()
    assert set(sensor.tick().runs) == {"docs"}
    conf.raw["sources"][0]["max_file_mb"] = 5
    conf.save()
    assert set(sensor.tick().runs) == {"docs"}
    assert sensor.tick().runs == {}


def test_failed_probe_is_skipped_and_never_requests_a_sync(conf: Config) -> None:
    docs = conf.folder("docs")
    wiki = conf.folder("wiki")
    sensor = Sensor(conf.path)
    first = sensor.tick()
    docs.rename(docs.with_name("docs-away"))
    tick = sensor.tick()
    assert tick.runs == {} and tick.removed == []  # a failing source keeps its partition
    assert tick.result.skip_reason is not None and "docs" in (tick.result.skip_reason.skip_message or "")
    assert tick.cursor == first.cursor  # nothing recorded for the failing source
    (wiki / "b.md").write_text("# B\n\nanother page\n")
    tick = sensor.tick()
    assert set(tick.runs) == {"wiki"} and tick.result.skip_reason is None  # other sources go on
    docs.with_name("docs-away").rename(docs)
    assert sensor.tick().runs == {}  # back as it was: nothing to do
    (docs / "a.md").write_text("# docs\n\nchanged while it was away\n")
    assert set(sensor.tick().runs) == {"docs"}


def _failed_sync(instance: dg.DagsterInstance, partition: str, trigger: str) -> str:
    """A finished, failed sync run of `partition` on the instance, as the daemon leaves one."""
    run_id = str(uuid.uuid4())
    instance.add_run(dg.DagsterRun(job_name="sync", run_id=run_id, status=dg.DagsterRunStatus.FAILURE,
                                   tags={"dagster/partition": partition, "bindery/trigger": trigger}))
    return run_id


def test_a_failed_sensor_run_is_requested_again_with_backoff(conf: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator pass: a change the sensor's run could not apply (S3 answering the probe's
    listing but not the reads) stayed unsynced after S3 came back, for ever: the cursor already
    held the new state, so every later tick skipped the source."""
    import orchestration.automation as automation

    clock = {"ahead": 0.0}  # the sensor's clock, this far ahead of the runs' timestamps
    monkeypatch.setattr(automation, "time", SimpleNamespace(time=lambda: time.time() + clock["ahead"]))
    docs = conf.folder("docs")
    conf.folder("wiki")
    sensor = Sensor(conf.path)
    sensor.tick()
    (docs / "a.md").write_text("# docs\n\nedited\n")
    tick = sensor.tick()
    assert set(tick.runs) == {"docs"}
    failed = _failed_sync(sensor.instance, "docs", "sensor")
    clock["ahead"] = automation.RETRY_AFTER_S - 5
    assert sensor.tick().runs == {}  # not at once: RETRY_AFTER_S after the failure
    clock["ahead"] = automation.RETRY_AFTER_S + 1
    again = sensor.tick()
    assert set(again.runs) == {"docs"} and again.runs["docs"].run_key == f"docs:{tick.cursor['docs']}:retry-of:{failed}"
    assert again.runs["docs"].tags == {"bindery/trigger": "sensor"} and again.cursor == tick.cursor
    # the retry failed too: the wait doubles with two failures in a row
    _failed_sync(sensor.instance, "docs", "sensor")
    assert sensor.tick().runs == {}
    clock["ahead"] = 2 * automation.RETRY_AFTER_S + 1
    assert set(sensor.tick().runs) == {"docs"}
    # a failed run an operator launched is theirs to judge: not retried
    _failed_sync(sensor.instance, "wiki", "cli")
    assert "wiki" not in sensor.tick().runs


def test_sensor_retries_spare_re_executions_and_stop_after_the_limit(
        conf: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review pass: a failed run an operator re-executed from the UI inherits its parent's
    `bindery/trigger: sensor` tag and was retried as the sensor's; and a permanent error (a
    refused delete sweep, a damaged index) was retried every hour for ever."""
    import orchestration.automation as automation

    monkeypatch.setattr(automation, "time", SimpleNamespace(time=lambda: time.time() + 10 * automation.RETRY_MAX_S))
    docs = conf.folder("docs")
    sensor = Sensor(conf.path)
    sensor.tick()
    (docs / "a.md").write_text("# docs\n\nedited\n")
    sensor.tick()
    parent = _failed_sync(sensor.instance, "docs", "sensor")
    rerun = str(uuid.uuid4())
    sensor.instance.add_run(dg.DagsterRun(
        job_name="sync", run_id=rerun, status=dg.DagsterRunStatus.FAILURE,
        tags={"dagster/partition": "docs", "bindery/trigger": "sensor", "dagster/parent_run_id": parent}))
    assert sensor.tick().runs == {}  # the operator's re-execution: theirs to judge
    for _ in range(automation.RETRY_LIMIT):
        _failed_sync(sensor.instance, "docs", "sensor")
    assert sensor.tick().runs == {}  # RETRY_LIMIT failures in a row: no more retries
    (docs / "a.md").write_text("# docs\n\nedited again\n")
    assert set(sensor.tick().runs) == {"docs"}  # a new change is requested as ever


def test_a_configuration_that_no_longer_loads_skips_the_tick_saying_why(conf: Config) -> None:
    """An operator pass: an edit that broke bindery.yaml while the UI ran failed every sensor
    tick with a traceback (and every schedule tick, and every step with Dagster's wrapper)."""
    conf.folder("docs")
    sensor = Sensor(conf.path)
    first = sensor.tick()
    conf.raw["stages"] = {"chunk": {"max_tokens": 160, "overlap_tokens": 500}}
    conf.save()
    tick = sensor.tick()
    message = (tick.result.skip_reason.skip_message if tick.result.skip_reason else None) or ""
    assert tick.runs == {} and "overlap_tokens" in message and message.startswith("configuration:")
    assert tick.cursor == first.cursor
    schedule = build_schedule(False, "0 3 * * *")
    with dg.instance_for_test() as instance, dg.build_schedule_context(
            instance=instance, resources={"bindery": BinderyConfigResource(config_path=str(conf.path))}) as ctx:
        skipped = schedule(ctx)
        assert isinstance(skipped, dg.SkipReason) and "overlap_tokens" in (skipped.skip_message or "")
    with pytest.raises(dg.Failure, match="overlap_tokens") as failure:  # a step: one line, no wrapper
        BinderyConfigResource(config_path=str(conf.path)).config
    assert "\n" not in (failure.value.description or "")


def test_s3_source_changes_are_detected(conf: Config, moto_endpoint: str) -> None:
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    bucket = f"sensor-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="kb/a.md", Body=b"# A\n\nalpha\n")
    s3.put_object(Bucket=bucket, Key="elsewhere/x.md", Body=b"# X\n")
    conf.folder("docs")
    conf.raw["sources"].append({"name": "bucket", "kind": "s3", "bucket": bucket, "prefix": "kb",
                                "endpoint_url": moto_endpoint, "region": "us-east-1"})
    conf.save()
    sensor = Sensor(conf.path)
    assert set(sensor.tick().runs) == {"docs", "bucket"}
    assert sensor.tick().runs == {}
    s3.put_object(Bucket=bucket, Key="elsewhere/y.md", Body=b"# Y\n")  # outside the prefix
    assert sensor.tick().runs == {}
    s3.put_object(Bucket=bucket, Key="kb/b.md", Body=b"# B\n\nbeta\n")
    assert set(sensor.tick().runs) == {"bucket"}
    time.sleep(1.1)  # a metadata-only rewrite keeps the ETag; LastModified (1 s resolution) moves
    s3.copy_object(Bucket=bucket, Key="kb/a.md", CopySource={"Bucket": bucket, "Key": "kb/a.md"},
                   Metadata={"acl": "hr-team"}, MetadataDirective="REPLACE")
    assert set(sensor.tick().runs) == {"bucket"}
    s3.delete_object(Bucket=bucket, Key="kb/b.md")
    assert set(sensor.tick().runs) == {"bucket"}
    # the bucket disappears: skipped, never a run that could delete on bad evidence
    conf.raw["sources"][1]["bucket"] = f"gone-{uuid.uuid4().hex[:8]}"
    conf.save()
    tick = sensor.tick()
    assert "bucket" not in tick.runs


def test_reconcile_schedule_requests_every_source_and_registers_partitions(conf: Config) -> None:
    conf.folder("docs")
    conf.folder("wiki")
    schedule = build_schedule(False, "0 3 * * *")
    with dg.instance_for_test() as instance:  # schedules need an instance with a ref
        with dg.build_schedule_context(instance=instance,
                                       resources={"bindery": BinderyConfigResource(config_path=str(conf.path))}) as ctx:
            reqs = schedule(ctx)
            assert isinstance(reqs, list)
            assert sorted(str(r.partition_key) for r in reqs) == ["docs", "wiki"]
            assert all(r.tags == {"bindery/trigger": "schedule"} for r in reqs)
            assert set(instance.get_dynamic_partitions("sources")) == {"docs", "wiki"}
            # unchanged sources are still reconciled: the schedule is the backstop for missed events
            again = schedule(ctx)
            assert isinstance(again, list)
            assert sorted(str(r.partition_key) for r in again) == ["docs", "wiki"]
            # Dagster's rule for a tick of several requests, which calling the function skips (every
            # real tick failed with two sources: "must specify a run_key in each RunRequest")
            keys = [r.run_key for r in again]
            assert None not in keys and len(set(keys)) == len(keys)


@pytest.mark.slow
def test_requested_run_executes_through_the_cli_path_and_settles(tmp_path: Path) -> None:
    """tick -> the sync it requested (same job, same tags, the CLI's runner and instance) ->
    searchable; the next tick requests nothing because syncing never touches the source."""
    from connectors.config import load_config
    from orchestration.runs import Runner

    dep = LocalDeployment(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# Alpha\n\nThe alpha team owns the loading dock scheduler.\n")
    dep.config["sources"].append({"name": "other", "kind": "local", "root": str(other)})
    dep.save()
    runner = Runner(load_config(dep.config_path))
    sensor = Sensor(dep.config_path, runner.instance)

    def launch(tick: Tick) -> None:
        for name, rr in tick.runs.items():
            out = runner.run("sync", partition=name, tags=dict(rr.tags))
            assert out.success, out.error
            run = runner.instance.get_run_by_id(out.run_id)
            assert run is not None and run.tags["bindery/trigger"] == "sensor" and run.tags["dagster/partition"] == name

    launch(sensor.tick())
    assert sensor.tick().runs == {}
    dep.edit("ops/oncall.txt", "On-call policy\n\nPages are acknowledged within two minutes.\n")
    tick = sensor.tick()
    assert set(tick.runs) == {"docs"}
    launch(tick)
    assert "two minutes" in hits(dep, "how fast is a page acknowledged", k=1)[0]["text"]
    assert sensor.tick().runs == {}
    assert_converged(dep)
