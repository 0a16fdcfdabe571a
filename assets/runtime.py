"""What every stage needs: the configuration, the document store, the generation lifecycle
(`connectors.lifecycle`: which generations a run writes and maintains), and the outside systems
a stage calls — the embedder, the contextualiser, the vector and the keyword index.

Each outside system is reached through a factory the `Runtime` is given, defaulting to the one
the configuration names. The Dagster resources (`assets/resources.py`, one per system) hand in
theirs, so a deployment or a test replaces one system without touching the stages. The stage
configuration a factory receives is the one recorded on the generation being built
(`Generation.stages`), never silently the YAML file's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from connectors.config import BinderyConfig, ContextConfig, EmbedConfig
from connectors.generations import IndexPair, open_keyword_writer, open_vector_writer, writer_pair
from connectors.lifecycle import ACTIVE, RETAINED, Generation, Lifecycle, Target
from connectors.store import DocumentStore, GenerationRecord
from connectors.store.ownership import open_store

if TYPE_CHECKING:
    from connectors.contextualizers import Contextualizer
    from connectors.embedder import Embedder
    from connectors.indexes.base import KeywordIndex, VectorIndex

__all__ = ["ACTIVE", "RETAINED", "ContextualiserFactory", "EmbedderFactory", "Generation", "KeywordWriterFactory",
           "Runtime", "Target", "VectorWriterFactory", "open_contextualiser", "open_embedder"]

EmbedderFactory = Callable[[EmbedConfig], "Embedder"]
ContextualiserFactory = Callable[[ContextConfig], "Contextualizer"]
VectorWriterFactory = Callable[[GenerationRecord, "int | None"], "VectorIndex"]  # (generation, dim)
KeywordWriterFactory = Callable[[GenerationRecord], "KeywordIndex"]


class Runtime:
    def __init__(self, cfg: BinderyConfig, store: DocumentStore | None = None, *,
                 embedders: EmbedderFactory | None = None, contextualisers: ContextualiserFactory | None = None,
                 vector_writers: VectorWriterFactory | None = None,
                 keyword_writers: KeywordWriterFactory | None = None):
        self.cfg = cfg
        self.store = store or open_store(cfg)
        self.lifecycle = Lifecycle(cfg, self.store)
        self._embedders = embedders or (lambda config: open_embedder(cfg, config))
        self._contextualisers = contextualisers or open_contextualiser
        self._vector_writers = vector_writers or (lambda gen, dim: open_vector_writer(cfg, gen, dim))
        self._keyword_writers = keyword_writers or (lambda gen: open_keyword_writer(cfg, gen))

    def scoped(self, store: DocumentStore) -> Runtime:
        """The same configuration and outside systems over another view of the store (a
        shard's, `connectors.shards.ShardStore`)."""
        return Runtime(self.cfg, store, embedders=self._embedders, contextualisers=self._contextualisers,
                       vector_writers=self._vector_writers, keyword_writers=self._keyword_writers)

    def embedder(self, config: EmbedConfig) -> Embedder:
        """The embedder for a generation's recorded embed configuration (its model loads lazily)."""
        return self._embedders(config)

    def contextualiser(self, config: ContextConfig) -> Contextualizer:
        """The contextualiser for a generation's recorded context configuration."""
        return self._contextualisers(config)

    def open_writer(self, gen: GenerationRecord, dim: int | None) -> IndexPair:
        """A generation's working vector and keyword indexes, for writing (hold
        `connectors.generations.writer_lock` around their use)."""
        return writer_pair(gen, self._vector_writers(gen, dim), lambda: self._keyword_writers(gen))


def open_embedder(cfg: BinderyConfig, config: EmbedConfig) -> Embedder:
    """The configured embedder for `config` (converted models cached under data_dir/models)."""
    from connectors.embedder import Embedder

    return Embedder(config, cache_dir=cfg.data_path / "models")


def open_contextualiser(config: ContextConfig) -> Contextualizer:
    """The configured contextual-prefix provider for `config`."""
    from connectors.contextualizers import make_contextualizer

    return make_contextualizer(config)
