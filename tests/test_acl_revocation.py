"""Access taken away reaches the query service even when the sync that sees it is refused: a
delete guard that refuses a shrunken listing still applies the ACLs it narrows, and an ACL file
that cannot be read withholds the documents it governs instead of leaving their old access."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from connectors.config import load_config
from connectors.indexes.base import Filters
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import Deployment
from tests.sync_helpers import refuse_listing

pytestmark = pytest.mark.slow

QUERY = "Lyon office part dieu district"


def _docs_seen_by(dep: Deployment, principal: str, query: str = QUERY) -> set[str]:
    r = LiveRetriever(load_config(dep.config_path))
    try:
        return {h.doc for h in r.search(query, 10, Filters(principals=(principal,))).hits}
    finally:
        r.close()


def test_a_refused_sweep_still_narrows_access(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "group:hr\ngroup:eng\n")
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:eng")

    dep.write("people/.bindery-acl", "group:hr\n")  # eng loses access ...
    aside = tmp_path / "aside"
    shutil.move(dep.root / "robots", aside)  # ... in a listing that also lost most files
    shutil.move(dep.root / "ops", aside / "ops")
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["errors"]["docs"]
    assert "access of 1 document" in out["errors"]["docs"]
    assert "people/lyon.md" not in _docs_seen_by(dep, "group:eng")  # taken away at once
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert dep.cli("status")["documents"] == 6  # nothing deleted
    # the indexes hold the narrowed ACL too, though the run stopped before its index step
    assert dep.cli("verify")["consistent"] is True

    shutil.move(aside / "ops", dep.root / "ops")  # the listing heals: the indexes catch up
    shutil.move(aside, dep.root / "robots")
    dep.cli("sync")
    assert dep.cli("verify")["consistent"] is True
    assert "people/lyon.md" not in _docs_seen_by(dep, "group:eng")


def test_files_deleted_under_a_narrowed_folder_in_a_refused_sweep_lose_that_access(tmp_path: Path) -> None:
    """An attacker pass: three files deleted from `team/` and its `.bindery-acl` narrowed in one
    sync the delete guard refused: the listed files were narrowed, the deleted ones stayed
    readable at their old, wider ACL until the sweep was allowed. Each is now narrowed by the
    ACL its folder gives now, as if it were still there."""
    dep = Deployment(tmp_path)
    dep.write("team/.bindery-acl", "alice\nbob\n")
    for i in range(4):
        dep.write(f"team/note-{i}.md", f"# Note {i}\n\nThe kingfisher budget line {i} is forty thousand.\n")
    dep.cli("sync")
    assert "team/note-0.md" in _docs_seen_by(dep, "bob", "kingfisher budget line")
    for i in range(3):
        (dep.root / f"team/note-{i}.md").unlink()
    for rel in ("robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/oncall.txt", "ops/errors.html"):
        (dep.root / rel).unlink()  # enough gone at once for the guard to refuse the sweep
    dep.write("team/.bindery-acl", "alice\n")
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["errors"]["docs"]
    assert not {d for d in _docs_seen_by(dep, "bob", "kingfisher budget line") if d.startswith("team/")}
    assert "team/note-0.md" in _docs_seen_by(dep, "alice", "kingfisher budget line")  # kept for alice
    assert dep.cli("verify")["consistent"] is True


def test_a_file_moved_into_a_protected_folder_in_a_refused_sync_is_narrowed(tmp_path: Path) -> None:
    """The refused sweep keeps a moved file's old path served; it now keeps no more access than
    the file's new place gives (an attacker's find: `pub/layoffs.md` moved into `hr/` stayed
    public, full text, for as long as the guard kept refusing)."""
    dep = Deployment(tmp_path)
    dep.write("hr/.bindery-acl", "group:hr\n")
    dep.write("pub/layoffs.md", "# Layoffs\n\nThe quokka division closes in March; tell nobody yet.\n")
    dep.cli("sync")
    assert "pub/layoffs.md" in _docs_seen_by(dep, "group:eng", "quokka division closes")
    aside = tmp_path / "aside"
    shutil.move(dep.root / "robots", aside)  # a listing that also lost most files: refused
    shutil.move(dep.root / "ops", aside / "ops")
    shutil.move(dep.root / "pub/layoffs.md", dep.root / "hr/layoffs.md")
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["errors"]["docs"]
    seen = _docs_seen_by(dep, "group:eng", "quokka division closes")
    assert "pub/layoffs.md" not in seen and "hr/layoffs.md" not in seen
    assert "pub/layoffs.md" in _docs_seen_by(dep, "group:hr", "quokka division closes")  # until the sweep runs
    assert dep.cli("verify")["consistent"] is True


def test_a_moved_file_stays_served_until_its_new_path_is_indexed(tmp_path: Path) -> None:
    """An operator pass: a rename took the document out of search from the listing to the end of
    the sync (the listing deleted the old path, only the index step wrote the new one), and for
    good when the sync was interrupted in between. The old path is now served, with no more
    access than its new place gives, until the index step writes the new path and removes it."""
    from assets.listing import run_listing
    from assets.runtime import Runtime

    dep = Deployment(tmp_path)
    dep.write("hr/.bindery-acl", "group:hr\n")
    dep.write("pub/layoffs.md", "# Layoffs\n\nThe quokka division closes in March; tell nobody yet.\n")
    dep.write("pub/plan.md", "# Plan\n\nThe wombat team ships the new dock in April.\n")
    dep.cli("sync")
    shutil.move(dep.root / "pub/layoffs.md", dep.root / "hr/layoffs.md")  # into a narrower folder
    shutil.move(dep.root / "pub/plan.md", dep.root / "pub/plan-2027.md")  # a plain rename
    rt = Runtime(load_config(dep.config_path))
    res = run_listing(rt, "docs")  # a sync that stops after its listing
    assert res.counts["moved"] == 2 and res.counts["deleted"] == 0
    assert "pub/plan.md" in _docs_seen_by(dep, "group:eng", "wombat team ships the new dock")
    assert "pub/layoffs.md" in _docs_seen_by(dep, "group:hr", "quokka division closes")
    assert not _docs_seen_by(dep, "group:eng", "quokka division closes") & {"pub/layoffs.md", "hr/layoffs.md"}
    assert dep.cli("verify")["consistent"] is True  # its chunks are kept while its index entries are
    out = dep.cli("sync")  # the interrupted sync's successor
    assert out["recomputed"]["parse"] == 0 and out["recomputed"]["embed"] == 0
    assert _docs_seen_by(dep, "group:eng", "wombat team ships the new dock") & {"pub/plan.md", "pub/plan-2027.md"} \
        == {"pub/plan-2027.md"}
    assert _docs_seen_by(dep, "group:hr", "quokka division closes") & {"pub/layoffs.md", "hr/layoffs.md"} \
        == {"hr/layoffs.md"}
    assert rt.store.moved_away("docs") == [] and dep.cli("verify")["consistent"] is True
    assert dep.cli("sync")["sources"]["docs"]["deleted"] == 0  # retired once, never swept again


def test_a_generation_that_never_gets_a_moved_files_new_path_keeps_its_old_one(tmp_path: Path) -> None:
    """An operator pass: sync, promote, move a file, sync, roll back: the file was found under
    neither path. The sync wrote the new path into live and removed the old one from the
    previous generation too, which it only maintains and so never gets the new path. A
    generation keeps the old path until it holds the new one (a rollback serves it, as a reindex
    leaves it in live); the plan counts the sync's removals the same way."""
    dep = Deployment(tmp_path)
    dep.write("pub/plan.md", "# Plan\n\nThe wombat team ships the new dock in April.\n")
    dep.cli("sync")
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "a previous generation to roll back to")
    shutil.move(dep.root / "pub/plan.md", dep.root / "pub/plan-2026.md")
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert out["written"] == plan["written"] and out["written"]["deleted"] == 1
    # moved on again: the old path follows the bytes (a review: lost once plan-2026.md was deleted)
    shutil.move(dep.root / "pub/plan-2026.md", dep.root / "pub/plan-2027.md")
    plan = dep.cli("plan")
    assert dep.cli("sync")["written"] == plan["written"] == {"documents": 1, "chunks": 1, "deleted": 1}
    assert "pub/plan-2027.md" in _docs_seen_by(dep, "group:eng", "wombat team ships the new dock")
    dep.cli("rollback")
    assert "pub/plan.md" in _docs_seen_by(dep, "group:eng", "wombat team ships the new dock")
    checked = dep.cli("verify")  # kept by design: no drift, and no work a stopped sync left
    assert checked["consistent"] is True and all(g["pending"] == 0 for g in checked["generations"].values())
    plan = dep.cli("plan")
    out = dep.cli("sync")  # the rolled-back-to generation gets the new path: the old one goes
    assert out["written"] == plan["written"] and out["written"]["deleted"] == 1
    assert _docs_seen_by(dep, "group:eng", "wombat team ships the new dock") & {"pub/plan.md", "pub/plan-2027.md"} \
        == {"pub/plan-2027.md"}


def test_a_moved_files_old_path_has_no_more_access_than_its_new_one_has_now(tmp_path: Path) -> None:
    """A review of the above: the old path kept the access it had when the move was listed, and
    stayed readable after the new file was narrowed or deleted for real, for as long as no index
    step ran (a refused sweep, a crash). It is served through the document it moved to: while
    that one is live with the same bytes, under the access both give."""
    from assets.listing import run_listing
    from assets.listing_access import withhold_removed_sources
    from assets.runtime import Runtime

    dep = Deployment(tmp_path)
    dep.write("team/.bindery-acl", "alice\nbob\n")
    for name in ("a", "b", "c"):
        dep.write(f"pub/{name}.md", f"# Plan {name}\n\nThe wombat team {name}{name} ships the dock in April.\n")
    dep.cli("sync")
    for name in ("a", "b", "c"):
        shutil.move(dep.root / f"pub/{name}.md", dep.root / f"team/{name}.md")
    rt = Runtime(load_config(dep.config_path))
    run_listing(rt, "docs")  # a sync that stops after its listing: three old paths kept

    def seen(who: str, name: str) -> bool:
        return f"pub/{name}.md" in _docs_seen_by(dep, who, f"wombat team {name}{name} ships the dock")

    assert seen("bob", "a") and seen("bob", "b") and seen("bob", "c") and not seen("eve", "a")
    dep.write("team/.bindery-acl", "alice\n")  # bob loses the folder: a.md, b.md narrowed
    (dep.root / "team/b.md").unlink()  # deleted for real
    run_listing(rt, "docs")
    assert seen("alice", "a") and not seen("bob", "a")
    assert not seen("alice", "b") and not seen("bob", "b")
    dep.config["sources"] = [{"name": "other", "kind": "local", "root": str(tmp_path / "other")}]
    (tmp_path / "other").mkdir()
    dep.save()
    withhold_removed_sources(Runtime(load_config(dep.config_path)))  # the source taken out
    assert not seen("alice", "c")
    dep.cli("gc")  # and its rows removed: the old paths kept for a move go too, chunk rows and all
    import sqlalchemy as sa

    from connectors.store import schema

    with rt.store.engine.connect() as c:
        left = c.execute(sa.select(sa.func.count()).select_from(schema.chunks)).scalar()
    assert rt.store.moved_away("docs") == [] and left == 0


def test_an_unreadable_acl_file_withholds_what_it_governs(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "group:hr\n")
    dep.write("ops/.bindery-acl", "group:hr\n")
    (dep.root / "lyon-link.md").symlink_to(dep.root / "people/lyon.md")  # in the root: the target's ACL
    # in a folder of its own ACL: its folder's and the target's, both named in its origin
    dep.write("team/.bindery-acl", "group:hr\ngroup:eng\n")
    (dep.root / "team/lyon-link.md").symlink_to(dep.root / "people/lyon.md")
    dep.cli("sync")
    assert {"people/lyon.md", "lyon-link.md", "team/lyon-link.md"} <= _docs_seen_by(dep, "group:hr")

    dep.write("people/.bindery-acl", "group:nobody\n".encode("utf-16"))  # an editor's UTF-16 ...
    dep.write("ops/.bindery-acl", "group:nobody\n".encode("utf-16"))  # ... twice: the walk finds both
    out = dep.cli("sync", expect=1)
    assert "cannot read ACL file" in out["errors"]["docs"] and "withheld from everyone" in out["errors"]["docs"]
    assert "and 1 more ACL files" in out["errors"]["docs"]
    assert "UTF-16 text" in out["errors"]["docs"] and "save it as UTF-8" in out["errors"]["docs"]  # says what to do
    # their old access does not outlive the files, nor reach them through a link
    assert not {"people/lyon.md", "lyon-link.md", "team/lyon-link.md"} & _docs_seen_by(dep, "group:hr")
    assert not any(d.startswith("ops/") for d in _docs_seen_by(dep, "group:hr", "firmware rollback on-call"))
    assert "robots/xr4471.md" in _docs_seen_by(dep, "*", "XR-4471 warehouse robot")  # other folders keep theirs
    assert dep.cli("verify")["consistent"] is True  # withheld in the indexes too, not only in the store
    dep.write("ops/.bindery-acl", "group:hr\n")

    dep.write("people/.bindery-acl", "group:hr\n")
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert dep.cli("verify")["consistent"] is True


def test_an_unreadable_acl_file_does_not_block_the_revocations_elsewhere(tmp_path: Path) -> None:
    """One broken `.bindery-acl` failed the listing, and with it every narrowing the walk had
    found in the rest of the source: whoever may write one folder kept all of their revoked
    access for as long as the file stayed broken (an attacker pass). The listing still fails,
    naming the file, and what the rest of it takes away is applied."""
    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "alice\nbob\n")
    dep.write("ops/.bindery-acl", "carol\n")
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "bob")
    dep.write("people/.bindery-acl", "alice\n")  # bob's access revoked ...
    dep.write("ops/.bindery-acl", b"carol\xff\n")  # ... while an unrelated ACL file is broken
    out = dep.cli("sync", expect=1)
    assert "cannot read ACL file" in out["errors"]["docs"] and "takes away is applied" in out["errors"]["docs"]
    assert "people/lyon.md" not in _docs_seen_by(dep, "bob")
    assert "people/lyon.md" in _docs_seen_by(dep, "alice")  # taken away from bob, from no one else
    assert "robots/xr4471.md" in _docs_seen_by(dep, "*", "XR-4471 warehouse robot")  # nothing else moved
    assert dep.cli("verify")["consistent"] is True


def test_an_s3_object_whose_description_is_refused_loses_the_access_that_may_be_gone(
        tmp_path: Path, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HEAD refused while the listing works (a bucket policy denying some keys): the object
    was dead-lettered and kept its old, wider ACL indefinitely (an attacker pass). Changed since
    it was indexed, its new ACL is unknown: withheld until it can be described. Unchanged but
    with its ACL from the configuration: the configured default it now gets applies."""
    import boto3

    from assets.listing import RACY_SECONDS
    from connectors.errors import SourceError
    from connectors.sources.s3 import S3Source
    from tests.sync_helpers import S3Deployment

    dep = S3Deployment(tmp_path, boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1"),
                       moto_endpoint, source={"acl": ["group:staff", "bob"]})
    dep.set_acl("people/lyon.md", ["alice", "bob"])
    time.sleep(RACY_SECONDS + 0.5)  # described at once, an object is "racy" (maybe changed): so would be withheld
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "bob")
    assert "ops/oncall.txt" in _docs_seen_by(dep, "bob", "on-call engineer acknowledge a page")
    dep.set_acl("people/lyon.md", ["alice"])  # the metadata narrowed (same bytes, LastModified moves)
    dep.config["sources"][0]["acl"] = ["group:staff"]  # and the configured default
    dep.save()
    denied = {"kb/people/lyon.md", "kb/ops/oncall.txt"}
    real = S3Source.describe

    def describe(self: S3Source, entry: Any) -> Any:
        if self.prefix + entry.external_id in denied or entry.external_id in denied:
            raise SourceError(f"access denied: {entry.external_id}")
        return real(self, entry)

    monkeypatch.setattr(S3Source, "describe", describe)
    out = dep.cli("sync")
    assert out["kept_versions"] == 1  # oncall.txt, still searchable; lyon.md is kept for no one
    assert "people/lyon.md" not in _docs_seen_by(dep, "bob")  # changed, undescribed: withheld ...
    assert "people/lyon.md" not in _docs_seen_by(dep, "alice")  # ... from everyone until described
    assert "ops/oncall.txt" not in _docs_seen_by(dep, "bob", "on-call engineer acknowledge a page")
    assert "ops/oncall.txt" in _docs_seen_by(dep, "group:staff", "on-call engineer acknowledge a page")
    monkeypatch.undo()
    dep.cli("sync")  # described again: each at the ACL it now has
    assert "people/lyon.md" in _docs_seen_by(dep, "alice") and "people/lyon.md" not in _docs_seen_by(dep, "bob")


def test_a_refused_s3_sweep_still_narrows_access(tmp_path: Path, moto_endpoint: str) -> None:
    """S3 carries ACLs in object metadata, which the listing does not return: the refused sweep
    describes the objects whose LastModified moved, as a sync would, and narrows those."""
    import boto3

    from tests.sync_helpers import S3Deployment

    dep = S3Deployment(tmp_path, boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1"),
                       moto_endpoint)
    dep.set_acl("people/lyon.md", ["group:hr", "group:eng"])
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:eng")
    dep.set_acl("people/lyon.md", ["group:hr"])
    for rel in ("robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/oncall.txt"):
        dep.remove(rel)
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["errors"]["docs"] and "access of 1 document" in out["errors"]["docs"]
    assert "people/lyon.md" not in _docs_seen_by(dep, "group:eng")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert dep.cli("verify")["consistent"] is True


def test_access_narrowed_as_a_file_becomes_unreadable_is_taken_away(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose new bytes cannot be read keeps its indexed version (one bad read sinks
    nothing), but not the access it had: an ACL narrowed at the same time applies to it (an
    attacker's find: the old text stayed readable by everyone on every sync)."""
    import os
    import time

    from tests.sync_helpers import refuse_reads

    dep = Deployment(tmp_path)
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:eng")
    refuse_reads(monkeypatch, "people/lyon.md")
    dep.write("people/.bindery-acl", "group:hr\n")
    later = time.time() + 5
    os.utime(dep.root / "people/lyon.md", (later, later))  # changed, and now unreadable
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert out["sources"]["docs"]["failed"] == 1 and plan["written"] == out["written"]
    assert "people/lyon.md" not in _docs_seen_by(dep, "group:eng")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")  # still indexed for who may read it
    assert dep.cli("verify")["consistent"] is True


def test_a_folder_that_cannot_be_listed_still_loses_access_taken_above_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents kept under a folder that cannot be listed keep no more access than the folder
    now inherits: a sidecar narrowed above it applies to them (an attacker's find)."""

    dep = Deployment(tmp_path)
    dep.cli("sync")
    assert "robots/xr4471.md" in _docs_seen_by(dep, "group:eng", "XR-4471 warehouse robot")
    refuse_listing(monkeypatch, dep.root / "robots")
    dep.write(".bindery-acl", "group:staff\n")
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["written"] == out["written"]
    assert "robots/xr4471.md" not in _docs_seen_by(dep, "group:eng", "XR-4471 warehouse robot")
    assert "robots/xr4471.md" in _docs_seen_by(dep, "group:staff", "XR-4471 warehouse robot")
    assert dep.cli("verify")["consistent"] is True


def test_access_narrowed_while_the_source_stops_answering_is_taken_away(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads that time out one after another fail the listing (the source, not its items); what
    the listing said of the ACLs still takes access away, for the item that ended it and those
    never reached (a review's find: a share timing out kept every narrowing from applying)."""
    import os
    import time

    from connectors.errors import SourceError
    from connectors.sources.local import LocalFolderSource

    dep = Deployment(tmp_path)
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:eng")

    def timing_out(self: LocalFolderSource, entry: Any) -> bytes:
        raise SourceError(f"reading {entry.external_id} timed out", transient=True)

    monkeypatch.setattr(LocalFolderSource, "read", timing_out)
    dep.write(".bindery-acl", "group:staff\n")
    later = time.time() + 5
    for p in dep.root.rglob("*"):
        if p.is_file():
            os.utime(p, (later, later))
    assert dep.cli("sync", expect=1)["errors"]
    assert not _docs_seen_by(dep, "group:eng") and not _docs_seen_by(dep, "group:eng", "XR-4471 warehouse robot")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:staff")
    assert dep.cli("verify")["consistent"] is True


def test_what_a_link_reaches_in_an_excluded_folder_leaves_search_even_in_a_refused_sweep(tmp_path: Path) -> None:
    """Documents listed through a folder link into what the rules now exclude (indexed before the
    rule, or by an earlier release) are withheld at once, even when the delete guard refuses the
    sweep that would remove them (a review's find: they kept their old, wider ACL)."""
    dep = Deployment(tmp_path)
    for i in range(8):
        dep.write(f"projects/secret/s{i}.md", f"# Salary band {i}\n\nThe pangolin salary band {i} is confidential.\n")
    (dep.root / "people" / "proj").symlink_to("../projects")
    dep.cli("sync")
    assert "people/proj/secret/s0.md" in _docs_seen_by(dep, "group:eng", "pangolin salary band 0")
    dep.config["sources"][0]["exclude"] = ["projects/secret/"]
    dep.save()
    out = dep.cli("sync", expect=1)  # 16 of 22 documents would go: refused
    assert "delete sweep aborted" in out["errors"]["docs"]
    assert not any(d.startswith("people/proj/secret/") for d in _docs_seen_by(dep, "group:eng", "pangolin salary band"))
    assert dep.cli("verify")["consistent"] is True


def test_what_a_narrower_source_now_takes_leaves_the_wider_one_at_once_in_a_refused_sweep(tmp_path: Path) -> None:
    """An attacker pass's find: adding an HR source over a folder a public source had indexed made
    the public source's listing shrink past the delete guard, which refused the sweep, and the HR
    files stayed readable through the public source for as long as it refused."""
    dep = Deployment(tmp_path)
    for i in range(7):
        dep.write(f"hr/pay-{i}.md", f"# Pay {i}\n\nThe zebracorn bonus pool of band {i} is ninety thousand.\n")
    dep.cli("sync")

    def seen(principal: str) -> set[tuple[str, str]]:
        r = LiveRetriever(load_config(dep.config_path))
        try:
            hits = r.search("zebracorn bonus pool", 10, Filters(principals=(principal,))).hits
            return {(h.source, h.doc) for h in hits if h.doc.startswith("hr/")}
        finally:
            r.close()

    assert ("docs", "hr/pay-0.md") in seen("group:eng")
    dep.config["sources"].append({"name": "hr", "kind": "local", "root": str(dep.root), "include": ["hr/**"],
                                  "acl": ["group:hr"]})
    dep.save()
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["errors"]["docs"] and "access of 7 documents" in out["errors"]["docs"]
    assert seen("group:eng") == set()  # withheld at once, though nothing was deleted
    assert ("hr", "hr/pay-0.md") in seen("group:hr")


def test_what_a_narrower_source_now_takes_leaves_the_wider_one_when_only_the_narrower_one_syncs(
        tmp_path: Path) -> None:
    """An attacker pass: an HR source added over a folder a public source had indexed, then
    `bindery sync --source hr` alone: the public source's copies stayed readable until it was
    synced itself. Any listing now withholds them, as it does a removed source's documents."""
    dep = Deployment(tmp_path)
    dep.write("hr/pay.md", "# Pay\n\nThe zebracorn bonus pool is ninety thousand.\n")
    dep.cli("sync")
    assert "hr/pay.md" in _docs_seen_by(dep, "group:eng", "zebracorn bonus pool")
    dep.config["sources"].append({"name": "hr", "kind": "local", "root": str(dep.root / "hr"),
                                  "acl": ["group:hr"]})
    dep.config["sources"][0]["exclude"] = ["hr/"]
    dep.save()
    dep.cli("sync", "--source", "hr")
    assert "hr/pay.md" not in _docs_seen_by(dep, "group:eng", "zebracorn bonus pool")
    assert "pay.md" in _docs_seen_by(dep, "group:hr", "zebracorn bonus pool")
    assert dep.cli("verify")["consistent"] is True  # the wider source's indexes carry it too


def test_a_file_published_with_content_that_cannot_be_parsed_never_publishes_its_old_text(tmp_path: Path) -> None:
    """Found by an adversarial review: a private file widened to everyone (or shared sideways)
    together with a "redacted" version that fails to parse kept its indexed version, rewritten
    under the new ACL: its old, private text reached its new readers, also in a generation built
    later. The kept version now stays only where it is held under the current ACL; otherwise it
    leaves search until the file parses again, as `bindery plan` says beforehand."""
    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "group:hr\n")
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert "people/lyon.md" not in _docs_seen_by(dep, "*")
    dep.write("people/.bindery-acl", "*\n")  # published ...
    dep.write("people/lyon.md", "")  # ... with a version that has no text: a dead letter
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"], (plan, out)
    assert "people/lyon.md" not in _docs_seen_by(dep, "*") | _docs_seen_by(dep, "group:hr")
    assert dep.cli("verify")["consistent"] is True
    dep.cli("reindex", "--force")  # a new generation over the same chunk version
    dep.cli("promote", "--force", "--reason", "test")
    assert "people/lyon.md" not in _docs_seen_by(dep, "*")
    dep.write("people/lyon.md", "# Lyon office\n\nThe Lyon office moved to the Part-Dieu district.\n")
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "*")  # its new, readable text is public


def test_a_kept_version_with_its_access_unchanged_stays_searchable(tmp_path: Path) -> None:
    """What the rule above keeps: a file whose new version fails to parse, its ACL unchanged,
    keeps its indexed version for the same readers, in a generation built later too, and a
    later narrowing of its ACL narrows it (a code review found both taken out of search); the
    ACL the listing noted before the change is no change of its own at the next read."""
    import os
    import time

    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "group:hr\ngroup:eng\n")
    dep.cli("sync")
    dep.write("people/lyon.md", "")
    out = dep.cli("sync")
    assert out["kept_versions"] == 1
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert "people/lyon.md" not in _docs_seen_by(dep, "*")
    dep.cli("reindex", "--force")
    dep.cli("promote", "--force", "--reason", "test")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:eng")  # carried into the new generation
    dep.write("people/.bindery-acl", "group:hr\n")  # narrowed a sync later
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["written"] == out["written"] and out["written"]["documents"] == 1, (plan, out)
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert "people/lyon.md" not in _docs_seen_by(dep, "group:eng")
    later = time.time() + 5
    os.utime(dep.root / "people/lyon.md", (later, later))  # read again, nothing new
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["sources"]["docs"]["changes"]["acl"] == out["sources"]["docs"]["acl"] == 0, (plan, out)
    assert dep.cli("verify")["consistent"] is True


def test_chunks_a_stopped_run_cut_are_never_served_as_a_kept_version(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a re-test of the rule above: a run that stopped after cutting a private version
    (made private and rewritten together) left its chunks in the store, never indexed; the next
    version, made public again and failing to parse, had those chunks written as its kept
    version, under the public ACL the index held the first version with. A kept version is only
    ever left where a generation holds exactly it; the eval draft reads only what is indexed."""
    dep = Deployment(tmp_path)
    dep.cli("sync")
    dep.write("people/.bindery-acl", "group:hr\n")
    dep.write("people/lyon.md", "# Lyon office\n\nBoard only: the merger codename is BLUEHERON-77.\n")
    _sync_stopped_before_its_index_step(dep, monkeypatch)
    out = tmp_path / "draft.jsonl"
    dep.cli("evalset", "draft", "--out", str(out), "--principal", "*", "--max", "500")
    assert "BLUEHERON" not in out.read_text().upper()
    (dep.root / "people/.bindery-acl").unlink()
    dep.write("people/lyon.md", "")  # public again, and nothing to parse
    plan, result = dep.cli("plan"), dep.cli("sync")
    assert plan["recomputed"] == result["recomputed"] and plan["written"] == result["written"], (plan, result)
    for who in ("*", "group:hr"):
        assert not any("BLUEHERON" in t for t in _texts_seen_by(dep, who, "BLUEHERON-77 merger codename"))
    assert dep.cli("verify")["consistent"] is True


def test_a_narrowing_never_rewrites_chunks_the_index_does_not_hold(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The narrowing a kept version may follow is checked against the chunks as well as the ACL:
    chunks cut by a stopped run under a narrower ACL than the index holds, then two versions
    that fail to parse, the second narrowed from the first's ACL, must not be written under it."""
    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "group:hr\ngroup:eng\n")
    dep.cli("sync")
    dep.write("people/.bindery-acl", "group:hr\n")
    dep.write("people/lyon.md", "# Lyon office\n\nHR only: the merger codename is BLUEHERON-77.\n")
    _sync_stopped_before_its_index_step(dep, monkeypatch)
    dep.write("people/.bindery-acl", "group:hr\ngroup:eng\n")
    dep.write("people/lyon.md", "")
    dep.cli("sync")
    dep.write("people/.bindery-acl", "group:eng\n")
    dep.write("people/lyon.md", " \n")
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"], (plan, out)
    assert not any("BLUEHERON" in t for t in _texts_seen_by(dep, "group:eng", "BLUEHERON-77 merger codename"))


def _texts_seen_by(dep: Deployment, principal: str, query: str) -> list[str]:
    r = LiveRetriever(load_config(dep.config_path))
    try:
        return [h.text for h in r.search(query, 10, Filters(principals=(principal,))).hits]
    finally:
        r.close()


def _sync_stopped_before_its_index_step(dep: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync that parses and cuts the changes, then stops (its embedder down): chunks in the
    store that no index holds."""
    import assets.pipeline
    from connectors.errors import BinderyError

    def embedder_down(*_: object, **__: object) -> object:
        raise BinderyError("the embedding service is down")

    with monkeypatch.context() as m:
        m.setattr(assets.pipeline, "run_embed", embedder_down)
        dep.cli("sync", expect=1)
