"""From retriever hits to a ranked list of units (small-to-big), the reader's answers.

The indexes match *chunks* (what fits the embedder's window); a query returns *units*: the whole
document, a section or a run of one section's chunks, grouped at chunking time
(`assets.chunking.group_units`; each chunk's payload names its unit by the unit's first chunk).

1. Each retriever's chunk list becomes a unit list: a unit sits at its best chunk's place with
   that chunk's score (several matching chunks of one unit no longer take several slots).
   The keyword index's unit-level list (BM25 over whole units) is a third list; e-mail
   messages in it weigh `message_unit_weight` (0 by default: a message's whole-unit BM25
   repeats its chunk BM25), other units `unit_weight`.
2. The lists are fused (`query_service.fusion`: z-score by default, or RRF).
3. E-mail threads (`thread_weight`): a message's parent and its replies gain a share of its
   standing (weight x its lead over the list's last unit), so the message a matching reply
   answers, or the replies to a matching question, come up with it; the other messages of its
   thread (same root Message-ID, threads of at most `THREAD_MATES_MAX` messages) gain
   `thread_mates_weight` of it. A neighbour no retriever found enters the list this way.
4. A pasted reply's attribution line (`attribution_weight`): the messages it points at gain
   a bonus by their evidence (`query_service.attribution`), after the thread step, so the
   attributed message does not lend its bonus to its neighbours.
5. A document's further units are discounted by `same_doc_decay` per unit already listed, and
   at most `max_chunks_per_doc` units of one document are kept (0: no limit).

A chunk without a `unit` in its payload (an index written before units) is its own unit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.config import QueryConfig
from connectors.indexes.base import ScoredId
from query_service.attribution import attribution_bonus
from query_service.fusion import Fused, rrf, zscore

__all__ = ["Neighbours", "RankedUnit", "diversify", "per_document", "rank_units", "thread_bonus", "unit_of"]

Payloads = Mapping[str, Mapping[str, Any]]
THREAD_SOURCES = 30  # how many leading units lend their standing to their thread neighbours


@dataclass(frozen=True)
class RankedUnit:
    unit_id: str  # the chunk id of the unit's first chunk
    chunk_id: str  # the unit's best-matching chunk
    score: float
    ranks: dict[str, int]  # retriever -> the unit's 1-based rank in that retriever's unit list


def unit_of(chunk_id: str, payloads: Payloads) -> str:
    return str((payloads.get(chunk_id) or {}).get("unit") or chunk_id)


def _to_units(hits: Sequence[ScoredId], payloads: Payloads) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """(unit id, score) best first, each unit once at its best chunk; and unit -> that chunk.

    Equal scores are ordered by chunk id, not as the engine returned them: two copies of one
    text score alike, and an engine lists them in the order they were written, which differs
    between two builds of the same settings, so the same query ranked the copies (and their
    documents) differently in each build and `bindery tune`'s trials were not repeatable."""
    units: list[tuple[str, float]] = []
    best: dict[str, str] = {}
    for h in sorted(hits, key=lambda h: (-h.score, h.chunk_id)):
        u = unit_of(h.chunk_id, payloads)
        if u not in best:
            best[u] = h.chunk_id
            units.append((u, h.score))
    return units, best


# (unit, its best chunk) of every fused unit -> unit -> {neighbour unit: "near" (its message's
# parent or a reply to it) or "mate" (another message of its thread)}; the callable also puts
# the neighbours' payloads into the payloads it was given.
Neighbours = Callable[[Sequence[tuple[str, str]]], dict[str, dict[str, str]]]


def rank_units(dense: Sequence[ScoredId], sparse: Sequence[ScoredId], unit_sparse: Sequence[ScoredId],
               payloads: Payloads, qcfg: QueryConfig, neighbours: Neighbours | None = None,
               attributed: Mapping[str, tuple[str, float]] | None = None,
               complete: Collection[str] = ()) -> list[RankedUnit]:
    """Steps 1-5 of the module docstring. `payloads` must hold every chunk id in the three lists;
    `attributed` maps a unit to (its best chunk, its evidence) (`attribution.attributed_units`);
    `complete` names the keyword lists ("sparse", "unit") that came back shorter than
    `qcfg.candidates` (before any filtering), so hold every match (`fusion.zscore`)."""
    d_units, d_best = _to_units(dense, payloads)
    s_units, s_best = _to_units(sparse, payloads)
    lists = {"dense": d_units, "sparse": s_units, **_unit_lists(unit_sparse, payloads, qcfg)}
    weights = {"dense": qcfg.dense_weight, "sparse": qcfg.sparse_weight, "unit": qcfg.unit_weight,
               "message_unit": qcfg.message_unit_weight}
    whole = {*complete, *(("message_unit",) if "unit" in complete else ())}  # the unit list's halves
    if qcfg.fusion == "zscore":
        fused = zscore(lists, weights, dict.fromkeys(whole, qcfg.candidates))
    else:
        fused = rrf({name: [u for u, _ in items] for name, items in lists.items()}, k=qcfg.rrf_k, weights=weights)

    def best_chunk(f: Fused) -> str:
        d, s = f.ranks.get("dense"), f.ranks.get("sparse")
        if d is not None and (s is None or d <= s):
            return d_best[f.chunk_id]
        return s_best[f.chunk_id] if s is not None else f.chunk_id

    chunk_of = {f.chunk_id: best_chunk(f) for f in fused}
    weights = {"near": qcfg.thread_weight, "mate": qcfg.thread_mates_weight}
    if neighbours is not None and max(weights.values()) > 0 and fused:
        top = fused[:THREAD_SOURCES]  # neighbours of the leading units only: one lookup, bounded
        fused = thread_bonus(fused, neighbours([(f.chunk_id, chunk_of[f.chunk_id]) for f in top]), weights)
        chunk_of.update({f.chunk_id: f.chunk_id for f in fused if f.chunk_id not in chunk_of})
    if attributed and qcfg.attribution_weight > 0:
        fused = attribution_bonus(fused, {u: e for u, (_, e) in attributed.items()}, qcfg.attribution_weight)
        chunk_of.update({u: c for u, (c, _) in attributed.items() if u not in chunk_of})

    def doc_of(unit: str) -> str:
        return str((payloads.get(chunk_of[unit]) or {}).get("doc_id", unit))

    ranked = per_document(diversify(fused, doc_of, qcfg.same_doc_decay), doc_of, qcfg.max_chunks_per_doc)
    return [RankedUnit(f.chunk_id, chunk_of[f.chunk_id], f.score, f.ranks) for f in ranked]


def _unit_lists(unit_sparse: Sequence[ScoredId], payloads: Payloads,
                qcfg: QueryConfig) -> dict[str, list[tuple[str, float]]]:
    """The whole-unit BM25 list as fused: one list ("unit") while e-mail messages weigh as other
    units, else split by kind ("unit", "message_unit": a message's thread keys mark it), each with
    its own weight; a list whose weight is 0 is left out."""
    items = [(h.chunk_id, h.score) for h in sorted(unit_sparse, key=lambda h: (-h.score, h.chunk_id))]  # as _to_units
    if qcfg.message_unit_weight == qcfg.unit_weight:
        return {"unit": items} if items and qcfg.unit_weight > 0 else {}
    message = {h.chunk_id for h in unit_sparse if (payloads.get(h.chunk_id) or {}).get("message_id")}
    split = {"unit": [i for i in items if i[0] not in message], "message_unit": [i for i in items if i[0] in message]}
    weight = {"unit": qcfg.unit_weight, "message_unit": qcfg.message_unit_weight}
    return {name: got for name, got in split.items() if got and weight[name] > 0}


def thread_bonus(fused: list[Fused], neighbours: Mapping[str, Mapping[str, str]],
                 weights: Mapping[str, float]) -> list[Fused]:
    """Step 3: each unit's neighbours gain the weight of their kind ("near": parent or reply,
    "mate": the rest of the thread) x (its score - the lowest fused score); a neighbour keeps
    the largest share it is offered, and one not yet listed starts from the lowest score (ranked
    "thread": the rank of the unit that brought it)."""
    if not neighbours:
        return fused
    base = min(f.score for f in fused)
    by_id = {f.chunk_id: f for f in fused}
    bonus: dict[str, tuple[float, int]] = {}
    for rank, f in enumerate(fused, start=1):
        for n, kind in neighbours.get(f.chunk_id, {}).items():
            share = weights.get(kind, 0.0) * (f.score - base)
            if n != f.chunk_id and share > bonus.get(n, (0.0, 0))[0]:
                bonus[n] = (share, rank)
    out = [f._replace(score=f.score + bonus[f.chunk_id][0]) if f.chunk_id in bonus else f for f in fused]
    out += [Fused(n, base + b, {"thread": r}) for n, (b, r) in bonus.items() if n not in by_id]
    return sorted(out, key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id))


def diversify(fused: list[Fused], doc_of: Callable[[str], str], decay: float) -> list[Fused]:
    """Multiply the score of the n-th entry of a document (in fused order) by decay**(n-1).

    A score below zero (z-score fusion) is divided instead, so a later entry of a document
    always moves down, never up."""
    if decay >= 1.0:
        return fused
    seen: dict[str, int] = {}
    out = []
    for f in fused:
        doc = doc_of(f.chunk_id)
        n = seen.get(doc, 0)
        seen[doc] = n + 1
        factor = decay**n
        out.append(f._replace(score=f.score * factor if f.score >= 0 else f.score / factor))
    return sorted(out, key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id))


def per_document(fused: list[Fused], doc_of: Callable[[str], str], limit: int) -> list[Fused]:
    """Keep at most `limit` entries of each document (in fused order; 0 keeps all).

    The top-k is a list of things to read: a further unit of a document already listed takes a
    slot another document could use (issue 8: on e-mail, several chunks of one message filled
    the top 10). A document ranks where its best unit ranks.
    """
    if limit <= 0:
        return fused
    seen: dict[str, int] = {}
    out = []
    for f in fused:
        doc = doc_of(f.chunk_id)
        seen[doc] = seen.get(doc, 0) + 1
        if seen[doc] <= limit:
            out.append(f)
    return out
