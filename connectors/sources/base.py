"""The source contract: list what exists, read one item. Nothing here knows about Dagster.

A source yields `SourceEntry` records from `list()`; the listing is compared with the
document store to classify new / updated / unchanged / moved / ACL-only / deleted. A listing
that raises `SourceError` never leads to deletes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class SourceEntry:
    """One listed item. `external_id` is stable: path relative to the root, or the S3 key
    relative to the prefix. `fingerprint` changes whenever the bytes may have changed
    (local: `{mtime_ns}-{size}@{ctime_ns}`; S3: ETag+size) and lets a sync skip reading unchanged
    items; its part before `@` is what a move keeps (`move_key`)."""

    external_id: str
    uri: str
    size: int
    fingerprint: str
    modified_at: float  # unix seconds
    acl: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # Set when the source lists the item but will not serve it (e.g. a symlink out of the
    # source root): (reason code, message). The listing dead-letters it; the rest goes on.
    problem: tuple[str, str] | None = field(default=None, compare=False)
    # What the listing found at this path (local: device and inode), never stored: a read in
    # the same run that finds another file there refuses, so a file swapped for a link between
    # the listing (which decided its ACL) and the read cannot be indexed under the wrong ACL.
    identity: tuple[int, int] | None = field(default=None, compare=False, hash=False)


def move_key(fingerprint: str) -> str:
    """The part of a fingerprint that a move of the item keeps: a rename keeps a file's
    modification time and size but sets its change time (after `@`), a copy keeps an object's
    ETag and size. The listing matches a document gone from its path to new items by it."""
    return fingerprint.split("@", 1)[0]


class Source(Protocol):
    name: str
    needs_describe: bool  # list() leaves acl/metadata empty (S3): describe() fills them in

    def describe(self, entry: SourceEntry) -> SourceEntry:
        """The entry with its ACL and metadata (the identity where list() already has them)."""
        ...

    def list(self) -> Iterator[SourceEntry]:
        """Every current item. Raises SourceError if the listing cannot be completed."""
        ...

    def read(self, entry: SourceEntry) -> bytes:
        """The item's bytes. Raises SourceError if it cannot be read."""
        ...

    def probe(self) -> str:
        """A cheap fingerprint of the whole source for sensors (changes when anything changes)."""
        ...
