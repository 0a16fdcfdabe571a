"""A file whose parse kills the run (a hang someone had to kill, a memory bomb the kernel killed)
stops one run, not every run after it (`assets.parse_watch`).

Each dying run is a real `bindery sync` in its own process whose parser ends the process, without
unwinding, on one file: what SIGKILL or the out-of-memory killer leave behind.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.bindery_fixture import Deployment

pytestmark = pytest.mark.slow

_DYING_SYNC = textwrap.dedent("""
    import os, sys
    import assets.parse_stage as stage
    real = stage.parse_document
    def parse(data, name, *a, **k):
        if name.endswith("killer.md"):
            os._exit(137)  # as SIGKILL: no finally, no cleanup
        return real(data, name, *a, **k)
    stage.parse_document = parse
    from orchestration.cli import main
    sys.exit(main(["--config", sys.argv[1], "sync"]))
""")


def _dying_sync(dep: Deployment) -> None:
    done = subprocess.run([sys.executable, "-c", _DYING_SYNC, str(dep.config_path)], capture_output=True,
                          text=True, timeout=600, check=False, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 137, done.stderr[-2000:]


def _by_doc(letters: list[dict[str, Any]]) -> dict[str, str]:
    return {d["doc"]: d["reason"] for d in letters}


def test_a_file_that_kills_two_runs_is_a_dead_letter_and_the_third_run_indexes_the_rest(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.write("notes/killer.md", "# Killer\n\nA page whose parse never returns.\n")
    dep.write("notes/harbour.md", "# Harbour\n\nPilots board the ships at the harbour mouth.\n")
    _dying_sync(dep)
    marker = next((dep.data / "parsing").glob("*.json"))
    assert "notes/killer.md" in marker.read_text()  # the document the run died on, and only that
    stopped = dep.cli("status")["sources"]["docs"]["stopped_parsing"]
    assert [(p["doc"], p["deaths"]) for p in stopped] == [("notes/killer.md", 1)]
    from orchestration.report import human

    assert "a run died while parsing notes/killer.md: the next sync parses it once more" in \
        human("status", dep.cli("status"))
    # one death is forgiven: the plan counts a second parse but never parses it itself
    plan = dep.cli("plan")
    assert plan["recomputed"]["parse"] >= 1 and "notes/killer.md" in str(plan["sources"])
    _dying_sync(dep)  # ... and the second death makes it a dead letter
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    letters = dep.cli("dlq", "list")
    assert _by_doc(letters).get("notes/killer.md") == "parse-killed"
    assert "2 runs stopped while parsing it" in next(d["error"] for d in letters if d["doc"] == "notes/killer.md")
    assert dep.cli("query", "pilots board ships harbour")["hits"][0]["doc"] == "notes/harbour.md"
    assert not list((dep.data / "parsing").glob("*.json"))
    assert dep.cli("status")["sources"]["docs"]["stopped_parsing"] == []
    assert dep.cli("sync")["recomputed"]["parse"] == 0  # not parsed again while its bytes stay
    # a retry parses it once more (here it parses)
    retried = dep.cli("dlq", "retry", "--doc", "notes/killer.md")
    assert retried["resolved"] == 1
    assert dep.cli("query", "page whose parse never returns")["hits"][0]["doc"] == "notes/killer.md"


def test_the_plan_of_a_sharded_source_reads_every_shards_marker(tmp_path: Path) -> None:
    """A shard's run marks the file it parses under the shard's name; the plan, which plans the
    whole source, read only the source's own marker, so it parsed the file that killed a shard's
    run (and could hang on it) and counted the sync's work wrong."""
    dep = Deployment(tmp_path)
    dep.config["sources"][0]["shards"] = 2
    dep.save()
    dep.cli("sync")
    dep.write("notes/killer.md", "# Killer\n\nA page whose parse never returns.\n")
    _dying_sync(dep)
    marker = next((dep.data / "parsing").glob("*.json"))
    assert "%23" in marker.name and "notes/killer.md" in marker.read_text()  # a shard's marker
    _dying_sync(dep)
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert _by_doc(dep.cli("dlq", "list")).get("notes/killer.md") == "parse-killed"


def test_a_run_interrupted_in_a_parse_leaves_no_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or any error) inside a parse unwinds: nothing counts against the file."""
    import assets.parse_stage as stage
    from assets.parsing import parse_document as real

    dep = Deployment(tmp_path)

    def interrupted(data: bytes, name: str, *a: Any, **k: Any) -> Any:
        if name.endswith("slow.md"):
            raise KeyboardInterrupt
        return real(data, name, *a, **k)

    dep.write("notes/slow.md", "# Slow\n\nA page the operator stopped the run on.\n")
    monkeypatch.setattr(stage, "parse_document", interrupted)
    dep.cli("sync", expect=130)
    assert not list((dep.data / "parsing").glob("*.json"))
    monkeypatch.setattr(stage, "parse_document", real)
    dep.cli("sync")
    assert "notes/slow.md" not in _by_doc(dep.cli("dlq", "list"))


def test_a_dead_runs_file_deleted_since_leaves_no_marker(tmp_path: Path) -> None:
    """The file a run died on, deleted before the next sync: nothing is left to count against it,
    and status stops naming it."""
    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.write("notes/killer.md", "# Killer\n\nA page whose parse never returns.\n")
    _dying_sync(dep)
    (dep.root / "notes" / "killer.md").unlink()
    dep.cli("sync")
    assert not list((dep.data / "parsing").glob("*.json"))
    assert dep.cli("status")["sources"]["docs"]["stopped_parsing"] == []


def _stubborn(give_up_after: float) -> None:
    """A parse that never ends by itself and swallows every ordinary exception on its way."""
    import time

    end = time.monotonic() + give_up_after  # only so that a broken limit fails the test, not hangs it
    while time.monotonic() < end:
        try:
            time.sleep(0.01)
        except Exception:  # the point: a parser that catches everything
            continue


def test_a_parse_past_the_time_limit_is_a_dead_letter_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assets.parse_stage as stage
    import orchestration.plan as plan_module
    from assets.parsing import parse_document as real

    dep = Deployment(tmp_path)
    dep.set_stage("parse", max_parse_seconds=0.5)
    dep.write("notes/stuck.md", "# Stuck\n\nA page whose parse loops forever.\n")
    dep.write("notes/harbour.md", "# Harbour\n\nPilots board the ships at the harbour mouth.\n")

    def looping(data: bytes, name: str, *a: Any, **k: Any) -> Any:
        if name.endswith("stuck.md"):
            _stubborn(30)
        return real(data, name, *a, **k)

    monkeypatch.setattr(stage, "parse_document", looping)
    monkeypatch.setattr(plan_module, "parse_document", looping)
    plan = dep.cli("plan")  # the plan stops the parse as the sync will, and counts what the sync does
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    letters = {d["doc"]: d for d in dep.cli("dlq", "list")}
    assert letters["notes/stuck.md"]["reason"] == "parse-timeout"
    assert "longer than stages.parse.max_parse_seconds (0.5 s)" in letters["notes/stuck.md"]["error"]
    assert dep.cli("query", "pilots board ships harbour")["hits"][0]["doc"] == "notes/harbour.md"
    assert not list((dep.data / "parsing").glob("*.json"))  # a stopped parse is not a death
    assert dep.cli("sync")["recomputed"]["parse"] == 0  # cached as failed: not stopped again every sync
    # the limit is not part of the parse version: raising it re-parses nothing by itself
    dep.set_stage("parse", max_parse_seconds=60)
    assert dep.cli("sync")["recomputed"]["parse"] == 0
    monkeypatch.setattr(stage, "parse_document", real)
    assert dep.cli("dlq", "retry", "--doc", "notes/stuck.md")["resolved"] == 1


def test_the_time_limit_restores_the_alarm_and_stays_out_of_threads() -> None:
    import signal
    import threading

    from assets.parse_watch import time_limit
    from connectors.errors import ParseTimeout

    before = signal.getsignal(signal.SIGALRM)
    with time_limit(5, "quick.md"):
        pass
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with pytest.raises(ParseTimeout, match=r"slow\.md: parsing took longer than .*\(0\.2 s\)"), \
            time_limit(0.2, "slow.md"):
        _stubborn(30)
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    # a limit so small the alarm fires before the block starts (or as it ends): a ParseTimeout or
    # nothing, never the bare alarm escaping (a review: 1e-6 s crashed the run with `_Alarm`)
    for _ in range(300):
        try:
            with time_limit(1e-6, "tiny.md"):
                pass
        except ParseTimeout:
            pass
        assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    errors: list[BaseException] = []

    def in_a_thread() -> None:  # no alarm there: the block runs, unlimited
        try:
            with time_limit(0.05, "threaded.md"):
                _stubborn(0.3)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=in_a_thread)
    t.start()
    t.join()
    assert errors == []
