"""The OpenVINO runner of connectors.embedder: a sentence-transformers model folder run on the
`openvino` runtime alone.

Why not sentence-transformers' own `backend="openvino"`: it needs optimum-intel, which pins an
older transformers and pulls a torchvision that does not match the CPU torch. This runner needs
neither. The transformer is converted once from the folder's own weights (`openvino.convert_model`
on the PyTorch module, no network) and saved as OpenVINO IR under `cache_dir`, keyed by the
weights and the runtime version; later loads read the IR and never import torch. Text goes
through the model's own `tokenizer.json` (the `tokenizers` library), truncated to the folder's
`max_seq_length` as sentence-transformers does, then the folder's pooling (mean or CLS) and, when
asked, L2 normalisation, in float32.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from tokenizers import Encoding, Tokenizer

from connectors.errors import ConfigError
from connectors.identity import short_hash

# `import openvino` imports its model converter, which sends a usage event to Google Analytics
# from a forked child (a DNS lookup, up to 3 s waited for where DNS hangs) and writes a client id
# and a counter under ~/intel (an operator pass, with strace). It falls back to its own no-op
# stub where the `openvino_telemetry` package cannot be imported: so here it cannot. Bindery
# never reaches the network at run time.
sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
import openvino as ov  # noqa: E402

__all__ = ["OpenVinoRunner"]

_PRECISION_HINT = {"fp32": "f32", "bf16": "bf16"}


def _pooling_mode(folder: Path) -> str:
    """'mean' or 'cls', from the folder's Pooling module config."""
    modules = json.loads((folder / "modules.json").read_text()) if (folder / "modules.json").exists() else []
    pool = next((m for m in modules if m.get("type", "").endswith("Pooling")), None)
    if pool is None:
        return "mean"
    conf = json.loads((folder / pool["path"] / "config.json").read_text())
    if conf.get("pooling_mode_mean_tokens"):
        return "mean"
    if conf.get("pooling_mode_cls_token"):
        return "cls"
    raise ConfigError(f"{folder}: the openvino backend supports mean or CLS pooling only")


def _max_seq_length(folder: Path) -> int:
    st = folder / "sentence_bert_config.json"
    if st.exists():
        return int(json.loads(st.read_text()).get("max_seq_length", 512))
    return int(json.loads((folder / "config.json").read_text()).get("max_position_embeddings", 512))


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bindery" / "models"


def _materialise(target: Path, fill: Callable[[Path], object]) -> None:
    """Create `target` atomically: fill a temporary sibling, then rename it into place (a
    concurrent process's finished copy wins; both are identical)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        fill(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "model.xml").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _ir_path(folder: Path, cache_dir: Path) -> Path:
    """The IR for these weights and this runtime under `cache_dir` (the data dir's models/).

    Converting costs ~10-20 s, so the first conversion on a machine also lands in the user's
    cache (~/.cache/bindery/models) and later data dirs copy it from there; conversion is
    deterministic, so the copies are the same model."""
    weights = sorted(p for p in folder.iterdir() if p.suffix in {".safetensors", ".bin"})
    key = short_hash([ov.get_version(), [(p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in weights]], 12)
    name = f"{folder.name}-{key}"
    target = cache_dir / name
    if (target / "model.xml").exists():
        return target / "model.xml"
    shared = _user_cache() / name
    def convert(d: Path) -> None:
        ov.save_model(_convert(folder), str(d / "model.xml"), compress_to_fp16=False)

    try:
        if not (shared / "model.xml").exists():
            _materialise(shared, convert)
        _materialise(target, lambda d: shutil.copytree(shared, d, dirs_exist_ok=True))
    except OSError:  # no writable user cache: convert straight into the data dir
        _materialise(target, convert)
    return target / "model.xml"


def _convert(folder: Path) -> ov.Model:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    model = AutoModel.from_pretrained(str(folder))
    model.eval()
    ids = torch.ones((2, 16), dtype=torch.long)
    example = {"input_ids": ids, "attention_mask": ids, "token_type_ids": torch.zeros_like(ids)}
    # Tracing warns that BERT's padding-mask shape checks become constants: they compare a length
    # with itself, so they hold for every shape (the vectors match sentence-transformers).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ov.convert_model(model, example_input=example)


def _compiled_cache(ir: Path) -> Path | None:
    """Where OpenVINO keeps compiled blobs of `ir`: the user cache (shared by every data dir on
    the machine), else beside the IR in the data dir, else nowhere (read-only both).

    Compiling for the CPU costs ~0.35 s per hint (latency for queries, throughput for bulk),
    paid by every new process, a `bindery query` or a query service start among them; with the
    cache, loading the model and its first compile take ~0.1 s and the second compile reuses the
    same blob (one of ~90 MB here). Blobs are keyed by model, device and runtime version, and
    one that fails to import is compiled again, so a stale or half-written blob costs time,
    never vectors."""
    for folder in (_user_cache() / ir.parent.name / "compiled", ir.parent / "compiled"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    return None


@contextmanager
def _cache_lock(blobs: Path | None) -> Iterator[None]:
    """Hold the compiled-blob folder for one compile, across processes.

    OpenVINO writes a blob in place while it compiles, and the parallel processes of a test run
    or of several workers start at once on an empty cache: the runtime of one removed and
    re-permissioned the blob another was still writing, and raised ("filesystem error: cannot
    set permissions: No such file or directory"; a failed fresh-machine CI run). Under this lock a
    compile either finds a finished blob or writes one no other process touches meanwhile; a
    compile takes ~0.35 s and an import ~0.1 s, so waiting is cheap. A folder without flock means
    no waiting."""
    if blobs is None:
        yield
        return
    try:
        handle = open(blobs / ".lock", "a+b")  # noqa: SIM115 - closed below, after the unlock
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        handle.close()  # closing the file releases the lock


class OpenVinoRunner:
    """Embeds with an OpenVINO-compiled copy of a sentence-transformers model folder."""

    def __init__(self, model_path: str, precision: str, cache_dir: Path):
        folder = Path(model_path)
        if not (folder / "tokenizer.json").exists():
            raise ConfigError(f"the openvino backend needs a local model folder with tokenizer.json: {model_path}")
        if precision not in _PRECISION_HINT:
            raise ConfigError(f"the openvino backend runs fp32 or bf16, not {precision}")
        self.max_seq_length = _max_seq_length(folder)
        self.pooling = _pooling_mode(folder)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.tokenizer.no_padding()  # padded per batch in `_feed`: the longest text, rounded up to 16
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        self._props: dict[str, object] = {"INFERENCE_PRECISION_HINT": _PRECISION_HINT[precision]}
        if os.environ.get("BINDERY_OV_THREADS"):  # a worker held to N cores (benchmarks.shard_fanout)
            self._props["INFERENCE_NUM_THREADS"] = int(os.environ["BINDERY_OV_THREADS"])
        self._core = ov.Core()
        ir = _ir_path(folder, cache_dir)
        self._blobs = _compiled_cache(ir)
        if self._blobs is not None:
            self._core.set_property({"CACHE_DIR": str(self._blobs)})
        self._model = self._core.read_model(str(ir))
        compiled = self._compile("LATENCY")
        self.request = compiled.create_infer_request()
        self._lock = threading.Lock()  # one infer request: concurrent queries take turns
        self._queue: ov.AsyncInferQueue | None = None  # the bulk path, compiled on first use
        self._bulk_lock = threading.Lock()
        self.inputs = {i.get_any_name() for i in compiled.inputs}
        self.dim = int(compiled.outputs[0].get_partial_shape()[2].get_length())

    def _compile(self, hint: str) -> ov.CompiledModel:
        """The model compiled for the CPU with a performance hint, through the blob cache.

        A blob the runtime cannot import (one left half-written by a process that was killed
        while writing it) makes some runtime versions raise rather than compile: then it is
        compiled again without the cache, which costs ~0.35 s and changes no vector."""
        props = {**self._props, "PERFORMANCE_HINT": hint}
        with _cache_lock(self._blobs):
            try:
                return self._core.compile_model(self._model, "CPU", props)
            except RuntimeError:
                if self._blobs is None:
                    raise
        return ov.Core().compile_model(self._model, "CPU", props)

    def encode(self, texts: list[str], batch_size: int, normalize: bool) -> np.ndarray:
        return self.encode_counted(texts, batch_size, normalize)[0]

    def encode_counted(self, texts: list[str], batch_size: int, normalize: bool) -> tuple[np.ndarray, int | None]:
        """Vectors in input order; texts are batched by length (as sentence-transformers does)
        so little compute goes to padding.

        One batch (a query) runs on the latency-compiled request. More go through a
        throughput-compiled copy with several requests in flight (`_bulk`): on these 2-core
        machines that embedded mail chunks ~13 % faster, with the same vectors (cosine >= 0.99999)."""
        encs = self.tokenizer.encode_batch_fast(texts)  # no character offsets: not needed here
        truncated = sum(1 for e in encs if e.overflowing)  # what truncation at max_seq_length cut
        order = np.argsort([-len(e.ids) for e in encs], kind="stable")
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if len(batches) > 1:
            self._bulk(encs, batches, out)
        elif batches:
            idx = batches[0]
            feed, mask = self._feed([encs[j].ids for j in idx], [encs[j].type_ids for j in idx])
            with self._lock:
                out[idx] = self._pool(self.request.infer(feed)[0], mask)
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out, truncated

    def _bulk(self, encs: list[Encoding], batches: list[np.ndarray], out: np.ndarray) -> None:
        with self._bulk_lock:
            if self._queue is None:
                compiled = self._compile("THROUGHPUT")
                # two requests per stream: one infers while the next batch is fed and the last
                # pooled, so no stream waits on the interpreter (2-3 % on 900 redis chunks)
                self._queue = ov.AsyncInferQueue(compiled,
                                                 2 * compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
            queue = self._queue
            finished: list[int] = []
            failures: list[BaseException] = []

            def done(request: ov.InferRequest, job: tuple[np.ndarray, np.ndarray]) -> None:
                idx, mask = job  # pooled at once: the request's output is reused by the next batch
                try:
                    out[idx] = self._pool(request.get_output_tensor(0).data, mask)
                    finished.append(len(idx))
                except BaseException as e:  # raised on the runtime's thread: carried back below
                    failures.append(e)

            queue.set_callback(done)
            try:
                for idx in batches:
                    feed, mask = self._feed([encs[j].ids for j in idx], [encs[j].type_ids for j in idx])
                    queue.start_async(feed, (idx, mask))
            finally:
                # also when Ctrl-C lands between two batches: requests left in flight would call
                # `done` from the runtime's threads while the interpreter shuts down, and the
                # process aborted ("FATAL: exception not rethrown", exit 134) instead of exiting 130
                queue.wait_all()
            if failures:
                raise failures[0]
            # `out` is uninitialised memory: a batch that never came back must not pass as vectors
            if sum(finished) != len(out):
                raise RuntimeError(f"openvino returned {sum(finished)} of {len(out)} vectors")

    def _feed(self, ids: list[list[int]], types: list[list[int]]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        # widths rounded up to a multiple of 16 (never past the window): AMX's bf16 tiles work in
        # 16-row blocks. On a CPU with AMX, 4 alternating runs: 901 redis chunks 3.72 -> 3.49 s,
        # 669 e-mail chunks 2.91 -> 2.72 s (a multiple of 32 gained less); neutral on an AMD CPU
        # with avx512-bf16 only (10.48 vs 10.54 s). Pads are masked out of attention and pooling,
        # so vectors move only by bf16 rounding (cosine >= 0.99999 to the unpadded): same embedder_id.
        width = min(-(-max(len(x) for x in ids) // 16) * 16, self.max_seq_length)
        input_ids = np.full((len(ids), width), self.pad_id, dtype=np.int64)
        type_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, (x, t) in enumerate(zip(ids, types, strict=True)):
            input_ids[r, : len(x)] = x
            type_ids[r, : len(t)] = t
            mask[r, : len(x)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": type_ids}
        return {k: v for k, v in feed.items() if k in self.inputs}, mask

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Pooled vectors of one batch, copied out of `hidden` (the request's reused buffer).

        Mean pooling is one batched matrix product (mask row times hidden states), not a
        masked copy of the whole batch summed: ~6x less time in the callback, which holds the
        interpreter while the other requests infer; the sums differ by float rounding (~1e-7)."""
        if self.pooling == "cls":
            return np.array(hidden[:, 0], dtype=np.float32)
        m = mask.astype(np.float32)
        sums = np.matmul(m[:, None, :], np.asarray(hidden, dtype=np.float32))[:, 0]
        pooled: np.ndarray = sums / np.maximum(m.sum(axis=1, keepdims=True), 1e-9)
        return pooled
