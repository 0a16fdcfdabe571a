"""Access taken away reaches the query service even when the sync that sees it is refused: a
delete guard that refuses a shrunken listing still applies the ACLs it narrows, and an ACL file
that cannot be read withholds the documents it governs instead of leaving their old access."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from connectors.config import load_config
from connectors.indexes.base import Filters
from query_service.retrieval import LiveRetriever
from tests.bindery_fixture import Deployment

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


def test_an_unreadable_acl_file_withholds_what_it_governs(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.write("people/.bindery-acl", "group:hr\n")
    dep.write("ops/.bindery-acl", "group:hr\n")
    (dep.root / "lyon-link.md").symlink_to(dep.root / "people/lyon.md")  # in the root: the target's ACL
    dep.cli("sync")
    assert {"people/lyon.md", "lyon-link.md"} <= _docs_seen_by(dep, "group:hr")

    dep.write("people/.bindery-acl", "group:nobody\n".encode("utf-16"))  # an editor's UTF-16 ...
    dep.write("ops/.bindery-acl", "group:nobody\n".encode("utf-16"))  # ... twice: the walk finds both
    out = dep.cli("sync", expect=1)
    assert "cannot read ACL file" in out["errors"]["docs"] and "withheld from everyone" in out["errors"]["docs"]
    assert "and 1 more ACL files" in out["errors"]["docs"]
    # their old access does not outlive the files, nor reach them through a link
    assert not {"people/lyon.md", "lyon-link.md"} & _docs_seen_by(dep, "group:hr")
    assert not any(d.startswith("ops/") for d in _docs_seen_by(dep, "group:hr", "firmware rollback on-call"))
    assert "robots/xr4471.md" in _docs_seen_by(dep, "*", "XR-4471 warehouse robot")  # other folders keep theirs
    assert dep.cli("verify")["consistent"] is True  # withheld in the indexes too, not only in the store
    dep.write("ops/.bindery-acl", "group:hr\n")

    dep.write("people/.bindery-acl", "group:hr\n")
    dep.cli("sync")
    assert "people/lyon.md" in _docs_seen_by(dep, "group:hr")
    assert dep.cli("verify")["consistent"] is True


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
