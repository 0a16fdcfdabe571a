"""`bindery verify`: the document store, the vector index and the keyword index of every
retained generation must hold exactly the same chunk ids — no duplicates, no orphans.

Repair rebuilds a drifted generation's indexes from the store alone (cached embeddings and
contexts: no source access, no model calls for unchanged content) — the store is the truth.
"""

from __future__ import annotations

import shutil
from typing import Any

from assets.index_stage import run_index
from assets.runtime import RETAINED, Runtime
from connectors.config import BinderyConfig
from connectors.generations import GenerationPaths, is_embedded, open_writer, publish, vector_engine, writer_lock
from connectors.store import DocumentStore


def expected_chunk_ids(store: DocumentStore, gen: dict[str, Any]) -> set[str]:
    state = store.index_state(gen["id"])
    rows = store.chunks_for(list(state), gen["stage_versions"]["chunk"])
    return {r["chunk_id"] for r in rows}


def verify(cfg: BinderyConfig, store: DocumentStore, *, repair: bool = False) -> dict[str, Any]:
    rt = Runtime(cfg, store)
    report: dict[str, Any] = {"consistent": True, "generations": {}}
    for g in rt.generations(RETAINED):
        expected = expected_chunk_ids(store, g.row)
        with writer_lock(cfg, g.name):
            pair = open_writer(cfg, g.row, None)
            try:
                vec, kw = pair.vector.chunk_ids(), pair.keyword.chunk_ids()
                vec_n, kw_n = pair.vector.count(), pair.keyword.count()
            finally:
                pair.close()
        problems = {
            "missing_in_vector": len(expected - vec), "orphans_in_vector": len(vec - expected),
            "missing_in_keyword": len(expected - kw), "orphans_in_keyword": len(kw - expected),
            "duplicates_in_vector": vec_n - len(vec), "duplicates_in_keyword": kw_n - len(kw),
        }
        ok = not any(problems.values())
        report["generations"][g.name] = {"chunks": len(expected), "consistent": ok, **problems}
        if ok:
            continue
        report["consistent"] = False
        if repair:
            _rebuild(rt, g.row)
            report["generations"][g.name]["repaired"] = True
    return report


def _rebuild(rt: Runtime, gen: dict[str, Any]) -> None:
    paths = GenerationPaths.of(rt.cfg, gen["name"])
    with writer_lock(rt.cfg, gen["name"]):
        if is_embedded(vector_engine(rt.cfg, gen)):
            shutil.rmtree(paths.vector(vector_engine(rt.cfg, gen)), ignore_errors=True)
        shutil.rmtree(paths.keyword, ignore_errors=True)
        rt.store.clear_index_state(gen["id"], list(rt.store.index_state(gen["id"])))
    g = next(x for x in rt.generations(RETAINED) if x.id == gen["id"])
    for s in rt.cfg.sources:
        run_index(rt, s.name, [g])
    with writer_lock(rt.cfg, gen["name"]):
        open_writer(rt.cfg, gen, None).close()  # ensure empty indexes exist even with no data
        vec, kw = publish(rt.cfg, gen)
    rt.store.update_generation(gen["id"], vector_snapshot=vec, keyword_snapshot=kw)
    rt.store.add_event("verify-repair", f"rebuilt indexes of {gen['name']} from the document store")
    if gen["status"] == "live":
        rt.store.bump_binding()
