"""The eval runner: any search callable in, the `bindery eval --json` contract out."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from connectors.errors import ConfigError
from evals.evalset import EvalCase, Gold, load_eval_set
from evals.metrics import METRIC_NAMES, Hit
from evals.runner import EvalReport, SearchFn, format_table, run_eval, to_hit

EVALDATA = Path(__file__).resolve().parent.parent / "benchmarks" / "evalsets"


@dataclass
class ChunkHit:
    chunk_id: str
    doc: str
    text: str
    score: float = 0.0


CASES = [
    EvalCase("q1", "first question", (Gold("a.md", "the answer"),), "faq"),
    EvalCase("q2", "second question", (Gold("b.md"),), "faq"),
    EvalCase("q3", "third question", (Gold("c.md"),), "howto", ("c-old.md",)),
]


def search_with(ranked: dict[str, list[Any]]) -> tuple[list[tuple[str, int]], SearchFn]:
    calls: list[tuple[str, int]] = []

    def search(query: str, k: int) -> list[Any]:
        calls.append((query, k))
        return ranked[query][:k]

    return calls, search


@pytest.mark.parametrize(
    "make",
    [
        lambda d, t: {"doc": d, "text": t, "chunk_id": "x", "score": 1.0},
        lambda d, t: SimpleNamespace(doc=d, text=t),
        lambda d, t: ChunkHit("x", d, t),
        Hit,
    ],
    ids=["dict", "namespace", "dataclass", "Hit"],
)
def test_accepts_dicts_and_objects(make: Callable[[str, str | None], Any]) -> None:
    ranked = {
        "first question": [make("z.md", "no"), make("a.md", "So: THE answer.")],
        "second question": [make("b.md", None if make is not Hit else "")],
        "third question": [make("c-old.md", "x"), make("c-old.md", "x"), make("c.md", "y")],
    }
    calls, search = search_with(ranked)
    report = run_eval(CASES, search, k=20)
    assert calls == [("first question", 20), ("second question", 20), ("third question", 20)]
    assert report.cases == 3
    assert report.case("q1").first_relevant_rank == 2
    assert report.case("q3").first_relevant_rank == 1  # excluded doc took no rank
    assert report.metrics["mrr@10"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert report.by_category["faq"]["cases"] == 2
    assert report.by_category["howto"]["mrr@10"] == 1.0


def test_to_json_is_the_eval_contract() -> None:
    _, search = search_with({c.query: [Hit("a.md", "the answer")] for c in CASES})
    out = run_eval(CASES, search).to_json()
    assert set(out) == {"cases", "metrics", "by_category", "unknown_gold_docs"}
    assert out["cases"] == 3 and out["unknown_gold_docs"] == []
    assert list(out["metrics"]) == list(METRIC_NAMES)
    assert set(out["by_category"]) == {"faq", "howto"}
    assert out["by_category"]["faq"] == {**out["by_category"]["faq"], "cases": 2}
    assert set(out["by_category"]["howto"]) == {*METRIC_NAMES, "cases"}
    json.dumps(out)


def test_unknown_gold_documents_are_named_in_the_table() -> None:
    from dataclasses import replace

    _, search = search_with({c.query: [Hit("a.md", "the answer")] for c in CASES})
    report = replace(run_eval(CASES, search), unknown_gold=("docs/howto/x.md",))
    assert report.to_json()["unknown_gold_docs"] == ["docs/howto/x.md"]
    assert "warning: 1 gold documents are not in this generation" in format_table(report)
    assert "docs/howto/x.md" in format_table(report)
    assert "warning" not in format_table(run_eval(CASES, search))


def test_json_round_trip_with_per_case() -> None:
    _, search = search_with({c.query: [Hit("b.md", ""), Hit("a.md", "the answer")] for c in CASES})
    report = run_eval(CASES, search)
    stored = json.loads(json.dumps(report.to_json(include_per_case=True)))
    again = EvalReport.from_json(stored)
    assert [c.id for c in again.per_case] == ["q1", "q2", "q3"]
    assert again.metrics == pytest.approx(report.metrics)
    with pytest.raises(ConfigError, match="per-case"):
        EvalReport.from_json(report.to_json())


@pytest.mark.parametrize("bad", [{"text": "x"}, SimpleNamespace(text="x"), {"doc": 3, "text": ""}])
def test_hit_without_doc_is_a_bug(bad: Any) -> None:
    with pytest.raises(TypeError, match="doc"):
        to_hit(bad)


def test_empty_eval_and_bad_k_refused() -> None:
    with pytest.raises(ConfigError):
        run_eval([], lambda q, k: [])
    with pytest.raises(ConfigError):
        run_eval(CASES, lambda q, k: [], k=0)


def test_search_errors_propagate() -> None:
    def broken(query: str, k: int) -> list[Hit]:
        raise RuntimeError("index closed")

    with pytest.raises(RuntimeError, match="index closed"):
        run_eval(CASES, broken)


@pytest.mark.parametrize("name", ["python_faq.jsonl", "redis_commands.jsonl"])
def test_perfect_search_on_real_sets(name: str) -> None:
    cases = load_eval_set(EVALDATA / name)
    # A few queries are shared by several cases with different gold docs (e.g. redis's 14
    # "Show helpful text about the different subcommands"); one ranking serves them all.
    golds: dict[str, list[Gold]] = defaultdict(list)
    for c in cases:
        golds[c.query].extend(c.gold)

    def oracle(query: str, k: int) -> list[dict[str, Any]]:
        return [{"doc": g.doc, "text": f"... {g.text or ''} ..."} for g in golds[query]][:k]

    report = run_eval(cases, oracle)
    assert report.metrics["recall@50"] == 1.0
    for c in cases:
        if len(golds[c.query]) == len(c.gold):
            assert report.case(c.id).values == {m: pytest.approx(1.0) for m in METRIC_NAMES}
    zero = run_eval(cases, lambda q, k: [{"doc": "nowhere.md", "text": "x"}] * k)
    assert zero.metrics == dict.fromkeys(METRIC_NAMES, 0.0)


def test_format_table() -> None:
    _, search = search_with({c.query: [Hit("a.md", "the answer")] for c in CASES})
    table = format_table(run_eval(CASES, search))
    lines = table.splitlines()
    assert lines[0].split() == ["metric", "all", "faq", "howto"]
    assert [ln.split()[0] for ln in lines[2:]] == [*METRIC_NAMES, "cases"]
    assert lines[-1].split() == ["cases", "3", "2", "1"]
    assert "0.3333" in table
    assert len({len(ln) for ln in lines[:2]}) == 1  # fixed width header and rule


def test_format_table_single_category() -> None:
    report = run_eval(CASES[:2], lambda q, k: [Hit("b.md", "")])
    assert report.to_json()["by_category"].keys() == {"faq"}
    assert format_table(report).splitlines()[0].split() == ["metric", "all", "(faq)"]


def test_gold_documents_may_be_named_as_bindery_query_prints_them() -> None:
    """`bindery query` prints a hit as `source:path`; an eval set labelled by copying that line
    must name the document, not score zero with a "not in the corpus" warning."""
    from evals.evalset import EvalCase, Gold, resolve_source_prefixes

    docs = [("docs", "api/quickstart.md"), ("wiki", "a:b.md"), ("docs", "wiki:a:b.md"), ("docs", "old:c.md")]
    case = EvalCase(id="q", query="start", gold=(Gold("docs:api/quickstart.md"), Gold("a:b.md"), Gold("wiki:a:b.md"),
                                                 Gold("other:x.md")),
                    exclude_docs=("docs:old:c.md",))
    (got,) = resolve_source_prefixes([case], docs)
    # a name that is a document's own id stays (a path may hold ':'); an unknown one is left alone
    assert [g.doc for g in got.gold] == ["api/quickstart.md", "a:b.md", "wiki:a:b.md", "other:x.md"]
    assert got.exclude_docs == ("old:c.md",)
    assert [g.source for g in got.gold] == ["docs", None, None, None]


def test_a_gold_label_that_names_its_source_is_not_answered_by_another_sources_file() -> None:
    """`docs:tea-brewing.md` lost its source when resolved, so a `cafe` source's file at the
    same path, ranked first, scored the case MRR 1.0, and the gate could pass a candidate that
    returned the wrong source's document (a gate pass's find)."""
    from evals.evalset import EvalCase, Gold, resolve_source_prefixes
    from evals.metrics import Hit, score_case

    docs = [("docs", "tea-brewing.md"), ("cafe", "tea-brewing.md")]
    (case,) = resolve_source_prefixes([EvalCase(id="m1", query="espresso", gold=(Gold("docs:tea-brewing.md"),))], docs)
    hits = [Hit("tea-brewing.md", "espresso", "cafe"), Hit("tea-brewing.md", "green tea", "docs")]
    assert score_case(case, hits).values["mrr@10"] == 0.5
    (plain,) = resolve_source_prefixes([EvalCase(id="m2", query="espresso", gold=(Gold("tea-brewing.md"),))], docs)
    assert score_case(plain, hits).values["mrr@10"] == 1.0  # a label without a source: either file
    assert score_case(case, [Hit("tea-brewing.md", "x")]).values["mrr@10"] == 1.0  # a search that names none
