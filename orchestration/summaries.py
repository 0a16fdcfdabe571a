"""The `--json` answers of `sync` (and every run: reindex, dlq retry, tune's builds) and `status`,
built from the runs' outcomes and the store; `orchestration.report` renders them for people."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from assets.index_stage import unindexed_reason
from assets.listing import CLASSES  # the change classes are the listing's; one definition
from assets.parse_stage import WARNINGS_SHOWN  # how many documents a run names
from assets.parse_watch import stopped_parses
from connectors.config import BinderyConfig
from connectors.generations import keyword_missing_fields
from connectors.lifecycle import Generation, Lifecycle
from connectors.shards import ShardStore, parse_key
from connectors.store import BindingRecord, DocumentStore, GenerationRecord

__all__ = ["kept_versions", "live_moved_warning", "status", "sync_summary"]


def live_moved_warning(outcomes: list[Any], store: DocumentStore) -> str | None:
    """A sync writes the generations live (and building) when it starts; a rollback or promote
    while it runs binds one it only maintained, which then lacks the run's edits until the next
    sync. Its summary read the binding at the end and said "live generation: N" as if N held them
    (an operator pass)."""
    b = store.get_binding()
    live = store.get_generation(b.generation_id) if b and b.generation_id is not None else None
    if live is None:
        return None
    missed = [o.partition for o in outcomes if o.success
              and any(g.get("role") == "written" for g in o.generations.values())
              and o.generations.get(live.name, {}).get("role") != "written"]
    if not missed:
        return None
    return (f"the live generation changed while this sync ran (a rollback or promote): {live.name}, live now, "
            f"did not get this run's edits of {', '.join(missed)}; the next `bindery sync` brings it up to date")


def sync_summary(outcomes: list[Any], seconds: float, store: DocumentStore,
                 configured: Iterable[str]) -> dict[str, Any]:
    """The `sync` JSON: per-source outcome counts, what each stage recomputed, errors, and the
    sources no longer `configured` whose documents the listing withholds (as `bindery plan` says)."""
    sources: dict[str, dict[str, int]] = {}
    recomputed = {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    written = {"documents": 0, "chunks": 0, "deleted": 0}
    truncated = 0  # final texts longer than the embedder reads: their ends were not embedded
    # pages parsed this run that are kept out of the indexes: redirects, generated indexes and a
    # documentation build's own files (the parse stage's counts of each)
    kept_out = dict.fromkeys(("redirects", "index_pages", "site_files"), 0)
    parse_warnings: dict[str, Any] = {"documents": 0, "examples": []}  # read with a warning
    timings: dict[str, float] = {}
    errors: dict[str, str] = {}
    warnings: list[str] = []
    checks: dict[str, Any] = {}
    for o in outcomes:
        m = o.metadata
        if damaged := m.get("vector_index", {}).get("unwritable"):  # a generation the run could not keep up
            warnings.append(f"{o.partition}: {damaged}")
        lst = m.get("source_listing", {})
        # a sharded source runs one partition per shard, each counting its own documents: the
        # contract (and `bindery plan`) report the source
        source = parse_key(o.partition)[0]
        counts = sources.setdefault(source, dict.fromkeys(CLASSES, 0))
        for k in CLASSES:
            counts[k] += int(lst.get(f"docs_{k}", 0))
        recomputed["parse"] += int(m.get("parsed_documents", {}).get("attempted", 0))
        recomputed["chunk"] += int(m.get("chunks", {}).get("chunked", 0))
        recomputed["context"] += int(m.get("contextual_prefixes", {}).get("computed", 0))
        recomputed["embed"] += int(m.get("embeddings", {}).get("embedded", 0))
        truncated += int(m.get("embeddings", {}).get("truncated", 0))
        for kind in kept_out:
            kept_out[kind] += int(m.get("parsed_documents", {}).get(kind, 0))
        parse_warnings["documents"] += int(m.get("parsed_documents", {}).get("warned", 0))
        parse_warnings["examples"] += list(m.get("parsed_documents", {}).get("warnings") or [])
        gens = list(o.generations.values())  # every generation the run wrote or changed, live or not
        # documents, not document x generation: a document removed from the live and from the
        # previous generation (kept for a rollback) is one removal, as `bindery plan` counts it
        for key, field in (("documents", "written_docs"), ("chunks", "written_chunks"), ("deleted", "deleted_docs")):
            written[key] += max((int(gen.get(field, 0)) for gen in gens), default=0)
        for gen in gens:
            timings["generation"] = round(timings.get("generation", 0.0) + float(gen.get("seconds", 0.0)), 3)
        for asset, meta in m.items():
            for key, name in (("seconds", asset), ("model_seconds", "embed_model")):
                if isinstance(meta.get(key), (int, float)):
                    timings[name] = round(timings.get(name, 0.0) + float(meta[key]), 3)
        if o.checks:
            checks[o.partition] = o.checks
        if not o.success:
            why = o.error or "failed"
            if source != o.partition:  # which shard, where several may fail
                why = f"{o.partition}: {why}"
            errors[source] = f"{errors[source]}; {why}" if source in errors else why
    b = store.get_binding()
    live = store.get_generation(b.generation_id) if b and b.generation_id is not None else None
    # the index step has put the same reason on the source row (assets.pipeline.indexes), judging
    # live where the run wrote it: a reindex builds a candidate, and live holding none of a
    # source's current documents (all moved, or a source empty at the first sync) failed a
    # reindex whose candidate held them all (a lifecycle fuzz found it)
    judged = [o.partition for o in outcomes if o.success
              and (live is None or o.generations.get(live.name, {}).get("role") == "written")]
    for source, why in _nothing_indexed(judged, store, b).items():
        errors[source] = f"{errors[source]}; {why}" if source in errors else why  # a failed shard's reason stays
    if b is None and not errors and not any(v for c in sources.values() for v in c.values()):
        warnings.append("no source lists any document, so nothing is live yet: check each source's root, "
                        "include and exclude (`bindery plan` shows what they select)")
    dead = store.counts()["dead_letters"]
    return {"generation": b.generation_id if b else None, "sources": sources, "recomputed": recomputed,
            "written": written, "truncated": truncated, "redirect_pages": kept_out["redirects"],
            "index_pages": kept_out["index_pages"], "site_files": kept_out["site_files"],
            "parse_warnings": {**parse_warnings, "examples": parse_warnings["examples"][:WARNINGS_SHOWN]},
            "seconds": round(seconds, 3), "timings": timings, "errors": errors, "warnings": warnings,
            "dead_letters": dead, "kept_versions": kept_versions(store, b) if dead else 0,
            "runs": {o.partition: o.run_id for o in outcomes}, "_checks": checks,
            "removed_sources": store.removed_sources(list(configured))}


def errors_line(errors: dict[str, str]) -> str:
    """The one line a failed run's errors make: partitions that failed alike share one entry
    (20 shards refused by one delete guard printed its message 20 times, a 6 KB line)."""
    by_message: dict[str, list[str]] = {}
    for key, message in errors.items():
        by_message.setdefault(message, []).append(key)
    parts = []
    for message, keys in by_message.items():
        named = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        parts.append(f"{named}: {message}")
    return "; ".join(parts)


def kept_versions(store: DocumentStore, binding: BindingRecord | None) -> int:
    """Documents whose current content failed (unread, unparsed, uncut: a dead letter) while the
    live index still holds an earlier version of them, which stays searchable: bad input loses
    nothing indexed, and an operator who blanked a file to withdraw its text must know it did not."""
    if binding is None or binding.generation_id is None:
        return 0
    failed = store.dead_letter_docs(("listing", "parse", "chunk"))
    held = [did for did, st in store.index_state(binding.generation_id).items() if st.digest and did in failed]
    # withheld from everyone meanwhile (its new ACL unknown: an S3 object whose HEAD is refused,
    # a document an unreadable ACL file governs): kept, but searchable by no one
    return sum(1 for d in store.get_documents(held).values() if d.acl)


def _nothing_indexed(sources: list[str], store: DocumentStore, binding: BindingRecord | None) -> dict[str, str]:
    """The sources (partition keys) whose run succeeded without making any document searchable."""
    out = {}
    for key in sources:
        name, shard = parse_key(key)
        scoped = store if shard is None else ShardStore(store, shard)  # a shard answers for its own
        why = unindexed_reason(scoped, name, binding.generation_id if binding else None)
        if why:
            out[name] = why
    return out


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)


def _gen_summary(g: GenerationRecord | None) -> dict[str, Any] | None:
    if g is None:
        return None
    rep = g.eval_report or {}
    return {"id": g.id, "name": g.name, "status": g.status, "stage_versions": g.stage_versions,
            "embedder_id": g.embedder_id, "counts": g.counts,
            "age_hours": round((time.time() - g.created_at) / 3600, 2),
            "eval": {"passed": rep.get("passed"), "candidate": rep.get("candidate"), "reasons": rep.get("reasons"),
                     "forced_by": g.forced_by, "force_reason": g.force_reason}}


def _built(store: DocumentStore, cand: GenerationRecord, live_state: dict[str, Any]) -> bool:
    """Whether a candidate's build finished: its indexes are published and hold every source the
    live generation holds (a reindex still running has not reached some of them yet)."""
    if not cand.published_at:
        return False
    held = {r.source for r in store.index_state(cand.id).values() if r.digest}
    return {r.source for r in live_state.values()} <= held


def _row(gen: Generation | None) -> GenerationRecord | None:
    return gen.record if gen else None


def _live_outdated(cfg: BinderyConfig, lifecycle: Lifecycle, live: GenerationRecord | None,
                   cand: GenerationRecord | None, prev: GenerationRecord | None = None) -> dict[str, Any] | None:
    """What a reindex would change in the live generation: the stages whose version under the
    current configuration and code differs from live's (a changed setting, or a new release's
    parser or chunker), the keyword-index fields this release reads that live's index lacks
    (None when the index cannot be read now: status reports, it does not fail), and whether the
    candidate, if any, was built for the current configuration. Syncs keep writing at live's
    versions until a reindex is promoted. None: up to date."""
    if live is None:
        return None
    stages = lifecycle.config_drift()
    fields: list[str] | None
    try:
        fields = keyword_missing_fields(cfg, live)
    except Exception:  # an engine that is down (Elasticsearch) is the sync's to report, not status's
        fields = None
    if not stages and not fields:
        return None
    current = None if cand is None else cand.stage_versions == lifecycle.current_versions
    # after a rollback the generation rolled back from is often the configuration's own: promoting
    # it back costs nothing, where a reindex rebuilds it (an operator pass)
    # null when there is no previous generation, as candidate_current is without a candidate
    prev_current = None if prev is None else not fields and prev.stage_versions == lifecycle.current_versions
    return {"stages": stages, "index_fields": fields, "candidate_current": current,
            "previous_current": prev_current}


def _candidate_outdated(cfg: BinderyConfig, lifecycle: Lifecycle,
                        cand: GenerationRecord | None) -> dict[str, Any] | None:
    """The candidate's stages and settings that differ from the current configuration (a
    `tune --build` candidate, or one built before bindery.yaml changed again): promoted, it goes
    live with settings the file does not hold. None: no candidate, or one of this configuration."""
    if cand is None or not (stages := lifecycle.drift(cand.stage_versions)):
        return None
    from connectors.versions import settings_differences

    return {"stages": stages, "settings": settings_differences(cand.stage_configs, cfg.stages, only=stages)}


def status(cfg: BinderyConfig, store: DocumentStore) -> dict[str, Any]:
    lifecycle = Lifecycle(cfg, store)
    b = store.get_binding()
    live, prev = _row(lifecycle.live()), _row(lifecycle.previous())
    # Before anything is live, the generation being built is the first build, not a candidate
    # waiting for the gate: it binds itself when its first index is published.
    first, cand = _row(lifecycle.first_build()), _row(lifecycle.candidate())
    counts = store.counts()
    # pending rows (a write that died before recording it) are not indexed documents
    state = {k: r for k, r in store.index_state(live.id).items() if r.digest} if live else {}
    docs = store.documents()
    dead = {d.doc_id for d in store.dead_letters()}
    by_source: dict[str, Any] = {}
    for s in cfg.sources:
        row = store.get_source(s.name)
        sdocs = [d for d in docs if d.source == s.name]
        # lag as the index step reports it to the UI: from the listing that saw a document's content
        # or ACL change to its indexing (a file's mtime says nothing of an ACL change, and an old file
        # synced the first time is not years late)
        lags = [max(0.0, state[d.doc_id].indexed_at - d.changed_at) for d in sdocs if d.doc_id in state]
        pending = [d for d in sdocs if d.doc_id not in dead]
        missing = [d for d in pending if d.doc_id not in state]
        stale = [d for d in pending if d.doc_id in state and state[d.doc_id].behind(d)]
        by_source[s.name] = {
            "kind": s.kind, "documents": len(sdocs), "indexed": sum(1 for d in sdocs if d.doc_id in state),
            # listed changes live does not hold yet, dead letters aside: a run stopped before its
            # index step (cancelled, killed) left them for the next sync (a Dagster UI pass: after a
            # killed run, status showed nothing to do)
            "waiting": len(missing) + len(stale),
            # of those, the ones live holds an older version of: `indexed` counts them too, so
            # the human table splits `waiting` (43 indexed, "37 waiting" read as 80 of 78)
            "out_of_date": len(stale),
            "last_listing_at": row.last_listing_at if row else None,
            "last_good_listing_at": row.last_good_listing_at if row else None,
            "last_good_listing_count": row.last_good_listing_count if row else None,
            "last_error": row.last_error if row else None,
            "lag_p50_s": _pct(lags, 0.5), "lag_p95_s": _pct(lags, 0.95),
            # the document a run died parsing (`assets.parse_watch`): parsed once more, then a dead letter
            "stopped_parsing": stopped_parses(cfg.data_path, s.name),
        }
    cand_summary = _gen_summary(cand)
    if cand is not None and cand_summary is not None:  # a finished build waits for the gate: not "building"
        cand_summary["built"] = _built(store, cand, state)
    return {"live": live.id if live else None, "candidate": cand.id if cand else None,
            "previous": prev.id if prev else None, "first_build": first.id if first else None,
            "documents": counts["documents"], "chunks": live.counts.get("chunks", 0) if live else 0,
            "dead_letters": counts["dead_letters"], "sources": by_source,
            "generations": {"live": _gen_summary(live), "previous": _gen_summary(prev),
                            "candidate": cand_summary, "first_build": _gen_summary(first)},
            "binding": ({"version": b.version, "flipped_at": b.flipped_at, "flipped_by": b.flipped_by}
                        if b else None),
            "live_outdated": _live_outdated(cfg, lifecycle, live, cand, prev),
            "candidate_outdated": _candidate_outdated(cfg, lifecycle, cand),
            "removed_sources": store.removed_sources(cfg.source_names()),
            "events": [{"kind": e.kind, "message": e.message, "at": e.at} for e in store.events(limit=5)]}
