"""Document sources: a local folder or an S3 bucket, built from a `SourceConfig`.

`make_source(cfg)` is the one entry point the pipeline needs. Every source has `name`,
`list()`, `read(entry)`, `probe()` (the `Source` protocol) and also `describe(entry)` plus a
`needs_describe` flag: S3 listings leave ACL/metadata empty until `describe()` fetches them,
local listings carry them already (`describe()` is the identity there).

`S3Source` is imported lazily so that local-only users do not pay for importing boto3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from connectors.config import SourceConfig, narrower_within
from connectors.errors import ConfigError
from connectors.sources.base import Source, SourceEntry
from connectors.sources.globs import PathFilter, check_patterns
from connectors.sources.local import ACL_SIDECAR, PUBLIC_ACL, LocalFolderSource, local_guards

if TYPE_CHECKING:
    from connectors.sources.s3 import S3Source

__all__ = [
    "ACL_SIDECAR",
    "PUBLIC_ACL",
    "LocalFolderSource",
    "PathFilter",
    "S3Source",
    "Source",
    "SourceEntry",
    "check_patterns",
    "make_source",
    "source_filter",
]


def make_source(cfg: SourceConfig, others: Sequence[SourceConfig] = ()) -> Source:
    """The source a config describes. Raises ConfigError if the config is incomplete. `others`:
    the configuration's sources (a local source's followed external symlinks into another's
    root are narrowed by that source's `acl:`, `local_guards`; what a source over the same files
    with a narrower `acl:` takes is left to it, `narrower_within`). Listing passes them; a source
    made only to read an entry it listed needs none."""
    cfg.check_complete()
    ceded = _ceded(cfg, others)
    if cfg.kind == "local":
        return LocalFolderSource(cfg, local_guards(cfg, others), ceded=ceded, shared=_shared(cfg, others))
    if cfg.kind == "s3":
        from connectors.sources.s3 import S3Source

        return S3Source(cfg, ceded=ceded)
    raise ConfigError(f"source {cfg.name!r}: unknown kind {cfg.kind!r}")


def _ceded(cfg: SourceConfig, others: Sequence[SourceConfig]) -> list[tuple[str, str, PathFilter]]:
    return [(strip, above, PathFilter(o.include, o.exclude)) for strip, above, o in narrower_within(cfg, others)]


def _shared(cfg: SourceConfig, others: Sequence[SourceConfig]) -> list[Callable[[str], bool]]:
    """For each wider source that leaves files to `cfg` (`narrower_within`): whether a `.bindery-acl`
    in a folder of `cfg`'s (relative to its root, '' or ending in '/') governs that source's files
    too, so that for `cfg` it only narrows (`LocalFolderSource._decides`): the wider source walks
    through the folder, does not exclude it whole, and `cfg` does not take everything below it
    (then the wider source has nothing there). A sidecar in the root an `include: [hr/**]` source
    shares with a wiki is the wiki's too; one in `hr/`, all of whose files HR takes, is HR's."""
    own = PathFilter(cfg.include, cfg.exclude)

    def owns_all(folder: str) -> bool:  # asked with names no pattern names, one level and two down
        return own(f"{folder}\x00probe") and own(f"{folder}\x00d/\x00probe")

    found: list[Callable[[str], bool]] = []
    for wider in others:
        for strip, above, narrower in narrower_within(wider, others):
            if narrower.name != cfg.name:
                continue
            walks = PathFilter(wider.include, wider.exclude)

            def shares(folder: str, walks: PathFilter = walks, strip: str = strip, above: str = above) -> bool:
                if folder.startswith(above):  # the wider source's root is at or above the folder
                    inside = f"{strip}{folder[len(above):]}".rstrip("/")
                    if inside and walks.excludes_folder(inside):
                        return False
                elif not above.startswith(folder):  # nor below it: the folder is not on its way
                    return False
                return not owns_all(folder)

            found.append(shares)
    return found


def source_filter(cfg: SourceConfig, others: Sequence[SourceConfig]) -> PathFilter:
    """The paths the source lists, as its listing filters them: its include minus its exclude,
    minus what a narrower source over its files takes (`narrower_within`). The listing asks it
    of documents it could not list (under a folder it cannot read, or in a sweep the delete
    guard refused): a path now another source's is not kept, and not left readable, here."""
    return PathFilter(cfg.include, cfg.exclude, _ceded(cfg, others))


def __getattr__(name: str) -> Any:
    if name == "S3Source":
        from connectors.sources.s3 import S3Source

        return S3Source
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
