"""Documents assembled from other files (AsciiDoc's `include::`): which files a document's text is
made of, which of them it may show, and the content hash that covers them all.

A parse is cached by its document's content hash. A page that pulls in another file's text (Git's
`diff-options.txt` inside `git-diff.txt`, an Antora page's partials) must be parsed again when
that file changes, and must never show what its readers may not see. So:

* The listing records, for every file the AsciiDoc reader may read (`CANDIDATE_SUFFIXES`), the
  files its `include::` lines name (`includes` in the document's metadata, empty for a file that
  is not AsciiDoc): every include line, whatever condition it sits under, resolved against the
  file's own folder and never outside the source (a target built from an attribute is resolved
  when the file sets that attribute itself).
* An included file is *followed* only when it is a listed document of the same source whose
  bytes this listing could read (not a failed read, not one kept under a folder that could not
  be listed) and that everyone who may read the includer may read too (public, or its ACL names
  every principal of the includer's). Anything else stays a pointer ("Includes diff options.").
  The listing records the followed paths in the includer's metadata (`followed`).
* Access is checked again at query time: each chunk of a page names the documents whose text
  it holds (`included` in its payload), and the query service serves it only to a caller the
  store lets read all of them *now*, so an included file withheld or narrowed by any path (an
  unreadable ACL file, a refused delete sweep, a page that no longer parses and keeps its old
  version) is out of its pages at once, not at their next parse.
* An includer's `content_hash` is the hash of its own bytes (kept as `bytes_hash`) with, for every
  file it reaches (through the files it includes, in turn; at most `MAX_REACHED`), that file's
  own bytes hash and whether it is followed. An edit, delete, addition or access change among them
  changes the includer's content hash, so the listing calls it updated, and the parse cache, the
  chunks and `bindery plan` follow from that one hash as they do for any edit.
* A page is never kept at an older version of itself, as other files are when their new bytes
  fail: that version shows its included files as they were. One whose read failed while what it
  included changed is marked `STALE` by the listing, and the index step takes it, like any page
  whose current content has no good parse, out of the indexes until it parses again.
* A parse reads an included file only through `include_reader`, which admits exactly the
  `followed` paths the listing recorded with that hash: what a parse reads is always what its
  cache key covers, whatever has changed since.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from connectors.acl import within
from connectors.identity import content_hash
from connectors.sources.base import SourceEntry
from connectors.store import DocumentRecord

if TYPE_CHECKING:
    from assets.parsing.asciidoc import IncludeReader

# the AsciiDoc reader's helpers are imported where they are used: most corpora hold no AsciiDoc,
# and its module costs every `bindery` command ~30 ms of start-up

__all__ = [
    "CANDIDATE_SUFFIXES",
    "MAX_REACHED",
    "STALE",
    "Folded",
    "assembled",
    "flagged_stale",
    "fold",
    "include_reader",
    "include_targets",
    "is_candidate",
    "own_hash",
    "reached_documents",
    "read_again",
    "scanned_metadata",
    "withdrawn",
]

CANDIDATE_SUFFIXES = frozenset({"adoc", "asciidoc", "asc", "txt", "text"})  # what the AsciiDoc reader may read
MAX_REACHED = 256  # files one document may reach through includes; the rest stay pointers
STALE = "stale_includes"  # metadata of a page kept at an earlier version whose included files changed since

_INCLUDE = re.compile(r"^include::([^\[\n]{1,2000})\[[^\]\n]{0,2000}\][ \t]*$", re.M)
_ATTRIBUTE_ENTRY = re.compile(r"^:([\w][\w-]{0,200}):[ \t]+([^\n]{0,4096})$", re.M)


def is_candidate(external_id: str) -> bool:
    """Whether a file's name lets the AsciiDoc reader read it (a `.txt` only if it looks so)."""
    return PurePosixPath(external_id).suffix.lower().lstrip(".") in CANDIDATE_SUFFIXES


def include_targets(data: bytes, external_id: str) -> list[str]:
    """The paths the `include::` lines of an AsciiDoc file name, in order, once each: every line,
    whatever condition it sits under (the parse decides those); none for a file that is not AsciiDoc."""
    from assets.parsing.asciidoc import resolve_include, substituted
    from assets.parsing.sniff import detect_format

    if b"include::" not in data:
        return []
    try:
        if detect_format(data, external_id).format != "asciidoc":
            return []
    except Exception:  # a file the parser refuses includes nothing
        return []
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    found = sorted([(m.start(), m) for m in _ATTRIBUTE_ENTRY.finditer(text)]
                   + [(m.start(), m) for m in _INCLUDE.finditer(text)], key=lambda e: e[0])
    values: dict[str, str] = {}
    out: dict[str, None] = {}
    for _, m in found:
        if m.re is _ATTRIBUTE_ENTRY:
            values[m.group(1).lower()] = m.group(2).strip()
        elif (target := substituted(m.group(1), values)) is not None and (dep := resolve_include(external_id, target)):
            out[dep] = None
    return list(out)


def scanned_metadata(entry: SourceEntry, data: bytes, chash: str) -> dict[str, Any]:
    """A listed item's metadata as the listing stores it: the source's, with, for a file the
    AsciiDoc reader may read, the paths it includes (and its own bytes' hash when there are any)."""
    metadata: dict[str, Any] = dict(entry.metadata)
    if is_candidate(entry.external_id):
        metadata["includes"] = include_targets(data, entry.external_id)
        if metadata["includes"]:
            metadata["bytes_hash"] = chash
    return metadata


def read_again(doc: DocumentRecord) -> bool:
    """Whether a stored document must be read although its listing entry is unchanged: listed
    before includes were recorded, or marked `STALE` (its read failed, perhaps for a moment:
    the cheap test would otherwise keep it out of search until the file is next edited)."""
    metadata = doc.metadata or {}
    return bool(metadata.get(STALE)) or (is_candidate(doc.external_id) and "includes" not in metadata)


def own_hash(doc: DocumentRecord) -> str | None:
    """The hash of a document's own bytes: its content hash, unless it includes other files."""
    return str((doc.metadata or {}).get("bytes_hash") or doc.content_hash or "") or None


def _includes(doc: DocumentRecord | None) -> list[str]:
    return list((doc.metadata or {}).get("includes") or []) if doc is not None else []


def _reached(start: str, docs: Mapping[str, DocumentRecord]) -> list[str]:
    """The files `start` reaches through includes (itself left out), breadth first, bounded."""
    seen = {start}
    order: list[str] = []
    queue = [start]
    while queue and len(order) < MAX_REACHED:
        for dep in _includes(docs.get(queue.pop(0))):
            if dep not in seen and len(order) < MAX_REACHED:
                seen.add(dep)
                order.append(dep)
                queue.append(dep)
    return order


def _shown_to_all_readers(dep: DocumentRecord | None, doc: DocumentRecord, unreadable: Container[str]) -> bool:
    """Whether `dep` can be read in place (a live document whose bytes can be read: `unreadable`
    holds the ids of those whose cannot) and everyone who may read `doc` may read it too."""
    if dep is None or dep.deleted_at is not None or not dep.content_hash or dep.doc_id in unreadable:
        return False
    return within(doc.acl, dep.acl)


def assembled(doc: DocumentRecord, docs: Mapping[str, DocumentRecord],
              unreadable: Container[str] = ()) -> DocumentRecord | None:
    """A document that includes others as the listing stores it: its content hash covering its
    own bytes and every file it reaches (`docs`: the source's live documents by path;
    `unreadable`: the ids of those whose bytes cannot be read now), and in its metadata the
    paths its parse may read in place (`followed`: the parse reads exactly these, so what it
    reads is what the hash covers). None for a document that includes none."""
    if not _includes(doc):
        return None
    reached = [(dep, docs.get(dep)) for dep in _reached(doc.external_id, docs)]
    shown = [(dep, d, _shown_to_all_readers(d, doc, unreadable)) for dep, d in reached]
    parts = [own_hash(doc), *([dep, own_hash(d) if d is not None else None, ok] for dep, d, ok in shown)]
    return doc.replace(content_hash=content_hash(json.dumps(parts).encode()),
                       metadata={**doc.metadata, "followed": sorted(dep for dep, _, ok in shown if ok)})


def flagged_stale(doc: DocumentRecord, docs: Mapping[str, DocumentRecord],
                  unreadable: Container[str]) -> DocumentRecord | None:
    """A page whose bytes could not be read this listing keeps its indexed version, text of the
    files it included then and all: when those files have changed since (edited, deleted, written
    again, narrowed), that version shows what they no longer say, so the page is marked `STALE`
    and the index step takes it out of the indexes until it reads well again. The record with the
    mark set or cleared when it should change, else None."""
    made = assembled(doc, docs, unreadable)
    stale = made is not None and made.content_hash != doc.content_hash
    if stale == bool((doc.metadata or {}).get(STALE)):
        return None
    metadata = {k: v for k, v in doc.metadata.items() if k != STALE}
    return doc.replace(metadata={**metadata, STALE: True} if stale else metadata)


@dataclass(frozen=True)
class Folded:
    """What `fold` decides of one listing's documents that include others."""

    includers: list[DocumentRecord]  # those read this pass, each with its content hash and `followed`
    updated: dict[str, DocumentRecord]  # doc id -> one the cheap test kept whose content changed
    marked: dict[str, DocumentRecord]  # doc id -> one whose read failed, its `STALE` mark set or cleared


def fold(live: Mapping[str, DocumentRecord], read: Iterable[DocumentRecord], includers: list[DocumentRecord],
         unchanged: Iterable[DocumentRecord], failed: Iterable[DocumentRecord], unreadable: Container[str]) -> Folded:
    """Once a listing has read every item: its documents that include other files, as the sync
    stores them and `bindery plan` predicts them (one rule for both). `live`: the source's
    documents the listing leaves, by path, as they were stored; `read`: the others read this pass;
    `includers`: the includers read this pass (their content hash still their bytes'); `unchanged`:
    those the cheap test kept; `failed`: those whose read failed; `unreadable`: the ids of the
    documents whose bytes cannot be read now."""
    unchanged = [d for d in unchanged if _includes(d)]
    failed = [d for d in failed if _includes(d)]
    if not includers and not unchanged and not failed:
        return Folded([], {}, {})
    docs = {**live, **{d.external_id: d for d in [*read, *includers]}}
    return Folded(
        [assembled(d, docs, unreadable) or d for d in includers],
        {d.doc_id: made for d in unchanged
         if (made := assembled(d, docs, unreadable)) is not None and made.content_hash != d.content_hash},
        {d.doc_id: marked for d in failed if (marked := flagged_stale(d, docs, unreadable)) is not None})


def withdrawn(docs: Mapping[str, DocumentRecord], held: Iterable[str] = (),
              good: Container[str] | None = None) -> set[str]:
    """The ids of the pages the index step takes out of a generation (`docs`: by id): those
    marked `STALE`, and, with `good` (the ids whose current content parsed well), every page of
    `held` (the ids the generation holds) that includes others and has no good parse: a page made
    of other files is never kept at an older version of itself."""
    out = {did for did, d in docs.items() if (d.metadata or {}).get(STALE)}
    if good is not None:
        out |= {did for did in held if did in docs and _includes(docs[did]) and did not in good}
    return out


def reached_documents(doc: DocumentRecord, docs: Mapping[str, DocumentRecord]) -> list[DocumentRecord]:
    """The live documents `doc` reaches through includes, followed or not (`docs`: by path)."""
    return [d for dep in _reached(doc.external_id, docs) if (d := docs.get(dep)) is not None]


def include_reader(doc: DocumentRecord, docs: Mapping[str, DocumentRecord],
                   read: Callable[[DocumentRecord], bytes]) -> IncludeReader | None:
    """What a parse of `doc` may read of the files it includes: those the listing recorded as
    `followed` (`assembled`), by `read`; None when there are none."""
    allowed = set((doc.metadata or {}).get("followed") or ()) if _includes(doc) else set()
    if not allowed:
        return None
    from assets.parsing.asciidoc import resolve_include

    def reader(target: str, base: str) -> tuple[str, bytes] | None:
        dep = resolve_include(base, target)
        found = docs.get(dep) if dep is not None and dep in allowed else None  # gone since: a pointer
        return (found.external_id, read(found)) if found is not None else None

    return reader
