"""Shard fan-out benchmark: does a sharded backfill really spread over worker processes?

    python -m benchmarks.shard_fanout [--corpus ~/.cache/bench-corpora/redis_commands] [--shards 4]
        [--workers 1,2] [--work DIR]

For each worker count W, a fresh data directory is backfilled from the same corpus with
`shards: N`: the N shard partitions are dealt round-robin to W worker processes, each running
its partitions through the real `sync` job (orchestration.runs.Runner, as `bindery sync` does)
on the same document store, Dagster instance and indexes. Every worker is held to one core:
pinned with sched_setaffinity to its own CPU, OMP_NUM_THREADS=1, torch.set_num_threads(1), and
the OpenVINO embedder told to use one inference thread (BINDERY_OV_THREADS=1). The wall time
of the whole backfill (first process start to last exit, model loads included) is reported
per W, with the ratio to W=1. A benchmark, not a test: the machine's other load moves it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _worker(config: str, core: int, keys: list[str]) -> int:
    """One worker process: pinned to `core`, one model thread, runs `keys` in order."""
    os.sched_setaffinity(0, {core})
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from connectors.config import load_config
    from orchestration.runs import Runner

    runner = Runner(load_config(config))
    outcomes, _ = runner.run_sources("sync", keys)
    bad = [o.partition for o in outcomes if not o.success]
    print(json.dumps({"core": core, "keys": keys, "failed": bad}))
    return 1 if bad else 0


def _config(work: Path, corpus: Path, shards: int) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    path = work / "bindery.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(data), "sources": [
        {"name": "bench", "kind": "local", "root": str(corpus), "shards": shards}]}))
    return path


def _spawn(config: Path, core: int, keys: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "BINDERY_OV_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "benchmarks.shard_fanout", "--worker", str(config), str(core),
                             *keys], env=env, cwd=ROOT)


def backfill(work: Path, corpus: Path, shards: int, workers: int) -> float:
    """Seconds for a fresh `shards`-shard backfill dealt over `workers` pinned processes."""
    config = _config(work, corpus, shards)
    keys = [f"bench:shard-{k}-of-{shards}" for k in range(shards)] if shards > 1 else ["bench"]
    cores = sorted(os.sched_getaffinity(0))
    if _spawn(config, cores[0], []).wait() != 0:  # registers the partitions and the store schema first
        raise SystemExit("worker setup failed")
    started = time.perf_counter()
    procs = [_spawn(config, cores[w % len(cores)], keys[w::workers]) for w in range(workers)]
    codes = [p.wait() for p in procs]
    seconds = time.perf_counter() - started
    if any(codes):
        raise SystemExit(f"a worker failed: exit codes {codes}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", default=str(Path.home() / ".cache/bench-corpora/redis_commands"))
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--work", default=None)
    a = ap.parse_args(argv)
    if a.worker:
        return _worker(a.worker[0], int(a.worker[1]), a.worker[2:])
    work = Path(a.work or tempfile.mkdtemp(prefix="bindery-shards-"))
    counts = [int(w) for w in a.workers.split(",")]
    results = {w: backfill(work / f"w{w}", Path(a.corpus).expanduser(), a.shards, w) for w in counts}
    base = results[counts[0]]
    print(json.dumps({"corpus": a.corpus, "shards": a.shards, "cpus": len(os.sched_getaffinity(0)),
                      "seconds": {w: round(s, 1) for w, s in results.items()},
                      "speedup": {w: round(base / s, 2) for w, s in results.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
