"""One file never blocks a source: a name that is not UTF-8, has a newline or is very long, a
symlink out of the source root — each is indexed or dead-lettered with its reason while the
rest of the source syncs, and the dead letters of files that are gone are cleared.

The listing tests run the real listing stage on a real folder and SQLite store (no model);
the end-to-end test runs the CLI on a live source.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from assets.listing import run_listing
from assets.runtime import Runtime
from connectors.config import config_from_dict
from connectors.store import DeadLetterRecord, DocumentStore
from tests.bindery_fixture import Deployment

BAD = b"bad\xffname.txt"
LONG_DIR = "/".join(["d" * 200] * 6)  # a path of about 1,400 characters: over the 1,024 the store keeps


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "good.txt").write_text("A good file about zebras crossing the river every spring.\n")
    with open(os.fsencode(root) + b"/" + BAD, "wb") as f:
        f.write(b"The bad name file is about okapis.\n")
    (root / "new\nline.txt").write_text("A file whose name has a newline talks about narwhals.\n")
    (root / LONG_DIR).mkdir(parents=True)
    (root / LONG_DIR / "deep.txt").write_text("A deep file about axolotls.\n")
    return root


def _rt(tmp_path: Path, **source: Any) -> Runtime:
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"),
                            "sources": [{"name": "s", "kind": "local", "root": str(tmp_path / "src"), **source}]})
    return Runtime(cfg, DocumentStore(cfg.database_url))


def _dead(rt: Runtime) -> dict[str, DeadLetterRecord]:
    return {d.external_id: d for d in rt.store.dead_letters(source="s")}


def test_odd_names_are_indexed_or_dead_lettered_and_the_rest_syncs(tmp_path: Path) -> None:
    _folder(tmp_path / "src")
    rt = _rt(tmp_path)
    res = run_listing(rt, "s")
    assert res.counts["new"] == 2 and res.counts["failed"] == 2
    assert {d.external_id for d in rt.store.documents("s")} == {"good.txt", "new\nline.txt"}
    dead = _dead(rt)
    assert dead["bad\\xffname.txt"].reason == "bad-name"
    assert "not valid UTF-8" in dead["bad\\xffname.txt"].error
    (long_id,) = [k for k in dead if k.startswith("ddd")]
    assert dead[long_id].reason == "bad-name" and len(long_id) <= 1024
    assert "1024" in dead[long_id].error and LONG_DIR in dead[long_id].error
    source = rt.store.get_source("s")
    assert source is not None and source.last_error is None
    assert run_listing(rt, "s").counts["failed"] == 2  # stable: the same two, nothing duplicated
    assert len(rt.store.dead_letters(source="s")) == 2


def test_dead_letters_of_files_that_vanished_are_cleared(tmp_path: Path) -> None:
    src = _folder(tmp_path / "src")
    rt = _rt(tmp_path)
    run_listing(rt, "s")
    os.rename(os.fsencode(src) + b"/" + BAD, src / "renamed.txt")
    shutil.rmtree(src / ("d" * 200))
    res = run_listing(rt, "s")
    assert res.counts["failed"] == 0 and res.counts["new"] == 1
    assert _dead(rt) == {}


def test_symlinks_out_of_the_root_are_a_per_source_choice(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "inside.txt").write_text("inside the root")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the root")
    (src / "link.txt").symlink_to(outside / "secret.txt")
    (src / "linkdir").symlink_to(outside, target_is_directory=True)
    (src / "alias.txt").symlink_to(src / "inside.txt")  # stays inside: always followed
    rt = _rt(tmp_path)
    res = run_listing(rt, "s")
    assert {d.external_id for d in rt.store.documents("s")} == {"inside.txt", "alias.txt"}
    assert res.counts["failed"] == 2
    dead = _dead(rt)
    assert set(dead) == {"link.txt", "linkdir"}
    assert all(d.reason == "external-symlink" and "follow_external_symlinks" in d.error for d in dead.values())

    rt = _rt(tmp_path, follow_external_symlinks=True)
    run_listing(rt, "s")
    assert {d.external_id for d in rt.store.documents("s")} == {
        "inside.txt", "alias.txt", "link.txt", "linkdir/secret.txt"}
    assert _dead(rt) == {}  # the skipped links were listed this time: their dead letters are gone



def test_a_followed_link_into_another_sources_root_keeps_that_sources_acl(tmp_path: Path) -> None:
    """With `follow_external_symlinks: true`, a link into a second source's root listed its
    files under this source's ACL when only that source's `acl:` protected them (no sidecar):
    anyone who may write a link here published them (an attacker's find, listed as a limit
    until now). The target's source narrows the link, in the store and in the plan alike."""
    from orchestration.plan_listing import predict_listing

    (tmp_path / "src").mkdir()
    (tmp_path / "src/readme.txt").write_text("public notes about otters")
    above = tmp_path / "shared"
    hr = above / "hr"
    (hr / "reviews").mkdir(parents=True)
    (hr / "salaries.txt").write_text("salaries of everyone")
    (hr / "reviews/q3.txt").write_text("third quarter reviews")
    (above / "pub").mkdir()
    (above / "pub/menu.txt").write_text("lunch menu")
    (tmp_path / "src/pay.txt").symlink_to(hr / "salaries.txt")
    (tmp_path / "src/reviews").symlink_to(hr / "reviews", target_is_directory=True)
    # a link to the folder above the other source's root reaches it as a plain subfolder (a review's find)
    (tmp_path / "src/shared").symlink_to(above, target_is_directory=True)
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "sources": [
        {"name": "s", "kind": "local", "root": str(tmp_path / "src"), "follow_external_symlinks": True},
        {"name": "hr", "kind": "local", "root": str(hr), "acl": ["group:hr"]}]})
    rt = Runtime(cfg, DocumentStore(cfg.database_url))
    run_listing(rt, "s")
    acl = {d.external_id: tuple(d.acl) for d in rt.store.documents("s")}
    hr_only = ("group:hr",)
    assert acl == {"readme.txt": ("*",), "pay.txt": hr_only, "reviews/q3.txt": hr_only, "shared/pub/menu.txt": ("*",),
                   "shared/hr/salaries.txt": hr_only, "shared/hr/reviews/q3.txt": hr_only}
    assert {d.external_id: tuple(d.acl) for d in predict_listing(rt, cfg.source("s")).docs} == acl



def test_following_links_does_not_narrow_a_nested_sources_own_files(tmp_path: Path) -> None:
    """A public source inside a staff-only one is a layout the configuration accepts; with
    follow_external_symlinks on, the other sources' acl narrowed the inner source's own root
    too, so turning the option on made all of its files staff-only (a review's find)."""
    outer = tmp_path / "staff"
    (outer / "public").mkdir(parents=True)
    (outer / "public/notice.txt").write_text("the canteen opens at eight")
    (outer / "plan.txt").write_text("staff plans")
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "sources": [
        {"name": "staff", "kind": "local", "root": str(outer), "acl": ["group:staff"]},
        {"name": "pub", "kind": "local", "root": str(outer / "public"), "follow_external_symlinks": True}]})
    rt = Runtime(cfg, DocumentStore(cfg.database_url))
    run_listing(rt, "pub")
    assert {d.external_id: tuple(d.acl) for d in rt.store.documents("pub")} == {"notice.txt": ("*",)}


def test_a_link_to_nothing_is_a_dead_letter_and_its_document_goes(tmp_path: Path) -> None:
    """A dangling link (its target deleted, a share unmounted) or two links pointing at each
    other were left out with a log line only: `bindery dlq` showed nothing. Now each is a
    dead letter with its reason; a document the link used to be leaves the indexes like a
    deleted file's, and mending the link clears the dead letter."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "target.txt").write_text("the real notes about pangolins")
    (src / "notes.txt").symlink_to(src / "target.txt")
    (src / "a.txt").symlink_to(src / "b.txt")
    (src / "b.txt").symlink_to(src / "a.txt")
    rt = _rt(tmp_path)
    run_listing(rt, "s")
    assert {d.external_id for d in rt.store.documents("s")} == {"target.txt", "notes.txt"}
    assert {k: d.reason for k, d in _dead(rt).items()} == {"a.txt": "symlink-loop", "b.txt": "symlink-loop"}
    (src / "target.txt").rename(src / "moved.txt")  # notes.txt now points at nothing
    res = run_listing(rt, "s", allow_mass_delete=True)
    assert {d.external_id for d in rt.store.documents("s")} == {"moved.txt"} and res.counts["failed"] == 3
    assert _dead(rt)["notes.txt"].reason == "broken-symlink" and "target.txt" in _dead(rt)["notes.txt"].error
    (src / "notes.txt").unlink()
    (src / "notes.txt").symlink_to(src / "moved.txt")
    run_listing(rt, "s")
    assert "notes.txt" not in _dead(rt)


@pytest.mark.slow
def test_a_live_source_keeps_syncing_around_odd_files(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    _folder(dep.root / "odd")
    dep.write("ops/oncall.txt", "On-call engineers now acknowledge a page within five minutes.\n")
    (dep.root / "people" / "lyon.md").unlink()
    out = dep.cli("sync")
    assert out["errors"] == {} and out["sources"]["docs"]["failed"] == 2
    assert out["sources"]["docs"]["deleted"] == 1 and out["sources"]["docs"]["updated"] == 1
    hits = dep.cli("query", "narwhals zebras Lyon on-call page minutes", "-k", "20")["hits"]
    docs = {h["doc"] for h in hits}
    assert {"odd/new\nline.txt", "odd/good.txt", "ops/oncall.txt"} <= docs and "people/lyon.md" not in docs
    assert {d["doc"] for d in dep.cli("dlq")} == {"odd/bad\\xffname.txt", next(
        d["doc"] for d in dep.cli("dlq") if d["doc"].startswith("odd/ddd"))}
    status = dep.cli("status")
    assert status["dead_letters"] == 2 and status["sources"]["docs"]["last_error"] is None
    assert dep.cli("verify")["consistent"] is True


def test_a_followed_link_through_a_bind_mount_keeps_the_other_sources_acl(tmp_path: Path) -> None:
    """A bind mount gives another source's tree a second path that no prefix of its root
    matches: a followed link to a subfolder through it listed that source's files as public
    (a review's find). Folders are matched by identity too. Needs a private mount namespace
    (root and `unshare`); skipped where there is none."""
    import subprocess
    import sys
    import textwrap

    hr = tmp_path / "shared/hr"
    (hr / "sub").mkdir(parents=True)
    (hr / "sub/pay.txt").write_text("salaries")
    (tmp_path / "mnt").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src/viamnt").symlink_to(tmp_path / "mnt/hr/sub", target_is_directory=True)
    script = textwrap.dedent(f"""
        from connectors.config import config_from_dict
        from connectors.sources import make_source
        cfg = config_from_dict({{"data_dir": "{tmp_path}/data", "sources": [
            {{"name": "hr", "kind": "local", "root": "{hr}", "acl": ["group:hr"]}},
            {{"name": "docs", "kind": "local", "root": "{tmp_path}/src", "follow_external_symlinks": True}}]}})
        print({{e.external_id: list(e.acl) for e in make_source(cfg.sources[1], cfg.sources).list()}})
    """)
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("no private mount namespace here (needs root and unshare)")
    done = subprocess.run(["unshare", "-m", "sh", "-c", f'mount --bind "{tmp_path}/shared" "{tmp_path}/mnt" && '
                           f'"{sys.executable}" -c "$0"', script], capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "{'viamnt/pay.txt': ['group:hr']}"
