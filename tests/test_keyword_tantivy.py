"""TantivyIndex: BM25 + exact identifiers, filters, deletes, persistence and concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.errors import IndexError_, QueryError
from connectors.indexes.base import Filters, IndexRecord, ScoredId
from connectors.indexes.tantivy_index import TantivyIndex

REPO = Path(__file__).resolve().parents[1]
FILLER = (
    "the pump housing holds the impeller while the motor drives the shaft and the seals keep "
    "the fluid inside the chamber under normal operating pressure and temperature "
)


def rec(
    chunk_id: str,
    text: str,
    *,
    doc: str | None = None,
    source: str = "docs",
    acl: tuple[str, ...] = ("*",),
) -> IndexRecord:
    doc = doc or f"d-{chunk_id}"
    return IndexRecord(chunk_id, doc, source, f"{doc}.md", text, acl=acl)


def ids(hits: list[ScoredId]) -> list[str]:
    return [h.chunk_id for h in hits]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[TantivyIndex]:
    ix = TantivyIndex(tmp_path / "kw")
    yield ix
    ix.close()


def test_stemming_finds_other_word_forms(index: TantivyIndex) -> None:
    index.upsert([rec("a", "The gateway was configured by the operator"), rec("b", "unrelated")])
    index.commit()
    assert ids(index.search("configuring gateways", 5, Filters())) == ["a"]


def test_identifier_ranks_long_doc_first_and_squashed_spelling_matches(
    index: TantivyIndex,
) -> None:
    many_ids = " ".join(f"PN-{i:04d}" for i in range(60))
    long_text = FILLER * 40 + f" replace part XR-4471 if it leaks {many_ids} " + FILLER * 40
    index.upsert(
        [
            rec("long", long_text),
            rec("xr", "XR series overview: the XR line has 4471 variants"),
            rec("near", "XR-4470 is the predecessor of the pump"),
            *[rec(f"n{i}", f"short note {i} about the pump and XR parts") for i in range(30)],
        ]
    )
    index.commit()
    assert ids(index.search("XR-4471", 5, Filters()))[0] == "long"
    assert ids(index.search("xr4471", 5, Filters()))[0] == "long"
    assert ids(index.search("how do I replace XR-4471 in the pump?", 5, Filters()))[0] == "long"


def test_an_option_finds_its_definition_not_every_mention_of_its_word(index: TantivyIndex) -> None:
    """`--file` was the word "file" alone, which a manual uses everywhere (grep's info manual:
    its definition ranked past the tenth hit)."""
    index.upsert([
        *[rec(f"f{i}", f"file file file list {i}") for i in range(20)],
        rec("opt", "‘-f FILE’ ‘--file=FILE’ Obtain patterns from FILE, one per line."),
    ])
    index.commit()
    assert ids(index.search("--file", 5, Filters()))[0] == "opt"


def test_upsert_is_idempotent(index: TantivyIndex) -> None:
    r = rec("a", "valve alpha")
    assert index.upsert([r, r]) == 2
    index.commit()
    index.upsert([rec("a", "valve beta")])
    index.commit()
    assert index.count() == 1
    assert index.chunk_ids() == {"a"}
    assert ids(index.search("beta", 5, Filters())) == ["a"]
    assert index.search("alpha", 5, Filters()) == []


def test_filters_acl_source_docs_exclude(index: TantivyIndex) -> None:
    index.upsert(
        [
            rec("pub", "valve manual", doc="p"),
            rec("bob", "valve secrets", doc="b", acl=("user:bob",)),
            rec("team", "valve plans", doc="t", acl=("group:eng", "user:ann")),
            rec("other", "valve other", doc="o", source="wiki"),
            rec("nobody", "valve hidden", doc="n", acl=()),
        ]
    )
    index.commit()

    def found(**kw: Any) -> set[str]:
        return set(ids(index.search("valve", 10, Filters(**kw))))

    assert found() == {"pub", "other"}
    assert found(principals=()) == {"pub", "other"}
    assert found(principals=("user:bob",)) == {"pub", "other", "bob"}
    assert found(principals=("group:eng", "user:bob")) == {"pub", "other", "bob", "team"}
    assert found(principals=("user:bob",), sources=("docs",)) == {"pub", "bob"}
    assert found(principals=("user:bob",), docs=("b.md", "o.md")) == {"bob", "other"}
    assert found(principals=("user:bob",), exclude_docs=("b.md",)) == {"pub", "other"}
    assert found(sources=()) == set()
    with pytest.raises(QueryError):
        index.search("valve", 10, Filters(principals=None))


def test_blank_or_syntax_only_query_returns_nothing(index: TantivyIndex) -> None:
    index.upsert([rec("a", "valve")])
    index.commit()
    assert index.search("   ", 5, Filters()) == []
    assert index.search('"(*)"', 5, Filters()) == []
    assert ids(index.search('valve AND (" OR ^~', 5, Filters())) == ["a"]
    with pytest.raises(QueryError):
        index.search("valve", 0, Filters())
    # words tantivy drops (40 bytes or more: a CJK sentence between two spaces is one) match
    # nothing; such a query alone was "could not be parsed: Only excluding terms given" (a 400)
    cjk = "我们需要检索所有相关的文档内容，然后把结果返回给用户界面显示"
    for query in (cjk, "x" * 41 + " " + "y" * 41):
        for level in ("chunk", "unit"):
            assert index.search(query, 5, Filters(), level=level, plain_weight=1.0, proximity_weight=0.5) == []
    assert ids(index.search("valve " + cjk, 5, Filters())) == ["a"]


def test_delete_docs_and_visibility_after_commit(index: TantivyIndex) -> None:
    index.upsert([rec("a1", "valve", doc="A"), rec("a2", "pump", doc="A"), rec("b", "valve")])
    index.commit()
    index.delete_docs(["A"])
    assert index.count() == 3  # not yet committed
    index.commit()
    assert index.count() == 1
    assert index.chunk_ids() == {"b"}
    assert ids(index.search("valve pump", 5, Filters())) == ["b"]


def test_reopen_after_close_and_uncommitted_rolled_back(tmp_path: Path) -> None:
    ix = TantivyIndex(tmp_path / "kw")
    ix.upsert([rec("a", "valve")])
    ix.commit()
    ix.upsert([rec("b", "valve")])
    ix.close()  # "b" was never committed
    ix.close()  # idempotent
    for use in (lambda: ix.upsert([rec("c", "valve")]), ix.count, ix.chunk_ids):
        with pytest.raises(IndexError_, match="closed"):
            use()
    again = TantivyIndex(tmp_path / "kw")
    assert again.chunk_ids() == {"a"}
    again.upsert([rec("c", "valve")])  # the writer lock was released by close()
    again.commit()
    assert again.count() == 2
    again.close()


def test_second_writer_is_a_clear_error_and_reader_sees_commits(tmp_path: Path) -> None:
    writer = TantivyIndex(tmp_path / "kw")
    writer.upsert([rec("a", "valve")])
    writer.commit()
    other = TantivyIndex(tmp_path / "kw")
    with pytest.raises(IndexError_, match="already has a writer"):
        other.upsert([rec("x", "valve")])
    reader = TantivyIndex(tmp_path / "kw", read_only=True)
    with pytest.raises(IndexError_, match="read-only"):
        reader.delete_docs(["d-a"])
    assert reader.chunk_ids() == {"a"}
    writer.upsert([rec("b", "valve")])
    writer.commit()
    reader.reload()
    assert set(ids(reader.search("valve", 5, Filters()))) == {"a", "b"}
    for ix in (reader, other, writer):
        ix.close()


def test_read_only_requires_existing_index_and_rejects_foreign_index(tmp_path: Path) -> None:
    with pytest.raises(IndexError_, match="no tantivy index"):
        TantivyIndex(tmp_path / "missing", read_only=True)
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("title")
    (tmp_path / "foreign").mkdir()
    tantivy.Index(sb.build(), str(tmp_path / "foreign"))
    with pytest.raises(IndexError_):
        TantivyIndex(tmp_path / "foreign", read_only=True)


_READER = textwrap.dedent(
    """
    import json, sys
    from connectors.errors import IndexError_
    from connectors.indexes.base import Filters
    from connectors.indexes.tantivy_index import TantivyIndex
    ix = TantivyIndex(sys.argv[1], read_only=True)
    out = {"hits": [h.chunk_id for h in ix.search("valve", 10, Filters())], "count": ix.count()}
    try:
        TantivyIndex(sys.argv[1]).upsert([])
        out["writer"] = "acquired"
    except IndexError_ as exc:
        out["writer"] = str(exc)
    print(json.dumps(out))
    """
)


def test_read_only_in_another_process_while_this_one_writes(tmp_path: Path) -> None:
    path = tmp_path / "kw"
    writer = TantivyIndex(path)
    writer.upsert([rec("a", "valve one"), rec("b", "valve two")])
    writer.commit()
    writer.upsert([rec("c", "valve three")])  # pending: holds the lock, invisible to readers
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", _READER, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert sorted(out["hits"]) == ["a", "b"]
    assert out["count"] == 2
    assert "already has a writer" in out["writer"]
    writer.commit()
    writer.close()


def test_unit_level_search_returns_units_by_their_first_chunk(index: TantivyIndex) -> None:
    index.upsert([
        IndexRecord("u1", "d1", "docs", "d1.md", "how to reset the pump", heading="Pump > Reset",
                    unit_text="how to reset the pump then prime the impeller and bleed the seals"),
        IndexRecord("u1b", "d1", "docs", "d1.md", "prime the impeller and bleed the seals", heading="Pump > Reset"),
        IndexRecord("u2", "d2", "docs", "d2.md", "the impeller of the fan", heading="Fan",
                    unit_text="the impeller of the fan"),
    ])
    index.commit()
    # the unit field holds a unit's whole text, so a query spread over its chunks finds it first
    assert ids(index.search("reset impeller seals", 5, Filters(), level="unit")) == ["u1", "u2"]
    # chunk level never returns unit-level matches of chunks that only carry the unit text
    assert set(ids(index.search("reset impeller seals", 5, Filters()))) == {"u1", "u1b", "u2"}
    # a heading weight lifts chunks whose heading path matches
    assert ids(index.search("fan", 5, Filters(), heading_weight=2.0))[0] == "u2"


def test_an_index_written_before_units_still_opens_writes_and_searches(tmp_path: Path) -> None:
    import tantivy

    sb = tantivy.SchemaBuilder()  # the schema before units: no heading, no unit field
    for name in ("chunk_id", "doc_id"):
        sb.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("source", "external_id", "acl", "ident"):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", tokenizer_name="en_stem", index_option="position")
    (tmp_path / "old").mkdir()
    tantivy.Index(sb.build(), str(tmp_path / "old"))
    with TantivyIndex(tmp_path / "old") as old:
        old.upsert([IndexRecord("a", "d", "docs", "d.md", "pump reset", heading="Pump", unit_text="pump reset")])
        old.commit()
        assert ids(old.search("pump", 5, Filters(), heading_weight=1.0)) == ["a"]
        assert old.search("pump", 5, Filters(), level="unit") == []


def write_pre_mail_index(path: Path) -> None:
    """An empty keyword index with the schema of the release before attribution lines were read
    (units and thread neighbours, no `author`, `sent` or `thread`)."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    for name in ("chunk_id", "doc_id"):
        sb.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("source", "external_id", "acl", "ident", "msgid", "reply_to"):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    for name, tok in (("text", "en_stem"), ("heading", "en_stem"), ("text_plain", "default"), ("unit", "en_stem"),
                      ("unit_plain", "default")):
        sb.add_text_field(name, tokenizer_name=tok, index_option="position")
    path.mkdir(parents=True)
    tantivy.Index(sb.build(), str(path))


def test_an_index_written_before_author_fields_opens_writes_and_finds_no_author(tmp_path: Path) -> None:
    from connectors.indexes import tantivy_index as mod

    write_pre_mail_index(tmp_path / "old")
    assert mod._MAIL_FIELDS == ("author", "sent", "thread")
    with TantivyIndex(tmp_path / "old") as old:
        old.upsert([IndexRecord("a", "d", "mail", "a.eml", "pump", author="Joe <j@x>", sent=("d:2002-08-22",))])
        old.commit()
        assert ids(old.search("pump", 5, Filters())) == ["a"]
        assert old.by_author(["joe"], None, [], [], "pump", 5, Filters()) == []
        assert old.missing_fields() == ["author", "sent", "thread"]  # what `bindery reindex` rebuilds for
    with TantivyIndex(tmp_path / "new") as new:
        assert new.missing_fields() == []


def test_thread_neighbours_find_parents_and_replies_under_the_filters(index: TantivyIndex) -> None:
    index.upsert([
        IndexRecord("p", "dp", "docs", "p.eml", "question", message_id="<p@x>"),
        IndexRecord("r1", "dr1", "docs", "r1.eml", "answer", message_id="<r1@x>", reply_to="<p@x>"),
        IndexRecord("r2", "dr2", "docs", "r2.eml", "secret answer", message_id="<r2@x>", reply_to="<p@x>",
                    acl=("alice",)),
        IndexRecord("o", "do", "docs", "o.eml", "other", message_id="<o@x>"),
    ])
    index.commit()
    # the parent of r1 by its id, the replies of p by their reply_to
    assert sorted(index.thread_neighbours(["<p@x>"], 10, Filters())) == ["p", "r1"]
    assert sorted(index.thread_neighbours(["<p@x>"], 10, Filters(principals=("alice",)))) == ["p", "r1", "r2"]
    assert index.thread_neighbours(["<p@x>"], 10, Filters(exclude_docs=("p.eml", "r1.eml"))) == []
    assert index.thread_neighbours([], 10, Filters()) == []
    with pytest.raises(QueryError):
        index.thread_neighbours(["<p@x>"], 10, Filters(principals=None))


def test_the_unstemmed_field_rewards_the_exact_word(index: TantivyIndex) -> None:
    # "configured" and "configuration" share the stem "configur": stemmed BM25 cannot tell them
    # apart; the unstemmed field scores the exact word the query used
    index.upsert([rec("exact", "the configured value"), rec("other", "the configuration value")])
    index.commit()
    stemmed = index.search("configured", 5, Filters())
    assert {h.chunk_id for h in stemmed} == {"exact", "other"}
    assert stemmed[0].score == pytest.approx(stemmed[1].score, rel=0.2)
    plain = index.search("configured", 5, Filters(), plain_weight=1.0)
    assert plain[0].chunk_id == "exact" and plain[0].score > plain[1].score * 1.5


def test_proximity_ranks_the_adjacent_words_first(index: TantivyIndex) -> None:
    # the same words, as often, in texts of the same length: bag-of-words BM25 ties them; the
    # proximity pairs ("started server", kept apart only by a stopword) favour where they stand
    # together, in the stemmed field ("starting servers") and at unit level too
    near = "backup job started the server then " + FILLER
    far = "backup job started then the " + FILLER + " server"
    index.upsert([
        IndexRecord("far", "d-far", "docs", "far.md", far, unit_text=far),
        IndexRecord("near", "d-near", "docs", "near.md", near, unit_text=near),
    ])
    index.commit()
    for level in ("chunk", "unit"):
        flat = index.search("starting the servers", 5, Filters(), level=level, plain_weight=1.0)
        assert flat[0].score == pytest.approx(flat[1].score)
        prox = index.search("starting the servers", 5, Filters(), level=level, plain_weight=1.0,
                            proximity_weight=0.5, proximity_slop=0)
        assert ids(prox) == ["near", "far"] and prox[0].score > prox[1].score * 1.1
        # the far hit keeps its bag-of-words score: the phrases only add
        assert {h.chunk_id: h.score for h in prox}["far"] == pytest.approx(flat[0].score)
    # one content word: no pairs, nothing added
    one = index.search("servers", 5, Filters(), proximity_weight=0.5)
    assert one[0].score == pytest.approx(index.search("servers", 5, Filters())[0].score)
