"""The lifecycle state machine (tests/lifecycle.py), bounded for `make test`: a few short random
sequences, derandomised so the run time is stable. `make reliability` runs it longer, with real
SIGKILLs, and prints the counts."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings

from tests.lifecycle import Lifecycle

pytestmark = pytest.mark.slow

TestLifecycle = Lifecycle.TestCase
TestLifecycle.settings = settings(max_examples=3, stateful_step_count=10, deadline=None, derandomize=True,
                                  database=None, suppress_health_check=list(HealthCheck))


def test_replay_odd_names_a_corrupt_file_and_an_acl_change_across_a_promotion() -> None:
    """One fixed sequence of the machine's rules, checked after every step: the sequence that
    issue 9 items 1-3 describe, so it runs on every `make test` whatever Hypothesis draws."""
    m = Lifecycle()
    try:
        m.first_sync()
        m.consistent()
        steps: list[Callable[[], object]] = [
            lambda: m.add("not-utf8", "b", False), lambda: m.add("newline", "a", False),
            lambda: m.add("long", "", False), lambda: m.add("plain", "a", True),  # one corrupt file
            m.sync, m.reindex, m.promote,
            lambda: m.set_acl("a", ["alice"]), m.sync, m.rollback,
            lambda: m.set_acl("a", []), lambda: m.crashed_sync("snapshot-recorded"), m.sync]
        for step in steps:
            step()
            m.consistent()
    finally:
        m.teardown()
