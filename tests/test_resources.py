"""One Dagster resource per outside system: a test (or a deployment) replaces one system by
binding another resource to its key, and the stages reach it through the `Runtime` — here the
embedder and the contextualiser are swapped, so no model loads and no provider is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pytest
import sqlalchemy as sa
import yaml

from assets.pipeline import chunks, contextual_prefixes, embeddings, parsed_documents, source_listing
from assets.resources import DocumentStoreResource, runtime
from connectors.config import ContextConfig, EmbedConfig, load_config
from connectors.contextualizers import ChunkContext, DocumentContext, PrefixResult
from connectors.store import DocumentStore, GenerationRecord
from connectors.store import schema as t
from orchestration.definitions import resources


class _Vectors:
    id = "fake-embedder"
    max_seq_length = 256

    def __init__(self, calls: list[int]):
        self.calls = calls

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32)


EMBEDDED: list[int] = []
PREFIXED: list[str] = []


class FakeEmbedderResource(dg.ConfigurableResource["FakeEmbedderResource"]):
    def embedder(self, config: EmbedConfig) -> Any:
        return _Vectors(EMBEDDED)


class _Prefixes:
    provider_id = "fake"

    def contextualize(self, doc: DocumentContext, chunks: list[ChunkContext]) -> list[PrefixResult]:
        PREFIXED.append(doc.title or "")
        return [PrefixResult(f"from the fake: {doc.title}") for _ in chunks]


class FakeContextualiserResource(dg.ConfigurableResource["FakeContextualiserResource"]):
    def contextualiser(self, config: ContextConfig) -> Any:
        return _Prefixes()


def test_a_test_swaps_the_embedder_and_the_contextualiser_by_resource(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "heron.md").write_text("# Herons\n\nHerons wade in shallow water and stand still for hours.\n")
    config_path = tmp_path / "bindery.yaml"
    config_path.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"),
                                           "sources": [{"name": "docs", "kind": "local", "root": str(corpus)}]}))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("sources", ["docs"])
    EMBEDDED.clear()
    PREFIXED.clear()
    swapped = {**resources(str(config_path)), "embedder": FakeEmbedderResource(),
               "contextualiser": FakeContextualiserResource()}
    result = dg.materialize([source_listing, parsed_documents, chunks, contextual_prefixes, embeddings],
                            partition_key="docs", instance=instance, resources=swapped)
    assert result.success
    assert PREFIXED == ["Herons"] and sum(EMBEDDED) >= 1
    store = DocumentStore(load_config(str(config_path)).database_url)
    with store.engine.connect() as c:
        ids = {r[0] for r in c.execute(sa.select(t.embeddings.c.embedder_id))}
        prefixes = {r[0] for r in c.execute(sa.select(t.contexts.c.prefix))}
    assert ids == {"fake-embedder"} and prefixes == {"from the fake: Herons"}


def test_a_stage_cannot_reach_a_system_its_asset_did_not_declare(tmp_path: Path) -> None:
    config_path = tmp_path / "bindery.yaml"
    config_path.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "sources": []}))
    res = resources(str(config_path))
    with dg.build_resources({"bindery": res["bindery"], "store": res["store"]}) as built:
        store: DocumentStoreResource = built.store
        rt = runtime(built.bindery, store)
        with pytest.raises(RuntimeError, match="does not declare the `embedder` resource"):
            rt.embedder(rt.cfg.stages.embed)
        with pytest.raises(RuntimeError, match="`vector_index`"):
            rt.open_writer(GenerationRecord.unrecorded(1, "g1"), None)
