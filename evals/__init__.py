"""Eval sets, retrieval metrics and the promotion gate.

Engine-independent: `run_eval` takes any ``search(query, k)`` callable, so the same code judges
the live generation, a candidate, or a hand-made ranking in a test.

Typical use::

    cases = load_eval_set("evals/sets/my-eval.jsonl")
    live = run_eval(cases, live_search)
    cand = run_eval(cases, candidate_search)
    report = compare(live, cand, metric="recall@10", tolerance=0.01, max_regressions=2)
    report.raise_if_refused()
"""

from evals.evalset import EvalCase, Gold, load_eval_set, normalise
from evals.gate import GateReport, compare, first_generation_report, format_gate
from evals.metrics import METRIC_NAMES, CaseResult, Hit, aggregate, by_category, score_case
from evals.runner import EvalReport, HitLike, format_table, run_eval

__all__ = [
    "METRIC_NAMES",
    "CaseResult",
    "EvalCase",
    "EvalReport",
    "GateReport",
    "Gold",
    "Hit",
    "HitLike",
    "aggregate",
    "by_category",
    "compare",
    "first_generation_report",
    "format_gate",
    "format_table",
    "load_eval_set",
    "normalise",
    "run_eval",
    "score_case",
]
