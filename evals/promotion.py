"""Judging a candidate generation — the gate applied to real indexes — and promoting it.

`judge` runs the configured eval set through the *same* retrieval users get
(query_service.retrieval) on the live generation and on the candidate, and compares them
paired per query (evals.gate.compare). `promote` judges (unless a stored verdict is given) and
hands the verdict to `connectors.lifecycle.Lifecycle.promote`, which flips the binding only if
the gate passed, or when forced. Every state change — recording the verdict, the flip, rollback
and gc — is the lifecycle module's; this module only judges.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from connectors.config import BinderyConfig
from connectors.errors import ConfigError
from connectors.generations import keyword_missing_fields
from connectors.indexes.base import PUBLIC, Filters
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentRecord, DocumentStore, GenerationRecord
from evals.evalset import EvalCase, load_eval_set, resolve_source_prefixes
from evals.gate import GateReport, as_rebuild, compare, first_generation_report
from evals.runner import EvalReport, ExcludingSearchFn, first_few, run_eval, unknown_gold_warning
from query_service.retrieval import GenerationRetriever, Hit

__all__ = ["evaluate", "excluding_search", "judge", "promote", "unknown_gold"]


def all_principals(documents: Iterable[DocumentRecord]) -> tuple[str, ...]:
    """Evaluation sees every document: it asks as every principal the corpus names."""
    return tuple(sorted({p for d in documents for p in d.acl} | {PUBLIC}))


def evaluate(cfg: BinderyConfig, store: DocumentStore, gen: GenerationRecord, queries: str | None = None,
             k: int | None = None) -> EvalReport:
    path = queries or cfg.gate.queries
    if not path:
        raise ConfigError("no eval set configured: set gate.queries in bindery.yaml")
    documents = store.documents()  # read once: the principals to ask as, and the gold paths that exist
    cases = resolve_source_prefixes(load_eval_set(path), ((d.source, d.external_id) for d in documents), path)
    filters = Filters(principals=all_principals(documents))
    retriever = GenerationRetriever(cfg, gen)
    try:
        report = run_eval(cases, excluding_search(retriever, filters), k=k or cfg.gate.k, excluding=True)
    finally:
        retriever.close()
    return replace(report, unknown_gold=unknown_gold(store, gen, cases, documents))


def unknown_gold(store: DocumentStore, gen: GenerationRecord, cases: Iterable[EvalCase],
                 documents: Iterable[DocumentRecord]) -> tuple[str, ...]:
    """The gold documents of `cases` that generation `gen`'s indexes do not hold: what its
    indexes hold, not the store's documents — a dead-lettered document or one added after the
    generation was built can never be found in it either."""
    held = {did for did, r in store.index_state(gen.id).items() if r.digest}
    known = {(d.source, d.external_id) for d in documents if d.doc_id in held}
    paths = {doc for _, doc in known}
    return tuple(sorted({g.doc if g.source is None else f"{g.source}:{g.doc}" for c in cases for g in c.gold
                         if (g.doc not in paths if g.source is None else (g.source, g.doc) not in known)}))


def excluding_search(retriever: GenerationRetriever, filters: Filters) -> ExcludingSearchFn:
    """The eval's search: every case's excluded documents are filtered out of retrieval."""
    def search(query: str, k: int, exclude: tuple[str, ...]) -> list[Hit]:
        return retriever.search(query, k, replace(filters, exclude_docs=exclude)).hits
    return search


def eval_set_identity(path: str | None) -> dict[str, Any] | None:
    """Which eval set a verdict was measured on: its path and a digest of its bytes, so the
    console charts only metrics of one set together (scores of an 8-question set beside a
    263-question one's read as a regression that never happened)."""
    if not path:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {"path": str(path), "digest": None}
    return {"path": str(path), "digest": hashlib.sha256(data).hexdigest()[:12]}


def judge(cfg: BinderyConfig, store: DocumentStore, cand: GenerationRecord) -> GateReport:
    """Gate verdict for `cand` against the live generation; recorded on the candidate."""
    g = cfg.gate
    lifecycle = Lifecycle(cfg, store)
    live = lifecycle.live()
    if live is None:
        own = evaluate(cfg, store, cand) if g.queries else None
        report = first_generation_report(own, g.metric, g.secondary_metric, g.tolerance, g.max_regressions)
        unknown: set[str] = set(own.unknown_gold if own else ())
    else:
        live_report = evaluate(cfg, store, live.record)
        cand_report = evaluate(cfg, store, cand)
        report = compare(live_report, cand_report, g.metric, g.secondary_metric, g.tolerance, g.max_regressions)
        # a live keyword index of an older release (fields it lacks) is no build of the same index
        if same_build(live.record, cand) and not keyword_missing_fields(cfg, live.record):
            report = as_rebuild(report, len(set(cand_report.unknown_gold) - set(live_report.unknown_gold)))
        unknown = set(live_report.unknown_gold) & set(cand_report.unknown_gold)
        report.warnings.extend(one_sided_gold(live.name, set(live_report.unknown_gold), set(cand_report.unknown_gold)))
        if measures_nothing(live_report, cand_report, g.metric):  # compare's summary of a pass would mislead
            report = replace(report, passed=False, reasons=[
                f"every question of the eval set scores 0 {g.metric} on both generations: the gate cannot tell "
                "them apart (are the gold paths of gate.queries right? see the warnings); "
                "`bindery promote --force --reason ...` promotes anyway (in the UI: force and reason in the "
                "generation_eval and index_binding config)"])
    if warning := unknown_gold_warning(sorted(unknown), "in the generations judged"):
        report.warnings.append(warning)
    out = report.to_json()
    out["judged_at"] = time.time()
    out["live_generation"] = live.id if live else None
    out["eval_set"] = eval_set_identity(g.queries)
    lifecycle.record_verdict(cand.id, out)
    return report


def same_build(live: GenerationRecord, cand: GenerationRecord) -> bool:
    """Whether `cand` was built with `live`'s stage versions, embedder and vector engine: the
    same chunks and vectors in the same kind of index (`gate.as_rebuild`; `judge` also asks
    that live's keyword index holds every field of today's schema)."""
    return (live.stage_versions == cand.stage_versions and live.embedder_id == cand.embedder_id
            and live.vector_engine == cand.vector_engine)


def measures_nothing(live: EvalReport, candidate: EvalReport, metric: str) -> bool:
    """Whether every question scores 0 on both sides: a 0.0 -> 0.0 comparison passed the gate
    and flipped the binding, on an eval set whose gold paths named no indexed document (a UI
    pass)."""
    return bool(live.per_case) and all(not c.values.get(metric) for c in (*live.per_case, *candidate.per_case))


def one_sided_gold(live_name: str, live_lacks: set[str], cand_lacks: set[str]) -> list[str]:
    """Gold documents only one of the two generations judged holds: their questions score 0 on
    that side alone, which is part of the verdict (a document the candidate lost is a regression
    the gate should see; one live lacked is a gain the candidate did not earn by ranking). Said
    apart from those neither holds (an eval-set mistake): a refusal warned that a document live
    held and scored 1.0 on was in neither."""
    out = []
    for docs, holds, lacks in ((sorted(cand_lacks - live_lacks), f"live generation {live_name}", "the candidate"),
                               (sorted(live_lacks - cand_lacks), "the candidate", f"live generation {live_name}")):
        if docs:
            out.append(f"{len(docs)} gold documents are in {holds} but not in {lacks} (a dead letter there, or "
                       f"added or removed between the two builds?); their questions score 0 on {lacks}: "
                       f"{first_few(docs)}")
    return out


def promote(cfg: BinderyConfig, store: DocumentStore, *, candidate_id: int | None = None, force: bool = False,
            reason: str | None = None, by: str | None = None,
            verdict: dict[str, Any] | None = None) -> dict[str, Any]:
    """Judge (unless a stored `verdict` for this candidate is given) and flip.

    Raises GateRefused (with the report) when the gate says no and the promotion is not forced.
    """
    lifecycle = Lifecycle(cfg, store)
    cand = lifecycle.resolve(candidate_id)
    lifecycle.check_promotable(cand, force=force, reason=reason)
    if not verdict:
        try:
            judge(cfg, store, cand)
            # as recorded: with the live generation it was judged against, which the flip checks
            row = store.get_generation(cand.id)
            verdict = dict(row.eval_report or {}) if row is not None else {}
        except ConfigError:
            if not force:
                raise
            verdict = {"passed": False, "reasons": ["no eval set: gate not run"]}
    return lifecycle.promote(cand, verdict, force=force, reason=reason, by=by)
