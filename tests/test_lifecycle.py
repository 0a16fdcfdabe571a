"""The lifecycle state machine (tests/lifecycle.py), bounded for `make test`: a few short random
sequences, derandomised so the run time is stable. `make reliability` runs it longer, with real
SIGKILLs, and prints the counts."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests.lifecycle import Lifecycle

# A failure is shrunk over real CLI runs (Hypothesis gives shrinking up to 5 minutes): the
# timeout leaves room for that, so a regression is reported as its shortest sequence rather
# than as pytest-timeout interrupting the shrinker. No explain phase: it traces every line.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TestLifecycle = Lifecycle.TestCase
TestLifecycle.settings = settings(max_examples=3, stateful_step_count=10, deadline=None, derandomize=True,
                                  database=None, suppress_health_check=list(HealthCheck),
                                  phases=[p for p in Phase if p is not Phase.explain])


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


def test_replay_a_sync_killed_before_publishing_then_a_promotion_leaves_no_drift() -> None:
    """Found by the long run (`make reliability`): a sync killed after writing the live
    generation's working indexes but before recording them, then a reindex and a promotion
    before any sync. The old live generation, now previous, is only maintained from then on: it
    held chunks of a document its index state never recorded, which no later sync removed or
    updated (`verify` reported drift for ever, a later delete or ACL change never reached them)."""
    m = Lifecycle()
    try:
        m.first_sync()
        m.consistent()
        steps: list[Callable[[], object]] = [
            lambda: m.add("plain", "a", False), lambda: m.crashed_sync("publish"), m.reindex, m.promote,
            m.sync, lambda: m.set_acl("a", ["alice"]), m.sync]
        for step in steps:
            step()
            m.consistent()
    finally:
        m.teardown()
