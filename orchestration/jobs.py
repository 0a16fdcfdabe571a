"""Jobs over the asset graph. All run in-process: the stages share one loaded embedding model
and one store connection, and a subprocess per step would cost seconds per asset."""

from __future__ import annotations

import dagster as dg

from assets.pipeline import GENERATIONS, SOURCES, STAGE_ASSETS, TARGET_TAG
from orchestration.plan_job import plan_job
from orchestration.promotion import PROMOTION_ASSETS
from orchestration.rollback_job import rollback_job
from orchestration.tune_job import tune_job

_STAGES = dg.AssetSelection.assets(*STAGE_ASSETS)

sync_job = dg.define_asset_job(
    "sync", selection=_STAGES, partitions_def=SOURCES, executor_def=dg.in_process_executor,
    description="Bring one source up to date in the live generation (and a building candidate).",
)

reindex_job = dg.define_asset_job(
    "reindex", selection=_STAGES, partitions_def=SOURCES, executor_def=dg.in_process_executor,
    tags={TARGET_TAG: "candidate"},
    description="Build the candidate generation from the current configuration beside the live one. "
                "Backfill it over all source partitions, then run `promote`.",
)

promote_job = dg.define_asset_job(
    "promote", selection=dg.AssetSelection.assets(*PROMOTION_ASSETS), partitions_def=GENERATIONS,
    executor_def=dg.in_process_executor,
    description="Judge the candidate (the run's `generations` partition) on the eval set against live; "
                "flip the binding if the gate passes.",
)

JOBS: list[dg.JobDefinition | dg.UnresolvedAssetJobDefinition] = [sync_job, reindex_job, promote_job, plan_job,
                                                                tune_job, rollback_job]
