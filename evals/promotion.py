"""Promotion, rollback and retention of generations — the gate applied to real indexes.

`judge` runs the configured eval set through the *same* retrieval users get
(query_service.retrieval) on the live generation and on the candidate, and compares them
paired per query (evals.gate.compare). `promote` flips the binding only if the gate passes,
or when forced — a forced promotion records who forced it and why. `rollback` restores the
previous generation in one transaction. `collect_garbage` drops expired generations, never
the live or the previous one.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import replace
from typing import Any

from connectors.config import BinderyConfig
from connectors.errors import BindingError, ConfigError, GateRefused
from connectors.generations import bind_live, drop_generation_files, is_embedded, vector_engine
from connectors.indexes.base import PUBLIC, Filters
from connectors.store import DocumentStore
from evals.evalset import load_eval_set
from evals.gate import GateReport, compare, first_generation_report
from evals.runner import EvalReport, ExcludingSearchFn, run_eval
from query_service.retrieval import GenerationRetriever, Hit

__all__ = ["collect_garbage", "drop_candidate", "evaluate", "excluding_search", "judge", "promote", "rollback"]


def all_principals(store: DocumentStore) -> tuple[str, ...]:
    """Evaluation sees every document: it asks as every principal the corpus names."""
    found = {p for d in store.documents() for p in d["acl"]}
    return tuple(sorted(found | {PUBLIC}))


def evaluate(cfg: BinderyConfig, store: DocumentStore, gen: dict[str, Any], queries: str | None = None,
             k: int | None = None) -> EvalReport:
    path = queries or cfg.gate.queries
    if not path:
        raise ConfigError("no eval set configured: set gate.queries in bindery.yaml")
    cases = load_eval_set(path)
    filters = Filters(principals=all_principals(store))
    retriever = GenerationRetriever(cfg, gen)
    try:
        return run_eval(cases, excluding_search(retriever, filters), k=k or cfg.gate.k, excluding=True)
    finally:
        retriever.close()


def excluding_search(retriever: GenerationRetriever, filters: Filters) -> ExcludingSearchFn:
    """The eval's search: every case's excluded documents are filtered out of retrieval."""
    def search(query: str, k: int, exclude: tuple[str, ...]) -> list[Hit]:
        return retriever.search(query, k, replace(filters, exclude_docs=exclude)).hits
    return search


def candidate_row(store: DocumentStore, candidate_id: int | None = None) -> dict[str, Any]:
    if candidate_id is not None:
        row = store.get_generation(candidate_id)
        if row is None:
            raise BindingError(f"no generation {candidate_id}")
        return row
    building = store.generations(("building",))
    if not building:
        raise BindingError("no candidate generation: run `bindery reindex` first")
    return building[-1]


def judge(cfg: BinderyConfig, store: DocumentStore, cand: dict[str, Any]) -> GateReport:
    """Gate verdict for `cand` against the live generation; stored on the candidate."""
    g = cfg.gate
    binding = store.get_binding()
    if binding is None:
        own = evaluate(cfg, store, cand) if g.queries else None
        report = first_generation_report(own, g.metric, g.secondary_metric, g.tolerance, g.max_regressions)
    else:
        live = store.get_generation(binding["generation_id"])
        assert live is not None
        live_report = evaluate(cfg, store, live)
        cand_report = evaluate(cfg, store, cand)
        report = compare(live_report, cand_report, g.metric, g.secondary_metric, g.tolerance, g.max_regressions)
    out = report.to_json()
    out["judged_at"] = time.time()
    out["live_generation"] = binding["generation_id"] if binding else None
    store.update_generation(cand["id"], eval_report=out)
    return report


def promote(cfg: BinderyConfig, store: DocumentStore, *, candidate_id: int | None = None, force: bool = False,
            reason: str | None = None, by: str | None = None,
            verdict: dict[str, Any] | None = None) -> dict[str, Any]:
    """Judge (unless a stored `verdict` for this candidate is given) and flip.

    Raises GateRefused (with the report) when the gate says no and the promotion is not forced.
    """
    cand = candidate_row(store, candidate_id)
    if cand["status"] not in ("building", "previous", "retired"):
        raise BindingError(f"generation {cand['id']} is {cand['status']}; only a candidate can be promoted")
    if not cand.get("vector_snapshot") and is_embedded(vector_engine(cfg, cand)):
        raise BindingError(f"candidate {cand['name']} has no indexed data yet; finish its reindex first")
    who = by or getpass.getuser()
    if force and not reason:
        raise ConfigError("a forced promotion needs --reason")
    if not verdict:
        try:
            verdict = judge(cfg, store, cand).to_json()
        except ConfigError:
            if not force:
                raise
            verdict = {"passed": False, "reasons": ["no eval set: gate not run"]}
    if not verdict["passed"] and not force:
        store.add_event("gate-refused", f"candidate {cand['name']} refused: {'; '.join(verdict['reasons'])}",
                        details=verdict)
        raise GateRefused(f"gate refused candidate {cand['name']}: {'; '.join(verdict['reasons'])}", verdict)
    forced = {"by": who, "reason": reason} if force and not verdict["passed"] else None
    if forced:
        store.add_event("forced-promotion", f"{who} forced promotion of {cand['name']}: {reason}",
                        details={"report": verdict})
    binding = bind_live(cfg, store, cand, by=who, forced=forced)
    store.add_event("promoted", f"{cand['name']} is live (previous: {binding['previous_generation_id']})")
    return {"promoted": True, "live": binding["generation_id"], "previous": binding["previous_generation_id"],
            "forced": bool(forced), "report": verdict, **_aliases(binding)}


def rollback(cfg: BinderyConfig, store: DocumentStore, *, by: str | None = None) -> dict[str, Any]:
    """Restore the previous generation in one step; the one rolled back from becomes previous."""
    b = store.get_binding()
    if b is None or b["previous_generation_id"] is None:
        raise BindingError("nothing to roll back to: no previous generation is kept")
    prev = store.get_generation(b["previous_generation_id"])
    if prev is None or prev["status"] == "dropped":
        raise BindingError(f"previous generation {b['previous_generation_id']} no longer exists")
    who = by or getpass.getuser()
    binding = bind_live(cfg, store, prev, by=who, previous_id=b["generation_id"])
    store.add_event("rollback", f"{who} rolled back from generation {b['generation_id']} to {prev['id']}")
    return {"promoted": True, "live": binding["generation_id"], "previous": binding["previous_generation_id"],
            "report": {"rollback": True}, **_aliases(binding)}


def _aliases(binding: dict[str, Any]) -> dict[str, Any]:
    """What `bind_live` did with the server aliases, for the JSON output."""
    return {k: binding[k] for k in ("aliases", "alias_error") if k in binding}


def collect_garbage(cfg: BinderyConfig, store: DocumentStore) -> list[str]:
    """Drop retired generations past the rollback window, keeping at most `keep_generations`."""
    b = store.get_binding()
    protected = {b["generation_id"], b["previous_generation_id"]} if b else set()
    window = cfg.retention.rollback_window_hours * 3600
    now = time.time()
    dropped = []
    retired = [g for g in store.generations(("retired",)) if g["id"] not in protected]
    keep_budget = max(cfg.retention.keep_generations - len(protected - {None}), 0)
    for i, g in enumerate(sorted(retired, key=lambda g: g["retired_at"] or 0, reverse=True)):
        expired = (now - (g["retired_at"] or 0)) > window
        if expired or i >= keep_budget:
            drop_generation_files(cfg, g["name"])
            store.update_generation(g["id"], status="dropped", vector_snapshot=None, keyword_snapshot=None)
            store.clear_index_state(g["id"], list(store.index_state(g["id"])))
            dropped.append(g["name"])
    if dropped:
        kept = {g["stage_versions"]["chunk"] for g in store.generations() if g["status"] != "dropped"}
        removed = store.drop_chunk_versions_except(kept)
        store.add_event("gc", f"dropped generations {', '.join(dropped)} and {removed} chunk rows only they used")
    return dropped


def drop_candidate(cfg: BinderyConfig, store: DocumentStore, gen: dict[str, Any], *, reason: str) -> None:
    """Drop a building generation no one will promote (a judged `bindery tune` trial): its files
    and index state go, its row stays as `dropped`. Its cached chunks and embeddings stay too (a
    later trial or reindex re-uses them; `bindery gc` removes what nothing uses)."""
    if gen["status"] not in ("building", "retired"):
        raise BindingError(f"generation {gen['name']} is {gen['status']}: only a candidate can be dropped")
    drop_generation_files(cfg, gen["name"])
    store.update_generation(gen["id"], status="dropped", vector_snapshot=None, keyword_snapshot=None,
                            retired_at=time.time())
    store.clear_index_state(gen["id"], list(store.index_state(gen["id"])))
    store.add_event("candidate-dropped", f"candidate {gen['name']} dropped: {reason}")
