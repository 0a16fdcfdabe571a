"""ACL semantics, defined once in `connectors.acl`: what a sidecar, a metadata value and a source
default mean, and who may read a document. Fail closed everywhere: an empty ACL is nobody."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors import acl
from connectors.config import SourceConfig, config_from_dict
from connectors.indexes.base import IndexRecord
from connectors.sources import LocalFolderSource


def _source(tmp_path: Path, **extra: object) -> SourceConfig:
    cfg = config_from_dict({"sources": [{"name": "s", "kind": "local", "root": str(tmp_path), **extra}]})
    return cfg.sources[0]


@pytest.mark.parametrize("text,expected", [
    ("alice\nbob\n", ("alice", "bob")),
    ("\ufeffalice\nbob\n", ("alice", "bob")),  # a byte-order mark never hides the first principal
    ("# who\n\n  alice  \nalice\r\ngroup:eng\r\n", ("alice", "group:eng")),
    ("# nobody may read this folder\n", ()),
    # a "#" after a principal is part of it: read as a comment, "* #TODO" would publish the folder
    ("* #TODO restrict to group:hr\nCN=Team #1\n", ("* #TODO restrict to group:hr", "CN=Team #1")),
    ("", ()),
    # lines end at \n only, as cat and grep show them: a break splitlines() alone sees never
    # turns part of a comment into a principal ("*" would publish the folder)
    ("# reviewed by legal\u2028*\ngroup:hr\n", ("group:hr",)),
    ("# legacy note\r*\ngroup:hr\n", ("group:hr",)),
    ("# a\x0b*\n# b\x0c*\n# c\x1e*\n# d\x85*\n", ()),
    ("group:hr\rgroup:eng\r", ("group:hr\rgroup:eng",)),  # lone CRs: one principal, matching no one
])
def test_sidecar_text(text: str, expected: tuple[str, ...]) -> None:
    assert acl.parse_sidecar(text.encode("utf-8")) == expected


def test_a_principal_that_looks_commented_or_holds_a_line_break_is_named_for_a_warning() -> None:
    found = acl.suspect_principals(("group:hr  # the HR team", "team#1", "alice", "group:hr\rgroup:eng"))
    assert [p for p, _ in found] == ["group:hr  # the HR team", "group:hr\rgroup:eng"]


def test_sidecar_that_is_not_utf8_is_an_error() -> None:
    with pytest.raises(UnicodeDecodeError):
        acl.parse_sidecar(b"\xff\xfe\x00bad")


@pytest.mark.parametrize("value,expected", [
    ("alice, group:eng,", ("alice", "group:eng")),
    ("\ufeffalice", ("alice",)),
    ("", ()),
    (" , ", ()),
])
def test_metadata_value(value: str, expected: tuple[str, ...]) -> None:
    assert acl.parse_list(value) == expected


def test_source_default_unset_is_public_and_empty_list_is_nobody(tmp_path: Path) -> None:
    assert acl.source_default(_source(tmp_path)) == acl.Acl((acl.PUBLIC,), "default")
    assert acl.source_default(_source(tmp_path, acl=[])) == acl.Acl((), "config")
    assert acl.source_default(_source(tmp_path, acl=["hr", "hr"])) == acl.Acl(("hr",), "config")


def test_empty_config_acl_means_nobody_in_the_listing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    (entry,) = LocalFolderSource(_source(tmp_path, acl=[])).list()
    assert entry.acl == ()
    (entry,) = LocalFolderSource(_source(tmp_path)).list()
    assert entry.acl == ("*",)


@pytest.mark.parametrize("doc_acl,principals,ok", [
    (("*",), ("anyone",), True),
    (("alice",), ("alice",), True),
    (("alice",), ("bob", "alice"), True),
    (("alice",), ("bob",), False),
    ((), ("alice",), False),
    ((), ("*",), False),  # nobody means nobody, not even a caller naming the public principal
    (("alice",), (), False),
])
def test_allows(doc_acl: tuple[str, ...], principals: tuple[str, ...], ok: bool) -> None:
    assert acl.allows(doc_acl, principals) is ok


def test_bom_sidecar_in_a_listing(tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "brief.md").write_text("secret")
    (tmp_path / "team" / ".bindery-acl").write_bytes("\ufeffbob\ncarol\n".encode())
    (entry,) = LocalFolderSource(_source(tmp_path)).list()
    assert entry.acl == ("bob", "carol")


# -- every index reports the ACL each chunk carries (what `bindery verify` compares) ---------


def _acl_records() -> list[IndexRecord]:
    return [IndexRecord("c1", "d1", "s", "a.md", "alpha", vector=[1.0, 0.0], acl=("bob", "alice")),
            IndexRecord("c2", "d2", "s", "b.md", "beta", vector=[0.0, 1.0], acl=()),
            IndexRecord("c3", "d3", "s", "c.md", "gamma", vector=[1.0, 1.0], acl=("*",))]


EXPECTED_ACLS = {"c1": ("alice", "bob"), "c2": (), "c3": ("*",)}


def test_tantivy_reports_indexed_acls(tmp_path: Path) -> None:
    from connectors.indexes.tantivy_index import TantivyIndex

    with TantivyIndex(tmp_path / "kw") as ix:
        ix.upsert(_acl_records())
        ix.commit()
        assert ix.acls() == EXPECTED_ACLS
        ix.delete_docs(["d1"])
        ix.commit()
        assert ix.acls() == {"c2": (), "c3": ("*",)}


def test_qdrant_reports_indexed_acls(tmp_path: Path) -> None:
    from connectors.indexes.qdrant_index import QdrantIndex

    ix = QdrantIndex(path=str(tmp_path / "vec"), dim=2)
    try:
        ix.upsert(_acl_records())
        assert ix.acls() == EXPECTED_ACLS
    finally:
        ix.close()


def test_elasticsearch_reports_indexed_acls() -> None:
    from connectors.indexes.elasticsearch_index import ElasticsearchIndex
    from tests.es_stub import ESStub

    with ESStub() as stub:
        ix = ElasticsearchIndex(stub.url, "chunks_acl", timeout=5)
        try:
            ix.upsert(_acl_records())
            ix.commit()
            assert ix.acls() == EXPECTED_ACLS
        finally:
            ix.close()


def test_empty_filter_lists_match_nothing_in_every_index(tmp_path: Path) -> None:
    """`"docs": []` means nothing, never "no filter" — in make_filters and in each adapter."""
    from connectors.indexes.base import Filters
    from connectors.indexes.elasticsearch_index import build_query
    from connectors.indexes.qdrant_index import QdrantIndex
    from connectors.indexes.tantivy_index import TantivyIndex
    from query_service.retrieval import make_filters

    assert make_filters("alice", docs=[]).docs == () and make_filters("alice", sources=[]).sources == ()
    assert make_filters("alice").docs is None
    everyone = ("alice", "bob")
    vec = QdrantIndex(path=str(tmp_path / "vec"), dim=2)
    try:
        vec.upsert(_acl_records())
        assert len(vec.search([1.0, 1.0], 10, Filters(principals=everyone))) == 2  # c2's ACL is nobody
        for empty in (Filters(principals=everyone, docs=()), Filters(principals=everyone, sources=())):
            assert vec.search([1.0, 1.0], 10, empty) == []
    finally:
        vec.close()
    with TantivyIndex(tmp_path / "kw") as kw:
        kw.upsert(_acl_records())
        kw.commit()
        assert kw.search("alpha gamma", 10, Filters(principals=everyone))
        assert kw.search("alpha gamma", 10, Filters(principals=everyone, docs=())) == []
        assert kw.search("alpha gamma", 10, Filters(principals=everyone, sources=())) == []
    assert build_query("alpha", Filters(principals=everyone, docs=())) is None
    assert build_query("alpha", Filters(principals=everyone, sources=())) is None


def _two(tmp_path: Path, outer: dict[str, object], inner: dict[str, object]) -> None:
    (tmp_path / "hr").mkdir(exist_ok=True)
    config_from_dict({"sources": [{"name": "all", "root": str(tmp_path), **outer},
                                  {"name": "hr", "root": str(tmp_path / "hr"), **inner}]})


@pytest.mark.parametrize("outer,inner", [
    ({}, {"acl": ["hr"]}),  # a public tree around an HR-only folder
    ({"acl": ["staff", "hr"]}, {"acl": ["hr"]}),
    ({"exclude": ["hr/*.pdf"]}, {"acl": ["hr"]}),  # excludes some of its files, not all
])
def test_a_narrow_source_inside_a_wider_one_is_refused(
        tmp_path: Path, outer: dict[str, object], inner: dict[str, object]) -> None:
    """The inner folder's files would be listed twice, once with the wider ACL: its own ACL
    would protect nothing. The error names both sources and the exclude that fixes it."""
    from connectors.errors import ConfigError

    with pytest.raises(ConfigError, match=r"source 'hr' .* inside source 'all'.*add 'hr/' to the exclude"):
        _two(tmp_path, outer, inner)


@pytest.mark.parametrize("outer,inner", [
    ({"exclude": ["hr/"]}, {"acl": ["hr"]}),  # the fix the error names
    ({"exclude": ["/hr/**"]}, {"acl": ["hr"]}),
    ({"acl": ["hr"]}, {"acl": ["hr"]}),  # the same people either way
    ({"acl": ["staff"]}, {}),  # a public subfolder of a staff tree: wider inside, as asked
    ({"acl": []}, {"acl": ["hr"]}),
])
def test_nested_sources_that_leak_nothing_are_accepted(
        tmp_path: Path, outer: dict[str, object], inner: dict[str, object]) -> None:
    _two(tmp_path, outer, inner)


def test_one_folder_split_between_sources_by_globs_is_accepted(tmp_path: Path) -> None:
    from connectors.errors import ConfigError

    same = [{"name": "a", "root": str(tmp_path), "acl": ["x"]}, {"name": "b", "root": str(tmp_path), "acl": ["y"]}]
    with pytest.raises(ConfigError, match="list the same files"):
        config_from_dict({"sources": same})
    same[0]["include"], same[1]["include"] = ["public/"], ["private/"]
    config_from_dict({"sources": same})


def test_nested_s3_prefixes_are_checked_like_folders() -> None:
    from connectors.errors import ConfigError

    s3 = {"kind": "s3", "bucket": "docs", "endpoint_url": "http://127.0.0.1:9000"}
    with pytest.raises(ConfigError, match="inside source 'all'"):
        config_from_dict({"sources": [{"name": "all", **s3, "prefix": "corp"},
                                      {"name": "hr", **s3, "prefix": "corp/hr/", "acl": ["hr"]}]})
    config_from_dict({"sources": [{"name": "all", **s3, "prefix": "corp"},  # corp-hr is not under corp/
                                  {"name": "hr", **s3, "prefix": "corp-hr", "acl": ["hr"]}]})
    config_from_dict({"sources": [{"name": "all", **s3, "prefix": "corp"},  # another bucket
                                  {"name": "hr", **s3, "bucket": "hr", "prefix": "corp/hr", "acl": ["hr"]}]})
    # one store, spelt another way (a trailing '/', localhost, AWS's default endpoint): the same
    # bucket, still nested (keyed by the URL's text, these passed and leaked the hr prefix)
    for outer_url, inner_url in [("http://127.0.0.1:9000/", "http://127.0.0.1:9000"),
                                 ("http://localhost:9000", "http://127.0.0.1:9000"),
                                 ("http://minio:9000", "http://minio.storage.svc.cluster.local:9000"),
                                 (None, "https://s3.cn-north-1.amazonaws.com.cn")]:
        with pytest.raises(ConfigError, match="inside source 'all'"):
            config_from_dict({"sources": [{**s3, "name": "all", "prefix": "corp", "endpoint_url": outer_url},
                                          {**s3, "name": "hr", "prefix": "corp/hr/", "acl": ["hr"],
                                           "endpoint_url": inner_url}]})


def _listed(tmp_path: Path, sources: list[dict[str, object]]) -> dict[str, dict[str, tuple[str, ...]]]:
    """source name -> {listed path: its ACL}, each source listed as a sync lists it (beside the
    others); an entry listed with a problem (dead-lettered, never read) is left out."""
    from connectors.sources import make_source

    (tmp_path / "hr" / "exec").mkdir(parents=True, exist_ok=True)
    for rel in ("handbook.md", "hr/salaries.md", "hr/policy.pdf", "hr/exec/bonus.md"):
        (tmp_path / rel).write_text(rel)
    cfg = config_from_dict({"sources": sources})
    return {s.name: {e.external_id: tuple(e.acl) for e in make_source(s, cfg.sources).list() if not e.problem}
            for s in cfg.sources}


@pytest.mark.parametrize("outer,inner", [
    # one folder, the narrow source taking a subfolder by its include: the load-time check cannot
    # prove the globs overlap, and the wide source listed hr's files publicly
    ({"root": "."}, {"root": ".", "include": ["hr/**"]}),
    # an exclude of the folder taken back by a later negation: `hr/` then `!*.md`
    ({"root": ".", "exclude": ["hr/", "!*.md"]}, {"root": "hr"}),
    ({"root": ".", "exclude": ["hr/*-*"]}, {"root": "hr"}),  # excludes the check's probe name, not the files
])
def test_what_a_narrower_source_takes_is_listed_by_it_alone(
        tmp_path: Path, outer: dict[str, object], inner: dict[str, object]) -> None:
    def where(s: dict[str, object]) -> dict[str, object]:
        return {**s, "root": str(tmp_path / str(s["root"]))}

    listed = _listed(tmp_path, [{"name": "wiki", **where(outer)}, {"name": "hr", **where(inner), "acl": ["hr"]}])
    assert all(not p.startswith("hr/") for p in listed["wiki"]), listed["wiki"]
    assert "handbook.md" in listed["wiki"]
    assert set(listed["hr"].values()) == {("hr",)} and len(listed["hr"]) == 3


def test_ceding_follows_the_narrower_sources_own_rules(tmp_path: Path) -> None:
    """Only the files the narrower source itself takes are left to it; a chain of them cedes
    to the narrowest; the deeper source decides, so a public folder inside a staff-only tree
    stays public (what the operator asked) and a staff-only source cedes nothing to it."""
    listed = _listed(tmp_path, [
        {"name": "wiki", "root": str(tmp_path)},
        {"name": "hr", "root": str(tmp_path), "include": ["hr/*.md", "hr/exec/"], "acl": ["hr", "exec"]},
        {"name": "exec", "root": str(tmp_path), "include": ["hr/exec/**"], "acl": ["exec"]},
    ])
    assert set(listed["wiki"]) == {"handbook.md", "hr/policy.pdf"}  # the pdf: no narrower source takes it
    assert set(listed["hr"]) == {"hr/salaries.md"}  # hr/exec/ is exec's, narrower still
    assert set(listed["exec"]) == {"hr/exec/bonus.md"}
    wider = _listed(tmp_path, [{"name": "wiki", "root": str(tmp_path), "acl": ["staff"]},
                               {"name": "pub", "root": str(tmp_path / "hr")}])
    assert len(wider["wiki"]) == 4 and len(wider["pub"]) == 3


def test_a_symlink_into_a_narrower_sources_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pub").mkdir()
    (tmp_path / "pub" / "link.md").symlink_to(tmp_path / "hr" / "salaries.md")
    (tmp_path / "pub" / "hrlink").symlink_to(tmp_path / "hr")
    listed = _listed(tmp_path, [{"name": "wiki", "root": str(tmp_path)},
                                {"name": "hr", "root": str(tmp_path), "include": ["hr/**"], "acl": ["hr"]}])
    assert not any("salaries" in p or "bonus" in p for p in listed["wiki"]), listed["wiki"]


def test_a_narrower_source_rooted_above_and_reaching_in_by_its_include_is_ceded_to(tmp_path: Path) -> None:
    """An attacker pass's find: HR rooted above the wiki, taking `docs/hr/**`, was not asked: the
    wiki listed the HR files publicly. Where a source takes from is its root and its include's folders."""
    docs = tmp_path / "docs"
    (docs / "hr").mkdir(parents=True)
    (docs / "hr" / "salaries.md").write_text("x")
    (docs / "handbook.md").write_text("x")
    cfg = config_from_dict({"sources": [{"name": "wiki", "root": str(docs)},
                                        {"name": "hr", "root": str(tmp_path), "include": ["docs/hr/**"],
                                         "acl": ["group:hr"]}]})
    from connectors.sources import make_source

    listed = {s.name: sorted(e.external_id for e in make_source(s, cfg.sources).list()) for s in cfg.sources}
    assert listed == {"wiki": ["handbook.md"], "hr": ["docs/hr/salaries.md"]}


@pytest.mark.parametrize("wide", [["*"], ["group:hr ", "group:staff"]])
def test_acls_are_compared_as_the_listing_applies_them(tmp_path: Path, wide: list[str]) -> None:
    """`acl: ["*"]` is public and `"group:hr "` is `group:hr`: compared as written, each source
    ceded to the other and the HR files were listed by neither."""
    listed = _listed(tmp_path, [{"name": "wiki", "root": str(tmp_path), "acl": wide},
                                {"name": "hr", "root": str(tmp_path), "include": ["hr/**"], "acl": ["group:hr"]}])
    assert len(listed["hr"]) == 3 and not any(p.startswith("hr/") for p in listed["wiki"])


def test_a_sidecar_above_what_a_source_takes_only_narrows_its_acl(tmp_path: Path) -> None:
    """An attacker pass's find: in one folder shared by a wiki and an HR source (`include:
    [hr/**]`), a `.bindery-acl` the wiki's editors put in the root replaced HR's `acl`: with
    `group:staff` in it staff read the salaries, with `*` everyone did."""
    sources: list[dict[str, object]] = [{"name": "wiki", "root": str(tmp_path)},
                                        {"name": "hr", "root": str(tmp_path), "include": ["hr/**"],
                                         "acl": ["group:hr"]}]
    for wider, hr in (("group:staff\n", ()), ("*\n", ("group:hr",))):  # narrowed: by staff, nobody is in both
        (tmp_path / ".bindery-acl").write_text(wider)
        listed = _listed(tmp_path, sources)
        assert set(listed["hr"].values()) == {hr}
        assert listed["wiki"]["handbook.md"] == (wider.strip(),)  # the wiki's own files: its to decide
    (tmp_path / ".bindery-acl").write_text("group:hr\ngroup:staff\n")
    assert set(_listed(tmp_path, sources)["hr"].values()) == {("group:hr",)}
    (tmp_path / "hr" / ".bindery-acl").write_text("group:hr\ngroup:exec\n")  # HR's own folder decides
    assert set(_listed(tmp_path, sources)["hr"].values()) == {("group:hr", "group:exec")}


def test_a_file_a_narrower_source_takes_is_not_kept_under_a_folder_the_wider_cannot_read(tmp_path: Path) -> None:
    """A document under a folder the listing cannot read is kept as it was, unless the source's
    rules now leave it out: a narrower source taking it is such a rule (it was kept, public)."""
    from assets.listing import split_gone
    from connectors.sources.base import SourceEntry
    from connectors.store import DocumentRecord

    cfg = config_from_dict({"sources": [{"name": "wiki", "root": str(tmp_path)},
                                        {"name": "hr", "root": str(tmp_path), "include": ["hr/**"],
                                         "acl": ["group:hr"]}]})
    docs = {p: DocumentRecord(doc_id=p, source="wiki", external_id=p, uri="", content_hash="h", fingerprint=None,
                              size=None, acl=["*"], acl_hash="", metadata={}, source_modified_at=None,
                              first_seen=0.0, last_seen=0.0, changed_at=0.0) for p in ("hr/sub/pay.md", "pub/sub/a.md")}
    problems = [(SourceEntry(external_id=f"{f}/", uri="", size=0, fingerprint="", modified_at=0.0),
                 ("unreadable-folder", "x")) for f in ("hr/sub", "pub/sub")]
    gone, kept = split_gone(cfg.sources[0], docs, set(), problems, cfg.sources)
    assert [d.external_id for d in gone] == ["hr/sub/pay.md"] and [d.external_id for d in kept] == ["pub/sub/a.md"]


@pytest.mark.parametrize("hr_include", [["docs/hr/**", "payroll/**"], ["hr/"], ["**/salaries*"]])
def test_a_narrower_source_is_ceded_to_whatever_its_include_looks_like(tmp_path: Path, hr_include: list[str]) -> None:
    """From review: the first cut compared one folder per source, the prefix its include patterns
    share, and several folders (`docs/hr/**` and `payroll/**`), or a pattern at any depth (`hr/`,
    `**/salaries*`), gave none: a wiki taking `docs/**` listed the salaries publicly."""
    (tmp_path / "docs" / "hr").mkdir(parents=True)
    (tmp_path / "docs" / "hr" / "salaries.md").write_text("x")
    (tmp_path / "docs" / "guide.md").write_text("x")
    cfg = config_from_dict({"sources": [{"name": "wiki", "root": str(tmp_path), "include": ["docs/**"]},
                                        {"name": "hr", "root": str(tmp_path), "include": hr_include,
                                         "acl": ["group:hr"]}]})
    from connectors.sources import make_source

    listed = {s.name: {e.external_id: e.acl for e in make_source(s, cfg.sources).list()} for s in cfg.sources}
    assert listed["wiki"] == {"docs/guide.md": ("*",)}
    assert listed["hr"] == {"docs/hr/salaries.md": ("group:hr",)}
    (tmp_path / ".bindery-acl").write_text("*\n")  # the shared root's sidecar: the wiki's, never HR's
    assert {e.external_id: e.acl for e in make_source(cfg.sources[1], cfg.sources).list()} == {
        "docs/hr/salaries.md": ("group:hr",)}


def test_a_sidecar_in_a_narrower_sources_own_folders_still_decides(tmp_path: Path) -> None:
    """The rule that a sidecar in a folder a wider source shares only narrows leaves the narrow
    source's own folders alone: HR publishing a benefits folder (`*`) in its nested tree, which
    the wiki excludes, stays public as written."""
    (tmp_path / "hr" / "benefits").mkdir(parents=True)
    (tmp_path / "hr" / "benefits" / "dental.md").write_text("x")
    (tmp_path / "hr" / "benefits" / ".bindery-acl").write_text("*\n")
    (tmp_path / ".bindery-acl").write_text("group:staff\n")  # the wiki's, above HR's root
    cfg = config_from_dict({"sources": [{"name": "wiki", "root": str(tmp_path), "exclude": ["hr/"]},
                                        {"name": "hr", "root": str(tmp_path / "hr"), "acl": ["group:hr"]}]})
    from connectors.sources import make_source

    assert {e.external_id: e.acl for e in make_source(cfg.sources[1], cfg.sources).list()} == {
        "benefits/dental.md": ("*",)}


@pytest.mark.slow
def test_a_public_copy_of_a_private_files_bytes_never_takes_its_name(tmp_path: Path) -> None:
    """Found by an adversarial review: a parse is cached by bytes and held the title made from
    the first file's name, so a public copy of a private file's text was titled (and searchable)
    by the private file's name ("termination of john smith for embezzlement"). Each document is
    named by its own file now, whichever was parsed first, in every store and in the plan."""
    from tests.sync_helpers import LocalDeployment, hits

    dep = LocalDeployment(tmp_path)
    letter = "Dear colleague, please find the attached schedule for the coming quarter and the rollout plan.\n"
    dep.write("hr/termination-of-john-smith-for-embezzlement.txt", letter)
    dep.set_acl("hr/termination-of-john-smith-for-embezzlement.txt", ["group:hr"])
    dep.cli("sync")
    dep.write("public/a-template.txt", letter)
    plan, out = dep.cli("plan"), dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    public = {h["doc"]: h for h in hits(dep, "embezzlement john smith schedule rollout", "--principal", "*")}
    assert public["public/a-template.txt"]["title"] == "a template"
    assert "embezzlement" not in repr(public) and "hr/termination-of-john-smith-for-embezzlement.txt" not in public
    private = {h["doc"]: h["title"] for h in hits(dep, "embezzlement john smith", "--principal", "group:hr")}
    assert private["hr/termination-of-john-smith-for-embezzlement.txt"] == "termination of john smith for embezzlement"
    assert private["public/a-template.txt"] == "a template"
