"""What `bindery plan` predicts of a source's listing: every item classified with the listing's own
rules (`assets.listing`), the delete guard's verdict, and the documents the sync would leave,
with nothing written. `orchestration.plan` walks the stages over those documents."""

from __future__ import annotations

import time
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from assets.includes import fold, read_again, scanned_metadata
from assets.listing import (
    CLASSES,
    ReadStreak,
    _Read,
    _unchanged,
    change_class,
    check_delete_safety,
    entry_problem,
    indexed_to_delete,
    printable_id,
    split_gone,
)
from assets.listing_access import acl_of, kept_narrowing, narrowing, source_default_acl
from assets.runtime import Runtime
from connectors.config import SourceConfig
from connectors.errors import SourceError, SourceUnavailable, TooLarge
from connectors.identity import content_hash, doc_id, short_hash
from connectors.sources import make_source
from connectors.sources.base import Source
from connectors.store import DocumentRecord

__all__ = ["Failure", "SourcePlan", "predict_listing", "with_acl"]


@dataclass(frozen=True)
class Failure:
    """Why the sync would dead-letter a document: its stage, reason code and message, as the
    stage itself records them (`assets.parse_stage.run_parse`, `assets.chunk_stage`)."""

    stage: str
    reason: str
    error: str


@dataclass
class SourcePlan:
    """One source: the listing's verdict and the documents the sync would leave."""

    name: str
    listed: int = 0
    changes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    would_delete: int = 0
    unsafe: str | None = None
    error: str | None = None
    docs: list[DocumentRecord] = field(default_factory=list)
    data: dict[str, bytes] = field(default_factory=dict)  # content hash -> bytes read by the listing
    failures: dict[str, tuple[str, Failure]] = field(default_factory=dict)  # what the listing dead-letters
    moves: dict[str, str] = field(default_factory=dict)  # old doc id -> new: a move the listing marks (its `moved`)
    relocated: set[str] = field(default_factory=set)  # doc ids found at a new uri (a `root` moved with its files)

    def count(self, live_old: DocumentRecord | None, record: DocumentRecord,
              gone_by_hash: Mapping[str, DocumentRecord]) -> None:
        """Count `record`'s change class as the listing does, and note a move as it marks one."""
        cls = change_class(live_old, record.content_hash or "", list(record.acl), record.metadata, gone_by_hash,
                           record.uri)
        self.changes[cls] += 1
        if live_old is not None and live_old.uri != record.uri:  # every generation holding it is rewritten
            self.relocated.add(record.doc_id)
        if cls == "moved" and (was := gone_by_hash[record.content_hash or ""].doc_id) not in self.moves:
            self.moves[was] = record.doc_id

    @property
    def proceeds(self) -> bool:
        return self.error is None and self.unsafe is None


def with_acl(d: DocumentRecord, acl: list[str]) -> DocumentRecord:
    return d.replace(acl=acl, acl_hash=short_hash(acl, 16))


def _refused(sp: SourcePlan, source: str, listed: list[Any]) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """(the entries to read, the (entry, problem) pairs refused unread). An item the listing
    dead-letters (a name that is not UTF-8, a link out of the root) is counted as the sync counts
    it, failed, and never read: its name cannot even be hashed."""
    judged = [(e, entry_problem(e)) for e in listed]
    problems = [(e, p) for e, p in judged if p is not None]
    sp.changes["failed"] += len(problems)
    for item, problem in problems:
        sp.failures[doc_id(source, item.external_id)] = (printable_id(item.external_id), Failure("listing", *problem))
    return [e for e, p in judged if p is None], problems


def predict_listing(rt: Runtime, scfg: SourceConfig, *, allow_mass_delete: bool = False,
                    source: Source | None = None) -> SourcePlan:
    """The listing's classification of every item, with its rules, and nothing written."""
    sp = SourcePlan(scfg.name)
    src = source or make_source(scfg, rt.cfg.sources)
    try:
        listed = list(src.list())
    except SourceError as e:
        sp.error = str(e)
        return sp
    entries, problems = _refused(sp, scfg.name, listed)
    known = {d.external_id: d for d in rt.store.documents(scfg.name, include_deleted=True)}
    live_known = {k: d for k, d in known.items() if d.deleted_at is None}
    listed_ids = {e.external_id for e in entries}
    gone, kept = split_gone(scfg, live_known, listed_ids, problems, rt.cfg.sources)
    # kept under a folder that could not be read, as the sync keeps them (narrowed as it narrows them)
    narrowed = {d.doc_id: acl for d, acl in kept_narrowing(kept, problems)}
    sp.docs.extend(with_acl(d, narrowed[d.doc_id]) if d.doc_id in narrowed else d for d in kept)
    prior = rt.store.get_source(scfg.name)
    # every item listed, those refused above too: each falls in one class (`failed` for those), so
    # the classes but `deleted` add up to it, as the sync's `listed` does (`ListingResult.listed`)
    sp.listed, sp.would_delete = len(listed), len(gone)
    last_good = prior.last_good_listing_count if prior else None
    unsafe = check_delete_safety(scfg, len(entries) + len(kept), len(gone), last_good,
                                 indexed=lambda: indexed_to_delete(rt, scfg.name, gone))
    if unsafe and not allow_mass_delete:
        sp.unsafe = unsafe  # the sync aborts; the items are still classified, to show what tripped it
    gone_hashes = {d.content_hash: d for d in gone if d.content_hash}  # the listing's `gone_by_hash`
    default_acl = source_default_acl(scfg)
    reads = ReadStreak()  # the sync's rule: failing reads that are the source's failure
    includers: list[DocumentRecord] = []  # read, including other files: classified once all are read
    unchanged: set[int] = set()  # where in sp.docs the documents the cheap test keeps are
    read: list[DocumentRecord] = []  # the others read this pass
    for entry in entries:
        live_old = live_known.get(entry.external_id)
        if live_old is not None and _unchanged(src, live_old, entry, default_acl) and not read_again(live_old):
            sp.changes["unchanged"] += 1
            sp.docs.append(live_old)
            unchanged.add(len(sp.docs) - 1)
            continue
        described = False
        try:
            if src.needs_describe:
                entry = src.describe(entry)
            described = True
            data = src.read(entry)
            reads.ok()
        except (SourceError, TooLarge) as e:
            if (down := str(e) if isinstance(e, SourceUnavailable) else reads.failed(e)) is not None:
                sp.error = down
                return sp
            sp.changes["failed"] += 1
            why = Failure("listing", e.reason, str(e))
            sp.failures[doc_id(scfg.name, entry.external_id)] = (entry.external_id, why)
            if live_old is not None:  # the sync keeps what is indexed, with no more access than it now has
                narrow = narrowing(live_old, acl_of(entry)) if described else None
                sp.docs.append(live_old if narrow is None else with_acl(live_old, narrow))
            continue
        chash = content_hash(data)
        metadata = scanned_metadata(entry, data, chash)
        sp.data[chash] = data
        now = time.time()  # the row as the sync would write it (its times are not used)
        record = _Read(entry, entry.fingerprint, None, chash, metadata, live_old).record(
            scfg, chash, live_old.changed_at if live_old else now, now)
        if metadata.get("includes"):
            includers.append(record)
            continue
        sp.count(live_old, record, gone_hashes)
        sp.docs.append(record)
        read.append(record)
    _fold_includes(sp, _Reads(read, includers, unchanged, {d.doc_id for d in kept}), live_known,
                   {d.doc_id for d in gone}, gone_hashes)
    sp.changes["deleted"] = sum(1 for d in gone if d.doc_id not in sp.moves)  # as `_sweep_deletes` counts
    sp.error = reads.finished()
    return sp


@dataclass
class _Reads:
    """What `predict_listing` read: documents that include none, those that do, and where in
    `SourcePlan.docs` those the cheap test kept are."""

    plain: list[DocumentRecord]
    includers: list[DocumentRecord]
    unchanged: set[int]
    kept: set[str]  # ids kept under a folder that could not be listed: unreadable


def _fold_includes(sp: SourcePlan, reads: _Reads, live_known: dict[str, DocumentRecord], gone: Container[str],
                   gone_hashes: Mapping[str, DocumentRecord]) -> None:
    """The listing's `_fold_includes` (`assets.includes.fold`), over the same documents."""
    failed = {did for did, (_, f) in sp.failures.items() if f.stage == "listing"}
    live = {ext: d for ext, d in live_known.items() if d.doc_id not in gone}
    folded = fold(live, reads.plain, reads.includers, [sp.docs[i] for i in reads.unchanged],
                  [d for d in live.values() if d.doc_id in failed], reads.kept | failed)
    for i in sorted(reads.unchanged):
        if (made := folded.updated.get(sp.docs[i].doc_id)) is not None:
            sp.changes["unchanged"] -= 1
            sp.changes["updated"] += 1
            sp.docs[i] = made
    for i, d in enumerate(sp.docs):  # failed to read: kept, unless what it included changed since
        if (marked := folded.marked.get(d.doc_id)) is not None:
            sp.docs[i] = d.replace(metadata=marked.metadata)
    for made in folded.includers:
        sp.count(live_known.get(made.external_id), made, gone_hashes)
        sp.docs.append(made)
