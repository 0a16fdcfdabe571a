"""Sources that stay in sync, end to end through the real Dagster jobs (via the CLI): every
change class — new, updated, unchanged, moved/renamed, ACL-only, deleted (and failed) — against
a real moto S3 server over HTTP and against a real folder.

After every sync the document store, the vector index and the keyword index must hold exactly
the same chunk ids (no duplicates, no orphans) and `bindery verify` must agree.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

import connectors.sources.s3 as s3mod
from assets.listing import RACY_SECONDS, run_listing
from assets.runtime import Runtime
from connectors.config import config_from_dict
from tests.sync_helpers import (
    LocalDeployment,
    S3Deployment,
    assert_converged,
    hits,
    index_sets,
    indexed_docs,
    store_of,
)

pytestmark = pytest.mark.slow

NOTHING = {"parse": 0, "chunk": 0, "context": 0, "embed": 0}


@pytest.fixture
def s3(moto_endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture(params=["s3", "local"])
def dep(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "s3":
        endpoint = request.getfixturevalue("moto_endpoint")
        return S3Deployment(tmp_path, request.getfixturevalue("s3"), endpoint)
    return LocalDeployment(tmp_path)


@pytest.fixture
def s3dep(tmp_path: Path, s3: Any, moto_endpoint: str) -> S3Deployment:
    return S3Deployment(tmp_path, s3, moto_endpoint)


class S3Calls:
    """Every S3 API call the sources make (botocore `before-call` hooks on each new client)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        original = s3mod._new_client

        def new_client(*a: Any, **kw: Any) -> Any:
            client = original(*a, **kw)
            client.meta.events.register("before-call.s3.*", self._hook)
            return client

        monkeypatch.setattr(s3mod, "_new_client", new_client)

    def _hook(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)


@pytest.fixture
def s3_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Calls]:
    yield S3Calls(monkeypatch)


def counts(out: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in out["sources"]["docs"].items() if v}


# -- new + unchanged --------------------------------------------------------------------------


def test_first_sync_indexes_everything_and_a_noop_sync_recomputes_nothing(dep: Any, s3_calls: S3Calls) -> None:
    if dep.kind == "s3":
        time.sleep(RACY_SECONDS)  # objects described within RACY_SECONDS of a write are re-checked once
    first = dep.cli("sync")
    assert first["generation"] == 1 and first["errors"] == {}
    assert counts(first) == {"new": 6}
    assert first["recomputed"]["parse"] == 6 and first["recomputed"]["embed"] >= 6
    assert_converged(dep, min_chunks=6)
    assert indexed_docs(dep) == {"robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/oncall.txt",
                                 "ops/errors.html", "people/lyon.md"}
    before = index_sets(dep)

    s3_calls.calls.clear()
    second = dep.cli("sync")
    assert counts(second) == {"unchanged": 6}
    assert second["recomputed"] == NOTHING
    assert second["written"] == {"documents": 0, "chunks": 0, "deleted": 0}
    after = assert_converged(dep)
    assert after["store"] == before["store"]
    if dep.kind == "s3":
        # an unchanged bucket costs one listing: no HeadObject, no GetObject
        assert set(s3_calls.calls) == {"ListObjectsV2"}, s3_calls.calls


def test_new_and_updated_documents(dep: Any) -> None:
    dep.cli("sync")
    before = index_sets(dep)
    dep.edit("ops/new-runbook.md", "# Conveyor runbook\n\nRestart the conveyor belt KX-19 by holding the green "
                                   "button for eight seconds.\n")
    dep.edit("ops/oncall.txt", "On-call policy\n\nEngineers on call acknowledge a page within five minutes.\n"
                               "Pagers are tested every Friday afternoon.\n")
    out = dep.cli("sync")
    assert counts(out) == {"new": 1, "updated": 1, "unchanged": 5}
    assert out["recomputed"]["parse"] == 2 and out["recomputed"]["chunk"] == 2
    assert out["written"]["documents"] == 2
    after = assert_converged(dep)
    # only the two touched documents have new chunks; the others keep theirs
    store = store_of(dep)
    changed = {d.doc_id for d in store.documents() if d.external_id in ("ops/new-runbook.md", "ops/oncall.txt")}
    kept = {c for c, row in store.get_chunks(sorted(before["store"])).items() if row.doc_id not in changed}
    assert kept <= after["store"]
    h = hits(dep, "how do I restart conveyor KX-19", k=1)
    assert h[0]["doc"] == "ops/new-runbook.md" and "eight seconds" in h[0]["text"]
    h = hits(dep, "when are pagers tested", k=1)
    assert h[0]["doc"] == "ops/oncall.txt" and "every Friday" in h[0]["text"]
    # the old text of the updated document is gone from every index
    assert not any("fifteen minutes" in x["text"] for x in hits(dep, "acknowledge a page within fifteen minutes"))


# -- moved / renamed ----------------------------------------------------------------------------


def test_renamed_document_is_not_reparsed_or_reembedded(dep: Any) -> None:
    dep.cli("sync")
    dep.rename("ops/oncall.txt", "policies/oncall-policy.txt")
    out = dep.cli("sync")
    assert counts(out) == {"moved": 1, "unchanged": 5}  # a rename is no delete too
    assert out["recomputed"]["parse"] == 0 and out["recomputed"]["context"] == 0
    assert out["recomputed"]["embed"] == 0
    assert_converged(dep)
    docs = indexed_docs(dep)
    assert "policies/oncall-policy.txt" in docs and "ops/oncall.txt" not in docs
    assert hits(dep, "acknowledge a page within fifteen minutes", k=1)[0]["doc"] == "policies/oncall-policy.txt"
    assert {d.external_id for d in store_of(dep).documents()} >= {"policies/oncall-policy.txt"}
    assert "ops/oncall.txt" not in {d.external_id for d in store_of(dep).documents()}


# -- ACL-only -------------------------------------------------------------------------------------


def test_acl_only_change_updates_filters_without_reembedding(dep: Any) -> None:
    dep.cli("sync")
    vectors_before = index_sets(dep)["store"]
    q = "Lyon office Part-Dieu district"
    assert hits(dep, q, k=1)[0]["doc"] == "people/lyon.md"

    time.sleep(1.1)  # S3 LastModified has one-second resolution
    dep.set_acl("people/lyon.md", ["hr-team", "group:facilities"])
    out = dep.cli("sync")
    assert counts(out) == {"acl": 1, "unchanged": 5}
    assert out["recomputed"] == NOTHING
    assert out["written"]["documents"] == 1
    assert index_sets(dep)["store"] == vectors_before  # same chunks, only their ACL moved
    assert_converged(dep)
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, q))  # public caller
    assert hits(dep, q, "--principal", "hr-team", k=1)[0]["doc"] == "people/lyon.md"
    assert hits(dep, q, "--principal", "group:facilities", k=1)[0]["doc"] == "people/lyon.md"
    doc = next(d for d in store_of(dep).documents() if d.external_id == "people/lyon.md")
    assert doc.acl == ["group:facilities", "hr-team"]

    # an ACL that lists nobody means nobody (fail closed), still without re-embedding
    time.sleep(1.1)
    dep.set_acl("people/lyon.md", [])
    out = dep.cli("sync")
    assert counts(out) == {"acl": 1, "unchanged": 5} and out["recomputed"] == NOTHING
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, q, "--principal", "hr-team"))

    # removing the ACL restores the default (public)
    time.sleep(1.1)
    dep.set_acl("people/lyon.md", None)
    out = dep.cli("sync")
    assert counts(out) == {"acl": 1, "unchanged": 5} and out["recomputed"] == NOTHING
    assert hits(dep, q, k=1)[0]["doc"] == "people/lyon.md"
    assert_converged(dep)


# -- deleted --------------------------------------------------------------------------------------


def test_deleted_document_leaves_every_store(dep: Any) -> None:
    dep.cli("sync")
    store = store_of(dep)
    doc = next(d for d in store.documents() if d.external_id == "people/lyon.md")
    chunk_version = index_sets(dep)["gen"].stage_versions["chunk"]
    assert store.chunks_for([doc.doc_id], chunk_version)
    dep.remove("people/lyon.md")
    out = dep.cli("sync")
    assert counts(out) == {"deleted": 1, "unchanged": 5}
    assert out["written"]["deleted"] == 1 and out["recomputed"] == NOTHING
    assert_converged(dep)
    assert "people/lyon.md" not in indexed_docs(dep)
    assert store.chunks_for([doc.doc_id], chunk_version) == []
    assert doc.doc_id not in store.index_state(1)
    assert dep.cli("status")["documents"] == 5
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, "Lyon office Part-Dieu", k=20))


# -- every class in one sync ----------------------------------------------------------------------


def test_every_change_class_in_one_sync(dep: Any) -> None:
    dep.cli("sync")
    time.sleep(1.1)
    dep.edit("ops/quarantine.md", "# Quarantine zone\n\nDamaged robots wait in bay Q7 until inspected.\n")  # new
    dep.edit("robots/xr4471.md", dep.read("robots/xr4471.md").replace("11 hours", "14 hours"))  # updated
    dep.rename("ops/oncall.txt", "oncall/policy.txt")  # moved
    dep.set_acl("people/lyon.md", ["hr-team"])  # ACL only
    dep.remove("ops/errors.html")  # deleted
    out = dep.cli("sync")
    assert out["sources"]["docs"] == {"new": 1, "updated": 1, "unchanged": 2, "moved": 1, "acl": 1,
                                      "deleted": 1, "failed": 0}
    assert out["recomputed"]["parse"] == 2  # the new and the updated document only
    assert_converged(dep)
    assert indexed_docs(dep) == {"ops/quarantine.md", "robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md",
                                 "oncall/policy.txt", "people/lyon.md"}
    assert hits(dep, "How long does the XR-4471 battery last?", k=1)[0]["text"].count("14 hours") == 1
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, "Lyon office Part-Dieu"))
    again = dep.cli("sync")
    assert counts(again) == {"unchanged": 6} and again["recomputed"] == NOTHING


# -- S3 specifics --------------------------------------------------------------------------------


def test_s3_object_over_the_size_limit_fails_alone_and_keeps_the_indexed_version(
        tmp_path: Path, s3: Any, moto_endpoint: str) -> None:
    dep = S3Deployment(tmp_path, s3, moto_endpoint, source={"max_file_mb": 0.004})  # ~4 KB
    dep.cli("sync")
    dep.put("ops/oncall.txt", "On-call policy\n\n" + "Escalate after thirty minutes. " * 400)
    out = dep.cli("sync")
    assert counts(out) == {"failed": 1, "unchanged": 5} and out["errors"] == {}
    dlq = dep.cli("dlq")
    assert [(d["doc"], d["stage"]) for d in dlq] == [("ops/oncall.txt", "listing")]
    assert "max_file_mb" in dlq[0]["error"]
    # the last good version stays searchable; nothing was deleted
    assert hits(dep, "acknowledge a page within fifteen minutes", k=1)[0]["doc"] == "ops/oncall.txt"
    assert_converged(dep)


def test_s3_source_default_acl_and_prefix_scoping(tmp_path: Path, s3: Any, moto_endpoint: str) -> None:
    dep = S3Deployment(tmp_path, s3, moto_endpoint, source={"acl": ["staff"]})
    s3.put_object(Bucket=dep.bucket, Key="outside/secret.md", Body=b"# Secret\n\nOutside the prefix.\n")
    dep.put("ops/open.md", "# Open notice\n\nThe cafeteria serves pancakes on Tuesdays.\n", acl="*")
    out = dep.cli("sync")
    assert counts(out) == {"new": 7}
    assert "secret.md" not in {d.external_id for d in store_of(dep).documents()}
    # objects without acl metadata get the source's configured ACL; acl="*" is public
    assert [h["doc"] for h in hits(dep, "cafeteria pancakes")] == ["ops/open.md"]
    staff = hits(dep, "Lyon office Part-Dieu", "--principal", "staff", k=1)
    assert staff[0]["doc"] == "people/lyon.md"
    assert_converged(dep)


def test_s3_acl_rewrite_in_the_same_second_as_the_last_sync_is_not_missed(
        tmp_path: Path, s3: Any, moto_endpoint: str) -> None:
    """S3 LastModified has one-second resolution: an ACL rewrite (copy in place, same ETag) in
    the same second as the sync that described the object leaves ETag and LastModified as they
    were. The revocation must still reach the store on a later sync, never be trusted away."""
    bucket = f"racy-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "sources": [
        {"name": "bk", "kind": "s3", "bucket": bucket, "endpoint_url": moto_endpoint, "region": "us-east-1"}]})
    rt = Runtime(cfg)
    same_second = False
    for attempt in range(3):
        key = f"doc{attempt}.md"
        time.sleep(1.05 - time.time() % 1)  # start of a fresh second
        s3.put_object(Bucket=bucket, Key=key, Body=b"# Salaries\n\nConfidential.\n", Metadata={"acl": "alice"})
        first = run_listing(rt, "bk")
        before = s3.head_object(Bucket=bucket, Key=key)
        s3.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": key},
                       Metadata={"acl": "bob"}, MetadataDirective="REPLACE")  # revoke alice
        after = s3.head_object(Bucket=bucket, Key=key)
        assert first.counts["new"] == 1 and before["ETag"] == after["ETag"]
        same_second = before["LastModified"] == after["LastModified"]
        res = run_listing(rt, "bk")
        assert res.counts["acl"] == 1, res.counts
        doc = next(d for d in rt.store.documents("bk") if d.external_id == key)
        assert doc.acl == ["bob"]
        if same_second:
            break
    assert same_second, "could not provoke a same-second metadata rewrite on this machine"
    # once settled, an unchanged object costs no describe again
    time.sleep(RACY_SECONDS)
    run_listing(rt, "bk")
    settled = run_listing(rt, "bk")
    assert settled.counts["unchanged"] == settled.listed and settled.listed >= 1


def test_changing_the_sources_default_acl_reaches_objects_without_acl_metadata(s3dep: S3Deployment) -> None:
    """The S3 listing carries no ACLs, but an ACL that came from the source's configuration
    (objects without `acl` metadata) changes with the configuration: restricting the source
    must not leave its documents public."""
    dep = s3dep
    dep.put("ops/own-acl.md", "# Own ACL\n\nThe forklift certification lasts two years.\n", acl="ops")
    dep.cli("sync")
    q = "Lyon office Part-Dieu district"
    assert hits(dep, q, k=1)[0]["doc"] == "people/lyon.md"
    dep.config["sources"][0]["acl"] = ["staff"]
    dep.save()
    out = dep.cli("sync")
    assert counts(out) == {"acl": 6, "unchanged": 1}  # the object with its own ACL is untouched
    assert out["recomputed"] == NOTHING
    assert all(h["doc"] != "people/lyon.md" for h in hits(dep, q))
    assert hits(dep, q, "--principal", "staff", k=1)[0]["doc"] == "people/lyon.md"
    assert hits(dep, "forklift certification", "--principal", "ops", k=1)[0]["doc"] == "ops/own-acl.md"
    assert counts(dep.cli("sync")) == {"unchanged": 7}
    assert_converged(dep)


def test_a_store_that_lists_milliseconds_is_not_read_again_every_sync(
        tmp_path: Path, s3: Any, moto_endpoint: str, s3_calls: S3Calls) -> None:
    """MinIO lists LastModified with real milliseconds (`...:05.437Z`), while HEAD's
    Last-Modified has whole seconds: the time describe() stored never matched the next
    listing's, so every sync of an unchanged bucket described and read every object again
    (an S3 operator pass's find; moto and AWS list `.000Z`, so no test saw it)."""
    import re

    from tests.moto_server import rewriting_proxy

    bucket = f"ms-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"doc{i}.md", Body=f"# Doc {i}\n\nText {i}.\n".encode())

    def milliseconds(method: str, path: str, status: int, body: bytes) -> tuple[int, bytes]:
        if method == "GET" and "list-type=2" in path:
            body = re.sub(rb"\.000Z</LastModified>", b".437Z</LastModified>", body)
        return status, body

    time.sleep(RACY_SECONDS)  # described well after they were written: stored as settled
    with rewriting_proxy(moto_endpoint, milliseconds) as url:
        cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "sources": [
            {"name": "bk", "kind": "s3", "bucket": bucket, "endpoint_url": url, "region": "us-east-1"}]})
        rt = Runtime(cfg)
        assert run_listing(rt, "bk").counts["new"] == 3
        s3_calls.calls.clear()
        again = run_listing(rt, "bk")
    assert again.counts["unchanged"] == 3
    assert "HeadObject" not in s3_calls.calls and "GetObject" not in s3_calls.calls, s3_calls.calls


@pytest.mark.parametrize("code", ["ExpiredToken", "InvalidToken"])  # the second: a code other stores use
def test_credentials_that_expire_mid_run_stop_the_sync_with_one_reason(
        tmp_path: Path, s3: Any, moto_endpoint: str, code: str) -> None:
    """S3 refuses a HEAD with an expired session token as a bare 400 (a HEAD reply has no body,
    so no error code): every changed object became a dead letter reading "400: Bad Request"
    and the sync exited 0. A bare 400 now asks the bucket once with a request whose reply has a
    code: an expired token stops the sync as the source's failure, naming it, and the indexed
    versions stay. An object that alone answers so (encrypted with a customer key, SSE-C) is
    its own dead letter, and the rest syncs."""
    from connectors.errors import SourceError
    from tests.moto_server import rewriting_proxy

    bucket = f"exp-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    keys = [f"doc{i}.md" for i in range(4)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=f"# {key}\n\nFirst text.\n".encode())
    # keys whose HEAD is a bare 400; "*": every request after the listing, as a token that
    # expires while the sync runs
    refused: set[str] = set()
    listed: list[str] = []

    def refuse(method: str, path: str, status: int, body: bytes) -> tuple[int, bytes]:
        if "*" in refused and (listed or "list-type=2" not in path):
            expired = f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>no</Message></Error>'
            return (400, b"") if method == "HEAD" else (400, expired.encode())
        if "list-type=2" in path:
            listed.append(path)
        if method == "HEAD" and path.split("?")[0].rsplit("/", 1)[-1] in refused:
            return 400, b""
        return status, body

    with rewriting_proxy(moto_endpoint, refuse) as url:
        cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "sources": [
            {"name": "bk", "kind": "s3", "bucket": bucket, "endpoint_url": url, "region": "us-east-1"}]})
        rt = Runtime(cfg)
        run_listing(rt, "bk")
        before = {d.external_id: d.content_hash for d in rt.store.documents("bk")}
        for key in keys:
            s3.put_object(Bucket=bucket, Key=key, Body=f"# {key}\n\nSecond text.\n".encode())
        refused.add("*")
        listed.clear()
        with pytest.raises(SourceError, match=rf"cannot list .*{code}"):
            run_listing(rt, "bk")
        assert len(listed) == 1  # the listing itself went through: the token expired after it
        assert {d.external_id: d.content_hash for d in rt.store.documents("bk")} == before
        assert rt.store.dead_letters(source="bk") == []  # the source's failure, no object's
        refused.clear()
        refused.add("doc2.md")  # one object that HEAD refuses alone
        res = run_listing(rt, "bk")
        assert res.counts["updated"] == 3 and res.counts["failed"] == 1
        (dead,) = rt.store.dead_letters(source="bk")
        assert dead.external_id == "doc2.md" and "SSE-C" in dead.error
