"""Vim help files (`doc/*.txt` of Vim, Neovim and their plugins): a command reference in plain
text with markup of its own.

A help file opens with its tag, `*undo.txt*  For Vim version 9.0.`, and ends with a modeline
(`vim:tw=78:ts=8:ft=help:norl:`). Sections open under a rule of `=` (or `-`) with their title
and tag on the next line ("1. Undo and redo commands   *undo-commands*", or "*08.1* Split a
window" in the user manual); a line ending in `~` is a column heading; a line ending in ` >`
opens an example, set in, that runs to a line starting with `<` or to the next line at column 0;
`*tag*` marks a tag and `|tag|` a link to one. Read as plain text, rules and titles ran into one
paragraph, no section was a heading (tabpage.txt had none), example lines such as "CTRL-W K"
became ALL-CAPS headings, and the markers were indexed. Here the sections are headings, examples
are code, and tags and links keep their names without the markers (":tabclose" stays a word).
"""

from __future__ import annotations

import re

from assets.parsing.textutil import clean_inline, join_lines
from connectors.documents import Block

__all__ = ["looks_like_vimhelp", "vimhelp_blocks"]

_FILE_TAG = re.compile(r"\A\ufeff?\*([\w.+-]+)\.txt\*[ \t]+(.*)")
_MODELINE = re.compile(r"^\s*vim?:.*\bft=help\b", re.M)
_MODELINE_IN = re.compile(r"\s*\bvim?:\S*\bft=help\b\S*")  # at a line's end, after "Copyright: …"
_RULE = re.compile(r"^(=|-)\1{9,}\s*$")
_BANNER = re.compile(r"^\s*N?VIM (?:REFERENCE|USER) MANUAL\b")
_TAG = re.compile(r"\*([^\s*|]+)\*")
_LINK = re.compile(r"\|([^\s|]+)\|")
_LEADING_NUMBER_TAG = re.compile(r"^\s*\*(\d[\d.]*)\*")
_EXAMPLE = re.compile(r"(?:^|\s)>(?:[a-z]{1,12})?$")
_MAX_HEADING_WORDS = 12
_MODELINE_MAX = 300  # characters of a line that may hold a modeline


def looks_like_vimhelp(text: str) -> bool:
    """A help file's first line is its tag, then "For Vim version …" or a modeline that says
    `ft=help` closes it."""
    m = _FILE_TAG.match(text)
    return m is not None and ("Vim version" in m.group(2) or _MODELINE.search(text[-600:]) is not None)


def vimhelp_blocks(text: str) -> tuple[list[Block], str | None]:
    """(blocks, title) of a Vim help file."""
    lines = text.replace("\r\n", "\n").expandtabs(8).split("\n")
    m = _FILE_TAG.match(lines[0])
    assert m is not None, "vimhelp_blocks reads a file looks_like_vimhelp accepted"
    title, start = _title(lines, m.group(1), m.group(2))
    # a modeline is short: a long line is never searched for one (the pattern backtracks over
    # every "vi:" of a line)
    lines = [_MODELINE_IN.sub("", ln).rstrip() if len(ln) <= _MODELINE_MAX and _MODELINE_IN.search(ln) else ln
             for ln in lines]
    reader = _Reader(_column_heads(lines))
    if title:
        reader.blocks.append(Block("heading", title, level=1))
    for i in range(start, len(lines)):
        reader.line(lines[i], i)
    reader.flush()
    return [b for b in reader.blocks if b.text.strip()], title


def _title(lines: list[str], name: str, rest: str) -> tuple[str, int]:
    """(title, the line the body starts at): the first line under the banner when it is short
    ("Undo and redo  *undo-redo*", "Splitting windows"), else what the first line says after
    the file's tag, else the file's name."""
    for i, line in enumerate(lines[1:12], 1):
        if not line.strip() or _BANNER.match(line) or line.strip().startswith(("and ", "by ")):
            continue  # the banner, and its second line of authors
        head = _heading_text(line, tags=False)
        if 0 < len(head.split()) <= _MAX_HEADING_WORDS and not head.endswith((".", ",", ":")) \
                and not _RULE.match(line):
            return head, i + 1
        break
    said = _TAG.sub("", rest).strip()
    if said and not said.startswith("For Vim version"):
        return clean_inline(said), 1
    return name, 1


def _heading_text(line: str, *, tags: bool = True) -> str:
    """A title line with its tags after it, unmarked ("1. Undo and redo commands  *undo-commands*"
    -> "1. Undo and redo commands (undo-commands)": the tag is the name people search for); a
    leading number tag stays as the number ("*08.1* Split a window" -> "08.1 Split a window")."""
    line = _LEADING_NUMBER_TAG.sub(r"\1", line)
    title = clean_inline(_LINK.sub(r"\1", _TAG.sub("", line)).rstrip().rstrip("~"))
    named = _TAG.findall(line) if tags else []
    return f"{title} ({' '.join(named)})" if named and title else title or " ".join(named)


def _is_title(line: str) -> bool:
    """A line that can be a section's title: short, and no sentence's end or middle."""
    text = _TAG.sub("", line).strip()
    return 0 < len(text.split()) <= _MAX_HEADING_WORDS and not text.endswith((".", ",", ";", ":"))


def _plain(line: str) -> str:
    return _LINK.sub(r"\1", _TAG.sub(r"\1", line)).rstrip()


def _column_heads(lines: list[str]) -> set[int]:
    """The lines that are column headings: ending in "~", opening with a letter or digit, and
    alone (a run of such lines is screen output shown as it looks: a directory listing, `:ls`)."""
    marked = [bool(ln.rstrip().endswith("~")) for ln in lines]
    return {i for i, ln in enumerate(lines) if marked[i] and ln.strip()[:1].isalnum()
            and not (i and marked[i - 1]) and not (i + 1 < len(lines) and marked[i + 1])
            and len(ln.split()) <= _MAX_HEADING_WORDS}


class _Reader:
    """Reads a help file's body line by line: a paragraph, an example or a pending rule."""

    def __init__(self, column_heads: set[int]) -> None:
        self.column_heads = column_heads
        self.blocks: list[Block] = []
        self.para: list[str] = []
        self.code: list[str] | None = None
        self.rule = 0  # the heading level a rule above announces, 0 if none

    def line(self, line: str, i: int) -> None:
        if self.code is not None:
            if line.startswith("<"):
                self._end_example()
                line = line[1:]
            elif line.strip() and not line[:1].isspace():
                self._end_example()
            else:
                self.code.append(line)
                return
        if self.rule and line.strip() and not _RULE.match(line) and (
                not _is_title(line) or line.startswith(("Next chapter:", "Copyright:"))):
            self.rule = 0  # a rule over prose, or over a manual's closing lines: they are text
        if _RULE.match(line):
            level = 1 if line.startswith("=") else 2
            if len(self.para) == 1 and _is_title(self.para[0]):  # a rule under its title (ft_sql's)
                self.blocks.append(Block("heading", _heading_text(self.para.pop()), level=level))
                self.rule = 0
            else:
                self.flush()
                self.rule = level
        elif not line.strip():
            self.flush()
        elif line.rstrip().endswith("~") and i not in self.column_heads:
            self.para.append(line.rstrip()[:-1])  # screen output, shown as it looks
        elif self.rule:
            self.blocks.append(Block("heading", _heading_text(line), level=self.rule))
            self.rule = 0
        elif i in self.column_heads and not self.para:
            self.blocks.append(Block("heading", _heading_text(line), level=3))
        elif m := _EXAMPLE.search(line.rstrip()):
            if before := line.rstrip()[:m.start()].rstrip():
                self.para.append(before)
            self.flush()
            self.code = []
        else:
            self.para.append(line)

    def _end_example(self) -> None:
        lines = self.code or []
        while lines and not lines[-1].strip():
            lines.pop()
        cut = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
        if lines:
            self.blocks.append(Block("code", "\n".join(ln[cut:].rstrip() for ln in lines)))
        self.code = None

    def flush(self) -> None:
        if self.code is not None:
            self._end_example()
        if not self.para:
            return
        lines = [_plain(ln) for ln in self.para]
        self.para = []
        if len(lines) > 1 and not any(ln[:1].isspace() or "   " in ln.strip() for ln in lines):
            self.blocks.append(Block("paragraph", clean_inline(join_lines(lines))))  # wrapped prose
        else:
            self.blocks.append(Block("paragraph", "\n".join(lines)))  # a command's columns: as laid out
