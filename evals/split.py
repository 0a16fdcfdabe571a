"""Split an eval set into a tuning half and a checking half, stratified by category.

`bindery tune` (issue 8, item 5) chooses retrieval settings on the tuning half only and reports
the checking half beside it, so the choice is not fitted to the questions that judge it. The
split must therefore be

- **disjoint and complete**: every case is in exactly one half;
- **stratified**: each category is split on its own, so a category with few questions is not
  left out of either half by chance (with an odd count the extra case goes to the tuning half);
- **reproducible**: a fixed seed gives the same halves whatever order the file lists the cases
  in (cases are ordered by id before shuffling), so a re-run of tune judges on the same questions.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evals.evalset import EvalCase

__all__ = ["DEFAULT_SEED", "EvalSplit", "split_cases"]

DEFAULT_SEED = 8


@dataclass(frozen=True)
class EvalSplit:
    """The two halves of one eval set: ``tune`` to choose on, ``check`` to report only."""

    tune: tuple[EvalCase, ...]
    check: tuple[EvalCase, ...]


def split_cases(cases: Sequence[EvalCase], seed: int = DEFAULT_SEED, fraction: float = 0.5) -> EvalSplit:
    """Split ``cases`` per category: ``ceil(n * fraction)`` of each category to ``tune``.

    A category of one case goes to the tuning half (it cannot be split); every category with
    two or more cases has at least one case in each half when ``0 < fraction < 1``.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be strictly between 0 and 1, not {fraction}")
    by_category: dict[str, list[EvalCase]] = defaultdict(list)
    for case in sorted(cases, key=lambda c: c.id):
        by_category[case.category].append(case)
    rng = random.Random(seed)
    tune: list[EvalCase] = []
    check: list[EvalCase] = []
    for category in sorted(by_category):
        group = by_category[category]
        rng.shuffle(group)
        # ceil, then keep one case for each half whenever the category has two or more
        cut = max(1, min(math.ceil(len(group) * fraction), len(group) - 1))
        tune += group[:cut]
        check += group[cut:]
    return EvalSplit(tune=tuple(tune), check=tuple(check))
