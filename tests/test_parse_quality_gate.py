"""The blocking parse-quality check judges against a statistical floor: one bad file never sinks a
small sync, a systematic failure still blocks, and a re-run gives the same verdict.

`judge` is pure (the rows in, a verdict out); the end-to-end tests run the issue's repro through
the CLI on a real deployment.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from assets.parse_quality import ParseRow, judge, judge_versions
from connectors.config import ParseQualityThresholds
from tests.bindery_fixture import DOCS, Deployment
from tests.sync_helpers import refuse_listing

TH = ParseQualityThresholds()  # max_failure_share 0.3, warn 0.05, min_batch 20


def rows(ok: int, failed: int, at: float | None = 10.0, prefix: str = "d") -> list[ParseRow]:
    return ([ParseRow(f"{prefix}ok{i}", False, at, 0.9) for i in range(ok)]
            + [ParseRow(f"{prefix}bad{i}", True, at, reason="format-mismatch: x") for i in range(failed)])


def test_one_bad_file_in_a_small_batch_of_a_small_source_only_warns() -> None:
    pop = rows(6, 0, at=1.0, prefix="old") + rows(1, 1, at=10.0)
    v = judge(pop, accepted_at=5.0, th=TH)
    assert v.severity == "warn" and v.metadata["judged"] == "population" and v.metadata["judged_docs"] == 8
    v = judge(rows(1, 1), accepted_at=None, th=TH)  # a first sync of two files, one broken: 50 %
    assert v.severity == "warn" and "below the floor of 20" in v.description


def test_a_small_batch_is_judged_with_the_whole_source() -> None:
    healthy = rows(40, 0, at=1.0, prefix="old")
    assert judge(healthy + rows(1, 1), accepted_at=5.0, th=TH).severity == "ok"  # 1 of 42
    broken = rows(10, 20, at=1.0, prefix="old")  # the source itself is mostly broken
    v = judge(broken + rows(1, 1), accepted_at=5.0, th=TH)
    assert v.severity == "error" and v.metadata["judged"] == "population"


def test_a_batch_above_the_floor_is_judged_alone() -> None:
    healthy = rows(500, 0, at=1.0, prefix="old")
    v = judge(healthy + rows(0, 25), accepted_at=5.0, th=TH)
    assert v.severity == "error" and v.metadata["judged"] == "batch" and v.metadata["failure_share"] == 1.0
    assert len(v.metadata["worst_documents"]) == 10
    assert v.metadata["reasons"] == {"format-mismatch": 25}  # all judged failures, by class


def test_the_verdict_depends_on_state_not_on_the_run() -> None:
    """A failed check does not accept its batch, so the same rows are judged again."""
    pop = rows(500, 0, at=1.0, prefix="old") + rows(0, 25, at=10.0)
    first = judge(pop, accepted_at=5.0, th=TH)
    again = judge(pop, accepted_at=5.0, th=TH)
    assert first.severity == again.severity == "error" and first.metadata == again.metadata
    # once accepted (an operator raised the threshold, a pass moved the mark), it is history
    assert judge(pop, accepted_at=20.0, th=TH).severity == "ok"


def test_unparsed_documents_count_as_failed_and_unjudged() -> None:
    pop = rows(30, 0, at=1.0, prefix="old") + [ParseRow(f"gone{i}", True, None) for i in range(21)]
    v = judge(pop, accepted_at=5.0, th=TH)
    assert v.severity == "error" and v.metadata["batch_docs"] == 21


def test_drift_needs_a_batch_above_the_floor() -> None:
    low = [ParseRow(f"n{i}", False, 10.0, 0.3) for i in range(19)]
    hist = [ParseRow(f"o{i}", False, 1.0, 0.9) for i in range(30)]
    assert judge(hist + low, accepted_at=5.0, th=TH).severity == "ok"  # 19 < floor: not judged
    low.append(ParseRow("n19", False, 10.0, 0.3))
    v = judge(hist + low, accepted_at=5.0, th=TH)
    assert v.severity == "error" and "word share" in v.description


def test_each_parse_version_is_judged_on_its_own_documents() -> None:
    """A reindex under a new parser builds beside live: the run's documents are parsed under
    two versions. 12 documents, 4 broken, are 12 documents under each version (a warning below
    the floor), not a 24-document population that fails; a version that is worse still shows."""
    small = rows(8, 4)
    both = [replace(r, parse_version=v) for v in ("p8", "p11") for r in small]
    assert judge(both, accepted_at=None, th=TH).severity == "error"  # what counting rows did
    v = judge_versions(both, accepted_at=None, th=TH)
    assert v.severity == "warn" and v.metadata["judged_docs"] == 12 and "of 12 documents" in v.description
    assert v.description.startswith("parse version ") and v.metadata["parse_versions"] == {"p11": "warn", "p8": "warn"}
    broken_new = ([replace(r, parse_version="p8") for r in rows(30, 0)]
                  + [replace(r, parse_version="p11") for r in rows(5, 25)])
    v = judge_versions(broken_new, accepted_at=None, th=TH)
    assert v.severity == "error" and v.metadata["parse_version"] == "p11" and v.metadata["judged_docs"] == 30
    assert judge_versions(small, accepted_at=None, th=TH) == judge(small, accepted_at=None, th=TH)


# -- end to end --------------------------------------------------------------------------------


@pytest.mark.slow
def test_one_good_and_one_random_file_keep_the_sync_green(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.write("new/good.md", "# Heron\n\nThe grey heron nests in tall trees near the lake every spring.\n")
    dep.write("new/random.txt", os.urandom(3000))
    out = dep.cli("sync")
    assert out["errors"] == {} and out["sources"]["docs"]["new"] == 2
    assert "new/good.md" in {h["doc"] for h in dep.cli("query", "grey heron nests", "-k", "5")["hits"]}
    assert {d["doc"] for d in dep.cli("dlq")} == {"new/random.txt"}
    assert dep.cli("sync")["errors"] == {}  # and again: the same verdict


@pytest.mark.slow
def test_a_small_source_syncs_while_a_reindex_under_a_new_parser_waits(tmp_path: Path) -> None:
    """After a parser change (an upgrade, an OCR setting) `bindery reindex` builds a candidate
    under a new parse version and syncs write both generations. A 10-document source with 4
    broken files warned before, and then every sync failed ("40% of 20 documents") until the
    candidate was promoted, so edits were not indexed meanwhile."""
    dep = Deployment(tmp_path)
    for i in range(4):
        dep.write(f"broken/{i}.txt", bytes([0, 1, 2, 3, 255]) * 200)
    assert dep.cli("sync")["errors"] == {}
    dep.config["stages"] = {"parse": {"ocr_dpi": 200}}
    dep.save()
    dep.cli("reindex")
    dep.write("ops/oncall.txt", (dep.root / "ops/oncall.txt").read_text() + "Page the walrus team for dock faults.\n")
    out = dep.cli("sync")
    assert out["errors"] == {} and out["sources"]["docs"]["updated"] == 1
    assert dep.cli("query", "walrus team dock faults", "-k", "3")["hits"][0]["doc"] == "ops/oncall.txt"


@pytest.mark.slow
def test_a_systematic_failure_blocks_on_every_run_until_fixed(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    for i in range(24):
        dep.write(f"junk/{i}.txt", bytes([0, 1, 2, 3, 255]) * 200)
    first = dep.cli("sync", expect=1)
    assert "parse_quality" in first["error"] and "100% of 24 documents (batch)" in first["error"]
    again = dep.cli("sync", expect=1)  # the failures are cached, the verdict is not
    assert again["error"] == first["error"]
    assert "parse_quality" in dep.cli("status")["sources"]["docs"]["last_error"]
    for i in range(24):
        (dep.root / f"junk/{i}.txt").unlink()
    assert dep.cli("sync", "--allow-mass-delete")["errors"] == {}
    assert dep.cli("status")["sources"]["docs"]["last_error"] is None


@pytest.mark.slow
def test_a_blocked_run_still_carries_deletes_and_access_into_the_indexes(tmp_path: Path) -> None:
    """The listing deletes and re-permissions in the store before the check blocks the index
    step: the indexes follow in the same run, so `bindery verify` stays consistent (it reported
    orphans after every blocked run) and a rollback target does not keep a deleted document."""
    dep = Deployment(tmp_path)
    dep.cli("sync")
    (dep.root / "robots/xr5200.md").unlink()
    dep.write("people/.bindery-acl", "group:hr\n")
    dep.write("ops/.bindery-acl", "group:ops\n")  # an access change and an edit: out until written
    dep.write("ops/oncall.txt", (dep.root / "ops/oncall.txt").read_text() + "Page the walrus team.\n")
    for i in range(24):
        dep.write(f"junk/{i}.txt", bytes([0, 1, 2, 3, 255]) * 200)
    assert "parse_quality" in dep.cli("sync", expect=1)["error"]
    assert dep.cli("verify")["consistent"] is True
    assert "robots/xr5200.md" not in {h["doc"] for h in dep.cli("query", "XR-5200 heavy carrier", "-k", "5")["hits"]}


@pytest.mark.slow
def test_dlq_retry_of_a_file_that_still_fails_says_so(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.write("notes/scan.txt", b"\x00\x01\x02" * 300)
    dep.write("notes/evil\x1b[31mRED.txt", b"\x00\x01\x02" * 300)
    dep.cli("sync")
    out = dep.cli("dlq", "retry", "--doc", "notes/scan.txt", expect=1)
    assert out["still_failing"] == ["notes/scan.txt"] and out["resolved"] == 0
    # the list cuts errors to a table's width and says how to read one whole (a new-user pass:
    # only --json had the whole reason an operator needs to fix the file)
    from orchestration.report import DeadLetterDetail, human

    listed = dep.cli("dlq")
    long = [{**listed[0], "error": "the reason, " * 20 + "and its end"}]
    assert "`bindery dlq list --doc PATH`" in human("dlq", long) and "…" in human("dlq", long)
    assert "its end" not in human("dlq", long) and "its end" in human("dlq", DeadLetterDetail(long))
    assert "--doc PATH" not in human("dlq", listed)  # nothing cut, nothing to say
    one = dep.cli("dlq", "list", "--doc", "notes/scan.txt")
    assert [d["doc"] for d in one] == ["notes/scan.txt"]
    assert dep.cli("dlq", "list", "--doc", "docs:notes/scan.txt") == one  # as a query hit names it
    whole = human("dlq", DeadLetterDetail(one))
    assert " ".join(one[0]["error"].split()) in " ".join(whole.split())
    evil = human("dlq", DeadLetterDetail(dep.cli("dlq", "list", "--doc", "notes/evil\x1b[31mRED.txt")))
    assert "\x1b" not in evil and "evil\\x1b[31mRED.txt" in evil
    out = dep.cli("dlq", "retry", "--all", expect=1)  # a name's escape sequence never reaches a terminal
    assert "evil\\x1b[31mRED.txt" in out["error"] and "\x1b" not in out["error"]
    (dep.root / "notes/evil\x1b[31mRED.txt").unlink()
    (dep.root / "notes/scan.txt").write_text("The scanner note, now typed out as plain text for everyone.\n")
    out = dep.cli("dlq", "retry", "--doc", "notes/scan.txt")
    assert {k: out[k] for k in ("retried", "resolved", "still_failing")} == {"retried": 1, "resolved": 1,
                                                                            "still_failing": []}
    assert out["sync"]["sources"]["docs"]["updated"] == 1 and out["sync"]["errors"] == {}


@pytest.mark.slow
def test_dlq_retry_says_what_its_sync_did_and_why_it_failed(tmp_path: Path) -> None:
    """A retry is a sync of the dead letters' sources: a document deleted since the last sync is
    removed by it and the retry says so, and a sync that fails (here the delete guard, after most
    files vanished) is named as the reason, not reported as the fixed file "still failing"."""
    dep = Deployment(tmp_path)
    dep.write("notes/scan.txt", b"\x00\x01\x02" * 300)
    dep.cli("sync")
    (dep.root / "people/lyon.md").unlink()
    out = dep.cli("dlq", "retry", "--all", expect=1)
    assert out["still_failing"] == ["notes/scan.txt"] and out["sync"]["sources"]["docs"]["deleted"] == 1
    assert out["sync"]["written"]["deleted"] == 1
    for p in sorted(dep.root.rglob("*.*")):
        if p.name != "scan.txt":
            p.unlink()  # the rest of the corpus gone: the delete guard refuses the sweep
    (dep.root / "notes/scan.txt").write_text("The scanner note, now typed out as plain text for everyone.\n")
    out = dep.cli("dlq", "retry", "--all", expect=1)
    assert "docs" in out["sync"]["errors"] and out["error"].startswith("the retry's sync failed: docs: ")


@pytest.mark.slow
def test_a_sync_that_indexes_nothing_does_not_say_it_succeeded(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    for rel in list((dep.root).rglob("*")):
        if rel.is_file():
            rel.unlink()
    dep.write("a.txt", os.urandom(2000))
    dep.write("b.txt", os.urandom(2000))
    out = dep.cli("sync", expect=1)  # below the check's floor: it only warns, but nothing is searchable
    assert "nothing could be indexed" in out["errors"]["docs"] and out["generation"] is None
    # recorded as the source's last error, as every other failing sync is
    assert dep.cli("status")["sources"]["docs"]["last_error"] == out["errors"]["docs"]


@pytest.mark.slow
def test_a_file_that_reads_again_unchanged_leaves_the_dead_letter_table(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A file touched and then unreadable is dead-lettered at the listing and keeps its indexed
    version. Readable again with the same bytes, it is 'unchanged', nothing downstream runs, and
    its dead letter stayed for good (`dlq retry` too said "still failing")."""
    import time

    from tests.sync_helpers import refuse_reads

    dep = Deployment(tmp_path)
    dep.cli("sync")
    path = dep.root / "ops/oncall.txt"
    later = time.time() + 5
    os.utime(path, (later, later))  # touched: the cheap test fails, the file is read again
    readable_again = refuse_reads(monkeypatch, "ops/oncall.txt")
    assert dep.cli("sync")["sources"]["docs"]["failed"] == 1
    assert [(d["doc"], d["stage"]) for d in dep.cli("dlq")] == [("ops/oncall.txt", "listing")]
    readable_again()
    out = dep.cli("sync")
    assert out["sources"]["docs"]["unchanged"] == len(DOCS) and out["dead_letters"] == 0
    assert dep.cli("dlq") == [] and dep.cli("status")["dead_letters"] == 0


def test_an_unreadable_folder_keeps_its_documents_and_the_rest_syncs(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """One folder the OS refuses to list used to fail the whole source: a new file elsewhere was
    never indexed. Now the rest syncs, the folder is a dead letter saying why, and what was
    indexed under it stays (neither deleted nor changed) until it can be read again."""

    dep = Deployment(tmp_path)
    dep.cli("sync")
    readable_again = refuse_listing(monkeypatch, dep.root / "robots")
    dep.write("new/heron.md", "# Heron\n\nThe grey heron nests in tall trees near the lake every spring.\n")
    (dep.root / "robots/xr5200.md").unlink()  # unseen while the folder cannot be read
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["written"] == out["written"] and plan["recomputed"] == out["recomputed"]
    assert out["errors"] == {} and out["sources"]["docs"]["new"] == 1 and out["sources"]["docs"]["deleted"] == 0
    assert [(d["doc"], d["reason"]) for d in dep.cli("dlq")] == [("robots/", "unreadable-folder")]
    assert "new/heron.md" in {h["doc"] for h in dep.cli("query", "grey heron nests", "-k", "5")["hits"]}
    assert "robots/xr4471.md" in {h["doc"] for h in dep.cli("query", "XR-4471 warehouse robot", "-k", "5")["hits"]}
    assert dep.cli("sync")["sources"]["docs"]["deleted"] == 0  # and again
    plan = dep.cli("plan")
    assert plan["sources"]["docs"]["delete_guard"] == {"safe": True, "would_delete": 0, "reason": None}
    # what is kept stays in the delete guard's baseline: the folder coming back empty (an
    # unmounted share) is refused as a shrunken listing, not swept
    assert dep.cli("status")["sources"]["docs"]["last_good_listing_count"] == len(DOCS) + 1

    readable_again()  # its changes arrive
    out = dep.cli("sync")
    assert out["sources"]["docs"]["deleted"] == 1 and dep.cli("dlq") == []


def test_an_excluded_folder_goes_even_when_it_cannot_be_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents are kept under an unreadable folder only while the source still wants them: an
    operator who excludes the folder (a nested source's folder, say) sees them go, readable or not."""
    dep = Deployment(tmp_path)
    dep.cli("sync")
    refuse_listing(monkeypatch, dep.root / "people")
    dep.config["sources"][0]["exclude"] = ["people/**"]
    dep.save()
    out = dep.cli("sync")
    assert out["sources"]["docs"]["deleted"] == 1
    assert "people/lyon.md" not in {h["doc"] for h in dep.cli("query", "Lyon office part dieu", "-k", "5")["hits"]}
