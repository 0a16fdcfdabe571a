"""The `tune` job: `bindery tune` in the Dagster UI, the trials table as run metadata.

Launch it from the UI (Jobs -> tune) with an optional `budget` ("12" trials or "10m"), `seed` and
`generation` (as `bindery tune`'s options); the step's
output carries the trials table (markdown), the whole result as JSON, and the best trial's
tuning- and checking-half metrics. Like the CLI it stores a `tune` event with every trial.
The job tries the space's query-time keys on the live generation; ingestion keys (which need a
generation built per setting, each a run of its own) are left to `bindery tune`, and the step's
metadata says which were left out.
"""

# no `from __future__ import annotations`: Dagster resolves the op's config class from its annotation

import dagster as dg

from assets.pipeline import one_line_failures
from assets.resources import BinderyConfigResource, DocumentStoreResource
from connectors.lifecycle import Lifecycle
from connectors.shards import all_partition_keys
from evals.tune import DEFAULT_SPACE, format_trials, parse_budget, split_space
from orchestration.source_locks import sources_held
from orchestration.tuning import ran_during_tune, tune_query_time


class TuneJobConfig(dg.Config):
    budget: str = ""  # default: tune.budget
    seed: int | None = None  # default: tune.seed (how the eval set is split into halves)
    generation: str = "live"  # live, candidate, an id or a name: as `bindery tune --generation`


@dg.op(description="Search retrieval settings on the eval set; choose on the tuning half, report both.")
def tune_settings(context: dg.OpExecutionContext, config: TuneJobConfig, bindery: BinderyConfigResource,
                  store: DocumentStoreResource) -> dg.Output[None]:
    cfg = bindery.config
    with one_line_failures():  # a bad budget or no live generation: the reason, not Dagster's wrappers
        which = int(config.generation) if config.generation.isdigit() else config.generation
        gen = Lifecycle(cfg, store.store).resolve_searchable(which)
        ingestion, query_space = split_space(cfg.tune.space or DEFAULT_SPACE)
        budget = parse_budget(config.budget) if config.budget else None
        # as `bindery tune`: no CLI sync writes the sources while the trials measure them
        with sources_held(cfg, all_partition_keys(cfg), context.instance) as held:
            result = tune_query_time(cfg, store.store, gen, space=query_space, seed=config.seed, budget=budget)
            result.warnings.extend(ran_during_tune(held))
    if gen.status == "retired":  # as the CLI says it: tuned on a frozen generation
        context.log.warning(f"generation {gen.id} ({gen.name}) is retired: its indexes have not received the "
                            "deletes, edits and access changes since it retired")
    for w in result.warnings:
        context.log.warning(w)
    # the `bindery tune --json` shape (docs/json-contract.md#tune): the generation tuned, and
    # `built` null (the job builds no candidate), so the metadata and the stored event read as the CLI's
    out = {"generation": gen.id, **result.to_json(), "built": None}
    store.store.add_event("tune", f"{len(result.trials)} trials (Dagster job)", details=out)
    best = out["best"]
    meta: dict[str, dg.RawMetadataValue] = {
        "trials": dg.MetadataValue.md(f"```\n{format_trials(result)}\n```"),
        "result": dg.MetadataValue.json(out),
        "best_settings": dg.MetadataValue.json(best["settings"]),
        f"best_tune_{result.metric}": best["tune"][result.metric],
        f"best_check_{result.metric}": best["check"][result.metric],
        "ingestion_keys_left_to_the_cli": dg.MetadataValue.json(sorted(ingestion)),
    }
    return dg.Output(None, metadata=meta)


@dg.job(name="tune", executor_def=dg.in_process_executor,
        description="Search query-time retrieval settings on the eval set (as `bindery tune`).")
def tune_job() -> None:
    tune_settings()
