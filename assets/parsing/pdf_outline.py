"""A PDF's outline (bookmarks) and the titles it names: title keys, section numbers, and the
lines of the pages that are an entry's title (`mark_outline`).

Pure functions over the layout's small dataclasses (`pdf_layout.Line`, `Region`), so the rules can
be unit-tested with hand-made coordinates.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assets.parsing.pdf_layout import MAX_HEADING_LINES, Line, Region

__all__ = ["OutlineEntry", "is_numbered", "is_section_number", "is_unmapped_number", "mark_outline", "title_key"]

# A title's number ("2.8", "Chapter 2", "A.1", "IV.") that the text or the outline may leave out.
_NUMBERING = re.compile(
    r"^\s*(?:(?:chapter|section|part|appendix|chap\.|sec\.|§)\s*)?"
    r"(?:\d+(?:[.\-]\d+)*(?:[.):]|\s+[-–—])?|[A-Z](?:[.\-]\d+)+[.):]?|(?:[IVXLC]+|[A-Z])(?:[.):]|\s+[-–—]))\s+",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^(?:appendix|annex|anhang|part|chapter|book)\s+", re.IGNORECASE)
_ROMAN = re.compile(r"[IVXLC]{1,7}\.?")  # a chapter's bare "XXII" set apart from its title
_SUBNUMBER = re.compile(r"\d+(?:\.(?:\d+|[ivxlc]{1,5}))+\.?")  # "3.ii": a Roman sub-number
_CJK_NUMBER = re.compile(r"第\s*[0-9一二三四五六七八九十百零〇两]+\s*[章节部篇卷]|附\s*录\s*[A-Z0-9]?")
_TOKEN = re.compile(r"[^\W_]+")
MIN_TITLE_KEY = 4  # a shorter title (normalised) is found only where a heading line matches it


@dataclass
class OutlineEntry:
    """One entry of the PDF's outline (bookmarks): level (1 = top), title, 1-based page."""

    level: int
    title: str
    page: int

    @property
    def key(self) -> str:
        return title_key(self.title)

    @property
    def loose(self) -> str:
        return title_key(_NUMBERING.sub("", self.title, count=1))


def _norm(token: str) -> str:
    return unicodedata.normalize("NFKC", token).casefold()


def title_key(text: str) -> str:
    """A title reduced to its letters and digits, case-folded, ligatures expanded: whitespace,
    punctuation and line-end hyphens ("Col- ors") make no difference."""
    return "".join(_norm(m.group(0)) for m in _TOKEN.finditer(text))


def is_numbered(title: str) -> bool:
    """Whether a title starts with a section number ("2.8 Colors", "Chapter 2 ...", "A.1 ...")."""
    return _NUMBERING.match(title) is not None


def is_section_number(text: str) -> bool:
    """Whether `text` is a section number alone ("8", "2.1.", "A.1", "IV.", "XXII", "3.ii",
    "Chapter 2", "Part I", an appendix's "A" or "Appendix D", "第一章", "附录A"), or glyphs a
    font left unmapped (private-use or U+FFFD: old-style digits) with dots between."""
    text = text.strip()
    m = _NUMBERING.match(f"{text} ")
    label = _LABEL.sub("", text, count=1)
    return ((m is not None and m.end() == len(text) + 1) or (len(label) == 1 and label.isupper())
            or _ROMAN.fullmatch(label) is not None or _SUBNUMBER.fullmatch(text) is not None
            or _CJK_NUMBER.fullmatch(text) is not None or is_unmapped_number(text))


def is_unmapped_number(text: str) -> bool:
    """Whether `text` is a short number some of whose glyphs the font left unmapped: private-use
    code points (old-style digits) or U+FFFD (a separator, Thai digits), maybe with digits,
    dots and an appendix's capital first (U+F732 "." U+F731; "3" U+FFFD "1"; "Ա" U+FFFD "1")."""
    private = [c for c in text if "\ue000" <= c <= "\uf8ff"]
    lost = text.count("\ufffd")
    known = [c for c in text if c == "." or c.isdigit()] + ([text[0]] if text[:1].isupper() else [])
    if not (private or lost) or len(text) > 8 or len(private) + lost + len(known) < len(text):
        return False
    # a glyph of its own unmapped is as often an icon or a symbol: alone, only two old-style digits
    return bool(known) or (not lost and len(private) <= 2)


def _loose_key(text: str) -> str:
    return title_key(_NUMBERING.sub("", text, count=1))


def _prefix_end(text: str, key: str, start: int = 0) -> int:
    """The end of the tokens of `text` from `start` whose key is `key`, or -1."""
    got = ""
    for m in _TOKEN.finditer(text, start):
        got += _norm(m.group(0))
        if got == key:
            return m.end()
        if not key.startswith(got):
            return -1
    return -1


@dataclass
class _Slot:
    """A line of a page in reading order, where it sits (region, index) and its heading rank."""

    region: Region
    line: Line
    rank: int
    first: bool  # the first line of its region (a paragraph's start)


def _next_line(a: _Slot, b: _Slot) -> bool:
    """Whether line b follows line a in one heading: in its region, or in the next one just below
    (a centred title's lines can each be a block of their own)."""
    return a.region is b.region or 0 < b.line.y0 - a.line.y0 < 1.6 * a.line.height


def _span_keys(slots: Sequence[_Slot], i: int) -> list[tuple[int, str, str]]:
    """(lines, key, loose key) of the runs of up to MAX_HEADING_LINES lines of one region from
    slot `i`, claimed or not (`_find_exact` stops at a claimed line: the keys are made once per
    page and tier, not once per entry, which cost seconds on an outline of thousands)."""
    out: list[tuple[int, str, str]] = []
    text = ""
    for k in range(MAX_HEADING_LINES):
        if i + k >= len(slots) or (k and not _next_line(slots[i + k - 1], slots[i + k])):
            break
        text = f"{text} {slots[i + k].line.text}"
        out.append((k + 1, title_key(text), _loose_key(text)))
    return out


def _find_exact(slots: Sequence[_Slot], e: OutlineEntry, headings: bool,
                spans: dict[int, list[tuple[int, str, str]]]) -> tuple[int, int] | None:
    """(first slot, lines) of the first run of unclaimed lines whose text is the entry's title,
    among heading lines only (`headings`) or starting a paragraph or set in the title's case.
    `spans` caches `_span_keys` by slot for one page and tier."""
    key, loose = e.key, e.loose
    for i, s in enumerate(slots):
        if (s.rank > 0) != headings:
            continue
        if i not in spans:
            spans[i] = _span_keys(slots, i)
        for n, k, lk in spans[i]:
            if slots[i + n - 1].line.entry >= 0:
                break  # a run ends at a line another entry claimed
            if (k == key or (loose and lk == loose)) and (
                headings or s.first or s.line.text.lstrip().startswith(e.title.split()[0])
            ):
                return i, n
            if len(k) >= len(key) and len(lk) >= len(loose):
                break
    return None


def _find_within_heading(slots: Sequence[_Slot], e: OutlineEntry) -> int | None:
    """A heading line that holds the title's words among others ("graphics/helper.rb" for the
    entry "Helper": prawn's manual heads each example with its file name)."""
    words = [_norm(m.group(0)) for m in _TOKEN.finditer(_NUMBERING.sub("", e.title, count=1))]
    if not words or len("".join(words)) < MIN_TITLE_KEY:
        return None
    n = len(words)
    for i, s in enumerate(slots):
        if s.rank <= 0 or s.line.entry >= 0:
            continue
        have = [_norm(m.group(0)) for m in _TOKEN.finditer(s.line.text)]
        if len(have) <= 2 * n + 3 and any(have[j:j + n] == words for j in range(len(have) - n + 1)):
            return i
    return None


def _split_title(s: _Slot, e: OutlineEntry) -> Line | None:
    """When the first line of a paragraph starts with the title (a run-in heading, or one set in
    the body font), cut the title off as a line of its own (returned) and keep the rest."""
    ln = s.line
    if not s.first or ln.entry >= 0 or len(e.key) < MIN_TITLE_KEY:
        return None
    end = _prefix_end(ln.text, e.key)
    if end < 0 and not _NUMBERING.match(e.title):  # "Colors" in the outline, "2.8 Colors ..." here
        m = _NUMBERING.match(ln.text)
        end = _prefix_end(ln.text, e.key, m.end()) if m else -1
    elif end < 0 and e.loose:  # "2.8 Colors" in the outline, "Colors. ..." here (not "Colors are")
        end = _prefix_end(ln.text, e.loose)
        if not ln.text[end:].lstrip(" ").startswith((".", ":", "—", "–", " - ")):
            end = -1
    rest = ln.text[end:].lstrip(" .:;—–-") if end > 0 else ""
    if end < 0 or not rest or ln.text[end:end + 1].isalnum():
        return None
    width = (ln.x1 - ln.x0) * end / max(1, len(ln.text))
    head = Line(ln.text[:end], ln.x0, ln.y0, ln.x0 + width, ln.y1, ln.size, ln.bold, ln.mono)
    ln.text, ln.x0 = rest, ln.x0 + width
    s.region.lines.insert(s.region.lines.index(ln), head)
    return head


def _claim(slots: Sequence[_Slot], i: int, n: int, e: OutlineEntry, index: int) -> None:
    """Mark lines i..i+n-1 as the entry's title, with the lines of their font heading next to them."""
    first, last = i, i + n - 1

    def joins(j: int, k: int) -> bool:  # slot j, next to the title's slot k, is more of the heading
        a, b = slots[j], slots[k]
        upper, lower = (b, a) if j > k else (a, b)
        return (a.rank > 0 and a.rank == b.rank and a.line.entry < 0 and _next_line(upper, lower)
                and 0 < lower.line.y0 - upper.line.y0 < 1.6 * upper.line.height)

    while last - first + 1 < MAX_HEADING_LINES and slots[first].rank > 0:
        if last + 1 < len(slots) and joins(last + 1, last):
            last += 1
        elif first > 0 and joins(first - 1, first):
            first -= 1
        else:
            break
    head = slots[first].region
    for s in slots[first:last + 1]:
        s.line.outline, s.line.entry = min(6, max(1, e.level)), index
        if s.region is not head:  # the title's lines go into one region (and one block)
            s.region.lines.remove(s.line)
            head.lines.append(s.line)
            s.region = head
    head.refit()


def mark_outline(
    pages: Sequence[tuple[int, Sequence[Region], bool]],
    outline: Sequence[OutlineEntry],
    rank: Callable[[Line], int],
) -> int:
    """Find each outline entry's title on its page (`pages`: number, regions in reading order,
    whether OCR read it) and mark those lines (`Line.outline`, `Line.entry`); returns how many
    entries were found. `rank` is a line's heading level from its font (0: body text).

    Per page, in order of preference: a font heading that is the title (letters and digits
    compared: case, spacing, hyphenation, ligatures and a number the other side leaves out
    make no difference); a font heading that holds the title's words; a paragraph or a line
    in the title's case that is the title; a paragraph that starts with the title, split there.
    """
    by_page: dict[int, list[int]] = {}
    for index, e in enumerate(outline):
        if e.page >= 1 and e.key:
            by_page.setdefault(e.page, []).append(index)
    slots_of = {
        number: [
            _Slot(r, ln, 0 if ocr else rank(ln), j == 0)
            for r in regions if r.table is None
            for j, ln in enumerate(r.lines)
        ]
        for number, regions, ocr in pages
        if number in by_page or number - 1 in by_page
    }
    found = 0
    missed: dict[int, list[int]] = {}
    for number in sorted(by_page):
        if number in slots_of:
            n, left = _mark_page(slots_of[number], outline, by_page[number])
            found += n
            if left and number + 1 in slots_of:
                missed[number + 1] = left
    # LaTeX's hyperref often anchors an entry at the foot of the page before its heading: an entry
    # not found on its page is looked for, as a heading or a whole line, at the top of the next
    for number, left in missed.items():
        found += _mark_page(slots_of[number], outline, left, tiers=("heading", "line"))[0]
    return found


def _mark_page(slots: list[_Slot], outline: Sequence[OutlineEntry], todo: list[int],
               tiers: Sequence[str] = ("heading", "within", "line", "split")) -> tuple[int, list[int]]:
    """Find the `todo` entries among a page's `slots`, tier by tier: (how many, those not found)."""
    found = 0
    for tier in tiers:
        spans: dict[int, list[tuple[int, str, str]]] = {}  # slot -> its runs' keys, this tier
        left = []
        if tier == "within":  # "Fill and stroke" before "Graphics" for "graphics/fill_and_stroke.rb"
            todo = sorted(todo, key=lambda index: -len(outline[index].loose))
        for index in todo:
            e = outline[index]
            hit: tuple[int, int] | None = None
            if tier in ("heading", "line"):
                hit = _find_exact(slots, e, tier == "heading", spans)
            elif tier == "within":
                i = _find_within_heading(slots, e)
                hit = (i, 1) if i is not None else None
            else:
                for i, s in enumerate(slots):
                    if (head := _split_title(s, e)) is not None:
                        slots.insert(i, _Slot(s.region, head, 0, True))
                        s.first = False
                        hit = (i, 1)
                        break
            if hit is None:
                left.append(index)
                continue
            _claim(slots, hit[0], hit[1], e, index)
            found += 1
        todo = left
    return found, todo
