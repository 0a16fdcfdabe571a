"""The Dagster resources: one per outside system the stages reach, plus the configuration.

    bindery         BinderyConfigResource     bindery.yaml (the path through resource config:
                                              `EnvVar("BINDERY_CONFIG")` in the code location,
                                              never the environment at import time)
    store           DocumentStoreResource     the document store (SQLite or PostgreSQL)
    vector_index    VectorIndexResource       generations' vector indexes (Qdrant Edge, local, server)
    keyword_index   KeywordIndexResource      generations' keyword indexes (tantivy, Elasticsearch)
    embedder        EmbedderResource          the embedding model, per recorded embed configuration
    contextualiser  ContextualiserResource    contextual prefixes (offline, Anthropic, none)

Each system resource reads its settings from the configuration resource it holds, so a
deployment swaps an engine through `backends:` / `stages:` in bindery.yaml, and a test swaps a
whole system by binding another resource to its key (`orchestration.definitions.resources`
wires the defaults). Assets name the resources they use, so the UI shows which asset touches
which system. `runtime(...)` turns them into the `Runtime` the stage functions take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import PrivateAttr

from assets.runtime import Runtime, open_contextualiser, open_embedder
from connectors.config import BinderyConfig, ContextConfig, EmbedConfig, load_config
from connectors.errors import ConfigError
from connectors.generations import open_keyword_writer, open_vector_writer
from connectors.store import DocumentStore, GenerationRecord
from connectors.store.ownership import open_store

if TYPE_CHECKING:
    from connectors.contextualizers import Contextualizer
    from connectors.embedder import Embedder
    from connectors.indexes.base import KeywordIndex, VectorIndex

__all__ = ["BinderyConfigResource", "ContextualiserResource", "DocumentStoreResource", "EmbedderResource",
           "KeywordIndexResource", "VectorIndexResource", "runtime"]


class BinderyConfigResource(dg.ConfigurableResource["BinderyConfigResource"]):
    """bindery.yaml, loaded once per run (Dagster builds resources afresh for every run)."""

    config_path: str

    _config: BinderyConfig | None = PrivateAttr(default=None)

    @property
    def config(self) -> BinderyConfig:
        """The configuration; a file that no longer loads (an edit while the UI runs) ends the
        step, sensor tick or schedule tick with its one-line reason as a `Failure`, not Dagster's
        wrapped traceback (an operator pass)."""
        if self._config is None:
            try:
                self._config = load_config(self.config_path)
            except ConfigError as e:
                raise dg.Failure(description=str(e), metadata={"error": type(e).__name__}) from None
        return self._config


class DocumentStoreResource(dg.ConfigurableResource["DocumentStoreResource"]):
    """The document store at `backends.database_url` (default: SQLite under data_dir)."""

    bindery: BinderyConfigResource

    _store: DocumentStore | None = PrivateAttr(default=None)

    @property
    def store(self) -> DocumentStore:
        if self._store is None:
            self._store = open_store(self.bindery.config)
        return self._store


class VectorIndexResource(dg.ConfigurableResource["VectorIndexResource"]):
    """Generations' vector indexes, each opened with the engine that built it (`backends.vector`
    for new ones: Qdrant Edge, Qdrant local mode, or a Qdrant server)."""

    bindery: BinderyConfigResource

    def open_writer(self, gen: GenerationRecord, dim: int | None) -> VectorIndex:
        return open_vector_writer(self.bindery.config, gen, dim)


class KeywordIndexResource(dg.ConfigurableResource["KeywordIndexResource"]):
    """Generations' keyword (BM25) indexes (`backends.keyword`: tantivy or Elasticsearch)."""

    bindery: BinderyConfigResource

    def open_writer(self, gen: GenerationRecord) -> KeywordIndex:
        return open_keyword_writer(self.bindery.config, gen)


class EmbedderResource(dg.ConfigurableResource["EmbedderResource"]):
    """The embedding model for a generation's recorded embed configuration (converted models
    cached under data_dir/models; the model loads only when something is embedded)."""

    bindery: BinderyConfigResource

    def embedder(self, config: EmbedConfig) -> Embedder:
        return open_embedder(self.bindery.config, config)


class ContextualiserResource(dg.ConfigurableResource["ContextualiserResource"]):
    """The contextual-prefix provider for a generation's recorded context configuration
    (`anthropic` reads its API key from the environment when it is made)."""

    def contextualiser(self, config: ContextConfig) -> Contextualizer:
        return open_contextualiser(config)


def runtime(bindery: BinderyConfigResource, store: DocumentStoreResource, *,
            embedder: EmbedderResource | None = None, contextualiser: ContextualiserResource | None = None,
            vector_index: VectorIndexResource | None = None,
            keyword_index: KeywordIndexResource | None = None) -> Runtime:
    """The `Runtime` a stage works through, over the resources its asset declared; reaching a
    system the asset did not declare is a programming error, never a silent default."""
    return Runtime(bindery.config, store.store,
                   embedders=embedder.embedder if embedder else _undeclared("embedder"),
                   contextualisers=contextualiser.contextualiser if contextualiser else _undeclared("contextualiser"),
                   vector_writers=vector_index.open_writer if vector_index else _undeclared("vector_index"),
                   keyword_writers=keyword_index.open_writer if keyword_index else _undeclared("keyword_index"))


def _undeclared(key: str) -> Callable[..., Any]:
    def refuse(*_: Any) -> Any:
        raise RuntimeError(f"this asset does not declare the `{key}` resource it tried to use")
    return refuse
