"""Access control semantics, in one place. Sources, the listing, both indexes, the query service
and `bindery verify` all import them from here.

An ACL is a tuple of principals (user names, group names: opaque strings compared exactly).

* ``("*",)`` — `PUBLIC`: anyone may read the document.
* ``()`` — nobody may read it (fail closed). A sidecar that lists nobody, an S3 ``acl``
  metadata value that is empty, and ``acl: []`` in a source's configuration all mean this.
* Where an ACL comes from, nearest first: a local folder's ``.bindery-acl`` sidecar (one
  principal per line, ``#`` comments, blank lines ignored; the nearest one in the file's folder
  or above wins), or an S3 object's ``acl`` user metadata (comma-separated); else the source's
  configured ``acl``; else, when ``acl`` is not set at all, public.
* A sidecar *above* a local source's root (the root is a subfolder of a tree a sidecar
  protects) is not the source's to widen: it narrows the source's default (`narrow`), the ACL
  of the files no sidecar inside the root names. A sidecar inside the root still decides for its
  own folder, as it does when the tree is listed from above, so a source rooted inside a
  protected tree never gives a file more access than listing the tree itself would. The target
  of a followed external symlink is narrowed the same way.

A caller may read a document when its ACL is public or names one of the caller's principals
(`allows`). Naming ``*`` as a caller gives access to public documents only, never to
documents whose ACL is empty.

Text is decoded BOM-safe (``utf-8-sig``): a sidecar saved by an editor that writes a byte-order
mark keeps its first principal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connectors.config import SourceConfig

__all__ = ["ACL_BEFORE", "PUBLIC", "PUBLIC_ACL", "SIDECAR", "Acl", "allows", "narrow", "normalise",
           "parse_list", "parse_sidecar", "source_default", "suspect_principals", "within"]

PUBLIC = "*"  # the principal meaning "anyone"
PUBLIC_ACL: tuple[str, ...] = (PUBLIC,)
NOBODY: tuple[str, ...] = ()
SIDECAR = ".bindery-acl"  # the per-folder ACL file of local sources


@dataclass(frozen=True)
class Acl:
    """Principals plus where they came from (``sidecar:<path>``, ``metadata``, ``config``,
    ``default``), shown to operators as ``metadata["acl_from"]``."""

    principals: tuple[str, ...]
    origin: str


def normalise(principals: Iterable[str]) -> tuple[str, ...]:
    """Stripped, blank ones dropped, duplicates dropped, order kept."""
    return tuple(dict.fromkeys(p.strip().lstrip("\ufeff").strip() for p in principals
                               if p.strip().lstrip("\ufeff").strip()))


def parse_sidecar(data: bytes) -> tuple[str, ...]:
    """The principals of a ``.bindery-acl`` file: one a line, whole-line ``#`` comments and blank
    lines ignored. A ``#`` after a principal is part of it (principals are opaque: an LDAP group
    may be "CN=Team #1"); read as a comment, "* #TODO restrict" would publish a folder that is
    locked today (`suspect_principals` names such lines for a warning instead). Raises
    UnicodeDecodeError when it is not UTF-8 (the listing then fails: a sidecar we cannot read
    must never mean "public")."""
    text = data.decode("utf-8-sig")
    # a line ends at "\n" (or "\r\n") only, where cat, grep and editors end it: splitlines()
    # also breaks at a lone "\r", "\v", "\f", "\x1c"-"\x1e", U+0085 and U+2028/9, so a line
    # every tool shows as one comment carried a principal ("# reviewed\u2028*" published the
    # folder). Such a character inside a principal leaves it matching no one (fail closed), and
    # `suspect_principals` names it for a warning.
    lines = (ln.removesuffix("\r") for ln in text.split("\n"))
    return normalise(ln for ln in lines if not ln.strip().startswith("#"))


def parse_list(value: str) -> tuple[str, ...]:
    """A comma-separated metadata value: ``"alice, group:eng,"`` -> ``("alice", "group:eng")``."""
    return normalise(value.split(","))


def source_default(cfg: SourceConfig) -> Acl:
    """The ACL of items that carry none: the configured ``acl`` (``[]`` = nobody), else public."""
    if cfg.acl is None:
        return Acl(PUBLIC_ACL, "default")
    return Acl(normalise(cfg.acl), "config")


def narrow(a: Acl, b: Acl) -> Acl:
    """Who both ACLs let in (public narrows to the other one; `()` stays nobody). Where two
    statements govern one file (a sidecar above a source's root and the source's own default, a
    symlink's folder and its target's), the file is readable only by whom both allow."""
    if PUBLIC in a.principals:
        return b
    if PUBLIC in b.principals:
        return a
    return Acl(tuple(p for p in a.principals if p in b.principals), f"{a.origin}+{b.origin}")


#: Document metadata the listing writes when a file's bytes and ACL change at once: the ACL its
#: older version was read under (`assets.index_stage.unsafe_kept_versions` reads it).
ACL_BEFORE = "acl_before"


def both(old: list[str], new: list[str]) -> list[str]:
    """Who both stored ACLs let in (`narrow` on stored lists)."""
    if PUBLIC in old:
        return list(new)
    return list(old) if PUBLIC in new else [p for p in old if p in new]


def within(new: Iterable[str], old: Iterable[str]) -> bool:
    """Whether the ACL `new` lets in no one `old` does not: the same, or a narrowing."""
    before, after = set(old), set(new)
    return PUBLIC in before or (PUBLIC not in after and after <= before)


def allows(acl: Iterable[str], principals: Iterable[str]) -> bool:
    """Whether a caller with `principals` may read a document whose ACL is `acl`."""
    have = set(acl)
    return PUBLIC in have or bool(have & set(principals))


_COMMENT_LIKE = re.compile(r"\s#")


def suspect_principals(principals: Iterable[str]) -> list[tuple[str, str]]:
    """(principal, why) for principals that were surely not meant as written: a name and a
    trailing comment ("group:hr  # the HR team"), or one holding a control or line-separator
    character (a file saved with lone carriage returns reads as one long principal). Taken
    whole, they let no one in that the author meant to (fail closed), so the listing warns
    about them rather than read them otherwise."""
    found = []
    for p in principals:
        if not p.isprintable():
            found.append((p, "it holds a control or line-separator character (lines end at \\n only)"))
        elif _COMMENT_LIKE.search(p):
            found.append((p, "a comment goes on a line of its own"))
    return found
