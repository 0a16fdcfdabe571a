"""What the CLI prints: the `--json` contract builders and their human renderings."""

from __future__ import annotations

import time
from typing import Any

from connectors.config import BinderyConfig
from connectors.store import DocumentStore

CLASSES = ("new", "updated", "unchanged", "moved", "acl", "deleted", "failed")


def sync_summary(outcomes: list[Any], seconds: float, store: DocumentStore) -> dict[str, Any]:
    """The `sync` JSON: per-source outcome counts, what each stage recomputed, errors."""
    sources: dict[str, dict[str, int]] = {}
    recomputed = {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    written = {"documents": 0, "chunks": 0, "deleted": 0}
    timings: dict[str, float] = {}
    errors: dict[str, str] = {}
    checks: dict[str, Any] = {}
    for o in outcomes:
        m = o.metadata
        lst = m.get("source_listing", {})
        sources[o.partition] = {k: int(lst.get(f"docs_{k}", 0)) for k in CLASSES}
        recomputed["parse"] += int(m.get("parsed_documents", {}).get("attempted", 0))
        recomputed["chunk"] += int(m.get("chunks", {}).get("chunked", 0))
        recomputed["context"] += int(m.get("contextual_prefixes", {}).get("computed", 0))
        recomputed["embed"] += int(m.get("embeddings", {}).get("embedded", 0))
        idx = m.get("vector_index", {})
        written["documents"] += int(idx.get("written_docs", 0))
        written["chunks"] += int(idx.get("written_chunks", 0))
        written["deleted"] += int(idx.get("deleted_docs", 0))
        for asset, meta in m.items():
            for key, name in (("seconds", asset), ("model_seconds", "embed_model")):
                if isinstance(meta.get(key), (int, float)):
                    timings[name] = round(timings.get(name, 0.0) + float(meta[key]), 3)
        if o.checks:
            checks[o.partition] = o.checks
        if not o.success:
            errors[o.partition] = o.error or "failed"
    b = store.get_binding()
    errors.update(_nothing_indexed([o.partition for o in outcomes if o.success], store, b))
    return {"generation": b["generation_id"] if b else None, "sources": sources, "recomputed": recomputed,
            "written": written, "seconds": round(seconds, 3), "timings": timings, "errors": errors,
            "dead_letters": store.counts()["dead_letters"], "_checks": checks}


def _nothing_indexed(sources: list[str], store: DocumentStore, binding: dict[str, Any] | None) -> dict[str, str]:
    """Sources whose run succeeded but that have documents and none of them in the live index:
    a sync that indexes nothing must not say it succeeded."""
    out = {}
    for name in sources:
        docs = store.documents(name)
        if docs and not (binding and store.index_state(binding["generation_id"], name)):
            out[name] = (f"nothing could be indexed: none of the {len(docs)} documents of {name!r} is searchable "
                         "(see `bindery dlq`)")
    return out


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)


def _gen_summary(g: dict[str, Any] | None) -> dict[str, Any] | None:
    if g is None:
        return None
    rep = g.get("eval_report") or {}
    return {"id": g["id"], "name": g["name"], "status": g["status"], "stage_versions": g["stage_versions"],
            "embedder_id": g["embedder_id"], "counts": g["counts"],
            "age_hours": round((time.time() - g["created_at"]) / 3600, 2),
            "eval": {"passed": rep.get("passed"), "candidate": rep.get("candidate"), "reasons": rep.get("reasons"),
                     "forced_by": g.get("forced_by"), "force_reason": g.get("force_reason")}}


def status(cfg: BinderyConfig, store: DocumentStore) -> dict[str, Any]:
    b = store.get_binding()
    live = store.get_generation(b["generation_id"]) if b else None
    prev = store.get_generation(b["previous_generation_id"]) if b and b["previous_generation_id"] else None
    building = store.generations(("building",))
    cand = building[-1] if building else None
    counts = store.counts()
    state = store.index_state(live["id"]) if live else {}
    docs = store.documents()
    by_source: dict[str, Any] = {}
    for s in cfg.sources:
        row = store.get_source(s.name) or {}
        sdocs = [d for d in docs if d["source"] == s.name]
        lags = [state[d["doc_id"]]["indexed_at"] - d["source_modified_at"]
                for d in sdocs if d["doc_id"] in state and d["source_modified_at"]]
        by_source[s.name] = {
            "kind": s.kind, "documents": len(sdocs), "indexed": sum(1 for d in sdocs if d["doc_id"] in state),
            "last_listing_at": row.get("last_listing_at"), "last_good_listing_at": row.get("last_good_listing_at"),
            "last_good_listing_count": row.get("last_good_listing_count"), "last_error": row.get("last_error"),
            "lag_p50_s": _pct(lags, 0.5), "lag_p95_s": _pct(lags, 0.95),
        }
    return {"live": live["id"] if live else None, "candidate": cand["id"] if cand else None,
            "previous": prev["id"] if prev else None,
            "documents": counts["documents"], "chunks": (live or {}).get("counts", {}).get("chunks", 0),
            "dead_letters": counts["dead_letters"], "sources": by_source,
            "generations": {"live": _gen_summary(live), "previous": _gen_summary(prev),
                            "candidate": _gen_summary(cand)},
            "binding": ({"version": b["version"], "flipped_at": b["flipped_at"], "flipped_by": b["flipped_by"]}
                        if b else None),
            "events": [{"kind": e["kind"], "message": e["message"], "at": e["at"]} for e in store.events(limit=5)]}


def eval_table(rep: Any) -> str:
    from evals.runner import format_table

    return format_table(rep)


def _ts(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "never"


def human(command: str, r: Any) -> str:
    if command in ("sync", "reindex"):
        lines = []
        for name, c in r.get("sources", {}).items():
            lines.append(f"source {name}: " + ", ".join(f"{v} {k}" for k, v in c.items() if v))
        rc = r.get("recomputed", {})
        w = r.get("written", {})
        if not any(rc.values()) and not w.get("documents") and not w.get("deleted"):
            lines.append("nothing changed: nothing was recomputed")
        else:
            lines.append("recomputed: " + ", ".join(f"{k} {v}" for k, v in rc.items()))
            lines.append(f"indexes: {w.get('documents', 0)} documents written ({w.get('chunks', 0)} chunks), "
                         f"{w.get('deleted', 0)} removed")
        for src, checks in r.get("_checks", {}).items():
            for name, c in checks.items():
                if not c["passed"]:
                    lines.append(f"check {name} [{src}]: {c['severity']}: {c['description']}")
        if r.get("dead_letters"):
            lines.append(f"dead letters: {r['dead_letters']} (see `bindery dlq`)")
        if "candidate" in r:
            lines.append(f"candidate generation: {r.get('candidate_name')} (id {r['candidate']}); "
                         "run `bindery promote` to judge and flip")
        lines.append(f"live generation: {r.get('generation')}   ({r.get('seconds')} s)")
        for k, v in r.get("errors", {}).items():
            lines.append(f"ERROR {k}: {v}")
        return "\n".join(lines)
    if command == "eval":
        return f"generation {r['generation']} ({r['generation_name']}), {r['cases']} cases\n{r['_table']}"
    if command == "query":
        lines = [f"generation {r['generation']} ({r['generation_name']})"]
        if not r["hits"]:
            lines.append(f"no results: {r.get('reason')}")
        for i, h in enumerate(r["hits"], 1):
            where = " > ".join(h["heading_path"]) or "-"
            page = f" p.{h['page']}" if h.get("page") else ""
            ranks = ", ".join(f"{k} #{v}" for k, v in h["ranks"].items())
            text = " ".join(h["text"].split())[:160]
            lines.append(f"{i}. [{h['score']:.4f}] {h['source']}:{h['doc']}{page}  ({where})  [{ranks}]\n   {text}")
        return "\n".join(lines)
    if command == "status":
        lines = [f"live: {r['live']}   previous: {r['previous']}   candidate: {r['candidate']}",
                 f"documents: {r['documents']}   chunks (live): {r['chunks']}   dead letters: {r['dead_letters']}"]
        for role, g in r["generations"].items():
            if g:
                ev = g["eval"]
                lines.append(f"  {role:9} {g['name']}  {g['counts']}  age {g['age_hours']} h  "
                             f"gate: {ev.get('passed')}  {g['stage_versions']}")
        for name, s in r["sources"].items():
            lines.append(f"  source {name} ({s['kind']}): {s['documents']} documents, {s['indexed']} indexed, "
                         f"last good listing {_ts(s['last_good_listing_at'])}, lag p50/p95 "
                         f"{s['lag_p50_s']}/{s['lag_p95_s']} s"
                         + (f"  LAST ERROR: {s['last_error']}" if s["last_error"] else ""))
        for e in r["events"]:
            lines.append(f"  event {_ts(e['at'])} {e['kind']}: {e['message']}")
        return "\n".join(lines)
    if command == "dlq" and isinstance(r, list):
        if not r:
            return "dead-letter table is empty"
        return "\n".join(f"{_ts(d['at'])}  {d['source']}:{d['doc']}  [{d['stage']}/{d['reason']}]  {d['error'][:200]}"
                         for d in r)
    if command in ("promote", "rollback"):
        rep = r.get("report") or {}
        lines = [f"promoted: {r.get('promoted')}   live: {r.get('live')}   previous: {r.get('previous')}"]
        for reason in rep.get("reasons") or []:
            lines.append(f"  {reason}")
        for q in (rep.get("regressed") or [])[:10]:
            lines.append(f"  regressed: {q['id']} {q['query'][:70]!r} {q['live']:.3f} -> {q['candidate']:.3f}")
        if r.get("error"):
            lines.append(f"ERROR: {r['error']}")
        return "\n".join(lines)
    import json

    return json.dumps(r, indent=2, default=str)
