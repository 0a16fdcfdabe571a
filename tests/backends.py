"""Index backends for backend-parametrised tests: one factory per backend name, each a context
manager yielding a fresh, empty index of one generation, so a behavioural suite can run the
same tests over every backend (`@pytest.fixture(params=VECTOR_BACKENDS)` + `open_vector`).

Server backends run against their REST stubs (tests/qdrant_stub.py, tests/es_stub.py) through
the real clients; embedded ones on real files under `tmp`. Add a backend here and every suite
parametrised over the list picks it up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from connectors.indexes.base import KeywordIndex, VectorIndex
from tests.es_stub import ESStub
from tests.qdrant_stub import QdrantStub

VECTOR_BACKENDS = ["qdrant-edge", "qdrant-local", "qdrant-server"]
KEYWORD_BACKENDS = ["tantivy", "elasticsearch"]


@contextmanager
def backend_settings(vector: str | None = None, keyword: str | None = None) -> Iterator[dict[str, Any]]:
    """`backends:` settings for a configuration using `vector` and/or `keyword`, with the REST stub
    of each server backend running while the context is open. A suite that builds its indexes
    through connectors.generations from a configuration (as the vector-backend suite does) adds
    the server backends by taking its `backends:` from here."""
    with QdrantStub() as qdrant, ESStub() as es:
        out: dict[str, Any] = {}
        if vector is not None:
            out["vector"] = vector
            if vector == "qdrant-server":
                out["qdrant_url"] = qdrant.url
        if keyword is not None:
            out["keyword"] = keyword
            if keyword == "elasticsearch":
                out["elasticsearch_url"] = es.url
        yield out


@contextmanager
def open_vector(kind: str, tmp: Path, dim: int | None, collection: str = "g1_test") -> Iterator[VectorIndex]:
    from connectors.indexes.qdrant_index import QdrantIndex

    if kind == "qdrant-edge":
        from connectors.indexes.qdrant_edge_index import QdrantEdgeIndex

        edge = QdrantEdgeIndex(str(tmp / "edge"), dim=dim)
        try:
            yield edge
        finally:
            edge.close()
    elif kind == "qdrant-local":
        index = QdrantIndex(path=str(tmp / "qdrant"), collection=collection, dim=dim)
        try:
            yield index
        finally:
            index.close()
    elif kind == "qdrant-server":
        with QdrantStub() as stub:
            index = QdrantIndex(url=stub.url, collection=collection, dim=dim)
            try:
                yield index
            finally:
                index.close()
    else:
        raise ValueError(f"unknown vector backend {kind}")


@contextmanager
def open_keyword(kind: str, tmp: Path, name: str = "g1_test") -> Iterator[KeywordIndex]:
    if kind == "tantivy":
        from connectors.indexes.tantivy_index import TantivyIndex

        index: KeywordIndex = TantivyIndex(str(tmp / "tantivy"))
        try:
            yield index
        finally:
            index.close()
    elif kind == "elasticsearch":
        from connectors.indexes.elasticsearch_index import ElasticsearchIndex

        with ESStub() as stub:
            es = ElasticsearchIndex(stub.url, name, timeout=5)
            try:
                yield es
            finally:
                es.close()
    else:
        raise ValueError(f"unknown keyword backend {kind}")
