"""Runs through the instance: `bindery sync --submit` enqueues runs that a real `dagster-daemon`
process dequeues and launches (default run launcher: a worker process per run, through the
code location of workspace.yaml), `--wait` follows them and exits non-zero when one failed,
`bindery runs` lists them, and the queue never runs two syncs of one source at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from connectors.config import load_config
from orchestration.instance import dagster_home
from tests.bindery_fixture import Deployment
from tests.webserver import stop

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    # `broken` passes the CLI's checks (its root exists) and fails inside its run: its ACL file
    # is not text, so its listing fails in the daemon's worker.
    broken = tmp_path / "broken-source"
    broken.mkdir()
    (broken / ".bindery-acl").write_bytes(b"\xff\xfe\xfa not text")
    (broken / "a.md").write_text("# A\n\nSome text.\n")
    return Deployment(tmp_path, sources=[
        {"name": "docs", "kind": "local", "root": str(tmp_path / "corpus"), "min_ratio": 0.5},
        {"name": "broken", "kind": "local", "root": str(broken)}])


@pytest.fixture
def daemon(dep: Deployment, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real dagster-daemon on the deployment's instance (SQLite under data_dir)."""
    home = dagster_home(load_config(dep.config_path))
    env = {**os.environ, "DAGSTER_HOME": str(home), "BINDERY_CONFIG": str(dep.config_path)}
    log = open(tmp_path / "daemon.log", "wb")  # closed at teardown
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    yield proc
    stop(proc)
    log.close()


def _finished(dep: Deployment, run_ids: set[str], timeout: float = 400) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = {r["run_id"]: r for r in dep.cli("runs", "--limit", "50")["runs"] if r["run_id"] in run_ids}
        if len(rows) == len(run_ids) and all(r["ended_at"] for r in rows.values()):
            return rows
        time.sleep(1)
    raise AssertionError(f"runs {run_ids} did not finish in {timeout} s")


@pytest.mark.timeout(900)
def test_submitted_runs_go_through_the_daemon_queue(dep: Deployment, daemon: subprocess.Popen[bytes],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # --wait follows both runs; one source is broken, so the command fails, naming it.
    out = dep.cli("sync", "--submit", "--wait", expect=1)
    # each run's lines: what it materialised, then its end (SUCCESS came before its last assets)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if f"[docs] {out['runs']['docs'][:8]}" in ln]
    assert lines[-1].endswith(": SUCCESS") and any("materialised keyword_index" in ln for ln in lines), lines
    assert set(out["errors"]) == {"broken"} and ".bindery-acl" in out["errors"]["broken"]
    assert out["sources"]["docs"]["new"] == 6 and out["recomputed"]["embed"] > 0
    assert out["generation"] == 1  # the daemon's worker built and bound generation 1
    listed = {r["run_id"]: r for r in dep.cli("runs")["runs"]}
    assert {listed[out["runs"]["docs"]]["status"], listed[out["runs"]["broken"]]["status"]} == {"SUCCESS", "FAILURE"}
    assert all(listed[rid]["launched_by"] == "cli-submit" for rid in out["runs"].values())
    assert dep.cli("query", "ERR-0x1F", "-k", "1")["hits"][0]["doc"] == "ops/errors.html"

    # Two syncs of one source submitted back to back: the queue (one run per source partition,
    # from the instance config) starts the second only after the first has finished.
    dep.write("ops/oncall.txt", "On-call policy\n\nAcknowledge a page within ten minutes.\n")
    first = dep.cli("sync", "--source", "docs", "--submit")["submitted"][0]["run_id"]
    second = dep.cli("sync", "--source", "docs", "--submit")["submitted"][0]["run_id"]
    rows = _finished(dep, {first, second})
    assert rows[first]["status"] == rows[second]["status"] == "SUCCESS"
    a, b = sorted(rows.values(), key=lambda r: r["started_at"])
    assert b["started_at"] >= a["ended_at"], "two runs of one source overlapped"
    hits = dep.cli("query", "how fast must a page be acknowledged", "-k", "3")["hits"]
    assert any("ten minutes" in h["text"] for h in hits)


def test_wait_needs_submit(dep: Deployment) -> None:
    dep.cli("sync", "--wait", expect=2)


@pytest.mark.parametrize("json_output", [False, True])
def test_submit_prints_no_code_server_log_lines(dep: Deployment, capfd: pytest.CaptureFixture[str],
                                                json_output: bool) -> None:
    """Submitting loads the workspace, which starts a code server subprocess. Its INFO lines
    ("Started Dagster code server ...") went to the command's stdout: between the human output,
    and before the JSON document of `--json`, which no longer parsed."""
    from orchestration.cli import main

    args = ["--config", str(dep.config_path), *(["--json"] if json_output else []), "sync", "--source", "docs",
            "--submit"]
    assert main(args) == 0
    captured = capfd.readouterr()
    assert "dagster.code_server" not in captured.out + captured.err
    if json_output:
        assert [r["partition"] for r in json.loads(captured.out)["submitted"]] == ["docs"]
    else:
        assert "queued for the Dagster daemon" in captured.out and "no Dagster daemon" in captured.err


def test_submit_reports_when_the_instance_created_each_run(dep: Deployment, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator pass: `sync --submit` showed each run created at the time it printed, seconds
    after the instance created it (the code server stops in between), so it differed from
    `bindery runs`. Both, and the JSON, now give the instance's creation time."""
    from orchestration.cli import main
    from orchestration.runs import Runner

    submit = Runner.submit_sources

    def slow(self: Runner, *args: Any, **kw: Any) -> Any:
        out = submit(self, *args, **kw)
        time.sleep(1.5)  # a code server slow to stop
        return out

    monkeypatch.setattr(Runner, "submit_sources", slow)
    capsys.readouterr()
    submitted = dep.cli("sync", "--submit")["submitted"]
    assert "already" not in capsys.readouterr().err
    runs = {r["run_id"]: r for r in dep.cli("runs")["runs"]}
    assert [r["partition"] for r in submitted] == ["docs", "broken"]
    queued = {r["run_id"] for r in dep.cli("runs", "--status", "queued")["runs"]}
    assert queued == {r["run_id"] for r in submitted}  # a status alone filters (it once failed: no run ids)
    assert all(r["created_at"] == runs[r["run_id"]]["created_at"] for r in submitted), (submitted, runs)

    capsys.readouterr()
    assert main(["--config", str(dep.config_path), "sync", "--source", "docs", "--submit"]) == 0
    again = capsys.readouterr()
    # the first run of docs is still queued (no daemon here): a second submit says so
    docs_run = next(r["run_id"] for r in submitted if r["partition"] == "docs")
    assert f"warning: a sync run of docs is already queued ({docs_run[:8]})" in again.err, again.err
    assert "broken" not in again.err
    printed = next(line.split() for line in again.out.splitlines() if "cli-submit" in line)
    assert main(["--config", str(dep.config_path), "runs"]) == 0
    listed = next(line.split() for line in capsys.readouterr().out.splitlines() if line.startswith(printed[0]))
    assert printed == listed  # the created column too


def test_daemon_alive_reads_the_instances_heartbeats(dep: Deployment) -> None:
    """`--submit` warns when no daemon has reported lately (the run would sit QUEUED, unsaid)."""
    from dagster._daemon.types import DaemonHeartbeat

    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    assert not runner.daemon_alive()  # a fresh instance: no daemon ever ran
    runner.instance.add_daemon_heartbeat(DaemonHeartbeat(time.time() - 600, "SCHEDULER", "old", None))
    assert not runner.daemon_alive()  # one that stopped ten minutes ago
    runner.instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "SCHEDULER", "now", None))
    assert runner.daemon_alive()


def test_an_error_headline_carries_the_reason_a_location_line_announces() -> None:
    """OpenVINO's errors open with 'Exception from src/...core.cpp:117:' and say what went wrong
    on the next line; the one-line reason a run failed must hold both."""
    from orchestration.runs import headline

    msg = ("RuntimeError: Exception from src/inference/src/cpp/core.cpp:117:\n"
           "filesystem error: cannot set permissions: No such file or directory [/c/1.blob]\n\n  trace\n")
    assert headline(msg) == ("RuntimeError: Exception from src/inference/src/cpp/core.cpp:117: "
                             "filesystem error: cannot set permissions: No such file or directory [/c/1.blob]")
    assert headline("ValueError: bad\nmore") == "ValueError: bad"
    assert headline("") == ""


def test_a_second_run_of_a_source_says_it_waits_and_does_not_count_the_wait(
        dep: Deployment, capfd: pytest.CaptureFixture[str]) -> None:
    """A second `bindery sync` of a source printed nothing for the whole of the first one (it
    looked hung), then reported the wait as its own duration."""
    import threading

    from orchestration.source_locks import source_lock

    cfg = load_config(dep.config_path)
    held = threading.Event()

    def first() -> None:
        with source_lock(cfg, "docs") as waited:
            assert waited == 0.0
            held.set()
            time.sleep(0.6)

    t = threading.Thread(target=first)
    t.start()
    held.wait(10)
    with source_lock(cfg, "docs") as waited:
        assert waited >= 0.3
    t.join()
    assert f"waiting for another run of source 'docs' to finish (process {os.getpid()})..." in capfd.readouterr().err


def test_a_source_lock_is_re_entrant_in_its_own_thread_only(dep: Deployment) -> None:
    """`bindery tune` holds its sources for the whole search and builds its trials through the
    ordinary runs, which take the same locks: a second flock of the file from the holder would
    wait for itself. Another thread (another run) still waits."""
    import threading

    from orchestration.source_locks import source_lock

    cfg = load_config(dep.config_path)
    inner_done, other_got = threading.Event(), threading.Event()

    def other() -> None:
        with source_lock(cfg, "docs"):
            other_got.set()

    with source_lock(cfg, "docs"):
        with source_lock(cfg, "docs") as waited:  # the holder again: no wait
            assert waited == 0.0
        inner_done.set()
        t = threading.Thread(target=other)
        t.start()
        assert not other_got.wait(0.5)  # the outer hold still keeps another thread out
    t.join(10)
    assert inner_done.is_set() and other_got.is_set()


def test_a_hold_names_the_runs_the_daemon_started_beside_it(dep: Deployment) -> None:
    """A tune pass: a sync ran beside `bindery tune` and its trials measured different corpora.
    The source locks keep CLI runs out; a run the daemon starts from its queue they cannot, so
    the hold names it afterwards (and not the holder's own trial builds)."""
    import socket

    import dagster as dg

    from orchestration.runs import Runner
    from orchestration.source_locks import sources_held
    from orchestration.tuning import ran_during_tune

    cfg = load_config(dep.config_path)
    runner = Runner(cfg)

    def started(source: str, tags: dict[str, str]) -> str:
        run_id = runner.submit_sources("sync", [source], tags=tags)[0].run_id
        runner.instance.handle_new_event(dg.EventLogEntry(  # type: ignore[no-untyped-call]
            error_info=None, level="DEBUG", user_message="", run_id=run_id, timestamp=time.time(),
            dagster_event=dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, "sync")))
        return run_id

    queued_before = runner.submit_sources("sync", ["docs"], tags={"bindery/launched-by": "ui"})[0].run_id
    time.sleep(0.05)
    with sources_held(cfg, ["docs"], runner.instance) as held:
        time.sleep(0.05)
        started("docs", {"bindery/pid": str(os.getpid()), "bindery/host": socket.gethostname()})  # its own trial
        beside = started("docs", {"bindery/launched-by": "ui"})
        runner.submit_sources("sync", ["docs"], tags={"bindery/launched-by": "ui"})  # queued: wrote nothing
        started("broken", {"bindery/launched-by": "ui"})  # another source: not this hold's
        assert [r.run_id for r in held.runs_beside()] == [beside]
        (warning,) = ran_during_tune(held)
    assert queued_before != beside
    assert warning.startswith(f"sync run {beside[:8]} of source 'docs' (launched by ui) ran during the tune")


def test_wait_with_no_daemon_stops_waiting_and_says_why(dep: Deployment) -> None:
    """Found by an audit: `sync --submit --wait` with no daemon waited for ever. After a grace
    period with the runs still queued and no daemon alive, the wait ends with the reason; the
    runs stay queued for a daemon started later."""
    from connectors.errors import BinderyError
    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    runs = runner.submit_sources("sync", ["docs"])
    with pytest.raises(BinderyError, match=r"still queued after .* no Dagster daemon is running"):
        runner.follow(runs, echo=lambda _line: None, poll_seconds=0.05, daemon_grace=0.2)
    assert not runner.finished(runs[0].run_id)
    assert [r["status"] for r in dep.cli("runs")["runs"]] == ["QUEUED"]


def test_ctrl_c_while_waiting_says_the_runs_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during `--wait` stops the waiting, not the daemon's runs: the line said "stored
    before stopping: nothing new; the next run resumes from there" while the runs went on."""
    from orchestration import cli
    from orchestration.commands import pipeline

    class Interrupting:
        def submit_sources(self, *_a: Any, **_k: Any) -> list[Any]:
            return [type("S", (), {"run_id": "abcdef123456"})()]

        def follow(self, *_a: Any, **_k: Any) -> Any:
            raise KeyboardInterrupt

        def finished(self, _run_id: str) -> bool:
            return False

    monkeypatch.setattr(pipeline, "LEFT_RUNNING", [])
    with pytest.raises(KeyboardInterrupt):
        pipeline._submit_and_wait(Interrupting(), "sync", ["docs"])  # type: ignore[arg-type]
    line = cli._interrupted("sync")
    assert line.startswith("stopped waiting; the daemon still has 1 submitted run(s)") and "abcdef12" in line


def test_a_queued_run_can_be_cancelled_from_the_cli(dep: Deployment) -> None:
    """Runs `--submit` queued (or a Ctrl-C'd `--wait` left) could be cancelled only in the UI."""
    run_id = dep.cli("sync", "--source", "docs", "--submit")["submitted"][0]["run_id"]
    out = dep.cli("runs", "--cancel", run_id[:8])
    assert out == {"cancelled": [{"run_id": run_id, "cancelled": True, "status": "CANCELED"}]}
    assert [r["status"] for r in dep.cli("runs")["runs"]] == ["CANCELED"]
    for wrong in (run_id[:8], "ffffffffffff", "abc"):  # ended, unknown, too short to name one
        assert "--cancel" in dep.cli("runs", "--cancel", wrong, expect=2)["error"]


def test_a_cli_run_waits_for_a_run_of_the_same_source_the_ui_started(
        dep: Deployment, capfd: pytest.CaptureFixture[str]) -> None:
    """Found by a review: the file lock kept CLI runs apart, but a CLI sync started beside a
    UI run of the same source (the daemon's queue holds back only what it launches), and both
    wrote the same stores. The CLI now waits for it, says so, and does not count the wait."""
    import socket
    import threading

    import dagster as dg

    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))

    def started_run(launched_by: str) -> dg.DagsterRun:
        run = runner.instance.get_run_by_id(runner.submit_sources("sync", ["docs"], tags={
            "bindery/launched-by": launched_by, "bindery/host": socket.gethostname()})[0].run_id)
        assert run is not None
        runner.instance.handle_new_event(dg.EventLogEntry(  # type: ignore[no-untyped-call]
            error_info=None, level="DEBUG", user_message="", run_id=run.run_id, timestamp=time.time(),
            dagster_event=dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, run.job_name)))
        now = runner.instance.get_run_by_id(run.run_id)
        assert now is not None and now.status == dg.DagsterRunStatus.STARTED
        return now

    # an in-process CLI run of this machine left STARTED is not waited for: the file lock this
    # run holds keeps live ones apart, so it is dead, and it would block every sync for ever
    started_run("cli")
    ui_run = started = started_run("ui")

    finish = threading.Timer(1.5, lambda: runner.instance.report_run_failed(started, message="ended by the test"))
    finish.start()
    t0 = time.perf_counter()
    outcomes, own_seconds = runner.run_sources("sync", ["docs"])
    finish.join()
    assert time.perf_counter() - t0 >= 1.5 and own_seconds < time.perf_counter() - t0 - 1.0
    assert outcomes[0].success
    err = capfd.readouterr().err
    assert f"waiting for run {ui_run.run_id[:8]} (sync of source 'docs', launched by ui) to finish" in err


def test_after_shards_change_a_cli_sync_waits_for_the_old_shards_runs_and_keeps_their_partitions(
        dep: Deployment, capfd: pytest.CaptureFixture[str]) -> None:
    """A scale-out pass: with `shards: 2` runs submitted and STARTED, `shards: 1` and an
    in-process sync deleted the old shard partitions under them (each failed at its next step:
    "Nonexistent partition keys") and wrote the same documents beside them, because it waited
    only for runs of the partition `docs`. It now waits for them, keeps their partitions while
    they run, and removes them after."""
    import threading

    import dagster as dg

    from orchestration.runs import Runner

    dep.config["sources"][0]["shards"] = 2
    dep.save()
    before = Runner(load_config(dep.config_path))
    run_id = before.submit_sources("sync", ["docs:shard-0-of-2"], tags={"bindery/launched-by": "ui"})[0].run_id
    before.instance.handle_new_event(dg.EventLogEntry(  # type: ignore[no-untyped-call]
        error_info=None, level="DEBUG", user_message="", run_id=run_id, timestamp=time.time(),
        dagster_event=dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, "sync")))
    dep.config["sources"][0]["shards"] = 1
    dep.save()
    runner = Runner(load_config(dep.config_path))  # follows the configuration's partitions ...
    keys = set(runner.instance.get_dynamic_partitions("sources"))
    assert "docs" in keys and "docs:shard-0-of-2" in keys and "docs:shard-1-of-2" not in keys  # ... but a running one's

    run = runner.instance.get_run_by_id(run_id)
    assert run is not None
    finish = threading.Timer(1.5, lambda: runner.instance.report_run_failed(run, message="ended by the test"))
    finish.start()
    t0 = time.perf_counter()
    outcomes, _ = runner.run_sources("sync", ["docs"])
    finish.join()
    assert time.perf_counter() - t0 >= 1.5 and outcomes[0].success
    err = capfd.readouterr().err
    assert f"waiting for run {run_id[:8]} (sync of source 'docs:shard-0-of-2', launched by ui)" in err
    assert set(runner.instance.get_dynamic_partitions("sources")) == {"docs", "broken"}  # gone once it ended


def _started_shard_run(dep: Deployment, partition: str, *, started_at: float) -> str:
    """A `sync` run of `partition` the UI launched, STARTED (as of `started_at`) by the test."""
    import dagster as dg

    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    run_id = runner.submit_sources("sync", [partition], tags={"bindery/launched-by": "ui"})[0].run_id
    runner.instance.handle_new_event(dg.EventLogEntry(  # type: ignore[no-untyped-call]
        error_info=None, level="DEBUG", user_message="", run_id=run_id, timestamp=started_at,
        dagster_event=dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, "sync")))
    return run_id


@pytest.mark.parametrize("earlier", [True, False])
def test_a_run_of_the_new_sharding_waits_for_the_old_shardings_earlier_runs_only(
        dep: Deployment, earlier: bool) -> None:
    """A scale-out pass: after `shards: 2` -> `1` with a shard's run STARTED, a `docs` run the
    sensor, a schedule or the UI started (no CLI wait before it; the queue's limit is per
    partition) wrote the same documents beside it. Its first step now waits for that run, and
    says so in the run's log; a run of the old sharding that started after it is not waited for
    (it waits for this one instead), so two runs never wait for each other."""
    import threading

    from orchestration.runs import Runner

    dep.config["sources"][0]["shards"] = 2
    dep.save()
    old = _started_shard_run(dep, "docs:shard-0-of-2", started_at=time.time() + (0 if earlier else 3600))
    dep.config["sources"][0]["shards"] = 1
    dep.save()
    runner = Runner(load_config(dep.config_path))
    old_run = runner.instance.get_run_by_id(old)
    assert old_run is not None
    finish = threading.Timer(2.0, lambda: runner.instance.report_run_failed(old_run, message="ended by the test"))
    finish.start()
    try:
        # as the daemon executes a run the UI launched: no CLI wait before it
        outcome = runner.run("sync", partition="docs", tags={"bindery/launched-by": "ui"})
    finally:
        finish.join()
    assert outcome.success
    said = [e.user_message for e in runner.instance.all_logs(outcome.run_id)
            if "another sharding of this source" in e.user_message]
    if earlier:
        assert any(f"waiting for run {old[:8]} (sync of source 'docs:shard-0-of-2', launched by ui)" in m
                   for m in said), said
    else:
        assert said == []


def test_a_dead_cli_runs_started_run_is_failed_but_not_a_ui_re_execution_of_it(dep: Deployment) -> None:
    """A CLI process that died leaves its run STARTED; the next command marks it failed (its pid
    is gone). A re-execution from the UI inherits that run's tags, dead pid included, and must
    not be failed under the daemon's worker while it runs."""
    import socket

    import dagster as dg

    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    dead = _dead_pid()

    def started(extra: dict[str, str]) -> str:
        tags = {"bindery/launched-by": "cli", "bindery/host": socket.gethostname(), "bindery/pid": str(dead), **extra}
        run = runner.instance.get_run_by_id(runner.submit_sources("sync", ["docs"], tags=tags)[0].run_id)
        assert run is not None
        runner.instance.handle_new_event(dg.EventLogEntry(  # type: ignore[no-untyped-call]
            error_info=None, level="DEBUG", user_message="", run_id=run.run_id, timestamp=time.time(),
            dagster_event=dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, run.job_name)))
        return run.run_id

    orphan = started({})
    re_executed = started({"dagster/parent_run_id": orphan})
    Runner(load_config(dep.config_path))  # what every CLI command does first
    status = {r: runner.instance.get_run_by_id(r).status for r in (orphan, re_executed)}  # type: ignore[union-attr]
    assert status == {orphan: dg.DagsterRunStatus.FAILURE, re_executed: dg.DagsterRunStatus.STARTED}
    later = started({})  # `bindery runs` lists it as it is: it showed STARTED until the next run
    assert {r["run_id"]: r["status"] for r in dep.cli("runs")["runs"]}[later] == "FAILURE"


@pytest.mark.parametrize(("tags", "who"), [
    ({"bindery/launched-by": "cli"}, "cli"),
    ({"bindery/launched-by": "cli", "dagster/parent_run_id": "p"}, "ui"),  # re-executed from the UI
    ({"bindery/launched-by": "cli-submit", "dagster/parent_run_id": "p"}, "ui"),
    ({"dagster/sensor_name": "s", "dagster/parent_run_id": "p"}, "sensor"),
    ({"dagster/schedule_name": "s"}, "schedule"),
    ({}, "ui"),
])
def test_who_launched_a_run(tags: dict[str, str], who: str) -> None:
    from orchestration.source_locks import launched_by

    assert launched_by(tags) == who


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_ui_materialisation_of_a_sources_stages_is_waited_for_as_a_sync_is() -> None:
    """A UI pass found a CLI sync writing beside the asset graph's "Materialize" of the same
    source (job `__ASSET_JOB`): only `sync` and `reindex` runs were waited for."""
    import dagster as dg

    from orchestration.source_locks import writes_source

    def run(job: str, *assets: str) -> dg.DagsterRun:
        return dg.DagsterRun(job_name=job, run_id="r", asset_selection=frozenset(map(dg.AssetKey, assets)) or None)

    assert writes_source(run("sync")) and writes_source(run("reindex"))
    assert writes_source(run("__ASSET_JOB", "chunks")) and writes_source(run("__ASSET_JOB", "vector_index"))
    assert not writes_source(run("__ASSET_JOB", "generation")) and not writes_source(run("plan"))


def test_the_uis_code_location_makes_the_source_partitions_follow_the_configuration(
        dep: Deployment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A UI pass: sources added or removed while the UI ran kept the old partitions until a CLI
    run or the sensor (a backfill over all partitions ran a removed source, skipped a new one).
    Loading the code location (start, "Reload") now brings them in line."""
    import dagster as dg
    import yaml

    from orchestration.definitions import defs

    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(load_config(dep.config_path))))
    monkeypatch.setenv("BINDERY_CONFIG", str(dep.config_path))
    instance = dg.DagsterInstance.get()
    defs()  # what the webserver and the daemon do when they load (or reload) the code location
    assert sorted(instance.get_dynamic_partitions("sources")) == ["broken", "docs"]
    (tmp_path / "delta").mkdir()
    raw = yaml.safe_load(dep.config_path.read_text())
    raw["sources"] = [s for s in raw["sources"] if s["name"] != "broken"] + [
        {"name": "delta", "kind": "local", "root": str(tmp_path / "delta")}]
    dep.config_path.write_text(yaml.safe_dump(raw))
    defs()
    assert sorted(instance.get_dynamic_partitions("sources")) == ["delta", "docs"]
    dep.config_path.write_text("sources: [")  # a broken file: the UI still loads, partitions stay
    defs()
    assert sorted(instance.get_dynamic_partitions("sources")) == ["delta", "docs"]


def test_a_run_that_indexes_the_whole_source_clears_an_earlier_runs_error(dep: Deployment) -> None:
    """A UI pass: after an embed stopped mid-way, "Re-execute from failure" finished embedding and
    indexing, yet `status` kept the error (only a listing cleared it); a second pass found it kept
    whenever the source had a dead letter (counted as a document the index lacks). Not while the
    live index still lacks documents it could hold."""
    import dagster as dg
    import sqlalchemy as sa

    from assets.pipeline import STAGE_ASSETS
    from connectors.store import DocumentStore
    from orchestration.definitions import resources
    from orchestration.instance import get_instance

    dep.write("scans/unreadable.pdf", b"%PDF-1.4 nothing a parser can read")  # a dead letter: indexed never
    dep.cli("sync", "--source", "docs")
    store = DocumentStore(load_config(dep.config_path).database_url)
    assert store.counts()["dead_letters"] == 1
    interrupted = "embed: interrupted; the next sync resumes from what was stored"

    def index_only() -> str | None:  # the step a re-execution from a failed embed runs last
        assert dg.materialize(STAGE_ASSETS, selection=["vector_index", "keyword_index"], partition_key="docs",
                              instance=get_instance(load_config(dep.config_path)),
                              resources=resources(str(dep.config_path)), raise_on_error=False).success
        return cast(str | None, dep.cli("status")["sources"]["docs"]["last_error"])

    store.set_source_error("docs", interrupted)
    assert index_only() is None
    with store.engine.begin() as c:  # every embedding gone: no document can be indexed whole
        c.execute(sa.text("DELETE FROM embeddings"))
    store.set_source_error("docs", interrupted)
    assert index_only() == interrupted
    store.dispose()


def test_a_bindery_error_ends_the_step_as_a_failure_with_its_one_line_reason(dep: Deployment) -> None:
    """In the UI a source that failed to list showed a stack of Dagster wrappers around the
    reason; Bindery's own errors now end the step as a Dagster Failure whose description is
    the one-line reason the CLI prints (the traceback stays on the cause)."""
    import dagster as dg

    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    (outcome,), _ = runner.run_sources("sync", ["broken"])
    assert not outcome.success and outcome.error and "ACL file" in outcome.error
    failures = [e.dagster_event for e in runner.instance.all_logs(outcome.run_id)
                if e.dagster_event is not None and e.dagster_event.event_type == dg.DagsterEventType.STEP_FAILURE]
    (failure,) = failures
    data = failure.step_failure_data
    assert data is not None and data.user_failure_data is not None
    assert data.user_failure_data.description == outcome.error
    assert {k: getattr(v, "value", v) for k, v in data.user_failure_data.metadata.items()} == {
        "stage": "listing", "error": "UnreadableAcl"}


@pytest.mark.timeout(600)
def test_the_ui_re_executes_a_failed_cli_run_from_its_failure(dep: Deployment, daemon: subprocess.Popen[bytes],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI run ran in-process and recorded no origin, so the UI could not re-execute it. It records
    the workspace's code location now: the webserver's own mutation ("Re-execute from failure")
    re-executes it through the daemon from the failed step on. The re-execution inherits the CLI
    run's tags (its pid among them) but is the UI's: `bindery runs` says so, and a later CLI command
    does not take it for a dead CLI run of its own."""
    import assets.pipeline
    from connectors.errors import BinderyError
    from tests.webserver import graphql, webserver

    def embedder_down(*_: Any, **__: Any) -> Any:  # in this process only: the daemon's worker embeds
        raise BinderyError("the embedding service is down")

    monkeypatch.setattr(assets.pipeline, "run_embed", embedder_down)
    failed = dep.cli("sync", "--source", "docs", expect=1)
    assert "embedding service is down" in failed["errors"]["docs"]
    parent = failed["runs"]["docs"]

    env = {**os.environ, "DAGSTER_HOME": str(dagster_home(load_config(dep.config_path))),
           "BINDERY_CONFIG": str(dep.config_path)}
    with webserver(env, dep.data.parent / "webserver.log") as port:
        run = graphql(port, f'{{ runOrError(runId: "{parent}") {{ ... on Run {{ repositoryOrigin {{ '
                            'repositoryLocationName repositoryName } } } }')["runOrError"]
        locations = graphql(port, "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }")
        assert [e["name"] for e in locations["workspaceOrError"]["locationEntries"]] == [
            run["repositoryOrigin"]["repositoryLocationName"]]  # the location the UI loaded
        launched = graphql(port, f'mutation {{ launchRunReexecution(reexecutionParams: {{parentRunId: "{parent}", '
                                 'strategy: FROM_FAILURE}) { __typename ... on LaunchRunSuccess { run { runId } } '
                                 '... on PythonError { message } } }')["launchRunReexecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        child = launched["run"]["runId"]
        rows = _finished(dep, {child})
        tags = graphql(port, f'{{ runOrError(runId: "{child}") {{ ... on Run {{ tags {{ key value }} }} }} }}')
        assert {"key": "bindery/launched-by", "value": "ui"} in tags["runOrError"]["tags"]  # the UI's list says so
    assert rows[child]["status"] == "SUCCESS" and rows[child]["launched_by"] == "ui"
    assert dep.cli("query", "ERR-0x1F", "-k", "1")["hits"][0]["doc"] == "ops/errors.html"
    assert {r["run_id"]: r["status"] for r in dep.cli("runs")["runs"]}[child] == "SUCCESS"


@pytest.mark.timeout(600)
def test_ctrl_c_after_a_sources_last_step_stops_the_sync_there(dep: Deployment,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator pass: a Ctrl-C that landed after a source's last step, while Dagster finished
    the run, was held in Dagster's flag and cleared with it: the sync went on through every
    other source and exited 0 (or reported a run with everything stored as failed). Now the run
    ends as interrupted and no further source runs."""
    import dagster as dg

    from orchestration.runs import Runner

    dep.config["sources"] = [dep.config["sources"][0],
                             {"name": "more", "kind": "local", "root": str(dep.root), "min_ratio": 0.5}]
    dep.save()
    runner = Runner(load_config(dep.config_path))
    real = dg.DagsterInstance.handle_new_event
    ran: list[str] = []

    def then_ctrl_c(self: dg.DagsterInstance, event: Any, *args: Any, **kwargs: Any) -> None:
        real(self, event, *args, **kwargs)
        kind = event.dagster_event.event_type_value if event.dagster_event else None
        if kind in ("RUN_START", "PIPELINE_START"):
            ran.append(event.run_id)
        if kind in ("RUN_SUCCESS", "PIPELINE_SUCCESS"):  # every step done, the run being finished
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the signal is handled here, by Dagster's handler

    monkeypatch.setattr(dg.DagsterInstance, "handle_new_event", then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        runner.run_sources("sync", ["docs", "more"])
    assert len(ran) == 1  # "more" never started
