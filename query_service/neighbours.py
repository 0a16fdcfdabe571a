"""Neighbour expansion (`query.neighbours`, or a request's `neighbours`): with each hit, the
texts of the few chunks just before and just after its unit, in document order.

A hit is a unit (small-to-big: a short document whole, a section, or a run of one section's
chunks). When the answer runs past the unit's edge (a step list that continues in the next
section, a table split across a page), the reader wants what comes next without a second
query. Neighbours come from the same document, so they carry the hit's access rights, and
from the same generation, found by their chunk ids (`connectors.identity.chunk_id` of the
document, the chunk version and the ordinal). A unit that is its whole document has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connectors.config import MAX_NEIGHBOURS
from connectors.identity import chunk_id

__all__ = ["MAX_NEIGHBOURS", "neighbour_texts"]

_PROBE = 16  # chunk ids read past a unit's first chunk in the first round, doubled each round after
# 16 x (2^11 - 1) = 32,752 chunks: past the largest unit the configuration allows
# (parent_max_tokens 100,000 over chunks of at least 16 word pieces: 6,250 chunks)
_MAX_ROUNDS = 11

Payloads = Callable[[Sequence[str]], dict[str, dict[str, Any]]]


def neighbour_texts(heads: dict[str, dict[str, Any]], n: int, chunk_version: str,
                    payloads: Payloads) -> dict[str, tuple[list[str], list[str]]]:
    """unit id -> (display texts of up to `n` chunks before the unit, up to `n` after it).

    `heads` maps each unit to its first chunk's payload (`doc_id`, `ordinal`); `payloads`
    reads payloads by chunk id, leaving out ids the generation does not hold (past the end of
    a document). The chunks after a unit are found by reading on from its first chunk over the
    unit's own chunks, 16 ids, then 32, 64, ...; every unit's reads go in one call per round."""
    if n <= 0:
        return {}
    docs = {u: (str(p["doc_id"]), int(p["ordinal"])) for u, p in heads.items()
            if p.get("doc_id") is not None and p.get("ordinal") is not None}
    before_ids = {u: [chunk_id(d, chunk_version, o) for o in range(max(0, first - n), first)]
                  for u, (d, first) in docs.items()}
    found = payloads([c for ids in before_ids.values() for c in ids])
    before = {u: [found[c]["display_text"] for c in ids if c in found] for u, ids in before_ids.items()}
    after: dict[str, list[str]] = {u: [] for u in docs}
    at = {u: first + 1 for u, (_, first) in docs.items()}  # the next ordinal to read
    open_units = set(docs)
    for round_ in range(_MAX_ROUNDS):
        if not open_units:
            break
        size = _PROBE << round_  # a long unit costs a few reads, a short one reads little past its end
        window = {u: [chunk_id(docs[u][0], chunk_version, o) for o in range(at[u], at[u] + size)]
                  for u in open_units}
        found = payloads([c for ids in window.values() for c in ids])
        for u, ids in window.items():
            at[u] += size
            for c in ids:
                p = found.get(c)
                if p is None:  # the document ends here
                    open_units.discard(u)
                    break
                if p.get("unit", c) == u:  # still inside the unit (its own text is the hit)
                    continue
                after[u].append(str(p["display_text"]))
                if len(after[u]) == n:
                    open_units.discard(u)
                    break
    return {u: (before[u], after[u]) for u in docs}
