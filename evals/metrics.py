"""Retrieval metrics for one eval case and their aggregation: recall@{5,10,20,50}, MRR@10,
nDCG@10.

Relevance is judged at document + snippet level (see `Gold.satisfied_by`): a hit is relevant
iff it comes from a gold document and, when the gold item has a snippet, the hit's normalised
text contains it. Hits from the case's ``exclude_docs`` are dropped *before* ranks are counted,
so an excluded document neither takes a rank nor counts as relevant.

Every gold item counts at most once:

- recall@k is the fraction of gold items satisfied by at least one hit in the top k;
- MRR@10 is 1 / rank of the first relevant hit within the top 10, else 0;
- nDCG@10 uses binary gains. A hit gains 1 when it can be given a gold item no earlier hit
  needs, i.e. hits are matched one-to-one to the gold items they satisfy (a maximum matching,
  filled in rank order). This equals "gain 1 iff the hit satisfies a gold item not already
  satisfied by an earlier hit" whenever every hit satisfies at most one gold item, and it keeps
  a perfect ranking at 1.0 when one chunk happens to satisfy two gold items. The ideal DCG puts
  a gain of 1 at each of the first min(len(gold), 10) ranks.

Pure functions, no engine imports: the runner feeds them whatever the query service returned.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from evals.evalset import EvalCase, Gold, normalise

__all__ = [
    "METRIC_NAMES",
    "RECALL_CUTOFFS",
    "CaseResult",
    "Hit",
    "aggregate",
    "by_category",
    "dcg",
    "first_relevant_rank",
    "mrr_at_k",
    "ndcg_at_k",
    "recall_at_k",
    "satisfied_sets",
    "score_case",
]

RECALL_CUTOFFS: tuple[int, ...] = (5, 10, 20, 50)
MRR_K = 10
NDCG_K = 10
METRIC_NAMES: tuple[str, ...] = (
    *(f"recall@{k}" for k in RECALL_CUTOFFS),
    f"mrr@{MRR_K}",
    f"ndcg@{NDCG_K}",
)


class Hit(NamedTuple):
    """One retrieved chunk as the metrics see it: its document's external id and its text."""

    doc: str
    text: str
    source: str | None = None  # None: the search did not say (then any source's `doc` matches)


@dataclass(frozen=True)
class CaseResult:
    """Metric values of one case. ``values`` maps every name in `METRIC_NAMES` to a float;
    ``first_relevant_rank`` is the 1-based rank of the first relevant hit (after exclusions,
    at any depth retrieved) or None."""

    id: str
    category: str
    query: str
    values: Mapping[str, float]
    first_relevant_rank: int | None
    n_gold: int
    n_hits: int  # hits scored, after dropping excluded documents

    def __getitem__(self, metric: str) -> float:
        return self.values[metric]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "category": self.category,
            "query": self.query,
            "metrics": dict(self.values),
            "first_relevant_rank": self.first_relevant_rank,
            "n_gold": self.n_gold,
            "n_hits": self.n_hits,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CaseResult:
        return cls(
            id=str(d["id"]),
            category=str(d["category"]),
            query=str(d.get("query", "")),
            values={m: float(d["metrics"][m]) for m in METRIC_NAMES},
            first_relevant_rank=d.get("first_relevant_rank"),
            n_gold=int(d.get("n_gold", 0)),
            n_hits=int(d.get("n_hits", 0)),
        )


def satisfied_sets(gold: Sequence[Gold], hits: Iterable[Hit]) -> list[frozenset[int]]:
    """For each hit in rank order, the indices of the gold items it satisfies (empty: not
    relevant). Each hit text is normalised once."""
    out: list[frozenset[int]] = []
    for hit in hits:
        norm = normalise(hit.text or "")
        out.append(frozenset(i for i, g in enumerate(gold) if g.satisfied_by(hit.doc, norm, hit.source)))
    return out


def recall_at_k(sat: Sequence[frozenset[int]], n_gold: int, k: int) -> float:
    """Fraction of the ``n_gold`` gold items satisfied by at least one of the top ``k`` hits."""
    if n_gold <= 0:
        raise ValueError("a case needs at least one gold item")
    covered: set[int] = set()
    for s in sat[:k]:
        covered |= s
    return len(covered) / n_gold


def first_relevant_rank(sat: Sequence[frozenset[int]]) -> int | None:
    """1-based rank of the first hit that satisfies any gold item, or None."""
    return next((rank for rank, s in enumerate(sat, start=1) if s), None)


def mrr_at_k(sat: Sequence[frozenset[int]], k: int = MRR_K) -> float:
    """Reciprocal rank of the first relevant hit within the top ``k``, else 0."""
    rank = first_relevant_rank(sat[:k])
    return 0.0 if rank is None else 1.0 / rank


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain: sum of gain / log2(rank + 1) over 1-based ranks."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def _gains(sat: Sequence[frozenset[int]]) -> list[int]:
    """Binary gain per hit: 1 iff the hit joins a one-to-one matching of hits to gold items.

    Hits are processed in rank order; each tries to find an augmenting path (Kuhn's
    algorithm), so earlier matched hits stay matched and the set of gaining hits is the
    rank-greedy maximum matching, which maximises DCG for decreasing discounts.
    """
    owner: dict[int, int] = {}  # gold index -> hit index

    def augment(hit: int, seen: set[int]) -> bool:
        for g in sat[hit]:
            if g in seen:
                continue
            seen.add(g)
            if g not in owner or augment(owner[g], seen):
                owner[g] = hit
                return True
        return False

    return [1 if s and augment(i, set()) else 0 for i, s in enumerate(sat)]


def ndcg_at_k(sat: Sequence[frozenset[int]], n_gold: int, k: int = NDCG_K) -> float:
    """nDCG@k with binary gains, each gold item counted at most once; the ideal ranking has
    min(n_gold, k) gains of 1 at the top."""
    if n_gold <= 0:
        raise ValueError("a case needs at least one gold item")
    ideal = dcg([1] * min(n_gold, k))
    return dcg(_gains(sat[:k])) / ideal


def score_case(case: EvalCase, hits: Iterable[Hit]) -> CaseResult:
    """Score one case's ranked hits: drop excluded documents, then compute every metric."""
    excluded = set(case.exclude_docs)
    kept = [h for h in hits if h.doc not in excluded]
    sat = satisfied_sets(case.gold, kept)
    n_gold = len(case.gold)
    values = {f"recall@{k}": recall_at_k(sat, n_gold, k) for k in RECALL_CUTOFFS}
    values[f"mrr@{MRR_K}"] = mrr_at_k(sat, MRR_K)
    values[f"ndcg@{NDCG_K}"] = ndcg_at_k(sat, n_gold, NDCG_K)
    return CaseResult(
        id=case.id,
        category=case.category,
        query=case.query,
        values=values,
        first_relevant_rank=first_relevant_rank(sat),
        n_gold=n_gold,
        n_hits=len(kept),
    )


def aggregate(per_case: Sequence[CaseResult]) -> dict[str, float]:
    """Mean of every metric in `METRIC_NAMES` over the cases (macro average, one vote per
    query). Raises `ValueError` on an empty sequence: a mean of nothing would let a gate pass
    on no evidence."""
    if not per_case:
        raise ValueError("cannot aggregate zero cases")
    n = len(per_case)
    return {m: math.fsum(c.values[m] for c in per_case) / n for m in METRIC_NAMES}


def by_category(per_case: Sequence[CaseResult]) -> dict[str, dict[str, float | int]]:
    """``{category: {metric: mean, ..., "cases": n}}``, categories sorted by name."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for c in per_case:
        groups[c.category].append(c)
    return {cat: {**aggregate(groups[cat]), "cases": len(groups[cat])} for cat in sorted(groups)}
