"""The Dagster code location: the asset graph, its jobs, sensor and schedule, and one resource
per outside system. Policy (what runs automatically) comes from `automation:` in bindery.yaml,
applied here once.
"""

from __future__ import annotations

import logging
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
from connectors.shards import all_partition_keys
from orchestration.automation import build_schedule, build_sensor, check_cron, follow_configured_sources
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


def _follow_the_configuration(config_path: str | None) -> None:
    """The UI's code location loads here, at start and at each "Reload": the instance's source
    partitions then follow bindery.yaml, as every CLI run and the sensor make them. A source
    added or removed while the UI ran kept the old partitions (a backfill over all of them ran
    the removed source and skipped the new one). Best effort: the UI loads whatever happens."""
    if not os.environ.get("DAGSTER_HOME"):
        return
    try:
        follow_configured_sources(dg.DagsterInstance.get(), all_partition_keys(load_config(config_path)))
    except Exception as e:  # a config error is reported by the runs themselves
        logging.getLogger("bindery").warning(f"source partitions not updated from the configuration: {e}")


@dg.definitions
def defs() -> dg.Definitions:
    path = os.environ.get("BINDERY_CONFIG")
    _follow_the_configuration(path)
    return build_definitions(path)
