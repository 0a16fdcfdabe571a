"""The promotion gate: paired per-query comparison, tolerance and regression budget."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from connectors.errors import ConfigError, GateRefused
from evals.gate import NO_LIVE_REASON, GateReport, compare, first_generation_report, format_gate
from evals.metrics import METRIC_NAMES, CaseResult
from evals.runner import EvalReport

GATE_KEYS = {
    "passed",
    "metric",
    "tolerance",
    "max_regressions",
    "live",
    "candidate",
    "delta",
    "regressed",
    "improved",
    "by_category",
    "reasons",
}


def report(recall10: list[float], mrr: list[float] | None = None, n_cats: int = 2) -> EvalReport:
    """A report whose case i has recall@10 = recall10[i] (every other metric = mrr[i] or the
    same value); cases alternate between n_cats categories."""
    mrr = recall10 if mrr is None else mrr
    cases = []
    for i, (r, m) in enumerate(zip(recall10, mrr, strict=True)):
        values = dict.fromkeys(METRIC_NAMES, r)
        values["mrr@10"] = m
        cases.append(
            CaseResult(f"q{i}", f"cat{i % n_cats}", f"query {i}", values, 1 if r else None, 1, 10)
        )
    return EvalReport.from_cases(cases)


BASE = [1.0] * 60 + [0.0] * 40


def test_equal_reports_pass() -> None:
    g = compare(report(BASE), report(BASE))
    assert g.passed and not g.regressed and not g.improved
    assert g.delta == dict.fromkeys(METRIC_NAMES, 0.0)
    assert len(g.reasons) == 1 and "0 of 100 queries regressed" in g.reasons[0]
    out = g.to_json()
    assert set(out) >= GATE_KEYS
    assert json.loads(json.dumps(out)) == out
    assert set(out["by_category"]) == {"cat0", "cat1"}
    assert set(out["by_category"]["cat0"]) == {"cases", "live", "candidate", "delta"}


def test_improvement_passes_and_is_listed() -> None:
    cand = BASE.copy()
    cand[70] = cand[71] = 1.0
    g = compare(report(BASE), report(cand))
    assert g.passed
    assert [q["id"] for q in g.improved] == ["q70", "q71"]
    assert g.improved[0] | {"live": 0.0, "candidate": 1.0, "delta": 1.0} == g.improved[0]
    assert g.delta["recall@10"] == pytest.approx(0.02)


def test_drop_beyond_tolerance_refused_with_metric_in_reason() -> None:
    live = [1.0] * 100
    cand = [0.0, 0.9] + [1.0] * 98  # mean drop 0.011 > 0.01 with 2 regressions (allowed)
    g = compare(report(live), report(cand, mrr=[1.0] * 100))
    assert not g.passed
    assert len(g.reasons) == 1
    assert "recall@10" in g.reasons[0] and "0.0110" in g.reasons[0] and "0.01" in g.reasons[0]
    assert [q["id"] for q in g.regressed] == ["q0", "q1"]  # worst first
    with pytest.raises(GateRefused) as exc:
        g.raise_if_refused()
    assert "recall@10" in str(exc.value) and exc.value.report["passed"] is False


def test_drop_exactly_at_tolerance_passes() -> None:
    cand = [0.0] + [1.0] * 99  # mean drop exactly 0.01, one regression
    g = compare(report([1.0] * 100), report(cand, mrr=[1.0] * 100))
    assert g.passed, g.reasons


def test_secondary_metric_drop_refused() -> None:
    live = report(BASE, mrr=[1.0] * 100)
    cand = report(BASE, mrr=[0.5] * 100)
    g = compare(live, cand)
    assert not g.passed and not g.regressed
    assert len(g.reasons) == 1 and g.reasons[0].startswith("mrr@10 fell by 0.5000")
    # the refusal still names the queries that moved: those whose MRR fell
    assert len(g.regressed_secondary) == 100 and g.regressed_secondary[0]["delta"] == -0.5
    assert "regressed on mrr@10 (100):" in format_gate(g) and "regressed on recall@10" not in format_gate(g)
    assert GateReport.from_json(g.to_json()) == g
    assert compare(live, cand, secondary=None).passed


def test_too_many_regressions_refused_even_if_mean_holds() -> None:
    cand = BASE.copy()
    for i in (0, 1, 2):
        cand[i] = 0.0  # three regress ...
    for i in (60, 61, 62):
        cand[i] = 1.0  # ... three improve: mean unchanged
    g = compare(report(BASE), report(cand))
    assert not g.passed
    assert g.delta["recall@10"] == pytest.approx(0.0)
    assert g.reasons == ["3 of 100 queries regressed on recall@10, more than the 2 allowed"]
    assert compare(report(BASE), report(cand), max_regressions=3).passed


def test_all_failing_rules_reported() -> None:
    g = compare(report([1.0] * 10), report([0.0] * 10))
    assert not g.passed
    assert [r.split()[0] for r in g.reasons] == ["recall@10", "mrr@10", "10"]
    text = format_gate(g)
    assert text.startswith("gate: REFUSED") and "regressed on recall@10 (10)" in text


def test_gate_metric_is_configurable() -> None:
    live, cand = report(BASE, mrr=[1.0] * 100), report(BASE, mrr=[0.0] * 100)
    g = compare(live, cand, metric="mrr@10", secondary="recall@10", max_regressions=1000)
    assert not g.passed and g.metric == "mrr@10" and "mrr@10 fell by 1.0000" in g.reasons[0]
    assert len(g.regressed) == 100


def test_by_category_both_sides() -> None:
    cand = BASE.copy()
    cand[0] = 0.0  # q0 is in cat0
    g = compare(report(BASE), report(cand)).to_json()
    cat0, cat1 = g["by_category"]["cat0"], g["by_category"]["cat1"]
    assert cat0["cases"] == 50
    assert cat0["delta"]["recall@10"] == pytest.approx(-0.02)
    assert cat1["delta"]["recall@10"] == 0.0
    assert cat0["live"]["recall@10"] == pytest.approx(0.6)


def _renamed_last() -> EvalReport:
    cases = report(BASE).per_case
    last = cases[-1]
    extra = CaseResult("extra", last.category, last.query, last.values, 1, 1, 10)
    return EvalReport.from_cases([*cases[:-1], extra])


@pytest.mark.parametrize(
    "candidate",
    [lambda: report(BASE[:99]), _renamed_last],
    ids=["missing", "different-ids"],
)
def test_mismatched_cases_raise(candidate: Callable[[], EvalReport]) -> None:
    with pytest.raises(ConfigError, match="different cases"):
        compare(report(BASE), candidate())


def test_changed_query_raises() -> None:
    live = report(BASE)
    changed = [
        CaseResult(c.id, c.category, "edited " + c.query, c.values, None, 1, 1)
        for c in live.per_case
    ]
    with pytest.raises(ConfigError, match="differs"):
        compare(live, EvalReport.from_cases(changed))


@pytest.mark.parametrize(
    "kwargs",
    [{"metric": "recall@7"}, {"secondary": "map"}, {"tolerance": -0.1}, {"max_regressions": -1}],
)
def test_bad_gate_settings_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        compare(report(BASE), report(BASE), **kwargs)


def test_first_generation_passes() -> None:
    g = first_generation_report(report(BASE))
    assert g.passed and g.reasons == [NO_LIVE_REASON]
    out = g.to_json()
    assert set(out) >= GATE_KEYS
    assert out["live"] == {} and out["candidate"]["recall@10"] == pytest.approx(0.6)
    json.dumps(out)
    g.raise_if_refused()
    bare = first_generation_report()
    assert bare.passed and bare.to_json()["candidate"] == {}
    assert format_gate(bare) == f"gate: PASSED\n  - {NO_LIVE_REASON}"


def test_gold_only_one_generation_lacks_is_said_of_that_generation() -> None:
    """An operator pass: a refusal warned that a gold document was "not in the generations
    judged" although live held it (and scored 1.0 on its questions); only the candidate lacked it."""
    from evals.promotion import one_sided_gold

    out = one_sided_gold("g1_abc", live_lacks={"both.md", "new.md"}, cand_lacks={"both.md", "lost.md"})
    assert out == [
        "1 gold documents are in live generation g1_abc but not in the candidate (a dead letter there, or added or "
        "removed between the two builds?); their questions score 0 on the candidate: lost.md",
        "1 gold documents are in the candidate but not in live generation g1_abc (a dead letter there, or added or "
        "removed between the two builds?); their questions score 0 on live generation g1_abc: new.md"]
    assert one_sided_gold("g1_abc", {"both.md"}, {"both.md"}) == []  # neither holds it: the eval set's mistake


def test_a_rebuild_of_the_live_settings_is_judged_by_its_regressions_alone() -> None:
    """A rebuild of the live generation's own stage versions: one question of 30 going from
    first to second moves MRR@10 past the tolerance (a new user's `reindex --force`, refused),
    but only the keyword index's history moved it; more regressions than allowed, or a gold
    document lost, still refuse."""
    from evals.gate import as_rebuild

    live = report([1.0] * 30)
    one_down = compare(live, report([1.0] * 30, [0.5] + [1.0] * 29))
    assert not one_down.passed  # by the tolerance
    rebuilt = as_rebuild(one_down, lost_gold=0)
    assert rebuilt.passed and "own stage versions" in rebuilt.reasons[0]
    assert "0 of 30 queries regressed on recall@10" in rebuilt.reasons[0] and "1 on mrr@10" in rebuilt.reasons[0]
    assert rebuilt.regressed_secondary == one_down.regressed_secondary  # the evidence is kept
    assert not as_rebuild(one_down, lost_gold=1).passed
    three_lost = compare(live, report([0.0] * 3 + [1.0] * 27))
    assert not as_rebuild(three_lost, lost_gold=0).passed  # 3 regressions, 2 allowed
    kept = compare(live, live)
    assert as_rebuild(kept, lost_gold=0) is kept


def test_a_rebuild_is_the_live_generations_versions_embedder_and_engine() -> None:
    from connectors.store import GenerationRecord
    from evals.promotion import same_build

    def gen(i: int, **kw: Any) -> GenerationRecord:
        fields: dict[str, Any] = {"stage_versions": {"parse": "a", "chunk": "b"}, "stage_configs": {},
                                  "embedder_id": "m", "vector_index": "v", "vector_engine": "qdrant-edge",
                                  "keyword_index": "k", **kw}
        return GenerationRecord(id=i, name=f"g{i}", status="live", **fields)

    assert same_build(gen(1), gen(2))
    assert not same_build(gen(1), gen(2, stage_versions={"parse": "a", "chunk": "c"}))
    assert not same_build(gen(1), gen(2, embedder_id="other"))
    assert not same_build(gen(1), gen(2, vector_engine="qdrant-local"))
