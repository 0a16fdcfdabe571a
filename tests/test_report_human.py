"""`report.human`: what a person reads when the CLI runs without `--json`.

Every CLI test passes `--json`, so without these the human renderings were never run. The inputs
are the `--json` contracts the CLI builds (same keys), the outputs what the terminal shows.
"""

from __future__ import annotations

import json
from typing import Any

from orchestration.report import human, table


def _sync(**over: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "sources": {"docs": {"new": 2, "updated": 0, "unchanged": 5, "moved": 0, "acl": 0, "deleted": 1, "failed": 0}},
        "recomputed": {"parse": 2, "chunk": 2, "context": 0, "embed": 2},
        "written": {"documents": 2, "chunks": 9, "deleted": 1},
        "errors": {}, "dead_letters": 0, "generation": "g1", "seconds": 1.5, "candidate": None,
    }
    r.update(over)
    return r


def test_sync_lists_what_changed_and_the_live_generation() -> None:
    out = human("sync", _sync()).splitlines()
    assert out[0] == "source docs: 2 new, 5 unchanged, 1 deleted"
    assert out[1] == "recomputed: parse 2, chunk 2, context 0, embed 2"
    assert out[2] == "indexes: 2 documents written (9 chunks), 1 removed"
    assert out[-1] == "live generation: g1   (1.5 s)"


def test_sync_counts_are_grouped_as_the_plan_and_the_interrupted_line_group_them() -> None:
    """An operator pass: the plan said "context 2,249" and the sync "context 3572 ... (7010 chunks)"."""
    out = human("sync", _sync(recomputed={"parse": 12, "chunk": 12, "context": 3572, "embed": 3572},
                              written={"documents": 1200, "chunks": 7010, "deleted": 0})).splitlines()
    assert out[1] == "recomputed: parse 12, chunk 12, context 3,572, embed 3,572"
    assert out[2] == "indexes: 1,200 documents written (7,010 chunks), 0 removed"


def test_a_one_document_sync_reads_as_english_as_the_plan_does() -> None:
    """An operator pass: every one-file edit printed "1 documents written (1 chunks)" and "1
    embedded texts were longer", where `bindery plan` says "1 document to write (1 chunk)"."""
    out = human("sync", _sync(written={"documents": 1, "chunks": 1, "deleted": 0}, truncated=1)).splitlines()
    assert out[2] == "indexes: 1 document written (1 chunk), 0 removed"
    assert "warning: 1 embedded text was longer than the embedding model reads; " in "\n".join(out)


def test_a_quiet_sync_says_nothing_changed_and_shows_failed_checks_and_candidates() -> None:
    r = _sync(sources={"docs": {"new": 0, "updated": 0, "unchanged": 7, "moved": 0, "acl": 0, "deleted": 0}},
              recomputed=dict.fromkeys(("parse", "chunk", "context", "embed"), 0),
              written={"documents": 0, "chunks": 0, "deleted": 0}, dead_letters=3, candidate=7,
              candidate_name="g7",
              _checks={"docs": {"parse_quality": {"passed": False, "severity": "WARN", "description": "50 %"}}})
    out = human("sync", r)
    assert "nothing changed: nothing was recomputed" in out
    assert "check parse_quality [docs]: WARN: 50 %" in out
    assert "dead letters: 3 (see `bindery dlq`)" in out
    assert "candidate generation: g7 (id 7); run `bindery promote` to judge and flip" in out


def test_a_failed_source_is_flagged_not_reported_as_empty() -> None:
    r = _sync(sources={"docs": dict.fromkeys(("new", "updated", "unchanged"), 0)}, errors={"docs": "boom"},
              recomputed={"parse": 0}, written={})
    assert human("sync", r).splitlines()[0] == "source docs: FAILED (see below)"


def test_a_failed_run_says_the_documents_its_listing_deleted_are_out_of_search() -> None:
    """A bad-input pass: a sync the parse-quality check stopped read `indexes: 0 documents
    written (0 chunks), 0 removed` although the listing had swept a deleted file out of the
    store (and search); the summary now says where they are."""
    r = _sync(sources={"docs": {"new": 1, "unchanged": 49, "deleted": 1}}, errors={"docs": "parse_quality: 40 %"},
              recomputed={"parse": 1}, written={"documents": 0, "chunks": 0, "deleted": 0})
    out = human("sync", r)
    assert "indexes: 0 documents written (0 chunks), 0 removed" in out
    assert "1 document deleted from failed sources is already out of search (the listing swept the store)" in out
    ok = _sync(sources={"docs": {"unchanged": 49, "deleted": 1}}, written={"documents": 0, "chunks": 0, "deleted": 1})
    assert "already out of search" not in human("sync", ok)


def test_a_reindex_that_failed_does_not_send_the_operator_to_promote() -> None:
    """An operator pass: a reindex whose source was down said "run `bindery promote` to judge
    and flip" for a candidate with no documents, which promote then refused."""
    r = _sync(sources={"kb": dict.fromkeys(("new", "updated", "unchanged"), 0)}, errors={"kb": "endpoint down"},
              recomputed={"parse": 0}, written={}, candidate=4, candidate_name="g4")
    line = next(x for x in human("reindex", r).splitlines() if x.startswith("candidate generation"))
    assert "is not complete: the next `bindery reindex` or `bindery sync` finishes it" in line
    assert "to judge and flip" not in line


def test_a_source_that_failed_after_its_listing_is_flagged_too() -> None:
    """A new-user review's find: a sync that listed a change, then failed to open an index, read
    `source docs: 1 updated, 17 unchanged` like a success; its error was one line on stderr."""
    r = _sync(sources={"docs": {"new": 0, "updated": 1, "unchanged": 17}}, errors={"docs": "cannot open index"},
              recomputed={"parse": 1}, written={})
    assert human("sync", r).splitlines()[0] == "source docs: FAILED (see below); listed 1 updated, 17 unchanged"


def test_reindex_without_a_candidate_prints_its_message() -> None:
    assert human("reindex", {"candidate": None, "message": "stage versions unchanged"}) == "stage versions unchanged"


def test_query_hits_show_rank_provenance_and_a_flattened_snippet() -> None:
    hit = {"score": 0.0325, "source": "docs", "doc": "manual.md", "page": 3, "heading_path": ["Power", "Battery"],
           "ranks": {"dense": 1, "bm25": 2}, "text": "The XR-4471\nlasts   11 hours."}
    out = human("query", {"generation": 4, "generation_name": "g4", "hits": [hit]}).splitlines()
    assert out == ["generation 4 (g4)",
                   "1. [0.0325] docs:manual.md p.3  (Power > Battery)  [dense #1, bm25 #2]",
                   "   The XR-4471 lasts 11 hours."]
    empty = human("query", {"generation": 4, "generation_name": "g4", "hits": [], "reason": "no match"})
    assert empty.splitlines()[-1] == "no results: no match"
    mail = {**hit, "doc": "re.eml", "page": None, "heading_path": ["Re: dock lights"],
            "email": {"from": "Priya Raman <priya@northwind.example>", "date": "2024-09-04T08:00:00+02:00"}}
    out = human("query", {"generation": 4, "generation_name": "g4", "hits": [mail]}).splitlines()
    assert out[1] == ("1. [0.0325] docs:re.eml  (Re: dock lights · Priya Raman <priya@northwind.example>, "
                      "2024-09-04)  [dense #1, bm25 #2]")


def test_a_pasted_reply_says_whose_message_its_attribution_line_asked_for() -> None:
    trace = {"attribution": {"names": ["hendrik", "vries"], "address": None, "message_id": None,
                             "day": "2024-09-03", "time": "07:11", "offset_minutes": None, "units": 1, "best": []}}
    out = human("query", {"generation": 4, "generation_name": "g4", "hits": [], "reason": "x", "trace": trace})
    assert out.splitlines()[1] == "attribution line: hendrik vries, 2024-09-03 07:11 (1 of their messages found)"
    undated = {"attribution": {"names": [], "address": "jd@x.org", "units": 0, "index_outdated": True}}
    out = human("query", {"generation": 4, "generation_name": "g4", "hits": [], "reason": "x", "trace": undated})
    assert out.splitlines()[1:3] == ["attribution line: jd@x.org (0 of their messages found)",
                                     "  (this generation's keyword index predates attribution lines: "
                                     "`bindery reindex` rebuilds it)"]


def test_a_reindex_that_upgrades_an_older_index_says_why_it_built() -> None:
    out = human("reindex", _sync(candidate=2, candidate_name="g2", stale_index_fields=["author", "sent"]))
    assert out.splitlines()[0] == ("the live generation's keyword index lacks author, sent "
                                   "(written by an older release): rebuilt")


def test_dlq_renders_empty_rows_and_retry() -> None:
    assert human("dlq", []) == "dead-letter table is empty"
    rows = [{"at": 0, "source": "docs", "doc": "a.pdf", "stage": "parse", "reason": "corrupt", "error": "bad\nxref"}]
    out = human("dlq", rows).splitlines()
    assert out[0].split() == ["at", "source", "document", "stage", "reason", "error"]
    assert out[2].split()[-4:] == ["parse", "corrupt", "bad", "xref"] and "never" in out[2]
    deep = "x/" * 600 + "deep.md"  # one long name made every row of the table wider than a terminal
    wide = human("dlq", [*rows, {**rows[0], "doc": deep}]).splitlines()
    assert max(map(len, wide)) < 200 and "…" in wide[3] and wide[3].split()[2].endswith("x/deep.md")
    retry = human("dlq", {"retried": 2, "resolved": 1, "still_failing": ["a.pdf"]})
    assert retry == "retried 2, resolved 1; still failing: a.pdf"
    sync = {"generation": None, "sources": {"docs": {"deleted": 6}}, "recomputed": {"parse": 1},
            "written": {"documents": 0, "chunks": 0, "deleted": 6}, "errors": {}, "seconds": 1.5}
    retry = human("dlq", {"retried": 2, "resolved": 1, "still_failing": ["a.pdf"], "sync": sync})
    assert retry.splitlines() == ["retried 2, resolved 1; still failing: a.pdf", "source docs: 6 deleted",
                                  "recomputed: parse 1", "indexes: 0 documents written (0 chunks), 6 removed",
                                  "no live generation yet   (1.5 s)"]


def test_a_command_without_a_renderer_prints_indented_json() -> None:
    r = {"b": 1, "a": [1, 2]}
    assert json.loads(human("no-such-command", r)) == r
    assert human("no-such-command", r).startswith("{\n  ")


def test_table_right_aligns_numbers_and_marks_missing_values() -> None:
    out = table(["name", "docs"], [["alpha", 1200], ["b", None]]).splitlines()
    assert out == ["name    docs", "-----  -----", "alpha  1,200", "b          -"]


def test_texts_longer_than_the_embedder_reads_are_reported() -> None:
    from types import SimpleNamespace

    from orchestration.summaries import sync_summary

    class _Store:
        def get_binding(self) -> None:
            return None

        def counts(self) -> dict[str, int]:
            return {"dead_letters": 0}

        def documents(self, source: str) -> list[dict[str, Any]]:
            return []

        def removed_sources(self, configured: list[str]) -> dict[str, int]:
            return {}

    run = SimpleNamespace(partition="docs", run_id="r1", success=True, error=None, checks={}, generations={},
                          metadata={"embeddings": {"embedded": 5, "truncated": 2}})
    summary = sync_summary([run], 1.0, _Store(), ["docs"])  # type: ignore[arg-type]
    assert summary["truncated"] == 2
    assert "warning: 2 embedded texts were longer than the embedding model reads" in human("sync", _sync(truncated=2))
    assert "warning" not in human("sync", _sync(truncated=0))


def test_reindex_with_promote_shows_the_verdict_not_a_hint_to_promote() -> None:
    """`reindex --promote` ran the gate: no "run `bindery promote`", no stale live generation."""
    refused = {"promoted": False, "live": 1, "previous": None, "candidate": 2,
               "report": {"passed": False, "reasons": ["gate not run: no eval set"]}}
    out = human("reindex", _sync(candidate=2, candidate_name="g2", generation=1, promotion=refused))
    assert "run `bindery promote`" not in out and "live generation:" not in out
    assert "candidate generation: g2 (id 2) built in 1.5 s" in out
    assert out.splitlines()[-1] == "not promoted: generation 1 stays live"
    ok = {"promoted": True, "live": 2, "previous": 1, "candidate": 2, "forced": False, "report": {}}
    assert human("reindex", _sync(candidate=2, candidate_name="g2", promotion=ok)).endswith(
        "promoted: generation 2 is live, 1 kept as previous (`bindery rollback` to go back)")


def test_verify_is_one_line_per_generation_and_a_verdict() -> None:
    clean = {"g1": {"chunks": 658, "consistent": True, "missing_in_vector": 0, "orphans_in_keyword": 0}}
    assert human("verify", {"consistent": True, "generations": clean}) == (
        "g1: 658 chunks, consistent\nstore and indexes are consistent")
    drifted = {"g2": {"chunks": 10, "consistent": False, "missing_in_vector": 3, "orphans_in_keyword": 1}}
    out = human("verify", {"consistent": False, "generations": drifted})
    assert out.splitlines()[0] == "g2: 10 chunks, DRIFTED: missing in vector 3, orphans in keyword 1"
    assert out.endswith("drifted")
    drifted["g2"]["repaired"] = True
    assert "(repaired)" in human("verify", {"consistent": False, "generations": drifted})
    assert human("verify", {"consistent": True, "generations": {}}) == "no generations to verify"


def test_a_sync_that_only_saw_a_never_indexed_document_go_says_so() -> None:
    """A deleted document that was never indexed (a dead letter): nothing to recompute or remove,
    but "nothing changed" would be false."""
    quiet = {"recomputed": dict.fromkeys(("parse", "chunk", "context", "embed"), 0),
             "written": {"documents": 0, "chunks": 0, "deleted": 0}}
    r = _sync(sources={"docs": {"new": 0, "updated": 0, "unchanged": 11, "moved": 0, "acl": 0, "deleted": 1,
                                "failed": 0}}, **quiet)
    out = human("sync", r).splitlines()
    assert out[0] == "source docs: 11 unchanged, 1 deleted"
    assert out[1] == "nothing had to be recomputed; the indexes needed no change (1 deleted document was not in them)"
    r = _sync(sources={"docs": {"new": 0, "updated": 0, "unchanged": 11, "moved": 0, "acl": 0, "deleted": 0,
                                "failed": 0}}, **quiet)
    assert human("sync", r).splitlines()[1] == "nothing changed: nothing was recomputed"


def test_a_first_reindex_says_the_first_generation_went_live_not_candidate() -> None:
    message = "first generation g1 (id 1) is live: nothing was live to judge it against, so there is no candidate"
    out = human("reindex", _sync(candidate=None, candidate_name=None, generation=1, message=message))
    assert "candidate generation" not in out and "bindery promote" not in out
    assert out.splitlines()[-2:] == [message, "live generation: 1   (1.5 s)"]
    assert out.startswith("source docs: 2 new")  # the build's summary is kept


def test_a_plan_names_a_failing_source_on_a_line_of_its_own() -> None:
    """A source whose listing fails (an S3 endpoint down) was shown as 'FAILS: …' in the
    delete-guard column; the reason now has its own line, the table says where to look."""
    src = {"listed": 0, "changes": {}, "delete_guard": {"safe": True, "reason": None}, "error": None}
    plan: dict[str, Any] = {"kind": "sync", "generations": ["g1"], "new_generation": None,
            "sources": {"docs": src,
                        "s3": {**src, "error": "listing failed: endpoint unreachable (connection failed)"}},
            "stages": {"parse": {"compute": 0, "cached": 3, "unit": "documents"}},
            "estimate": {"seconds": None, "by_stage": {}, "note": None},
            "written": {"documents": 0, "chunks": 0, "deleted": 0}, "llm": None, "seconds": 0.2}
    out = human("plan", plan).splitlines()
    assert out[2].split()[-1] == "outcome"
    assert out[4].split()[-1] == "ok" and out[5].endswith("FAILS (see below)")
    assert out[6] == "error [s3]: the sync would fail: listing failed: endpoint unreachable (connection failed)"


def test_names_with_control_or_bidi_characters_print_escaped() -> None:
    """A file name holding a newline split a query hit over two lines; a right-to-left override
    makes `evil\u202etxt.exe` read as another name. Both print as escapes; other letters as is."""
    hit = {"score": 1.0, "source": "docs", "doc": "new\nline\u202etxt.exe", "page": None,
           "heading_path": ["Caf\u00e9 \u6771\u4eac"], "ranks": {"dense": 1}, "text": "body"}
    out = human("query", {"generation": 1, "generation_name": "g1", "hits": [hit]}).splitlines()
    assert out[1] == "1. [1.0000] docs:new\\nline\\u202etxt.exe  (Caf\u00e9 \u6771\u4eac)  [dense #1]"
    # a document's own text and its neighbours too: an override in a PDF reorders the line after it
    hit = {**hit, "text": "pay \u202eAB", "before": ["x\u202ey"], "after": ["Caf\u00e9"]}
    out = human("query", {"generation": 1, "generation_name": "g1", "hits": [hit]}).splitlines()
    assert out[2:] == ["   pay \\u202eAB", "   before: x\\u202ey", "   after: Caf\u00e9"]
    rows = [{"at": 0, "source": "docs", "doc": "a\tb.txt", "stage": "parse", "reason": "empty", "error": "x"}]
    assert "a\\tb.txt" in human("dlq", rows)


def test_status_splits_what_waits_into_documents_missing_and_out_of_date() -> None:
    """After a rollback, "43 (37 waiting for a sync)" of 78 documents read as 80: two of the 37
    were edits of documents the 43 count. The cell says which are which."""
    from orchestration.report import _indexed_cell

    assert _indexed_cell({"indexed": 43, "waiting": 37, "out_of_date": 2}) == (
        "43 (35 not yet indexed, 2 out of date: waiting for a sync)")
    assert _indexed_cell({"indexed": 78, "waiting": 2, "out_of_date": 2}) == "78 (2 out of date: waiting for a sync)"
    assert _indexed_cell({"indexed": 40, "waiting": 38, "out_of_date": 0}) == (
        "40 (38 not yet indexed: waiting for a sync)")
    assert _indexed_cell({"indexed": 78, "waiting": 0}) == 78
