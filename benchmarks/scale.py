"""Scale benchmark of the embedded vector engines: synthetic generations at two sizes, measured
per engine, and a linear projection to 1M chunks.

    python -m benchmarks.scale [--sizes 50000,200000] [--sizes-local 10000,20000]
        [--engines qdrant-edge,qdrant-local] [--work DIR]

Each (engine, size) is built through connectors.generations exactly as the index stage builds a
generation (working index, close, publish a snapshot), then opened by fresh reader processes
exactly as the query service opens one (`open_reader`), alternating engines, twice. Reported per
engine and size: build seconds, snapshot disk (allocated blocks), open seconds, the reader
process's RSS after open and its peak after the queries (minus the interpreter's baseline), and
ACL-filtered top-50 query latency p50/p95 (principals: one group + public, as every Bindery query);
for Edge also top-10 agreement with an exact (brute-force) search under the same filter.

Data: 384-dim vectors drawn around 2,000 cluster centres with a shared direction, at the
neighbour distances of real MiniLM vectors (text embeddings are clustered and anisotropic; uniform
random vectors are the worst case for HNSW and unlike any corpus), Bindery-shaped payloads
(chunk/doc ids, source, path, 1-3 ACL principals of 200 groups or public, ~600 characters of
display text, heading path, page, uri).

Projection: RSS, disk and latency are fitted linearly through the two sizes and evaluated at 1M
(a latency never below the larger size's); linear is pessimistic for HNSW search (which grows about
logarithmically) and exact for a scan. `*_ms_proportional` is the bound for latency growing in
proportion to the points from the larger size, as a full scan's does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from connectors.store.records import GenerationRecord

DIM = 384
GROUPS = 200
# Shaped like MiniLM's vectors of a real corpus (the first 300 mail_ham messages: a chunk's nearest
# neighbour at cosine 0.73, two random chunks at 0.09): per-dimension noise of 0.03 around 2,000
# centres gives nearest neighbours at ~0.75, a shared direction (text embeddings are anisotropic)
# random pairs at ~0.08. Per-dimension noise of 0.35 (before 2026-12-02) made the vectors nearly
# uniform (nearest neighbour at 0.17), HNSW's worst case and unlike any corpus.
_NOISE = 0.03
_COMMON = 0.35
_WORDS = ["index", "vector", "payload", "engine", "shard", "query", "filter", "chunk", "document", "source", "mail",
          "thread", "reply", "release", "battery", "robot", "firmware", "config", "cluster", "search", "token"]


def _rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _disk_mb(path: Path) -> float:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20


def _vectors(n: int, seed: int, centres: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = (_COMMON * _mean_direction() + centres[rng.integers(0, len(centres), n)]
         + _NOISE * rng.standard_normal((n, DIM))).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def _mean_direction() -> np.ndarray:
    m = np.random.default_rng(1).standard_normal(DIM)
    unit: np.ndarray = m / np.linalg.norm(m)
    return unit


def _centres() -> np.ndarray:
    c = np.random.default_rng(0).standard_normal((2000, DIM)).astype(np.float32)
    unit: np.ndarray = c / np.linalg.norm(c, axis=1, keepdims=True)
    return unit


def _records(start: int, vecs: np.ndarray) -> list[Any]:
    from connectors.identity import chunk_id
    from connectors.indexes.base import PUBLIC, IndexRecord

    rng = np.random.default_rng(start)
    out = []
    for i, v in enumerate(vecs, start):
        doc = i // 8  # ~8 chunks per document
        acl = (PUBLIC,) if doc % 10 == 0 else tuple(f"g{(doc * 7 + j) % GROUPS}" for j in range(1 + doc % 3))
        text = " ".join(rng.choice(_WORDS, 90))
        out.append(IndexRecord(
            chunk_id=chunk_id(f"doc{doc}", "v1", i % 8), doc_id=f"{doc:012x}", source=f"src{doc % 4}",
            external_id=f"folder{doc % 97}/doc{doc}.md", text=text, vector=v.tolist(), acl=acl,
            payload={"display_text": text, "heading_path": ["Title", f"Section {i % 8}"], "page": None,
                     "ordinal": i % 8, "kind": "text", "uri": f"file:///corpus/folder{doc % 97}/doc{doc}.md"}))
    return out


def _setup(engine: str, work: Path) -> tuple[Any, GenerationRecord]:
    from connectors.config import config_from_dict
    from connectors.store.records import GenerationRecord

    cfg = config_from_dict({"data_dir": str(work), "backends": {"vector": engine}})
    return cfg, GenerationRecord.unrecorded(1, "g1_scale", vector_engine=engine)


def build(engine: str, n: int, work: Path) -> dict[str, Any]:
    from connectors.generations import open_writer, publish

    cfg, gen = _setup(engine, work)
    centres = _centres()
    t0 = time.perf_counter()
    pair = open_writer(cfg, gen, DIM)
    for i in range(0, n, 5000):
        pair.vector.upsert(_records(i, _vectors(min(5000, n - i), 1 + i, centres)))
    t_upsert = time.perf_counter() - t0
    pair.close()  # Edge: optimize (HNSW, payload indexes) + flush
    t_built = time.perf_counter() - t0
    vec, kw = publish(cfg, gen)
    assert vec is not None and kw is not None
    t_publish = time.perf_counter() - t0 - t_built
    return {"upsert_s": round(t_upsert, 1), "build_s": round(t_built, 1), "publish_s": round(t_publish, 1),
            "snapshot": f"{vec}|{kw}", "disk_mb": round(_disk_mb(Path(vec)), 1)}


def probe(engine: str, work: Path, snapshot: str, n_queries: int) -> dict[str, Any]:
    import connectors.indexes.qdrant_edge_index
    import connectors.indexes.qdrant_index  # noqa: F401 - imported before the baseline is taken
    from connectors.generations import open_reader
    from connectors.indexes.base import Filters

    cfg, gen = _setup(engine, work)
    base = _rss_mb()
    t0 = time.perf_counter()
    vec, kw = snapshot.split("|")
    pair = open_reader(cfg, gen.replace(vector_snapshot=vec, keyword_snapshot=kw))
    t_open = time.perf_counter() - t0
    rss_open = _rss_mb() - base
    qv = _vectors(n_queries, 999, _centres())
    rng = np.random.default_rng(7)
    lat, agree = [], []
    for q in qv:
        f = Filters(principals=(f"g{rng.integers(0, GROUPS)}",))
        t = time.perf_counter()
        hits = pair.vector.search(q.tolist(), 50, f)
        lat.append((time.perf_counter() - t) * 1000)
        if engine == "qdrant-edge":
            agree.append(_exact_agreement(pair.vector, q, f, hits))
    out = {"open_s": round(t_open, 3), "rss_open_mb": round(rss_open, 1),
           "rss_peak_mb": round(_rss_mb("VmHWM") - base, 1),
           "p50_ms": round(statistics.median(lat), 2), "p95_ms": round(sorted(lat)[int(0.95 * len(lat))], 2),
           "queries": len(lat)}
    if agree:
        out["top10_agreement_with_exact"] = round(statistics.mean(agree), 3)
    pair.close()
    return out


def _exact_agreement(index: Any, q: np.ndarray, f: Any, hits: list[Any]) -> float:
    import qdrant_edge as qe

    req = qe.QueryRequest(limit=10, query=qe.Query.Nearest(q.tolist()), filter=index._filter(f),
                          with_payload=["chunk_id"], params=qe.SearchParams(exact=True))
    exact = {p.payload["chunk_id"] for p in index.shard.query(req)}
    return len(exact & {h.chunk_id for h in hits[:10]}) / max(1, len(exact))


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "benchmarks.scale", *args], capture_output=True, text=True,
                         check=False, env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    if out.returncode != 0:
        raise SystemExit(f"scale {args} failed: {out.stderr[-2000:]}")
    return cast(dict[str, Any], json.loads(out.stdout.strip().splitlines()[-1]))


def _fit(xs: list[int], ys: list[float], at: int) -> float:
    (x1, x2), (y1, y2) = xs, ys
    return round(y1 + (y2 - y1) * (at - x1) / (x2 - x1), 1)


def run(sizes: dict[str, list[int]], work: Path, queries: dict[str, int]) -> dict[str, Any]:
    """`sizes[engine]` are that engine's two sizes; the i-th sizes of all engines are probed
    together, alternating engines, in fresh reader processes."""
    engines = list(sizes)
    res: dict[str, Any] = {e: {} for e in engines}
    for i in range(len(next(iter(sizes.values())))):
        for e in engines:
            n = sizes[e][i]
            built = work / f"{e}-{n}" / "build.json"  # a finished build is reused by a later run
            res[e][n] = json.loads(built.read_text()) if built.exists() else _child(
                "_build", e, str(n), str(work / f"{e}-{n}"))
            built.write_text(json.dumps(res[e][n]))
            print(f"built {e} {n}: {res[e][n]}", file=sys.stderr, flush=True)
        probes: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
        for _ in range(2):  # alternate engines, two fresh reader processes each
            for e in engines:
                n = sizes[e][i]
                probes[e].append(_child("_probe", e, str(work / f"{e}-{n}"), res[e][n]["snapshot"], str(queries[e])))
        for e in engines:
            n = sizes[e][i]
            for k in probes[e][0]:
                vals = [p[k] for p in probes[e]]
                res[e][n][k] = round(statistics.median(vals), 3) if isinstance(vals[0], float) else vals[0]
            print(f"probed {e} {n}: {res[e][n]}", file=sys.stderr, flush=True)
    for e in engines:
        if len(sizes[e]) == 2:
            res[e]["projected_1M"] = project(sizes[e], res[e])
    return res


def project(sizes: list[int], by_size: dict[int, dict[str, float]], at: int = 1_000_000) -> dict[str, float]:
    """The measurements at two sizes, projected to `at` points."""
    proj = {k: _fit(sizes, [by_size[n][k] for n in sizes], at) for k in ("rss_open_mb", "rss_peak_mb", "disk_mb",
                                                                          "build_s")}
    for k in ("p50_ms", "p95_ms"):  # a latency does not fall with size (two noisy tails may)
        ys = [by_size[n][k] for n in sizes]
        proj[k] = max(_fit(sizes, ys, at), ys[1])
        # the pessimistic bound: grows in proportion to the points, as a full scan does
        proj[k + "_proportional"] = round(ys[1] * at / sizes[1], 1)
    return proj


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    if len(sys.argv) > 1 and sys.argv[1] == "_build":
        print(json.dumps(build(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_probe":
        print(json.dumps(probe(sys.argv[2], Path(sys.argv[3]), sys.argv[4], int(sys.argv[5]))))
        return 0
    p.add_argument("--sizes", default="50000,200000", help="two sizes for every engine")
    p.add_argument("--sizes-local", help="other sizes for qdrant-local (its build is ~1k points/s)")
    p.add_argument("--engines", default="qdrant-edge,qdrant-local")
    p.add_argument("--work", type=Path, default=Path("bench-out/scale"))
    p.add_argument("--queries-edge", type=int, default=200)
    p.add_argument("--queries-local", type=int, default=20)  # a local-mode query is a full scan
    a = p.parse_args()
    sizes = {e: [int(x) for x in (a.sizes_local if e == "qdrant-local" and a.sizes_local else a.sizes).split(",")]
             for e in a.engines.split(",")}
    queries = {"qdrant-edge": a.queries_edge, "qdrant-local": a.queries_local, "qdrant-server": a.queries_edge}
    res = run(sizes, a.work, queries)
    a.work.mkdir(parents=True, exist_ok=True)
    (a.work / "result.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
