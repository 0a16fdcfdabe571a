"""Include/exclude matching shared by every source, on POSIX paths relative to the root, with
the real `.gitignore` semantics (what operators already know), as `git check-ignore` decides them:

- `*` matches within one path segment, `?` one character, `[abc]` / `[!abc]` a class;
  `**` as a whole segment matches any number of segments, including none.
- A pattern with no `/` except a trailing one matches at any depth: `*.pdf` is `**/*.pdf`.
- A leading (or inner) `/` anchors the pattern at the root: `/*.md` matches top-level files only.
- A pattern that matches a folder matches everything below it: `drafts/`, `x/*` (so `x/a/b` too).
- `!pattern` negates: a later `!keep.md` takes back what an earlier `*.md` matched; later
  lines win, as in a `.gitignore` file. A blank pattern, a `# comment` and anything else
  `.gitignore` would read as no pattern at all are configuration errors: they match nothing.
- As in git, nothing below a folder the rules leave out comes back: with `drafts/` (or `drafts/`
  after `!keep.md`), `!drafts/keep.md` takes back nothing. Each folder of a path is judged first,
  by the last pattern naming that folder itself; then the path, by the last naming it.
  (`pathspec.GitIgnoreSpec` ranks a pattern naming the file above one naming its folder, whatever
  their order, so `*.txt`, `!keep.txt`, `drafts/` kept `drafts/keep.txt`: git leaves it out.)

Matching is case-sensitive (as both file systems and S3 keys are). `include` and `exclude` are
each one such list: a path is taken when `include` matches it and `exclude` does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pathspec import PathSpec
from pathspec.pattern import RegexPattern
from pathspec.patterns.gitignore import GitIgnorePatternError

__all__ = ["PathFilter", "check_patterns"]


def check_patterns(patterns: Iterable[str]) -> list[str]:
    """The patterns, unchanged, or ValueError naming the first one that is blank or invalid."""
    out = list(patterns)
    for p in out:
        if not p.strip():
            raise ValueError("empty glob pattern (a blank line matches nothing; remove it)")
        try:
            spec = PathSpec.from_lines("gitwildmatch", [p])  # as `_GitIgnore` compiles it
        except (GitIgnorePatternError, re.error) as e:  # re.error: a range such as "[z-a]"
            raise ValueError(f"invalid glob pattern {p!r}: {e}") from None
        if all(q.include is None for q in spec.patterns):
            # gitignore reads these as no pattern at all: a comment ("#draft.md"; "\\#" means a
            # literal "#"), "/" or an unclosed "[abc"; it would silently match nothing
            why = ("a leading '#' starts a comment: write '\\#' for a name that begins with '#'"
                   if p.startswith("#") else "it names no path: '/' alone, or a '[' without its ']'")
            raise ValueError(f"glob pattern {p!r} matches nothing in .gitignore syntax ({why})")
    return out


class _GitIgnore:
    """A list of patterns read as git reads a `.gitignore`: `matches(path)` is whether
    `git check-ignore` would report the path. pathspec compiles each line; its regex marks with
    the group `ps_d` where a pattern matched a folder (the path lies below it, or is it) rather
    than the path itself, and a trailing `/**` compiles to a prefix that matches only what lies
    below the folder."""

    def __init__(self, lines: list[str]) -> None:
        self._patterns = [(p.regex, bool(p.include)) for p in PathSpec.from_lines("gitwildmatch", lines).patterns
                          if isinstance(p, RegexPattern) and p.include is not None and p.regex is not None]
        self._folders: dict[str, bool] = {}  # folder -> left out: the listing asks for each file below

    def matches(self, path: str) -> bool:
        parts = path.split("/")
        for i in range(1, len(parts)):  # a folder left out takes everything below it along
            if self._folder(parts[:i]):
                return True
        return self._last(path, folder=False)

    def _folder(self, parts: list[str]) -> bool:
        folder = "/".join(parts)
        if (out := self._folders.get(folder)) is None:
            out = self._folders[folder] = self._last(folder, folder=True)
        return out

    def _last(self, path: str, *, folder: bool) -> bool:
        """The verdict of the last pattern naming `path` itself (as a folder or as a file)."""
        verdict = False
        for regex, include in self._patterns:
            if regex.groupindex.get("ps_d") is None:  # `x/**`: what lies below x, any depth
                named = regex.match(path) is not None
            elif folder:  # a pattern naming the folder: it matches "folder/" up to that slash
                m = regex.match(path + "/")
                named = m is not None and m.end("ps_d") == len(path) + 1
            else:  # a pattern naming the file itself, not one of its folders
                m = regex.match(path)
                named = m is not None and m.group("ps_d") is None
            if named:
                verdict = include
        return verdict


class PathFilter:
    """`include` minus `exclude`, tested against a relative POSIX path.

    An empty `include` list means "everything" (there is no useful reading of "include
    nothing"; the source's safe-delete thresholds would catch it anyway). Exclude wins.
    """

    def __init__(self, include: Iterable[str] = ("**/*",), exclude: Iterable[str] = (),
                 ceded: Iterable[tuple[str, str, PathFilter]] = ()) -> None:
        """`ceded`: for each source over this one's files whose `acl` lets in fewer
        (`connectors.config.narrower_within`), how a path here becomes one of its paths (a
        prefix to strip, one to put before it) and its own filter: a path such a source takes is
        theirs, never this source's, whatever this source's rules say."""
        inc, exc = check_patterns(include), check_patterns(exclude)
        self._include = _GitIgnore(inc) if inc else None
        self._exclude = _GitIgnore(exc) if exc else None
        self._ceded = tuple(ceded)

    def __call__(self, path: str) -> bool:
        if self._include is not None and not self._include.matches(path):
            return False
        return not self.excludes(path)

    def excludes(self, path: str) -> bool:
        """Whether the exclude rules (the include rules aside) leave out `path`, or a narrower
        source over this one's files takes it."""
        return (self._exclude is not None and self._exclude.matches(path)) or self.cedes(path)

    def cedes(self, path: str) -> bool:
        """Whether a source with a narrower `acl` over this one's files takes `path`: its files
        are listed there alone, so the narrow acl protects them whatever globs the two sources
        hold (a same-folder source with `include: [hr/**]`, or an exclude of `hr/*` taken back by
        `!*.md`, left them readable through the wider source)."""
        return any(path.startswith(strip) and own(above + path[len(strip):]) for strip, above, own in self._ceded)

    def excludes_folder(self, folder: str) -> bool:
        """Whether the exclude rules leave out the files of `folder` (relative, no trailing
        slash): `hr/` and `hr/**` do; tested with a file name no pattern names. A folder a
        narrower source takes files from is not left out as a whole: each file reached through
        it is asked `excludes` by its real path."""
        return self._exclude is not None and self._exclude.matches(f"{folder}/\x00probe")
