"""Helpers shared by the sync tests (test_sync_s3, test_sync_safety, test_sensor,
test_crash_recovery): a deployment whose source is a real moto S3 bucket, one change API over
folders and buckets, and the convergence check (store == vector index == keyword index)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa

from connectors.config import load_config
from connectors.generations import open_writer, writer_lock
from connectors.store import DocumentStore, GenerationRecord
from connectors.store import schema as t
from tests.bindery_fixture import DOCS, Deployment


def store_of(dep: Deployment) -> DocumentStore:
    return DocumentStore(load_config(dep.config_path).database_url)


def generation_row(store: DocumentStore, gen_id: int | None = None) -> GenerationRecord:
    """The store row of generation `gen_id` (default: the live one); fails the test if there is none."""
    if not gen_id:
        binding = store.get_binding()
        assert binding is not None, "no live generation"
        gen_id = binding.generation_id
    gen = store.get_generation(gen_id)
    assert gen is not None, f"no generation {gen_id}"
    return gen


def index_sets(dep: Deployment, gen_id: int | None = None) -> dict[str, Any]:
    """Chunk ids of one generation (default: live) in the store (chunks of live documents), the
    working vector index and the working keyword index, plus the raw index counts."""
    cfg = load_config(dep.config_path)
    store = DocumentStore(cfg.database_url)
    try:
        gen = generation_row(store, gen_id)
        live = [d.doc_id for d in store.documents()]
        expected = {c.chunk_id for c in store.chunks_for(live, gen.stage_versions["chunk"])}
        with writer_lock(cfg, gen.name):
            pair = open_writer(cfg, gen, None)
            try:
                return {"store": expected, "vector": pair.vector.chunk_ids(), "keyword": pair.keyword.chunk_ids(),
                        "vector_count": pair.vector.count(), "keyword_count": pair.keyword.count(), "gen": gen}
            finally:
                pair.close()
    finally:
        store.dispose()


def orphan_chunk_rows(dep: Deployment) -> int:
    """Chunk rows in the store whose document is deleted or unknown (a purge that never ran)."""
    store = store_of(dep)
    try:
        live = sa.select(t.documents.c.doc_id).where(t.documents.c.deleted_at.is_(None))
        with store.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(t.chunks)
                                 .where(t.chunks.c.doc_id.not_in(live))).scalar_one())
    finally:
        store.dispose()


def assert_converged(dep: Deployment, *, min_chunks: int = 1) -> dict[str, Any]:
    """Store, vector index and keyword index hold exactly the same chunk ids, no duplicates,
    no orphans, every live document with chunks is indexed, and `bindery verify` agrees."""
    s = index_sets(dep)
    assert s["store"] == s["vector"] == s["keyword"], {
        "missing_in_vector": len(s["store"] - s["vector"]), "orphans_in_vector": len(s["vector"] - s["store"]),
        "missing_in_keyword": len(s["store"] - s["keyword"]), "orphans_in_keyword": len(s["keyword"] - s["store"])}
    assert s["vector_count"] == len(s["vector"]), "duplicate points in the vector index"
    assert s["keyword_count"] == len(s["keyword"]), "duplicate documents in the keyword index"
    assert len(s["store"]) >= min_chunks
    assert orphan_chunk_rows(dep) == 0, "chunk rows of deleted documents left in the store"
    store = store_of(dep)
    try:
        state = store.index_state(s["gen"].id)
        with_chunks = {c.doc_id for c in store.get_chunks(sorted(s["store"])).values()}
        assert with_chunks == set(state), "index_state disagrees with the indexed documents"
    finally:
        store.dispose()
    report = dep.cli("verify")
    assert report["consistent"] is True, report
    return s


def indexed_docs(dep: Deployment) -> set[str]:
    """External ids of the documents that have chunks in the live vector index."""
    s = index_sets(dep)
    store = store_of(dep)
    try:
        rows = store.get_chunks(sorted(s["vector"]))
        docs = store.get_documents({r.doc_id for r in rows.values()})
        return {d.external_id for d in docs.values()}
    finally:
        store.dispose()


def hits(dep: Deployment, text: str, *extra: str, k: int = 10) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], dep.cli("query", text, "-k", str(k), *extra)["hits"])


# -- one change API over a folder and a bucket ------------------------------------------------


class S3Deployment(Deployment):
    """`Deployment` whose only source is a real moto S3 bucket (prefix `kb/`) holding DOCS.
    ACLs are object user metadata `acl` (x-amz-meta-acl, comma-separated)."""

    kind = "s3"

    def __init__(self, tmp: Path, s3: Any, endpoint: str, *, source: dict[str, Any] | None = None,
                 **overrides: Any) -> None:
        super().__init__(tmp, **overrides)
        shutil.rmtree(self.root)  # the folder corpus of the base class is not used
        self.s3 = s3
        self.bucket = f"bindery-{uuid.uuid4().hex[:12]}"
        self.prefix = "kb/"
        s3.create_bucket(Bucket=self.bucket)
        for rel, text in DOCS.items():
            self.put(rel, text)
        self.config["sources"] = [{"name": "docs", "kind": "s3", "bucket": self.bucket, "prefix": "kb",
                                   "endpoint_url": endpoint, "region": "us-east-1", "min_ratio": 0.5,
                                   **(source or {})}]
        self.save()

    def put(self, rel: str, text: str | bytes, acl: str | None = None) -> None:
        meta = {"acl": acl} if acl is not None else {}
        body = text.encode() if isinstance(text, str) else text
        self.s3.put_object(Bucket=self.bucket, Key=self.prefix + rel, Body=body, Metadata=meta)

    # the change API shared with LocalCorpus
    def edit(self, rel: str, text: str) -> None:
        self.put(rel, text)

    def read(self, rel: str) -> str:
        return cast(str, self.s3.get_object(Bucket=self.bucket, Key=self.prefix + rel)["Body"].read().decode())

    def remove(self, rel: str) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=self.prefix + rel)

    def rename(self, old: str, new: str) -> None:
        self.s3.copy_object(Bucket=self.bucket, Key=self.prefix + new,
                            CopySource={"Bucket": self.bucket, "Key": self.prefix + old})
        self.s3.delete_object(Bucket=self.bucket, Key=self.prefix + old)

    def set_acl(self, rel: str, principals: list[str] | None) -> None:
        """Rewrite only the object's metadata (copy in place): the ETag stays, LastModified moves."""
        key = self.prefix + rel
        meta = {} if principals is None else {"acl": ",".join(principals)}
        self.s3.copy_object(Bucket=self.bucket, Key=key, CopySource={"Bucket": self.bucket, "Key": key},
                            Metadata=meta, MetadataDirective="REPLACE")

    def etag(self, rel: str) -> str:
        return cast(str, self.s3.head_object(Bucket=self.bucket, Key=self.prefix + rel)["ETag"])


class LocalDeployment(Deployment):
    """The folder `Deployment` with the same change API as `S3Deployment`. An ACL change is a
    `.bindery-acl` sidecar in a folder of its own, so it applies to exactly one document."""

    kind = "local"

    def edit(self, rel: str, text: str) -> None:
        self.write(rel, text)

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def remove(self, rel: str) -> None:
        (self.root / rel).unlink()

    def rename(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        os.rename(self.root / old, self.root / new)

    def set_acl(self, rel: str, principals: list[str] | None) -> None:
        sidecar = (self.root / rel).parent / ".bindery-acl"
        if principals is None:
            sidecar.unlink(missing_ok=True)
        else:
            sidecar.write_text("".join(p + "\n" for p in principals))


def refuse_listing(monkeypatch: Any, folder: Path) -> Callable[[], None]:
    """Make the OS refuse to list `folder` (chmod 000 does not stop root, so the refusal is
    simulated at `os.scandir`); returns a function that makes it readable again."""
    real = os.scandir
    locked = str(folder)

    def scandir(path: Any) -> Any:
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return lambda: monkeypatch.setattr(os, "scandir", real)


def refuse_reads(monkeypatch: Any, external_id: str) -> Callable[[], None]:
    """Make reading one local document fail as a permission error would (root reads anything,
    so the refusal is simulated at `LocalFolderSource.read`); returns a function that makes it
    readable again."""
    from connectors.errors import SourceError
    from connectors.sources.local import LocalFolderSource

    real = LocalFolderSource.read

    def read(self: LocalFolderSource, entry: Any) -> bytes:
        if entry.external_id == external_id:
            raise SourceError(f"cannot read {entry.external_id}: Permission denied")
        return real(self, entry)

    monkeypatch.setattr(LocalFolderSource, "read", read)
    return lambda: monkeypatch.setattr(LocalFolderSource, "read", real)


def mark_indexed(store: Any, source: str, generation: str = "g1") -> None:
    """Record every document of `source` as held by a generation's indexes, as a sync's index
    step would (for listing-level tests: the delete guard weighs what a sweep would take out of
    an index, `assets.listing.indexed_to_delete`)."""
    gen = next((g.id for g in store.generations() if g.name == generation), None) or store.create_generation(
        name=generation, stage_versions={}, stage_configs={}, embedder_id="e", vector_index="v", keyword_index="k")
    store.set_index_state([{"generation_id": gen, "doc_id": d.doc_id, "source": source, "digest": "d", "chunks": 1,
                            "indexed_at": time.time(), "acl_hash": None} for d in store.documents(source)])
