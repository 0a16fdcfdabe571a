"""Fusion of ranked lists from several retrievers (`QueryConfig.fusion`).

- `zscore` (the default): each retriever's scores standardised over its own candidates, then a
  weighted sum. Measured better than RRF on every dev set (docs/retrieval.md).
- `rrf`: weighted reciprocal rank fusion, score(d) = sum over retrievers of w_r / (k + rank_r(d)),
  rank 1-based; rank-based, so it ignores how far apart the scores are.

Ties break by best single rank, then by id, so results are deterministic. Weights default to 1;
`QueryConfig.dense_weight` / `sparse_weight` / `unit_weight` set them per retriever.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple


class Fused(NamedTuple):
    chunk_id: str
    score: float
    ranks: dict[str, int]  # retriever name -> 1-based rank (absent when not retrieved)


def rrf(ranked: Mapping[str, Sequence[str]], k: int = 60,
        weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Fuse ranked id lists; a retriever missing from `weights` weighs 1."""
    weights = weights or {}
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, ids in ranked.items():
        seen: set[str] = set()
        for i, cid in enumerate(ids, start=1):
            if cid in seen:  # a retriever listing an id twice must not count it twice
                continue
            seen.add(cid)
            scores[cid] = scores.get(cid, 0.0) + weights.get(name, 1.0) / (k + i)
            ranks.setdefault(cid, {})[name] = i
    return sorted(
        (Fused(cid, s, ranks[cid]) for cid, s in scores.items()),
        key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id),
    )


def zscore(scored: Mapping[str, Sequence[tuple[str, float]]],
           weights: Mapping[str, float] | None = None, complete: Mapping[str, int] | None = None) -> list[Fused]:
    """Score fusion: sum over retrievers of w_r * z_r(d), where z_r standardises retriever r's
    scores over its own candidate list (mean 0, standard deviation 1).

    Standardising per query makes a cosine similarity and a BM25 score commensurable, and unlike
    RRF it keeps *how much* better a candidate is: one clearly best match is not flattened to
    the same 1/(k+1) as a marginal one. An id a retriever did not return gets that retriever's
    lowest standardised score (it ranked below the list's last candidate). Ties break by best
    single rank, then id, as in `rrf`.

    `complete` names the retrievers whose list holds every match (BM25 returned fewer hits than
    it was asked for), with the depth asked: every other unit scores that retriever's natural 0
    (no query word), so the statistics are taken over the depth, the missing entries as zeros.
    Standardised over its own few entries, a lone exact match of a rare name scored z = 0 (two
    matches: +1 and -1) and eleven of sixty two-rare-word lookups on an e-mail archive ranked
    their only matching message below dense-only neighbours, some out of the top ten.
    """
    weights = weights or {}
    complete = complete or {}
    z: dict[str, dict[str, float]] = {}
    floors: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, items in scored.items():
        best: dict[str, float] = {}
        for rank, (cid, s) in enumerate(items, start=1):
            if cid not in best:  # a retriever listing an id twice counts its best score
                best[cid] = s
                ranks.setdefault(cid, {})[name] = rank
        if not best:
            continue
        values = list(best.values())
        zeros = max(0, complete.get(name, 0) - len(values))
        n = len(values) + zeros
        mean = math.fsum(values) / n
        sd = math.sqrt((math.fsum((v - mean) ** 2 for v in values) + zeros * mean**2) / n) or 1.0
        z[name] = {cid: (s - mean) / sd for cid, s in best.items()}
        floors[name] = -mean / sd if zeros else min(z[name].values())
    total = {cid: math.fsum(weights.get(name, 1.0) * z[name].get(cid, floors[name]) for name in z)
             for cid in ranks}
    return sorted((Fused(cid, s, ranks[cid]) for cid, s in total.items()),
                  key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id))
