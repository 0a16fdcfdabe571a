"""Include/exclude matching shared by every source, on POSIX paths relative to the root, with
the real `.gitignore` semantics of `pathspec.GitIgnoreSpec` (what operators already know):

- `*` matches within one path segment, `?` one character, `[abc]` / `[!abc]` a class;
  `**` as a whole segment matches any number of segments, including none.
- A pattern with no `/` except a trailing one matches at any depth: `*.pdf` is `**/*.pdf`.
- A leading (or inner) `/` anchors the pattern at the root: `/*.md` matches top-level files only.
- A pattern that matches a folder matches everything below it: `drafts/`, `x/*` (so `x/a/b` too).
- `!pattern` negates: a later `!keep.md` takes back what an earlier `*.md` matched; later
  lines win, as in a `.gitignore` file. A blank pattern, a `# comment` and anything else
  `.gitignore` would read as no pattern at all are configuration errors: they match nothing.

Matching is case-sensitive (as both file systems and S3 keys are). `include` and `exclude` are
each one such list: a path is taken when `include` matches it and `exclude` does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore import GitIgnorePatternError

__all__ = ["PathFilter", "check_patterns"]


def check_patterns(patterns: Iterable[str]) -> list[str]:
    """The patterns, unchanged, or ValueError naming the first one that is blank or invalid."""
    out = list(patterns)
    for p in out:
        if not p.strip():
            raise ValueError("empty glob pattern (a blank line matches nothing; remove it)")
        try:
            spec = GitIgnoreSpec.from_lines([p])
        except (GitIgnorePatternError, re.error) as e:  # re.error: a range such as "[z-a]"
            raise ValueError(f"invalid glob pattern {p!r}: {e}") from None
        if all(q.include is None for q in spec.patterns):
            # gitignore reads these as no pattern at all: a comment ("#draft.md"; "\\#" means a
            # literal "#"), "/" or an unclosed "[abc"; it would silently match nothing
            why = ("a leading '#' starts a comment: write '\\#' for a name that begins with '#'"
                   if p.startswith("#") else "it names no path: '/' alone, or a '[' without its ']'")
            raise ValueError(f"glob pattern {p!r} matches nothing in .gitignore syntax ({why})")
    return out


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
        self._include = GitIgnoreSpec.from_lines(inc) if inc else None
        self._exclude = GitIgnoreSpec.from_lines(exc) if exc else None
        self._ceded = tuple(ceded)

    def __call__(self, path: str) -> bool:
        if self._include is not None and not self._include.match_file(path):
            return False
        return not self.excludes(path)

    def excludes(self, path: str) -> bool:
        """Whether the exclude rules (the include rules aside) leave out `path`, or a narrower
        source over this one's files takes it."""
        return (self._exclude is not None and self._exclude.match_file(path)) or self.cedes(path)

    def cedes(self, path: str) -> bool:
        """Whether a source with a narrower `acl` over this one's files takes `path`: its files
        are listed there alone, so the narrow acl protects them whatever globs the two sources
        hold (a same-folder source with `include: [hr/**]`, or an exclude of `hr/` taken back by
        `!*.md`, left them readable through the wider source)."""
        return any(path.startswith(strip) and own(above + path[len(strip):]) for strip, above, own in self._ceded)

    def excludes_folder(self, folder: str) -> bool:
        """Whether the exclude rules leave out the files of `folder` (relative, no trailing
        slash): `hr/` and `hr/**` do; tested with a file name no pattern names. A folder a
        narrower source takes files from is not left out as a whole: each file reached through
        it is asked `excludes` by its real path."""
        return self._exclude is not None and self._exclude.match_file(f"{folder}/\x00probe")
