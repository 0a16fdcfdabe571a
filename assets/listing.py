"""The `source_listing` stage: list a source, classify every item against the document store,
and apply the diff — with a safe delete sweep.

Classes: new, updated (content hash changed), unchanged, moved (same content at a new id: the
content-keyed caches serve it, nothing is re-parsed or re-embedded), acl (ACL/metadata-only
change: indexes are updated without re-embedding), deleted, failed (unreadable / too large, or
listed with a problem: a name that is not UTF-8 or longer than the store keeps, a symlink out of
the root). A failed item is dead-lettered with its reason and the rest of the source goes on;
the dead letters of items no longer listed are cleared.

The delete sweep never runs on bad evidence: a listing that raised, came back empty, or shrank
below the source's `min_count` or `min_ratio` of the last good listing aborts the whole sync
before anything is written, unless the operator explicitly allows a mass delete.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assets.includes import fold, own_hash, read_again, scanned_metadata
from assets.listing_access import (
    acl_of,
    kept_narrowing,
    narrow_access,
    narrowing,
    restrict,
    set_acls,
    source_default_acl,
    withhold_removed_sources,
    withhold_unreadable,
)
from assets.runtime import Runtime
from connectors.acl import ACL_BEFORE, both
from connectors.config import SourceConfig
from connectors.errors import SourceError, SourceUnavailable, TooLarge, UnreadableAcl, UnsafeDeleteError
from connectors.identity import content_hash, doc_id, short_hash
from connectors.shards import Shard
from connectors.sources import make_source, source_filter
from connectors.sources.base import Source, SourceEntry, move_key
from connectors.store import DocumentRecord

# What a sync does to each listed document, in reporting order; `orchestration/report.py` imports it.
CLASSES = ("new", "updated", "unchanged", "moved", "acl", "deleted", "failed")

# Sources whose listing omits ACLs (S3) are trusted by fingerprint + modification time, and S3's
# LastModified has one-second resolution: a metadata-only rewrite (an ACL change) in the same
# second as our describe() keeps both, so a stale ACL would be trusted forever. A description
# taken that close to the object's modification is stored with a "racy" fingerprint and checked
# again on the next sync (cf. racy git). The margin covers the resolution plus clock skew.
RACY_SECONDS = 2.0
RACY_MARK = "~racy"


MAX_EXTERNAL_ID = 1024  # characters: documents.external_id and dead_letters.external_id are String(1024)


def printable_id(external_id: str) -> str:
    """An id as storable text: bytes that were not UTF-8 (kept by the OS as surrogate escapes)
    shown as `\\xff`, cut to what the store keeps."""
    text = external_id.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text if len(text) <= MAX_EXTERNAL_ID else text[: MAX_EXTERNAL_ID - 1] + "…"


def entry_problem(entry: SourceEntry) -> tuple[str, str] | None:
    """Why an item cannot be indexed under its id: (reason code, message), or None."""
    if entry.problem:
        return entry.problem
    name = printable_id(entry.external_id)
    try:
        entry.external_id.encode("utf-8")
    except UnicodeEncodeError:
        return "bad-name", f"the name {name} is not valid UTF-8 (bytes shown escaped); rename the file"
    if len(entry.external_id) > MAX_EXTERNAL_ID:
        return "bad-name", (f"the path is {len(entry.external_id)} characters long, over the limit of "
                            f"{MAX_EXTERNAL_ID}; shorten it: {entry.external_id}")
    return None


def _dead_letter_problems(rt: Runtime, source: str, problems: list[tuple[SourceEntry, tuple[str, str]]]) -> None:
    for entry, (reason, message) in problems:
        rt.store.add_dead_letter(doc_id=doc_id(source, entry.external_id), source=source,
                                 external_id=printable_id(entry.external_id), stage="listing", reason=reason,
                                 error=message)


def _clear_stale_dead_letters(rt: Runtime, source: str, entries: list[SourceEntry],
                              problems: list[tuple[SourceEntry, tuple[str, str]]]) -> None:
    """Dead letters of items no longer listed go (the file vanished or was renamed), and so do
    listing problems of items now listed without one (a renamed link, a changed option)."""
    listed = {doc_id(source, e.external_id) for e in entries}
    still = {doc_id(source, e.external_id) for e, _ in problems}
    unlisted = unlisted_folders(problems)
    stale = [d.id for d in rt.store.dead_letters(source=source)
             if (d.doc_id not in listed and not d.external_id.startswith(unlisted))
             or (d.stage == "listing" and d.reason in PROBLEM_REASONS and d.doc_id not in still)]
    rt.store.delete_dead_letters(stale)


PROBLEM_REASONS = ("bad-name", "external-symlink", "broken-symlink", "symlink-loop", "unreadable-folder",
                   "excluded-target", "link-fanout", "not-a-file")


def unlisted_folders(problems: list[tuple[SourceEntry, tuple[str, str]]]) -> tuple[str, ...]:
    """The folders (`rel/`) a listing could not read: what it knew under them is kept as it
    was, neither swept as deleted nor cleared of its dead letters (`split_gone`)."""
    return tuple(e.external_id for e, (reason, _) in problems if reason == "unreadable-folder")


def split_gone(scfg: SourceConfig, live: dict[str, DocumentRecord], listed_ids: Container[str],
               problems: list[tuple[SourceEntry, tuple[str, str]]], sources: Sequence[SourceConfig] = (),
               ) -> tuple[list[DocumentRecord], list[DocumentRecord]]:
    """(gone, kept) of the live documents a listing did not list: those under a folder it could
    not read are kept as they were, unless the source's include/exclude rules now leave them out
    (an operator excluding a folder must see it go, readable or not) or a narrower source of
    `sources` takes them (`source_filter`); the rest are gone. The sync and `bindery plan` both
    apply it; the delete guard counts the kept ones as listed."""
    unlisted = unlisted_folders(problems)
    wanted = source_filter(scfg, sources) if unlisted else None
    gone: list[DocumentRecord] = []
    kept: list[DocumentRecord] = []
    for k, d in live.items():
        if k in listed_ids:
            continue
        (kept if wanted is not None and k.startswith(unlisted) and wanted(k) else gone).append(d)
    return gone, kept


@dataclass
class ListingResult:
    source: str
    # every item the source listed, those refused unread (a broken link, a bad name) included: each
    # counts in one class but `deleted`, which then add up to it (`bindery plan` reports the same)
    listed: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    deleted_ids: list[str] = field(default_factory=list)
    changed_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # what this listing dead-lettered (its shard's items only): (path as shown, reason, message)
    failures: list[tuple[str, str, str]] = field(default_factory=list)


def spool_path(rt: Runtime, chash: str) -> Path:
    return rt.cfg.data_path / "spool" / chash


def read_content(rt: Runtime, source: Source, doc: DocumentRecord) -> bytes:
    """Bytes of a document: from the spool the listing left, else from the source again."""
    own = own_hash(doc)  # an AsciiDoc page's content hash also covers the files it includes
    p = spool_path(rt, own) if own else None
    if p is not None and p.exists():
        return p.read_bytes()
    entry = SourceEntry(doc.external_id, doc.uri, doc.size or 0, doc.fingerprint or "", doc.source_modified_at or 0.0)
    data = source.read(entry)
    if own and content_hash(data) != own:
        # not the bytes the listing hashed and judged the ACL of: never parse them as that version
        raise SourceError(f"{doc.external_id}: its bytes changed since the listing; the next sync reads it again")
    return data


def check_delete_safety(scfg: SourceConfig, listed: int, would_delete: int, last_good: int | None, *,
                        indexed: Callable[[], int] | None = None) -> str | None:
    """Why this listing is not trustworthy enough to delete from, or None when it is.

    An empty listing is refused whatever it would delete (an unmounted share). A small one
    (`min_count`, `min_ratio` of the last good listing) is refused when its sweep would take
    something out of an index: `indexed()` says how many of the `would_delete` documents some
    index holds or is being written (`indexed_to_delete`; default all), asked only then.
    Deleting only documents no index holds (dead letters, files that stopped a first build)
    wipes nothing."""
    if would_delete == 0:
        return None
    if listed == 0:
        return f"listing of {scfg.name!r} came back empty; {would_delete} documents would be deleted"
    if listed < scfg.min_count:
        why = f"has {listed} items, below the configured minimum {scfg.min_count}"
    elif last_good and listed < scfg.min_ratio * last_good:
        why = (f"shrank to {listed} items from {last_good} at the last good listing "
               f"(below min_ratio {scfg.min_ratio:.0%})")
    else:
        return None
    held = would_delete if indexed is None else indexed()
    if held == 0:
        return None
    of_them = f" ({held} of them indexed)" if held != would_delete else ""
    return f"listing of {scfg.name!r} {why}; {would_delete} documents would be deleted{of_them}"


def _unchanged(src: Source, old: DocumentRecord, entry: SourceEntry, default_acl: list[str]) -> bool:
    """Cheap test from the listing alone. Sources whose listing omits ACLs (S3) are compared
    by fingerprint and modification time (a metadata rewrite keeps the ETag, moves the time);
    an ACL they took from the source's configuration must still match that configuration. An
    item found at another location (a `root` moved with its files, which keeps their times) is
    read again: its hits must not point where the file no longer is."""
    if old.fingerprint != entry.fingerprint or old.source_modified_at != entry.modified_at or old.uri != entry.uri:
        return False
    if src.needs_describe:
        return (old.metadata or {}).get("acl_from") == "metadata" or old.acl == default_acl
    return bool(acl_of(entry) == old.acl)


def change_class(live_old: DocumentRecord | None, chash: str, acl: list[str], metadata: dict[str, Any],
                 gone_hashes: Container[str], uri: str | None = None) -> str:
    """The class of a listed item whose bytes were read: `bindery plan` predicts with the same rule.
    `uri`: where the item is now; a new one (its source's `root` moved) is a metadata change."""
    if live_old is not None and live_old.content_hash == chash:
        # what the listing itself wrote (the ACL before the last change) is not the source's news
        stored = {k: v for k, v in (live_old.metadata or {}).items() if k != ACL_BEFORE}
        meta_changed = acl != list(live_old.acl) or metadata != stored or (uri is not None and uri != live_old.uri)
        return "acl" if meta_changed else "unchanged"
    if live_old is not None:
        return "updated"
    return "moved" if chash in gone_hashes else "new"


def _list_source(rt: Runtime, scfg: SourceConfig, src: Source) -> list[SourceEntry]:
    """Everything the source lists; a listing that cannot complete is recorded and re-raised.
    One that failed on an ACL file first withholds the documents that file governs, and applies
    what the rest of the walk takes away (`_narrow_read`)."""
    listed: list[SourceEntry] = []
    try:
        for entry in src.list():
            listed.append(entry)
        return listed
    except SourceError as e:
        if isinstance(e, UnreadableAcl):
            n = withhold_unreadable(rt, scfg, e)
            narrowed = _narrow_read(rt, scfg, src, listed)
            said = [f"{n} document{'s' if n != 1 else ''} it governs {'are' if n != 1 else 'is'} withheld from "
                    "everyone until it can be read"] if n else []
            said += [f"the access the rest of the listing takes away is applied ({narrowed} "
                     f"document{'s' if narrowed != 1 else ''})"] if narrowed else []
            if said:
                e = UnreadableAcl(f"{e}; {'; '.join(said)}", folders=e.folders, origins=e.origins)
        rt.store.record_listing(scfg.name, None, ok=False, error=str(e))
        rt.store.add_event("listing-failed", str(e), source=scfg.name)
        raise e from None


def _narrow_read(rt: Runtime, scfg: SourceConfig, src: Source, listed: list[SourceEntry]) -> int:
    """Of a listing an unreadable ACL file failed, apply what takes access away (as a refused
    delete sweep does, `narrow_access`): every other file it read is still a statement about
    who may read it. One broken `.bindery-acl` anywhere, which whoever may write a folder can
    make, blocked every revocation in the source for as long as it stayed broken (an attacker
    pass). Never a widening; what fails here is an event, the ACL file stays the reason."""
    known = {d.external_id: d for d in rt.store.documents(scfg.name)}
    problems = [(x, p) for x in listed if (p := entry_problem(x)) is not None]
    entries = [x for x in listed if entry_problem(x) is None]
    try:
        return narrow_access(rt, scfg, src, entries, known, [], problems)
    except Exception as e:
        rt.store.add_event("access-not-narrowed", f"after an unreadable ACL file failed the listing: {e}",
                           source=scfg.name)
        return 0


def _moves(entries: list[SourceEntry], known: dict[str, DocumentRecord], gone: list[DocumentRecord],
           shard: Shard | None) -> list[tuple[DocumentRecord, list[SourceEntry]]]:
    """The documents gone from their path (this shard's) that an item new to the listing may have
    been moved to: (document, the new items with its fingerprint)."""
    fresh: dict[str, list[SourceEntry]] = {}
    for e in entries:
        if (was := known.get(e.external_id)) is None or was.deleted_at is not None:
            fresh.setdefault(move_key(e.fingerprint.removesuffix(RACY_MARK)), []).append(e)
    return [(d, news) for d in gone if d.fingerprint and (shard is None or shard.holds(d.doc_id))
            and (news := fresh.get(move_key(d.fingerprint.removesuffix(RACY_MARK)), []))]


def indexed_to_delete(rt: Runtime, source: str, gone: list[DocumentRecord]) -> int:
    """How many of the documents a listing would delete some generation's indexes hold, or are
    being written into (`DocumentStore.in_any_index`): what the delete guard weighs beside the
    listing's size. Removing the junk files that stopped a first build was refused as a mass
    delete, though no index held any of them (an operator pass)."""
    return len(rt.store.in_any_index(source, {d.doc_id for d in gone})) if gone else 0


def _guard_deletes(rt: Runtime, scfg: SourceConfig, listed: int, gone: list[DocumentRecord],
                   allow_mass_delete: bool, narrow: Callable[[], int]) -> None:
    """The delete guard: refuse (and record why) a sweep that looks like a broken listing, after
    `narrow` applied whatever of it takes access away."""
    prior = rt.store.get_source(scfg.name)
    last_good = prior.last_good_listing_count if prior else None
    asked: list[int] = []  # read from the store only when a size rule trips

    def indexed() -> int:
        asked.append(indexed_to_delete(rt, scfg.name, gone))
        return asked[-1]

    unsafe = check_delete_safety(scfg, listed, len(gone), last_good, indexed=indexed)
    if unsafe and not allow_mass_delete:
        n = narrow()
        kept = (f"Nothing was changed but the access of {n} document{'s' if n != 1 else ''} the listing "
                "narrows (taken away at once)." if n else "Nothing was changed.")
        # the CLI's flag and the UI's run config: the same message reaches both (a UI pass found
        # only the flag named)
        msg = (f"delete sweep aborted: {unsafe}. {kept} If intended, re-run with --allow-mass-delete (in the UI: "
               "run config ops.source_listing.config.allow_mass_delete: true).")
        rt.store.record_listing(scfg.name, listed, ok=False, error=msg)
        rt.store.add_event("delete-sweep-aborted", msg, source=scfg.name,
                           details={"listed": listed, "would_delete": len(gone),
                                    "indexed": asked[-1] if asked else None, "last_good": last_good})
        raise UnsafeDeleteError(msg)
    if unsafe:
        rt.store.add_event("mass-delete-allowed", f"operator override: {unsafe}", source=scfg.name)


@dataclass
class _Sweep:
    """What one listing pass accumulates: the result, rows to write, documents only touched."""

    res: ListingResult
    known: dict[str, DocumentRecord]
    gone_by_hash: dict[str, DocumentRecord]
    default_acl: list[str]
    now: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # described and read this pass
    narrow: list[tuple[DocumentRecord, list[str]]] = field(default_factory=list)  # kept, with less access
    # documents gone from their path whose bytes an item new here holds: (the document, the
    # access both give, the new item's doc id), kept served (`DocumentStore.mark_moved`)
    moved: dict[str, tuple[DocumentRecord, list[str], str]] = field(default_factory=dict)
    at: int = 0  # the index of the entry being swept
    streak: ReadStreak = field(default_factory=lambda: ReadStreak())
    unchanged: list[DocumentRecord] = field(default_factory=list)  # kept by the cheap test, not read
    failed: set[str] = field(default_factory=set)  # could not be described or read: dead-lettered
    # read this pass and including other files: classified once every file is read (`_fold_includes`)
    includers: list[_Read] = field(default_factory=list)


@dataclass
class _Read:
    """A listed item read this pass, waiting for its row: what `_keep_read` needs."""

    entry: SourceEntry
    fingerprint: str
    data: bytes | None  # None: already in the spool (an includer waits without its bytes in memory)
    chash: str  # its bytes' hash
    metadata: dict[str, Any]
    old: DocumentRecord | None

    def record(self, scfg: SourceConfig, content: str, changed_at: float, now: float) -> DocumentRecord:
        acl = acl_of(self.entry)
        acl_hash = short_hash(acl, 16)
        metadata = self.metadata
        if self.old is not None and self.old.acl_hash != acl_hash:
            # a new ACL: the one it replaces, which decides whether a kept version (an older
            # version indexed under it) may follow the change (index_stage.unsafe_kept_versions)
            metadata = {**metadata, ACL_BEFORE: list(self.old.acl)}
        return DocumentRecord(
            doc_id=doc_id(scfg.name, self.entry.external_id), source=scfg.name, external_id=self.entry.external_id,
            uri=self.entry.uri, content_hash=content, fingerprint=self.fingerprint, size=self.entry.size, acl=acl,
            acl_hash=acl_hash, metadata=metadata, source_modified_at=self.entry.modified_at,
            first_seen=self.old.first_seen if self.old else now, last_seen=now, changed_at=changed_at,
            deleted_at=None)


TRANSIENT_STREAK = 3  # that many items in a row timing out or 5xx-ing: the source, not the items


@dataclass
class ReadStreak:
    """When failing reads are the source's failure, not the items': TRANSIENT_STREAK transient
    failures in a row, or, with too few items for a streak, two or more and no read succeeding.
    The sync's rule, which `bindery plan` applies to its own reads."""

    streak: int = 0  # items in a row that failed with a transient source error
    read: int = 0  # items read
    last: str = ""  # the last transient failure

    def ok(self) -> None:
        self.streak, self.read = 0, self.read + 1

    def failed(self, e: SourceError | TooLarge) -> str | None:
        """Count a failed item; the source's failure it makes, if it does."""
        if isinstance(e, SourceError) and e.transient:
            self.streak, self.last = self.streak + 1, str(e)
            if self.streak >= TRANSIENT_STREAK:
                return f"{e} ({self.streak} items in a row failed like this: the source is not answering)"
        return None

    def finished(self) -> str | None:
        """After the last item: the source's failure the whole pass makes, if it does."""
        if self.streak >= 2 and not self.read:
            return f"{self.last} (every item this sync read failed like this: the source is not answering)"
        return None


def _failed(rt: Runtime, sw: _Sweep, scfg: SourceConfig, entry: SourceEntry, did: str, old: DocumentRecord | None,
            e: SourceError | TooLarge, trace: str | None = None, *, described: bool = False) -> None:
    """A listed item that could not be described or read: dead-lettered; an indexed previous
    version stays (only the new version is missing), with no more access than the item's ACL
    now gives (`described`: the entry carries it) — a file narrowed as it became unreadable
    must not stay readable as it was. A run of transient failures (timeouts, 5xx after the
    retries) is the source's: SourceUnavailable, before this one is dead-lettered."""
    if old is not None and described and (narrow := narrowing(old, acl_of(entry))) is not None:
        sw.narrow.append((old, narrow))  # also when this failure is the one that ends the listing
    if (down := sw.streak.failed(e)) is not None:
        raise SourceUnavailable(down) from e
    sw.res.counts["failed"] += 1
    sw.res.failures.append((entry.external_id, e.reason, str(e)))
    sw.failed.add(did)
    rt.store.add_dead_letter(doc_id=did, source=scfg.name, external_id=entry.external_id,
                             stage="listing", reason=e.reason, error=str(e), trace=trace)
    if old is not None:
        sw.touched.append(did)


def _undescribed_acl(old: DocumentRecord, entry: SourceEntry, default_acl: list[str],
                     e: SourceError) -> list[str] | None:
    """The ACL an indexed object keeps when its description (S3's HEAD) is refused, or None when
    it keeps its own: changed since it was indexed (new bytes or metadata), its new ACL is
    unknown, so it is withheld until it can be described, as a document an unreadable ACL file
    governs; unchanged but with its ACL from the configuration, the configured default it now
    gets applies at once (narrowing only). A HEAD refused while listing works (a bucket policy
    denying some keys) kept such objects at their old, wider ACL indefinitely (an attacker
    pass). A transient failure changes nothing: the next sync describes it again."""
    if e.transient:
        return None
    if old.fingerprint != entry.fingerprint or old.source_modified_at != entry.modified_at:
        return [] if old.acl else None
    if (old.metadata or {}).get("acl_from") != "metadata":
        return narrowing(old, default_acl)
    return None


def _described(src: Source, entry: SourceEntry) -> tuple[SourceEntry, str]:
    """The entry with ACL and metadata, and the fingerprint to store (marked racy when the
    description was taken too close to the object's modification)."""
    if not src.needs_describe:
        return entry, entry.fingerprint
    described_at = time.time()
    entry = src.describe(entry)
    racy = described_at < entry.modified_at + RACY_SECONDS
    return entry, entry.fingerprint + (RACY_MARK if racy else "")


def _sweep_entry(rt: Runtime, sw: _Sweep, scfg: SourceConfig, src: Source, entry: SourceEntry) -> None:
    """Classify one listed item: unchanged by the cheap test, else describe, read, hash, spool
    new bytes, and queue its document row."""
    old = sw.known.get(entry.external_id)
    did = doc_id(scfg.name, entry.external_id)
    live_old = old if old is not None and old.deleted_at is None else None
    if live_old is not None and _unchanged(src, live_old, entry, sw.default_acl) and not read_again(live_old):
        sw.touched.append(did)
        sw.res.counts["unchanged"] += 1
        sw.unchanged.append(live_old)
        return
    try:
        entry, fingerprint = _described(src, entry)
    except SourceUnavailable:
        raise  # the whole source: not this item's dead letter (run_listing)
    except SourceError as e:
        if live_old is not None and (narrow := _undescribed_acl(live_old, entry, sw.default_acl, e)) is not None:
            sw.narrow.append((live_old, narrow))
        _failed(rt, sw, scfg, entry, did, live_old, e)
        return
    try:
        data = src.read(entry)  # raises TooLarge past the source's max_file_mb
    except SourceUnavailable:
        raise
    except (SourceError, TooLarge) as e:
        _failed(rt, sw, scfg, entry, did, live_old, e, traceback.format_exc(), described=True)
        return
    sw.read.append(did)
    sw.streak.ok()
    chash = content_hash(data)
    read = _Read(entry, fingerprint, data, chash, scanned_metadata(entry, data, chash), old)
    if read.metadata.get("includes"):  # its content hash covers the files it includes: once all are read
        _spool(rt, chash, data)  # the parse stage clears it, whatever the class turns out to be
        sw.includers.append(replace(read, data=None))
        return
    _keep_read(rt, sw, scfg, read, chash)


def _spool(rt: Runtime, chash: str, data: bytes) -> None:
    """Keep bytes read for the parse stage (`read_content`), under their own hash."""
    spool = rt.cfg.data_path / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    if not (spool / chash).exists():
        (spool / chash).write_bytes(data)


def _keep_read(rt: Runtime, sw: _Sweep, scfg: SourceConfig, read: _Read, content: str) -> None:
    """Classify an item read this pass by its content hash (its bytes', or with the files it
    includes, `assets.includes`), spool new bytes (under their own hash) and queue its row."""
    old = read.old
    live_old = old if old is not None and old.deleted_at is None else None
    cls = change_class(live_old, content, acl_of(read.entry), read.metadata, sw.gone_by_hash, read.entry.uri)
    if live_old is not None and cls in ("acl", "unchanged"):
        changed_at = sw.now if cls == "acl" else live_old.changed_at
    else:
        changed_at = sw.now
        if read.data is not None:
            _spool(rt, read.chash, read.data)
    sw.res.counts[cls] += 1
    record = read.record(scfg, content, changed_at, sw.now)
    if cls == "moved":  # served as the first copy found until that copy is indexed (`_sweep_deletes`)
        was = sw.gone_by_hash[content]
        if was.doc_id not in sw.moved:
            sw.moved[was.doc_id] = (was, both(list(was.acl), acl_of(read.entry)), record.doc_id)
    if cls != "unchanged":
        sw.res.changed_ids.append(record.doc_id)
    sw.rows.append(record.columns())


def _fold_includes(rt: Runtime, sw: _Sweep, scfg: SourceConfig, gone: Container[str],
                   unreadable: set[str]) -> None:
    """Once every item is read: the documents that include other files (`assets.includes.fold`),
    from the source's documents as this listing leaves them (`gone`: the ids it deletes;
    `unreadable`: those under a folder that could not be listed, besides the reads that failed).
    An includer read this pass is classified by its content hash; one the cheap test kept is
    updated when what it includes changed; one whose read failed is marked stale or cleared."""
    live = {ext: d for ext, d in sw.known.items() if d.deleted_at is None and d.doc_id not in gone}
    provisional = [r.record(scfg, r.chash, sw.now, sw.now) for r in sw.includers]
    folded = fold(live, [DocumentRecord(**r) for r in sw.rows], provisional, sw.unchanged,
                  [d for d in live.values() if d.doc_id in sw.failed], unreadable | sw.failed)
    for read, made in zip(sw.includers, folded.includers, strict=True):
        _keep_read(rt, sw, scfg, replace(read, metadata=made.metadata), made.content_hash or read.chash)
    for made in folded.updated.values():
        sw.res.counts["unchanged"] -= 1
        sw.res.counts["updated"] += 1
        sw.res.changed_ids.append(made.doc_id)
        sw.rows.append(made.replace(changed_at=sw.now, last_seen=sw.now).columns())
    sw.rows += [marked.replace(last_seen=sw.now).columns() for marked in folded.marked.values()]


def _sweep_deletes(rt: Runtime, res: ListingResult, gone: list[DocumentRecord], now: float,
                   moved: dict[str, tuple[DocumentRecord, list[str], str]]) -> None:
    """Remove documents no longer listed (the guard has already approved the count). One whose
    bytes are now at another path (`moved`) stays served while the indexes hold it and that
    path's document is live with the same bytes, under the access both give
    (`DocumentStore.mark_moved`): a rename took it out of search for the whole sync, and for
    good when the sync was interrupted (an operator pass)."""
    res.deleted_ids = [d.doc_id for d in gone]
    away = [d.doc_id for d in gone if d.doc_id in moved]
    # a move's old path counts as `moved` alone: "1 moved, 1 deleted" for one rename read as two
    # changes (a new user's pass), and the `deleted` column is what an operator checks before a sync
    res.counts["deleted"] = len(gone) - len(away)
    if away:  # narrowed while still live (set_acls changes live rows only), in the indexes too (a
        # sync stopped before its index step leaves no wider copy there), then marked in one write
        restrict(rt, res.source, [(d, acl) for d, acl, _ in (moved[i] for i in away)
                                   if narrowing(d, acl) is not None])
        rt.store.mark_moved([(i, moved[i][2]) for i in away], now)
    if left := [d.doc_id for d in gone if d.doc_id not in moved]:
        # purge first: a process killed between the two leaves the documents alive, so the next
        # listing finds them gone again and repeats both; the other order would strand their
        # chunks (a deleted document is never swept twice)
        rt.store.purge_documents(left)
        rt.store.mark_deleted(left, now)


def run_listing(rt: Runtime, source_name: str, *, allow_mass_delete: bool = False,
                source: Source | None = None, shard: Shard | None = None) -> ListingResult:
    """List a source, classify every item (CLASSES), store new bytes in the spool, write the
    document rows, dead-letter unreadable items and sweep deletions behind the delete guard.
    With a `shard`, the whole listing is still taken and judged by the delete-safety guard, and
    only the shard's own documents are then written or deleted (connectors.shards)."""
    started = time.perf_counter()
    scfg = rt.cfg.source(source_name)
    rt.store.upsert_source(scfg.name, scfg.kind, scfg.model_dump(mode="json"))
    withhold_removed_sources(rt, scfg.name)
    src = source or make_source(scfg, rt.cfg.sources)
    listed = _list_source(rt, scfg, src)
    problems = [(e, p) for e in listed if (p := entry_problem(e)) is not None]
    entries = [e for e in listed if entry_problem(e) is None]
    known = {d.external_id: d for d in rt.store.documents(scfg.name, include_deleted=True)}
    listed_ids = {e.external_id for e in entries}
    gone, kept = split_gone(scfg, {k: d for k, d in known.items() if d.deleted_at is None}, listed_ids, problems,
                            rt.cfg.sources)
    narrowed_kept = kept_narrowing(kept, problems)
    mine = entries if shard is None else [e for e in entries if shard.holds(doc_id(scfg.name, e.external_id))]
    _guard_deletes(rt, scfg, len(entries) + len(kept), gone, allow_mass_delete,
                   lambda: narrow_access(rt, scfg, src, mine, known, _moves(entries, known, gone, shard), problems,
                                          [d for d in gone if shard is None or shard.holds(d.doc_id)])
                   + restrict(rt, scfg.name, narrowed_kept))

    res = ListingResult(scfg.name, len(listed))
    baseline = len(entries) + len(kept)  # what the guard judged: the baseline the next listing is judged against
    gone_by_hash = {d.content_hash: d for d in gone if d.content_hash}
    gone_ids = {d.doc_id for d in gone}  # the whole source's: a shard's includer reads any file
    all_problems = problems  # dead letters are cleared against the whole listing
    if shard is not None:  # judged whole above; from here on only this shard's documents
        entries = [e for e in entries if shard.holds(doc_id(scfg.name, e.external_id))]
        problems = [(e, p) for e, p in problems if shard.holds(doc_id(scfg.name, e.external_id))]
        gone = [d for d in gone if shard.holds(d.doc_id)]
    res.counts["failed"] += len(problems)
    res.failures += [(printable_id(e.external_id), reason, message) for e, (reason, message) in problems]
    _dead_letter_problems(rt, scfg.name, problems)
    sw = _Sweep(res, known, gone_by_hash, source_default_acl(scfg), time.time())
    gone_away: SourceUnavailable | None = None
    try:
        for sw.at, entry in enumerate(entries):
            _sweep_entry(rt, sw, scfg, src, entry)
        if (down := sw.streak.finished()) is not None:  # too few items for a streak, every one failed
            raise SourceUnavailable(down)
    except SourceUnavailable as e:
        gone_away = e
    _fold_includes(rt, sw, scfg, gone_ids, {d.doc_id for d in kept})
    # what was read is kept, even when the source went away part-way (as after a crash here: the
    # next sync goes on from it)
    rt.store.upsert_documents(sw.rows)
    rt.store.touch_documents(sw.touched, sw.now)
    if gone_away is None:
        set_acls(rt, sw.narrow + narrowed_kept)  # this run's index step writes them
    else:  # the run stops here, with no index step to carry the narrowing: written there too,
        # and what the listing says of the items not reached takes access away as in a refused sweep
        restrict(rt, scfg.name, sw.narrow + narrowed_kept)
        try:  # the items not reached; whatever happens here, the listing's failure is what is recorded
            narrow_access(rt, scfg, src, entries[sw.at + 1:], known, [])
        except Exception as e:
            rt.store.add_event("access-not-narrowed", f"after the source stopped answering: {e}", source=scfg.name)
        # a failed listing (the run fails with the reason, no delete sweep, nothing indexed is
        # touched), not one dead letter per item still to read
        rt.store.record_listing(scfg.name, None, ok=False, error=str(gone_away))
        rt.store.add_event("listing-failed", str(gone_away), source=scfg.name)
        raise gone_away
    _sweep_deletes(rt, res, gone, sw.now, sw.moved)
    # a document that became a problem item (a link now dangling) was just swept, and its dead
    # letters purged with it: its problem is recorded again, as the reason it left
    swept = set(res.deleted_ids)
    _dead_letter_problems(rt, scfg.name, [(e, p) for e, p in problems if doc_id(scfg.name, e.external_id) in swept])
    _clear_stale_dead_letters(rt, scfg.name, listed, all_problems)
    # an item that failed to read (unreadable, too large, gone mid-listing) and reads now leaves
    # the table, even when its bytes turn out unchanged and nothing downstream runs again
    if sw.read and (recovered := rt.store.dead_letter_docs(("listing",)) & set(sw.read)):
        rt.store.resolve_dead_letters(sorted(recovered), stages=("listing",))
    # the whole listing, even for a shard; what is kept under a folder that could not be read
    # counts in the baseline the next listing is judged against: one such sync must not lower it
    rt.store.record_listing(scfg.name, baseline, ok=True, probe=None)
    res.seconds = time.perf_counter() - started
    return res
