"""`bindery verify`: the document store, the vector index and the keyword index of every
retained generation must hold exactly the same chunk ids — no duplicates, no orphans — and
every indexed chunk must carry its document's current ACL from the store, in both indexes
(an index that kept a revoked principal would serve it after a rollback).

Repair rebuilds a drifted generation's indexes from the store alone (cached embeddings and
contexts: no source access, no model calls for unchanged content) — the store is the truth.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

from assets.index_stage import run_index
from assets.runtime import Runtime
from connectors.config import BinderyConfig
from connectors.errors import IndexUnreadable
from connectors.generations import (
    GenerationPaths,
    is_embedded,
    missing_snapshots,
    open_writer,
    publish,
    vector_engine,
    writer_lock,
)
from connectors.lifecycle import RETAINED
from connectors.store import DocumentStore, GenerationRecord


def expected_chunk_ids(store: DocumentStore, gen: GenerationRecord) -> set[str]:
    return set(expected_acls(store, gen).acls)


@dataclass(frozen=True)
class Expected:
    """What a generation's indexes should hold, as the store says."""

    acls: dict[str, tuple[str, ...]]  # chunk id -> the ACL its document has in the store now
    # documents changed, moved or deleted since their last indexing in the generation: drift among
    # them is what a sync stopped before its index step (cancelled, killed) leaves, and the next
    # sync writes; it is still reported (a dead letter's kept version, or a rollback target on
    # other stage versions, is never rewritten: left out, its real drift hid for good)
    pending: int


def expected_acls(store: DocumentStore, gen: GenerationRecord) -> Expected:
    """The chunks `gen` should hold, each with the ACL its document has in the store now."""
    state = {did: r for did, r in store.index_state(gen.id).items() if not r.withheld}  # taken out with their source
    docs = store.get_documents(list(state))
    rows = store.chunks_for(list(state), gen.stage_versions["chunk"])
    acl_of = {did: tuple(sorted(d.acl)) for did, d in docs.items()}
    # a moved file's old path is kept by design until the generation gets the new one
    # (`index_stage.kept_moves`): not work a stopped sync left
    pending = sum(1 for did, r in state.items() if r.behind(docs.get(did))
                  and (docs.get(did) is None or docs[did].moved_to is None))
    return Expected({r.chunk_id: acl_of.get(r.doc_id, ()) for r in rows}, pending)


def _acl_mismatches(expected: dict[str, tuple[str, ...]], indexed: dict[str, tuple[str, ...]]) -> int:
    """Chunks present in both whose indexed ACL differs from the store's."""
    return sum(1 for c, a in indexed.items() if c in expected and expected[c] != a)


def verify(cfg: BinderyConfig, store: DocumentStore, *, repair: bool = False) -> dict[str, Any]:
    rt = Runtime(cfg, store)
    report: dict[str, Any] = {"consistent": True, "generations": {}}
    for g in rt.lifecycle.generations(RETAINED):
        expected = expected_acls(store, g.record)
        try:
            problems: dict[str, Any] = _index_problems(cfg, g.record, expected)
        except IndexUnreadable as e:  # a damaged file: nothing to count, so rebuilt whole
            problems = {"unreadable": str(e)}
        indexes_ok = not any(problems.values())
        problems["missing_snapshots"] = missing_snapshots(g.record)
        ok = indexes_ok and not problems["missing_snapshots"]
        report["generations"][g.name] = {"chunks": len(expected.acls), "consistent": ok, **problems,
                                         "pending": expected.pending, "repaired": False}
        if ok:
            continue
        report["consistent"] = False
        if repair:
            if indexes_ok:  # the working indexes are right: publishing them again is the whole repair
                _republish(rt, g.record)
            else:
                _rebuild(rt, g.record)
            report["generations"][g.name]["repaired"] = True
    return report


def _index_problems(cfg: BinderyConfig, gen: GenerationRecord, want: Expected) -> dict[str, Any]:
    """How the generation's two working indexes differ from the store (all zero: consistent);
    IndexUnreadable when one's files cannot even be opened (a lock, an engine down, raise as before)."""
    acls, expected = want.acls, set(want.acls)
    with writer_lock(cfg, gen.name):
        pair = open_writer(cfg, gen, None)
        try:
            vec_acls, kw_acls = pair.vector.acls(), pair.keyword.acls()
            vec_n, kw_n = pair.vector.count(), pair.keyword.count()
        finally:
            pair.close()
    vec, kw = set(vec_acls), set(kw_acls)
    return {
        "missing_in_vector": len(expected - vec), "orphans_in_vector": len(vec - expected),
        "missing_in_keyword": len(expected - kw), "orphans_in_keyword": len(kw - expected),
        "duplicates_in_vector": vec_n - len(vec), "duplicates_in_keyword": kw_n - len(kw),
        "acl_mismatch_in_vector": _acl_mismatches(acls, vec_acls),
        "acl_mismatch_in_keyword": _acl_mismatches(acls, kw_acls),
    }


def _rebuild(rt: Runtime, gen: GenerationRecord) -> None:
    paths = GenerationPaths.of(rt.cfg, gen.name)
    with writer_lock(rt.cfg, gen.name):
        if is_embedded(vector_engine(rt.cfg, gen)):
            shutil.rmtree(paths.vector(vector_engine(rt.cfg, gen)), ignore_errors=True)
        shutil.rmtree(paths.keyword, ignore_errors=True)
        # the rows of documents taken out with their source stay: put back, it comes back here too
        rt.store.clear_index_state(gen.id, [did for did, r in rt.store.index_state(gen.id).items() if not r.withheld])
    g = next(x for x in rt.lifecycle.generations(RETAINED) if x.id == gen.id)
    for s in rt.cfg.sources:
        run_index(rt, s.name, [g])
    _republish(rt, gen, f"rebuilt indexes of {gen.name} from the document store")


def _republish(rt: Runtime, gen: GenerationRecord, what: str | None = None) -> None:
    """Publish the generation's working indexes as a new snapshot, and point readers at it."""
    with writer_lock(rt.cfg, gen.name):
        open_writer(rt.cfg, gen, None).close()  # ensure empty indexes exist even with no data
        vec, kw = publish(rt.cfg, gen)
    rt.store.update_generation(gen.id, vector_snapshot=vec, keyword_snapshot=kw)
    rt.store.add_event("verify-repair", what or f"published the indexes of {gen.name} again (a snapshot was gone)")
    if gen.status == "live":
        rt.store.bump_binding()
