"""The plan's fork pool (orchestration.plan_pool): same results, same order, as a plain loop,
work really spread over child processes, small batches and threaded processes kept in the
calling process, and a child that dies never hangs the plan.

The forking cases run in a fresh single-threaded interpreter: this test process has threads
(pytest-xdist's), and the pool refuses to fork a threaded process — on purpose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from orchestration import plan_pool
from orchestration.plan_pool import fork_map

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the pool forks")

_ROOT = Path(__file__).resolve().parent.parent

_SCRIPT = """
import json, os, sys
from orchestration.plan_pool import fork_map

parent = os.getpid()

def work(x):
    return x * x, os.getpid()

def dies(x):
    if x == 150 and os.getpid() != parent:
        os._exit(9)  # as the kernel's OOM killer would leave it
    return x + 1

out = fork_map(work, list(range(200)), processes=2, min_items=1)
table = {i: f"doc-{i}" for i in range(100)}  # inherited by the fork, never pickled
print(json.dumps({
    "values": [v for v, _ in out],
    "first_pid_is_parent": out[0][1] == parent,
    "child_pids": len({p for _, p in out} - {parent}),
    "closure": fork_map(lambda i: table[i].upper(), list(table), processes=2, min_items=1),
    "after_a_death": fork_map(dies, list(range(300)), processes=2, min_items=1),
    "tokenizers_env": os.environ.get("TOKENIZERS_PARALLELISM"),
}))
"""


def _fresh() -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TOKENIZERS_PARALLELISM"}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(_ROOT)}, cwd=_ROOT)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_a_single_threaded_process_forks_and_gets_everything_back_in_order() -> None:
    r = _fresh()
    assert r["values"] == [x * x for x in range(200)]
    assert r["first_pid_is_parent"], "the first item runs in the parent, so lazy state is inherited"
    assert r["child_pids"] >= 1, "the rest ran in forked children"
    assert r["closure"] == [f"DOC-{i}" for i in range(100)]
    assert r["after_a_death"] == [x + 1 for x in range(300)], "a killed child: the parent finishes the work"
    assert r["tokenizers_env"] is None, "the tokenizers setting is restored"


def _work(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_a_threaded_process_never_forks() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not plan_pool.can_fork()
        out = fork_map(_work, list(range(300)), processes=2, min_items=1)
    finally:
        stop.set()
        t.join()
    assert [v for v, _ in out] == [x * x for x in range(300)] and {p for _, p in out} == {os.getpid()}


def test_small_batches_and_one_core_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_pool, "can_fork", lambda: True)  # even where forking were allowed
    assert {pid for _, pid in fork_map(_work, list(range(plan_pool.MIN_ITEMS - 1)), processes=2)} == {os.getpid()}
    monkeypatch.setattr(plan_pool, "usable_cores", lambda: 1)
    assert {pid for _, pid in fork_map(_work, list(range(500)))} == {os.getpid()}
    assert fork_map(_work, []) == []
