"""The safe delete sweep: a listing that failed, came back empty, or shrank below the source's
`min_count` or `min_ratio` of the last good listing aborts the whole sync before anything is
written; `--allow-mass-delete` (run config `allow_mass_delete` in the UI) is the only override,
and it never applies to a listing that failed.

Two layers: `run_listing` against a real folder and a store (fast, no model), and the real
Dagster sync job through the CLI against real folders and a real moto S3 server.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from assets.listing import RACY_SECONDS, check_delete_safety, run_listing
from assets.runtime import Runtime
from connectors.config import SourceConfig, config_from_dict
from connectors.errors import SourceError, UnsafeDeleteError
from connectors.sources import make_source
from connectors.sources.base import Source, SourceEntry
from connectors.store import DocumentRecord, EventRecord, SourceRecord
from tests.bindery_fixture import DOCS
from tests.moto_server import free_port
from tests.sync_helpers import LocalDeployment, S3Deployment, assert_converged, hits, index_sets, mark_indexed, store_of

# -- the rule itself ---------------------------------------------------------------------------


def _scfg(**kw: Any) -> SourceConfig:
    return SourceConfig(name="docs", kind="local", root="/nowhere", **kw)


@pytest.mark.parametrize(("listed", "would_delete", "last_good", "conf", "why"), [
    (10, 0, 10, {}, None),  # nothing to delete: always safe
    (0, 0, None, {}, None),  # a fresh, empty source deletes nothing
    (0, 0, 10, {}, None),
    (0, 3, 3, {"min_count": 0, "min_ratio": 0.0}, "came back empty"),  # empty aborts whatever the bounds say
    (4, 2, 6, {"min_count": 5, "min_ratio": 0.0}, "below the configured minimum 5"),
    (5, 1, 6, {"min_count": 5, "min_ratio": 0.0}, None),  # at the minimum is fine
    (2, 4, 6, {"min_ratio": 0.5}, "shrank to 2 items from 6"),
    (3, 3, 6, {"min_ratio": 0.5}, None),  # exactly at the ratio is fine
    (49, 51, 100, {"min_ratio": 0.5}, "below min_ratio 50%"),
    (90, 10, 100, {"min_ratio": 0.95}, "below min_ratio 95%"),
    (2, 4, None, {"min_ratio": 0.5}, None),  # no good listing yet: the ratio has no baseline
])
def test_check_delete_safety(listed: int, would_delete: int, last_good: int | None, conf: dict[str, Any],
                             why: str | None) -> None:
    got = check_delete_safety(_scfg(**conf), listed, would_delete, last_good)
    if why is None:
        assert got is None
    else:
        assert got is not None and why in got and f"{would_delete} documents would be deleted" in got


# -- run_listing against a real folder (no model, no Dagster) ---------------------------------


class Folder:
    def __init__(self, tmp: Path, n: int = 10, **source: Any) -> None:
        self.root = tmp / "corpus"
        self.root.mkdir()
        for i in range(n):
            self.write(f"d{i:02}.md", f"# Document {i}\n\nBody of document number {i}.\n")
        self.cfg = config_from_dict({"data_dir": str(tmp / "data"), "sources": [
            {"name": "docs", "kind": "local", "root": str(self.root), **source}]})
        self.rt = Runtime(self.cfg)

    def write(self, rel: str, text: str) -> None:
        (self.root / rel).write_text(text)

    def remove(self, *rels: str) -> None:
        for r in rels:
            (self.root / r).unlink()

    def listing(self, **kw: Any) -> Any:
        """A listing, its documents then held by an index as a sync's index step would (the
        delete guard weighs what deletes would take out of an index)."""
        res = run_listing(self.rt, "docs", **kw)
        self.index_all()
        return res

    def index_all(self) -> None:
        mark_indexed(self.rt.store, "docs")

    def docs(self) -> dict[str, DocumentRecord]:
        return {d.external_id: d for d in self.rt.store.documents("docs")}

    def source_row(self) -> SourceRecord:
        row = self.rt.store.get_source("docs")
        assert row is not None
        return row

    def events(self, kind: str) -> list[EventRecord]:
        return self.rt.store.events(kind)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Folder]:
    f = Folder(tmp_path)
    assert f.listing().counts["new"] == 10
    yield f
    f.rt.store.dispose()


def _assert_nothing_changed(f: Folder, before: dict[str, DocumentRecord], last_good: int) -> None:
    after = f.docs()
    assert set(after) == set(before)
    for k, d in after.items():
        assert (d.content_hash, d.fingerprint, d.deleted_at) == (
            before[k].content_hash, before[k].fingerprint, before[k].deleted_at), k
    assert f.source_row().last_good_listing_count == last_good


def test_empty_listing_aborts_and_changes_nothing(folder: Folder) -> None:
    before = folder.docs()
    folder.remove(*before)
    with pytest.raises(UnsafeDeleteError, match="came back empty; 10 documents would be deleted") as refused:
        folder.listing()
    # the CLI's flag and the UI's run config, both named (a UI pass found only the flag)
    assert "--allow-mass-delete" in str(refused.value) and "ops.source_listing.config.allow_mass_delete" in str(
        refused.value)
    _assert_nothing_changed(folder, before, 10)
    row = folder.source_row()
    assert row.last_listing_count == 0 and "delete sweep aborted" in (row.last_error or "")
    ev = folder.events("delete-sweep-aborted")[0]
    assert ev.details == {"listed": 0, "would_delete": 10, "indexed": None, "last_good": 10}


def test_listing_below_min_count_aborts(tmp_path: Path) -> None:
    f = Folder(tmp_path, min_count=8, min_ratio=0.0)
    f.listing()
    before = f.docs()
    f.remove("d00.md", "d01.md", "d02.md")  # 7 < 8
    with pytest.raises(UnsafeDeleteError, match="has 7 items, below the configured minimum 8"):
        f.listing()
    _assert_nothing_changed(f, before, 10)
    res = f.listing(allow_mass_delete=True)
    assert res.counts["deleted"] == 3 and set(f.docs()) == set(before) - {"d00.md", "d01.md", "d02.md"}
    assert f.events("mass-delete-allowed")


def test_ratio_is_measured_against_the_last_good_listing(folder: Folder) -> None:
    before = folder.docs()
    folder.remove(*[f"d{i:02}.md" for i in range(7)])  # 3 left of 10
    folder.write("d09.md", "# Document 9\n\nRewritten while the listing is suspicious.\n")
    folder.write("new.md", "# New\n\nA new file in the same suspicious listing.\n")
    for _ in range(2):  # an aborted listing never becomes the new baseline
        with pytest.raises(UnsafeDeleteError, match="shrank to 4 items from 10"):
            folder.listing()
        _assert_nothing_changed(folder, before, 10)  # the edit and the new file were not applied either
    res = folder.listing(allow_mass_delete=True)
    assert res.counts == {"new": 1, "updated": 1, "unchanged": 2, "moved": 0, "acl": 0, "deleted": 7, "failed": 0}
    assert folder.source_row().last_good_listing_count == 4
    # the override re-based the ratio: losing 1 of 4 is fine now, then losing 2 of 3 is not
    folder.remove("d07.md")
    assert folder.listing().counts["deleted"] == 1
    folder.remove("d08.md", "d09.md")
    with pytest.raises(UnsafeDeleteError, match="shrank to 1 items from 3"):
        folder.listing()


def test_deleting_documents_no_index_holds_is_not_a_mass_delete(tmp_path: Path) -> None:
    """An operator pass: junk files stopped a first build (its parse-quality check), nothing was
    ever indexed, and removing them was refused as a mass delete. The guard weighs what the
    sweep would take out of an index."""
    f = Folder(tmp_path)
    run_listing(f.rt, "docs")  # listed, never indexed
    f.remove(*[f"d{i:02}.md" for i in range(7)])
    assert run_listing(f.rt, "docs").counts["deleted"] == 7
    f.write("d00.md", "# Document 0\n\nBack, and about to be indexed.\n")
    run_listing(f.rt, "docs")
    # being written (a pending row: a run killed between its write and its bookkeeping leaves it
    # served) counts as indexed, as does a held row
    pending = [d for d in f.rt.store.documents("docs") if d.external_id == "d00.md"]
    gen = f.rt.store.create_generation(name="g1", stage_versions={}, stage_configs={}, embedder_id="e",
                                       vector_index="v", keyword_index="k")
    f.rt.store.set_index_pending([{"generation_id": gen, "doc_id": d.doc_id, "source": "docs", "digest": "",
                                   "chunks": 0, "indexed_at": time.time(), "acl_hash": None} for d in pending])
    f.remove("d00.md", "d07.md", "d08.md")
    with pytest.raises(UnsafeDeleteError, match=r"shrank to 1 items from 4 .*; 3 documents would be deleted "
                                                r"\(1 of them indexed\)"):
        run_listing(f.rt, "docs")
    # an empty listing (an unmounted share) is refused whatever it would delete
    f.remove("d09.md")
    with pytest.raises(UnsafeDeleteError, match="came back empty"):
        run_listing(f.rt, "docs")


def test_shrink_within_the_limits_deletes(folder: Folder) -> None:
    folder.remove("d00.md", "d01.md", "d02.md", "d03.md", "d04.md")  # exactly 50% left
    res = folder.listing()
    assert res.counts["deleted"] == 5 and len(folder.docs()) == 5


def test_failed_listing_records_the_failure_and_deletes_nothing(folder: Folder) -> None:
    before = folder.docs()
    shutil.rmtree(folder.root)
    for kw in ({}, {"allow_mass_delete": True}):  # the override never applies to a failed listing
        with pytest.raises(SourceError, match="cannot open root folder"):
            folder.listing(**kw)
        _assert_nothing_changed(folder, before, 10)
    row = folder.source_row()
    assert row.last_listing_count is None and "cannot open root folder" in (row.last_error or "")
    assert folder.events("listing-failed")


class FailsMidway:
    """A source whose listing yields some entries, then fails (a page that errored)."""

    needs_describe = False

    def __init__(self, real: Source, after: int) -> None:
        self.real, self.after, self.name = real, after, real.name

    def list(self) -> Iterator[SourceEntry]:
        for i, e in enumerate(self.real.list()):
            if i == self.after:
                raise SourceError("listing page 2 failed: 503 Slow Down")
            yield e

    def read(self, entry: SourceEntry) -> bytes:
        return self.real.read(entry)


def test_listing_that_fails_midway_is_never_taken_as_a_shrunken_one(folder: Folder) -> None:
    before = folder.docs()
    src = FailsMidway(make_source(folder.cfg.source("docs")), after=3)
    with pytest.raises(SourceError, match="503"):
        folder.listing(source=src, allow_mass_delete=True)
    _assert_nothing_changed(folder, before, 10)


def test_empty_source_with_nothing_known_is_not_an_abort(tmp_path: Path) -> None:
    f = Folder(tmp_path, n=0)
    res = f.listing()
    assert res.listed == 0 and res.counts["deleted"] == 0
    assert f.source_row().last_good_listing_count == 0


# -- end to end: the real sync job through the CLI ---------------------------------------------

slow = pytest.mark.slow


@pytest.fixture
def dep(tmp_path: Path) -> LocalDeployment:
    return LocalDeployment(tmp_path)


def _unchanged_indexes(dep: Any, chunks_before: set[str], documents: int = 6) -> None:
    s = index_sets(dep)
    assert s["vector"] == s["keyword"] == chunks_before
    assert dep.cli("status")["documents"] == documents


@slow
def test_cli_empty_folder_aborts_then_override_empties_every_index(dep: LocalDeployment) -> None:
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    for p in list(dep.root.iterdir()):
        shutil.rmtree(p)
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["error"] and "came back empty" in out["error"]
    assert "--allow-mass-delete" in out["error"]
    _unchanged_indexes(dep, chunks)
    assert hits(dep, "XR-4471 battery", k=1)[0]["doc"] == "robots/xr4471.md"  # still served
    status = dep.cli("status")
    assert "came back empty" in status["sources"]["docs"]["last_error"]
    assert status["sources"]["docs"]["last_good_listing_count"] == 6

    out = dep.cli("sync", "--allow-mass-delete")
    assert out["sources"]["docs"]["deleted"] == 6 and out["written"]["deleted"] == 6
    s = index_sets(dep)
    assert s["store"] == s["vector"] == s["keyword"] == set()
    assert dep.cli("status")["documents"] == 0
    assert hits(dep, "XR-4471 battery") == []
    assert dep.cli("verify")["consistent"] is True
    assert any(e["kind"] == "mass-delete-allowed" for e in dep.cli("status")["events"])


@slow
def test_cli_below_min_count_aborts_and_the_ui_run_config_overrides(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    dep.config["sources"][0].update(min_count=5, min_ratio=0.0)
    dep.save()
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    dep.remove("ops/firmware.md")
    dep.remove("people/lyon.md")
    out = dep.cli("sync", expect=1)
    assert "has 4 items, below the configured minimum 5; 2 documents would be deleted" in out["error"]
    _unchanged_indexes(dep, chunks)

    # the override as the UI launches it: run config of the same job
    from connectors.config import load_config
    from orchestration.runs import Runner

    runner = Runner(load_config(dep.config_path))
    res = runner.run("sync", partition="docs",
                     run_config={"ops": {"source_listing": {"config": {"allow_mass_delete": True}}}})
    assert res.success, res.error
    assert res.metadata["source_listing"]["docs_deleted"] == 2
    assert dep.cli("status")["documents"] == 4
    assert_converged(dep)


@slow
def test_cli_below_min_ratio_aborts_everything_in_that_listing(dep: LocalDeployment) -> None:
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    for rel in ["robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/errors.html"]:
        dep.remove(rel)
    dep.edit("ops/oncall.txt", "On-call policy\n\nPages are acknowledged within two minutes.\n")
    out = dep.cli("sync", expect=1)
    assert "shrank to 2 items from 6" in out["error"] and "below min_ratio 50%" in out["error"]
    _unchanged_indexes(dep, chunks)
    # the edit in the same listing was not applied either
    assert "fifteen minutes" in hits(dep, "how fast is a page acknowledged", k=1)[0]["text"]
    out = dep.cli("sync", "--allow-mass-delete")
    assert out["sources"]["docs"]["deleted"] == 4 and out["sources"]["docs"]["updated"] == 1
    assert "two minutes" in hits(dep, "how fast is a page acknowledged", k=1)[0]["text"]
    assert_converged(dep)


@slow
def test_cli_one_source_aborting_does_not_block_the_others(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# Alpha\n\nThe alpha team owns the loading dock scheduler.\n")
    (other / "b.md").write_text("# Beta\n\nThe beta team owns the battery test rig.\n")
    dep.config["sources"].append({"name": "other", "kind": "local", "root": str(other)})
    dep.save()
    dep.cli("sync")
    (other / "a.md").unlink()
    (other / "b.md").unlink()
    dep.edit("people/lyon.md", "# Lyon office\n\nThe Lyon office now has a rooftop garden.\n")
    out = dep.cli("sync", expect=1)
    assert set(out["errors"]) == {"other"} and "came back empty" in out["errors"]["other"]
    assert out["sources"]["docs"]["updated"] == 1
    assert hits(dep, "rooftop garden", k=1)[0]["doc"] == "people/lyon.md"
    assert hits(dep, "loading dock scheduler", "--source", "other", k=1)[0]["doc"] == "a.md"
    assert_converged(dep)


@slow
def test_cli_missing_root_is_a_failed_listing_even_with_the_override(dep: LocalDeployment) -> None:
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    dep.root.rename(dep.root.with_name("moved-away"))
    out = dep.cli("sync", "--allow-mass-delete", expect=2)  # refused by the configuration check
    assert "does not exist" in out["error"]
    _unchanged_indexes(dep, chunks)
    dep.root.with_name("moved-away").rename(dep.root)
    out = dep.cli("sync")
    assert out["sources"]["docs"]["unchanged"] == 6 and out["recomputed"]["parse"] == 0


# -- S3 ---------------------------------------------------------------------------------------


@pytest.fixture
def s3dep(tmp_path: Path, moto_endpoint: str) -> S3Deployment:
    return S3Deployment(tmp_path, boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1"),
                        moto_endpoint)


@slow
def test_s3_emptied_bucket_aborts_then_override(s3dep: S3Deployment) -> None:
    dep = s3dep
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    for obj in dep.s3.list_objects_v2(Bucket=dep.bucket)["Contents"]:
        dep.s3.delete_object(Bucket=dep.bucket, Key=obj["Key"])
    out = dep.cli("sync", expect=1)
    assert "came back empty; 6 documents would be deleted" in out["error"]
    _unchanged_indexes(dep, chunks)
    out = dep.cli("sync", "--allow-mass-delete")
    assert out["sources"]["docs"]["deleted"] == 6
    assert index_sets(dep)["vector"] == set() and dep.cli("status")["documents"] == 0


@slow
def test_s3_going_down_after_its_listing_fails_the_sync(s3dep: S3Deployment,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An audit killed the endpoint between the listing and the reads: the sync exited 0 with
    `"errors": {}`, every changed object a dead letter and the source's status clean. A source
    that is out of reach fails the run with the reason, as a failed listing does; nothing indexed
    is lost and the next sync catches up."""
    from botocore.exceptions import EndpointConnectionError

    from connectors.sources.s3 import S3Source

    dep = s3dep
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    for rel in sorted(DOCS)[:3]:
        dep.edit(rel, f"{DOCS[rel]}\n\nA paragraph added before the outage.\n")

    def down(self: S3Source, entry: SourceEntry) -> bytes:
        raise self._fail("read", EndpointConnectionError(endpoint_url=self.endpoint), self.key_of(entry))

    with monkeypatch.context() as m:
        m.setattr(S3Source, "read", down)
        out = dep.cli("sync", expect=1)
    assert "endpoint unreachable" in out["errors"]["docs"]
    assert dep.cli("dlq") == []  # the items did nothing wrong
    assert "endpoint unreachable" in (dep.cli("status")["sources"]["docs"]["last_error"] or "")
    _unchanged_indexes(dep, chunks)
    out = dep.cli("sync")
    assert out["errors"] == {} and out["sources"]["docs"]["updated"] == 3


@slow
def test_one_s3_object_failing_is_its_dead_letter_a_run_of_them_the_sources(
        s3dep: S3Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5xx after the retries or a stalled read may be one object's: that object is a dead letter
    and the rest sync. Three items in a row failing so is the source not answering: the sync
    fails with the reason, keeping the items read before (a review found one bad key stopped a
    whole source for good, and the items read before it were dropped)."""
    from botocore.exceptions import ClientError

    from connectors.sources.s3 import S3Source

    dep = s3dep
    dep.cli("sync")
    edited = sorted(DOCS)[:4]
    for rel in edited:
        dep.edit(rel, f"{DOCS[rel]}\n\nAn edit made while the store was unwell.\n")
    real = S3Source.read
    bad = {edited[1]}

    def flaky(self: S3Source, entry: SourceEntry) -> bytes:
        if entry.external_id in bad:
            raise self._fail("read", ClientError({"Error": {"Code": "InternalError"},
                                                  "ResponseMetadata": {"HTTPStatusCode": 500}}, "GetObject"),
                             self.key_of(entry))
        return real(self, entry)

    with monkeypatch.context() as m:
        m.setattr(S3Source, "read", flaky)
        out = dep.cli("sync")  # one object's 500: its dead letter, the others sync
        assert out["errors"] == {} and out["sources"]["docs"]["updated"] == 3
        assert [d["doc"] for d in dep.cli("dlq")] == [edited[1]]
        bad.update(edited[1:4])  # ... and now three in a row, each edited again so that each is read
        # (not left to being read again within RACY_SECONDS of its change: on a loaded machine
        # the plan came after that, read only the one edit, and saw no streak)
        for rel in edited[:4]:
            dep.edit(rel, f"{DOCS[rel]}\n\nA second edit.\n")
        assert "3 items in a row" in (dep.cli("plan")["sources"]["docs"]["error"] or "")
        out = dep.cli("sync", expect=1)
        assert "3 items in a row" in out["errors"]["docs"]
    out = dep.cli("sync")  # the store is well again
    assert out["errors"] == {} and dep.cli("dlq") == []
    # fewer changed items than a streak needs, and every one fails: the source's failure too
    # (two edited objects both failing made a sync with exit 0 and no last_error). Objects read
    # within RACY_SECONDS of their change are read again by the next sync, and one read that
    # succeeds shows the source answering: wait them out first, so only the two are read.
    time.sleep(RACY_SECONDS + 0.5)
    dep.cli("sync")
    for rel in edited[:2]:
        dep.edit(rel, f"{DOCS[rel]}\n\nA third edit.\n")
    bad.clear()
    bad.update(edited[:2])
    with monkeypatch.context() as m:
        m.setattr(S3Source, "read", flaky)
        plan = dep.cli("plan")  # the plan foresees it, by the sync's own rule
        assert "every item this sync read failed" in (plan["sources"]["docs"]["error"] or "")
        out = dep.cli("sync", expect=1)
    assert "every item this sync read failed" in out["errors"]["docs"]
    assert "not answering" in (dep.cli("status")["sources"]["docs"]["last_error"] or "")


@slow
def test_s3_failed_listings_never_delete(s3dep: S3Deployment) -> None:
    dep = s3dep
    dep.cli("sync")
    chunks = index_sets(dep)["vector"]
    src = dep.config["sources"][0]
    good = dict(src)
    # the endpoint is down
    src["endpoint_url"] = f"http://127.0.0.1:{free_port()}"
    dep.save()
    out = dep.cli("sync", "--allow-mass-delete", expect=1)
    assert "endpoint unreachable" in out["error"] or "timed out" in out["error"]
    _unchanged_indexes(dep, chunks)
    # the bucket is gone
    src.update(good, bucket=f"gone-{uuid.uuid4().hex[:8]}")
    dep.save()
    out = dep.cli("sync", "--allow-mass-delete", expect=1)
    assert "does not exist" in out["error"]
    _unchanged_indexes(dep, chunks)
    assert store_of(dep).events("listing-failed")
    # back to normal: nothing to redo
    src.update(good)
    dep.save()
    out = dep.cli("sync")
    assert out["sources"]["docs"]["unchanged"] == 6 and out["recomputed"]["embed"] == 0


@pytest.mark.parametrize(("error", "transient"), [
    ("checksum", True),  # the body changed on the way: a proxy answering every read counts as the source
    ("timeout", True),
    ("denied", False),
])
def test_which_s3_read_failures_count_towards_the_sources_streak(error: str, transient: bool) -> None:
    """A run of transient read failures is the source's failure (`TRANSIENT_STREAK`). A body
    whose checksum fails was not counted: a proxy answering every GET with a log-in page made a
    sync exit 0, every object a dead letter and no last_error (a robustness pass)."""
    from types import SimpleNamespace

    from botocore.exceptions import ClientError, FlexibleChecksumError, ReadTimeoutError

    from connectors.sources.s3 import S3Source

    e: Exception = {
        "checksum": FlexibleChecksumError(error_msg="Expected checksum abc did not match calculated checksum def"),
        "timeout": ReadTimeoutError(endpoint_url="http://s3.test"),
        "denied": ClientError({"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}},
                              "GetObject"),
    }[error]
    src = SimpleNamespace(bucket="b", prefix="", endpoint="http://s3.test", name="docs")
    failure = S3Source._fail(src, "read", e, "a.md")  # type: ignore[arg-type]
    assert isinstance(failure, SourceError) and failure.transient is transient
    assert "s3://b/a.md" in str(failure)


@slow
def test_items_the_listing_cannot_read_are_named_in_the_step(tmp_path: Path) -> None:
    """A UI pass: the listing step's metadata said `docs_failed: 2` and nothing else; only
    `bindery dlq` named the broken symlink and the FIFO. The step names them, by path and
    reason, in its metadata and its log."""
    from connectors.config import load_config
    from orchestration.runs import Runner

    dep = LocalDeployment(tmp_path)
    os.symlink(tmp_path / "nowhere", dep.root / "dangling.md")
    os.mkfifo(dep.root / "pipe.md")
    res = Runner(load_config(dep.config_path)).run("sync", partition="docs")
    assert res.success, res.error
    meta = res.metadata["source_listing"]
    assert meta["docs_failed"] == 2
    assert {(i["path"], i["reason"]) for i in meta["failed_items"]} == {("dangling.md", "broken-symlink"),
                                                                         ("pipe.md", "not-a-file")}
