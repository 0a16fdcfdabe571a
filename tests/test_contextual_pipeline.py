"""The Anthropic contextualiser inside the real pipeline (against the local stub that follows
the Messages API): prefixes are cached by content, so re-runs and embedder changes make no
LLM calls, and a provider outage dead-letters documents without sinking the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.anthropic_stub import AnthropicStub
from tests.bindery_fixture import DOCS, Deployment

pytestmark = pytest.mark.slow


def test_prefixes_come_from_the_llm_once_and_survive_an_embedder_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicStub(api_key="sk-test") as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        dep = Deployment(tmp_path, stages={"context": {"provider": "anthropic", "base_url": stub.base_url,
                                                        "concurrency": 2}})
        first = dep.cli("sync")
        calls = len(stub.message_requests)
        assert calls == first["recomputed"]["context"] >= len(DOCS)
        hit = dep.cli("query", "ERR-0x1F", "-k", "1")["hits"][0]
        assert hit["doc"] == "ops/errors.html"

        assert dep.cli("sync")["recomputed"]["context"] == 0
        dep.set_stage("embed", document_prefix="passage: ", query_prefix="query: ")
        out = dep.cli("reindex")
        assert out["recomputed"]["context"] == 0 and out["recomputed"]["chunk"] == 0 and out["recomputed"]["embed"] > 0
        assert len(stub.message_requests) == calls  # no new LLM calls


def test_a_provider_outage_dead_letters_documents_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicStub(api_key="sk-test") as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        dep = Deployment(tmp_path, stages={"context": {"provider": "anthropic", "base_url": stub.base_url}})
        stub.fail(500, times=1000, match="heartbeat")  # every call about the error-code page fails
        out = dep.cli("sync")
        assert out["errors"] == {}
        dlq = dep.cli("dlq")
        assert [(d["doc"], d["stage"]) for d in dlq] == [("ops/errors.html", "context")]
        assert all(h["doc"] != "ops/errors.html" for h in dep.cli("query", "ERR-0x1F heartbeat", "-k", "10")["hits"])
        stub.clear_failures()
        dep.cli("sync")
        assert dep.cli("dlq") == []
        assert dep.cli("query", "ERR-0x1F", "-k", "1")["hits"][0]["doc"] == "ops/errors.html"


def test_a_rejected_key_fails_the_sync_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9: with a key the provider rejects, the sync used to dead-letter every document
    and exit 0 with no errors. A provider-wide failure is a run failure with its reason."""
    with AnthropicStub(api_key="sk-test") as stub:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-revoked")
        dep = Deployment(tmp_path, stages={"context": {"provider": "anthropic", "base_url": stub.base_url}})
        out = dep.cli("sync", expect=1)
        assert "401" in out["errors"]["docs"] and "ANTHROPIC_API_KEY" in out["errors"]["docs"]
        assert len(stub.message_requests) == 1  # it stopped at the first refusal
        assert [d for d in dep.cli("dlq") if d["stage"] == "context"] == []  # not N document failures
        status = dep.cli("status")
        assert "401" in status["sources"]["docs"]["last_error"] and status["live"] is None
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        assert dep.cli("sync")["errors"] == {}
        assert dep.cli("query", "ERR-0x1F", "-k", "1")["hits"][0]["doc"] == "ops/errors.html"
