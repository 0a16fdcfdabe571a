"""One behavioural suite for every vector backend (the qdrant-client idiom: same API, same tests).

Each backend is a `VectorBackend`: it opens a generation's working index through
connectors.generations (as ingestion does), publishes a snapshot and opens a reader from it (as
the query service does). Every engine of tests/backends.py runs: Qdrant Edge and Qdrant local
mode on real files, a Qdrant server against its REST stub (publish records no vector snapshot
for it and the reader opens the same collection).
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from connectors.config import BinderyConfig, config_from_dict
from connectors.errors import QueryError
from connectors.generations import GenerationPaths, IndexPair, open_reader, open_writer, publish, vector_engine
from connectors.identity import chunk_id
from connectors.indexes.base import PUBLIC, Filters, IndexRecord, VectorIndex
from connectors.store import GenerationRecord
from tests.backends import VECTOR_BACKENDS, backend_settings

DIM = 8


@dataclass
class VectorBackend:
    """A generation of one vector engine under tmp: working writer, published snapshots, readers."""

    engine: str
    cfg: BinderyConfig
    gen: GenerationRecord
    _open: list[IndexPair] = field(default_factory=list)

    def writer(self) -> VectorIndex:
        pair = open_writer(self.cfg, self.gen, DIM)
        self._open.append(pair)
        return pair.vector

    def publish(self, writer: VectorIndex) -> None:
        """Close the writer (as the index stage does) and publish a snapshot of it."""
        pair = next(p for p in self._open if p.vector is writer)
        pair.close()
        self._open.remove(pair)
        vec, kw = publish(self.cfg, self.gen)
        self.gen = self.gen.replace(vector_snapshot=vec, keyword_snapshot=kw)

    def reader(self) -> VectorIndex:
        pair = open_reader(self.cfg, self.gen)
        self._open.append(pair)
        return pair.vector

    def close(self) -> None:
        for p in self._open:
            p.close()


@pytest.fixture(params=VECTOR_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorBackend]:
    engine = request.param
    with backend_settings(vector=engine) as settings:  # a server backend runs against its REST stub
        cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "backends": settings})
        gen = GenerationRecord.unrecorded(1, "g1_test", vector_engine=engine)
        b = VectorBackend(engine, cfg, gen)
        yield b
        b.close()


def _vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(DIM)
    return cast(list[float], (v / np.linalg.norm(v)).tolist())


def rec(doc: str, n: int, *, acl: tuple[str, ...] = (PUBLIC,), source: str = "docs", seed: int | None = None,
        text: str = "") -> IndexRecord:
    return IndexRecord(chunk_id=chunk_id(doc, "v1", n), doc_id=f"id-{doc}", source=source, external_id=doc,
                       text=text, vector=_vec(seed if seed is not None else hash((doc, n)) % 10_000), acl=acl,
                       payload={"display_text": text or f"{doc} #{n}", "heading_path": ["H"], "page": None})


def corpus() -> list[IndexRecord]:
    return [
        rec("public.md", 0, seed=1), rec("public.md", 1, seed=2),
        rec("alice.md", 0, acl=("alice",), seed=3),
        rec("team.md", 0, acl=("alice", "bob"), seed=4),
        rec("other.md", 0, acl=("carol",), source="wiki", seed=5),
    ]


def docs_of(index: VectorIndex, hits: list[Any]) -> set[str]:
    return {p["external_id"] for p in index.payloads([h.chunk_id for h in hits]).values()}


def search_docs(index: VectorIndex, **filters: Any) -> set[str]:
    hits = index.search(_vec(1), 50, Filters(**filters))
    return docs_of(index, hits)


def test_upsert_overwrites_by_chunk_id(backend: VectorBackend) -> None:
    w = backend.writer()
    assert w.upsert(corpus()) == 5
    changed = rec("public.md", 0, seed=9, text="new text")
    w.upsert([changed])
    assert w.count() == 5
    assert w.payloads([changed.chunk_id])[changed.chunk_id]["display_text"] == "new text"
    top = w.search(_vec(9), 1, Filters())
    assert top[0].chunk_id == changed.chunk_id and top[0].score == pytest.approx(1.0, abs=1e-4)


def test_delete_by_document_removes_only_that_document(backend: VectorBackend) -> None:
    w = backend.writer()
    w.upsert(corpus())
    w.delete_docs(["id-public.md", "id-not-there"])
    assert w.count() == 3
    assert {p["external_id"] for p in w.payloads(list(w.chunk_ids())).values()} == {"alice.md", "team.md", "other.md"}
    w.delete_docs([])
    assert w.count() == 3


def test_acl_is_any_of_the_principals_plus_public(backend: VectorBackend) -> None:
    w = backend.writer()
    w.upsert(corpus())
    assert search_docs(w, principals=()) == {"public.md"}
    assert search_docs(w, principals=("bob",)) == {"public.md", "team.md"}
    assert search_docs(w, principals=("alice",)) == {"public.md", "alice.md", "team.md"}
    assert search_docs(w, principals=("alice", "carol")) == {"public.md", "alice.md", "team.md", "other.md"}
    with pytest.raises(QueryError):
        w.search(_vec(1), 5, Filters(principals=None))


def test_source_doc_and_exclude_filters(backend: VectorBackend) -> None:
    w = backend.writer()
    w.upsert(corpus())
    everyone = ("alice", "bob", "carol")
    assert search_docs(w, principals=everyone, sources=("wiki",)) == {"other.md"}
    assert search_docs(w, principals=everyone, docs=("team.md", "alice.md")) == {"team.md", "alice.md"}
    assert search_docs(w, principals=everyone, exclude_docs=("public.md", "other.md")) == {"alice.md", "team.md"}
    assert search_docs(w, principals=everyone, sources=("docs",), exclude_docs=("public.md",)) == {
        "alice.md", "team.md"}


def test_empty_filter_lists_match_nothing(backend: VectorBackend) -> None:
    w = backend.writer()
    w.upsert(corpus())
    assert w.search(_vec(1), 10, Filters(principals=("alice",), sources=())) == []
    assert w.search(_vec(1), 10, Filters(principals=("alice",), docs=())) == []


def test_search_ranks_by_cosine_similarity(backend: VectorBackend) -> None:
    w = backend.writer()
    recs = corpus()
    w.upsert(recs)
    hits = w.search(_vec(3), 5, Filters(principals=("alice", "bob", "carol")))
    assert hits[0].chunk_id == recs[2].chunk_id
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(w.search(_vec(3), 2, Filters(principals=("alice",)))) == 2


def test_payloads_chunk_ids_and_count(backend: VectorBackend) -> None:
    w = backend.writer()
    assert (w.count(), w.chunk_ids(), w.payloads(["f" * 40])) == (0, set(), {})
    recs = corpus()
    w.upsert(recs)
    assert w.chunk_ids() == {r.chunk_id for r in recs} and w.count() == len(recs)
    got = w.payloads([recs[3].chunk_id, "0" * 40])
    assert list(got) == [recs[3].chunk_id]
    p = got[recs[3].chunk_id]
    assert (p["doc_id"], p["source"], p["external_id"], sorted(p["acl"]), p["heading_path"], p["page"]) == (
        "id-team.md", "docs", "team.md", ["alice", "bob"], ["H"], None)


@pytest.mark.slow  # ~13 s on qdrant-local (600 points through its pure-Python search)
def test_many_points_are_searched_and_listed(backend: VectorBackend) -> None:
    w = backend.writer()
    recs = [rec(f"d{i // 4}.md", i % 4, acl=(f"g{i % 7}",), seed=100 + i) for i in range(600)]
    w.upsert(recs)
    assert w.count() == 600 and len(w.chunk_ids()) == 600
    hits = w.search(_vec(100 + 7), 10, Filters(principals=("g0",)))
    assert hits[0].chunk_id == recs[7].chunk_id
    assert all(p["acl"] == ["g0"] for p in w.payloads([h.chunk_id for h in hits]).values())


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_reopen_from_a_published_snapshot(backend: VectorBackend) -> None:
    w = backend.writer()
    recs = corpus()
    w.upsert(recs)
    backend.publish(w)
    snap = backend.gen.vector_snapshot  # None on a server: readers query the collection itself
    before = _digest(Path(snap)) if snap else {}
    r1, r2 = backend.reader(), backend.reader()  # two readers at once, as service + CLI
    for r in (r1, r2):
        assert r.count() == 5 and r.chunk_ids() == {x.chunk_id for x in recs}
        assert search_docs(r, principals=("bob",)) == {"public.md", "team.md"}
    backend.close()
    assert (_digest(Path(snap)) if snap else {}) == before, "a reader changed the published snapshot"
    assert bool(snap) == (backend.engine != "qdrant-server")


def test_embedded_readers_see_writes_only_after_the_next_publish(backend: VectorBackend) -> None:
    """Embedded readers hold a snapshot; a server's readers query the live collection."""
    w = backend.writer()
    w.upsert(corpus())
    backend.publish(w)
    reader = backend.reader()
    w2 = backend.writer()
    w2.delete_docs(["id-public.md"])
    w2.upsert([rec("new.md", 0, seed=50)])
    embedded = backend.engine != "qdrant-server"
    assert reader.count() == (5 if embedded else 4)
    assert search_docs(reader, principals=()) == ({"public.md"} if embedded else {"new.md"})
    backend.publish(w2)
    assert backend.reader().count() == 4


def test_an_empty_generation_publishes_and_reads_as_empty(backend: VectorBackend) -> None:
    pair = open_writer(backend.cfg, backend.gen, None)  # no dimension known yet: nothing written
    backend._open.append(pair)
    backend.publish(pair.vector)
    r = backend.reader()
    assert (r.count(), r.chunk_ids(), r.search(_vec(1), 5, Filters())) == (0, set(), [])


def test_a_generation_is_read_with_the_engine_that_built_it(tmp_path: Path) -> None:
    """A data dir built with local mode keeps serving after the default moved to Edge."""
    local = config_from_dict({"data_dir": str(tmp_path), "backends": {"vector": "qdrant-local"}})
    from connectors.generations import physical_names

    vec_index, _ = physical_names(local, "g1_old")
    legacy_row = GenerationRecord.unrecorded(1, "g1_old", vector_index=vec_index)  # no vector_engine: before 0002
    assert vector_engine(config_from_dict({"data_dir": str(tmp_path)}), legacy_row) == "qdrant-local"
    pair = open_writer(local, legacy_row, DIM)
    pair.vector.upsert(corpus())
    pair.close()
    vec, kw = publish(local, legacy_row)
    edge_default = config_from_dict({"data_dir": str(tmp_path)})
    assert edge_default.backends.vector == "qdrant-edge"
    reader = open_reader(edge_default, legacy_row.replace(vector_snapshot=vec, keyword_snapshot=kw))
    try:
        assert type(reader.vector).__name__ == "QdrantIndex" and reader.vector.count() == 5
    finally:
        reader.close()
    server_row = GenerationRecord.unrecorded(7, "g7_abc", vector_index="g7_abc")  # a collection name, not a path
    assert vector_engine(edge_default, server_row) == "qdrant-server"
    nothing = GenerationRecord.unrecorded(8, "g8")  # no record at all: the configured engine
    assert vector_engine(local, nothing) == "qdrant-local"
    assert os.path.isdir(Path(vec_index))


def _disk_bytes(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def test_copy_sparse_keeps_bytes_and_holes(tmp_path: Path) -> None:
    from connectors.generations import copy_sparse

    src, dst = tmp_path / "src.dat", tmp_path / "dst.dat"
    with open(src, "wb") as f:  # data, a 16 MB hole, data, a trailing hole
        f.write(b"head" * 1000)
        f.seek(16 << 20)
        f.write(os.urandom(5000))
        f.truncate(40 << 20)
    copy_sparse(str(src), str(dst))
    assert dst.stat().st_size == src.stat().st_size
    assert hashlib.sha256(dst.read_bytes()).digest() == hashlib.sha256(src.read_bytes()).digest()
    assert dst.stat().st_blocks <= src.stat().st_blocks + 64, "the holes were written out as zeros"
    empty = tmp_path / "empty"
    empty.touch()
    assert Path(copy_sparse(str(empty), str(tmp_path / "empty2"))).read_bytes() == b""


def test_an_edge_snapshot_takes_the_disk_of_its_shard_not_its_preallocation(tmp_path: Path) -> None:
    """Qdrant Edge preallocates sparse files (96 MB of size for 7 MB of data at 900 chunks); a
    snapshot that wrote the holes out cost ~0.1 s and 14x the disk per publish."""
    cfg = config_from_dict({"data_dir": str(tmp_path)})
    gen = GenerationRecord.unrecorded(1, "g1_sparse")
    pair = open_writer(cfg, gen, DIM)
    pair.vector.upsert(corpus())
    pair.close()
    vec, kw = publish(cfg, gen)
    assert vec is not None
    snap = Path(vec)
    shard = GenerationPaths.of(cfg, gen.name).vector("qdrant-edge")
    working = sum(p.stat().st_blocks * 512 for p in shard.rglob("*") if p.is_file() and "wal" not in p.parts)
    size = sum(p.stat().st_size for p in snap.rglob("*") if p.is_file())
    if working * 4 >= size:
        pytest.skip("this file system does not keep Qdrant's preallocation sparse")
    assert _disk_bytes(snap) <= working + (1 << 20), "the snapshot allocated the shard's holes"
    reader = open_reader(cfg, gen.replace(vector_snapshot=vec, keyword_snapshot=kw))
    try:
        assert reader.vector.count() == 5
    finally:
        reader.close()


def test_an_unreachable_qdrant_server_is_one_index_error_naming_it() -> None:
    """qdrant-client let `ResponseHandlingException: [Errno 111] Connection refused` out, naming
    neither the engine nor its address; Elasticsearch's adapter already said both."""
    from connectors.errors import IndexError_
    from connectors.indexes.qdrant_index import QdrantIndex, quiet_version_probe
    from tests.moto_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_version_probe()  # what importing the module does, over this test's "always"
        with pytest.raises(IndexError_, match=f"cannot reach Qdrant at {url}: .*refused"):
            QdrantIndex(url=url, dim=4, timeout=2)
        time.sleep(0.5)  # the client's version probe runs on a thread of its own
    # nothing but the one line: no stray "Failed to obtain server version" UserWarning before it
    assert not [w for w in seen if "server version" in str(w.message)]


def test_an_edge_reader_opens_when_hard_links_cannot_be_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `data_dir` on another file system than the temp folder: hard links fail with EXDEV,
    and every query failed while syncs succeeded (a robustness pass). The reader copies instead."""
    import errno

    with backend_settings(vector="qdrant-edge") as settings:
        cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "backends": settings})
        b = VectorBackend("qdrant-edge", cfg, GenerationRecord.unrecorded(1, "g1_test", vector_engine="qdrant-edge"))
        w = b.writer()
        w.upsert(corpus())
        b.publish(w)

        def no_links(src: str, dst: str) -> None:
            raise OSError(errno.EXDEV, "Invalid cross-device link", src)

        monkeypatch.setattr(os, "link", no_links)
        r = b.reader()
        assert r.count() == 5 and search_docs(r, principals=("bob",)) == {"public.md", "team.md"}
        b.close()
