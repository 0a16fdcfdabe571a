"""Sources over one another's files: a folder configured as its own source with a narrower `acl`
must not stay readable through a wider source around it (`check_nested_sources`, when the
configuration loads), and a listing cedes to narrower sources what they take (`narrower_within`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from connectors.config.models import SourceConfig
from connectors.errors import ConfigError


def _location(s: SourceConfig) -> tuple[str, str]:
    """Where a source lists: (the store it reads, its folder as a POSIX path ending in '/')."""
    if s.kind == "local":
        return "local", os.path.realpath(s.root or ".").rstrip("/") + "/"
    # by bucket, whatever endpoint_url says: one service has many spellings (a trailing '/',
    # localhost, a cluster DNS name, an IP, AWS's default and regional URLs), and keyed by the
    # URL a nested source with a narrower acl passed the check and stayed readable through the
    # wider one (an S3 operator pass's find). Two services with a bucket of one name, nested,
    # are refused too: the safe side of a guess
    prefix = s.prefix.strip("/")
    return f"s3:{s.bucket}", "/" + prefix + ("/" if prefix else "")


def check_nested_sources(sources: list[SourceConfig]) -> None:
    """Refuse a source nested in another whose `acl` lets in more, unless the outer one excludes it.

    Each source indexes its files with its own default ACL (the files no `.bindery-acl` or
    object metadata names). A folder configured as its own source with a narrow `acl`, but also
    inside a wider source, would be indexed twice and readable through the wider one: the
    narrow ACL would protect nothing. The outer source must exclude the folder (the message says
    how). Nested sources with the same `acl` are fine (the run does their shared work once), and
    so is a wider inner one (a public subfolder of a staff-only tree: what the operator asked).
    """
    from connectors.sources.globs import PathFilter

    for outer in sources:
        store, folder = _location(outer)
        lists = PathFilter(["**/*"], outer.exclude)
        for inner in sources:
            inner_store, inner_folder = _location(inner)
            if inner is outer or inner_store != store or not inner_folder.startswith(folder):
                continue
            if not _grants_more(outer.acl, inner.acl):
                continue
            rel = inner_folder[len(folder):].rstrip("/")
            if rel and not lists(f"{rel}/any-file"):
                continue  # the outer source never lists the inner folder's files
            if not rel and (inner.include, inner.exclude) != (outer.include, outer.exclude):
                continue  # one folder split by include/exclude: what each takes is theirs to decide
            what = (f"source {inner.name!r} (acl: {_acl_words(inner.acl)}) lies inside source {outer.name!r} "
                    f"(acl: {_acl_words(outer.acl)}), which lists its folder {rel!r} too")
            fix = f"add '{rel}/' to the exclude of source {outer.name!r}"
            if not rel:
                what = (f"sources {inner.name!r} (acl: {_acl_words(inner.acl)}) and {outer.name!r} "
                        f"(acl: {_acl_words(outer.acl)}) list the same files")
                fix = "give them the same acl or different include/exclude"
            raise ConfigError(f"invalid configuration: {what}, so the files of {inner.name!r} would also be readable "
                              f"through source {outer.name!r}; {fix}")


def narrower_within(source: SourceConfig, sources: Sequence[SourceConfig]) -> list[tuple[str, str, SourceConfig]]:
    """The sources of the same store over `source`'s files (a root or prefix at, inside or
    above its own) whose `acl` lets in fewer: the files they take are listed by them alone
    (`PathFilter`'s `ceded`), whatever globs hide the overlap. Each comes with how a path of
    `source` becomes one of theirs: a prefix to strip (rooted deeper) and one to put before it
    (rooted above, reaching in by their include). One exception, as documented: a source rooted
    strictly inside a plain tree (one whose include is the default: everything) is a wider folder
    the operator carved out of it on purpose (a public folder in a staff-only tree), and cedes
    nothing to the tree around it. Two sources over one folder, each letting in someone the
    other does not, both cede: a file both take is listed by neither (closed rather than open)."""
    store, root = _location(source)
    out: list[tuple[str, str, SourceConfig]] = []
    for other in sources:
        where, theirs = _location(other)
        if other.name == source.name or where != store or not _grants_more(source.acl, other.acl):
            continue
        if theirs.startswith(root):
            out.append((theirs[len(root):], "", other))
        elif root.startswith(theirs) and not _takes_everything(other.include):
            out.append(("", root[len(theirs):], other))
    return out


def _takes_everything(include: list[str]) -> bool:
    """Whether an include list is the default's (every file), not a choice of some."""
    return not include or any(p.strip() in ("**/*", "**", "*", "/**", "/**/*") for p in include)


def _grants_more(outer: list[str] | None, inner: list[str] | None) -> bool:
    """Whether a source ACL lets in someone another does not (None or `*` = public, [] = nobody),
    the principals compared as the listing applies them (stripped): `["*"]` against public, or
    `"group:hr "` against `"group:hr"`, made each source cede to the other and lost the files."""
    from connectors.acl import PUBLIC, normalise

    def who(acl: list[str] | None) -> set[str] | None:
        principals = None if acl is None else set(normalise(acl))
        return None if principals is None or PUBLIC in principals else principals

    o, i = who(outer), who(inner)
    if o is None:
        return i is not None
    return i is not None and bool(o - i)


def _acl_words(acl: list[str] | None) -> str:
    return "public" if acl is None else ", ".join(acl) or "nobody"
