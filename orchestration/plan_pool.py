"""A fork pool for the plan's in-memory parse and chunk passes.

`bindery plan` parses and chunks every pending document in memory so its counts are exact
(`orchestration.plan`). That is the plan's whole cost on a first sync and it is pure CPU work
on independent documents, so it is spread over the machine's cores. The pool forks: the
children inherit the plan's state (configurations, the listing's bytes, a warmed tokenizer) and
are handed indexes into it, so nothing but the results crosses a pipe. They never touch the
store or the Dagster instance the parent holds open, and they leave by `os._exit` (the
pool's), so no inherited connection is closed under the parent. A child that dies (killed for
memory, say) breaks the pool; the parent then does the rest itself rather than wait forever.

It forks only a single-threaded process (the `bindery plan` command). A fork copies just the
calling thread: a lock another thread held at that moment stays held forever in the child, which
then hangs, and the pool with it (seen in a test worker with idle executor threads). So inside a
threaded process (a Dagster step, a test runner), and for small batches, one core or a
platform without `fork`, the work runs in the calling process: a pool's start-up (tens of
milliseconds) would cost more than it saves on a small batch anyway.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

__all__ = ["MIN_ITEMS", "can_fork", "fork_map", "usable_cores"]

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 48  # below this a pool's start-up costs more than it saves

_job: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # what the forked children run


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forking is safe here: the platform has it and no other thread is running."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _run(i: int) -> Any:
    assert _job is not None, "fork_map's job is set before the pool forks"
    fn, items = _job
    return fn(items[i])


def fork_map(fn: Callable[[T], R], items: Sequence[T], *, processes: int | None = None,
             min_items: int | None = None) -> list[R]:
    """`[fn(x) for x in items]`, in order, over forked worker processes where that pays.

    `fn` must not raise for an item (the plan's passes catch per document), and what it
    returns must pickle. The first item runs here before the fork, so whatever `fn` loads
    lazily (the chunker's tokenizer) is loaded once and inherited, not once per child."""
    n = min(processes or usable_cores(), len(items))
    small = len(items) < (MIN_ITEMS if min_items is None else min_items)
    if n < 2 or small or not can_fork():
        return [fn(x) for x in items]
    first = fn(items[0])
    global _job
    _job = (fn, items)
    # tokenizers' Rust thread pool may not be forked once it ran; its children run single-threaded
    # (and say so on stderr unless told) — the pool is the parallelism here
    prior = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
            return [first, *pool.map(_run, range(1, len(items)), chunksize=max(1, len(items) // (n * 8)))]
    except BrokenProcessPool:  # a child was killed (out of memory, a signal): finish here instead
        return [first, *(fn(x) for x in items[1:])]
    finally:
        _job = None
        if prior is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = prior
