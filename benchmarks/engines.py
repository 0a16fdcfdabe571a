"""Engine and embedder benchmark (issue 10), every ratio measured inside ONE run.

    python -m benchmarks.engines ingest --corpus DIR [--work DIR] [--queries N]
    python -m benchmarks.engines latency --corpus DIR [--work DIR] [--queries N]
    python -m benchmarks.engines quality --set NAME=CORPUS_DIR:EVAL.jsonl [...] [--work DIR]

`ingest`: the whole pipeline with the default configuration (Qdrant Edge, embedder `auto`) on a
corpus, twice in fresh data dirs, alternating with sentence-transformers on torch fp32 encoding
the same final chunk texts (half before the second sync, half after; `encode`'s default batch of
32): pipeline chunks/s over raw torch-fp32 chunks/s, medians. Then `--queries` ACL-filtered
queries (the corpus's e-mail subjects or first lines) through the query service's own
retriever, and the per-step timings of its trace (embed, dense, sparse, fusion, payloads): p50/p95.

`latency`: only the query part of `ingest`, on one deployment (a sync first, resumed if an
earlier one was interrupted).

`quality`: per dev set, a generation embedded by torch fp32 and a reindex embedded by `auto` (the
same chunks; only the embedder differs), both evaluated: recall@10 / MRR@10 and their difference.
"""

from __future__ import annotations

import argparse
import contextlib
import email
import email.policy
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from connectors.config import BinderyConfig, EmbedConfig, load_config
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
        raise SystemExit(f"bindery {' '.join(args)} exited {code}: {out.get('error')}")
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3)


def _deployment(work: Path, corpus: Path, extra: dict[str, Any] | None = None) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    config = work / "bindery.yaml"
    conf: dict[str, Any] = {"data_dir": str(work / "data"),
                            "sources": [{"name": "corpus", "kind": "local", "root": str(corpus.resolve())}]}
    conf.update(extra or {})
    config.write_text(yaml.safe_dump(conf))
    return config


def _final_texts(cfg: BinderyConfig) -> tuple[GenerationRecord, list[str]]:
    from assets.embed_stage import final_texts
    from assets.runtime import Runtime

    store = DocumentStore(cfg.database_url)
    gen = Lifecycle(cfg, store).resolve("live")
    chunks = store.chunks_for([d.doc_id for d in store.documents()], gen.stage_versions["chunk"])
    texts = list(dict.fromkeys(final_texts(Runtime(cfg, store), chunks, gen.stage_versions["context"]).values()))
    return gen, texts


def _raw_rate(emb: Embedder, texts: list[str]) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(texts), 512):
        emb.embed_documents(texts[i : i + 512])
    return len(texts) / (time.perf_counter() - t0)


ST_DEFAULT_BATCH = 32  # SentenceTransformer.encode(batch_size=32)


def ingest(corpus: Path, work: Path, n_queries: int) -> dict[str, Any]:
    # the reference is sentence-transformers as a user calls it: torch fp32, `encode`'s own
    # default batch of 32 (not Bindery's tuned batch size)
    torch_fp32 = Embedder(EmbedConfig(backend="torch", precision="fp32", batch_size=ST_DEFAULT_BATCH))
    torch_fp32.embed_documents(["warm up"])  # models load outside every timed region
    configs = [_deployment(work / f"run{i}", corpus) for i in (1, 2)]
    default = Embedder(load_config(configs[0]).stages.embed, cache_dir=load_config(configs[0]).data_path / "models")
    default.embed_documents(["warm up"])
    rates, raw, syncs = [], [], []
    texts: list[str] = []
    for i, config in enumerate(configs):
        t0 = time.perf_counter()
        out = _cli(config, "sync")
        seconds = time.perf_counter() - t0
        _gen, texts = _final_texts(load_config(config))
        rates.append(len(texts) / seconds)
        syncs.append({"seconds": round(seconds, 1), "chunks": len(texts), "timings": out.get("timings")})
        half = texts[: len(texts) // 2] if i == 0 else texts[len(texts) // 2 :]
        raw.append(_raw_rate(torch_fp32, half))
    result: dict[str, Any] = {
        "corpus": str(corpus), "embedder": default.id, "backend": default.cfg.backend,
        "precision": default.cfg.precision, "syncs": syncs,
        "pipeline_chunks_per_s": [round(r, 2) for r in rates],
        "raw_torch_fp32_chunks_per_s": [round(r, 2) for r in raw],
        "pipeline_over_raw_torch_fp32": round(statistics.median(rates) / statistics.median(raw), 3),
    }
    cfg = load_config(configs[0])
    result["queries"] = query_timings(cfg, _queries(corpus, n_queries))
    return result


def _queries(corpus: Path, n: int) -> list[str]:
    """Realistic queries: e-mail subjects (without Re:/Fwd:), else a file's first line."""
    out: list[str] = []
    for p in sorted(corpus.rglob("*")):
        if len(out) >= n or not p.is_file():
            continue
        q = ""
        if p.suffix == ".eml":
            msg = email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
            q = str(msg.get("subject") or "")
            while q.lower().startswith(("re:", "fwd:", "fw:")):
                q = q.split(":", 1)[1].strip()
        else:
            q = p.read_text(errors="ignore").strip().splitlines()[0] if p.stat().st_size else ""
        q = " ".join(q.split())[:200]
        if len(q) > 8 and q not in out:
            out.append(q)
    return out


def query_timings(cfg: BinderyConfig, queries: list[str]) -> dict[str, Any]:
    """Per-step p50/p95 of the service's own trace over ACL-filtered queries (warm, 2 rounds)."""
    from query_service.retrieval import GenerationRetriever, make_filters

    store = DocumentStore(cfg.database_url)
    gen = Lifecycle(cfg, store).resolve("live")
    r = GenerationRetriever(cfg, gen)
    filters = make_filters(["alice", "ops-team"])  # every query is ACL-filtered, as in production
    steps: dict[str, list[float]] = {}
    try:
        for q in queries[:10]:
            r.search(q, 10, filters)
        for _ in range(2):
            for q in queries:
                for k, v in r.search(q, 10, filters).trace["timings"].items():
                    steps.setdefault(k, []).append(v)
    finally:
        r.close()
    out: dict[str, Any] = {"queries": len(queries), "generation": gen.name}
    for k, xs in steps.items():
        out[k] = {"p50": _pct(xs, 0.5), "p95": _pct(xs, 0.95)}
    if "dense_ms" in steps and "embed_ms" in steps:
        out["dense_p50_over_embed_p50"] = round(out["dense_ms"]["p50"] / out["embed_ms"]["p50"], 3)
    return out


def latency(corpus: Path, work: Path, n_queries: int) -> dict[str, Any]:
    config = _deployment(work, corpus)
    t0 = time.perf_counter()
    out = _cli(config, "sync")
    cfg = load_config(config)
    _gen, texts = _final_texts(cfg)
    return {"corpus": str(corpus), "chunks": len(texts), "sync_s": round(time.perf_counter() - t0, 1),
            "sync_timings": out.get("timings"), "queries": query_timings(cfg, _queries(corpus, n_queries))}


def quality(sets: list[str], work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in sets:
        name, rest = spec.split("=", 1)
        corpus, queries = rest.rsplit(":", 1)
        config = _deployment(work / name, Path(corpus), {
            "gate": {"queries": str(Path(queries).resolve())},
            "stages": {"embed": {"backend": "torch", "precision": "fp32"}}})
        _cli(config, "sync")
        base = _cli(config, "eval")
        conf = yaml.safe_load(config.read_text())
        conf["stages"]["embed"] = {"backend": "auto", "precision": "auto"}
        config.write_text(yaml.safe_dump(conf))
        cand = _cli(config, "reindex")
        new = _cli(config, "eval", "--generation", "candidate")
        emb = Embedder(load_config(config).stages.embed)
        out[name] = {
            "cases": base["cases"], "auto_resolves_to": f"{emb.cfg.backend} {emb.cfg.precision}",
            "torch_fp32": {k: base["metrics"][k] for k in ("recall@10", "mrr@10")},
            "auto": {k: new["metrics"][k] for k in ("recall@10", "mrr@10")},
            "recall@10_diff": round(new["metrics"]["recall@10"] - base["metrics"]["recall@10"], 4),
            "mrr@10_diff": round(new["metrics"]["mrr@10"] - base["metrics"]["mrr@10"], 4),
            "reindex_recomputed": cand.get("recomputed"),
        }
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ingest")
    s.add_argument("--corpus", type=Path, required=True)
    s.add_argument("--work", type=Path, default=Path("bench-out/engines-ingest"))
    s.add_argument("--queries", type=int, default=200)
    s = sub.add_parser("latency")
    s.add_argument("--corpus", type=Path, required=True)
    s.add_argument("--work", type=Path, default=Path("bench-out/engines-latency"))
    s.add_argument("--queries", type=int, default=200)
    s = sub.add_parser("quality")
    s.add_argument("--set", action="append", required=True, help="NAME=CORPUS_DIR:EVAL.jsonl")
    s.add_argument("--work", type=Path, default=Path("bench-out/engines-quality"))
    a = p.parse_args()
    if a.cmd == "ingest":
        result = ingest(a.corpus, a.work, a.queries)
    elif a.cmd == "latency":
        result = latency(a.corpus, a.work, a.queries)
    else:
        result = quality(a.set, a.work)
    a.work.mkdir(parents=True, exist_ok=True)
    (a.work / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
