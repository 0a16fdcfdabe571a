"""Shard fan-out benchmark: does a sharded backfill really spread over worker processes?

    python -m benchmarks.shard_fanout [--corpus ~/.cache/bench-corpora/redis_commands] [--shards 4]
        [--workers 1,2] [--repeats 1] [--work DIR]

For each worker count W, a fresh data directory is backfilled from the same corpus with
`shards: N`. The N shard partitions wait in one queue and W worker processes take the next one
whenever they finish the last, as a queued run coordinator with W run slots hands out queued
runs; each worker runs its partitions through the real `sync` job (orchestration.runs.Runner,
as `bindery sync` does) on the same document store, Dagster instance and indexes. Every worker
is held to one core: pinned with sched_setaffinity to its own CPU, OMP_NUM_THREADS=1,
torch.set_num_threads(1), and the OpenVINO embedder told to use one inference thread
(BINDERY_OV_THREADS=1). The wall time of the whole backfill (first process start to last exit,
each worker's model load included) is reported per W, with the ratio to W=1. The model's
one-time conversion into the data dir's cache (OpenVINO) happens in the untimed setup step, as
it would once per deployment. With `--repeats R` the worker counts run R times in alternating
order (1,2 then 2,1, ...) and the medians are reported. A benchmark, not a test: the machine's
other load moves it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _claim(queue: Path) -> str | None:
    """Take the next partition key from the shared queue file (one line per key), or None."""
    with queue.open("r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        keys = f.read().split()
        if not keys:
            return None
        f.seek(0)
        f.truncate()
        f.write("\n".join(keys[1:]))
        return keys[0]


def _worker(config: str, core: int, queue: str | None) -> int:
    """One worker process: pinned to `core`, one model thread, runs queued partitions until none
    is left (no queue: the untimed setup step)."""
    os.sched_setaffinity(0, {core})
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from connectors.config import load_config
    from orchestration.runs import Runner

    cfg = load_config(config)
    runner = Runner(cfg)
    if queue is None:  # setup: partitions, store schema, the model converted into the data dir's cache
        from assets.runtime import open_embedder

        open_embedder(cfg, cfg.stages.embed).embed_documents(["warm up"])
        runner.run_sources("sync", [])
        return 0
    done, bad = [], []
    while (key := _claim(Path(queue))) is not None:
        outcomes, _ = runner.run_sources("sync", [key])
        done.append(key)
        bad += [o.partition for o in outcomes if not o.success]
    print(json.dumps({"core": core, "keys": done, "failed": bad}))
    return 1 if bad else 0


def _config(work: Path, corpus: Path, shards: int) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    path = work / "bindery.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(data), "sources": [
        {"name": "bench", "kind": "local", "root": str(corpus), "shards": shards}]}))
    return path


def _spawn(config: Path, core: int, queue: Path | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "BINDERY_OV_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
    args = [str(config), str(core)] + ([str(queue)] if queue else [])
    return subprocess.Popen([sys.executable, "-m", "benchmarks.shard_fanout", "--worker", *args], env=env, cwd=ROOT)


def backfill(work: Path, corpus: Path, shards: int, workers: int) -> float:
    """Seconds for a fresh `shards`-shard backfill taken from one queue by `workers` pinned processes."""
    config = _config(work, corpus, shards)
    keys = [f"bench:shard-{k}-of-{shards}" for k in range(shards)] if shards > 1 else ["bench"]
    cores = sorted(os.sched_getaffinity(0))
    if _spawn(config, cores[0], None).wait() != 0:
        raise SystemExit("worker setup failed")
    queue = work / "queue"
    queue.write_text("\n".join(keys))
    started = time.perf_counter()
    procs = [_spawn(config, cores[w % len(cores)], queue) for w in range(workers)]
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
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--work", default=None)
    a = ap.parse_args(argv)
    if a.worker:
        return _worker(a.worker[0], int(a.worker[1]), a.worker[2] if len(a.worker) > 2 else None)
    work = Path(a.work or tempfile.mkdtemp(prefix="bindery-shards-"))
    counts = [int(w) for w in a.workers.split(",")]
    runs: dict[int, list[float]] = {w: [] for w in counts}
    for r in range(a.repeats):
        for w in (counts if r % 2 == 0 else counts[::-1]):
            runs[w].append(backfill(work / f"w{w}", Path(a.corpus).expanduser(), a.shards, w))
    med = {w: statistics.median(xs) for w, xs in runs.items()}
    base = med[counts[0]]
    print(json.dumps({"corpus": a.corpus, "shards": a.shards, "cpus": len(os.sched_getaffinity(0)),
                      "seconds": {w: [round(s, 1) for s in xs] for w, xs in runs.items()},
                      "median_seconds": {w: round(s, 1) for w, s in med.items()},
                      "speedup": {w: round(base / s, 2) for w, s in med.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
