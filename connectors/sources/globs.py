"""Include/exclude glob matching shared by every source, on POSIX paths relative to the root.

Python 3.11 has no `PurePosixPath.full_match` and `fnmatch` lets `*` cross `/`, so patterns
are translated to regexes here. The rules follow `.gitignore`, which operators already know:

- `*` matches within one path segment, `?` one character, `[abc]` / `[!abc]` a class
  (never `/`); `**` as a whole segment matches any number of segments, including none.
- A pattern with no `/` in it matches at any depth: `*.pdf` is the same as `**/*.pdf`.
- A leading `/` anchors the pattern at the root: `/*.md` matches top-level files only.
- A trailing `/` names a folder and everything below it: `drafts/` matches `drafts/a.txt`
  and `x/drafts/b/c.txt`.

Matching is case-sensitive (as both file systems and S3 keys are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["PathFilter", "glob_to_regex"]


def _segment(seg: str) -> str:
    """Regex for one path segment without `/`: `*`, `?`, `[...]` and literals."""
    out: list[str] = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        i += 1
        if c == "*":
            while i < n and seg[i] == "*":  # `a**b` inside a segment behaves like `a*b`
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i
            if j < n and seg[j] in "!^":
                j += 1
            if j < n and seg[j] == "]":  # a `]` right after `[` or `[!` is literal
                j += 1
            while j < n and seg[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal `[`
                out.append(re.escape(c))
                continue
            body = seg[i:j]
            i = j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append(f"(?!/)[{'^' if negate else ''}{body}]")
        else:
            out.append(re.escape(c))
    return "".join(out)


def glob_to_regex(pattern: str) -> str:
    """Translate one glob (rules in the module docstring) to a regex for `re.fullmatch`."""
    p = pattern.strip()
    if not p or p == "/":
        raise ValueError(f"empty glob pattern: {pattern!r}")
    anchored = p.startswith("/")
    folder = p.endswith("/")
    p = p.strip("/")
    if not anchored and "/" not in p:
        p = "**/" + p
    if folder:
        p += "/**"
    parts = p.split("/")
    out: list[str] = []
    for i, seg in enumerate(parts):
        last = i == len(parts) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment(seg) + ("" if last else "/"))
    return "".join(out)


def _compile(patterns: Iterable[str]) -> re.Pattern[str] | None:
    regexes = [glob_to_regex(p) for p in patterns]
    if not regexes:
        return None
    return re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL)


class PathFilter:
    """`include` minus `exclude`, tested against a relative POSIX path.

    An empty `include` list means "everything" (there is no useful reading of "include
    nothing"; the source's safe-delete thresholds would catch it anyway). Exclude wins.
    """

    def __init__(self, include: Iterable[str] = ("**/*",), exclude: Iterable[str] = ()) -> None:
        self._include = _compile(include)
        self._exclude = _compile(exclude)

    def __call__(self, path: str) -> bool:
        if self._include is not None and not self._include.fullmatch(path):
            return False
        return not (self._exclude is not None and self._exclude.fullmatch(path))
