"""The `rollback` job: `bindery rollback` in the Dagster UI.

Launch it from the UI (Jobs -> rollback), optionally with `by` (who rolls back; default the
run). It makes the previous generation live again in one binding flip, as the CLI does (no
gate: the generation served before), records the flip on `index_binding` under the partition
of the generation now live (marked `rollback`), and puts the outcome and any warning (sources
the older generation lacks, a snapshot to repair) in the step's metadata. Nothing to roll back
to fails the step with the CLI's one line.
"""

# no `from __future__ import annotations`: Dagster resolves the op's config class from its annotation
import dagster as dg

from assets.pipeline import check_run, one_line_failures
from assets.resources import BinderyConfigResource, DocumentStoreResource
from connectors.lifecycle import Lifecycle
from orchestration.promotion import rollback_materialization


class RollbackConfig(dg.Config):
    by: str | None = None  # who rolls back, as `--by` (default: this run)


@dg.op(description="Make the previous generation live again (as `bindery rollback`): one binding flip, no gate.")
def roll_back(context: dg.OpExecutionContext, config: RollbackConfig, bindery: BinderyConfigResource,
              store: DocumentStoreResource) -> dg.Output[None]:
    check_run(context, bindery.config)
    with one_line_failures():
        flip = Lifecycle(bindery.config, store.store).rollback(by=config.by or f"dagster-run:{context.run_id[:8]}")
    context.log_event(rollback_materialization(store.store, flip))
    for warning in flip.get("warnings") or []:
        context.log.warning(warning)
    again = f"generation {flip['previous']} is kept as previous: the rollback job run again returns to it"
    return dg.Output(None, metadata={"live": flip["live"], "previous": flip["previous"] or -1,
                                     "summary": "; ".join([*flip["report"]["reasons"], again]),
                                     "warnings": dg.MetadataValue.json(list(flip.get("warnings") or []))})


@dg.job(name="rollback", executor_def=dg.in_process_executor,
        description="Make the previous generation live again (as `bindery rollback`).")
def rollback_job() -> None:
    roll_back()
