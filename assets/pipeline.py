"""The per-source stage assets, as Dagster software-defined assets.

    source_listing -> parsed_documents [check parse_quality, blocking] -> chunks
      -> contextual_prefixes -> embeddings -> vector_index + keyword_index (the live index)
                                           -> generation (one partition per generation)

Every stage asset is partitioned by source (dynamic partitions, one per configured source, never
per document). The data lives in the document store and the indexes; each asset returns what it
did — counts, cache hits, timings, its stage versions — as materialisation metadata. Which
generations a run writes to comes from the run tag `bindery/target`: absent for a sync (live +
any building candidate), `candidate` for a reindex (`connectors.lifecycle` decides). Each asset
names the resources it reaches outside systems through (`assets/resources.py`).

`vector_index` and `keyword_index` are the *live* index of a source: the index step materialises
them only when it wrote the live generation, so a reindex (which writes only the candidate) never
makes a stale live index look fresh. Every generation has its own history on `generation` (dynamic
partitions, one per generation name): the index step records a materialisation on the partition
of each generation it wrote, and of each other retained generation it changed (deletes and access
changes), with that generation's own counts; the promotion assets (orchestration/promotion.py) are
partitioned the same way.
"""


import contextlib
import hashlib
import statistics
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from assets.chunk_stage import run_chunk
from assets.context_stage import run_context
from assets.embed_stage import run_embed
from assets.index_stage import IndexStats, run_index, settle_access, unindexed_reason
from assets.listing import run_listing
from assets.parse_quality import verdict_for
from assets.parse_stage import ParseStats, run_parse
from assets.progress import LogSink, StageProgress
from assets.resources import (
    BinderyConfigResource,
    ContextualiserResource,
    DocumentStoreResource,
    EmbedderResource,
    KeywordIndexResource,
    VectorIndexResource,
    runtime,
)
from assets.run_overlap import wait_for_earlier_runs
from assets.runtime import Generation, Runtime, Target
from connectors.config import BinderyConfig
from connectors.errors import BinderyError, ConfigError, out_of_space
from connectors.shards import ShardStore, parse_key

SOURCES = dg.DynamicPartitionsDefinition(name="sources")
GENERATIONS = dg.DynamicPartitionsDefinition(name="generations")  # one partition per generation name
TARGET_TAG = "bindery/target"
CANDIDATE_TAG = "bindery/candidate"  # set by `bindery reindex` and `tune`: the candidate they made
FORCE_TAG = "bindery/force"  # on a reindex launched from the UI: rebuild an unchanged configuration
GROUP = "ingestion"
# The index assets are stale when no sync reached them for a day (the reconcile schedule runs
# daily); the UI shows WARN after 12 hours and FAIL after 24.
INDEX_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=24), warn_window=timedelta(hours=12))


class ListingConfig(dg.Config):
    allow_mass_delete: bool = False  # operator override for a listing that shrank suspiciously


@contextmanager
def _failures_recorded(rt: Runtime, source: str, stage: str) -> Iterator[None]:
    """A stage that raises leaves its reason on the source row (`bindery status` shows it);
    the next good listing clears it. So does an interrupt (Ctrl-C, a run terminated from the
    UI): `status` showed such a source as if nothing had happened. Bindery's own errors (a
    source that is down, a store that refuses, bad configuration) end the step as a Dagster
    `Failure` whose description is the one-line reason, so the UI shows that line, not a
    stack of Dagster wrappers; anything else keeps its traceback there."""
    try:
        yield
    except dg.Failure:
        raise  # a refusal on purpose (an idle reindex), not the source's failure
    except BinderyError as e:  # its message is the reason, as the CLI prints it; no class name
        rt.store.set_source_error(source, f"{stage}: {e}"[:2000])
        raise _one_line(e, stage=stage) from e
    except Exception as e:
        if full := out_of_space(e, str(rt.cfg.data_path)):  # one line, not pages of SQL
            with contextlib.suppress(Exception):  # the store may not take even this row
                rt.store.set_source_error(source, f"{stage}: {full}")
            raise dg.Failure(description=f"{stage}: {full}") from e
        rt.store.set_source_error(source, f"{stage}: {type(e).__name__}: {e}"[:2000])
        raise
    except (KeyboardInterrupt, dg.DagsterExecutionInterruptedError):
        rt.store.set_source_error(source, f"{stage}: interrupted; the next sync resumes from what was stored")
        raise


@contextmanager
def one_line_failures() -> Iterator[None]:
    """For the ops that are not a source's stage (plan, tune): Bindery's own errors end the
    step as a `Failure` with the one-line reason the CLI prints, not Dagster's wrappers."""
    try:
        yield
    except BinderyError as e:
        raise _one_line(e) from e


def _one_line(e: BinderyError, **metadata: str) -> dg.Failure:
    """The step failure for one of Bindery's own errors: its one-line reason as the description."""
    return dg.Failure(description=str(e) or type(e).__name__, metadata={**metadata, "error": type(e).__name__})


def source_partition(context: dg.AssetExecutionContext) -> str:
    """The run's `sources` partition key; a run launched without one (the UI's launchpad allows
    it) fails with one line naming what to choose, not Dagster's "Cannot access partition_key
    for a non-partitioned run" (a UI pass)."""
    if not context.has_partition_key:
        raise dg.Failure(description="this job runs for one partition of `sources`: launch it choosing a source "
                                     "(one partition per configured source)")
    return str(context.partition_key)


def _scoped(context: dg.AssetExecutionContext, rt: Runtime) -> tuple[Runtime, str]:
    """The runtime a stage works through and the source it works on: for a shard partition
    (connectors.shards) a runtime whose store picks only the shard's documents."""
    source, shard = parse_key(source_partition(context))
    if shard is None:
        return rt, source
    return rt.scoped(ShardStore(rt.store, shard)), source


def _targets(context: dg.AssetExecutionContext, rt: Runtime) -> list[Generation]:
    """The generations this run writes (connectors.lifecycle): the tag `bindery/target` says
    whether it is a sync or a reindex."""
    target: Target = "candidate" if context.run.tags.get(TARGET_TAG) == "candidate" else "sync"
    start_source_step(context, rt.cfg)
    _refuse_idle_reindex(context, rt)
    return rt.lifecycle.targets(target)


def _refuse_idle_reindex(context: dg.AssetExecutionContext, rt: Runtime, *, first_step: bool = False) -> None:
    """A reindex launched from the UI (the CLI names the candidate it checked for) of an
    unchanged configuration would build a copy of the live generation, and block the next real
    one, as `bindery reindex` without --force refuses to: it fails at once, before its listing
    changes anything (it listed first, and a file deleted meanwhile left the store only)."""
    tags = context.run.tags
    reindex = tags.get(TARGET_TAG) == "candidate"
    # the tag's value counts, not its presence: `bindery/force=false` was taken as a force
    forced = tags.get(FORCE_TAG, "").strip().lower() in ("true", "1", "yes")
    if not reindex or CANDIDATE_TAG in tags or not (nothing := rt.lifecycle.nothing_to_reindex()):
        return
    if not forced:
        raise dg.Failure(description=f"{nothing}; add the run tag {FORCE_TAG}=true to rebuild anyway")
    if first_step:  # recorded once per run, as `bindery reindex --force` records it
        rt.store.add_event("forced-rebuild", f"run {context.run.run_id[:8]} rebuilt an identical candidate "
                                             f"({FORCE_TAG}={tags[FORCE_TAG]})")


def _progress(context: dg.AssetExecutionContext, stage: str, unit: str) -> StageProgress:
    """Counts from the stage function, every 10 s in the step's log (and wherever the process
    asked for them: the CLI's terminal)."""
    src = context.partition_key
    return StageProgress(stage, src, unit, sinks=[LogSink(context.log.info, stage, src, unit)])


def _meta(stats: Any, gens: list[Generation], stage: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {k: v for k, v in asdict(stats).items() if isinstance(v, (int, float, str))}
    if stage:
        d["stage_versions"] = dg.MetadataValue.json({g.name: g.versions[stage] for g in gens})
    d["generations"] = ", ".join(g.name for g in gens)
    return d


SUBMITTED_CONFIG_TAG = "bindery/config"  # the --config of `bindery sync --submit`, as it was named
SUBMITTED_DIGEST_TAG = "bindery/config-sha256"  # ... and what that file held


def config_digest(path: str) -> str:
    """sha256 of a configuration file's bytes: what a submitted run compares (the same file
    mounted at another path on a worker is the same configuration; another file is not)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_run(context: dg.AssetExecutionContext | dg.OpExecutionContext, cfg: BinderyConfig) -> None:
    """What every step checks of the run it belongs to: the configuration it was started with
    (`same_configuration`; a refusal is the run's one-line Failure, not the source's error). A
    re-execution of a CLI run inherits the CLI's tags, pid included: it is retagged as the UI's,
    which the UI's run list then shows too."""
    tags = context.run.tags
    if "dagster/parent_run_id" in tags and tags.get("bindery/launched-by") in ("cli", "cli-submit"):
        context.instance.add_run_tags(context.run_id, {"bindery/launched-by": "ui", "bindery/pid": ""})
    with one_line_failures():
        same_configuration(tags, cfg)


def start_source_step(context: dg.AssetExecutionContext, cfg: BinderyConfig) -> str:
    """What a step of a source's stages does first: `check_run`, then wait for the runs of
    another sharding of the source that started before this one (`run_overlap`). Returns the
    run's partition key."""
    check_run(context, cfg)
    key = source_partition(context)
    if waited := wait_for_earlier_runs(context, key):
        context.log.info(f"waited {waited:.0f} s for the runs of another sharding of this source")
    return key


def same_configuration(tags: Mapping[str, str], cfg: BinderyConfig) -> None:
    """A run `bindery ... --submit` queued executes in the daemon's code location, which reads
    the daemon's `BINDERY_CONFIG`, not the submitting command's `--config`: an audit submitted
    with one file and the run silently used another's sources and endpoints. Refused instead,
    when the two files' contents differ (not their paths: a worker mounts the file elsewhere).
    Every step checks, not only the first: a re-execution from a failed step (the UI's, of a
    CLI run too) starts past the listing."""
    digest = tags.get(SUBMITTED_DIGEST_TAG)
    if not digest or not cfg.config_path:
        return
    # what this run's code location loaded, not the file now: an edit while a run goes on is the next run's
    if digest == (cfg.loaded_digest or config_digest(cfg.config_path)):
        return
    started_with = tags.get(SUBMITTED_CONFIG_TAG)
    if started_with == cfg.config_path:
        raise ConfigError(
            f"{cfg.config_path} was edited after this run was started; it does not run under contents it was "
            "not started with: start a new run (`bindery sync`, or launch it in the UI)")
    raise ConfigError(
        f"this run was started with --config {started_with}, but the code location running it reads "
        f"{cfg.config_path}, whose contents differ (BINDERY_CONFIG where the Dagster daemon or `bindery ui` "
        "was started): start the daemon with that configuration, or start the run with the one it runs")


@dg.asset(partitions_def=SOURCES, group_name=GROUP, kinds={"python"},
          description="Lists the source and classifies every item; the safe delete sweep lives here.")
def source_listing(context: dg.AssetExecutionContext, config: ListingConfig, bindery: BinderyConfigResource,
                   store: DocumentStoreResource, vector_index: VectorIndexResource,
                   keyword_index: KeywordIndexResource) -> dg.MaterializeResult[Any]:
    key = start_source_step(context, bindery.config)
    # the indexes: a listing that narrows access and then stops (a refused delete sweep, an
    # unreadable ACL file) writes the narrowed ACLs into them itself (`listing_access.restrict`)
    rt = runtime(bindery, store, vector_index=vector_index, keyword_index=keyword_index)
    _refuse_idle_reindex(context, rt, first_step=True)
    source, shard = parse_key(key)
    with _failures_recorded(rt, source, "listing"):
        res = run_listing(rt, source, allow_mass_delete=config.allow_mass_delete, shard=shard)
    return dg.MaterializeResult(metadata={
        "listed": res.listed, **{f"docs_{k}": v for k, v in res.counts.items()},
        "seconds": round(res.seconds, 3), **_listing_failures(context, res.failures),
    })


LISTING_FAILURES_SHOWN = 20


def _listing_failures(context: dg.AssetExecutionContext, failures: list[tuple[str, str, str]]) -> dict[str, Any]:
    """The items this listing could not list or read (a broken symlink, a FIFO, a name that is
    not UTF-8, a read refused), by path and reason, in the step's metadata and log: the UI
    showed only their number, and `bindery dlq` was the one place that named them (a UI pass)."""
    if not failures:
        return {}
    shown = [{"path": path, "reason": reason, "error": error[:300]}
             for path, reason, error in failures[:LISTING_FAILURES_SHOWN]]
    names = ", ".join(f"{f['path']} ({f['reason']})" for f in shown[:5])
    more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
    n = len(failures)
    context.log.warning(f"{context.partition_key}: {n} item{'s' if n != 1 else ''} could not be listed or read: "
                        f"{names}{more} (dead letters: `bindery dlq`)")
    return {"failed_items": dg.MetadataValue.json(shown)}


def parse_quality_verdict(stats: ParseStats, rt: Runtime, source: str, gens: list[Generation]) -> dg.AssetCheckResult:
    """The blocking check (assets.parse_quality): judged from the store's state against a
    statistical floor, so one bad file never sinks a small sync and a re-run judges the same."""
    verdict = verdict_for(rt, source, gens)
    meta: dict[str, Any] = {k: (dg.MetadataValue.json(v) if isinstance(v, list) else v)
                            for k, v in verdict.metadata.items()}
    # `failed` and `reasons` (the verdict's) count the judged documents (`judged_docs`: the batch or
    # the whole population); this run's own parses are apart, named so (an unlabelled `attempted: 2`
    # beside `failed: 3` read as a contradiction in the UI)
    meta.update(parsed_this_run=stats.attempted, reasons=dg.MetadataValue.json(verdict.metadata["reasons"]),
                reasons_this_run=dg.MetadataValue.json(stats.reasons))
    warn = [verdict.description] if verdict.description else []
    if stats.metrics_rows:
        from quality.expectations import validate_batch

        gx = validate_batch(stats.metrics_rows, rt.cfg.source(source).quality)
        meta["great_expectations"] = dg.MetadataValue.json(gx)
        if not gx.get("success", True):
            warn.append("Great Expectations suite reported unexpected documents")
    if verdict.severity == "error":
        rt.store.set_source_error(source, f"parse_quality: {verdict.description}")
        # the index step will not run: what the listing deleted or re-permissioned reaches the
        # indexes here, so store and indexes still agree (`bindery verify`); a failure to write
        # them is an event (`apply_access`), and the verdict stays the run's outcome
        settle_access(rt, source)
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR,
                                   description=verdict.description, metadata=meta)
    if warn:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.WARN,
                                   description="; ".join(warn), metadata=meta)
    return dg.AssetCheckResult(passed=True, metadata=meta)


# partitions_def: each evaluation records its source (or shard) partition, so the UI shows
# which partition a verdict is about. Dagster marks the option "preview" and warns on every
# import (every CLI command would print it); the warning is silenced here only.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)
    PARSE_QUALITY = dg.AssetCheckSpec("parse_quality", asset="parsed_documents", blocking=True,
                                      partitions_def=SOURCES,
                                      description="Blocks downstream when the failure share or metric drift "
                                                  "of the unjudged parses (or, below quality.min_batch, of "
                                                  "the whole source) crosses the source's thresholds")


@dg.asset(partitions_def=SOURCES, group_name=GROUP, kinds={"python"}, deps=[source_listing],
          check_specs=[PARSE_QUALITY],
          description="Structured blocks + quality metrics per document; failures go to the dead-letter table.")
def parsed_documents(context: dg.AssetExecutionContext, bindery: BinderyConfigResource,
                     store: DocumentStoreResource, vector_index: VectorIndexResource,
                     keyword_index: KeywordIndexResource) -> Iterator[dg.MaterializeResult[Any] | dg.AssetCheckResult]:
    # the indexes: a run the parse-quality check blocks still carries its deletes into them
    rt, src = _scoped(context, runtime(bindery, store, vector_index=vector_index, keyword_index=keyword_index))
    with _failures_recorded(rt, src, "parse"), \
            _progress(context, "parse", "documents") as progress:
        gens = _targets(context, rt)  # inside: a store that refuses the generation row is the source's error too
        stats = run_parse(rt, src, gens, progress=progress)
    meta = _meta(stats, gens, "parse")
    meta["reasons"] = dg.MetadataValue.json(stats.reasons)
    if stats.warnings:
        meta["warnings"] = dg.MetadataValue.json(stats.warnings)
    if stats.metrics_rows:
        for key in ("alnum_share", "word_share", "empty_page_share", "chars_per_page"):
            vals = [r[key] for r in stats.metrics_rows if key in r]
            if vals:
                meta[f"mean_{key}"] = round(statistics.mean(vals), 4)
    yield dg.MaterializeResult(metadata=meta)
    yield parse_quality_verdict(stats, rt, src, gens)


@dg.asset(partitions_def=SOURCES, group_name=GROUP, kinds={"python"}, deps=[parsed_documents],
          description="Structure-aware chunks cut from stored parses (never re-parses).")
def chunks(context: dg.AssetExecutionContext, bindery: BinderyConfigResource,
           store: DocumentStoreResource) -> dg.MaterializeResult[Any]:
    rt, src = _scoped(context, runtime(bindery, store))
    with _failures_recorded(rt, src, "chunk"), \
            _progress(context, "chunk", "documents") as progress:
        gens = _targets(context, rt)  # inside: a store that refuses the generation row is the source's error too
        stats = run_chunk(rt, src, gens, progress=progress)
    return dg.MaterializeResult(metadata=_meta(stats, gens, "chunk"))


@dg.asset(partitions_def=SOURCES, group_name=GROUP, kinds={"python"}, deps=[chunks],
          description="Contextual prefixes per chunk, cached by content and context version.")
def contextual_prefixes(context: dg.AssetExecutionContext, bindery: BinderyConfigResource,
                        store: DocumentStoreResource, contextualiser: ContextualiserResource
                        ) -> dg.MaterializeResult[Any]:
    rt, src = _scoped(context, runtime(bindery, store, contextualiser=contextualiser))
    with _failures_recorded(rt, src, "context"), \
            _progress(context, "context", "chunks") as progress:
        gens = _targets(context, rt)  # inside: a store that refuses the generation row is the source's error too
        stats = run_context(rt, src, gens, progress=progress)
    return dg.MaterializeResult(metadata=_meta(stats, gens, "context"))


@dg.asset(partitions_def=SOURCES, group_name=GROUP, kinds={"pytorch"}, deps=[contextual_prefixes],
          description="Vectors per (final chunk text, embedder id); the model loads only when needed.")
def embeddings(context: dg.AssetExecutionContext, bindery: BinderyConfigResource, store: DocumentStoreResource,
               embedder: EmbedderResource) -> dg.MaterializeResult[Any]:
    rt, src = _scoped(context, runtime(bindery, store, embedder=embedder))
    with _failures_recorded(rt, src, "embed"), \
            _progress(context, "embed", "texts") as progress:
        gens = _targets(context, rt)  # inside: a store that refuses the generation row is the source's error too
        stats = run_embed(rt, src, gens, progress=progress)
    meta = _meta(stats, gens, "embed")
    if stats.model_seconds:
        meta["texts_per_second"] = round(stats.embedded / stats.model_seconds, 1)
    return dg.MaterializeResult(metadata=meta)


# Each generation's own history: not computed by an asset of its own (a generation is built by
# the index step of every source partition), so an external asset whose materialisations the index
# step records, one per generation it wrote or changed. It depends on every source's embeddings.
GENERATION = dg.AssetSpec(
    "generation", partitions_def=GENERATIONS, group_name="generations", kinds={"qdrant", "tantivy"},
    deps=[dg.AssetDep(embeddings, partition_mapping=dg.AllPartitionMapping())],
    description="One generation's indexes, a partition per generation: each index step that wrote it (or "
                "applied deletes and access changes to it) records that generation's own counts, its source, "
                "its role (written or maintained) and whether it is live.")
BINDING = dg.AssetKey("index_binding")  # orchestration/promotion.py; the first binding is recorded here


def _record_generations(context: dg.AssetExecutionContext, stats: IndexStats, gens: list[Generation],
                        maintain: list[Generation], live: Generation | None, bound: str | None) -> None:
    """A materialisation on the `generation` partition of every generation this step wrote and of
    every maintained one it changed, each with its own counts; the first binding on `index_binding`."""
    # a generation the step did not write has no counts: dropped meanwhile (`bindery discard`),
    # or one only maintained whose index could not be opened (`IndexStats.unwritable`)
    done = stats.generations
    changed = [g for g in maintain if g.name in done
               and any(done[g.name][k] for k in ("written_docs", "deleted_docs", "revoked_docs"))]
    logged = [(g, "written") for g in gens if g.name in done] + [(g, "maintained") for g in changed]
    context.instance.add_dynamic_partitions(GENERATIONS.name or "generations", [g.name for g, _ in logged])
    for g, role in logged:
        is_live = live is not None and live.name == g.name
        context.log_event(dg.AssetMaterialization(
            asset_key=GENERATION.key, partition=g.name,
            description=f"{role} by the index step of {context.partition_key}" + (" (live)" if is_live else ""),
            metadata={**stats.generations[g.name], "source": context.partition_key, "role": role, "live": is_live}))
    if bound and live is not None:
        context.log_event(dg.AssetMaterialization(
            asset_key=BINDING, partition=bound, description=f"{bound} bound live: the first generation",
            metadata={"live": live.id, "previous": -1, "forced": False, "first_generation": True}))


def _record_candidate_built(context: dg.AssetExecutionContext, rt: Runtime, gens: list[Generation],
                            live: Generation | None) -> None:
    """A reindex launched from the UI, a schedule or a sensor (`bindery reindex` records its own
    once every source ran): the index step after which the candidate holds every partition the
    live generation serves records "candidate-built" once, as the CLI does (`status` lists it;
    only the CLI's were recorded)."""
    tags = context.run.tags
    if tags.get(TARGET_TAG) != "candidate" or CANDIDATE_TAG in tags or live is None:
        return
    for g in gens:  # once: another source's step may have completed it first
        if g.status == "building" and not rt.lifecycle.unbuilt_sources(g.record):
            rt.lifecycle.record_candidate_built(g.record, f"run {context.run.run_id[:8]}")


def _lags(stats: IndexStats) -> dict[str, float]:
    lags = sorted(stats.lag_seconds)
    if not lags:
        return {}
    return {"lag_p50_s": round(lags[len(lags) // 2], 2),
            "lag_p95_s": round(lags[min(len(lags) - 1, int(len(lags) * 0.95))], 2)}


@dg.multi_asset(
    partitions_def=SOURCES, group_name=GROUP,
    specs=[dg.AssetSpec("vector_index", deps=[embeddings], kinds={"qdrant"}, freshness_policy=INDEX_FRESHNESS,
                        skippable=True,
                        description="Dense index of the live generation for this source (Qdrant). Materialised "
                                    "by runs that write the live generation; a reindex builds only the candidate "
                                    "and records that on `generation`, never here."),
           dg.AssetSpec("keyword_index", deps=[embeddings], kinds={"tantivy"}, freshness_policy=INDEX_FRESHNESS,
                        skippable=True,
                        description="BM25 index of the live generation for this source (tantivy), same chunk "
                                    "ids; materialised together with `vector_index`.")],
)
def indexes(context: dg.AssetExecutionContext, bindery: BinderyConfigResource, store: DocumentStoreResource,
            vector_index: VectorIndexResource, keyword_index: KeywordIndexResource
            ) -> Iterator[dg.MaterializeResult[Any]]:
    """Both indexes are written in one step so they never disagree about a document, then a
    snapshot is published for the query service. On a fresh system the first generation is
    bound once its index is published (`Lifecycle.bind_first`): there is nothing to compare it with.

    Each generation written or changed gets its own `generation` record; `vector_index` and
    `keyword_index` (the live index) are materialised, with the live generation's counts, only
    when the live generation was written: a candidate-only run leaves them as they were."""
    rt, src = _scoped(context, runtime(bindery, store, vector_index=vector_index, keyword_index=keyword_index))
    with _failures_recorded(rt, src, "index"), \
            _progress(context, "index", "document writes") as progress:  # one per generation written
        gens = _targets(context, rt)
        maintain = rt.lifecycle.maintained(gens)  # access changes + deletes
        stats = run_index(rt, src, gens, maintain, progress=progress)
    bound = rt.lifecycle.bind_first(gens)
    live = rt.lifecycle.live()
    _record_generations(context, stats, gens, maintain, live, bound)
    _record_candidate_built(context, rt, gens, live)
    nothing = unindexed_reason(rt.store, src, live.id if live else None)
    wrote_live = live is not None and live.name in {g.name for g in gens}
    if nothing and (live is None or wrote_live):
        # the CLI's summary says so too; a run from the UI, a schedule or a sensor says it here
        rt.store.set_source_error(src, nothing)
        # an error, as the CLI reports the run: its terminal logger leaves errors to the CLI's own
        # one line (a warning was printed as well: the same reason twice, a lifecycle fuzz found)
        context.log.error(f"{context.partition_key}: {nothing}")
    elif wrote_live and not stats.waiting_docs:
        # the live index holds every document of the source it can (dead letters are `dlq`'s): an
        # earlier run's error no longer holds (only a listing cleared it, so a run re-executed
        # from its failed step kept it shown; then one whose source had a dead letter did)
        rt.store.set_source_error(src, None)
    damaged = [f"generation {name}'s index could not be opened, so this run's deletes and access changes did not "
               f"reach it: {why}; `bindery verify --repair` rebuilds it from the store"
               for name, why in stats.unwritable.items()]
    for line in damaged:
        rt.store.add_event("index-unwritable", line, source=src)
        context.log.warning(f"{context.partition_key}: {line}")
    if damaged:  # beside the reason set above, if any: one error row holds every line
        said = [nothing] if nothing and (live is None or wrote_live) else []
        rt.store.set_source_error(src, "; ".join(said + damaged))
    if live is None or not wrote_live:
        context.log.info(f"{context.partition_key}: the live index was not written (this run wrote "
                         f"{', '.join(g.name for g in gens)}): vector_index and keyword_index are not materialised")
        return
    meta: dict[str, Any] = {
        **stats.generations[live.name], "generation": live.name, "seconds": round(stats.seconds, 3),
        "per_generation": dg.MetadataValue.json(stats.generations), **_lags(stats),
    }
    if bound:
        meta["bound_first_generation"] = bound
    if damaged:
        meta["unwritable"] = "; ".join(damaged)  # the CLI's summary warns of it (`summaries.sync_summary`)
    yield dg.MaterializeResult(asset_key="vector_index", metadata=meta)
    yield dg.MaterializeResult(asset_key="keyword_index", metadata=meta)


STAGE_ASSETS = [source_listing, parsed_documents, chunks, contextual_prefixes, embeddings, indexes]
