"""Sharded sources: `sources[].shards: N` splits one source's work into N stable shards.

A document's shard is a hash of its id (itself a stable hash of the source name and the
external id, connectors.identity.doc_id) modulo N, so the split never depends on listing
order, on which documents exist, or on which worker runs it. Each shard is one Dagster
partition, `<source>:shard-<k>-of-<N>`, and a backfill of a sharded source is N runs that any
N workers can take. A source with `shards: 1` keeps its plain partition, `<source>`.

What is shared and what is per shard, and why:
- The listing is always taken whole and the delete-safety guard judges the whole source's
  listing (a shard's slice of a shrunken listing looks just as shrunken, but judging a slice
  would let N small slices each pass a `min_count` the whole would fail); each shard then
  writes and deletes only its own documents.
- Every later stage sees only its shard's documents (ShardStore narrows the two store
  queries a stage uses to pick its work), and index writes take the per-generation writer
  lock, so shards of one source write one index side by side and a failed shard leaves the
  other shards' published documents in place.
- The data (store rows, caches, index records) is keyed by document, never by shard:
  changing N re-partitions the work and finds every document already done (no re-embedding,
  nothing deleted). Resharding is a reindex of the work split, not a data change.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from connectors.config import BinderyConfig, SourceConfig
from connectors.store import DocumentRecord, DocumentStore, IndexStateRecord

_KEY = re.compile(r"^(?P<source>[A-Za-z0-9][A-Za-z0-9_.-]{0,63}):shard-(?P<k>\d+)-of-(?P<n>\d+)$")


@dataclass(frozen=True)
class Shard:
    """One shard of a source: documents whose id hashes to `index` modulo `count`."""

    source: str
    index: int
    count: int

    @property
    def key(self) -> str:
        return f"{self.source}:shard-{self.index}-of-{self.count}"

    def holds(self, doc_id: str) -> bool:
        return shard_of(doc_id, self.count) == self.index


def shard_of(doc_id: str, count: int) -> int:
    """The stable shard of a document id (sha256, not Python's salted hash())."""
    return int.from_bytes(hashlib.sha256(doc_id.encode()).digest()[:8], "big") % count


def partition_keys(scfg: SourceConfig) -> list[str]:
    """The partitions of one source: its name, or one key per shard."""
    if scfg.shards == 1:
        return [scfg.name]
    return [Shard(scfg.name, k, scfg.shards).key for k in range(scfg.shards)]


def all_partition_keys(cfg: BinderyConfig, only: Iterable[str] | None = None) -> list[str]:
    """Every partition of the configured sources (or of the named ones), in configuration order."""
    names = list(only) if only else [s.name for s in cfg.sources]
    return [k for n in names for k in partition_keys(cfg.source(n))]


def overlapping(a: str, b: str) -> bool:
    """Whether runs of partitions `a` and `b` may write the same documents: one source, and the
    same partition, or not two shards of one sharding (the source unsharded on one side, or cut
    into another number of shards: a sync right after `shards:` changed, beside a run of before)."""
    (sa, sha), (sb, shb) = parse_key(a), parse_key(b)
    return sa == sb and (a == b or sha is None or shb is None or sha.count != shb.count)


def parse_key(key: str) -> tuple[str, Shard | None]:
    """(source name, shard or None) of a partition key."""
    m = _KEY.match(key)
    if m is None:
        return key, None
    return m["source"], Shard(m["source"], int(m["k"]), int(m["n"]))


class ShardStore(DocumentStore):
    """The document store as one shard's stages see it: the same database (it shares the
    engine), with the two queries that pick a stage's work — a source's documents and a
    generation's index state for a source — narrowed to the shard's documents."""

    def __init__(self, base: DocumentStore, shard: Shard):
        self.__dict__.update(base.__dict__)  # base's engine and URL: no second pool, no migration
        self.shard = shard

    def documents(self, source: str | None = None, *, include_deleted: bool = False) -> list[DocumentRecord]:
        rows = super().documents(source, include_deleted=include_deleted)
        return [d for d in rows if self.shard.holds(d.doc_id)] if source is not None else rows

    def index_state(self, generation_id: int, source: str | None = None) -> dict[str, IndexStateRecord]:
        rows = super().index_state(generation_id, source)
        return {k: v for k, v in rows.items() if self.shard.holds(k)} if source is not None else rows

    def moved_away(self, source: str) -> list[str]:
        return [k for k in super().moved_away(source) if self.shard.holds(k)]

    def held_doc_ids(self, generation_id: int, source: str) -> list[str]:
        return [k for k in super().held_doc_ids(generation_id, source) if self.shard.holds(k)]
