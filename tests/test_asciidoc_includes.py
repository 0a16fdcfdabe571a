"""AsciiDoc pages that include other files (`assets/includes.py`): the included text is read in
place, under the includer's attributes; an edit, delete or access change of an included file
re-parses exactly the pages that include it, as `bindery plan` predicts; a file the page's
readers may not all read, or one outside the source, is never pulled in. Through a real folder
and a real moto S3 server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.sync_helpers import LocalDeployment, S3Deployment, hits

pytestmark = pytest.mark.slow

PAGE = """git-frob(1)
===========

NAME
----
git-frob - Frob the index

OPTIONS
-------
:git-frob: 1
include::frob-options.txt[]

include::../vault/launch.txt[]
"""
OPTIONS = """--zebra::
\tPaint the index with zebra stripes.
ifdef::git-frob[]
--frobnicate::
\tFrobnicate every path the marmoset way.
endif::git-frob[]
ifndef::git-frob[]
--hidden::
\tOnly the pages that do not set git-frob show this wombat line.
endif::git-frob[]
"""
SECRET = "The launch code of the quokka vault is 8675309.\n"


@pytest.fixture(params=["local", "s3"])
def dep(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "s3":
        endpoint = request.getfixturevalue("moto_endpoint")
        d: Any = S3Deployment(tmp_path, boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1"), endpoint)
    else:
        d = LocalDeployment(tmp_path)
    d.edit("man/git-frob.txt", PAGE)
    d.edit("man/frob-options.txt", OPTIONS)
    d.edit("vault/launch.txt", SECRET)
    d.set_acl("vault/launch.txt", ["group:launch"])
    return d


def _page_text(dep: Any, query: str, *principal: str) -> str:
    extra = ("--principal", *principal) if principal else ()
    return "\n".join(h["text"] for h in hits(dep, query, *extra) if h["doc"] == "man/git-frob.txt")


def _plan_then_sync(dep: Any) -> dict[str, Any]:
    plan = dep.cli("plan")
    out: dict[str, Any] = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"], (plan, out)
    assert plan["sources"]["docs"]["changes"]["updated"] == out["sources"]["docs"]["updated"]
    return out


def test_an_included_file_is_read_in_place_and_its_changes_reach_the_page(dep: Any) -> None:
    _plan_then_sync(dep)
    text = _page_text(dep, "frobnicate marmoset way")
    assert "Frobnicate every path the marmoset way." in text  # under the includer's git-frob
    assert "wombat" not in text and "Paint the index with zebra stripes." in text
    assert "8675309" not in _page_text(dep, "quokka vault launch code")  # narrower access: a pointer
    assert "Includes launch." in _page_text(dep, "quokka vault launch code")
    again = _plan_then_sync(dep)
    assert again["recomputed"]["parse"] == 0 and again["written"]["documents"] == 0  # idempotent

    dep.edit("man/frob-options.txt", OPTIONS + "--ocelot::\n\tCount the ocelots twice.\n")
    out = _plan_then_sync(dep)
    assert out["sources"]["docs"]["updated"] == 2 and out["recomputed"]["parse"] == 2  # the fragment and its page
    assert "Count the ocelots twice." in _page_text(dep, "count the ocelots")

    dep.set_acl("vault/launch.txt", None)  # the vault opens to everyone: the page may show it now
    out = _plan_then_sync(dep)
    assert out["recomputed"]["parse"] == 1 and "8675309" in _page_text(dep, "quokka vault launch code")
    dep.set_acl("vault/launch.txt", ["group:launch"])  # ... and closes again: out of the page
    _plan_then_sync(dep)
    assert "8675309" not in _page_text(dep, "quokka vault launch code")
    assert "8675309" not in _page_text(dep, "quokka vault launch code", "group:launch")  # nor for the few
    vault = hits(dep, "quokka vault launch code", "--principal", "group:launch")
    assert any(h["doc"] == "vault/launch.txt" for h in vault)

    dep.remove("man/frob-options.txt")
    out = _plan_then_sync(dep)
    assert out["sources"]["docs"]["updated"] == 1 and out["sources"]["docs"]["deleted"] == 1
    text = _page_text(dep, "frob the index options")
    assert "marmoset" not in text and "Includes frob options." in text
    assert _plan_then_sync(dep)["written"]["documents"] == 0


def test_a_file_outside_the_source_or_not_listed_is_never_read(tmp_path: Path) -> None:
    dep = LocalDeployment(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("The payroll password is swordfish-42.\n")
    dep.write("man/escape.adoc", "= Escape\n\nSee below.\n\ninclude::../../outside.txt[]\n\n"
                                 f"include::{outside}[]\n\ninclude::/etc/hostname[]\n")
    dep.config["sources"][0]["exclude"] = ["**/hidden.txt"]
    dep.save()
    dep.write("man/hidden.txt", "An excluded note about swordfish-42.\n")
    dep.write("man/open.adoc", "= Open\n\ninclude::hidden.txt[]\n")
    dep.cli("sync")
    texts = [h["text"] for h in hits(dep, "payroll password swordfish", k=20)]
    assert not any("swordfish-42" in t for t in texts)


def _part_page(tmp_path: Path) -> LocalDeployment:
    dep = LocalDeployment(tmp_path)
    dep.config["sources"][0]["max_file_mb"] = 0.01  # 10 KB: a part that grows past it cannot be read
    dep.save()
    dep.write("pub/page.adoc", "= Page\n\nThe page's own words about the harbour.\n\ninclude::parts/part.adoc[]\n")
    dep.write("pub/parts/part.adoc", "The platypus rides a bicycle to the harbour.\n")
    dep.cli("sync")
    assert "platypus" in _page_of(dep, "platypus bicycle harbour")
    return dep


def _page_of(dep: LocalDeployment, query: str) -> str:
    return "\n".join(h["text"] for h in hits(dep, query) if h["doc"] == "pub/page.adoc")


def test_an_included_file_withheld_by_any_path_takes_the_page_out_of_search_at_once(tmp_path: Path) -> None:
    """Found by an adversarial review: access taken away outside a read of the file (an ACL file
    that cannot be read withholds what it governs; a refused delete sweep narrows) changed only
    the file's own row, so its text stayed public in the pages including it. Each chunk now
    names the documents it holds text of, and the query service checks them all."""
    dep = _part_page(tmp_path)
    (dep.root / "pub/parts/.bindery-acl").write_bytes(b"jos\xe9\n")  # not UTF-8: withholds the folder
    dep.cli("sync", expect=1)
    assert "platypus" not in _page_of(dep, "platypus bicycle harbour")
    (dep.root / "pub/parts/.bindery-acl").unlink()
    dep.cli("sync")
    assert "platypus" in _page_of(dep, "platypus bicycle harbour")


def test_an_included_file_that_cannot_be_read_stays_a_pointer_and_blocks_no_edit(tmp_path: Path) -> None:
    """Found by an adversarial review: a part grown past max_file_mb made every edit of its page
    a dead letter (the page's read of it raised); the page now parses with a pointer to it."""
    dep = _part_page(tmp_path)
    dep.write("pub/parts/part.adoc", "The platypus rides a bicycle. " * 600)  # 18 KB: a listing dead letter
    dep.edit("pub/page.adoc", "= Page\n\nThe page's new words about the lighthouse.\n\ninclude::parts/part.adoc[]\n")
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    text = _page_of(dep, "new words lighthouse")
    assert "lighthouse" in text and "Includes part." in text and "platypus" not in text
    assert [d["doc"] for d in dep.cli("dlq")] == ["pub/parts/part.adoc"]
    dep.write("pub/parts/part.adoc", "The platypus rides a tricycle now.\n")  # readable again: in place again
    dep.cli("sync")
    assert "tricycle" in _page_of(dep, "new words lighthouse")


def test_a_file_under_a_folder_that_cannot_be_listed_stays_a_pointer_and_comes_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a second adversarial review: a part kept under a folder the listing could not
    read was still followed, so every edit of its page was a dead letter; and the page's hash
    and its parse judged readability from different evidence (a pointer parse cached under a
    hash that said the part was followed, for good). The listing records what the parse may
    read (`followed`), and the parse reads exactly that."""
    from tests.sync_helpers import refuse_listing, refuse_reads

    dep = _part_page(tmp_path)
    unlock = refuse_listing(monkeypatch, dep.root / "pub/parts")
    dep.edit("pub/page.adoc", "= Page\n\nThe page's new words about the lighthouse.\n\ninclude::parts/part.adoc[]\n")
    plan, out = dep.cli("plan"), dep.cli("sync")  # the folder is a dead letter of its own
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    text = _page_of(dep, "new words lighthouse")
    assert "lighthouse" in text and "Includes part." in text
    unlock()
    undo = refuse_reads(monkeypatch, "pub/parts/part.adoc")  # listed again, its bytes refused
    dep.edit("pub/parts/part.adoc", "The platypus rides a unicycle.\n")
    dep.cli("sync")
    assert "Includes part." in _page_of(dep, "new words lighthouse")
    undo()
    out = dep.cli("sync")  # readable again: read in place again, by the page's next parse
    assert out["recomputed"]["parse"] >= 1 and "unicycle" in _page_of(dep, "new words lighthouse")
    assert dep.cli("sync")["recomputed"]["parse"] == 0


def test_an_eval_draft_for_a_principal_leaves_out_pages_including_what_it_may_not_read(tmp_path: Path) -> None:
    """Found by a second adversarial review: `evalset draft --principal` judged a page by its
    own ACL only, and drafted questions from the text of a file it includes that the principal
    may not read (a page that can no longer be read keeps the version that included it)."""
    dep = LocalDeployment(tmp_path)
    dep.config["sources"][0]["max_file_mb"] = 0.01
    dep.save()
    dep.write("pub/page.adoc", "= Page\n\nThe page's own words about the harbour.\n\ninclude::vault/key.adoc[]\n")
    dep.write("pub/vault/key.adoc", "The strongroom_master_key is QZ-9191.\n")
    dep.cli("sync")
    dep.write("pub/page.adoc", "= Page\n\n" + "The page grew past the size limit. " * 400)  # keeps its old version
    dep.set_acl("pub/vault/key.adoc", ["alice"])
    dep.cli("sync")
    out = tmp_path / "draft.jsonl"
    dep.cli("evalset", "draft", "--out", str(out), "--principal", "*")
    cases = [json.loads(line) for line in out.read_text().splitlines()]
    assert not any("9191" in c["query"] or "strongroom" in c["query"] for c in cases)
    assert "pub/page.adoc" not in {g["doc"] for c in cases for g in c["gold"]}


def test_an_eval_draft_judges_a_kept_version_by_what_it_included(tmp_path: Path) -> None:
    """Found by a third adversarial review: the draft judged a page by its current record, which
    no longer includes anything once an edit drops the include line, while the page's chunks,
    kept because the edit left nothing to parse, still hold the included file's text; the file
    was narrowed since. The draft now judges the chunks by the parse they were cut from."""
    dep = LocalDeployment(tmp_path)
    dep.write("pub/page.adoc", "= Harbour Logistics Handbook\n\nThe page's own words about the harbour.\n\n"
                               "include::../shared/frag.adoc[]\n")
    dep.write("shared/frag.adoc", "The walrus budget is approved under reference BUDGET-7781.\n")
    dep.cli("sync")
    dep.write("pub/page.adoc", "////\nremoved for now\n////\n")  # nothing to parse: the old version stays
    dep.set_acl("shared/frag.adoc", ["group:sec"])
    assert dep.cli("sync")["kept_versions"] == 1
    out = tmp_path / "draft.jsonl"
    dep.cli("evalset", "draft", "--out", str(out), "--principal", "*")
    text = out.read_text()
    assert "7781" not in text and "walrus" not in text and "pub/page.adoc" not in text
    dep.cli("evalset", "draft", "--out", str(out), "--principal", "group:sec", "--force", "--max", "500")
    assert "pub/page.adoc" in out.read_text()  # who may read both still gets the page


def test_a_page_that_cannot_be_read_leaves_search_once_what_it_included_changes(tmp_path: Path) -> None:
    """Found by a second adversarial review: a page grown past max_file_mb kept its indexed
    version, and with it the text of a part edited since to remove a password (and, deleted and
    written again, the part's old text came back). Kept with its includes unchanged, it stays;
    once they change, it leaves the indexes until it reads well again."""
    dep = _part_page(tmp_path)
    dep.write("pub/page.adoc", "= Page\n\n" + "The page grew past the size limit. " * 400)
    out = dep.cli("sync")
    assert out["kept_versions"] == 1 and "platypus" in _page_of(dep, "platypus bicycle harbour")  # kept
    dep.write("pub/parts/part.adoc", "The platypus password was removed.\n")
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["written"] == out["written"] and out["written"]["deleted"] == 1
    assert not _page_of(dep, "platypus bicycle harbour") and not _page_of(dep, "page's own words harbour")
    again = dep.cli("sync")
    assert again["written"] == {"documents": 0, "chunks": 0, "deleted": 0}
    dep.write("pub/page.adoc", "= Page\n\nThe page's own words about the harbour.\n\ninclude::parts/part.adoc[]\n")
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert "password was removed" in _page_of(dep, "page's own words harbour")


def test_a_page_whose_read_failed_for_a_moment_comes_back_when_it_reads_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mark that keeps a stale page out of search is read again at the next listing even
    though the page's file is unchanged (the cheap test alone kept it out until its next edit)."""
    from tests.sync_helpers import refuse_reads

    dep = _part_page(tmp_path)
    undo = refuse_reads(monkeypatch, "pub/page.adoc")
    dep.write("pub/parts/part.adoc", "The platypus now rides a scooter.\n")
    dep.cli("sync")
    assert not _page_of(dep, "platypus scooter harbour")
    undo()
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert "scooter" in _page_of(dep, "platypus scooter harbour")
    assert dep.cli("sync")["written"] == {"documents": 0, "chunks": 0, "deleted": 0}
