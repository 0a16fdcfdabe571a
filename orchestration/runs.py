"""Launch Bindery's Dagster jobs from the CLI and read back what each stage reported.

Two ways, the same jobs the UI runs, the same instance:

* **In-process** (the default, `Runner.run_sources`): the run executes inside the `bindery`
  process (`execute_in_process`); one machine, no daemon needed. The run records the code
  location of `workspace.yaml` as its origin, as a launched run does, so the UI can re-execute
  it ("Re-execute from failure") through the daemon.
* **Submitted** (`--submit`, `Runner.submit_sources`): each run is created from the code location
  of `workspace.yaml` and enqueued, like `dagster job launch` does; the daemon's queued run
  coordinator starts it within the instance's limits (per source partition, overall) through
  whatever run launcher the instance names. `Runner.follow` (`--wait`) polls the instance until
  every run has finished and reads back the same outcome an in-process run gives.

Every run, either way, is in the instance's history with its materialisations and checks. Runs
of one source never write its stores side by side (`orchestration.source_locks`).
"""

from __future__ import annotations

import functools
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from assets.pipeline import (
    GENERATION,
    GENERATIONS,
    SUBMITTED_CONFIG_TAG,
    SUBMITTED_DIGEST_TAG,
    config_digest,
)
from assets.run_overlap import launched_by, process_alive
from connectors.config import BinderyConfig
from connectors.errors import BinderyError, ConfigError
from connectors.shards import all_partition_keys
from orchestration.automation import follow_configured_sources
from orchestration.definitions import build_definitions
from orchestration.estimate import STARTUP_TAG, process_seconds, remember_throughput
from orchestration.instance import get_instance
from orchestration.source_locks import source_lock, wait_for_instance_runs
from orchestration.terminal_log import terminal_logger

# how long `--wait` waits on runs no daemon has dequeued before it says so and stops waiting
DAEMON_GRACE = 120.0
@dataclass
class RunOutcome:
    job: str
    partition: str | None
    success: bool
    run_id: str
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset -> metadata values
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    generations: dict[str, dict[str, Any]] = field(default_factory=dict)  # generation -> its `generation` record
    error: str | None = None


def _value(v: Any) -> Any:
    return getattr(v, "value", v)


def _first_error(events: Iterable[dg.DagsterEvent]) -> str | None:
    """The most useful one-line reason a run failed: a failed blocking check's description,
    else the innermost non-Dagster exception of the first failed step."""
    events = list(events)
    for ev in events:
        if ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data: Any = ev.event_specific_data
            if data is not None and not data.passed and data.severity == dg.AssetCheckSeverity.ERROR:
                return f"blocking check {data.check_name} failed: {data.description}"
    for ev in events:
        if ev.event_type_value == "STEP_FAILURE" and ev.step_failure_data:
            failure: Any = ev.step_failure_data.user_failure_data
            if failure is not None and failure.description:  # a dg.Failure: its description is the reason
                return headline(failure.description)
            err = ev.step_failure_data.error
            while err is not None and err.cause is not None and "dagster" in (err.cls_name or "").lower():
                err = err.cause
            if err is not None:
                first = headline(err.message) if err.message else (err.cls_name or "error")
                return re.sub(r"^connectors\.errors\.\w+: ", "", first)  # Bindery's messages say what failed
    return None


def headline(message: str) -> str:
    """The first line of an error message, continued while it ends in ':' — the native runtimes
    (OpenVINO, for one) open with a source location and give the reason on the next line."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    out = lines[0] if lines else ""
    for line in lines[1:]:
        if not out.endswith(":"):
            break
        out = f"{out} {line}"
    return out


class _CapturedInterrupts(dict[str, bool]):
    """Dagster's record of a SIGINT it captured (`dagster._utils.interrupts`), remembering one
    after Dagster clears it. During a run Dagster holds SIGINT in a flag and raises it only at
    its next checkpoint; one that lands after the last step, while the run is being finished, is
    cleared with the flag and never raised: the CLI went on to the next source and exited 0, or
    reported the run as failed with all of it stored (an operator pass)."""

    seen = False

    def __setitem__(self, key: str, value: bool) -> None:
        self.seen = self.seen or bool(value)
        super().__setitem__(key, value)


@contextmanager
def _interrupts_seen() -> Iterator[_CapturedInterrupts]:
    """Install `_CapturedInterrupts` as Dagster's flag for the length of a run."""
    from dagster._utils import interrupts as dagster_interrupts

    prior = getattr(dagster_interrupts, "_received_interrupt", None)
    flag = _CapturedInterrupts(prior if isinstance(prior, dict) else {})
    if not isinstance(prior, dict):  # a Dagster that keeps it otherwise: runs as before, unwatched
        yield flag
        return
    dagster_interrupts._received_interrupt = flag
    try:
        yield flag
    finally:
        dagster_interrupts._received_interrupt = prior


def _interrupted(events: Iterable[dg.DagsterEvent]) -> bool:
    """Whether a run failed because the process was interrupted (SIGINT, Ctrl-C), as its
    step's or its own failure says by the error's class (one that came after the last step is
    Dagster's flag, `_interrupts_seen`)."""
    for ev in events:
        data: Any = ev.event_specific_data
        err = getattr(data, "error", None) if ev.event_type_value in ("STEP_FAILURE", "RUN_FAILURE",
                                                                      "PIPELINE_FAILURE") else None
        while err is not None:
            if err.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt"):
                return True
            err = err.cause
    return False


def outcome_from_events(job: str, partition: str | None, run_id: str, success: bool,
                        events: Iterable[dg.DagsterEvent]) -> RunOutcome:
    """What a run reported (materialisation metadata per asset, check results, the reason it
    failed), from its events: those of an in-process result or those the instance stored."""
    events = list(events)
    out = RunOutcome(job, partition, success, run_id)
    for ev in events:
        data: Any = ev.event_specific_data
        if ev.event_type_value == "ASSET_MATERIALIZATION" and data is not None:
            mat = data.materialization
            meta = {k: _value(v) for k, v in mat.metadata.items()}
            if mat.asset_key == GENERATION.key and mat.partition:  # one per generation the run wrote
                out.generations[mat.partition] = meta
            else:
                out.metadata[mat.asset_key.to_user_string()] = meta
        elif ev.event_type_value == "ASSET_CHECK_EVALUATION" and data is not None:
            out.checks[data.check_name] = {"passed": data.passed, "severity": data.severity.value,
                                           "description": data.description,
                                           "partition": getattr(data, "partition", None),
                                           "metadata": {k: _value(v) for k, v in data.metadata.items()}}
    if not success:
        out.error = _first_error(events) or "run failed (see the Dagster UI for the run log)"
    return out


_STARTED_RUNS: list[str] = []  # the CLI process's runs: only its first paid for the process's start


def _startup_tag() -> dict[str, str]:
    """The seconds this process took before its first run began (interpreter, imports, the
    instance), which `bindery plan` adds to its estimate (`orchestration.estimate`)."""
    seconds = None if _STARTED_RUNS else process_seconds()
    _STARTED_RUNS.append("started")
    return {} if seconds is None else {STARTUP_TAG: f"{seconds:.3f}"}


class Runner:
    def __init__(self, cfg: BinderyConfig, *, debug: bool = False):
        self.cfg = cfg
        assert cfg.config_path, "the CLI loads configuration from a file"
        self.instance = get_instance(cfg)
        # the run log goes to the instance (the UI shows all of it); the terminal gets warnings only
        console = terminal_logger(os.environ.get("BINDERY_LOG_LEVEL", "WARNING"), full=debug)
        self.defs = build_definitions(cfg.config_path, loggers={"console": console})
        self._sync_partitions()
        fail_dead_runs(self.instance)

    def _sync_partitions(self) -> None:
        follow_configured_sources(self.instance, all_partition_keys(self.cfg))

    def run(self, job_name: str, *, partition: str | None = None, run_config: dict[str, Any] | None = None,
            tags: dict[str, str] | None = None) -> RunOutcome:
        job = self.defs.resolve_job_def(job_name)
        # Dagster starts a job's loggers only when the run config names them; the terminal logger's
        # settings are in its definition, so this config is also valid where the UI re-executes the
        # run (there "console" is Dagster's own, every key of it optional)
        run_config = {**(run_config or {}), "loggers": {"console": {}}}
        tags = {"bindery/launched-by": "cli", "bindery/host": socket.gethostname(), "bindery/pid": str(os.getpid()),
                **_config_tags(self.cfg), **_startup_tag(), **(tags or {})}
        with _origin_recorded(self.instance, ui_origin(self.cfg, job_name)), _interrupts_seen() as interrupt:
            result = job.execute_in_process(instance=self.instance, partition_key=partition, run_config=run_config,
                                            tags=tags, raise_on_error=False)
        if interrupt.seen or (not result.success and _interrupted(result.all_events)):
            # Dagster turns Ctrl-C into a failed step and returns, or swallows one that came after
            # the last step; either way the CLI stops here too
            raise KeyboardInterrupt
        remember_throughput(self.instance, Path(os.environ["DAGSTER_HOME"]))  # for the next `bindery plan`
        return outcome_from_events(job_name, partition, result.run_id, result.success, result.all_events)

    def run_generation(self, job_name: str, generation: str, *, run_config: dict[str, Any] | None = None) -> RunOutcome:
        """Run a job partitioned by generation (`promote`) for one generation, adding its
        partition first (a generation built before partitions existed has none yet)."""
        self.instance.add_dynamic_partitions(GENERATIONS.name or "generations", [generation])
        return self.run(job_name, partition=generation, run_config=run_config)

    def run_sources(self, job_name: str, sources: list[str], *, allow_mass_delete: bool = False,
                    tags: dict[str, str] | None = None) -> tuple[list[RunOutcome], float]:
        started = time.perf_counter()
        outcomes = []
        waited = 0.0  # behind another run of a source: not this command's own time
        cfg = {"ops": {"source_listing": {"config": {"allow_mass_delete": allow_mass_delete}}}}
        for name in sources:
            with source_lock(self.cfg, name) as wait:
                waited += wait + wait_for_instance_runs(self.instance, name)
                outcomes.append(self.run(job_name, partition=name, run_config=cfg, tags=tags))
        self._sync_partitions()  # a partition of another sharding kept while its run went on: gone now
        return outcomes, time.perf_counter() - started - waited

    # -- runs through the instance (--submit, --wait) -------------------------------------

    def submit_sources(self, job_name: str, sources: list[str], *, allow_mass_delete: bool = False,
                       tags: dict[str, str] | None = None) -> list[Submitted]:
        """Enqueue one run of `job_name` per source partition for the daemon; returns at once.

        The runs are built from the code location `workspace.yaml` names (the one the daemon
        and the webserver load), so any run launcher can start them on any worker."""
        run_config = {"ops": {"source_listing": {"config": {"allow_mass_delete": allow_mass_delete}}}}
        base_tags = {"bindery/launched-by": "cli-submit", "bindery/host": socket.gethostname(),
                     **_config_tags(self.cfg), **(tags or {})}
        with code_location(self.cfg, self.instance) as (request, location, repo):
            remote_job = repo.get_full_job(job_name)
            submitted = []
            for name in sources:
                run = _create_run(self.instance, location, repo, remote_job, run_config,
                                  {**base_tags, "dagster/partition": name})
                self.instance.submit_run(run.run_id, request)
                submitted.append(Submitted(run.run_id, job_name, name))
        return submitted

    def daemon_alive(self, within: float = 120.0) -> bool:
        """Whether a Dagster daemon has sent a heartbeat to this instance in the last `within`
        seconds: without one, a submitted run waits in the queue until one starts."""
        beats = self.instance.get_daemon_heartbeats()
        return any(time.time() - b.timestamp < within for b in beats.values())

    def finished(self, run_id: str) -> bool:
        """Whether the run has ended (a run the instance no longer holds counts as ended)."""
        run = self.instance.get_run_by_id(run_id)
        return run is None or run.is_finished

    def follow(self, runs: list[Submitted], *, echo: Callable[[str], None], poll_seconds: float = 1.0,
               timeout: float | None = None, daemon_grace: float = DAEMON_GRACE) -> tuple[list[RunOutcome], float]:
        """Wait for submitted runs to finish, echoing each status change and each asset a run
        materialises; returns their outcomes (in the order given) and the seconds waited.
        Runs still queued after `daemon_grace` seconds with no daemon alive fail the wait
        (they would wait for ever); they stay queued for a daemon started later."""
        started = time.perf_counter()
        pending = {r.run_id: r for r in runs}
        seen: dict[str, Any] = {}
        cursors: dict[str, str | None] = {}
        done: dict[str, RunOutcome] = {}
        while pending:
            for run_id, sub in list(pending.items()):
                run = self.instance.get_run_by_id(run_id)
                if run is None:
                    raise BinderyError(f"run {run_id} vanished from the instance")
                label = f"{sub.job} [{sub.partition}] {run_id[:8]}"
                conn = self.instance.get_records_for_run(run_id, cursor=cursors.get(run_id),
                                                         of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
                cursors[run_id] = conn.cursor
                for rec in conn.records:
                    if rec.asset_key is not None:  # a partitioned asset (a generation) says which one
                        part = rec.partition_key
                        echo(f"{label}:   materialised {rec.asset_key.to_user_string()}"
                             + (f" {part}" if part and part != sub.partition else ""))
                # after what the run materialised: its status was read first, so a finished run's
                # last assets are all in, and SUCCESS is said after them, not before
                if seen.get(run_id) != run.status:
                    seen[run_id] = run.status
                    echo(f"{label}: {run.status.value}")
                if run.is_finished:
                    done[run_id] = self.outcome(run)
                    del pending[run_id]
            if pending:
                waited = time.perf_counter() - started
                if timeout is not None and waited > timeout:
                    raise BinderyError(f"runs still not finished after {timeout:.0f} s: {', '.join(pending)}")
                queued = [r for r in pending if seen.get(r) == dg.DagsterRunStatus.QUEUED]
                if queued and waited > daemon_grace and not self.daemon_alive():
                    raise BinderyError(
                        f"{len(queued)} run(s) still queued after {waited:.0f} s and no Dagster daemon is running "
                        f"to start them ({', '.join(r[:8] for r in queued)}); they stay queued: start one "
                        "(`bindery ui`, or `dagster-daemon run`) and follow them with `bindery runs`")
                time.sleep(poll_seconds)
        return [done[r.run_id] for r in runs], time.perf_counter() - started

    def outcome(self, run: dg.DagsterRun) -> RunOutcome:
        """The outcome of a finished run, read back from the instance's event log."""
        events = [e.dagster_event for e in self.instance.all_logs(run.run_id) if e.dagster_event is not None]
        return outcome_from_events(run.job_name, run.tags.get("dagster/partition"), run.run_id,
                                   run.status == dg.DagsterRunStatus.SUCCESS, events)


@dataclass
class Submitted:
    run_id: str
    job: str
    partition: str | None


def workspace_file(cfg: BinderyConfig) -> Path:
    """The workspace `--submit` loads: `orchestration.workspace`, else the repository's."""
    return Path(cfg.orchestration.workspace or Path(__file__).resolve().parent.parent / "workspace.yaml")


@contextmanager
def code_location(cfg: BinderyConfig, instance: dg.DagsterInstance) -> Iterator[tuple[Any, Any, Any]]:
    """(workspace request context, code location, repository) of the configured workspace.

    Loading it starts the location's code server (a subprocess for a `python_module` entry),
    which reads `BINDERY_CONFIG` like every other process of the deployment."""
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    path = workspace_file(cfg)
    if not path.exists():
        raise ConfigError(f"workspace file not found: {path} (orchestration.workspace)")
    if cfg.config_path:
        os.environ["BINDERY_CONFIG"] = cfg.config_path
    # the code server subprocess logs INFO lines ("Started Dagster code server ...") to the
    # stdout it inherits: in the middle of the human output, before `--json`'s document (which
    # then did not parse); its warnings and errors still come through
    with WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(path)]),
                                 code_server_log_level="warning") as ctx:
        request = ctx.create_request_context()
        names = request.code_location_names
        if len(names) != 1:
            raise ConfigError(f"{path} must name exactly one code location, found {names}")
        if request.has_code_location_error(names[0]):
            raise BinderyError(f"code location {names[0]} failed to load: {request.get_code_location_error(names[0])}")
        location = request.get_code_location(names[0])
        repos = list(location.get_repositories().values())
        yield request, location, repos[0]


def _config_tags(cfg: BinderyConfig) -> dict[str, str]:
    """The configuration a run was started with: a run executed elsewhere (submitted, or
    re-executed from the UI) refuses to go on under another one (`assets.pipeline`)."""
    if not cfg.config_path:
        return {}
    return {SUBMITTED_CONFIG_TAG: cfg.config_path,
            SUBMITTED_DIGEST_TAG: cfg.loaded_digest or config_digest(cfg.config_path)}


def ui_origin(cfg: BinderyConfig, job_name: str) -> Any:
    """The origin the UI gives a run of `job_name` it launches: the one code location of the
    configured workspace, read from the file (nothing is started). None when the file names
    no single location: the run then records none, and the UI cannot re-execute it."""
    from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
    from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.workspace.load import location_origins_from_yaml_paths

    try:
        origins = location_origins_from_yaml_paths([str(workspace_file(cfg))])
    except Exception:  # a broken workspace file stops `--submit` and the UI, not a CLI run
        return None
    if len(origins) != 1:
        return None
    return RemoteJobOrigin(RemoteRepositoryOrigin(origins[0], SINGLETON_REPOSITORY_NAME), job_name)


@contextmanager
def _origin_recorded(instance: dg.DagsterInstance, origin: Any) -> Iterator[None]:
    """`execute_in_process` creates its run with no origin (it has no code location to name),
    and the UI refuses to re-execute such a run. While this is open, the runs the instance
    creates record `origin`: the location the UI loads, which re-executes the job from there."""
    if origin is None:
        yield
        return
    create = instance.create_run_for_job
    instance.create_run_for_job = functools.partial(create, remote_job_origin=origin)  # type: ignore[method-assign]
    try:
        yield
    finally:
        del instance.create_run_for_job  # the class's method again


def _create_run(instance: dg.DagsterInstance, location: Any, repo: Any, remote_job: Any,
                run_config: dict[str, Any], tags: dict[str, str]) -> dg.DagsterRun:
    """Create a NOT_STARTED run of a remote job the way `dagster job launch` does: with the
    execution plan and the job's origin in the code location, so any launcher can start it."""
    plan = location.get_execution_plan(remote_job, run_config, step_keys_to_execute=None, known_state=None,
                                       instance=instance)
    return instance.create_run(
        job_name=remote_job.name, run_id=None, run_config=run_config,
        resolved_op_selection=remote_job.resolved_op_selection,
        step_keys_to_execute=plan.execution_plan_snapshot.step_keys_to_execute, op_selection=None, status=None,
        root_run_id=None, parent_run_id=None, tags={**remote_job.tags, **tags}, job_snapshot=remote_job.job_snapshot,
        execution_plan_snapshot=plan.execution_plan_snapshot, parent_job_snapshot=remote_job.parent_job_snapshot,
        remote_job_origin=remote_job.get_remote_origin(), job_code_origin=remote_job.get_python_origin(),
        asset_selection=None, asset_check_selection=None, asset_graph=repo.asset_graph,
    )


_TABLE_COLUMNS = ("run_id", "status", "job", "partition", "launched_by", "created", "seconds")


def list_runs(instance: dg.DagsterInstance, *, limit: int = 20, statuses: list[str] | None = None,
              run_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Recent runs of the instance, newest first: queued, running and finished (only `run_ids`,
    where given: what `--submit` enqueued, as `bindery runs` will show it)."""
    # only the filters given: Dagster refuses an empty `run_ids` (`bindery runs --status queued` failed so)
    given: dict[str, Any] = {"statuses": [dg.DagsterRunStatus(s.upper()) for s in statuses]} if statuses else {}
    if run_ids:
        given["run_ids"] = run_ids
    filters = dg.RunsFilter(**given) if given else None
    rows = []
    for rec in instance.get_run_records(filters=filters, limit=limit):
        run = rec.dagster_run
        seconds = round(rec.end_time - rec.start_time, 1) if rec.start_time and rec.end_time else None
        rows.append({"run_id": run.run_id, "status": run.status.value, "job": run.job_name,
                     "partition": run.tags.get("dagster/partition"),
                     "launched_by": launched_by(run.tags),
                     "created_at": rec.create_timestamp.timestamp(), "started_at": rec.start_time,
                     "ended_at": rec.end_time, "seconds": seconds})
    return rows


def cancel_runs(instance: dg.DagsterInstance, wanted: list[str]) -> list[dict[str, Any]]:
    """Cancel runs by id or by a unique prefix of at least 8 characters (what `bindery runs` and
    `--wait` print): a queued run leaves the queue, a started one is terminated through the run
    launcher. Raises ConfigError naming what matches no run, or more than one, or a finished run."""
    runs: list[dg.DagsterRun] = []
    for want in wanted:
        if len(want) < 8:
            raise ConfigError(f"--cancel {want}: give at least the 8 characters `bindery runs` shows")
        found = instance.get_run_by_id(want)
        matches = [found] if found else [r.dagster_run for r in instance.get_run_records(limit=1000)
                                         if r.dagster_run.run_id.startswith(want)]
        if len(matches) != 1:
            raise ConfigError(f"--cancel {want}: " + ("no such run" if not matches else "names more than one run"))
        if matches[0].is_finished:
            raise ConfigError(f"--cancel {want}: the run has already ended ({matches[0].status.value})")
        runs.append(matches[0])
    out = []
    for run in runs:
        done = instance.run_coordinator.cancel_run(run.run_id)
        after = instance.get_run_by_id(run.run_id)
        out.append({"run_id": run.run_id, "cancelled": bool(done),
                    "status": after.status.value if after else run.status.value})
    return out


def runs_table(rows: list[dict[str, Any]]) -> str:
    """`bindery runs` for people: one aligned line per run."""
    if not rows:
        return "no runs in the instance yet"
    cells = [[r["run_id"][:8], r["status"], r["job"], r["partition"] or "-", r["launched_by"],
              time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created_at"])),
              "-" if r["seconds"] is None else str(r["seconds"])] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(_TABLE_COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(_TABLE_COLUMNS, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def fail_dead_runs(instance: dg.DagsterInstance) -> None:
    """A CLI process that died mid-run (killed, OOM, power loss) leaves its run STARTED for
    ever, and the UI's queue counts it against the per-source limit of one run: that
    source's sensor and UI runs would wait behind it for ever. Runs record the CLI's host
    and pid; one whose process no longer exists is marked failed here: by every CLI run, and
    by `bindery runs` (it listed one STARTED until the next run: a new-user pass)."""
    host = socket.gethostname()
    started = instance.get_runs(filters=dg.RunsFilter(
        statuses=[dg.DagsterRunStatus.STARTED], tags={"bindery/launched-by": "cli", "bindery/host": host}))
    for run in started:
        if launched_by(run.tags) != "cli":  # a re-execution from the UI carries its parent's tags
            continue
        pid = int(run.tags.get("bindery/pid", "0") or 0)
        if pid <= 0 or pid == os.getpid() or process_alive(pid):
            continue
        instance.report_run_failed(
            run, message=f"the bindery process (pid {pid} on {host}) that ran this died before it finished; "
                         "the next run resumes from what the document store holds")
