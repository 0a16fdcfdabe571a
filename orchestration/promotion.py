"""The generation-level assets: judge the candidate, then flip the binding.

    generation (the index step's record of each build) -> generation_eval [check eval_gate, blocking]
      -> index_binding

All three are partitioned by generation (`GENERATIONS`, one dynamic partition per generation
name), and a `promote` run is a run of the candidate's partition: each generation's builds, eval
reports, gate verdicts and flips are its own in the UI. `generation_eval` runs the eval set on live
and candidate (evals.promotion.judge) and stores the paired report on the candidate. The blocking
`eval_gate` check fails when the gate refuses, so `index_binding` (the flip, `Lifecycle.promote`
through evals.promotion.promote) does not run. A forced promotion shows as a failed WARN check on
the generation it forced, with who and why recorded.
"""


import warnings
from collections.abc import Iterator
from typing import Any

import dagster as dg

from assets.pipeline import GENERATION, GENERATIONS, check_run
from assets.resources import BinderyConfigResource, DocumentStoreResource
from connectors.errors import BindingError, ConfigError, GateRefused, UsageError
from connectors.lifecycle import Lifecycle, operator_name
from connectors.store import DocumentStore
from evals.gate import GateReport, format_gate
from evals.promotion import judge, promote

GROUP = "generations"


class PromotionConfig(dg.Config):  # the candidate is the run's partition: a generation name
    force: bool = False
    reason: str | None = None
    forced_by: str | None = None


def _who(context: dg.AssetExecutionContext, config: PromotionConfig) -> str:
    """Who a forced flip is recorded as (the same in the check, the store and the binding)."""
    return config.forced_by or f"dagster-run:{context.run_id[:8]}"


# partitions_def: each verdict is recorded on the partition of the generation it judged (a
# "preview" option, as for parse_quality in assets/pipeline.py: its warning is silenced here only).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)
    EVAL_GATE = dg.AssetCheckSpec("eval_gate", asset="generation_eval", blocking=True, partitions_def=GENERATIONS,
                                  description="Refuses a candidate that is worse than live on the eval set")


@dg.asset(group_name=GROUP, partitions_def=GENERATIONS, deps=[GENERATION], kinds={"python"},
          check_specs=[EVAL_GATE],
          description="Eval set run on live and this generation (the candidate), compared paired per query.")
def generation_eval(context: dg.AssetExecutionContext, config: PromotionConfig,
                    bindery: BinderyConfigResource, store: DocumentStoreResource
                    ) -> Iterator[dg.MaterializeResult[Any] | dg.AssetCheckResult]:
    check_run(context, bindery.config)
    cfg, lifecycle = bindery.config, Lifecycle(bindery.config, store.store)
    cand = lifecycle.resolve(context.partition_key)
    try:  # launched from the UI on the live or a dropped generation: refused, and nothing recorded
        lifecycle.check_promotable(cand, force=config.force, reason=config.reason)
        operator_name(_who(context, config))  # before judging: the store keeps 128 characters
    except (BindingError, UsageError) as e:
        raise dg.Failure(str(e)) from None
    report: GateReport | None
    try:
        report = judge(cfg, store.store, cand)
    except ConfigError as e:  # e.g. no eval set: only a forced promotion may go on
        if not config.force:
            raise
        verdict: dict[str, Any] = {"passed": False, "reasons": [f"gate not run: {e}"]}
        lifecycle.record_verdict(cand.id, verdict)
        report = None
    else:
        verdict = report.to_json()
    meta: dict[str, Any] = {"candidate": cand.name, "passed": verdict["passed"],
                            "report": dg.MetadataValue.json(verdict)}
    if report is not None:
        meta["summary"] = dg.MetadataValue.md(f"```\n{format_gate(report)}\n```")
    for side in ("live", "candidate"):
        for m, v in (verdict.get(side) or {}).items():
            meta[f"{side}_{m}"] = float(v)
    yield dg.MaterializeResult(metadata=meta)
    if not verdict["passed"] and not config.force:
        # the blocking check below stops the flip before `Lifecycle.promote` would record it:
        # the refusal is an event here, or status's recent events never showed one
        store.store.add_event("gate-refused", f"candidate {cand.name} refused: {'; '.join(verdict['reasons'])}",
                              details=verdict)
    forced = config.force and not verdict["passed"]
    if forced and not config.reason:
        raise dg.Failure("a forced promotion needs a reason")
    # A forced promotion is a failed gate the operator overrode: it shows as a failed check of
    # WARN severity (which does not block the flip), never as a green pass, with who and why.
    yield dg.AssetCheckResult(
        passed=bool(verdict["passed"]),
        severity=dg.AssetCheckSeverity.WARN if forced else dg.AssetCheckSeverity.ERROR,
        description=("FORCED by {}: {} (gate: {})".format(_who(context, config), config.reason,
                                                          "; ".join(verdict["reasons"])) if forced
                     else "; ".join(verdict["reasons"])),
        metadata={"regressed": len(verdict.get("regressed", [])), "improved": len(verdict.get("improved", [])),
                  "forced": forced, "forced_by": _who(context, config) if forced else "",
                  "forced_reason": (config.reason or "") if forced else "", "candidate": cand.name},
    )


@dg.asset(group_name=GROUP, partitions_def=GENERATIONS, deps=[generation_eval], kinds={"python"},
          description="The live binding, one partition per generation bound: one transaction moves generation, "
                      "indexes and embedder id together.")
def index_binding(context: dg.AssetExecutionContext, config: PromotionConfig, bindery: BinderyConfigResource,
                  store: DocumentStoreResource) -> dg.MaterializeResult[Any]:
    check_run(context, bindery.config)
    lifecycle = Lifecycle(bindery.config, store.store)
    cand = lifecycle.resolve(context.partition_key)
    verdict = cand.eval_report or {}
    by = _who(context, config)
    try:  # first: the live or a retired generation can never be flipped to, whatever its verdict says
        lifecycle.check_promotable(cand, force=config.force, reason=config.reason)
    except (BindingError, UsageError) as e:
        raise dg.Failure(str(e)) from None
    # materialised alone from the asset graph: the flip goes on the verdict generation_eval stored,
    # judged against the generation live now; judging here would leave no eval_gate check to see
    again = ("launch the promote job on this partition (generation_eval judges it against live, then "
             "index_binding flips)")
    if not verdict:
        raise dg.Failure(f"generation {cand.name} has not been judged: {again}")
    binding = store.store.get_binding()
    judged, live = verdict.get("live_generation"), binding.generation_id if binding is not None else None
    if live is not None and judged != live and not config.force:  # a forced run may flip on a gate not run
        against = f"against generation {judged}" if judged is not None else "with no generation live"
        raise dg.Failure(f"generation {cand.name}'s gate verdict was judged {against}, and generation {live} is "
                         f"live now: {again}")
    try:
        out = promote(bindery.config, store.store, candidate_id=cand.id, force=config.force, reason=config.reason,
                      by=by, verdict=verdict)
    except GateRefused as e:
        raise dg.Failure(str(e), metadata={"report": dg.MetadataValue.json(e.report)}) from e
    except BindingError as e:  # the binding moved between the checks above and the flip
        raise dg.Failure(str(e)) from None
    forced = bool(out["forced"])
    return dg.MaterializeResult(metadata={"live": out["live"], "previous": out["previous"] or -1, "forced": forced,
                                          "forced_by": by if forced else "",
                                          "forced_reason": (config.reason or "") if forced else "",
                                          # what the flip took out of search (an older generation)
                                          "warnings": dg.MetadataValue.json(list(out.get("warnings") or []))})


def rollback_materialization(store: DocumentStore, flip: dict[str, Any]) -> dg.AssetMaterialization:
    """A rollback (`Lifecycle.rollback`'s `flip`) as a materialisation of `index_binding` on the
    partition of the generation it made live, with a promotion's metadata and `rollback: true`:
    the UI showed the binding of the last promotion as live after a rollback (an operator pass).
    The `rollback` job logs it; the CLI, which runs no job, reports it to the instance."""
    report = flip.get("report") or {}
    live = store.get_generation(flip["live"])
    return dg.AssetMaterialization(
        asset_key=index_binding.key, partition=live.name if live is not None else str(flip["live"]),
        description=f"rolled back from generation {report.get('from')} by {report.get('by')}",
        metadata={"live": flip["live"], "previous": flip["previous"] or -1, "forced": False, "rollback": True,
                  "rolled_back_by": str(report.get("by") or ""),
                  "warnings": dg.MetadataValue.json(list(flip.get("warnings") or []))})


PROMOTION_ASSETS = [generation_eval, index_binding]
