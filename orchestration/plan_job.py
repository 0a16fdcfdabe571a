"""The `plan` job: `bindery plan` in the Dagster UI, its result as run metadata.

Launch it from the UI (Jobs -> plan) with `kind: sync|reindex` and optional `sources` and
`allow_mass_delete` (a sync's, as `bindery plan`'s options) and `ocr` (`--ocr`); the step's
output carries the whole plan as JSON, a readable summary, and the headline numbers. It
writes nothing to the store or the indexes.
"""

# no `from __future__ import annotations`: Dagster resolves the op's config class from its annotation
import enum

import dagster as dg
from pydantic import Field

from assets.pipeline import one_line_failures
from assets.resources import BinderyConfigResource, DocumentStoreResource, runtime
from connectors.errors import UsageError
from orchestration.estimate import throughput
from orchestration.plan import compute_plan
from orchestration.report import human


class PlanKind(enum.Enum):
    """What to plan. An enum, so Dagster's launchpad refuses any other value at launch, in one line
    (a pattern on a string was checked only in the step, and its failure read "Error occurred
    while executing op" with the reason buried in the cause: a Dagster UI pass)."""

    sync = "sync"
    reindex = "reindex"


class PlanConfig(dg.Config):
    kind: PlanKind = PlanKind.sync
    sources: list[str] = Field(default_factory=list)  # default: every configured source (sync only)
    allow_mass_delete: bool = False  # as if the sync were let past the delete guard
    ocr: bool = False  # OCR scanned pages for exact counts (`bindery plan --ocr`), else estimate them


@dg.op(description="What the next sync or reindex would do: changes, work per stage, time, LLM cost.")
def plan_next_run(context: dg.OpExecutionContext, config: PlanConfig, bindery: BinderyConfigResource,
                  store: DocumentStoreResource) -> dg.Output[None]:
    rt = runtime(bindery, store)
    with one_line_failures():  # the checks `bindery plan` makes, each failing with its one line
        kind = config.kind.value
        if kind == "reindex" and (config.sources or config.allow_mass_delete):
            raise UsageError("sources and allow_mass_delete plan a sync: a reindex rebuilds every source")
        for name in config.sources:
            rt.cfg.source(name)  # an unknown one fails naming it
        if kind == "reindex" and (nothing := rt.lifecycle.nothing_to_reindex()):
            context.log.info(nothing)  # as `bindery plan reindex` says it: no candidate would be built
            return dg.Output(None, metadata={"summary": dg.MetadataValue.md(nothing), "candidate": None})
        plan = compute_plan(rt.cfg, rt, kind, config.sources or None,
                            allow_mass_delete=config.allow_mass_delete, history=throughput(context.instance),
                            read_scans=config.ocr)
    meta: dict[str, dg.RawMetadataValue] = {
        "summary": dg.MetadataValue.md(f"```\n{human('plan', plan)}\n```"),
        "plan": dg.MetadataValue.json(plan),
        **{f"{stage}_to_compute": c["compute"] for stage, c in plan["stages"].items()},
        "documents_to_delete": plan["written"]["deleted"],
    }
    if plan["estimate"]["seconds"] is not None:
        meta["estimated_seconds"] = plan["estimate"]["seconds"]
    if plan["llm"]:
        meta["llm_cost_usd"] = plan["llm"]["cost_usd"]
    return dg.Output(None, metadata=meta)


@dg.job(name="plan", executor_def=dg.in_process_executor,
        description="Preview the next sync or reindex without writing anything (as `bindery plan`).")
def plan_job() -> None:
    plan_next_run()
