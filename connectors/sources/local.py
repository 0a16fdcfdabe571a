"""A local (or NFS-mounted) folder as a source.

Listing walks the root with `os.scandir`, entries sorted by name, so the order is stable. Hidden
files and folders (name starting with `.`) are skipped. Symlinks whose target stays inside the
root are followed, except a link back to a folder that is already being walked (a loop), which
is skipped; a symlink whose target lies outside the root is followed only with the source's
`follow_external_symlinks: true`, and otherwise listed with a `problem` (the listing
dead-letters it with the reason), so a link can never publish files from elsewhere unnoticed. `external_id` is the POSIX
path relative to the root; `fingerprint` is `"{mtime_ns}-{size}@{ctime_ns}"`: the change time too,
which no tool sets back, so an edit that keeps a file's size and modification time (a same-length
redaction by a tool that restores the time, `cp -p` / `rsync -a` / `tar x` of an older copy of the
same size, a file system with coarse times) is read again; an unchanged file whose inode alone
changed (a `chmod`) is read, hashed and found unchanged. A rename sets the change time: a move is
matched by the part before `@` (`base.move_key`).

ACL (semantics in connectors.acl): the nearest `.bindery-acl` file in the item's folder or any
folder above it, up to the root, wins; else the source's configured `acl`; else public. A
sidecar that lists nobody yields `()`: no principal may see those documents (fail closed). A
symlink is readable only by whom both its own folder and its target's real location let in, so
a link can never republish a private file under a public folder's ACL, nor show its name (a
private path) to the readers of a public target; below a followed folder link, the link's folder
caps every sidecar met (`_walk_dir`'s `ceiling`). The nearest
sidecar *above* the root narrows the source's default (a source rooted inside a protected tree
cannot publish it), and so does one in a folder a wider source lists files from too (the root an
`include: [hr/**]` source shares with a wiki belongs to the wiki's editors as well, `_decides`),
and a followed external symlink is narrowed by the sidecar nearest its
target and by the `acl:` of every other local source whose root holds the target (`guards`: a
link into a sibling source's root must not list its files under this source's wider ACL).
`metadata["acl_from"]` says where an ACL came from.

Failure rules (a failed listing must never look like an empty one, or the delete sweep would
remove everything): a missing or unreadable root, an unreadable subfolder or an unreadable
sidecar (a broken link, a folder or a FIFO named `.bindery-acl` included) raises `SourceError`
(`UnreadableAcl` for sidecars, once the walk has found every unreadable one, naming the folders
they govern and their origins: the listing withholds those documents, links to them included,
from everyone until they read again).
Items that vanish mid-walk (deleted concurrently) are left out, as they no longer exist; a
symlink that is dangling or loops is listed with a `problem` (dead-lettered with the reason, and
its document, if it had one, removed like a deleted file's), and so is a named pipe, socket or
device (`not-a-file`, itself or a symlink's target): it is never opened (a FIFO would block the
read, /dev/zero never ends), and `read` refuses anything but a regular file, opened non-blocking.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from connectors import acl as acls
from connectors.acl import PUBLIC_ACL, SIDECAR, Acl
from connectors.config import SourceConfig
from connectors.errors import ConfigError, SourceError, TooLarge, UnreadableAcl
from connectors.sources.base import SourceEntry
from connectors.sources.globs import PathFilter

__all__ = ["ACL_SIDECAR", "PUBLIC_ACL", "LocalFolderSource", "local_guards"]

log = logging.getLogger(__name__)

ACL_SIDECAR = SIDECAR


_NO_STAT = os.stat_result((0,) * 10)  # the stand-in of a problem item that could not be looked up


def _lstat_ok(path: str) -> bool:
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class _Item:
    rel: str
    path: str
    st: os.stat_result
    acl: Acl
    problem: tuple[str, str] | None = None


# A folder is listed under at most this many paths (symlinks that reach it several ways): a
# ladder of folders each linking twice to the next made a listing exponential (15 levels: 65,519
# entries, 36 s), and anyone who may write a link in a listed folder could stall every sync.
MAX_FOLDER_PATHS = 64


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


class LocalFolderSource:
    """Lists and reads the files under `cfg.root` (see the module docstring for the rules)."""

    needs_describe = False  # list() already carries ACLs; describe() is the identity

    def __init__(self, cfg: SourceConfig, guards: Sequence[tuple[str, Acl]] = (), *,
                 ceded: Sequence[tuple[str, str, PathFilter]] = (),
                 shared: Sequence[Callable[[str], bool]] = ()) -> None:
        """`guards`: (real root, default ACL) of the other local sources (`local_guards`);
        `ceded`: what narrower sources over this one's files take (`PathFilter`); `shared`: for
        each wider source that leaves files to this one, whether it lists files in a folder."""
        if cfg.kind != "local" or not cfg.root:
            raise ConfigError(f"source {cfg.name!r}: LocalFolderSource needs kind local and a root")
        self.name = cfg.name
        self._guards = tuple(guards)
        self._guarded: dict[tuple[int, int], Acl] = {}  # their roots by folder identity: per listing
        self.root = Path(cfg.root).absolute()
        self.max_bytes = int(cfg.max_file_mb * 1024 * 1024)
        self._filter = PathFilter(cfg.include, cfg.exclude, ceded)
        self._shared = tuple(shared)  # folders a wider source lists too: their sidecars only narrow
        self._default_acl = acls.source_default(cfg)
        self.follow_external = cfg.follow_external_symlinks
        self._real_root = os.path.realpath(self.root)
        # Bindery's own state (data_dir, a DAGSTER_HOME elsewhere), by folder identity: skipped
        # wherever it lies in the tree and whatever path (a symlink) reaches it
        self._state_dirs = tuple(p for p in (*cfg.state_dirs, os.environ.get("DAGSTER_HOME")) if p)
        self._state_keys: set[tuple[int, int]] = set()
        self._root_acl: Acl | None = None  # the default narrowed by a sidecar above the root: per listing

    # -- listing -------------------------------------------------------------------------

    def _fail(self, what: str, path: str | Path, e: OSError) -> SourceError:
        return SourceError(f"source {self.name!r}: cannot {what} {path}: {_reason(e)}")

    def _read_sidecar(self, path: str, rel_dir: str, governs: str = "") -> Acl:
        """The ACL of a sidecar. Anything named like one that is not a readable regular file (a
        broken link, a folder, a FIFO) fails the listing: a sidecar we cannot read must never
        mean the folder above decides (fail closed, not open). `governs`: the folder (relative
        to the root) whose files it decides, withheld from everyone until it reads again."""
        origin = f"sidecar:{rel_dir}{ACL_SIDECAR}"
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):  # checked before open: a FIFO would block the walk
                raise OSError(f"ACL file {path} is not a regular file")
            with open(path, "rb") as f:
                principals = acls.parse_sidecar(f.read())
        except (OSError, UnicodeDecodeError) as e:
            reason = _reason(e) if isinstance(e, OSError) else f"not UTF-8 text ({e.reason})"
            if isinstance(e, UnicodeDecodeError) and bytes(e.object[:2]) in (b"\xff\xfe", b"\xfe\xff"):
                reason = "UTF-16 text (Notepad's \"Unicode\"): save it as UTF-8"  # the usual way to get here
            if isinstance(e, FileNotFoundError):
                reason = "it is a broken link or vanished"
            what = reason if reason.startswith("ACL file") else f"cannot read ACL file {path}: {reason}"
            raise UnreadableAcl(f"source {self.name!r}: {what}", folders=(governs,), origins=(origin,)) from e
        for p, why in acls.suspect_principals(principals):
            log.warning("source %r: %s names the principal %r, taken whole: %s", self.name, path, p, why)
        return Acl(principals, origin)

    def _unreadable(self, e: UnreadableAcl) -> Acl:
        """Note an ACL file that could not be read and go on: the walk finds every such file
        before the listing fails, so the documents each one governs are all withheld."""
        self._failed_acls.append(e)
        return Acl(acls.NOBODY, "unreadable")

    def _acl_of_target(self, real_dir: str) -> Acl:
        """The ACL that governs a folder inside the root by its real location: the nearest
        sidecar from it up to the root, else the source's default (those in folders a wider source
        lists files from too only narrow, `_decides`). A symlink inside the root is narrowed by it
        (`_link_acl`): otherwise anyone who may write a link in a public folder publishes a
        private file."""
        acl = self._root_acl or self._default_acl
        above: list[Acl] = []  # sidecars of folders a wider source shares, met on the way up: each narrows
        current = real_dir
        while True:
            sidecar = os.path.join(current, ACL_SIDECAR)
            if os.path.lexists(sidecar):
                rel = os.path.relpath(current, self._real_root)
                rel_dir = "" if rel == "." else rel.replace(os.sep, "/") + "/"
                found = self._read_sidecar(sidecar, rel_dir, governs=rel_dir)
                if not self._is_shared(rel_dir):  # a folder of this source's alone: it decides
                    return found
                above.append(found)
            if current == self._real_root or not current.startswith(self._real_root + os.sep):
                for a in above:
                    acl = acls.narrow(acl, a)
                return acl
            current = os.path.dirname(current)

    def _sidecar_outside(self, real_dir: str) -> Acl | None:
        """The nearest sidecar in `real_dir` or any folder above it, up to `/` (None: none)."""
        current = real_dir
        while True:
            sidecar = os.path.join(current, ACL_SIDECAR)
            if os.path.lexists(sidecar):
                return self._read_sidecar(sidecar, current.rstrip(os.sep) + "/")
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent

    def _narrowed(self, acl: Acl, real_dir: str, *, guarded: bool = True) -> Acl:
        """`acl`, narrowed by the sidecar that governs `real_dir` from outside the root, if any,
        and (`guarded`: for a followed link's target) by the default ACL of each other source
        whose root holds `real_dir`."""
        outside = self._sidecar_outside(real_dir)
        acl = acl if outside is None else acls.narrow(outside, acl)
        if not guarded:
            return acl
        # by identity, every folder up to '/': another source's root reached by its own path,
        # through a folder above it, or through a bind mount (a second path that no prefix of its
        # root matches: a review's find)
        found: dict[tuple[int, int], Acl] = {}
        current = real_dir
        while self._guarded:
            try:
                key = _dir_key(os.stat(current))
            except OSError:
                key = (-1, -1)
            if key in self._guarded:
                found[key] = self._guarded[key]
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for guard in found.values():
            acl = acls.narrow(guard, acl)
        return acl

    def _guard_keys(self) -> dict[tuple[int, int], Acl]:
        """The other sources' roots by folder identity, with their default ACLs."""
        keys: dict[tuple[int, int], Acl] = {}
        for root, guard in self._guards:
            try:
                keys[_dir_key(os.stat(root))] = guard
            except OSError:
                continue  # that source's root is missing: its own listing says so
        return keys

    def _walk(self) -> Iterator[_Item]:
        """Files under the root that pass the include/exclude filter, in a stable order."""
        try:
            root_st = os.stat(self.root)
        except OSError as e:
            raise self._fail("open root folder", self.root, e) from e
        if not stat.S_ISDIR(root_st.st_mode):
            raise SourceError(f"source {self.name!r}: root {self.root} is not a folder")
        self._failed_acls: list[UnreadableAcl] = []
        self._folder_acls: dict[str, Acl] = {}  # folder walked ("" the root, else "a/b/") -> its files' ACL
        self._walked: dict[tuple[int, int], int] = {}  # folder -> the symlink paths it was walked by
        self._guarded = self._guard_keys()
        self._state_keys = {_dir_key(st) for p in self._state_dirs if (st := _stat_or_none(p)) is not None}
        try:
            # a sidecar above the root narrows the source; another source around it does not (a
            # nested source's acl is its own, `config.nesting.check_nested_sources`)
            self._root_acl = self._narrowed(self._default_acl, os.path.dirname(self._real_root), guarded=False)
        except UnreadableAcl as e:
            self._root_acl = self._unreadable(e)
        yield from self._walk_dir(str(self.root), "", self._root_acl, {_dir_key(root_st)}, None, None)
        if failed := list({e.origins: e for e in self._failed_acls}.values()):  # one per file
            more = f" (and {len(failed) - 1} more ACL files)" if len(failed) > 1 else ""
            raise UnreadableAcl(f"{failed[0]}{more}", folders=tuple(f for e in failed for f in e.folders),
                                origins=tuple(o for e in failed for o in e.origins))

    def _walk_dir(self, path: str, rel_dir: str, acl: Acl, ancestors: set[tuple[int, int]], real_dir: str | None,
                  ceiling: Acl | None) -> Iterator[_Item]:
        """`real_dir`: where this folder really is, relative to the root, when a symlink led
        here: what the exclude rules leave out there stays out, whatever path reached it.
        `ceiling`: below a followed folder link, the ACL of the folder holding the link, which
        narrows every sidecar met there (a private folder's names stay private)."""
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except FileNotFoundError as e:
            if not rel_dir:
                raise self._fail("open root folder", path, e) from e
            return  # the folder was removed while we walked: its files are gone
        except OSError as e:
            if not rel_dir:
                raise self._fail("list folder", path, e) from e
            # one folder that cannot be listed does not stop the source: it is listed as a problem
            # (a dead letter saying why), and the documents known under it are kept as they were,
            # neither deleted nor changed, until it can be read (`assets.listing.unlisted_folders`)
            try:
                st = os.stat(path)
            except OSError:
                raise self._fail("list folder", path, e) from e
            yield _Item(rel_dir, path, st, acl, ("unreadable-folder", (
                f"cannot list folder {rel_dir}: {_reason(e)}; the documents known under it are kept as they "
                "were (not deleted, not updated) until it can be read")))
            return
        acl = self._folder_acl(entries, rel_dir, acl)
        if ceiling is not None:
            acl = acls.narrow(ceiling, acl)
        self._folder_acls[rel_dir] = acl
        for de in entries:
            if de.name.startswith("."):
                continue
            rel = rel_dir + de.name
            try:
                st = de.stat()  # follows symlinks
            except OSError as err:
                if (problem := self._stat_failed(de, rel, rel_dir, path, acl, err)) is not None:
                    yield problem
                    if problem.rel == rel_dir:  # this folder: none of its entries can be looked up
                        return
                continue
            if de.is_symlink() and not self.follow_external and not self._inside(de.path):
                if stat.S_ISDIR(st.st_mode) or self._filter(rel):  # a file, or a device, FIFO or socket
                    yield _Item(rel, de.path, st, acl, ("external-symlink", (
                        f"{rel} is a symlink to {os.path.realpath(de.path)}, outside the source root; "
                        "skipped (set follow_external_symlinks: true on the source to follow it)")))
                continue
            # where it really is, when a symlink leads there (this one, or a folder link above it):
            # what the exclude rules leave out there stays out, whatever path reaches it
            real = self._real_rel(de.path) if de.is_symlink() else None if real_dir is None else real_dir + de.name
            if real is not None and self._excluded_at(real, st):
                if stat.S_ISDIR(st.st_mode) or self._filter(rel):  # a problem item: what an earlier release
                    yield _Item(rel, de.path, st, acl, ("excluded-target", (  # listed here is withheld, swept
                        f"{rel} leads to {real}, which this source does not list (its exclude rules or a hidden "
                        "name); skipped, so a symlink cannot publish what the rules keep out")))
                continue
            entry_acl = self._link_acl(de, st, acl) if de.is_symlink() else acl
            if stat.S_ISDIR(st.st_mode):
                below = acl if de.is_symlink() else ceiling  # a followed folder link: its folder caps what it reaches
                yield from self._walk_sub(de, rel, st, acl, entry_acl, ancestors, real, below)
            elif stat.S_ISREG(st.st_mode) and self._filter(rel):
                yield _Item(rel, de.path, st, entry_acl)
            elif self._filter(rel):  # never opened: a FIFO blocks the reader, /dev/zero never ends
                yield _Item(rel, de.path, st, acl, ("not-a-file", (
                    f"{rel} is {'a symlink to ' if de.is_symlink() else ''}{_kind(st)}, not a regular file; "
                    "skipped (only regular files are read)")))

    def acl_now(self, external_id: str) -> tuple[str, ...] | None:
        """The ACL a file at `external_id` would get from the last listing: that of the nearest
        folder above it the walk went through, None before any listing. A refused delete sweep
        narrows the documents it did not list by it (`assets.listing_access.narrow_access`): deleted
        files under a folder whose `.bindery-acl` narrowed kept their old access for as long as
        the guard refused (an attacker pass). Narrowing by an ancestor's ACL never widens."""
        if not getattr(self, "_folder_acls", None):
            return None
        folder = external_id.rsplit("/", 1)[0] + "/" if "/" in external_id else ""
        while folder not in self._folder_acls:
            if not folder:
                return None
            folder = folder[:-1].rsplit("/", 1)[0] + "/" if "/" in folder[:-1] else ""
        return self._folder_acls[folder].principals

    def _stat_failed(self, de: os.DirEntry[str], rel: str, rel_dir: str, path: str, acl: Acl,
                     err: OSError) -> _Item | None:
        """The problem item of an entry whose lookup failed, None when there is none to list. A
        link to nothing (dangling, or links pointing at each other) or to what this process may
        not look at is listed as a problem, never read and never failing the source (one such
        link froze every ACL change); anything else vanished meanwhile. Nor does an entry that
        cannot be looked up at all (`_unstatable`: a folder readable but not searchable, a path
        past the system's limit) fail it: one such folder stopped the source, and every access
        change of it, for good (a robustness pass)."""
        broken = isinstance(err, FileNotFoundError | PermissionError) or err.errno == errno.ELOOP
        # refused even the entry itself (not only a link's target): the folder cannot be
        # searched, whatever the entry is; a link there cannot even be read (readlink)
        folder_refused = isinstance(err, PermissionError) and not _lstat_ok(de.path)
        if not broken or folder_refused or (isinstance(err, PermissionError) and not de.is_symlink()):
            return self._unstatable(de, rel, rel_dir, path, acl, err)
        if de.is_symlink() and self._filter(rel):
            return self._broken_link(de, rel, acl, err)
        return None

    def _unstatable(self, de: os.DirEntry[str], rel: str, rel_dir: str, path: str, acl: Acl, err: OSError) -> _Item:
        """The problem item of an entry that could not be looked up. Permission refused on a
        plain entry means its folder can be listed but not searched (mode r--): the folder is
        unreadable, and what is known under it is kept as it was (`unreadable-folder`). A path
        past the system's limit is a `bad-name` (nothing under it was ever indexed: ids stop at
        1,024 characters). Any other error on a folder keeps what is known under it; on a
        file it fails the source, as before: the listing cannot tell what it is."""
        if isinstance(err, PermissionError):
            if not rel_dir:  # the root itself: the source cannot be listed, as when it cannot be opened
                raise self._fail("look up the entries of root folder", path, err) from err
            try:
                folder_st = os.stat(path)
            except OSError:
                raise self._fail("stat", de.path, err) from err
            return _Item(rel_dir, path, folder_st, acl, ("unreadable-folder", (
                f"cannot look up the entries of folder {rel_dir or '(the root)'}: {_reason(err)} (it can be "
                "listed but not searched); the documents known under it are kept as they were until it can be read")))
        if err.errno == errno.ENAMETOOLONG:
            return _Item(rel, de.path, _NO_STAT, acl, ("bad-name", (
                f"{rel[:80]}… cannot be looked up: {_reason(err)}; shorten the folder names above it")))
        if de.is_dir(follow_symlinks=False):
            return _Item(rel + "/", de.path, _NO_STAT, acl, ("unreadable-folder", (
                f"cannot look up folder {rel}: {_reason(err)}; the documents known under it are kept as they "
                "were until it can be read")))
        raise self._fail("stat", de.path, err) from err

    def _folder_acl(self, entries: list[os.DirEntry[str]], rel_dir: str, inherited: Acl) -> Acl:
        """The ACL of a folder's files: its own sidecar's, else the one it inherits."""
        for de in entries:
            if de.name == ACL_SIDECAR:
                try:
                    found = self._read_sidecar(de.path, rel_dir, governs=rel_dir)
                except UnreadableAcl as e:
                    return self._unreadable(e)
                return self._decides(rel_dir, found, inherited)
        return inherited

    def _decides(self, rel_dir: str, sidecar: Acl, inherited: Acl) -> Acl:
        """A sidecar's ACL for the files below it: its own, or, in a folder a wider source also
        lists files from (the root an `include: [hr/**]` source shares with a wiki), the
        inherited ACL narrowed by it, as a sidecar above the root does: the wiki's sidecar there
        (`group:staff`, even `*`) replaced `acl: [group:hr]` on the HR files, and anyone who
        could write the shared root decided who reads them."""
        return acls.narrow(inherited, sidecar) if self._is_shared(rel_dir) else sidecar

    def _is_shared(self, rel_dir: str) -> bool:
        """Whether a wider source lists files directly in a folder (relative to the root, '' or
        ending in '/') too; with no such source (the usual case) no folder is."""
        return any(lists(rel_dir) for lists in self._shared)

    def _link_acl(self, de: os.DirEntry[str], st: os.stat_result, acl: Acl) -> Acl:
        """A followed symlink's ACL: the link's folder's, narrowed by its target's (inside the
        root: the sidecar or default that governs the target's real place; outside, followed on
        request: whatever protects the target's tree). So a link in a public folder never
        publishes a private file, and a link in a private folder never shows its name, a
        private path, to readers of a public target."""
        real = os.path.realpath(de.path)
        real_dir = real if stat.S_ISDIR(st.st_mode) else os.path.dirname(real)
        try:
            if self._inside(de.path):
                return acls.narrow(acl, self._acl_of_target(real_dir))
            return self._narrowed(acl, real_dir)
        except UnreadableAcl as e:
            return self._unreadable(e)

    def _walk_sub(self, de: os.DirEntry[str], rel: str, st: os.stat_result, acl: Acl, entry_acl: Acl,
                  ancestors: set[tuple[int, int]], real: str | None, ceiling: Acl | None) -> Iterator[_Item]:
        """A subfolder (or a folder a symlink leads to): walked unless it closes a loop or was
        already walked under too many paths through symlinks."""
        key = _dir_key(st)
        if key in self._state_keys:  # Bindery's own data_dir: its database is nobody's document
            return
        if key in ancestors:
            log.warning("source %r: skipping symlink loop at %s", self.name, rel)
            return
        if (de.is_symlink() or real is not None) and self._fanned_out(key):  # reached through a link
            yield _Item(rel, de.path, st, acl, ("link-fanout", (
                f"{rel} is a folder already listed under {MAX_FOLDER_PATHS} other paths through symlinks; "
                "skipped here (links that reach one folder many ways make the walk grow exponentially)")))
            return
        real_dir = None if real is None else real + "/"
        # another source's root reached outside this one (below a followed link): its acl narrows
        if (guard := self._guarded.get(key)) is not None and not self._inside(de.path):
            entry_acl = acls.narrow(guard, entry_acl)
        yield from self._walk_dir(de.path, rel + "/", entry_acl, ancestors | {key}, real_dir, ceiling)

    def _fanned_out(self, key: tuple[int, int]) -> bool:
        """Count one more path through symlinks to a folder; True past MAX_FOLDER_PATHS of them
        (its own place in the tree is always walked, and not counted)."""
        self._walked[key] = self._walked.get(key, 0) + 1
        return self._walked[key] > MAX_FOLDER_PATHS

    def _real_rel(self, link: str) -> str | None:
        """Where a symlink inside the root really leads, relative to the root (None: outside)."""
        if not self._inside(link):
            return None
        rel = os.path.relpath(os.path.realpath(link), self._real_root).replace(os.sep, "/")
        return None if rel == "." else rel

    def _excluded_at(self, real: str, st: os.stat_result) -> bool:
        """Whether the exclude rules (or a hidden name) leave out what really is at `real`: a
        folder when they leave out what it holds (`hr/`, `hr/**`). The include rules decide by
        the path a file is listed under, as for any file; exclusion protects a place (a folder
        another source covers must be excluded here, `config.nesting.check_nested_sources`, and a link
        into it, or above it, would otherwise list its files under this source's wider ACL)."""
        if any(part.startswith(".") for part in real.split("/")):
            return True
        return self._filter.excludes_folder(real) if stat.S_ISDIR(st.st_mode) else self._filter.excludes(real)

    def _broken_link(self, de: os.DirEntry[str], rel: str, acl: Acl, err: OSError) -> _Item | None:
        """A symlink that leads to no file: listed with a `problem`, so the listing dead-letters
        it with the reason (`bindery dlq`) instead of leaving it out unseen. None: the link itself
        went away while we looked."""
        try:
            if err.errno == errno.ELOOP:
                reason, what = "symlink-loop", "loops back on itself"
            elif isinstance(err, PermissionError):
                target = os.readlink(de.path)
                reason, what = "broken-symlink", f"points at {target}, which cannot be read ({_reason(err)})"
            else:
                reason, what = "broken-symlink", f"points at {os.readlink(de.path)}, which does not exist"
            return _Item(rel, de.path, de.stat(follow_symlinks=False), acl,
                         (reason, f"{rel} is a symlink that {what}; fix or remove the link"))
        except FileNotFoundError:
            return None

    def list(self) -> Iterator[SourceEntry]:
        """Every matching file. Raises SourceError if the walk cannot be completed."""
        for item in self._walk():
            st = item.st
            yield SourceEntry(
                external_id=item.rel,
                uri=Path(item.path).as_uri(),
                size=st.st_size,
                fingerprint=f"{st.st_mtime_ns}-{st.st_size}@{st.st_ctime_ns}",
                modified_at=st.st_mtime,
                acl=item.acl.principals,
                metadata={"acl_from": item.acl.origin},
                problem=item.problem,
                identity=(st.st_dev, st.st_ino),
            )

    def describe(self, entry: SourceEntry) -> SourceEntry:
        """Identity: a local listing already carries ACL and metadata (cf. S3Source)."""
        return entry

    # -- reading -------------------------------------------------------------------------

    def _inside(self, path: str | Path) -> bool:
        """Whether `path`, symlinks resolved, lies under the (resolved) root."""
        real = os.path.realpath(path)
        return real == self._real_root or real.startswith(self._real_root + os.sep)

    def path_of(self, entry: SourceEntry) -> Path:
        """The file behind an entry; refuses ids that would escape the root (by `..`, or by a
        symlink out of it unless the source follows those)."""
        rel = PurePosixPath(entry.external_id)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise SourceError(f"source {self.name!r}: invalid external id {entry.external_id!r}")
        path = self.root.joinpath(*rel.parts)
        if not self.follow_external and not self._inside(path):
            raise SourceError(f"source {self.name!r}: {entry.external_id} leads outside the source root "
                              "(follow_external_symlinks is off)")
        return path

    def read(self, entry: SourceEntry) -> bytes:
        """The file's current bytes. SourceError if unreadable; TooLarge over `max_file_mb`."""
        path = self.path_of(entry)
        try:
            self._regular(entry, os.stat(path))  # before opening: opening a device can act on it
            # non-blocking: a FIFO swapped in after that check must not hang the read
            with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
                st = os.fstat(f.fileno())
                if entry.identity is not None and (st.st_dev, st.st_ino) != entry.identity:
                    raise SourceError(
                        f"source {self.name!r}: {entry.external_id} is another file than the one listed "
                        "(replaced or relinked between the listing and the read); the next sync reads it again")
                self._regular(entry, st)
                size = st.st_size
                if size > self.max_bytes:
                    raise TooLarge(
                        f"{entry.external_id}: {size} bytes is over the source's limit of "
                        f"{self.max_bytes} bytes (max_file_mb)"
                    )
                return f.read()
        except OSError as e:
            raise self._fail("read", path, e) from e

    def _regular(self, entry: SourceEntry, st: os.stat_result) -> None:
        """SourceError unless `st` is a regular file (a FIFO blocks a reader, /dev/zero never ends)."""
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"source {self.name!r}: {entry.external_id} is {_kind(st)}, not a regular file")

    # -- sensors -------------------------------------------------------------------------

    def probe(self) -> str:
        """Hash of the sorted (path, mtime_ns, size, ctime_ns, ACL) of every matching file (the
        fingerprint's times, so the sensor sees what a sync would re-read).

        One walk with one stat per file and no reads (bar the ACL sidecars): about as cheap
        as a directory listing. Changes when a file is added, removed, edited or touched, or
        when its ACL changes.
        """
        h = hashlib.sha256()
        for item in sorted(self._walk(), key=lambda i: i.rel):
            st, acl = item.st, ",".join(item.acl.principals)
            line = f"{item.rel}\t{st.st_mtime_ns}\t{st.st_size}\t{st.st_ctime_ns}\t{acl}\n"
            h.update(line.encode("utf-8", "surrogateescape"))
        return h.hexdigest()


def local_guards(cfg: SourceConfig, sources: Sequence[SourceConfig]) -> tuple[tuple[str, Acl], ...]:
    """What protects the other local sources' trees from `cfg`'s followed external symlinks:
    each one's real root and default ACL. Only with `follow_external_symlinks` (without it no
    link leaves the root); a source with no `acl:` is public and narrows nothing."""
    if cfg.kind != "local" or not cfg.follow_external_symlinks:
        return ()
    return tuple((os.path.realpath(o.root), acls.source_default(o)) for o in sources
                 if o.kind == "local" and o.root and o.name != cfg.name and o.acl is not None)


def _kind(st: os.stat_result) -> str:
    """What a listed entry that is neither a file nor a folder is, in words."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((what for test, what in kinds if test(st.st_mode)), "a special file")


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st if stat.S_ISDIR(st.st_mode) else None


def _dir_key(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)
