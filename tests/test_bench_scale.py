"""`make bench-scale`'s synthetic data and projection: the vectors stay shaped like real text
embeddings (near-uniform vectors made HNSW look broken), and a projected latency never falls."""

from __future__ import annotations

import numpy as np

from benchmarks.scale import _centres, _vectors, project


def test_synthetic_vectors_have_the_neighbour_distances_of_real_minilm_vectors() -> None:
    v = _vectors(8000, 1, _centres())
    sims = v[:500] @ v.T
    sims[np.arange(500), np.arange(500)] = -1.0  # a vector is not its own neighbour
    nearest, random_pair = float(sims.max(axis=1).mean()), float(sims.mean())
    # MiniLM on 300 mail_ham messages: nearest neighbour 0.73, random pairs 0.09
    assert 0.55 < nearest < 0.9, nearest
    assert 0.03 < random_pair < 0.15, random_pair


def test_the_projection_is_linear_with_latencies_never_below_the_larger_size_and_a_proportional_bound() -> None:
    by_size = {50_000: {"rss_open_mb": 100.0, "rss_peak_mb": 150.0, "disk_mb": 200.0, "build_s": 30.0,
                        "p50_ms": 3.0, "p95_ms": 6.0},
               200_000: {"rss_open_mb": 400.0, "rss_peak_mb": 450.0, "disk_mb": 500.0, "build_s": 130.0,
                         "p50_ms": 4.0, "p95_ms": 5.0}}
    p = project([50_000, 200_000], by_size)
    assert p["rss_open_mb"] == 2000.0 and p["disk_mb"] == 2100.0
    assert p["p50_ms"] == round(3.0 + 1.0 * 950_000 / 150_000, 1)
    assert p["p95_ms"] == 5.0  # the fit falls (6 -> 5 ms); the projection does not
    assert p["p95_ms_proportional"] == 25.0
