"""The Dagster code location: the asset graph, its jobs, sensor and schedule, and the one
resource they share. Policy (what runs automatically) comes from `automation:` in
bindery.yaml, applied here once.
"""

from __future__ import annotations

import os

import dagster as dg

from assets.pipeline import STAGE_ASSETS
from assets.resource import BinderyResource
from connectors.config import AutomationConfig, load_config
from connectors.errors import ConfigError
from orchestration.automation import build_schedule, build_sensor, check_cron
from orchestration.jobs import JOBS
from orchestration.promotion import PROMOTION_ASSETS


def build_definitions(config_path: str | None = None,
                      loggers: dict[str, dg.LoggerDefinition] | None = None) -> dg.Definitions:
    """Definitions for one configuration file (default: `$BINDERY_CONFIG`, read at load time).
    `loggers` replaces Dagster's (the CLI prints runs to the terminal one line per event)."""
    try:
        auto = load_config(config_path).automation
        check_cron(auto.reconcile_cron, "automation.reconcile_cron")
    except ConfigError:
        auto = AutomationConfig()  # the UI must still load; runs will report the config error
    resource = (BinderyResource(config_path=config_path) if config_path
                else BinderyResource(config_path=dg.EnvVar("BINDERY_CONFIG")))
    return dg.Definitions(
        assets=[*STAGE_ASSETS, *PROMOTION_ASSETS],
        jobs=JOBS,
        sensors=[build_sensor(auto.sensor, auto.sensor_interval_seconds)],
        schedules=[build_schedule(auto.reconcile, auto.reconcile_cron)],
        resources={"bindery": resource},
        loggers=loggers,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(os.environ.get("BINDERY_CONFIG"))
