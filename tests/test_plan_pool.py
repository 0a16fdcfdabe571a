"""The plan's fork pool (orchestration.plan_pool): same results, same order, as a plain loop,
work really spread over child processes, and small batches kept in the calling process."""

from __future__ import annotations

import os

import pytest

from orchestration import plan_pool
from orchestration.plan_pool import fork_map

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the pool forks")


def _work(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_results_come_back_in_order_from_child_processes() -> None:
    items = list(range(200))
    out = fork_map(_work, items, processes=2, min_items=1)
    assert [v for v, _ in out] == [x * x for x in items]
    pids = {pid for _, pid in out}
    assert out[0][1] == os.getpid(), "the first item runs here, so lazy state is inherited"
    assert len(pids - {os.getpid()}) >= 1, "the rest ran in forked children"


def test_closures_over_local_state_run_in_the_children() -> None:
    table = {i: f"doc-{i}" for i in range(100)}  # inherited by the fork, never pickled
    assert fork_map(lambda i: table[i].upper(), list(table), processes=2, min_items=1) == [
        f"DOC-{i}" for i in table]


def test_small_batches_and_one_core_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert {pid for _, pid in fork_map(_work, list(range(plan_pool.MIN_ITEMS - 1)), processes=2)} == {os.getpid()}
    monkeypatch.setattr(plan_pool, "usable_cores", lambda: 1)
    assert {pid for _, pid in fork_map(_work, list(range(500)))} == {os.getpid()}
    assert fork_map(_work, []) == []


def test_the_tokenizers_setting_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    fork_map(_work, list(range(100)), processes=2, min_items=1)
    assert "TOKENIZERS_PARALLELISM" not in os.environ


def _dies_in_a_child(x: int) -> int:
    if x == 150 and os.getpid() != _PARENT:
        os._exit(9)  # as the kernel's OOM killer would leave it
    return x + 1


_PARENT = os.getpid()


def test_a_child_that_dies_does_not_hang_the_plan() -> None:
    assert fork_map(_dies_in_a_child, list(range(300)), processes=2, min_items=1) == [x + 1 for x in range(300)]
