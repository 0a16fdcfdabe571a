"""Great Expectations suite over the per-document parse metrics of one batch.

`validate_batch(rows, thresholds)` builds an ephemeral GX context (no files, no network),
loads the rows into a pandas DataFrame and checks, per metric, that "most" documents are within
the source's limits. `mostly = 1 - max_failure_share`: a handful of odd documents (a scan of a
photo, a table-only spreadsheet export) passes; a systematic failure (every page empty because
OCR is missing, mojibake from a wrong encoding) does not. A result also says `warn` when its
failing share exceeds `warn_failure_share`, and names the documents that failed.

GX takes seconds to import, so it is imported inside the function, never at module import, and
only for a batch with a value out of bounds: for a clean batch its report is known in advance.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from connectors.config import ParseQualityThresholds

if TYPE_CHECKING:
    from great_expectations.data_context import EphemeralDataContext

__all__ = ["expectation_specs", "validate_batch"]

_BETWEEN = "expect_column_values_to_be_between"  # GX's name for the one expectation type used


def _mostly(t: ParseQualityThresholds) -> float:
    """The share of documents each expectation needs within bounds."""
    return max(0.0, 1.0 - t.max_failure_share)


def expectation_specs(t: ParseQualityThresholds) -> list[tuple[str, dict[str, Any]]]:
    """(column, {min_value | max_value}) pairs checked for every document."""
    return [
        ("alnum_share", {"min_value": t.min_alnum_share}),
        ("word_share", {"min_value": t.min_word_share}),
        ("chars_per_page", {"min_value": t.min_chars_per_page}),
        ("empty_page_share", {"max_value": t.max_empty_page_share}),
        ("repeated_line_share", {"max_value": t.max_repeated_line_share}),
    ]


def _context() -> EphemeralDataContext:  # GX is imported lazily
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def validate_batch(
    metrics_rows: list[dict[str, Any]],
    thresholds: ParseQualityThresholds | None = None,
    *,
    id_column: str = "doc",
) -> dict[str, Any]:
    """Validate per-document metric rows (each with an `id_column` naming the document).

    Returns {"success", "warn", "documents", "ran_gx", "results": [{"expectation", "column",
    "success", "warn", "unexpected_share", "unexpected_docs", ...}]}. When every value is within
    its bounds the suite's verdict is known (nothing unexpected, every expectation met), so GX,
    seconds to import, a quarter of a small sync, is not started; `ran_gx` says which it was.
    """
    t = thresholds or ParseQualityThresholds.model_validate({})
    specs = expectation_specs(t)
    if not metrics_rows:
        return {"success": True, "warn": False, "documents": 0, "ran_gx": False, "results": []}
    if all(_within(row.get(column), bounds) for row in metrics_rows for column, bounds in specs):
        return _all_met(specs, t, len(metrics_rows))
    return _run_gx(metrics_rows, t, specs, id_column)


def _within(value: Any, bounds: dict[str, Any]) -> bool:
    """Whether GX would surely count `value` as expected (inclusive bounds). A missing value is
    outside an expectation's domain; a value of any other type than a number is left to GX."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    low, high = bounds.get("min_value"), bounds.get("max_value")
    return (low is None or value >= low) and (high is None or value <= high)


def _all_met(specs: list[tuple[str, dict[str, Any]]], t: ParseQualityThresholds, n: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = [
        {"expectation": _BETWEEN, "column": column, "min_value": bounds.get("min_value"),
         "max_value": bounds.get("max_value"), "mostly": _mostly(t), "success": True, "warn": False,
         "unexpected_share": 0.0, "unexpected_docs": []}
        for column, bounds in specs
    ]
    return {"success": True, "warn": False, "documents": n, "ran_gx": False, "results": results}


def _run_gx(metrics_rows: list[dict[str, Any]], t: ParseQualityThresholds, specs: list[tuple[str, dict[str, Any]]],
            id_column: str) -> dict[str, Any]:
    import great_expectations as gx
    import pandas as pd

    columns = [id_column] + [c for c, _ in specs]
    df = pd.DataFrame([{c: row.get(c) for c in columns} for row in metrics_rows])
    df[id_column] = df[id_column].astype(str)
    for column, _ in specs:
        df[column] = pd.to_numeric(df[column], errors="coerce")
    context = _context()
    asset = context.data_sources.add_pandas("bindery").add_dataframe_asset("parse_metrics")
    batch = asset.add_batch_definition_whole_dataframe("batch").get_batch(
        batch_parameters={"dataframe": df}
    )
    suite = gx.ExpectationSuite(name="parse_quality")
    mostly = _mostly(t)
    for column, bounds in specs:
        suite.add_expectation(
            gx.expectations.ExpectColumnValuesToBeBetween(column=column, mostly=mostly, **bounds)
        )
    run = batch.validate(
        suite,
        result_format={"result_format": "COMPLETE", "unexpected_index_column_names": [id_column]},
    )
    results = []
    for er in run.results:
        config = er.expectation_config
        assert config is not None  # GX records the configuration on every result of a suite run
        kwargs = config.kwargs
        res = er.result or {}
        share = (res.get("unexpected_percent") or 0.0) / 100
        docs = [str(item.get(id_column)) for item in res.get("unexpected_index_list") or []]
        results.append(
            {
                "expectation": config.type,
                "column": kwargs.get("column"),
                "min_value": kwargs.get("min_value"),
                "max_value": kwargs.get("max_value"),
                "mostly": kwargs.get("mostly"),
                "success": bool(er.success),
                "warn": share > t.warn_failure_share,
                "unexpected_share": round(share, 4),
                "unexpected_docs": docs,
            }
        )
    return {
        "success": all(r["success"] for r in results),
        "warn": any(r["warn"] for r in results),
        "documents": len(df),
        "ran_gx": True,
        "results": results,
    }
