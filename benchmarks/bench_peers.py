"""Bindery against LlamaIndex on the same corpus and the same model, in one run (`make bench-peers`).

    python -m benchmarks.bench_peers --peer-python .venv-peers/bin/python --corpus DIR --queries EVAL.jsonl
        [--repeats 3] [--work DIR]

Alternates the two systems (Bindery first on even rounds, LlamaIndex first on odd ones), each
round in a fresh data dir, and reports medians over the rounds:

- ingest docs/s: Bindery's first `bindery sync` (listing, parsing, chunking, contextual prefixes,
  embedding with its default backend, Qdrant Edge + tantivy, snapshot publish) against LlamaIndex's
  reader + IngestionPipeline + VectorStoreIndex (benchmarks/peers/llamaindex_pipeline.py); both
  with the model loaded beforehand;
- no-op resync seconds: a second `bindery sync` against a second pipeline run over a re-read
  corpus with the docstore attached;
- recall@10 / MRR@10 on the eval set, both scored by Bindery's own metrics (evals.metrics):
  Bindery through `bindery eval` (hybrid, as served), LlamaIndex from its retriever's top 50.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.engines import _cli, _deployment
from connectors.config import load_config
from connectors.embedder import Embedder
from connectors.store import DocumentStore
from evals.evalset import load_eval_set
from evals.metrics import Hit, score_case
from evals.runner import EvalReport


def bindery_round(corpus: Path, queries: Path, work: Path, evaluate: bool) -> dict[str, Any]:
    config = _deployment(work, corpus, {"gate": {"queries": str(queries.resolve())}})
    cfg = load_config(config)
    Embedder(cfg.stages.embed, cache_dir=cfg.data_path / "models").embed_documents(["warm up"])
    t0 = time.perf_counter()
    _cli(config, "sync")
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    noop = _cli(config, "sync")
    noop_s = time.perf_counter() - t0
    counts = DocumentStore(cfg.database_url).counts()
    out: dict[str, Any] = {"documents": counts["documents"], "ingest_s": ingest_s,
                           "noop_s": noop_s, "noop_recomputed": noop.get("recomputed")}
    if evaluate:
        out["metrics"] = _cli(config, "eval")["metrics"]
    return out


def llamaindex_round(python: str, corpus: Path, queries: Path, work: Path, evaluate: bool) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    out_file = work / "llamaindex.json"
    script = Path(__file__).parent / "peers" / "llamaindex_pipeline.py"
    subprocess.run([python, str(script), "--corpus", str(corpus), "--queries", str(queries), "--out", str(out_file)],
                   check=True)
    res = json.loads(out_file.read_text())
    out = {k: res[k] for k in ("documents", "nodes", "ingest_s", "noop_s", "noop_nodes")}
    if evaluate:
        per_case = []
        for case in load_eval_set(queries):
            hits = [Hit(h["doc"], h["text"]) for h in res["results"].get(case.id, [])
                    if h["doc"] not in case.exclude_docs]
            per_case.append(score_case(case, hits))
        out["metrics"] = EvalReport.from_cases(per_case).metrics
    return out


def run(peer_python: str, corpus: Path, queries: Path, work: Path, repeats: int) -> dict[str, Any]:
    rounds: dict[str, list[dict[str, Any]]] = {"bindery": [], "llamaindex": []}
    for r in range(repeats):
        order = ["bindery", "llamaindex"] if r % 2 == 0 else ["llamaindex", "bindery"]
        for system in order:
            d = work / f"{system}-{r}"
            shutil.rmtree(d, ignore_errors=True)  # a data dir left by an earlier run would make the sync a no-op
            res = (bindery_round(corpus, queries, d, r == 0) if system == "bindery"
                   else llamaindex_round(peer_python, corpus, queries, d, r == 0))
            print(f"round {r} {system}: { {k: v for k, v in res.items() if k != 'metrics'} }", file=sys.stderr,
                  flush=True)
            rounds[system].append(res)
    summary: dict[str, Any] = {"corpus": str(corpus), "queries": str(queries), "repeats": repeats}
    for system, rs in rounds.items():
        docs = rs[0]["documents"]
        summary[system] = {
            "documents": docs,
            "ingest_docs_per_s": round(statistics.median(docs / x["ingest_s"] for x in rs), 3),
            "noop_resync_s": round(statistics.median(x["noop_s"] for x in rs), 3),
            "recall@10": round(rs[0]["metrics"]["recall@10"], 4), "mrr@10": round(rs[0]["metrics"]["mrr@10"], 4),
            "rounds": rs,
        }
    summary["docs_per_s_ratio"] = round(summary["bindery"]["ingest_docs_per_s"]
                                        / summary["llamaindex"]["ingest_docs_per_s"], 3)
    return summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-python", required=True)
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--queries", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", type=Path, default=Path("bench-out/peers"))
    a = p.parse_args()
    res = run(a.peer_python, a.corpus, a.queries, a.work, a.repeats)
    a.work.mkdir(parents=True, exist_ok=True)
    (a.work / "result.json").write_text(json.dumps(res, indent=2))
    print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk != "rounds"} if isinstance(v, dict) else v)
                      for k, v in res.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
