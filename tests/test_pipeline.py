"""End to end through the real Dagster jobs (via the CLI): incrementality, idempotency,
deletes reaching every store, per-document isolation, the safe delete sweep.

Real engines throughout: SQLite store, Qdrant local, tantivy, the all-MiniLM-L6-v2 model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from connectors.config import load_config
from connectors.store import DocumentStore
from tests.bindery_fixture import Deployment
from tests.sync_helpers import generation_row, index_sets

pytestmark = pytest.mark.slow


def _store(dep: Deployment) -> DocumentStore:
    return DocumentStore(load_config(dep.config_path).database_url)


def chunk_sets(dep: Deployment, gen_id: int | None = None) -> dict[str, set[str]]:
    """Chunk ids in the store (for indexed docs), the vector index and the keyword index."""
    sets = index_sets(dep, gen_id)
    return {k: sets[k] for k in ("store", "vector", "keyword")}


@pytest.fixture
def dep(tmp_path: Path) -> Deployment:
    return Deployment(tmp_path)


def _docs_in(sets: dict[str, set[str]], store: DocumentStore) -> set[str]:
    return {c.doc_id for c in store.get_chunks(sorted(sets["vector"])).values()}


def test_first_sync_builds_generation_one_and_second_sync_does_nothing(dep: Deployment) -> None:
    first = dep.cli("sync")
    assert first["generation"] == 1
    assert first["sources"]["docs"]["new"] == len(list(dep.root.rglob("*.*")))
    assert first["recomputed"]["parse"] == 6 and first["recomputed"]["embed"] >= 6
    sets = chunk_sets(dep)
    assert sets["store"] == sets["vector"] == sets["keyword"] and len(sets["store"]) >= 6

    second = dep.cli("sync")
    assert second["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert second["written"] == {"documents": 0, "chunks": 0, "deleted": 0}
    assert second["sources"]["docs"]["unchanged"] == 6
    assert dep.cli("status")["live"] == 1


def test_editing_one_document_recomputes_only_that_document(dep: Deployment) -> None:
    dep.cli("sync")
    before = chunk_sets(dep)
    dep.write("ops/oncall.txt", (dep.root / "ops/oncall.txt").read_text() + "\nPagers are tested weekly.\n")
    out = dep.cli("sync")
    assert out["sources"]["docs"]["updated"] == 1 and out["sources"]["docs"]["unchanged"] == 5
    assert out["recomputed"]["parse"] == 1 and out["recomputed"]["chunk"] == 1
    assert out["written"]["documents"] == 1
    after = chunk_sets(dep)
    assert after["store"] == after["vector"] == after["keyword"]
    hits = dep.cli("query", "Are pagers tested?", "-k", "1")["hits"]
    assert hits[0]["doc"] == "ops/oncall.txt" and "tested weekly" in hits[0]["text"]
    assert len(after["vector"]) >= len(before["vector"])


def test_delete_reaches_store_vector_and_keyword_index(dep: Deployment) -> None:
    dep.cli("sync")
    store = _store(dep)
    doc = next(d for d in store.documents() if d.external_id == "people/lyon.md")
    assert doc.doc_id in _docs_in(chunk_sets(dep), store)
    (dep.root / "people/lyon.md").unlink()
    out = dep.cli("sync")
    assert out["sources"]["docs"]["deleted"] == 1 and out["written"]["deleted"] == 1
    sets = chunk_sets(dep)
    assert sets["store"] == sets["vector"] == sets["keyword"]
    assert doc.doc_id not in _docs_in(sets, store)
    assert store.chunks_for([doc.doc_id], store.generations()[0].stage_versions["chunk"]) == []
    assert all(h["doc"] != "people/lyon.md" for h in dep.cli("query", "Lyon office Part-Dieu", "-k", "10")["hits"])


def test_moved_file_is_not_reparsed_or_reembedded(dep: Deployment) -> None:
    dep.cli("sync")
    (dep.root / "ops/oncall.txt").rename(dep.root / "ops/oncall-policy.txt")
    out = dep.cli("sync")
    # one rename is one change: its old path is not also counted as deleted
    assert out["sources"]["docs"]["moved"] == 1 and out["sources"]["docs"]["deleted"] == 0
    assert out["recomputed"]["parse"] == 0 and out["recomputed"]["embed"] == 0
    hits = dep.cli("query", "acknowledge a page within fifteen minutes", "-k", "1")["hits"]
    assert hits[0]["doc"] == "ops/oncall-policy.txt"


def test_a_source_root_moved_with_its_files_points_hits_at_the_new_place(dep: Deployment) -> None:
    """The tree moved to another folder (a new disk, a renamed share) and `root` updated: a rename
    keeps the files' times, so the listing's cheap test called every file unchanged and hits kept
    `file://` URIs of the old folder, which no longer exists (an operator pass). Each is an
    `acl` (metadata) change: re-indexed, nothing recomputed, and `bindery plan` says so."""
    dep.cli("sync")
    moved = dep.root.with_name("corpus-moved")
    dep.root.rename(moved)
    dep.config["sources"][0]["root"] = str(moved)
    dep.save()
    n = sum(1 for p in moved.rglob("*") if p.is_file())
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert out["sources"]["docs"]["acl"] == n == plan["sources"]["docs"]["changes"]["acl"]
    assert out["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert out["written"] == plan["written"]
    hit = dep.cli("query", "acknowledge a page within fifteen minutes", "-k", "1")["hits"][0]
    assert hit["uri"] == (moved / "ops/oncall.txt").as_uri()


def test_a_moved_root_reaches_the_previous_generation_as_the_plan_says(dep: Deployment) -> None:
    """The generation kept for a rollback is rewritten with the new URIs too (its digest holds
    them); `bindery plan` counted only live's writes for it (here the larger: smaller chunks)."""
    dep.set_stage("chunk", max_tokens=24, overlap_tokens=4, min_tokens=0, parent_max_tokens=0)
    dep.cli("sync")
    dep.config["stages"].pop("chunk")
    dep.save()
    dep.cli("reindex")
    dep.cli("promote", "--force", "--reason", "test")
    moved = dep.root.with_name("corpus-moved")
    dep.root.rename(moved)
    dep.config["sources"][0]["root"] = str(moved)
    dep.save()
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert out["written"] == plan["written"]
    hit = dep.cli("query", "acknowledge a page", "-k", "1", "--generation", "previous")["hits"][0]
    assert hit["uri"] == (moved / "ops/oncall.txt").as_uri()


def test_acl_change_updates_indexes_without_reembedding(dep: Deployment) -> None:
    dep.cli("sync")
    (dep.root / "people" / ".bindery-acl").write_text("hr-team\n")
    out = dep.cli("sync")
    assert out["sources"]["docs"]["acl"] == 1
    assert out["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    q = ("query", "Lyon office Part-Dieu", "-k", "10")
    assert all(h["doc"] != "people/lyon.md" for h in dep.cli(*q)["hits"])  # public caller
    assert dep.cli(*q, "--principal", "hr-team")["hits"][0]["doc"] == "people/lyon.md"


def test_broken_files_go_to_dead_letters_and_the_run_succeeds(dep: Deployment) -> None:
    dep.write("broken/truncated.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n")
    dep.write("broken/blob.txt", bytes(range(256)) * 16)
    out = dep.cli("sync")
    assert out["sources"]["docs"]["new"] == 8 and out["errors"] == {}
    dlq = {d["doc"]: d for d in dep.cli("dlq")}
    assert set(dlq) == {"broken/truncated.pdf", "broken/blob.txt"}
    assert all(d["stage"] == "parse" and d["error"] for d in dlq.values())
    assert dep.cli("status")["documents"] == 8
    indexed = {h["doc"] for h in dep.cli("query", "robot battery error firmware office", "-k", "50")["hits"]}
    assert indexed == set(dep_docs())
    # a fixed document leaves the table on retry
    (dep.root / "broken/blob.txt").write_text("Now a perfectly readable note about the blob.\n")
    dep.cli("sync")
    assert {d["doc"] for d in dep.cli("dlq")} == {"broken/truncated.pdf"}
    # broken again, then put back to the bytes that parsed: nothing is parsed, and it leaves the table
    good = (dep.root / "broken/blob.txt").read_bytes()
    (dep.root / "broken/blob.txt").write_bytes(bytes(range(256)) * 17)
    dep.cli("sync")
    assert {d["doc"] for d in dep.cli("dlq")} == {"broken/truncated.pdf", "broken/blob.txt"}
    (dep.root / "broken/blob.txt").write_bytes(good)
    assert dep.cli("sync")["recomputed"]["parse"] == 0
    assert {d["doc"] for d in dep.cli("dlq")} == {"broken/truncated.pdf"}
    assert dep.cli("status")["dead_letters"] == 1


def dep_docs() -> list[str]:
    from tests.bindery_fixture import DOCS

    return list(DOCS)


def test_systematic_parse_failure_blocks_the_index(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    for i in range(24):  # above the check's floor of 20 documents (quality.min_batch)
        dep.write(f"junk/{i}.txt", bytes([0, 1, 2, 3, 255]) * 200)
    out = dep.cli("sync", expect=1)
    assert "parse_quality" in out["error"]
    # nothing new reached the index; the run's failure is recorded with the reason
    assert len(dep.cli("dlq")) == 24
    sets = chunk_sets(dep)
    assert sets["vector"] == sets["keyword"]


def test_shrunken_listing_aborts_the_delete_sweep_until_overridden(dep: Deployment) -> None:
    dep.cli("sync")
    for rel in ["robots/xr4471.md", "robots/xr5200.md", "ops/firmware.md", "ops/oncall.txt"]:
        (dep.root / rel).unlink()
    out = dep.cli("sync", expect=1)
    assert "delete sweep aborted" in out["error"] and "6" in out["error"]
    assert len(chunk_sets(dep)["vector"]) > 0
    assert dep.cli("status")["documents"] == 6
    assert any(e["kind"] == "delete-sweep-aborted" for e in dep.cli("status")["events"])
    out = dep.cli("sync", "--allow-mass-delete")
    assert out["sources"]["docs"]["deleted"] == 4
    assert dep.cli("status")["documents"] == 2


def test_missing_source_root_fails_without_deleting(dep: Deployment) -> None:
    dep.cli("sync")
    dep.root.rename(dep.root.with_name("elsewhere"))
    out = dep.cli("sync", expect=2)  # the configuration check refuses before any run
    assert "sources.0.root" in out["error"] and "corpus" in out["error"]
    assert dep.cli("status")["documents"] == 6
    assert len(chunk_sets(dep)["vector"]) > 0


def _versions(dep: Deployment, gen_id: int) -> dict[str, Any]:
    return cast(dict[str, Any], generation_row(_store(dep), gen_id).stage_versions)


def test_chunk_config_change_reindexes_without_reparsing(dep: Deployment) -> None:
    dep.cli("sync")
    dep.set_stage("chunk", max_tokens=48, overlap_tokens=8)
    out = dep.cli("reindex")
    assert out["recomputed"]["parse"] == 0 and out["recomputed"]["chunk"] == 6
    cand = out["candidate"]
    assert _versions(dep, cand)["parse"] == _versions(dep, 1)["parse"]
    assert _versions(dep, cand)["chunk"] != _versions(dep, 1)["chunk"]
    sets = chunk_sets(dep, cand)
    assert sets["store"] == sets["vector"] == sets["keyword"]
    assert dep.cli("status")["live"] == 1  # built beside live, not promoted


def test_embedder_change_reindexes_without_reparsing_or_rechunking(dep: Deployment) -> None:
    dep.cli("sync")
    dep.set_stage("embed", document_prefix="passage: ", query_prefix="query: ")
    out = dep.cli("reindex")
    assert out["recomputed"]["parse"] == 0 and out["recomputed"]["chunk"] == 0
    assert out["recomputed"]["context"] == 0 and out["recomputed"]["embed"] > 0
    assert _versions(dep, out["candidate"])["embed"] != _versions(dep, 1)["embed"]


@pytest.mark.postgres
def test_the_pipeline_runs_on_postgresql(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The same end-to-end path with PostgreSQL as the document store."""
    url = request.getfixturevalue("pg_url")
    dep = Deployment(tmp_path, backends={"database_url": url})
    first = dep.cli("sync")
    assert first["generation"] == 1 and first["recomputed"]["parse"] == 6
    assert dep.cli("sync")["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    (dep.root / "people/lyon.md").unlink()
    assert dep.cli("sync")["written"]["deleted"] == 1
    sets = chunk_sets(dep)
    assert sets["store"] == sets["vector"] == sets["keyword"]
    assert dep.cli("query", "ERR-0x1F", "-k", "1")["hits"][0]["doc"] == "ops/errors.html"


def test_dlq_retry_resolves_what_now_parses_and_reports_the_rest(dep: Deployment) -> None:
    dep.write("broken/truncated.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n")
    dep.write("notes/scan.txt", b"\x00\x01\x02" * 300)
    dep.cli("sync")
    assert {d["doc"] for d in dep.cli("dlq")} == {"broken/truncated.pdf", "notes/scan.txt"}
    out = dep.cli("dlq", "retry", "--all", expect=1)  # nothing changed: they still fail, and it says so
    assert out["retried"] == 2 and out["resolved"] == 0
    assert out["still_failing"] == ["broken/truncated.pdf", "notes/scan.txt"]
    (dep.root / "notes/scan.txt").write_text("The scanner note, now typed out as plain text for everyone.\n")
    out = dep.cli("dlq", "retry", "--doc", "notes/scan.txt")
    assert out["resolved"] == 1 and out["still_failing"] == []
    assert {d["doc"] for d in dep.cli("dlq")} == {"broken/truncated.pdf"}


def test_a_redirect_page_is_parsed_but_never_indexed(dep: Deployment) -> None:
    """A redirect page only points at another page: it took a result slot from the page it
    names. Parsed and kept (no dead letter), chunked to nothing, counted; the plan agrees."""
    dep.write("manual/Options.html", "<html><head><title>Options</title></head><body><h1>Options</h1>"
              "<p>The outfile option directs the generated scanner to a named output file.</p></body></html>")
    dep.write("manual/option-outfile.html", '<html><head><meta http-equiv="refresh" content="0; url=Options.html">'
              "</head><body><p>The node you are looking for is at <a href='Options.html'>option outfile</a>.</p>"
              "</body></html>")
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"]
    assert out["redirect_pages"] == 1 and out["dead_letters"] == 0
    store = _store(dep)
    docs = {d.external_id: d.doc_id for d in store.documents()}
    sets = chunk_sets(dep)
    assert sets["store"] == sets["vector"] == sets["keyword"]
    indexed = {c.doc_id for c in store.get_chunks(sorted(sets["vector"] | sets["keyword"])).values()}
    assert docs["manual/Options.html"] in indexed and docs["manual/option-outfile.html"] not in indexed
    hits = dep.cli("query", "option outfile", "-k", "10")["hits"]
    assert "manual/option-outfile.html" not in {h["doc"] for h in hits}
    again = dep.cli("sync")  # counted when parsed; not cut to nothing again on every sync
    assert again["redirect_pages"] == 0 and again["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert dep.cli("plan")["recomputed"] == again["recomputed"]


def test_a_generated_index_is_parsed_but_never_indexed(dep: Deployment) -> None:
    """A manual's index names every term in a few chunks and took the first place from the page
    that explains a term (flex's concept index: index-term MRR 0.75 -> 0.61). Kept, counted,
    never chunked; the plan agrees."""
    dep.write("manual/Options.html", "<html><head><title>Options</title></head><body><h1>Options</h1>"
              "<p>The outfile option directs the generated scanner to a named output file.</p></body></html>")
    rows = "".join(f'<tr><td><a href="Options.html#o{i}">option {w}</a></td><td>Options</td></tr>'
                   for i, w in enumerate(["outfile", "prefix", "yylineno", "noyywrap", "reentrant"]))
    dep.write("manual/Concept-Index.html", "<html><head><title>Concept Index</title></head><body>"
              f'<h2>Concept Index</h2><table class="index-cp">{rows}</table></body></html>')
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert out["index_pages"] == 1 and out["redirect_pages"] == 0 and out["dead_letters"] == 0
    hits = [h["doc"] for h in dep.cli("query", "option outfile", "-k", "10")["hits"]]
    assert hits[0] == "manual/Options.html" and "manual/Concept-Index.html" not in hits


def test_a_documentation_builds_own_files_are_kept_but_never_indexed(dep: Deployment) -> None:
    """A Sphinx HTML build holds each page's source again under `_sources/`, its whole text again
    in `searchindex.js`, and theme assets: indexed, the Python FAQ's copies took the first place
    from its pages (MRR 0.99 -> 0.77). Told by their path, kept, counted, never indexed; a page
    elsewhere with a copy's very bytes is still indexed (the role is in the parse key); the plan
    agrees, and a second sync does nothing."""
    rst = "Options\n=======\n\nThe outfile option directs the generated scanner to a named output file.\n"
    dep.write("html/options.html", "<html><head><title>Options</title></head><body><h1>Options</h1>"
              "<p>The outfile option directs the generated scanner to a named output file.</p></body></html>")
    dep.write("html/_sources/options.rst.txt", rst)
    dep.write("html/searchindex.js", 'Search.setIndex({"docnames": ["options"], "terms": {"outfile": 0, '
              '"option": 0, "scanner": 0, "generated": 0, "named": 0, "output": 0, "file": 0}})')
    dep.write("html/_static/basic.css", "div.outfile-option { output: file; scanner: generated; }\n")
    dep.write("notes/options.rst.txt", rst)  # the copy's bytes, but a page of its own
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert out["site_files"] == 3 and out["dead_letters"] == 0
    store = _store(dep)
    sets = chunk_sets(dep)
    assert sets["store"] == sets["vector"] == sets["keyword"]
    indexed = {c.doc_id for c in store.get_chunks(sorted(sets["vector"])).values()}
    docs = {d.external_id: d.doc_id for d in store.documents()}
    site = {"html/_sources/options.rst.txt", "html/searchindex.js", "html/_static/basic.css"}
    assert {docs[p] for p in site} <= set(docs.values()) and not {docs[p] for p in site} & indexed
    hits = [h["doc"] for h in dep.cli("query", "outfile option output file", "-k", "10")["hits"]]
    assert set(hits[:2]) == {"html/options.html", "notes/options.rst.txt"} and not site & set(hits)
    again = dep.cli("sync")
    assert again["site_files"] == 0 and again["recomputed"] == {"parse": 0, "chunk": 0, "context": 0, "embed": 0}
    assert dep.cli("plan")["recomputed"] == again["recomputed"]
    # a page moved to a site file's path leaves the indexes: it is never held at its new path, and
    # its old path was kept, searchable, while the move waited for it (a helper's pass)
    (dep.root / "notes/options.rst.txt").rename(dep.root / "html/_sources/notes.rst.txt")
    plan = dep.cli("plan")
    moved = dep.cli("sync")
    assert moved["sources"]["docs"]["moved"] == 1  # its parse as a copy is cached: the same bytes
    assert plan["written"] == moved["written"] and moved["written"]["deleted"] == 1
    hits = [h["doc"] for h in dep.cli("query", "outfile option output file", "-k", "10")["hits"]]
    assert "notes/options.rst.txt" not in hits and "html/options.html" in hits


def test_compressed_manual_pages_are_indexed_as_their_text(dep: Deployment) -> None:
    """Manual pages ship as gzip-compressed roff: indexed as the page a reader sees (no `\\fB`
    or `.TP` in what is searched); an alias page (`.so`) is a redirect; the plan agrees."""
    import gzip

    page = (".TH FROB 1\n.SH NAME\nfrob \\- frobnicate files in place\n.SH OPTIONS\n.TP\n"
            ".BR \\-n \", \" \\-\\-dry\\-run\nPrint what frobnication would change; change nothing.\n")
    dep.write("man/man1/frob.1.gz", gzip.compress(page.encode()))
    dep.write("man/man1/unfrob.1.gz", gzip.compress(b".so man1/frob.1\n"))
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and out["dead_letters"] == 0 and out["redirect_pages"] == 1
    hits = dep.cli("query", "dry run frobnication", "-k", "3")["hits"]
    assert hits[0]["doc"] == "man/man1/frob.1.gz"
    assert "-n, --dry-run" in hits[0]["text"] and "\\f" not in hits[0]["text"] and ".TP" not in hits[0]["text"]
    assert "man/man1/unfrob.1.gz" not in {h["doc"] for h in hits}


def test_a_page_that_becomes_a_redirect_leaves_the_indexes(dep: Deployment) -> None:
    """A page replaced by a redirect stub must not keep answering with its old text; a stub
    that becomes a page again is indexed again."""
    page = ("<html><head><title>Options</title></head><body><h1>Options</h1>"
            "<p>The outfile option directs the generated scanner to a named output file.</p></body></html>")
    stub = ('<html><head><meta http-equiv="refresh" content="0; url=New.html"></head>'
            "<body><p>This page moved to <a href='New.html'>New</a>.</p></body></html>")
    dep.write("manual/Options.html", page)
    dep.cli("sync")
    doc = {d.external_id: d.doc_id for d in _store(dep).documents()}["manual/Options.html"]

    def indexed() -> bool:
        sets = chunk_sets(dep)
        assert sets["store"] == sets["vector"] == sets["keyword"]
        return doc in {c.doc_id for c in _store(dep).get_chunks(sorted(sets["vector"])).values()}

    assert indexed()
    dep.write("manual/Options.html", stub)
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert out["redirect_pages"] == 1 and out["written"]["deleted"] == 1 and not indexed()
    assert "manual/Options.html" not in {h["doc"] for h in dep.cli("query", "outfile option output file")["hits"]}
    dep.write("manual/Options.html", page)
    out = dep.cli("sync")
    assert out["recomputed"]["chunk"] == 1 and indexed()
    # a stub with no text at all (Hugo aliases, Sphinx redirect extensions) is no failed parse
    dep.write("manual/Options.html", '<html><head><meta http-equiv="refresh" content="0; url=/new/"></head></html>')
    plan = dep.cli("plan")
    out = dep.cli("sync")
    assert plan["recomputed"] == out["recomputed"] and plan["written"] == out["written"]
    assert out["redirect_pages"] == 1 and out["dead_letters"] == 0 and not indexed()


def test_a_document_read_with_a_warning_is_named_in_the_sync_summary(dep: Deployment,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A bad-input pass: docs/formats.md promises a `.gz` stored plain is read "with a
    warning", but the warning stayed in the parse's metadata: no summary, `--json` output or
    `status` said it. The sync names such documents (the first few) and counts them all."""
    from orchestration.cli import main

    dep.write("notes/plain.txt.gz", "The ferry timetable changes on the first of May every year.\n" * 3)
    out = dep.cli("sync")
    assert out["parse_warnings"]["documents"] == 1
    assert out["parse_warnings"]["examples"] == [
        "notes/plain.txt.gz: plain.txt.gz is named .gz but is not compressed; read as it is"]
    dep.write("notes/plain2.txt.gz", "The ferry timetable is printed at the harbour office.\n" * 3)
    capsys.readouterr()
    assert main(["--config", str(dep.config_path), "sync"]) == 0
    human = capsys.readouterr().out
    assert "parse warnings: 1 document read with a warning:" in human
    assert "  notes/plain2.txt.gz: plain2.txt.gz is named .gz but is not compressed" in human
    assert dep.cli("sync")["parse_warnings"] == {"documents": 0, "examples": []}  # this run's parses only
