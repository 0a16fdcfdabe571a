"""What every stage needs: the configuration, the document store, and the generation lifecycle
(`connectors.lifecycle`: which generations a run writes and maintains).

Each generation is processed with the stage configuration recorded on it (`Generation.stages`),
not the one in the YAML file: changing `bindery.yaml` changes what the next *reindex* builds,
never silently the live index.
"""

from __future__ import annotations

from connectors.config import BinderyConfig
from connectors.lifecycle import ACTIVE, RETAINED, Generation, Lifecycle, Target
from connectors.store import DocumentStore

__all__ = ["ACTIVE", "RETAINED", "Generation", "Runtime", "Target"]


class Runtime:
    def __init__(self, cfg: BinderyConfig, store: DocumentStore | None = None):
        self.cfg = cfg
        self.store = store or DocumentStore(cfg.database_url)
        self.lifecycle = Lifecycle(cfg, self.store)
