"""Weighted reciprocal rank fusion: score(d) = sum over retrievers of w_r / (k + rank_r(d)), rank 1-based.

Rank-based, so BM25 scores and cosine similarities never need calibrating against each other.
Ties break by best single rank, then by chunk id, so results are deterministic. Weights default
to 1 (plain RRF); `QueryConfig.dense_weight` / `sparse_weight` set them per retriever.
"""

from __future__ import annotations

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
