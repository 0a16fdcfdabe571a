"""Reindex benchmark: a chunker change rebuilt beside the live generation, under query load.

    python -m benchmarks.reindex --corpus DIR [--work DIR] [--max-tokens 160] [--seconds-idle 20]

1. syncs the corpus (skipped when --work already holds a synced deployment);
2. measures query latency against the live generation while idle;
3. changes `stages.chunk.max_tokens` and runs `bindery reindex` in a subprocess, querying the
   live generation all the while;
4. reports the reindex wall time, its peak RSS, what each stage recomputed versus reused
   (cache-hit share), and query latency p50/p95 idle versus during the build.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from connectors.config import load_config
from connectors.store import DocumentStore
from query_service.retrieval import LiveRetriever

QUERIES = ["battery life", "how to roll back firmware", "error code heartbeat", "safety stop distance",
           "configuration key payload", "office move", "incident postmortem", "install the dock"]


def _bindery(config: Path, *args: str) -> tuple[int, dict[str, Any]]:
    exe = Path(sys.executable).parent / "bindery"
    p = subprocess.run([str(exe), "--config", str(config), "--json", *args], capture_output=True, text=True)
    try:
        return p.returncode, json.loads(p.stdout or "{}")
    except json.JSONDecodeError:
        return p.returncode, {"stdout": p.stdout[-2000:], "stderr": p.stderr[-2000:]}


ERRORS: list[str] = []


def _load(retriever: LiveRetriever, stop: threading.Event, out: list[float]) -> None:
    i = 0
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            retriever.search(QUERIES[i % len(QUERIES)], 10)
        except Exception as e:
            ERRORS.append(repr(e))
        out.append((time.perf_counter() - t0) * 1000)
        i += 1
        time.sleep(0.05)


def _pcts(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"n": len(xs), "p50_ms": round(statistics.median(xs), 1),
            "p95_ms": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path("bench-out/reindex"))
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--seconds-idle", type=float, default=20)
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    config = a.work / "bindery.yaml"
    if not config.exists():
        config.write_text(yaml.safe_dump({"data_dir": str(a.work / "data"), "sources": [
            {"name": "bench", "kind": "local", "root": str(a.corpus.resolve())}]}))
    cfg = load_config(config)
    store = DocumentStore(cfg.database_url)
    result: dict[str, Any] = {}
    if store.get_binding() is None:
        t0 = time.perf_counter()
        code, first = _bindery(config, "sync")
        result["first_sync_s"] = round(time.perf_counter() - t0, 1)
        result["first_sync"] = {k: first.get(k) for k in ("recomputed", "sources", "errors")}
    retriever = LiveRetriever(cfg)
    idle: list[float] = []
    stop = threading.Event()
    th = threading.Thread(target=_load, args=(retriever, stop, idle))
    th.start()
    time.sleep(a.seconds_idle)
    stop.set()
    th.join()

    raw = yaml.safe_load(config.read_text())
    raw.setdefault("stages", {}).setdefault("chunk", {})["max_tokens"] = a.max_tokens
    config.write_text(yaml.safe_dump(raw))
    busy: list[float] = []
    stop = threading.Event()
    th = threading.Thread(target=_load, args=(retriever, stop, busy))
    th.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    code, re = _bindery(config, "reindex")
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    retriever.close()
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    docs = store.counts()["documents"]
    cand = store.get_generation(re["candidate"]) if re.get("candidate") else None
    chunks = cand.counts.get("chunks", 0) if cand else 0
    rc = re.get("recomputed", {})
    result.update({
        "documents": docs, "candidate_chunks": chunks, "reindex_exit": code, "reindex_s": round(wall, 1),
        "reindex_peak_rss_mb": round(max(peak_kb, before) / 1024, 1),
        "recomputed": rc,
        "cache_hit_share": {
            "parse": round(1 - rc.get("parse", 0) / docs, 3) if docs else None,
            "context": round(1 - rc.get("context", 0) / chunks, 3) if chunks else None,
            "embed": round(1 - rc.get("embed", 0) / chunks, 3) if chunks else None,
        },
        "query_idle": _pcts(idle), "query_during_reindex": _pcts(busy),
        "query_errors": len(ERRORS), "first_errors": ERRORS[:3],
    })
    (a.work / "reindex.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
