"""The CHUNKING stage's pure function: parsed blocks -> structure-aware chunks.

Chunks are sized in the embedder's own word pieces (`connectors.tokenizer`): all-MiniLM-L6-v2
reads at most 256 and silently drops the rest, and the contextual prefix added by a later stage
shares that budget, so no chunk ever exceeds `ChunkConfig.max_tokens`.

Document text and offsets
    The *document text* is ``"\\n\\n".join(block.text for block in blocks)`` (see
    `document_text`); `char_start`/`char_end` delimit the chunk's body in it: from the first
    character of its first content piece to the last character of its last. The heading line a
    chunk starts with is context and lies outside that span (except a merged section's own
    heading, which sits inside it). Overlapping pieces of a split paragraph have overlapping
    spans; a table piece's span covers its rows (the first piece's, the header too).

Algorithm
    1. Walk the blocks keeping a heading path: a title block resets it to ``[title]`` (level 0;
       the `title` argument is the root until one appears), a heading of level L pops levels
       >= L and pushes itself. Headings never become chunks of their own.
    2. Each run of content blocks under one heading is a *section*. Every chunk of a section
       starts with a line holding the section's heading text (capped at max_tokens // 4), so
       it is self-describing: ``"Install\n<body>"``. Blocks in a chunk are joined by a blank
       line, consecutive list items by one newline.
    3. Content blocks are atomic when they fit. A longer one is split: text by paragraph >
       sentence > word > token boundary with `overlap_tokens` of overlap between its pieces;
       code on line boundaries; tables by rows, with the header rows repeated in every piece.
    4. A section's pieces are packed greedily into chunks of at most `max_tokens`; pieces of
       one split block never share a chunk (their overlap would repeat text).
    5. A single-chunk section below `min_tokens` is merged into the next section's first chunk
       (or, failing that, into the previous section's last) when the result fits; into the
       previous one first when that is the nearer relative in the heading tree (a function's
       "Returns" subsection stays with its function). A merged chunk's heading path is the
       common prefix of its sections' paths, so each of its sections starts with the headings
       of its path below that prefix that no earlier section of the chunk shows (`_Above`).
    6. Every chunk is re-counted with the tokenizer and the count stored in `n_tokens`. The
       packing estimates are exact for WordPiece (whitespace costs no tokens); a tokenizer that
       spends tokens on joins could overrun them, so an over-long chunk is cut again there.
    A document that would give no chunk at all is never left unsearchable: one made only of side
    text (a reply that only quotes) is chunked with its side text, one made only of headings from
    the headings' words.
    7. Chunks are grouped into *units* (small-to-big, `group_units`): the largest piece of the
       heading tree that fits `parent_max_tokens` — the whole document when it fits (a message,
       a command page, a manual node), else a section with its subsections (a FAQ entry), else
       runs of consecutive chunks of one section. Chunks are what is embedded and matched; the
       unit is what a query returns. Every chunk records its unit's first ordinal
       (`unit_start`); the first chunk of a unit of several chunks carries the unit's text
       (`unit_text`: the document text its chunks span, led by its heading line).

The output is deterministic: the same blocks and configuration give identical drafts.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Any, Literal

from assets.parsing.types import Block
from connectors.config import ChunkConfig, EmbedConfig
from connectors.tokenizer import SplitMode, TokenCounter, get_tokenizer

__all__ = ["ChunkDraft", "ChunkKind", "chunk_blocks", "chunk_stats", "document_text"]

ChunkKind = Literal["text", "table", "code"]

BLOCK_SEPARATOR = "\n\n"  # joins block texts into the document text that offsets refer to
_HEADING_SHARE = 4  # a repeated heading line takes at most max_tokens // 4 tokens
_MAX_PATH_CHARS = 1000  # characters of one heading or title in a chunk's heading path
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


@dataclass
class ChunkDraft:
    """One chunk, before it gets an id, a contextual prefix and a vector."""

    ordinal: int
    display_text: str  # what users see: the original text, led by its section's heading line
    embed_text: str  # what is embedded; the same content (the context stage prefixes it later)
    heading_path: list[str]
    page: int | None  # first page (1-based) the chunk draws from, None if unpaginated
    page_end: int | None
    char_start: int  # body span in `document_text(blocks)`
    char_end: int
    kind: ChunkKind
    n_tokens: int = 0  # word pieces of embed_text, special tokens excluded
    lead: str = ""  # the heading line display_text starts with ("" for none)
    unit_start: int = 0  # ordinal of the first chunk of this chunk's unit (step 7)
    unit_text: str | None = None  # on a unit's first chunk when the unit has several chunks

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def document_text(blocks: list[Block]) -> str:
    """The text `char_start`/`char_end` refer to: block texts joined by a blank line."""
    return BLOCK_SEPARATOR.join(b.text for b in blocks)


def chunk_stats(drafts: list[ChunkDraft]) -> dict[str, Any]:
    """Counts and token sizes of a chunking result, for materialisation metadata."""
    tokens = [d.n_tokens for d in drafts]
    kinds: dict[str, int] = {}
    for d in drafts:
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return {
        "count": len(drafts),
        "total_tokens": sum(tokens),
        "mean_tokens": round(fmean(tokens), 1) if tokens else 0.0,
        "max_tokens": max(tokens, default=0),
        "min_tokens": min(tokens, default=0),
        "by_kind": dict(sorted(kinds.items())),
    }


# -- internal structures ----------------------------------------------------------------------


@dataclass
class _Unit:
    """An atomic piece of body text: a whole block, or one piece of a split block."""

    text: str
    start: int  # span in the document text
    end: int
    tokens: int
    kind: ChunkKind
    page: int | None
    split_of: int | None = None  # index of the split block; such pieces never share a chunk
    tight: bool = False  # a list item after a list item: joined by one newline, not two
    term: bool = False  # a definition's term (an option's name, `term` in its block's meta)


@dataclass
class _Item:
    """A content block, trimmed of surrounding blank space, with its span and token count."""

    index: int
    block: Block
    text: str
    start: int
    end: int
    tokens: int = 0


@dataclass
class _Section:
    path: list[str]
    line: str  # heading line every chunk of the section starts with ("" for none)
    line_tokens: int = 0
    items: list[_Item] = field(default_factory=list)


@dataclass
class _Part:
    """One section's share of a chunk: its heading line and some of its units."""

    section: _Section
    units: list[_Unit]
    first: bool  # holds the section's first unit
    last: bool  # holds the section's last unit
    above: str = ""  # headings over its own that its merged chunk would otherwise lose (`_Above`)
    above_tokens: int = 0

    @property
    def lead(self) -> str:
        """The heading lines the part starts with."""
        return "\n".join(x for x in (self.above, self.section.line) if x)

    def render(self) -> str:
        body = ""
        for k, u in enumerate(self.units):
            body += ("" if k == 0 else "\n" if u.tight else BLOCK_SEPARATOR) + u.text
        return f"{self.lead}\n{body}" if self.lead else body


class _Above:
    """The headings a merged chunk would lose. A chunk's heading path is the common prefix of
    its sections' paths, and each section's text starts with its own heading only, so a heading
    with no text of its own between the two ("* Release 1.11" over "** Performance", merged
    with the next release's section) was in neither: its words were nowhere in the index. Each
    part of a chunk of several sections therefore starts with the headings of its path below
    the chunk's path that no earlier part of the chunk shows."""

    def __init__(self, tok: TokenCounter, sep: int) -> None:
        self._tok, self._sep = tok, sep
        self._counts: dict[str, int] = {}

    @staticmethod
    def lines(group: list[_Part]) -> list[str]:
        if len(group) < 2:
            return [""] * len(group)
        shared = len(_common_prefix([p.section.path for p in group]))
        out: list[str] = []
        for k, p in enumerate(group):
            path = p.section.path
            shown = shared if k == 0 else max(shared, len(_common_prefix([path, group[k - 1].section.path])))
            own = path[shown:-1] if p.section.line else path[shown:]  # the last is its own line
            out.append("\n".join(own))
        return out

    def count(self, line: str) -> int:
        if line not in self._counts:
            self._counts[line] = self._tok.count(line)
        return self._counts[line]

    def cost(self, group: list[_Part]) -> int:
        """The word pieces the group's lost headings add when it becomes one chunk."""
        return sum(self.count(x) + self._sep for x in self.lines(group) if x)

    def assign(self, groups: list[list[_Part]]) -> None:
        for g in groups:
            for p, line in zip(g, self.lines(g), strict=True):
                p.above, p.above_tokens = line, self.count(line) if line else 0


# -- the stage function -----------------------------------------------------------------------


def chunk_blocks(
    blocks: list[Block],
    config: ChunkConfig,
    title: str | None = None,
    *,
    counter: TokenCounter | None = None,
) -> list[ChunkDraft]:
    """Chunk one parsed document (see the module docstring for the algorithm and offsets).

    `title` (the document's title) roots the heading path until a title block appears; a
    level-1 heading equal to it is not repeated. `counter` overrides the tokenizer named by
    `config.tokenizer` (tests, or callers that hold one already).
    """
    tok = counter or get_tokenizer(config.tokenizer or EmbedConfig().model)
    sections = _sections(blocks, title, config.max_tokens, tok, keep_side=config.index_side_text)
    if not sections:  # nothing but side text (a reply that only quotes): better indexed than unsearchable
        sections = _sections(blocks, title, config.max_tokens, tok, keep_side=True)
    if not sections:  # headings only: their words are all the document has (same lengths: offsets hold)
        flat = [Block("paragraph", b.text, page=b.page) for b in blocks]
        sections = _sections(flat, None, config.max_tokens, tok, keep_side=True)
    sep = tok.separator_cost
    groups: list[list[_Part]] = []
    for section in sections:
        budget = config.max_tokens - section.line_tokens - sep
        units = _units(section, budget, config.overlap_tokens, tok)
        groups.extend([p] for p in _pack(section, units, budget, sep))
    above = _Above(tok, sep)
    groups = _merge_small(groups, config, sep, above)
    if config.keep_short_docs_whole:
        groups = _whole_if_fits(groups, config.max_tokens, sep, above)
    above.assign(groups)
    drafts = _finish(groups, config.max_tokens, tok)
    group_units(drafts, document_text(blocks), config.parent_max_tokens)
    return drafts


def group_units(drafts: list[ChunkDraft], doc_text: str, budget: int) -> None:
    """Step 7 of the module docstring, in place: set `unit_start` on every draft and `unit_text`
    on the first draft of each unit of several. `budget` 0 makes every chunk its own unit."""
    units: list[list[ChunkDraft]] = []

    def split(run: list[ChunkDraft], depth: int) -> None:
        if budget <= 0:
            units.extend([d] for d in run)
            return
        if len(run) == 1 or sum(d.n_tokens for d in run) <= budget:
            units.append(run)
            return
        groups: list[list[ChunkDraft]] = []
        keys: list[str | None] = []
        for d in run:  # consecutive runs sharing the heading at this depth
            key = d.heading_path[depth] if len(d.heading_path) > depth else None
            if not groups or key != keys[-1]:
                groups.append([])
                keys.append(key)
            groups[-1].append(d)
        if all(k is None for k in keys):  # no structure left: runs of consecutive chunks
            units.extend(_runs(run, budget))
        elif len(groups) == 1:
            split(run, depth + 1)
        else:
            for g in groups:
                split(g, depth + 1)

    if drafts:
        split(drafts, 0)
    for unit in units:
        for d in unit:
            d.unit_start = unit[0].ordinal
        if len(unit) > 1:
            body = doc_text[min(d.char_start for d in unit) : max(d.char_end for d in unit)]
            unit[0].unit_text = f"{unit[0].lead}\n{body}" if unit[0].lead else body


def _runs(run: list[ChunkDraft], budget: int) -> list[list[ChunkDraft]]:
    """Consecutive chunks packed greedily into runs of at most `budget` tokens."""
    out: list[list[ChunkDraft]] = []
    used = 0
    for d in run:
        if out and used + d.n_tokens <= budget:
            out[-1].append(d)
            used += d.n_tokens
        else:
            out.append([d])
            used = d.n_tokens
    return out


def is_side_text(block: Block) -> bool:
    """A block the parser marked as text around the document's own words: quoted history
    (e-mail), a signature, a mailing-list footer, navigation. Kept for display, not indexed."""
    return bool(block.meta.get("quoted") or block.meta.get("side"))


def _whole_if_fits(groups: list[list[_Part]], max_tokens: int, sep: int, above: _Above) -> list[list[_Part]]:
    """One group when the whole document fits `max_tokens`: a short message, FAQ entry or
    command page is one unit to a reader, and splitting it by headings only scatters its
    evidence over chunks that each match the query less well."""
    if len(groups) < 2:
        return groups
    parts = [p for g in groups for p in g]
    if not all(p.first and p.last for p in parts):
        return groups  # a section already cut in pieces: the document is long
    total = sum(_part_tokens(p, sep) for p in parts) + sep * (len(parts) - 1) + above.cost(parts)
    return [parts] if total <= max_tokens else groups


def _sections(
    blocks: list[Block], title: str | None, max_tokens: int, tok: TokenCounter, *, keep_side: bool = True
) -> list[_Section]:
    """Walk the blocks into sections with heading paths; drop blank blocks, headingless runs and
    (unless `keep_side`) side text. Offsets still count every block, so they index the document."""
    # stack of (level, text, from_a_block); the document title roots it until a title block
    stack: list[tuple[int, str, bool]] = [(0, _oneline(title), False)] if title else []
    sections: list[_Section] = []
    current: _Section | None = None
    pos = 0
    for index, block in enumerate(blocks):
        start, pos = pos, pos + len(block.text) + len(BLOCK_SEPARATOR)
        text = _oneline(block.text) if block.kind in ("title", "heading") else block.text
        if block.kind in ("title", "heading"):
            if not text:
                continue
            level = 0 if block.kind == "title" else max(1, block.level)
            if len(stack) == 1 and not stack[0][2] and _same(stack[0][1], text):
                # the first heading repeats the document title (an H1; or the "## Setup" a note
                # opens with, which titles it): it is the root, not a section under itself
                stack = [(0, text, True)]
            else:
                stack = [e for e in stack if e[0] < level] + [(level, text, True)]
            current = None
            continue
        if not text.strip() or (not keep_side and is_side_text(block)):
            continue
        if current is None:
            line = stack[-1][1] if stack and stack[-1][2] else ""
            current = _Section([e[1] for e in stack], line)
            sections.append(current)
        current.items.append(_Item(index, block, *_trim(block, start)))
    _count(sections, max_tokens // _HEADING_SHARE, tok)
    return sections


def _count(sections: list[_Section], cap: int, tok: TokenCounter) -> None:
    """Count every heading line and block in one batch (per-call overhead dominates small
    texts); cut heading lines longer than `cap` tokens (a parser gone wrong)."""
    items = [it for s in sections for it in s.items]
    counts = tok.count_batch([s.line for s in sections] + [it.text for it in items])
    for it, n in zip(items, counts[len(sections) :], strict=True):
        it.tokens = n
    for s, n in zip(sections, counts, strict=False):
        s.line_tokens = n
        if n > cap:
            s.line = tok.split_at(s.line, cap)[0]
            s.line_tokens = tok.count(s.line)


def _units(section: _Section, budget: int, overlap: int, tok: TokenCounter) -> list[_Unit]:
    """Turn a section's blocks into units of at most `budget` tokens each."""
    units: list[_Unit] = []
    prev_kind = ""
    for it in section.items:
        block, kind = it.block, _kind(it.block)
        if it.tokens <= budget:
            tight = block.kind == "list_item" and prev_kind == "list_item"
            units.append(_Unit(it.text, it.start, it.end, it.tokens, kind, block.page, tight=tight,
                               term=bool(block.meta.get("term"))))
        elif kind == "table":
            units.extend(_split_table(it, budget, tok))
        else:
            mode: SplitMode = "code" if kind == "code" else "text"
            for a, b, n in tok.pieces(it.text, budget, overlap if kind == "text" else 0, mode):
                piece = it.text[a:b]
                units.append(
                    _Unit(piece, it.start + a, it.start + b, n, kind, block.page, split_of=it.index)
                )
        prev_kind = block.kind
    return units


def _split_table(it: _Item, budget: int, tok: TokenCounter) -> list[_Unit]:
    """Split a table by rows, repeating its header rows in every piece."""
    lines = _lines(it.text)  # (line, offset in text)
    header_n = _header_rows(it.block, [ln for ln, _ in lines])
    header = "\n".join(ln for ln, _ in lines[:header_n])
    header_tokens = tok.count(header) if header_n else 0
    if header_tokens > budget // 2:  # too big to repeat: treat its lines as ordinary rows
        header, header_n, header_tokens = "", 0, 0
    row_budget = budget - header_tokens - (tok.separator_cost if header_n else 0)
    body = lines[header_n:]
    rows: list[tuple[str, int, int, int]] = []  # row text, start and end in it.text, tokens
    for (line, off), n in zip(body, tok.count_batch([ln for ln, _ in body]), strict=True):
        if n <= row_budget:
            rows.append((line, off, off + len(line), n))
        else:  # one row longer than a chunk: cut it at token boundaries
            rows.extend(
                (line[a:b], off + a, off + b, m) for a, b, m in tok.pieces(line, row_budget)
            )
    sep = tok.separator_cost
    runs = _even_runs([r[3] for r in rows], row_budget, sep, [False] * len(rows))
    units = [_table_unit(it, header, [rows[k] for k in run], header_tokens, sep) for run in runs]
    if header_n and units:  # the first piece's span starts at the header it really follows
        units[0].start = it.start + lines[0][1]
    return units


def _table_unit(
    it: _Item, header: str, rows: list[tuple[str, int, int, int]], header_tokens: int, sep: int
) -> _Unit:
    body = "\n".join(r[0] for r in rows)
    text = f"{header}\n{body}" if header else body
    n = sum(r[3] for r in rows) + sep * (len(rows) - 1) + (header_tokens + sep if header else 0)
    start, end = it.start + rows[0][1], it.start + rows[-1][2]
    return _Unit(text, start, end, n, "table", it.block.page, split_of=it.index)


def _header_rows(block: Block, lines: list[str]) -> int:
    """How many leading lines form the table header (meta["table_header"] or GFM rows)."""
    meta = block.meta.get("table_header") if block.meta else None
    if isinstance(meta, bool):
        meta = None
    if isinstance(meta, int):
        return max(0, min(meta, len(lines) - 1))
    if isinstance(meta, (str, list)):
        want = [ln.strip() for ln in (meta.splitlines() if isinstance(meta, str) else meta)]
        want = [ln for ln in want if ln]
        got = [ln.strip() for ln in lines[: len(want)]]
        if want and got == want and len(want) < len(lines):
            return len(want)
    if len(lines) > 2 and "|" in lines[0] and _TABLE_RULE.match(lines[1]):
        return 2
    return 0


def _pack(section: _Section, units: list[_Unit], budget: int, sep: int) -> list[_Part]:
    """Pack a section's units into as few chunks as fit, evenly; split pieces never share one."""
    breaks = [
        k > 0 and u.split_of is not None and units[k - 1].split_of == u.split_of
        for k, u in enumerate(units)
    ]
    # a term opens its definition: a chunk that would end on it starts the next one with it
    # ("IF NOT EXISTS" closed one chunk and "Do not throw an error if..." opened the next: 126 of
    # 1,539 chunks of PostgreSQL's command pages, an unseen-corpus pass)
    glue = [k > 0 and units[k - 1].term and not breaks[k] for k in range(len(units))]
    groups = _even_runs([u.tokens for u in units], budget, sep, breaks, glue)
    parts = [
        _Part(section, [units[k] for k in g], first=i == 0, last=False)
        for i, g in enumerate(groups)
    ]
    if parts:
        parts[-1].last = True
    return parts


def _even_runs(sizes: list[int], limit: int, sep: int, breaks: list[bool],
               glue: list[bool] | None = None) -> list[list[int]]:
    """Indices of `sizes` in consecutive runs: as few as fit in `limit` (each join costs `sep`;
    a run always ends before an index whose `breaks` is set), then evened out with the smallest
    cap that needs no more runs, so a section of 210 tokens gives two chunks of about 105, not
    200 + 10. Greedy runs are optimal for a given cap, and their number falls as the cap grows.
    Where `glue` is set, a run that cannot take index k gives up k - 1 (a term) to the run k
    opens, when both fit there and k - 1 is not all of its run.
    """
    glued = glue or [False] * len(sizes)

    def greedy(cap: int) -> list[list[int]]:
        runs: list[list[int]] = []
        used = 0
        for k, n in enumerate(sizes):
            if runs and not breaks[k] and used + sep + n <= cap:
                runs[-1].append(k)
                used += sep + n
            elif runs and glued[k] and len(runs[-1]) > 1 and sizes[k - 1] + sep + n <= cap:
                runs[-1].pop()
                runs.append([k - 1, k])
                used = sizes[k - 1] + sep + n
            else:
                runs.append([k])
                used = n
        return runs

    fewest = len(greedy(limit))
    lo, hi = max(sizes, default=0), limit
    while lo < hi:  # the smallest cap that still needs only `fewest` runs
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if len(greedy(mid)) <= fewest else (mid + 1, hi)
    return greedy(lo)


def _merge_small(groups: list[list[_Part]], config: ChunkConfig, sep: int, above: _Above) -> list[list[_Part]]:
    """Merge each single-chunk section below `min_tokens` into a neighbouring chunk when they
    fit: the previous one when it is the nearer relative in the heading tree (the longer common
    heading path), else the next one (a merged group still small goes on to the one after),
    else the previous one. A function's small "Returns" subsection joins its own function, not
    the next one, whose chunk would otherwise lose the function's name from its heading path.
    One pass, so the neighbour weighed is the one merged into."""

    def tokens(g: list[_Part]) -> int:
        return sum(_part_tokens(p, sep) for p in g) + sep * (len(g) - 1)

    def small(g: list[_Part]) -> bool:
        return g[0].first and g[-1].last and tokens(g) < config.min_tokens

    def fits(a: list[_Part], b: list[_Part]) -> bool:
        return tokens(a) + sep + tokens(b) + above.cost(a + b) <= config.max_tokens

    def kinship(a: list[_Part], b: list[_Part]) -> int:
        return len(_common_prefix([a[-1].section.path, b[0].section.path]))

    out: list[list[_Part]] = []
    carried: list[_Part] = []  # a small group on its way into the next one
    for k, group in enumerate(groups):
        g = carried + group
        carried = []
        after = groups[k + 1] if k + 1 < len(groups) else None
        if small(g):
            back = bool(out) and out[-1][-1].last and fits(out[-1], g)
            ahead = after is not None and after[0].first and fits(g, after)
            if back and (after is None or not ahead or kinship(out[-1], g) > kinship(g, after)):
                out[-1] = out[-1] + g
                continue
            if ahead:
                carried = g
                continue
        out.append(g)
    return out


def _part_tokens(p: _Part, sep: int) -> int:
    body = sum(u.tokens for u in p.units) + sep * (len(p.units) - 1)
    return body + (p.section.line_tokens + sep if p.section.line else 0) + (p.above_tokens + sep if p.above else 0)


def _finish(groups: list[list[_Part]], max_tokens: int, tok: TokenCounter) -> list[ChunkDraft]:
    """Render groups into drafts, count them exactly and cut any that still run over."""
    texts = [BLOCK_SEPARATOR.join(p.render() for p in g) for g in groups]
    # where the parts' counts add up exactly (WordPiece), no second pass through the tokenizer
    counts = [sum(_part_tokens(p, 0) for p in g) for g in groups] if tok.additive else tok.count_batch(texts)
    drafts: list[ChunkDraft] = []
    for g, text, n in zip(groups, texts, counts, strict=True):
        units = [u for p in g for u in p.units]
        pages = [u.page for u in units if u.page is not None]
        kinds = {u.kind for u in units}
        kind: ChunkKind = units[0].kind if len(kinds) == 1 else "text"
        path = _common_prefix([p.section.path for p in g])
        start, end = min(u.start for u in units), max(u.end for u in units)
        # Estimates are exact for WordPiece; other tokenizers may spend tokens on joins.
        pieces = [(text, n)] if n <= max_tokens else _hard_split(text, max_tokens, tok)
        for piece, m in pieces:
            drafts.append(
                ChunkDraft(
                    ordinal=len(drafts), display_text=piece, embed_text=piece,
                    heading_path=path, page=min(pages, default=None),
                    page_end=max(pages, default=None), char_start=start, char_end=end,
                    kind=kind, n_tokens=m, lead=g[0].lead,
                )
            )  # fmt: skip
    return drafts


def _hard_split(text: str, max_tokens: int, tok: TokenCounter) -> list[tuple[str, int]]:
    pieces = [text[a:b] for a, b in tok.spans(text, max_tokens)]
    return list(zip(pieces, tok.count_batch(pieces), strict=True))


# -- small helpers ----------------------------------------------------------------------------


def _kind(block: Block) -> ChunkKind:
    return "table" if block.kind == "table" else "code" if block.kind == "code" else "text"


def _trim(block: Block, start: int) -> tuple[str, int, int]:
    """Block text without surrounding blank space (code keeps its first line's indentation)."""
    text = block.text
    end = len(text.rstrip())
    begin = len(text) - len(text.lstrip())
    if block.kind == "code":  # back to the start of the first non-blank line
        begin = text.rfind("\n", 0, begin) + 1
    return text[begin:end], start + begin, start + end


def _lines(text: str) -> list[tuple[str, int]]:
    """Non-blank lines of `text` with their offsets, trailing spaces removed."""
    out: list[tuple[str, int]] = []
    off = 0
    for raw in text.split("\n"):
        line = raw.rstrip()
        if line.strip():
            out.append((line, off))
        off += len(raw) + 1
    return out


def _oneline(text: str | None) -> str:
    """A heading or title as one line, at most `_MAX_PATH_CHARS` long: every chunk of its
    section stores its path (and the indexes hold it), so a 50 KB "heading" a parser mistook
    made a 1.7 MB file a 1.8 GB data dir (the heading line in the text is capped apart, in tokens)."""
    line = " ".join((text or "").split())
    if len(line) <= _MAX_PATH_CHARS:
        return line
    cut = line[: _MAX_PATH_CHARS - 1]
    return (cut[: cut.rfind(" ")] if " " in cut else cut) + "…"


def _same(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def _common_prefix(paths: list[list[str]]) -> list[str]:
    out: list[str] = []
    for items in zip(*paths, strict=False):
        if any(x != items[0] for x in items):
            break
        out.append(items[0])
    return out
