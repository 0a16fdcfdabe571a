"""The AsciiDoc preprocessor: conditional directives decided and `include::` lines followed where
an `IncludeReader` admits the file (depth, repeats and bytes bounded), or marked for the block
reader; attribute values tracked for include targets built from them."""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from assets.parsing.asciidoc.syntax import (
    ATTRIBUTE_ENTRY,
    ATTRIBUTE_LIST,
    ATTRIBUTE_REF,
    INCLUDED,
    MAX_ATTRIBUTE_CHARS,
)
from assets.parsing.sniff import decode_text
from assets.parsing.textutil import normalize_chars

IncludeReader = Callable[[str, str], "tuple[str, bytes] | None"]
"""(an include target as written, attributes substituted; the external id of the file holding
the include line) -> (the included file's external id, its bytes), or None: not followed."""

MAX_INCLUDE_DEPTH = 8  # files included by included files; deeper include lines stay pointers
MAX_INCLUDED_BYTES = 16 * 1024 * 1024  # what included files may add to one document, at most
MAX_INCLUDE_REPEATS = 4  # times one file may be read into one document (a 4 KB page made 104 MB)
_ATTRIBUTE_WRAP = re.compile(r"[ \t]\\$")  # an attribute value wrapped onto the next line
_CONDITIONAL = re.compile(r"^(ifdef|ifndef|ifeval|endif)::([^\[]*)\[(.*)\][ \t]*$")
_INCLUDE = re.compile(r"^include::([^\[]+)\[([^\]]*)\][ \t]*$")
_TAG_DIRECTIVE = re.compile(r"\b(tag|end)::([\w.-]{1,200})\[\]")  # a tagged region's ends, in an included file
_COMMENT_FENCE = re.compile(r"^/{4,}[ \t]*$")


def substituted(target: str, values: Mapping[str, str]) -> str | None:
    """An include target with its attribute references (`{partialsdir}`) replaced by `values`;
    None when one of them is not set (such a target is not followed)."""
    missing = False

    def value(m: re.Match[str]) -> str:
        nonlocal missing
        v = values.get(m.group(2).lower())
        missing = missing or v is None
        return v or ""

    out = ATTRIBUTE_REF.sub(value, target.strip())
    return None if missing else out


def resolve_include(base: str, target: str) -> str | None:
    """The path an include target names from the file `base` (a source-relative path):
    relative to `base`'s folder, as Asciidoctor resolves it; None for what is not a file of
    the same source (an absolute path, a URL, anything above the source's root)."""
    target = target.strip()
    if not target or target.startswith("/") or "://" in target or "\\" in target or "\x00" in target:
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), target))
    if joined in (".", "..") or joined.startswith(("../", "/")):
        return None
    return joined


@dataclass
class Included:
    """What following includes has cost so far in one parse."""

    reader: IncludeReader | None
    budget: int  # bytes the included files may still add
    spent: int = 0  # bytes they added
    followed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Preprocessor:
    """Conditional directives decided, include lines followed (where `reader` admits the file)
    or marked (`INCLUDED`), one file after another, the includer's attributes deciding the
    included files' conditions as they decide its own (the point of Git's `:git-log: 1` before
    `include::diff-options.txt[]`)."""

    def __init__(self, included: Included) -> None:
        self.included = included
        self.known: dict[str, bool] = {}
        self.values: dict[str, str] = {}  # attribute values, for targets built from them
        self.stack: list[bool] = []
        self.hidden = 0  # conditions on the stack that are false: text is kept while there are none
        self.out: list[str] = []
        self.includes: list[str] = []
        self.files: list[str] = []  # the files being read, outermost first (a cycle is not followed)

    def feed(self, text: str, base: str, *, lines_wanted: Callable[[int], bool] | None = None,
             tags: set[str] | None = None) -> None:
        lines = text.split("\n")
        joined = 0  # lines up to here were joined to the attribute entry before them
        comment = ""  # the fence of the comment block the line is in
        inside: dict[str, int] = {}  # the tags open at this line (an included file's `tag::x[]`)
        open_wanted = 0  # of them, the tags asked for
        self.files.append(base)
        for n, line in enumerate(lines):
            if n < joined:
                continue
            if len(self.files) > 1:  # an included file: its selection, and no tag directive shown
                if m := _TAG_DIRECTIVE.search(line):
                    name, opens = m.group(2), m.group(1) == "tag"
                    if opens or inside.get(name):
                        inside[name] = inside.get(name, 0) + (1 if opens else -1)
                        open_wanted += (1 if opens else -1) if tags is not None and name in tags else 0
                    continue
                if (tags is not None and not open_wanted) or (lines_wanted is not None and not lines_wanted(n + 1)):
                    continue
            if comment or _COMMENT_FENCE.match(line):
                if self.hidden == 0:
                    self.out.append(line)
                comment = "" if line.rstrip() == comment else comment or line.rstrip()
                continue
            if m := _CONDITIONAL.match(line):
                self._condition(*m.groups())
                continue
            if self.hidden:
                continue
            if m := _INCLUDE.match(line):
                self._include(m.group(1).strip(), m.group(2), base)
                continue
            if m := ATTRIBUTE_ENTRY.match(line):
                line, joined = _joined_entry(lines, n)
                m = ATTRIBUTE_ENTRY.match(line) or m
                name = m.group(2).lower()
                self.known[name] = not (m.group(1) or m.group(3))
                if self.known[name]:
                    self.values[name] = (m.group(4) or "").strip()
                else:
                    self.values.pop(name, None)
            self.out.append(line)
        self.files.pop()

    def _condition(self, kind: str, names: str, inline: str) -> None:
        if kind == "endif":
            if self.stack:
                self.hidden -= not self.stack.pop()
            return
        keep = _condition(kind, names, self.known)
        if inline and kind != "ifeval":  # ifdef::name[text]: one line of its own
            if keep and self.hidden == 0:
                self.out.append(inline)
            return
        self.stack.append(keep)
        self.hidden += not keep

    def _include(self, target: str, spec: str, base: str) -> None:
        if len(self.files) == 1:  # the document's own include lines, not its included files'
            self.includes.append(target)
        got = self._read(target, base)
        if got is None:
            self.out.append(INCLUDED + target)
            return
        dep, data = got
        attrs = dict(_include_attributes(spec))
        offset = level_offset(attrs.get("leveloffset", ""))
        if offset:
            self.out.append(f":leveloffset: {offset:+d}")
        text, _ = decode_text(data)
        self.feed(normalize_chars(text), dep, lines_wanted=_line_ranges(attrs.get("lines", "")),
                  tags=_tag_names(attrs.get("tag") or attrs.get("tags") or ""))
        if offset:
            self.out.append(f":leveloffset: {-offset:+d}")

    def _read(self, target: str, base: str) -> tuple[str, bytes] | None:
        """The included file (its external id, its bytes) when it is followed, else None."""
        inc = self.included
        if inc.reader is None or len(self.files) > MAX_INCLUDE_DEPTH:
            return None
        resolved = substituted(target, self.values)
        got = inc.reader(resolved, base) if resolved is not None else None
        if got is None or got[0] in self.files:  # not admitted, or a file including itself
            return None
        if inc.followed.count(got[0]) >= MAX_INCLUDE_REPEATS:
            inc.warnings.append(f"include::{target}[] not followed: read {MAX_INCLUDE_REPEATS} times already")
            return None
        if len(got[1]) > inc.budget:
            inc.warnings.append(f"include::{target}[] not followed: the document would pass its size limit")
            return None
        inc.budget -= len(got[1])
        inc.spent += len(got[1])
        inc.followed.append(got[0])
        return got


def _include_attributes(spec: str) -> list[tuple[str, str]]:
    """An include line's attributes (`tag=x`, `lines="1..3;5"`, `leveloffset=+1`)."""
    return [(m.group(1).lower(), m.group(2).strip().strip('"\'')) for m in ATTRIBUTE_LIST.finditer(spec)
            if m.group(1)]


def level_offset(value: str) -> int:
    """`leveloffset=+1` (or -1, or 1): how many levels the included file's sections move down."""
    m = re.fullmatch(r"\s*([+-]?)(\d{1,2})\s*", value)
    return 0 if not m else (-1 if m.group(1) == "-" else 1) * min(int(m.group(2)), 5)


def _line_ranges(value: str) -> Callable[[int], bool] | None:
    """`lines=1..5;10..-1` (`;` or `,` between ranges, -1: to the end) as a test of a line
    number (ranges merged, one binary search a line); None for every line."""
    ranges: list[tuple[int, int]] = []
    for part in re.split(r"[;,]", value):
        if m := re.fullmatch(r"\s*(\d{1,9})(?:\.\.(-1|\d{1,9}))?\s*", part):
            first = int(m.group(1))
            last = first if m.group(2) is None else (1 << 62 if m.group(2) == "-1" else int(m.group(2)))
            ranges.append((first, last))
    if not ranges:
        return None
    merged: list[list[int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    starts = [a for a, _ in merged]

    def wanted(n: int) -> bool:
        k = bisect.bisect_right(starts, n) - 1
        return k >= 0 and n <= merged[k][1]

    return wanted


def _tag_names(value: str) -> set[str] | None:
    """`tag=x` or `tags=x;y`: the tagged regions to include; None for the whole file (no tag
    named, or a wildcard or negation, which are read as the whole file)."""
    names = {t.strip() for t in re.split(r"[;,]", value) if t.strip()}
    return None if not names or any(t.startswith("!") or "*" in t for t in names) else names


def preprocess(text: str, base: str = "", included: Included | None = None) -> tuple[list[str], list[str]]:
    """The document's lines with conditional directives decided and each include line followed
    (its file's lines in its place, where `included.reader` admits the file) or marked
    (`INCLUDED`), and the include targets it names, as written. A condition is decided only on
    attributes the document (or its includer) sets or unsets (see the module's docstring);
    `ifeval` is kept. Directives inside a `////` comment block are part of the comment."""
    pre = _Preprocessor(included or Included(None, 0))
    pre.feed(text, base)
    return pre.out, pre.includes


def _joined_entry(lines: list[str], n: int) -> tuple[str, int]:
    """An attribute entry with its value's wrapped lines joined to it (` \\` at a line's end: the
    value goes on on the next line, joined by a space), while it holds at most
    `MAX_ATTRIBUTE_CHARS`; and the index of the line after the last one joined."""
    line = lines[n]
    while _ATTRIBUTE_WRAP.search(line) and n + 1 < len(lines) and len(line) <= MAX_ATTRIBUTE_CHARS:
        n += 1
        line = _ATTRIBUTE_WRAP.sub("", line) + " " + lines[n].strip()
    return _ATTRIBUTE_WRAP.sub("", line), n + 1


def _condition(kind: str, names: str, known: dict[str, bool]) -> bool:
    if kind == "ifeval":
        return True
    parts = [n.strip().lower() for n in re.split(r"[,+]", names) if n.strip()]
    if not parts or any(p not in known for p in parts):
        return True  # set by whoever includes this file, if anyone: keep the text
    values = [known[p] for p in parts]
    defined = all(values) if "+" in names else any(values)
    return defined if kind == "ifdef" else not defined
