"""Retrieval metrics: relevance at doc+snippet level, exclusions before ranking, recall over
gold items, MRR@10 and nDCG@10 checked against independent reference formulas."""

from __future__ import annotations

import math
import random

import pytest

from evals.evalset import EvalCase, Gold
from evals.metrics import (
    METRIC_NAMES,
    CaseResult,
    Hit,
    aggregate,
    by_category,
    ndcg_at_k,
    satisfied_sets,
    score_case,
)


def case(gold: list[Gold], exclude: tuple[str, ...] = (), cid: str = "q", cat: str = "c") -> EvalCase:
    return EvalCase(id=cid, query="q?", gold=tuple(gold), category=cat, exclude_docs=exclude)


def noise(n: int, prefix: str = "noise") -> list[Hit]:
    return [Hit(f"{prefix}/{i}.md", "unrelated text") for i in range(n)]


def test_metric_names_are_the_contract() -> None:
    assert METRIC_NAMES == ("recall@5", "recall@10", "recall@20", "recall@50", "mrr@10", "ndcg@10")


@pytest.mark.parametrize(
    ("gold", "hit", "relevant"),
    [
        (Gold("a.md", None), Hit("a.md", "anything"), True),
        (Gold("a.md", None), Hit("b.md", "anything"), False),
        (Gold("a.md", "xr 4471"), Hit("a.md", "The XR-4471 valve."), True),
        (
            Gold("a.md", "xr 4471"),
            Hit("b.md", "The XR-4471 valve."),
            False,
        ),  # right text, wrong doc
        (Gold("a.md", "xr 4471"), Hit("a.md", "The XR-4472 valve."), False),
        (Gold("a.md", "it s fine"), Hit("a.md", "\u201cIt\u2019s   fine\u201d"), True),
        (Gold("a.md", "foo bar"), Hit("a.md", "Foo\nBar"), True),
        (Gold("a.md", "foo"), Hit("a.md", ""), False),
    ],
)
def test_relevance(gold: Gold, hit: Hit, relevant: bool) -> None:
    assert bool(satisfied_sets([gold], [hit])[0]) is relevant


def test_single_gold_at_rank_3() -> None:
    hits = [*noise(2), Hit("a.md", "x"), *noise(10, "more")]
    r = score_case(case([Gold("a.md")]), hits)
    assert r.first_relevant_rank == 3
    assert r["recall@5"] == 1.0 and r["mrr@10"] == pytest.approx(1 / 3)
    assert r["ndcg@10"] == pytest.approx(1 / math.log2(4))


@pytest.mark.parametrize(
    ("rank", "mrr", "r5", "r10", "r20", "r50"),
    [
        (1, 1.0, 1, 1, 1, 1),
        (5, 0.2, 1, 1, 1, 1),
        (6, 1 / 6, 0, 1, 1, 1),
        (10, 0.1, 0, 1, 1, 1),
        (11, 0.0, 0, 0, 1, 1),
        (21, 0.0, 0, 0, 0, 1),
        (50, 0.0, 0, 0, 0, 1),
        (51, 0.0, 0, 0, 0, 0),
        (None, 0.0, 0, 0, 0, 0),
    ],
)
def test_cutoffs(rank: int | None, mrr: float, r5: int, r10: int, r20: int, r50: int) -> None:
    hits = noise(60)
    if rank is not None:
        hits[rank - 1] = Hit("a.md", "x")
    r = score_case(case([Gold("a.md")]), hits)
    assert r["mrr@10"] == pytest.approx(mrr)
    assert (r["recall@5"], r["recall@10"], r["recall@20"], r["recall@50"]) == (r5, r10, r20, r50)
    assert r.first_relevant_rank == rank


def test_recall_counts_gold_items_multi_gold() -> None:
    gold = [Gold("a.md", None), Gold("b.md", "alpha beta"), Gold("b.md", "gamma"), Gold("c.md")]
    hits = noise(50)
    hits[0] = Hit("a.md", "x")  # satisfies gold 0
    hits[1] = Hit("a.md", "y")  # gold 0 again: counts once
    hits[6] = Hit("b.md", "ALPHA-beta and Gamma!")  # satisfies gold 1 and 2 at once
    hits[30] = Hit("c.md", "")  # gold 3
    r = score_case(case(gold), hits)
    assert r["recall@5"] == pytest.approx(1 / 4)
    assert r["recall@10"] == pytest.approx(3 / 4)
    assert r["recall@20"] == pytest.approx(3 / 4)
    assert r["recall@50"] == pytest.approx(1.0)
    assert r.n_gold == 4


def test_exclude_docs_dropped_before_ranks_count() -> None:
    c = case([Gold("a.md")], exclude=("old/a.md", "dup.md"))
    hits = [Hit("old/a.md", "x")] * 4 + [Hit("dup.md", "y")] * 3 + [Hit("a.md", "z")]
    r = score_case(c, hits)
    assert r.first_relevant_rank == 1 and r.n_hits == 1
    assert r["mrr@10"] == 1.0 and r["recall@5"] == 1.0 and r["ndcg@10"] == 1.0
    without = score_case(case([Gold("a.md")]), hits)
    assert without["mrr@10"] == pytest.approx(1 / 8) and without["recall@5"] == 0.0


def test_excluded_doc_never_relevant_even_if_gold() -> None:
    # load_eval_set refuses this combination; score_case still drops the doc first.
    r = score_case(case([Gold("a.md")], exclude=("a.md",)), [Hit("a.md", "x")])
    assert r["recall@50"] == 0.0 and r.first_relevant_rank is None


# ---- nDCG against independent references ------------------------------------------------------


def reference_ndcg10(ranked_docs: list[str], gold_docs: list[str]) -> float:
    """Textbook binary nDCG@10: gain 1 at the first occurrence of each gold doc."""
    seen: set[str] = set()
    dcg = 0.0
    for i, d in enumerate(ranked_docs[:10]):
        if d in gold_docs and d not in seen:
            seen.add(d)
            dcg += 1.0 / math.log2(i + 2)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold_docs), 10)))
    return dcg / idcg


def random_ranking(rng: random.Random) -> tuple[list[str], list[str]]:
    n_gold = rng.randint(1, 12)
    gold = [f"g{i}.md" for i in range(n_gold)]
    pool = gold * 2 + [f"n{i}.md" for i in range(15)]  # duplicates of gold docs too
    return [rng.choice(pool) for _ in range(rng.randint(0, 25))], gold


@pytest.mark.parametrize("seed", range(25))
def test_ndcg_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    ranked, gold = random_ranking(rng)
    r = score_case(case([Gold(d) for d in gold]), [Hit(d, "t") for d in ranked])
    assert r["ndcg@10"] == pytest.approx(reference_ndcg10(ranked, gold), abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_ndcg_matches_sklearn(seed: int) -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(100 + seed)
    n_gold = rng.randint(1, 8)
    gold = [f"g{i}.md" for i in range(n_gold)]
    ranked = gold + [f"n{i}.md" for i in range(rng.randint(0, 15))]  # every gold doc once
    rng.shuffle(ranked)
    y_true = [[1.0 if d in gold else 0.0 for d in ranked]]
    y_score = [[float(len(ranked) - i) for i in range(len(ranked))]]  # strictly decreasing
    expected = sklearn_metrics.ndcg_score(y_true, y_score, k=10) if len(ranked) > 1 else 1.0
    r = score_case(case([Gold(d) for d in gold]), [Hit(d, "t") for d in ranked])
    assert r["ndcg@10"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        # gold A = any chunk of a.md, gold B = a chunk containing "foo"
        (["foo here", "plain"], 1.0),  # hit 1 takes B, hit 2 takes A: perfect
        (["plain", "foo here"], 1.0),
        (["foo here", "noise"], 1 / (1 + 1 / math.log2(3))),  # one chunk can't count twice
        (["plain", "plain"], 1 / (1 + 1 / math.log2(3))),  # B never satisfied
    ],
)
def test_ndcg_each_gold_item_counts_once(texts: list[str], expected: float) -> None:
    c = case([Gold("a.md", None), Gold("a.md", "foo")])
    hits = [Hit("a.md", t) if t != "noise" else Hit("z.md", t) for t in texts]
    assert score_case(c, hits)["ndcg@10"] == pytest.approx(expected)


def test_ndcg_ideal_capped_at_10() -> None:
    gold = [Gold(f"g{i}.md") for i in range(15)]
    hits = [Hit(f"g{i}.md", "t") for i in range(15)]
    r = score_case(case(gold), hits)
    assert r["ndcg@10"] == pytest.approx(1.0)
    assert r["recall@10"] == pytest.approx(10 / 15)


def test_ndcg_requires_gold() -> None:
    with pytest.raises(ValueError):
        ndcg_at_k([], 0)


# ---- aggregation -------------------------------------------------------------------------------


def test_aggregate_and_by_category() -> None:
    results = [
        score_case(case([Gold("a.md")], cid="1", cat="x"), [Hit("a.md", "")]),
        score_case(case([Gold("a.md")], cid="2", cat="x"), noise(60)),
        score_case(case([Gold("a.md")], cid="3", cat="y"), [*noise(1), Hit("a.md", "")]),
    ]
    assert all(isinstance(r, CaseResult) for r in results)
    agg = aggregate(results)
    assert set(agg) == set(METRIC_NAMES)
    assert agg["recall@5"] == pytest.approx(2 / 3)
    assert agg["mrr@10"] == pytest.approx((1 + 0 + 0.5) / 3)
    cats = by_category(results)
    assert list(cats) == ["x", "y"]
    assert cats["x"]["cases"] == 2 and cats["y"]["cases"] == 1
    assert cats["x"]["mrr@10"] == pytest.approx(0.5) and cats["y"]["mrr@10"] == pytest.approx(0.5)


def test_aggregate_refuses_nothing() -> None:
    with pytest.raises(ValueError):
        aggregate([])


def test_case_result_json_round_trip() -> None:
    r = score_case(case([Gold("a.md")], cid="7"), [*noise(3), Hit("a.md", "")])
    assert CaseResult.from_json(r.to_json()) == r
