"""What a listing does to access: the ACLs items carry, and the access a sync takes away even
when it stops short of its delete sweep.

Access is only ever taken away on partial evidence: a document whose new version cannot be
read, or that sits under a folder the listing could not read, keeps the principals both its
stored and its listed ACL name (`narrowing`); a listing the delete guard refuses still applies
every narrowing it holds (`narrow_access`); an unreadable ACL file withholds the documents it
governs from everyone (`withhold_unreadable`); a source taken out of the configuration leaves
search at the next listing of any source (`withhold_removed_sources`). The store is written at
once (the query service checks every hit against it); `restrict` also writes the indexes when no
index step follows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from assets.runtime import Runtime
from connectors.acl import both, source_default
from connectors.config import SourceConfig, narrower_within
from connectors.errors import SourceError, SourceUnavailable, UnreadableAcl
from connectors.identity import short_hash
from connectors.sources import source_filter
from connectors.sources.base import Source, SourceEntry
from connectors.store import DocumentRecord

__all__ = [
    "acl_of",
    "kept_narrowing",
    "narrow_access",
    "narrowing",
    "restrict",
    "set_acls",
    "source_default_acl",
    "withhold_removed_sources",
    "withhold_unreadable",
]


def acl_of(entry: SourceEntry) -> list[str]:
    """Sources resolve defaults themselves; an empty ACL means nobody, never everybody."""
    return sorted(entry.acl)


def source_default_acl(scfg: SourceConfig) -> list[str]:
    """The ACL a source gives items that carry none (connectors.acl.source_default)."""
    return sorted(source_default(scfg).principals)


def narrowing(old: DocumentRecord, acl: list[str]) -> list[str] | None:
    """The ACL `old` keeps when what the source now says about it (`acl`) cannot be applied in
    full (its new bytes cannot be read; its folder cannot be listed): who both let in (access is
    only ever taken away on such evidence); None when that changes nothing."""
    kept = sorted(both(list(old.acl), acl))
    return kept if kept != sorted(old.acl) else None


def kept_narrowing(kept: list[DocumentRecord], problems: list[tuple[SourceEntry, tuple[str, str]]],
                   ) -> list[tuple[DocumentRecord, list[str]]]:
    """(document, narrowed ACL) of the documents kept under folders that could not be listed,
    where the ACL those folders now inherit (a sidecar above them changed) takes access away."""
    folders = sorted(((e.external_id, acl_of(e)) for e, (reason, _) in problems if reason == "unreadable-folder"),
                     key=lambda f: -len(f[0]))  # the innermost folder first
    out = []
    for d in kept:
        acl = next((a for folder, a in folders if d.external_id.startswith(folder)), None)
        if acl is not None and (narrow := narrowing(d, acl)) is not None:
            out.append((d, narrow))
    return out


def set_acls(rt: Runtime, docs: list[tuple[DocumentRecord, list[str]]]) -> int:
    """Store these documents' new ACLs (the query service checks every hit against the store, so
    it takes effect at once; the next index run rewrites the indexes' copies). Returns how many."""
    return rt.store.set_acls([(d.doc_id, d.acl_hash, acl, short_hash(acl, 16)) for d, acl in docs])


def restrict(rt: Runtime, source: str, docs: list[tuple[DocumentRecord, list[str]]]) -> int:
    """`set_acls` in a run that stops at its listing (a refused delete sweep, an unreadable ACL
    file), so no index step follows to carry the change: it is written into every retained
    generation's indexes here (`index_stage.apply_access`, which notes a failure as an event: the
    store still refuses the documents to every reader, and the next successful run rewrites them)."""
    from assets.index_stage import apply_access  # the index stage reads spooled bytes from here

    n = set_acls(rt, docs) if docs else 0
    if n:
        apply_access(rt, source, [d.doc_id for d, _ in docs])
    return n


def withhold_removed_sources(rt: Runtime, listing: str | None = None) -> int:
    """Withhold from everyone the documents of sources the configuration no longer names (and
    those a narrower source now takes from a wider one, below): a
    source taken out of it leaves search at the next listing of any source (the query service
    follows the store, not its own configuration, which may be older or newer). The same run's
    index step then takes them out of every retained generation's indexes (`run_index`); their
    store rows, chunks and embeddings stay until `bindery gc` (orchestration.removed_sources).
    Put back, its next listing and index run restore them from the caches."""
    removed = rt.store.removed_sources(rt.cfg.source_names())
    docs = [d for name in removed for d in rt.store.documents(name) if d.acl]
    n = set_acls(rt, [(d, []) for d in docs]) if docs else 0
    # and what a narrower source now takes from a wider one: the wider one's next listing deletes
    # it, but a sync of the narrower source alone left the wider one's copies readable as they
    # were until then (an attacker pass: the README says they leave its search at once). Written
    # into the wider source's indexes here, as no index step of its own follows. The source being
    # listed (`listing`) sees to its own, in its sweep or its refusal.
    for wider in rt.cfg.sources:
        if wider.name != listing and narrower_within(wider, rt.cfg.sources):
            cedes = source_filter(wider, rt.cfg.sources).cedes
            ceded = [d for d in rt.store.documents(wider.name) if d.acl and cedes(d.external_id)]
            n += restrict(rt, wider.name, [(d, []) for d in ceded])
    return n


def withhold_unreadable(rt: Runtime, scfg: SourceConfig, e: UnreadableAcl) -> int:
    """Give the live documents unreadable ACL files govern an empty ACL: those under their
    folders, and those whose ACL came from one of them (a link to a file they govern)."""
    docs = [d for d in rt.store.documents(scfg.name) if d.acl and (
        d.external_id.startswith(e.folders) or _came_from((d.metadata or {}).get("acl_from"), e.origins))]
    return restrict(rt, scfg.name, [(d, []) for d in docs])


def _came_from(acl_from: str | None, origins: tuple[str, ...]) -> bool:
    """Whether an ACL came from, or was narrowed by, one of `origins`. A narrowed ACL joins its
    origins with '+' (`acl.narrow`): a link in a non-public folder to a file an unreadable ACL
    file governs carried "sidecar:team/...+sidecar:priv/...", matched no origin, and stayed
    readable (an attacker pass's find)."""
    if not acl_from:
        return False
    return any(acl_from == o or acl_from.startswith(o + "+") or acl_from.endswith("+" + o) or f"+{o}+" in acl_from
               for o in origins)


def narrow_access(rt: Runtime, scfg: SourceConfig, src: Source, entries: list[SourceEntry],
                   known: dict[str, DocumentRecord], moved: list[tuple[DocumentRecord, list[SourceEntry]]],
                   problems: Sequence[tuple[SourceEntry, tuple[str, str]]] = (),
                   unlisted: Sequence[DocumentRecord] = ()) -> int:
    """Of a listing the delete guard refused, apply only what takes access away: each listed
    document keeps the principals both its stored and its listed ACL name. A listing too small to
    delete from is still a statement about the files it does hold, and an ACL that was narrowed
    must not stay wide for as long as the listing stays broken. A source whose listing carries no
    ACLs (S3) describes the objects the cheap test says changed, as a sync would; one it cannot
    describe now keeps its ACL until the next sync. `moved`: documents no longer at their path,
    each with the new items of the same fingerprint (a rename keeps size and time): the old path
    stays served until the sweep runs, so it keeps no more access than its new place gives (a
    file moved into a protected folder in a refused sync stayed public). `unlisted`: the other
    documents the listing did not find, each narrowed by the ACL its folder now gives where the
    source can say (`LocalFolderSource.acl_now`): deleted files under a folder whose ACL
    narrowed kept their old access for as long as the guard refused (an attacker pass)."""
    from assets.listing import _unchanged  # the listing's cheap test (the listing imports this module)

    default = source_default_acl(scfg)
    narrowed: list[tuple[DocumentRecord, list[str]]] = []
    # what a symlink reaches that the rules exclude (indexed by an earlier release, or before the
    # rules changed) leaves search now, not when a sweep the guard refuses is allowed; so does what
    # a narrower source now takes (one added over a folder this source had indexed tripped the
    # guard with its own files, and they stayed readable here for as long as it refused)
    out_of_bounds = {e.external_id for e, (reason, _) in problems if reason == "excluded-target"}
    under = tuple(f"{p}/" for p in out_of_bounds)
    ceded = source_filter(scfg, rt.cfg.sources).cedes
    narrowed.extend((d, []) for k, d in known.items() if d.deleted_at is None and d.acl
                    and ((out_of_bounds and (k in out_of_bounds or k.startswith(under))) or ceded(k)))
    described: dict[str, list[str] | None] = {}  # each new item described once, however many match it

    def described_acl(entry: SourceEntry) -> list[str] | None:
        if entry.external_id not in described:
            try:
                described[entry.external_id] = acl_of(src.describe(entry) if src.needs_describe else entry)
            except SourceError as e:
                if e.transient or isinstance(e, SourceUnavailable):
                    raise  # the source, not this object
                described[entry.external_id] = None  # as an item that cannot be described: kept till the next sync
        return described[entry.external_id]

    # a moved document against each new item of its fingerprint; a listed one against its own item
    pairs = [(was, news) for was, news in moved] + [
        (old, [entry]) for entry in entries if (old := known.get(entry.external_id)) is not None
        and old.deleted_at is None and not _unchanged(src, old, entry, default)]
    for was, news in pairs:
        try:
            found = [a for e in news if (a := described_acl(e)) is not None]
        except SourceError:
            break  # the source, not this object: the refusal is not held up object by object
        acl = list(was.acl)
        for a in found:
            acl = both(acl, a)
        if (narrow := narrowing(was, acl)) is not None:
            narrowed.append((was, narrow))
    acl_now: Callable[[str], Sequence[str] | None] = getattr(src, "acl_now", lambda _path: None)
    moved_ids = {was.doc_id for was, _ in moved}
    for d in unlisted:
        if d.doc_id not in moved_ids and d.acl and (now := acl_now(d.external_id)) is not None \
                and (narrow := narrowing(d, list(now))) is not None:
            narrowed.append((d, narrow))
    return restrict(rt, scfg.name, narrowed)
