"""Ingestion and query benchmark, measured in ONE run so ratios survive a noisy machine.

    python -m benchmarks.ingest --corpus DIR [--queries FILE] [--work DIR] [--repeats N]

Reports:
- first sync wall time, chunks, and whole-pipeline throughput (chunks/s);
- raw throughput of the same embedding model on the same final chunk texts, same batch size
  (the model is loaded before either is timed); their ratio pipeline/raw;
- a second, no-op sync as a share of the first;
- eval metrics when a query file is given;
- query latency p50/p95 of the full hybrid search (query embedding included) and of the
  retrieval alone (query vectors precomputed), medians over repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import yaml

from connectors.config import load_config
from connectors.embedder import Embedder
from connectors.lifecycle import Lifecycle
from connectors.store import DocumentStore, GenerationRecord
from orchestration.cli import main as cli


def _cli(config: Path, *args: str) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli(["--config", str(config), "--json", *args])
    out: dict[str, Any] = json.loads(buf.getvalue() or "{}")
    if code != 0:
        print(f"bindery {' '.join(args)} exited {code}: {out.get('error')}", file=sys.stderr)
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(corpus: Path, queries: Path | None, work: Path, repeats: int) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    config = work / "bindery.yaml"
    conf: dict[str, Any] = {"data_dir": str(work / "data"),
                            "sources": [{"name": corpus.name, "kind": "local", "root": str(corpus.resolve())}]}
    if queries:
        conf["gate"] = {"queries": str(queries.resolve())}
    config.write_text(yaml.safe_dump(conf))
    cfg = load_config(config)
    warm = Embedder(cfg.stages.embed)
    warm.embed_documents(["warm up"])  # load the model outside every timed region

    t0 = time.perf_counter()
    first = _cli(config, "sync")
    t_first = time.perf_counter() - t0

    store = DocumentStore(cfg.database_url)
    gen = Lifecycle(cfg, store).resolve("live")
    from assets.embed_stage import final_texts
    from assets.runtime import Runtime

    rt = Runtime(cfg, store)
    chunks = store.chunks_for([d.doc_id for d in store.documents()], gen.stage_versions["chunk"])
    texts = list(dict.fromkeys(final_texts(rt, chunks, gen.stage_versions["context"]).values()))
    t0 = time.perf_counter()
    for i in range(0, len(texts), 512):
        warm.embed_documents(texts[i : i + 512])
    t_raw = time.perf_counter() - t0

    noop_times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        second = _cli(config, "sync")
        noop_times.append(time.perf_counter() - t0)
    t_noop = statistics.median(noop_times)

    result: dict[str, Any] = {
        "corpus": str(corpus), "documents": store.counts()["documents"], "chunks": len(chunks),
        "embedded_texts": len(texts), "dead_letters": store.counts()["dead_letters"],
        "first_sync_s": round(t_first, 2), "raw_embed_s": round(t_raw, 2),
        "pipeline_chunks_per_s": round(len(texts) / t_first, 2), "raw_chunks_per_s": round(len(texts) / t_raw, 2),
        "pipeline_over_raw": round(t_raw / t_first, 3),
        # The same ratio measured inside the sync itself (immune to load changing between the
        # two timed regions on a shared machine): model time / whole-pipeline time.
        "model_share_of_first_sync": round(first.get("timings", {}).get("embed_model", 0.0) / t_first, 3),
        "stage_seconds": first.get("timings"),
        "noop_sync_s": round(t_noop, 2), "noop_over_first": round(t_noop / t_first, 4),
        "noop_recomputed": second.get("recomputed"), "first_recomputed": first.get("recomputed"),
    }
    if queries:
        ev = _cli(config, "eval")
        result["eval"] = {"cases": ev.get("cases"), "metrics": ev.get("metrics")}
        result["latency"] = _latency(cfg, gen, queries, repeats)
    return result


def _latency(cfg: Any, gen: GenerationRecord, queries: Path, repeats: int) -> dict[str, float]:
    from evals.evalset import load_eval_set
    from query_service.retrieval import GenerationRetriever

    qs = [c.query for c in load_eval_set(queries)][:200]
    r = GenerationRetriever(cfg, gen)
    served = r.served
    vecs = {q: served.embedder.embed_query(q).tolist() for q in qs}  # as the service passes them
    from connectors.indexes.base import Filters

    full, bare = [], []
    for _ in range(max(1, repeats)):
        f_run, b_run = [], []
        for q in qs:
            t0 = time.perf_counter()
            r.search(q, 10)
            f_run.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            served.pair.vector.search(vecs[q], cfg.query.candidates, Filters())
            served.pair.keyword.search(q, cfg.query.candidates, Filters())
            b_run.append((time.perf_counter() - t0) * 1000)
        full.append((_pct(f_run, 0.5), _pct(f_run, 0.95)))
        bare.append((_pct(b_run, 0.5), _pct(b_run, 0.95)))
    r.close()
    return {"hybrid_with_embedding_p50_ms": round(statistics.median(x[0] for x in full), 2),
            "hybrid_with_embedding_p95_ms": round(statistics.median(x[1] for x in full), 2),
            "retrieval_only_p50_ms": round(statistics.median(x[0] for x in bare), 2),
            "retrieval_only_p95_ms": round(statistics.median(x[1] for x in bare), 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--queries", type=Path)
    p.add_argument("--work", type=Path)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    work = a.work or Path("bench-out") / f"{a.corpus.resolve().name}-{int(time.time())}"
    result = run(a.corpus, a.queries, work, a.repeats)
    (work / "bench.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
