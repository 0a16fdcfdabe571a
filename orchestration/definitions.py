"""The Dagster code location: the asset graph, its jobs, sensor and schedule, and one resource
per outside system. Policy (what runs automatically) comes from `automation:` in bindery.yaml,
applied here once.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg

from assets.pipeline import GENERATION, STAGE_ASSETS
from assets.resources import (
    BinderyConfigResource,
    ContextualiserResource,
    DocumentStoreResource,
    EmbedderResource,
    KeywordIndexResource,
    VectorIndexResource,
)
from connectors.config import AutomationConfig, load_config
from connectors.errors import ConfigError
from orchestration.automation import build_schedule, build_sensor, check_cron
from orchestration.jobs import JOBS
from orchestration.promotion import PROMOTION_ASSETS


def resources(config_path: str | None = None) -> dict[str, dg.ConfigurableResource[Any]]:
    """The resources every asset, job, sensor and schedule draws on, all reading one
    bindery.yaml (`config_path`, default `$BINDERY_CONFIG` at run time). A test or a
    deployment replaces one system by binding another resource to its key."""
    bindery = BinderyConfigResource(config_path=config_path or dg.EnvVar("BINDERY_CONFIG"))
    return {
        "bindery": bindery,
        "store": DocumentStoreResource(bindery=bindery),
        "vector_index": VectorIndexResource(bindery=bindery),
        "keyword_index": KeywordIndexResource(bindery=bindery),
        "embedder": EmbedderResource(bindery=bindery),
        "contextualiser": ContextualiserResource(),
    }


def build_definitions(config_path: str | None = None,
                      loggers: dict[str, dg.LoggerDefinition] | None = None) -> dg.Definitions:
    """Definitions for one configuration file (default: `$BINDERY_CONFIG`, read at load time).
    `loggers` replaces Dagster's (the CLI prints runs to the terminal one line per event)."""
    try:
        auto = load_config(config_path).automation
        check_cron(auto.reconcile_cron, "automation.reconcile_cron")
    except ConfigError:
        auto = AutomationConfig()  # the UI must still load; runs will report the config error
    return dg.Definitions(
        assets=[*STAGE_ASSETS, GENERATION, *PROMOTION_ASSETS],
        jobs=JOBS,
        sensors=[build_sensor(auto.sensor, auto.sensor_interval_seconds)],
        schedules=[build_schedule(auto.reconcile, auto.reconcile_cron)],
        resources=resources(config_path),
        loggers=loggers,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(os.environ.get("BINDERY_CONFIG"))
