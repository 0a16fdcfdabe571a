"""The Dagster instance Bindery runs on: a persistent DAGSTER_HOME under the data dir.

`dagster.yaml` turns telemetry off and queues UI-launched runs with a per-partition limit of
one, so two syncs of the same source never overlap (runs of different sources still do).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from connectors.config import BinderyConfig

DAGSTER_YAML = """\
telemetry:
  enabled: false
# Bindery's steps log through Dagster, not stdout; the default compute-log manager starts a
# watcher process per step that prints a traceback of its own on Ctrl-C.
compute_logs:
  module: dagster.core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    max_concurrent_runs: 4
    tag_concurrency_limits:
      - key: "dagster/partition"
        value:
          applyLimitPerUniqueValue: true
        limit: 1
"""


def dagster_home(cfg: BinderyConfig) -> Path:
    home = Path(os.environ.get("DAGSTER_HOME") or cfg.data_path / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    yaml_path = home / "dagster.yaml"
    if not yaml_path.exists():
        yaml_path.write_text(DAGSTER_YAML)
    return home


def get_instance(cfg: BinderyConfig) -> dg.DagsterInstance:
    os.environ["DAGSTER_HOME"] = str(dagster_home(cfg))
    return dg.DagsterInstance.get()
