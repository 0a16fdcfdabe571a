"""Documents of sources the configuration no longer names.

Taking a source out of `bindery.yaml` withholds its documents from everyone at the next listing
of any source (`assets.listing.withhold_removed_sources`: an empty ACL, which the query service
reads from the store with every answer). Its rows and index entries stay until `bindery gc`
removes them here, from every retained generation's indexes and then from the store, the way a
delete sweep removes deleted files. A sync does not delete them: a source renamed by mistake (or
a configuration copied without one source) must not cost its documents before an operator has
seen `bindery status` name it. Put back before a gc, its next listing restores them; after a gc
(which also drops their cached parses and embeddings) a sync ingests them anew.
"""

from __future__ import annotations

import time

from assets.runtime import Runtime
from connectors.generations import publish, writer_lock
from connectors.lifecycle import RETAINED

__all__ = ["remove_unconfigured_sources"]


def remove_unconfigured_sources(rt: Runtime) -> dict[str, int]:
    """Remove the documents of every source the configuration does not name, from the indexes of
    every retained generation first and from the store last (a process killed in between leaves
    store rows that the next gc removes again). Returns source -> documents removed."""
    removed = rt.store.removed_sources(rt.cfg.source_names())
    for source in removed:
        for g in rt.lifecycle.generations(RETAINED):
            held = list(rt.store.index_state(g.id, source))
            if not held:
                continue
            with writer_lock(rt.cfg, g.name):
                pair = rt.open_writer(g.record, None)
                try:
                    pair.vector.delete_docs(held)
                    pair.keyword.delete_docs(held)
                    pair.keyword.commit()
                    counts = {"chunks": pair.vector.count(), "keyword_chunks": pair.keyword.count()}
                finally:
                    pair.close()
                vec, kw = publish(rt.cfg, g.record)
            rt.store.update_generation(g.id, vector_snapshot=vec, keyword_snapshot=kw, published_at=time.time())
            if g.status == "live":
                rt.store.bump_binding()
            rt.store.clear_index_state(g.id, held)
            rt.store.update_generation(g.id, counts={**counts, "documents": len(rt.store.index_state(g.id))})
        gone = [d.doc_id for d in rt.store.documents(source)]
        rt.store.purge_documents(gone)
        rt.store.mark_deleted(gone, time.time())
        # its listing problems and unread files too: no sync of it will ever clear them
        rt.store.delete_dead_letters([d.id for d in rt.store.dead_letters(source=source)])
        rt.store.add_event("gc", f"removed the {len(gone)} documents of source {source!r}, "
                                 "which the configuration no longer names")
    return removed
