"""Documents of sources the configuration no longer names.

Taking a source out of `bindery.yaml` withholds its documents at the next listing of any source
(`assets.listing_access.withhold_removed_sources`: an empty ACL, which the query service reads from the
store with every answer, then out of every retained generation's indexes). Its store rows, chunks
and embeddings stay until `bindery gc` removes them here, the way a delete sweep removes deleted
files. A sync does not delete them: a source renamed by mistake (or
a configuration copied without one source) must not cost its documents before an operator has
seen `bindery status` name it. Put back before a gc, its next listing restores them; after a gc
(which also drops their cached parses and embeddings) a sync ingests them anew.
"""

from __future__ import annotations

import time

from assets.index_stage import unindex_source
from assets.runtime import Runtime

__all__ = ["remove_unconfigured_sources"]


def remove_unconfigured_sources(rt: Runtime) -> tuple[dict[str, int], list[str]]:
    """Remove the documents of every source the configuration does not name, from the indexes of
    every retained generation first and from the store last (a process killed in between leaves
    store rows that the next gc removes again). Returns (source -> documents removed, warnings).

    A source that a rollback target's damaged index still holds keeps its store rows (withheld
    from everyone all the same): removed from the store now, no later gc would find it there to
    take out of that index once `bindery verify --repair` has made it readable again."""
    removed: dict[str, int] = {}
    warnings: list[str] = []
    for source in rt.store.removed_sources(rt.cfg.source_names()):
        # done by the listing that withheld it, unless a run died first or an index was damaged
        if damaged := unindex_source(rt, source, forget=True):
            warnings += [f"source {source!r} stays in the store: generation {name}'s index could not be opened "
                         f"({why}); run `bindery verify --repair`, then `bindery gc` again"
                         for name, why in damaged.items()]
            continue
        gone = [d.doc_id for d in rt.store.documents(source)]
        rt.store.purge_documents(gone)
        rt.store.mark_deleted(gone, time.time())
        rt.store.retire_moved(rt.store.moved_away(source))  # old paths kept for a move: out of every index above
        # its listing problems and unread files too: no sync of it will ever clear them
        rt.store.delete_dead_letters([d.id for d in rt.store.dead_letters(source=source)])
        rt.store.add_event("gc", f"removed the {len(gone)} documents of source {source!r}, "
                                 "which the configuration no longer names")
        removed[source] = len(gone)
    return removed, warnings
