"""`bindery tune` across ingestion settings: one generation per distinct chunking/prefix/embedding
setting, query-time trials on each (`evals.tune.run_tune`), one table.

The space's keys split in two (`evals.tune.split_space`): ingestion keys (``stages.chunk.*``,
``stages.context.*``, ``stages.embed.*``) and query-time keys. The ingestion settings are tried in
the seeded trial order, the configuration as it stands first: served by the live generation
when live was built with these stage settings, built like the others when not (`bindery status`
shows that drift as `live_outdated`; live would measure settings the table does not name). Every
other setting is built as a candidate generation by the ordinary `reindex` job from a
trial configuration (written under ``data_dir/tune/``), so it re-uses every cached parse, chunk,
prefix and embedding and computes only what the setting changes; the store rows it added are
counted on that setting's first trial (``parsed``/``embedded``). The query-time trials then run
on it. The budget (trials or minutes) covers the whole search.

A trial generation is dropped once judged (its indexes; the caches it filled stay). With ``build``,
the best ingestion setting is built once more at the end (from those caches: index writes only)
and left as the building candidate, with its trial configuration recorded, for the normal gate
(`bindery promote`); nothing is built when live, as the configuration stands, is best. A
candidate that exists before tuning is refused rather than superseded: it is someone's reindex
(`bindery discard` drops it). A trial interrupted while it builds is dropped like a judged one.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from connectors.config import BinderyConfig, load_config
from connectors.errors import BinderyError, BindingError
from connectors.identity import short_hash
from connectors.lifecycle import Generation, Lifecycle
from connectors.store import DocumentStore, GenerationRecord
from evals.tune import (
    DEFAULT_SPACE,
    Budget,
    Trial,
    TuneResult,
    apply_settings,
    parse_budget,
    run_tune,
    split_space,
    store_rows,
    trial_settings,
    tuning_split,
)
from orchestration.source_locks import HeldSources, launched_by

__all__ = ["TrialBuildFailed", "candidate_in_the_way", "ran_during_tune", "tune_generations", "tune_query_time"]


class TrialBuildFailed(BinderyError):
    """The reindex of one ingestion setting failed; its candidate was dropped."""


def tune_generations(cfg: BinderyConfig, store: DocumentStore, live: GenerationRecord, *, build: bool = False,
                     budget: Budget | None = None, seed: int | None = None,
                     queries: str | None = None) -> tuple[TuneResult, GenerationRecord | None]:
    """Run the search (module docstring); returns the result and, with `build`, the candidate
    generation row left for the gate (None when the configuration as it stands is best)."""
    ingest, query_space = split_space(cfg.tune.space or DEFAULT_SPACE)
    seed = cfg.tune.seed if seed is None else seed
    budget = budget or parse_budget(cfg.tune.budget)
    settings, skipped = trial_settings(cfg, ingest, seed, ingestion=True)
    tuning_split(cfg, store.documents(), queries, seed)  # the eval set's mistakes before any build
    lifecycle = Lifecycle(cfg, store)
    # live built with other stage settings cannot stand for the configuration: trial 0 is built too
    drift = lifecycle.config_drift()
    if (len(settings) > 1 or drift) and (cand := lifecycle.building()) is not None:
        raise BindingError(candidate_in_the_way(cand.record))
    trials: list[Trial] = []
    warnings: dict[str, None] = {}  # each once, in order: every trial generation repeats them
    if skipped:
        warnings[skipped] = None
    if drift:
        warnings[_drifted(live, drift, "trial 0, the configuration as it stands, was built instead of "
                                       "measured on it")] = None
    best: tuple[int, int] | None = None  # (index into trials, index into settings)
    result: TuneResult | None = None
    started = time.perf_counter()
    for n, ing in enumerate(settings):
        left = _left(budget, len(trials), time.perf_counter() - started, len(settings) - n)
        if left is None:
            break
        on_live = n == 0 and not drift
        gen, gcfg, cost = (live, cfg, (0, 0, 0.0)) if on_live else _build(cfg, store, ing)
        try:
            result = run_tune(gcfg, store, gen, space=query_space, budget=left, seed=seed, queries=queries)
        finally:
            if not on_live:  # judged: its caches stay, its indexes go (a --build rebuilds the best from them)
                lifecycle.drop_candidate(gen, reason="tune: trial generation judged")
        warnings.update(dict.fromkeys(result.warnings))
        first = len(trials)
        for i, tr in enumerate(result.trials):
            extra = cost if i == 0 else (0, 0, 0.0)
            trials.append(replace(tr, settings={**ing, **tr.settings}, parsed=tr.parsed + extra[0],
                                  embedded=tr.embedded + extra[1], seconds=tr.seconds + extra[2]))
        if best is None or _key(trials[first + result.best], cfg) > _key(trials[best[0]], cfg):
            best = (first + result.best, n)
    assert best is not None and result is not None, "the configuration as it stands is always tried"
    kept = None
    if build and (best[1] > 0 or drift):  # every cached parse, chunk, prefix and embedding of it is there
        kept = _build(cfg, store, settings[best[1]])[0]
        store.add_event("tune-candidate", f"tune built candidate {kept.name} from {settings[best[1]]}",
                        details={"settings": trials[best[0]].settings})
    out = TuneResult(trials, best[0], cfg.gate.metric, cfg.gate.secondary_metric, result.split, list(warnings))
    return out, kept


def tune_query_time(cfg: BinderyConfig, store: DocumentStore, gen: GenerationRecord, **kw: Any) -> TuneResult:
    """`run_tune` on one generation (query-time trials only; `kw` as run_tune's), warning first
    when it is a live generation built with other stage settings than the configuration's: the
    trials measure it as built, which the table's settings do not say."""
    result = run_tune(cfg, store, gen, **kw)
    drift = Lifecycle(cfg, store).config_drift() if gen.status == "live" else []
    if drift:
        result.warnings.insert(0, _drifted(gen, drift, "these trials measure it as built"))
    return result


def _drifted(live: GenerationRecord, drift: list[str], so: str) -> str:
    return (f"live generation {live.name} was built with other {', '.join(drift)} settings than the "
            f"configuration's: {so}")


def ran_during_tune(held: HeldSources) -> list[str]:
    """A warning for each run that wrote the tuned sources while the trials ran (`HeldSources`:
    one the daemon started, which the source locks cannot hold back)."""
    return [f"{r.job_name} run {r.run_id[:8]} of source {r.tags.get('dagster/partition')!r} (launched by "
            f"{launched_by(r.tags)}) ran during the tune: the trials measured different states of the corpus; "
            "run the tune again" for r in held.runs_beside()]


def candidate_in_the_way(cand: GenerationRecord) -> str:
    """Why tune cannot build its trials while `cand` exists, and the two ways out."""
    verdict = cand.eval_report or {}
    state = ("refused by the gate" if verdict.get("passed") is False else "judged" if verdict
             else "built, not judged yet" if cand.published_at else "being built")
    return (f"candidate generation {cand.name} exists ({state}): promote it (`bindery promote`) or drop it "
            "(`bindery discard`) before tuning ingestion settings (tune builds its own candidates)")


def _key(tr: Trial, cfg: BinderyConfig) -> tuple[float, float]:
    return tr.tune[cfg.gate.metric], tr.tune[cfg.gate.secondary_metric]


def _left(budget: Budget, done: int, elapsed: float, settings_left: int) -> Budget | None:
    """This ingestion setting's share of what is left of the budget; None when it is spent."""
    if budget.exhausted(done, elapsed):
        return None
    if budget.trials is not None:
        return Budget(trials=max(1, (budget.trials - done) // settings_left))
    assert budget.seconds is not None
    return Budget(seconds=max(1.0, (budget.seconds - elapsed) / settings_left))


def _build(cfg: BinderyConfig, store: DocumentStore, ing: dict[str, Any]) -> tuple[
        GenerationRecord, BinderyConfig, tuple[int, int, float]]:
    """Reindex one ingestion setting into a candidate; (its row, its configuration, (parse rows,
    embedding rows, seconds) it added)."""
    from connectors.shards import all_partition_keys
    from orchestration.runs import Runner
    from orchestration.summaries import errors_line, sync_summary

    tcfg = _trial_config(cfg, ing)
    cand: Generation = Lifecycle(tcfg, store).ensure_candidate()
    before, t0 = store_rows(store), time.perf_counter()
    try:
        # a sharded source runs as its shards' partitions, as `bindery reindex` runs it (its bare
        # name is no partition: Dagster refused it, an internal error)
        outcomes, seconds = Runner(tcfg).run_sources("reindex", all_partition_keys(tcfg),
                                                     tags={"bindery/candidate": cand.name, "bindery/tune": "1"})
    except BaseException as e:  # Ctrl-C mid-build: a half-built trial must not be left as someone's candidate
        why = "interrupted while building it" if isinstance(e, KeyboardInterrupt) else "its reindex failed"
        Lifecycle(cfg, store).drop_candidate(cand.record, reason=f"tune: {why}")
        raise
    summary = sync_summary(outcomes, seconds, store, tcfg.source_names())
    if summary["errors"]:
        Lifecycle(cfg, store).drop_candidate(cand.record, reason="tune: its reindex failed")
        raise TrialBuildFailed(f"tune: building {ing} failed: " +
                               errors_line(summary["errors"]))
    after = store_rows(store)
    row = store.get_generation(cand.id)
    assert row is not None
    return row, tcfg, (after[0] - before[0], after[1] - before[1], time.perf_counter() - t0)


TRIAL_CONFIGS_KEPT_S = 3600  # `gc` leaves younger trial files alone: a tune may be building from them


def remove_trial_configs(cfg: BinderyConfig, *, older_than_s: float = TRIAL_CONFIGS_KEPT_S) -> int:
    """Delete the trial configurations `bindery tune` wrote under data_dir/tune/ (one per
    ingestion setting tried) that are older than `older_than_s`; how many went. A trial's
    generation keeps its stage settings in the store, so nothing reads the file once the
    trial's reindex has run; without this they piled up, one per setting ever tried."""
    folder = cfg.data_path / "tune"
    cutoff = time.time() - older_than_s
    removed = 0
    for path in folder.glob("trial-*.yaml") if folder.is_dir() else ():
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # another gc took it
            continue
    return removed


def _trial_config(cfg: BinderyConfig, ing: dict[str, Any]) -> BinderyConfig:
    """The configuration with `ing` applied, written under data_dir/tune/ (the reindex job loads
    its configuration from a file) and loaded back from there."""
    tcfg = apply_settings(cfg, ing, ingestion=True)
    folder = cfg.data_path / "tune"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"trial-{short_hash(ing, 12)}.yaml"
    data = tcfg.model_dump(mode="json", exclude={"config_path"})
    path.write_text("# written by `bindery tune` for one trial generation; safe to delete\n" +
                    yaml.safe_dump(data, sort_keys=False))
    return load_config(Path(path))


