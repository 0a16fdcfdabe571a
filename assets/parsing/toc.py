"""Table-of-contents entries ("Installation ........ 12"), read in linear time.

A contents page set in a heading font must not become headings (`pdf._demote_toc_entries`).
The entries were found with the patterns

    ^(.+?)(?:\\s*(?:\\.\\s*){2,}|\\s+)(\\d{1,4}|[ivxlcdm]{1,6})$      one entry (re.I)
    \\s*(.+?)(?:\\s*(?:\\.\\s*){2,}|\\s+)(\\d{1,4})(?=\\s|$)           entries joined on one line

whose lazy title and dot leader can both claim the same dots and spaces: a 1,750-character
heading of dots took 29 s to parse, and any page could carry one (an attacker's audit). These
functions give what those patterns gave (checked on 160,000 random strings), deciding each
possible end of the title in O(1) from tables of where each run of dots and spaces ends: a
leader always runs to the end of its run.
"""

from __future__ import annotations

import re

__all__ = ["toc_entries", "toc_entry"]

_NUMBER = re.compile(r"(?:\d{1,4}|[ivxlcdm]{1,6})$", re.IGNORECASE)  # used with .match(text, pos)


class _Runs:
    """Per position i: where the run of dots and whitespace starting at i ends, the first dot
    at or after i, and how many dots that run holds."""

    def __init__(self, text: str) -> None:
        n = len(text)
        self.end = [n] * (n + 1)
        self.next_dot = [n] * (n + 1)
        self.dots = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            c = text[i]
            if c == "." or c.isspace():
                self.end[i] = self.end[i + 1]
                self.dots[i] = self.dots[i + 1] + (c == ".")
            else:
                self.end[i] = i
            self.next_dot[i] = i if c == "." else self.next_dot[i + 1]

    def leader(self, e: int) -> int:
        """The end of a leader starting at `e` (`\\s*(?:\\.\\s*){2,}` or `\\s+`, which can only
        end where the run ends), or -1."""
        b = self.end[e]
        if b == e:
            return -1
        return b if self.dots[e] >= 2 or self.next_dot[e] >= b else -1


def toc_entry(text: str) -> tuple[str, str] | None:
    """(title, page number) when all of `text` is one contents entry, else None."""
    n = len(text)
    if n < 2:
        return None
    runs = _Runs(text)
    for e in range(1, n):
        if text[e - 1] == "\n":  # the title does not cross a line
            return None
        b = runs.leader(e)
        if b >= 0 and (m := _NUMBER.match(text, b)):
            return text[:e], m.group(0)
    return None


def _number_end(text: str, b: int) -> int:
    """The end of `\\d{1,4}(?=\\s|$)` at `b` (the longest that is followed by a space or the
    end), or -1."""
    n, k = len(text), 0
    while k < 4 and b + k < n and text[b + k].isdecimal():
        k += 1
    while k >= 1:
        j = b + k
        if j == n or text[j].isspace():
            return j
        k -= 1
    return -1


def toc_entries(text: str) -> list[tuple[int, int, str]]:
    """(start, end, title) of the entries that follow one another from the start of `text`,
    up to the first place where none starts."""
    n = len(text)
    runs = _Runs(text)

    def entry_end(e: int) -> int:  # a leader and a page number after a title ending at e
        b = runs.leader(e)
        return -1 if b < 0 else _number_end(text, b)

    out: list[tuple[int, int, str]] = []
    p = 0
    while p < n:
        ts = p
        while ts < n and text[ts].isspace():
            ts += 1
        found: tuple[int, str] | None = None
        e = ts + 1  # the shortest title from the first non-space character
        while ts < n and e < n:
            if (end := entry_end(e)) >= 0:
                found = (end, text[ts:e])
                break
            if text[e] == "\n":
                break
            e += 1
        if found is None:  # the leading spaces give one back: a title that starts among them
            for start in range(min(ts, n) - 1, p - 1, -1):
                if text[start] == "\n":
                    continue  # a title does not start with a line break...
                # ...and every longer title was refused above: only one ending at start + 1 is new
                if start + 1 < n and (end := entry_end(start + 1)) >= 0:
                    found = (end, text[start:start + 1])
                    break
        if found is None:
            break
        out.append((p, found[0], found[1]))
        p = found[0]
    return out
