"""The tuning/checking split of `bindery tune`: what is chosen on must never include what judges.

These tests fail if a checking-half case could reach the tuning half (overlap, a seed that is
ignored, a split that depends on file order), or if a category were left out of a half.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from evals.evalset import EvalCase, Gold
from evals.split import split_cases


def _cases(counts: dict[str, int]) -> list[EvalCase]:
    return [EvalCase(id=f"{cat}-{i}", query=f"q {cat} {i}", gold=(Gold(doc=f"{cat}/{i}.md"),), category=cat)
            for cat, n in counts.items() for i in range(n)]


def test_halves_are_disjoint_and_complete() -> None:
    cases = _cases({"a": 11, "b": 4, "c": 1})
    split = split_cases(cases)
    tune_ids = {c.id for c in split.tune}
    check_ids = {c.id for c in split.check}
    assert not tune_ids & check_ids
    assert tune_ids | check_ids == {c.id for c in cases}


def test_split_is_stratified_by_category() -> None:
    split = split_cases(_cases({"a": 11, "b": 4, "c": 1, "d": 2}))
    tune = Counter(c.category for c in split.tune)
    check = Counter(c.category for c in split.check)
    assert tune == {"a": 6, "b": 2, "c": 1, "d": 1}
    assert check == {"a": 5, "b": 2, "d": 1}


def test_split_does_not_depend_on_file_order_and_follows_the_seed() -> None:
    cases = _cases({"a": 30, "b": 20})
    shuffled = list(cases)
    random.Random(3).shuffle(shuffled)
    first, again = split_cases(cases, seed=8), split_cases(shuffled, seed=8)
    assert {c.id for c in first.check} == {c.id for c in again.check}
    other = split_cases(cases, seed=9)
    assert {c.id for c in first.check} != {c.id for c in other.check}


def test_fraction_outside_the_open_interval_is_refused() -> None:
    with pytest.raises(ValueError):
        split_cases(_cases({"a": 4}), fraction=1.0)
