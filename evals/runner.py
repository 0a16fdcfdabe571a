"""Run an eval set against a search function and report the metrics.

The runner knows nothing about engines: it calls ``search(query, k)`` — in production the same
hybrid retrieval the query service serves, bound to the generation under test — and scores what
comes back. Hits may be objects with ``.doc`` / ``.text`` attributes or mappings with ``"doc"`` /
``"text"`` keys; ``doc`` is the document's external id (path relative to its source root).

Excluded documents are dropped from each result list before scoring. A search that takes a
third argument (``search(query, k, exclude_docs)``, `ExcludingSearchFn`, ``excluding=True``) is
asked to leave them out of retrieval itself, as Bindery's own eval does: an excluded document
(a reply that holds the query verbatim) then lends no evidence to anything else, which fusion,
unit grouping or thread neighbours could otherwise pass on. When ``k`` is below a recall cutoff
(say ``k=20`` and recall@50), that cutoff sees only ``k`` hits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from connectors.errors import ConfigError
from evals.evalset import EvalCase
from evals.metrics import (
    METRIC_NAMES,
    CaseResult,
    Hit,
    aggregate,
    by_category,
    score_case,
)

__all__ = ["EvalReport", "ExcludingSearchFn", "HitLike", "HitObject", "SearchFn", "first_few", "format_table",
           "run_eval", "to_hit", "unknown_gold_warning"]

_ROUND = 6  # digits kept in JSON; comparisons use the unrounded values


@runtime_checkable
class HitObject(Protocol):
    """Anything with ``.doc`` (external id) and ``.text`` attributes (read-only suffices)."""

    @property
    def doc(self) -> str: ...
    @property
    def text(self) -> str: ...


HitLike = HitObject | Mapping[str, Any]
SearchFn = Callable[[str, int], Sequence[HitLike]]
ExcludingSearchFn = Callable[[str, int, tuple[str, ...]], Sequence[HitLike]]


def to_hit(raw: HitLike) -> Hit:
    """Coerce one search result to `Hit`. A missing ``doc`` is a bug in the search adapter and
    raises `TypeError`; a missing or null ``text`` becomes ``""`` (it can then only satisfy
    gold items without a snippet)."""
    if isinstance(raw, Hit):
        return raw
    if isinstance(raw, Mapping):
        doc, text, source = raw.get("doc"), raw.get("text"), raw.get("source")
    else:
        doc, text, source = getattr(raw, "doc", None), getattr(raw, "text", None), getattr(raw, "source", None)
    if not isinstance(doc, str):
        raise TypeError(f"search hit has no string 'doc' (external id): {raw!r}")
    if text is not None and not isinstance(text, str):
        raise TypeError(f"search hit 'text' must be a string: {raw!r}")
    return Hit(doc=doc, text=text or "", source=source if isinstance(source, str) else None)


def _rounded(d: Mapping[str, float | int]) -> dict[str, float | int]:
    return {k: round(v, _ROUND) if isinstance(v, float) else v for k, v in d.items()}


@dataclass(frozen=True)
class EvalReport:
    """Result of one eval run: overall means, per-category means and every case's values."""

    cases: int
    metrics: dict[str, float]
    by_category: dict[str, dict[str, float | int]]
    per_case: list[CaseResult] = field(repr=False)
    # gold documents the searched generation does not hold (a typo, a path relative to another
    # root, a dead letter, a document added after it was built): their questions can never be
    # answered, so the report says which they are
    unknown_gold: tuple[str, ...] = ()

    @classmethod
    def from_cases(cls, per_case: Sequence[CaseResult]) -> EvalReport:
        if not per_case:
            raise ConfigError("eval set has no cases")
        ids = [c.id for c in per_case]
        if len(set(ids)) != len(ids):
            raise ConfigError("eval report has duplicate case ids")
        return cls(
            cases=len(per_case),
            metrics=aggregate(per_case),
            by_category=by_category(per_case),
            per_case=list(per_case),
        )

    def case(self, case_id: str) -> CaseResult:
        """The result of one case by id (KeyError if absent)."""
        for c in self.per_case:
            if c.id == case_id:
                return c
        raise KeyError(case_id)

    def to_json(self, include_per_case: bool = False) -> dict[str, Any]:
        """The `bindery eval --json` keys (``cases``, ``metrics``, ``by_category``; the caller
        adds ``generation``). ``include_per_case`` adds ``per_case`` so a stored report can be
        reloaded with `from_json` and compared by the gate later."""
        out: dict[str, Any] = {
            "cases": self.cases,
            "metrics": _rounded(self.metrics),
            "by_category": {cat: _rounded(v) for cat, v in self.by_category.items()},
            "unknown_gold_docs": list(self.unknown_gold),
        }
        if include_per_case:
            out["per_case"] = [c.to_json() for c in self.per_case]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EvalReport:
        """Rebuild a report saved with ``to_json(include_per_case=True)``; aggregates are
        recomputed from the per-case values."""
        if "per_case" not in d:
            raise ConfigError("stored eval report has no per-case results; cannot compare it")
        return cls.from_cases([CaseResult.from_json(c) for c in d["per_case"]])


def run_eval(cases: Iterable[EvalCase], search: SearchFn | ExcludingSearchFn, k: int = 50, *,
             excluding: bool = False) -> EvalReport:
    """Search every case's query for ``k`` hits, score each case and aggregate. With
    ``excluding``, ``search`` is an `ExcludingSearchFn` and gets each case's ``exclude_docs``.

    A search error propagates: a partial eval must never feed the promotion gate.
    """
    if k < 1:
        raise ConfigError(f"eval k must be at least 1, got {k}")
    per_case = []
    for case in cases:
        raw = (search(case.query, k, case.exclude_docs) if excluding  # type: ignore[call-arg]
               else search(case.query, k))  # type: ignore[call-arg]
        hits = [to_hit(h) for h in raw]
        per_case.append(score_case(case, hits))
    return EvalReport.from_cases(per_case)


def format_table(report: EvalReport) -> str:
    """A fixed-width table for the CLI: one row per metric, one column for all cases and one
    per category (omitted when there is a single category), and a row of case counts."""
    cols: list[tuple[str, Mapping[str, float | int]]] = [
        ("all", {**report.metrics, "cases": report.cases})
    ]
    if len(report.by_category) > 1:
        cols += list(report.by_category.items())
    else:
        cols = [
            (f"all ({cat})", {**report.metrics, "cases": report.cases})
            for cat in report.by_category
        ]
    name_w = max(len(m) for m in (*METRIC_NAMES, "metric"))
    widths = [max(len(name), 6) for name, _ in cols]

    def row(label: str, cells: Iterable[str]) -> str:
        padded = (c.rjust(w) for c, w in zip(cells, widths, strict=True))
        return "  ".join([label.ljust(name_w), *padded]).rstrip()

    lines = [
        row("metric", (name for name, _ in cols)),
        row("-" * name_w, ("-" * w for w in widths)),
    ]
    lines += [row(m, (f"{vals[m]:.4f}" for _, vals in cols)) for m in METRIC_NAMES]
    lines.append(row("cases", (str(vals["cases"]) for _, vals in cols)))
    if warning := unknown_gold_warning(report.unknown_gold):
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def first_few(docs: Sequence[str], n: int = 5) -> str:
    """The first `n` of `docs` for a warning's one line, "..." when there are more."""
    return ", ".join(docs[:n]) + (", ..." if len(docs) > n else "")


def unknown_gold_warning(unknown: Sequence[str], where: str = "in this generation") -> str | None:
    """What to tell a person whose eval set names gold documents that no index holds: their
    questions score 0 whatever the settings (eval, the gate and tune all say it)."""
    if not unknown:
        return None
    shown = first_few(unknown)
    return (f"{len(unknown)} gold documents are not {where} (misspelt, a path relative to another root, a "
            f"dead letter, or added after it was built?); their questions always score 0: {shown}")
