"""Issue 8: what is indexed, how documents are cut, and how fused results rank documents.

Each test fails if a regression comes back: quoted history embedded/keyword-indexed again, a
short document split by its headings, one document taking two top-k slots, a stage version
keyed by a knob that changes nothing.
"""

from __future__ import annotations

import pytest

from assets.chunk_stage import chunk_rows
from assets.chunking import chunk_blocks
from assets.parsing import parse_document
from assets.parsing.types import Block
from connectors.config import ChunkConfig, ParseConfig, StageConfigs
from connectors.tokenizer import TokenCounter, get_tokenizer
from connectors.versions import stage_versions
from query_service.fusion import Fused, rrf
from query_service.retrieval import per_document
from tests.fixtures import docgen


@pytest.fixture(scope="module")
def tok() -> TokenCounter:
    return get_tokenizer("all-MiniLM-L6-v2")


def _reply_rows(cfg: ChunkConfig) -> list[dict]:
    r = parse_document(docgen.eml_alternative_with_quote(), "reply.eml", ParseConfig())
    parse = {"blocks": [b.to_dict() for b in r.blocks], "title": r.title}
    doc = {"doc_id": "d1", "content_hash": "h"}
    return chunk_rows(doc, parse, cfg, "chunk-x", "parse-x")


def test_quoted_history_is_neither_embedded_nor_keyword_indexed() -> None:
    rows = _reply_rows(ChunkConfig())
    assert rows, "the reply's own words must be indexed"
    # chunks feed both the embedder (embed_text) and BM25 (display_text + prefix)
    for row in rows:
        assert "QUOTEDTEXT" not in row["embed_text"] and "QUOTEDTEXT" not in row["display_text"]
        assert "wrote:" not in row["embed_text"]
    # the opt-in knob puts it back, so the test above really sees the quoted block
    assert any("QUOTEDTEXT" in row["embed_text"] for row in _reply_rows(ChunkConfig(index_side_text=True)))


def test_chunk_rows_store_token_counts() -> None:
    rows = _reply_rows(ChunkConfig())
    assert all(isinstance(row["tokens"], int) and row["tokens"] > 0 for row in rows)


SHORT_PAGE = [
    Block("title", "GETRANGE"),
    Block("heading", "Syntax", level=1),
    Block("paragraph", "GETRANGE key start end"),
    Block("heading", "Description", level=1),
    Block("paragraph", "Returns the substring of the string value stored at key."),
    Block("heading", "Examples", level=1),
    Block("paragraph", "SET mykey \"This is a string\"\nGETRANGE mykey 0 3"),
]


def test_short_document_stays_one_chunk(tok: TokenCounter) -> None:
    drafts = chunk_blocks(SHORT_PAGE, ChunkConfig(min_tokens=0), counter=tok)
    assert len(drafts) == 1
    assert "Syntax" in drafts[0].embed_text and "Examples" in drafts[0].embed_text
    split = chunk_blocks(SHORT_PAGE, ChunkConfig(min_tokens=0, keep_short_docs_whole=False), counter=tok)
    assert len(split) == 3


def test_long_document_still_splits_on_structure(tok: TokenCounter) -> None:
    long_text = " ".join(["retrieval quality depends on chunking"] * 60)
    blocks = [Block("title", "Guide"), Block("heading", "A", level=1), Block("paragraph", long_text),
              Block("heading", "B", level=1), Block("paragraph", long_text)]
    drafts = chunk_blocks(blocks, ChunkConfig(max_tokens=200, overlap_tokens=0), counter=tok)
    assert len(drafts) >= 2 and all(d.n_tokens <= 200 for d in drafts)


def test_one_document_never_takes_two_top_k_slots() -> None:
    fused = [Fused("a1", 0.03, {"d": 1}), Fused("a2", 0.029, {"d": 2}), Fused("b1", 0.028, {"d": 3})]
    payloads = {"a1": {"doc_id": "A"}, "a2": {"doc_id": "A"}, "b1": {"doc_id": "B"}}
    assert [f.chunk_id for f in per_document(fused, payloads, 1)] == ["a1", "b1"]
    assert [f.chunk_id for f in per_document(fused, payloads, 0)] == ["a1", "a2", "b1"]


def test_weighted_rrf_follows_the_weights() -> None:
    ranked = {"dense": ["x", "y"], "sparse": ["y", "x"]}
    assert rrf(ranked, k=60, weights={"dense": 2.0})[0].chunk_id == "x"
    assert rrf(ranked, k=60, weights={"sparse": 2.0})[0].chunk_id == "y"


def test_chunk_tokenizer_follows_the_embed_model() -> None:
    stages = StageConfigs.model_validate({"embed": {"model": "some/other-model"}})
    assert stages.chunk.tokenizer == "some/other-model"
    pinned = StageConfigs.model_validate({"chunk": {"tokenizer": "x"}, "embed": {"model": "y"}})
    assert pinned.chunk.tokenizer == "x"


def test_unused_parse_language_does_not_reparse() -> None:
    a = stage_versions(StageConfigs())
    b = stage_versions(StageConfigs.model_validate({"parse": {"language": "de"}}))
    assert a["parse"] == b["parse"] and a["chunk"] == b["chunk"]
    c = stage_versions(StageConfigs.model_validate({"parse": {"ocr": False}}))
    assert c["parse"] != a["parse"]


LIST_MESSAGE = (
    b"From: a@example.org\r\nTo: list@lists.example.org\r\nSubject: zlib build fails\r\n"
    b"Message-ID: <m2@example.org>\r\nIn-Reply-To: <m1@example.org>\r\n\r\n"
    b"The zlib build fails on OWNWORDS with a linker error.\r\n\r\n"
    b"On Thu, 3 Jan 2002, Bob wrote:\r\n> QUOTEDTEXT from the parent\r\n\r\n"
    b"-- \r\nAlice SIGNATURETEXT\r\n"
    b"_______________________________________________\r\nFoo mailing list\r\n"
    b"https://lists.example.org/listinfo/foo\r\n"
)


def test_signature_and_list_footer_are_side_text_not_indexed() -> None:
    r = parse_document(LIST_MESSAGE, "m2.eml", ParseConfig())
    side = [b for b in r.blocks if b.meta.get("side")]
    assert side and "SIGNATURETEXT" in side[0].text and "mailing list" in side[0].text  # kept for display
    parse = {"blocks": [b.to_dict() for b in r.blocks], "title": r.title}
    rows = chunk_rows({"doc_id": "d", "content_hash": "h"}, parse, ChunkConfig(), "c", "p")
    text = " ".join(row["embed_text"] for row in rows)
    assert "OWNWORDS" in text
    assert "SIGNATURETEXT" not in text and "listinfo" not in text and "QUOTEDTEXT" not in text


def test_pasted_message_query_loses_quotes_attribution_and_footer() -> None:
    from assets.parsing.email import strip_message_noise

    pasted = LIST_MESSAGE.decode().split("\r\n\r\n", 1)[1].replace("\r\n", "\n")
    cleaned = strip_message_noise(pasted)
    assert "OWNWORDS" in cleaned
    for noise in ("QUOTEDTEXT", "wrote:", "SIGNATURETEXT", "mailing list", "listinfo"):
        assert noise not in cleaned
    assert strip_message_noise("how do I unsubscribe from a mailing list?") == (
        "how do I unsubscribe from a mailing list?")
