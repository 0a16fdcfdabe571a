"""The promotion gate: compare a candidate generation's eval report with the live one's.

Queries are paired by case id, so the gate sees *which* queries got worse, not only whether a
mean moved. A candidate is refused when any rule fails:

1. the mean gate metric (default recall@10) drops by more than ``tolerance``;
2. the mean secondary metric (default mrr@10) drops by more than ``tolerance``;
3. more than ``max_regressions`` queries have a lower gate-metric value than on live.

Equality at the tolerance passes (a drop of exactly ``tolerance`` is allowed); a per-query
change smaller than 1e-9 is float noise, neither a regression nor an improvement. Every refusal
carries human sentences naming the rule and the numbers.

A rebuild of the live generation's own stage versions (`bindery reindex --force` of an unchanged
configuration) is judged by rule 3 alone (`as_rebuild`): its chunks and embeddings are the live
ones, so a mean that moved was moved by the live keyword index's history (documents deleted or
replaced since it was built still weigh in its BM25 statistics until merged away), not by
settings; a new user's rebuild of a 30-question set was refused for one question going from
first to second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from connectors.errors import ConfigError, GateRefused
from evals.metrics import METRIC_NAMES, CaseResult
from evals.runner import EvalReport

__all__ = [
    "EPSILON",
    "NO_LIVE_REASON",
    "GateReport",
    "as_rebuild",
    "compare",
    "first_generation_report",
    "format_gate",
    "minimum_detectable_difference",
]

EPSILON = 1e-9
NO_LIVE_REASON = "no live generation to compare with"
_ROUND = 6


def _r(x: float) -> float:
    return round(x, _ROUND)


@dataclass(frozen=True)
class GateReport:
    """The gate's verdict and the evidence for it. ``regressed`` / ``improved`` hold
    ``{"id", "category", "query", "live", "candidate", "delta"}`` for the gate metric, worst
    (or best) first; ``regressed_secondary`` the same for the secondary metric, so a refusal on
    it (MRR fell, recall did not) still names the queries that moved."""

    passed: bool
    metric: str
    secondary: str | None
    tolerance: float
    max_regressions: int
    cases: int
    live: dict[str, float]
    candidate: dict[str, float]
    delta: dict[str, float]
    regressed: list[dict[str, Any]] = field(default_factory=list)
    improved: list[dict[str, Any]] = field(default_factory=list)
    by_category: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. an eval set too small for the tolerance
    regressed_secondary: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GateReport:
        """The report as stored with a generation (`to_json`), back as an object."""
        return cls(passed=bool(d.get("passed")), metric=d.get("metric") or "recall@10", secondary=d.get("secondary"),
                   tolerance=float(d.get("tolerance") or 0.0), max_regressions=int(d.get("max_regressions") or 0),
                   cases=int(d.get("cases") or 0), live=dict(d.get("live") or {}),
                   candidate=dict(d.get("candidate") or {}), delta=dict(d.get("delta") or {}),
                   regressed=list(d.get("regressed") or []), improved=list(d.get("improved") or []),
                   by_category=dict(d.get("by_category") or {}), reasons=list(d.get("reasons") or []),
                   warnings=list(d.get("warnings") or []),
                   regressed_secondary=list(d.get("regressed_secondary") or []))

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable dict, stored with the generation and returned by `promote`."""
        return {
            "passed": self.passed,
            "metric": self.metric,
            "secondary": self.secondary,
            "tolerance": self.tolerance,
            "max_regressions": self.max_regressions,
            "cases": self.cases,
            "live": {k: _r(v) for k, v in self.live.items()},
            "candidate": {k: _r(v) for k, v in self.candidate.items()},
            "delta": {k: _r(v) for k, v in self.delta.items()},
            "regressed": [dict(q) for q in self.regressed],
            "improved": [dict(q) for q in self.improved],
            "by_category": self.by_category,
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "regressed_secondary": [dict(q) for q in self.regressed_secondary],
        }

    def raise_if_refused(self) -> None:
        """Raise `GateRefused` (carrying this report as JSON) when the candidate failed."""
        if not self.passed:
            raise GateRefused("; ".join(self.reasons), report=self.to_json())


def _check_metric(name: str, what: str) -> None:
    if name not in METRIC_NAMES:
        raise ConfigError(f"gate {what} {name!r} is not one of {', '.join(METRIC_NAMES)}")


def _paired_ids(live: EvalReport, candidate: EvalReport) -> list[str]:
    """Case ids in live order; raise `ConfigError` unless both reports judged the same cases."""
    live_ids = [c.id for c in live.per_case]
    cand_by_id = {c.id: c for c in candidate.per_case}
    missing = sorted(set(live_ids) - cand_by_id.keys())
    extra = sorted(cand_by_id.keys() - set(live_ids))
    if missing or extra:
        raise ConfigError(
            "live and candidate eval reports cover different cases "
            f"({len(missing)} only on live, e.g. {missing[:3]}; "
            f"{len(extra)} only on candidate, e.g. {extra[:3]}); run the same eval set on both"
        )
    for c in live.per_case:
        other = cand_by_id[c.id]
        if c.query != other.query or c.category != other.category:
            raise ConfigError(
                f"case {c.id!r} differs between live and candidate eval reports "
                "(query or category changed); run the same eval set on both"
            )
    return live_ids


def _flip(case_id: str, category: str, query: str, live: float, cand: float) -> dict[str, Any]:
    return {
        "id": case_id,
        "category": category,
        "query": query,
        "live": _r(live),
        "candidate": _r(cand),
        "delta": _r(cand - live),
    }


def _category_sides(live: EvalReport, candidate: EvalReport) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cat, lv in live.by_category.items():
        cv = candidate.by_category[cat]
        out[cat] = {
            "cases": lv["cases"],
            "live": {m: _r(float(lv[m])) for m in METRIC_NAMES},
            "candidate": {m: _r(float(cv[m])) for m in METRIC_NAMES},
            "delta": {m: _r(float(cv[m]) - float(lv[m])) for m in METRIC_NAMES},
        }
    return out


# z-values of a two-sided test at 95 % confidence and of 80 % power: the usual design point
# for "could this eval set have seen a difference this small at all?"
_Z_ALPHA, _Z_POWER = 1.96, 0.84


def minimum_detectable_difference(live_values: list[float], cand_values: list[float]) -> float:
    """The smallest drop in a mean metric this paired eval set can tell from noise.

    Paired-difference design: MDD = (z_alpha + z_power) * sd(d) / sqrt(n). The spread of the
    per-query differences is taken from this comparison; when no query moved it is taken from
    the spread of the live values (how far a query *can* swing). Never below 1/n, the step of
    one query changing by a whole point.
    """
    n = len(live_values)
    if n == 0:
        return 1.0
    diffs = [c - v for v, c in zip(live_values, cand_values, strict=True)]
    spread = _sd(diffs) or _sd(live_values) or 0.5
    return max(1.0 / n, (_Z_ALPHA + _Z_POWER) * spread / math.sqrt(n))


def _sd(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _size_warning(tolerance: float, n: int, mdd: dict[str, float], drops: dict[str, float]) -> list[str]:
    """The warning that the set cannot tell a change as small as `tolerance` from noise, for
    each gated metric whose minimum detectable difference (`mdd`) is larger. None when the gate
    refused only on drops (`drops`: metric -> fall beyond the tolerance) larger than their
    metric's noise: that refusal is no accident of a small set."""
    if drops and all(drop >= mdd[m] for m, drop in drops.items()):
        return []
    coarse = [f"{mdd[m]:.3f} for {m}" for m in mdd if tolerance < mdd[m]]
    if not coarse:
        return []
    return [f"the eval set is too small for tolerance {tolerance:g}: with {n} questions the smallest change "
            f"it can tell from noise is about {' and '.join(coarse)} (one question alone moves a metric by up to "
            f"{1 / n:.3f}), so the gate may refuse on noise; add questions or raise gate.tolerance"]


def compare(
    live: EvalReport,
    candidate: EvalReport,
    metric: str = "recall@10",
    secondary: str | None = "mrr@10",
    tolerance: float = 0.01,
    max_regressions: int = 2,
) -> GateReport:
    """Judge ``candidate`` against ``live`` (see the module docstring for the rules).

    Raises `ConfigError` for an unknown metric, a negative tolerance or regression budget, or
    reports that do not cover the same cases.
    """
    _check_metric(metric, "metric")
    if secondary is not None:
        _check_metric(secondary, "secondary metric")
    if tolerance < 0:
        raise ConfigError(f"gate tolerance must be >= 0, got {tolerance}")
    if max_regressions < 0:
        raise ConfigError(f"gate max_regressions must be >= 0, got {max_regressions}")

    ids = _paired_ids(live, candidate)
    cand_by_id = {c.id: c for c in candidate.per_case}
    regressed, improved = _flips(live, cand_by_id, metric)
    # the secondary metric's own flips; none when it is the metric (they would be listed twice)
    regressed_secondary = _flips(live, cand_by_id, secondary)[0] if secondary and secondary != metric else []

    delta = {m: candidate.metrics[m] - live.metrics[m] for m in METRIC_NAMES}
    reasons: list[str] = []
    for name in (metric, secondary):
        if name is not None and -delta[name] > tolerance + EPSILON:
            reasons.append(
                f"{name} fell by {-delta[name]:.4f} ({live.metrics[name]:.4f} -> "
                f"{candidate.metrics[name]:.4f}), more than the tolerance {tolerance:g}"
            )
    if len(regressed) > max_regressions:
        reasons.append(
            f"{len(regressed)} of {len(ids)} queries regressed on {metric}, "
            f"more than the {max_regressions} allowed"
        )
    gated = [m for m in (metric, secondary) if m is not None]
    mdd = {m: minimum_detectable_difference([lc.values[m] for lc in live.per_case],
                                            [cand_by_id[lc.id].values[m] for lc in live.per_case])
           for m in dict.fromkeys(gated)}
    drops = {m: -delta[m] for m in gated if -delta[m] > tolerance + EPSILON}
    warnings = _size_warning(tolerance, len(ids), mdd, drops)
    passed = not reasons
    if passed:
        moves = [
            f"{name} {live.metrics[name]:.4f} -> {candidate.metrics[name]:.4f} "
            f"({delta[name]:+.4f}, tolerance {tolerance:g})"
            for name in (metric, secondary)
            if name is not None
        ]
        reasons.append(
            "; ".join(moves) + f"; {len(regressed)} of {len(ids)} queries regressed "
            f"(at most {max_regressions} allowed), {len(improved)} improved"
        )
    return GateReport(
        passed=passed,
        metric=metric,
        secondary=secondary,
        tolerance=tolerance,
        max_regressions=max_regressions,
        cases=len(ids),
        live=dict(live.metrics),
        candidate=dict(candidate.metrics),
        delta=delta,
        regressed=regressed,
        improved=improved,
        by_category=_category_sides(live, candidate),
        reasons=reasons,
        warnings=warnings,
        regressed_secondary=regressed_secondary,
    )


def as_rebuild(report: GateReport, lost_gold: int) -> GateReport:
    """`report` for a candidate built with the live generation's stage versions (module
    docstring): passed unless more queries regressed than allowed or it lost gold documents
    live holds (`lost_gold`, `promotion.one_sided_gold`), the mean moves said and why."""
    if report.passed or len(report.regressed) > report.max_regressions or lost_gold:
        return report
    moves = "; ".join(f"{m} {report.live[m]:.4f} -> {report.candidate[m]:.4f} ({report.delta[m]:+.4f})"
                      for m in (report.metric, report.secondary) if m is not None)
    also = f", {len(report.regressed_secondary)} on {report.secondary}" if report.regressed_secondary else ""
    return replace(report, passed=True, reasons=[
        f"a rebuild with the live generation's own stage versions: {moves}; {len(report.regressed)} of "
        f"{report.cases} queries regressed on {report.metric} (at most {report.max_regressions} allowed){also}. "
        "Same settings, so a "
        "mean that moved was moved by the live keyword index's history (deleted and replaced documents "
        "weigh in its BM25 statistics until merged away), which the tolerance does not judge"])


def _flips(live: EvalReport, cand_by_id: dict[str, CaseResult],
           metric: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(queries whose `metric` fell, worst first; queries whose `metric` rose, best first)."""
    regressed, improved = [], []
    for lc in live.per_case:
        lv, cv = lc.values[metric], cand_by_id[lc.id].values[metric]
        if cv < lv - EPSILON:
            regressed.append(_flip(lc.id, lc.category, lc.query, lv, cv))
        elif cv > lv + EPSILON:
            improved.append(_flip(lc.id, lc.category, lc.query, lv, cv))
    regressed.sort(key=lambda q: (q["delta"], q["id"]))
    improved.sort(key=lambda q: (-q["delta"], q["id"]))
    return regressed, improved


def first_generation_report(
    candidate: EvalReport | None = None,
    metric: str = "recall@10",
    secondary: str | None = "mrr@10",
    tolerance: float = 0.01,
    max_regressions: int = 2,
) -> GateReport:
    """The verdict when nothing is live yet: the first generation passes. Its own eval
    metrics, when given, are recorded as ``candidate``; ``live`` and ``delta`` are empty."""
    return GateReport(
        passed=True,
        metric=metric,
        secondary=secondary,
        tolerance=tolerance,
        max_regressions=max_regressions,
        cases=candidate.cases if candidate else 0,
        live={},
        candidate=dict(candidate.metrics) if candidate else {},
        delta={},
        by_category={
            cat: {"cases": v["cases"], "candidate": {m: _r(float(v[m])) for m in METRIC_NAMES}}
            for cat, v in candidate.by_category.items()
        }
        if candidate
        else {},
        reasons=[NO_LIVE_REASON],
    )


def format_gate(report: GateReport, max_listed: int = 10) -> str:
    """A human summary for `bindery promote`: verdict, reasons, metric table, flipped queries."""
    lines = [f"gate: {'PASSED' if report.passed else 'REFUSED'}"]
    lines += [f"  - {r}" for r in report.reasons]
    lines += [f"  warning: {w}" for w in report.warnings]
    if report.live:
        name_w = max(len(m) for m in METRIC_NAMES)
        lines.append(f"  {'metric'.ljust(name_w)}  {'live':>8}  {'candidate':>9}  {'delta':>8}")
        for m in METRIC_NAMES:
            lines.append(
                f"  {m.ljust(name_w)}  {report.live[m]:8.4f}  {report.candidate[m]:9.4f}"
                f"  {report.delta[m]:+8.4f}"
            )
    listed = [(f"regressed on {report.metric}", report.regressed), (f"improved on {report.metric}", report.improved)]
    sec = report.secondary
    if sec and not report.passed and -report.delta.get(sec, 0.0) > report.tolerance + EPSILON:
        listed.insert(1, (f"regressed on {sec}", report.regressed_secondary))  # the metric it refused on
    for title, flips in listed:
        if flips:
            lines.append(f"  {title} ({len(flips)}):")
            lines += [
                f"    {q['id']}: {q['live']:.4f} -> {q['candidate']:.4f}  {q['query'][:60]}"
                for q in flips[:max_listed]
            ]
            if len(flips) > max_listed:
                lines.append(f"    ... and {len(flips) - max_listed} more")
    return "\n".join(lines)
