"""An operator pass over `bindery plan` with scanned pages: the human plan says which counts are
estimates where it gives them, and the operations guide describes the plan job's config and the
time estimate as the code has them."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from orchestration import plan_job
from orchestration.report import human

ROOT = Path(__file__).resolve().parent.parent


def _plan(written: dict[str, int], scans: dict[str, int]) -> dict[str, Any]:
    src = {"listed": 1, "changes": {"new": 1}, "delete_guard": {"safe": True, "reason": None}, "error": None}
    return {"kind": "sync", "generations": ["g1"], "new_generation": None, "sources": {"docs": src},
            "stages": {"parse": {"compute": 1, "cached": 0, "unit": "documents"}},
            "estimate": {"seconds": None, "by_stage": {}, "note": None}, "scans_estimated": scans,
            "written": written, "llm": None, "seconds": 0.2}


def _indexes_line(plan: dict[str, Any]) -> str:
    return next(ln for ln in human("plan", plan).splitlines() if ln.startswith("indexes: "))


def test_the_index_line_says_its_chunks_are_estimated_while_scans_are_unread() -> None:
    """A new 6-page scan read 'indexes: 1 documents to write (42 chunks)': the 42 was 7 a page,
    unread (the sync wrote 53), said only in a line above the table."""
    scans = {"documents": 1, "pages": 6}
    assert _indexes_line(_plan({"documents": 1, "chunks": 42, "deleted": 0}, scans)) == \
        "indexes: 1 document to write (about 42 chunks), 0 to remove"
    none = {"documents": 0, "pages": 0}
    assert _indexes_line(_plan({"documents": 2, "chunks": 53, "deleted": 1}, none)) == \
        "indexes: 2 documents to write (53 chunks), 1 to remove"
    assert _indexes_line(_plan({"documents": 1, "chunks": 1, "deleted": 0}, none)) == \
        "indexes: 1 document to write (1 chunk), 0 to remove"


def test_the_operations_guide_names_every_plan_job_setting() -> None:
    """The plan job took `ocr` (as `--ocr`); the guide's launch paragraph and the module named
    only kind, sources and allow_mass_delete."""
    guide = (ROOT / "docs" / "operations.md").read_text()
    paragraph = guide[guide.index("the **`plan` job**"):][:400]
    for name in plan_job.PlanConfig.model_fields:
        assert f"`{name}" in paragraph, name
        assert f"`{name}" in (inspect.getdoc(plan_job) or ""), name


def test_the_operations_guide_describes_the_time_estimate_the_plan_makes() -> None:
    """The estimate includes the CLI's start (`startup`) and is fitted robustly; the guide still
    said least squares and 'not process start-up or Dagster's own overhead'."""
    guide = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    assert "least-squares" not in guide
    assert "not process start-up" not in guide
    assert "`startup`" in guide
