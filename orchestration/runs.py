"""Launch Bindery's Dagster jobs from the CLI and read back what each stage reported.

The CLI runs the *same* jobs the UI runs, in-process, against the persistent instance, so every
CLI run appears in the UI's run history with its materialisations and checks.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from connectors.config import BinderyConfig
from orchestration.automation import partition_requests
from orchestration.definitions import build_definitions
from orchestration.instance import get_instance
from orchestration.terminal_log import terminal_logger


@dataclass
class RunOutcome:
    job: str
    partition: str | None
    success: bool
    run_id: str
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset -> metadata values
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None


def _value(v: Any) -> Any:
    return getattr(v, "value", v)


def _first_error(result: dg.ExecuteInProcessResult) -> str | None:
    """The most useful one-line reason a run failed: a failed blocking check's description,
    else the innermost non-Dagster exception of the first failed step."""
    for ev in result.all_events:
        if ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data: Any = ev.event_specific_data
            if data is not None and not data.passed and data.severity == dg.AssetCheckSeverity.ERROR:
                return f"blocking check {data.check_name} failed: {data.description}"
    for ev in result.all_events:
        if ev.event_type_value == "STEP_FAILURE" and ev.step_failure_data:
            err = ev.step_failure_data.error
            while err is not None and err.cause is not None and "dagster" in (err.cls_name or "").lower():
                err = err.cause
            if err is not None:
                first = err.message.strip().splitlines()[0] if err.message else (err.cls_name or "error")
                return re.sub(r"^connectors\.errors\.\w+: ", "", first)  # Bindery's messages say what failed
    return None


def _interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """Whether a step failed because the process was interrupted (SIGINT, Ctrl-C)."""
    for ev in result.all_events:
        if ev.event_type_value == "STEP_FAILURE" and ev.step_failure_data:
            err = ev.step_failure_data.error
            while err is not None:
                if err.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt"):
                    return True
                err = err.cause
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


@contextmanager
def source_lock(cfg: BinderyConfig, name: str) -> Iterator[None]:
    """CLI-launched runs of one source never overlap (the UI's queue enforces the same)."""
    path = cfg.data_path / "locks" / f"source-{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class Runner:
    def __init__(self, cfg: BinderyConfig, *, debug: bool = False):
        self.cfg = cfg
        self.debug = debug
        assert cfg.config_path, "the CLI loads configuration from a file"
        self.instance = get_instance(cfg)
        self.defs = build_definitions(cfg.config_path, loggers={"console": terminal_logger})
        self._sync_partitions()
        self._fail_dead_runs()

    def _fail_dead_runs(self) -> None:
        """A CLI process that died mid-run (killed, OOM, power loss) leaves its run STARTED for
        ever, and the UI's queue counts it against the per-source limit of one run: that
        source's sensor and UI runs would wait behind it for ever. Runs record the CLI's host
        and pid; one whose process no longer exists is marked failed here."""
        host = socket.gethostname()
        started = self.instance.get_runs(filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED], tags={"bindery/launched-by": "cli", "bindery/host": host}))
        for run in started:
            pid = int(run.tags.get("bindery/pid", "0") or 0)
            if pid <= 0 or pid == os.getpid() or _alive(pid):
                continue
            self.instance.report_run_failed(
                run, message=f"the bindery process (pid {pid} on {host}) that ran this died before it finished; "
                             "the next run resumes from what the document store holds")

    def _sync_partitions(self) -> None:
        for req in partition_requests(self.instance, [s.name for s in self.cfg.sources]):
            if isinstance(req, dg.AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
            elif isinstance(req, dg.DeleteDynamicPartitionsRequest):
                for key in req.partition_keys:
                    self.instance.delete_dynamic_partition(req.partitions_def_name, key)

    def run(self, job_name: str, *, partition: str | None = None, run_config: dict[str, Any] | None = None,
            tags: dict[str, str] | None = None) -> RunOutcome:
        job = self.defs.resolve_job_def(job_name)
        # The run log goes to the instance (the UI shows all of it); the terminal gets warnings only.
        run_config = {**(run_config or {}),
                      "loggers": {"console": {"config": {"log_level": os.environ.get("BINDERY_LOG_LEVEL", "WARNING"),
                                                         "full": self.debug}}}}
        result = job.execute_in_process(instance=self.instance, partition_key=partition, run_config=run_config,
                                        tags={"bindery/launched-by": "cli", "bindery/host": socket.gethostname(),
                                              "bindery/pid": str(os.getpid()), **(tags or {})},
                                        raise_on_error=False)
        out = RunOutcome(job_name, partition, result.success, result.run_id)
        for ev in result.get_asset_materialization_events():
            mat = getattr(ev.event_specific_data, "materialization", None)
            if mat is not None:
                out.metadata[mat.asset_key.to_user_string()] = {k: _value(v) for k, v in mat.metadata.items()}
        for ev in result.all_events:
            if ev.event_type_value == "ASSET_CHECK_EVALUATION" and ev.event_specific_data is not None:
                d: Any = ev.event_specific_data
                out.checks[d.check_name] = {"passed": d.passed, "severity": d.severity.value,
                                            "description": d.description,
                                            "metadata": {k: _value(v) for k, v in d.metadata.items()}}
        if not result.success:
            if _interrupted(result):
                # Dagster turns Ctrl-C into a failed step and returns; the CLI must stop here too
                raise KeyboardInterrupt
            out.error = _first_error(result) or "run failed (see the Dagster UI for the run log)"
        return out

    def run_sources(self, job_name: str, sources: list[str], *, allow_mass_delete: bool = False,
                    tags: dict[str, str] | None = None) -> tuple[list[RunOutcome], float]:
        started = time.perf_counter()
        outcomes = []
        cfg = {"ops": {"source_listing": {"config": {"allow_mass_delete": allow_mass_delete}}}}
        for name in sources:
            with source_lock(self.cfg, name):
                outcomes.append(self.run(job_name, partition=name, run_config=cfg, tags=tags))
        return outcomes, time.perf_counter() - started
