"""Perl's POD (Plain Old Documentation: `.pod` files, perlpodspec) without Pod::Simple.

Perl's manuals (perlfaq, perlvar, perlfunc...) are POD. Read as plain text, every one of them is
titled "=head1 NAME", its `X<...>` index lines and `C<...>` codes are words a query has to match,
and its indented examples look like headings. This reader gives the blocks `perldoc` shows:

* `=head1`..`=head6` → headings at their levels; `=head1 NAME` over "perlfaq4 - Data
  Manipulation" makes that line the title (as a manual page's NAME line does) and keeps it as text.
* `=over`/`=item`/`=back`: `=item *` (or `-`, `o`, none) and `=item 1.` → list items (the item's
  text, else the paragraph under it; ``meta`` depth/ordered); any other `=item` (`=item -e`,
  `=item $_`, `=item open FILEHANDLE,EXPR`) is a term: a paragraph marked {"term": True}, the
  terms of consecutive `=item` lines in one block, and its description the paragraphs after it.
  An item is never a heading, so a contents page of 300 `=item *` questions is a list.
* Verbatim (indented) paragraphs → code blocks, consecutive ones as one; ordinary paragraphs →
  paragraphs with their formatting codes resolved: B<> I<> C<> F<> S<> → their text,
  E<lt>/E<gt>/E<sol>/E<verbar>/HTML names/numbers → the character, L<text|target> → text,
  L<target> → target (L<perlop/"Sec"> → "Sec" in perlop), X<> and Z<> → nothing, and the
  multi-angle forms (C<< $a <=> $b >>).
* `=pod`, `=cut` (and the non-POD lines after it), `=encoding` (used to decode), `=begin`/`=end`
  and `=for` regions of a format other than text (`=for comment`, `=begin html`) dropped;
  `=begin text`/`=for text` kept as text.

Malformed POD is read, not refused: an unclosed `C<` runs to its paragraph's end, a missing
`=back` ends at the next heading, an `=item` outside `=over` is an item all the same.
"""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass, field

from assets.parsing.sniff import decode_text
from assets.parsing.textutil import clean_inline, normalize_chars
from connectors.documents import Block, BlockKind, ParseResult

__all__ = ["parse_pod", "pod_inline"]

_COMMAND = re.compile(r"=([a-zA-Z]\w*)(?:[ \t]+|\n|$)")
_ENCODING = re.compile(rb"^=encoding[ \t]+([\w.:-]{1,40})", re.MULTILINE)
_NUMBERED = re.compile(r"(\d{1,4})[.)]?(?:\s+(.*))?\Z", re.S)
_BULLETED = re.compile(r"([*+\u2022o-])(?:\s+(.*))?\Z", re.S)
_TEXT_FORMATS = frozenset({"text", ":text"})
_NAMES = frozenset({"NAME", "NAMN", "NOM", "NOMBRE"})
_MAX_NESTING = 32  # formatting codes deeper than this are read as their literal text
_E_NAMES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&", "apos": "'"}


# -- formatting codes -----------------------------------------------------------------------------

def _entity(name: str) -> str:
    """E<...>'s character: a POD or HTML name, or a decimal, 0x-hex or 0-octal number."""
    name = name.strip()
    if name in _E_NAMES:
        return _E_NAMES[name]
    try:
        if re.fullmatch(r"0[xX][0-9a-fA-F]{1,6}", name):
            return chr(int(name, 16))
        if re.fullmatch(r"0[0-7]{1,7}", name):
            return chr(int(name, 8))
        if re.fullmatch(r"\d{1,7}", name):
            return chr(int(name))
    except (ValueError, OverflowError):
        return ""
    out = html.unescape(f"&{name};")
    return "" if out == f"&{name};" else out


def _link(raw: str, depth: int) -> str:
    """L<...>'s words: the text before a top-level "|", else the target as perldoc writes it
    (`name`, `"section" in name`, `"section"`, a URL). Each part is resolved once: resolving
    the whole and then its text again doubled the work at every nested L<x|y> (a review: 111
    bytes took 16 s)."""
    bar = _top_level_bar(raw)
    if bar >= 0:
        return pod_inline(raw[:bar], depth + 1).strip()
    target = pod_inline(raw, depth + 1).strip()
    if re.match(r"[a-zA-Z][\w+.-]*:[^:\s]", target) and "/" in target.split(":", 1)[1][:2]:
        return target  # a URL: its "/"s are no section marks
    name, slash, section = target.partition("/")
    if not slash:
        return target.strip('"') if target.startswith('"') else target
    section = section.strip().strip('"')
    if not name.strip():
        return f'"{section}"'
    return f'"{section}" in {name.strip()}' if section else name.strip()


def _top_level_bar(raw: str) -> int:
    """Where a "|" outside any nested formatting code is in L<>'s raw content, else -1."""
    depth = 0
    for i, c in enumerate(raw):
        if c == "<" and i > 0 and raw[i - 1].isupper():
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif c == "|" and not depth:
            return i
    return -1


def _apply(code: str, raw: str, depth: int) -> str:
    """A formatting code's words (`raw`, its content, at nesting `depth`)."""
    if code in ("X", "Z"):
        return ""
    if code == "L":
        return _link(raw, depth)
    text = pod_inline(raw, depth + 1)
    if code == "E":
        return _entity(text)
    return text  # B I C F S, and codes perlpodspec does not name: their text


def _code_end(s: str, i: int, n: int) -> int:
    """Where a code opened with `n` angle brackets whose content starts at `i` closes: the
    index of its first closing ">" (for n > 1, after whitespace), or -1 if it never does."""
    if n == 1:
        return -1 if s.find(">", i) < 0 else _single_end(s, i)
    m = re.compile(rf"\s>{{{n}}}").search(s, i)
    return -1 if m is None else m.start() + 1


def _single_end(s: str, i: int) -> int:
    """The closing ">" of a single-angle code whose content starts at `i`, past nested codes."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c == "<" and i > 0 and s[i - 1].isupper() and s[i - 1].isascii():
            depth += 1
        elif c == ">":
            if not depth:
                return i
            depth -= 1
        i += 1
    return -1


_OPEN = re.compile(r"([A-Z])(<+)")


def pod_inline(s: str, depth: int = 0) -> str:
    """A paragraph's text with its formatting codes resolved (see the module docstring)."""
    if "<" not in s:
        return s
    out: list[str] = []
    pos = 0
    for m in _OPEN.finditer(s):
        if m.start() < pos:
            continue
        code, n = m.group(1), len(m.group(2))
        start = m.end()
        if n > 1 and not (start < len(s) and s[start].isspace()):
            n, start = 1, m.start() + 2  # "C<<x" is C< over "<x"
        if depth >= _MAX_NESTING:
            break
        end = _code_end(s, start, n)
        stop = len(s) if end < 0 else end
        raw = s[start:stop]
        if n > 1:
            raw = raw.strip()
        out.append(s[pos:m.start()])
        out.append(_apply(code, raw, depth))
        pos = len(s) if end < 0 else end + n
    out.append(s[pos:])
    return "".join(out)


# -- paragraphs -----------------------------------------------------------------------------------

def _paragraphs(text: str) -> list[list[str]]:
    """The POD paragraphs of a document (lines split at blank or whitespace-only lines), without
    the non-POD text after each `=cut` up to the next command line."""
    paras: list[list[str]] = []
    cur: list[str] = []
    in_pod = True
    for line in text.split("\n"):
        if not in_pod:
            if not re.match(r"=[a-zA-Z]", line):
                continue
            in_pod = True
        if not line.strip():
            if cur:
                paras.append(cur)
            cur = []
            continue
        if cur and _COMMAND.match(line):  # a command opens a paragraph, blank line or none
            paras.append(cur)
            cur = []
        if not cur and line.startswith("=cut") and not line[4:5].strip():
            in_pod = False
            continue
        cur.append(line)
    if cur:
        paras.append(cur)
    return paras


@dataclass
class _Reader:
    """The state of one document's reading: blocks so far, open lists and regions."""

    blocks: list[Block] = field(default_factory=list)
    lists: int = 0  # open =over levels
    item: str = ""  # "bullet"/"number": the next ordinary paragraph is that item's text
    terms: list[str] = field(default_factory=list)  # =item terms not yet written out
    regions: list[bool] = field(default_factory=list)  # open =begin regions: kept or not
    verbatim: list[str] = field(default_factory=list)  # lines of consecutive verbatim paragraphs

    @property
    def skipping(self) -> bool:
        return not all(self.regions)

    def emit(self, kind: BlockKind, text: str, *, level: int = 0, meta: dict[str, object] | None = None) -> None:
        text = clean_inline(text)
        if text:
            self.blocks.append(Block(kind, text, level=level, meta=dict(meta or {})))

    def flush(self, terms: bool = True) -> None:
        """Write out what waits for the next paragraph: terms (unless another `=item` adds to
        them) and a run of verbatim text."""
        if terms:
            lines = [t for t in (clean_inline(x) for x in self.terms) if t]
            if lines:
                self.blocks.append(Block("paragraph", "\n".join(lines), meta={"term": True}))
            self.terms = []
        if self.verbatim:
            lines = textwrap.dedent("\n".join(self.verbatim).expandtabs(8)).split("\n")
            code = "\n".join(ln.rstrip() for ln in normalize_chars("\n".join(lines)).split("\n")).strip("\n")
            if code.strip():
                self.blocks.append(Block("code", code))
            self.verbatim = []

    # -- one paragraph ---------------------------------------------------------------------------
    def paragraph(self, lines: list[str]) -> None:
        m = _COMMAND.match(lines[0])
        if m:
            self.command(m.group(1), "\n".join([lines[0][m.end():], *lines[1:]]).strip())
        elif self.skipping:
            return
        elif lines[0][:1] in (" ", "\t"):
            if self.terms:
                self.flush()
            self.item = ""
            if self.verbatim:
                self.verbatim.append("")
            self.verbatim.extend(lines)
        else:
            self.ordinary(" ".join(ln.strip() for ln in lines))

    def ordinary(self, text: str) -> None:
        self.flush()
        if self.item:
            self.emit("list_item", pod_inline(text), meta=self._item_meta())
            self.item = ""
        else:
            self.emit("paragraph", pod_inline(text))

    def _item_meta(self) -> dict[str, object]:
        return {"depth": max(self.lists - 1, 0), "ordered": self.item == "number"}

    def command(self, name: str, arg: str) -> None:  # length: one branch per command
        if name == "begin":
            self.flush()
            self.regions.append(arg.split()[0].lower() in _TEXT_FORMATS if arg.split() else False)
            return
        if name == "end":
            self.flush()
            if self.regions:
                self.regions.pop()
            return
        if self.skipping:
            return
        if name == "for":
            fmt, *rest = arg.split(None, 1) or [""]  # a bare "=for" names no format: nothing to read
            if fmt.lower() in _TEXT_FORMATS and rest and rest[0].strip():
                self.ordinary(rest[0])
            return
        self.flush(terms=name != "item")  # consecutive =item terms make one block
        self.item = ""
        head = re.fullmatch(r"head([1-6])", name)
        if head:
            self.lists = 0
            self.emit("heading", pod_inline(arg), level=int(head.group(1)))
        elif name == "over":
            self.lists += 1
        elif name == "back":
            self.lists = max(self.lists - 1, 0)
        elif name == "item":
            self.list_item(arg)
        elif name not in ("pod", "cut", "encoding"):
            self.ordinary(arg)  # an unknown command: its text is still the author's

    def list_item(self, arg: str) -> None:
        """`=item`: a bullet or number opens a list item (its text, else the next paragraph's);
        anything else is a term."""
        text = arg.strip()
        mark = _BULLETED.match(text) or _NUMBERED.match(text)
        if text and not mark:
            self.terms.append(pod_inline(text))
            return
        self.item = "bullet" if not mark or mark.re is _BULLETED else "number"
        rest = mark.group(2) if mark else None
        if rest and rest.strip():
            self.ordinary(rest)


def _title(blocks: list[Block]) -> str | None:
    """The NAME section's line ("perlfaq4 - Data Manipulation"), as a manual page is titled."""
    for i, b in enumerate(blocks):
        if b.kind == "heading":
            if b.text.strip().upper() in _NAMES and i + 1 < len(blocks) and blocks[i + 1].kind == "paragraph":
                return blocks[i + 1].text[:300]
            return None
    return None


def parse_pod(data: bytes) -> ParseResult:
    """Parse a POD document (see the module docstring)."""
    declared = _ENCODING.search(data[:65536])
    text, encoding = decode_text(data, declared.group(1).decode("ascii") if declared else None)
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    reader = _Reader()
    for para in _paragraphs(text):
        reader.paragraph(para)
    reader.flush()
    return ParseResult(blocks=reader.blocks, title=_title(reader.blocks), format="pod",
                       metadata={"encoding": encoding})
