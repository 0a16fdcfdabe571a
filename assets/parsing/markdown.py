"""Markdown parsing with markdown-it (CommonMark + GFM tables).

The token stream comes from markdown-it-pyrs, the Rust port, flattened into markdown-it-py's
shape (`markdown_fast`), and from markdown-it-py itself where the Rust parser is missing or fails
on a document. Both gave the same blocks on 742 real files (tests/test_markdown_fast.py); where
they part (deep nesting, markup noise) is listed in `markdown_fast`.

A real CommonMark tokenizer gets the edge cases right that line regexes miss (a `#` inside a
fence is not a heading, setext underlines, lazy list continuations). Output: ATX and setext
headings with levels, fenced/indented code as atomic code blocks, tables as Markdown table
blocks, list items with their nesting depth, and YAML front matter as metadata (its `title`
becomes the document title). Inline markup is reduced to its text (links keep their label).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from assets.parsing import markdown_ext, markdown_fast
from assets.parsing.textutil import clean_inline, markdown_table, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import ParseError

__all__ = ["parse_markdown", "split_front_matter"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_MD = MarkdownIt("commonmark").enable("table")


def split_front_matter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """(front matter mapping, remaining text, warning) for text starting with a YAML block."""
    m = _FRONT_MATTER.match(text)
    if not m:
        return {}, text, None
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        return {}, text[m.end() :], f"front matter is not valid YAML and was skipped: {e}"
    except RecursionError:  # PyYAML composes nested collections recursively
        return {}, text[m.end() :], "front matter nests too deep to read and was skipped"
    if not isinstance(data, dict):
        return {}, text[m.end() :], None
    try:
        return _jsonable(data, [MAX_FRONT_MATTER_VALUES]), text[m.end() :], None
    except RecursionError:
        return {}, text[m.end() :], "front matter nests too deep to read and was skipped"
    except _TooMany:
        return {}, text[m.end() :], (f"front matter expands to more than {MAX_FRONT_MATTER_VALUES:,} values "
                                      "(YAML aliases repeating aliases) and was skipped")


# YAML aliases are shared when loaded, but a copy expands each one: 500 bytes of aliases of
# aliases, eight deep, are 10^8 values (44 s and 2.4 GB), nine deep were killed. Real front
# matter holds tens of values.
MAX_FRONT_MATTER_VALUES = 10_000


class _TooMany(Exception):
    pass


def _jsonable(value: Any, left: list[int]) -> Any:
    """`value` as JSON types, counting each value against `left[0]` (raises `_TooMany` past it)."""
    left[0] -= 1
    if left[0] < 0:
        raise _TooMany
    if isinstance(value, dict):
        return {str(k): _jsonable(v, left) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, left) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return value


def _inline_text(token: Token | markdown_fast.Tok) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_inline_text(child))
    return "".join(parts)


def _html_fragment(html: str) -> list[Block]:
    """Blocks of raw HTML embedded in Markdown (a <table>, <details>, ...)."""
    from assets.parsing.html import html_blocks

    try:
        return html_blocks(html)[0]
    except ParseError:  # an empty or unparsable fragment is just skipped
        return []


# Block quotes and lists nested deeper than this are not read as Markdown but as plain text.
# markdown-it-pyrs crashes the whole process (SIGSEGV) somewhere past 30,000 levels (one line of
# 50,000 `>` did it: every sync and plan of its source died, with no dead letter), the block
# builder here recurses once per level, and markdown-it-py silently drops what lies past its own
# limit of 20 levels. No real document comes near 100.
MAX_NESTING = 100
# the start of a line that opens containers: `>` and list markers, after any indentation (a
# list item's continuation lines are indented; a level needs one character at least, so only a
# run longer than MAX_NESTING characters can be too deep)
_OPENERS = re.compile(r"^[ \t]*(?:(?:>|(?:[-+*]|\d{1,9}[.)])(?=[ \t]))[ \t]*)+", re.M)
_OPENER = re.compile(r">|[-+*]|\d{1,9}[.)]")


# Inline markup nested deeper than this within one paragraph (link and image brackets, emphasis
# delimiters opened and not yet closed) is read as plain text too: markdown-it-pyrs crashed the
# process on 50,000 nested images (a 300 KB file killed every sync and plan of its source, with no
# dead letter) and takes quadratic time on nested emphasis (14 s for one 240 KB paragraph 40,000
# levels deep). Of 588 real Markdown files on this machine the deepest paragraph nests 113
# (code counted too).
MAX_INLINE_NESTING = 1000
# ... and so is a document whose paragraphs together nest too much: each level costs the parser
# about 2.4 KB, so 1,000 paragraphs 999 deep took 2.4 GB. Counted past 8 levels per paragraph.
MAX_INLINE_EXCESS = 50_000
_USUAL_DEPTH = 8
# A paragraph break, a bracket, an emphasis run that can open (not after a letter or digit,
# before something other than a space) or close (the other way round; a run between two letters,
# as in snake_case, is neither). A run of k marks opens or closes up to k/2 levels (<strong> in
# <strong>): counted as one, 100,000 stars round a word passed, and the parser's 50,000 levels
# crashed the process as its tree was freed. No code is skipped, fenced or not: what a fence is depends on
# the blocks around it (an HTML block, a list), and a scanner that skipped a "fence" the parser
# read as text let a crashing paragraph through. Code that opens many `_names` may then read as
# plain text: a warning, never a crash.
# A run is taken whole and judged by its neighbours in Python: a pattern that tried each of its
# positions as an opener scanned the rest of the run from each (40,000 stars: 21 s).
_INLINE_MARKS = re.compile(r"(?P<brk>\n[ \t]*\n)|(?P<bra>[\[\]])|(?P<run>[*_]+)")
_WORD = re.compile(r"\w")


def _emphasis(depth: int, body: str, run: re.Match[str]) -> int:
    """The emphasis levels open after `run`, a run of marks, with `depth` open before it: it
    opens where it follows no word character and precedes no space (opening wins where it could
    also close, as in "(**)"), closes where it follows no space and precedes no word character,
    and inside a word does neither."""
    before = body[run.start() - 1] if run.start() else " "
    after = body[run.end()] if run.end() < len(body) else " "
    levels = (len(run.group()) + 1) // 2
    if not _WORD.match(before) and not after.isspace():
        return depth + levels
    if not before.isspace() and not _WORD.match(after):
        return max(0, depth - levels)
    return depth


def inline_nesting(body: str) -> tuple[int, int]:
    """(the deepest nesting of inline markup within one paragraph, the levels past
    `_USUAL_DEPTH` summed over paragraphs), where either could pass its limit; (0, 0) when
    there are too few marks for that (the scan runs only then)."""
    if body.count("[") <= MAX_INLINE_NESTING and body.count("*") + body.count("_") <= MAX_INLINE_NESTING:
        return 0, 0
    deepest = excess = brackets = emphasis = paragraph = 0
    for m in _INLINE_MARKS.finditer(body):
        kind = m.lastgroup
        if kind == "brk":
            excess += max(0, paragraph - _USUAL_DEPTH)
            paragraph = brackets = emphasis = 0
            continue
        if kind == "bra":
            brackets = brackets + 1 if m.group() == "[" else max(0, brackets - 1)
        else:
            emphasis = _emphasis(emphasis, body, m)
        paragraph = max(paragraph, brackets + emphasis)
        deepest = max(deepest, paragraph)
    return deepest, excess + max(0, paragraph - _USUAL_DEPTH)


def nesting(body: str) -> int:
    """The deepest run of block-quote and list markers opening one line, where it could exceed
    `MAX_NESTING` (0 otherwise: counting is only done for long runs)."""
    deepest = 0
    for m in _OPENERS.finditer(body):
        if m.end() - m.start() > MAX_NESTING:
            deepest = max(deepest, len(_OPENER.findall(m.group())))
    return deepest


class _TooDeep(Exception):
    """Nesting the token stream cannot be built for (lists nested by indentation alone, which
    `nesting` does not count, recurse past Python's limit): read as plain text."""


def _tokens(body: str) -> Sequence[Token | markdown_fast.Tok]:
    """The block token stream: from the Rust parser (about 3x faster over a whole parse), or
    from markdown-it-py where that is missing or fails (panics) on a document."""
    if markdown_fast.available():
        try:
            return markdown_fast.tokens(body)
        except RecursionError:  # markdown-it-py would silently drop all past its 20 levels
            raise _TooDeep from None
        except BaseException as e:  # a panic inside the Rust parser arrives as pyo3's PanicException
            if not isinstance(e, Exception) and type(e).__name__ != "PanicException":
                raise  # an interrupt (Ctrl-C, Dagster's) or an exit: never read as a parser failure
    return _MD.parse(body)


def _as_plain_text(body: str, why: str) -> ParseResult:
    from assets.parsing.text import text_blocks

    return ParseResult(blocks=text_blocks(body), title=None, format="markdown", metadata={},
                       warnings=[f"{why}: read as plain text, not as Markdown"])


def _blocks(tokens: Sequence[Token | markdown_fast.Tok]) -> list[Block]:
    blocks: list[Block] = []
    lists: list[bool] = []  # stack of open lists (True = ordered)
    item_open = False  # inside a list item whose first paragraph is not emitted yet
    quote_depth = 0
    table: list[list[str]] | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        t = tok.type
        if t == "heading_open":
            text = clean_inline(_inline_text(tokens[i + 1]))
            if text:
                blocks.append(Block("heading", text, level=int(tok.tag[1])))
            i += 3
            continue
        if t in ("bullet_list_open", "ordered_list_open"):
            lists.append(t == "ordered_list_open")
        elif t in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif t == "list_item_open":
            item_open = True
        elif t == "blockquote_open":
            quote_depth += 1
        elif t == "blockquote_close":
            quote_depth -= 1
        elif t == "inline" and table is not None:
            table[-1].append(clean_inline(_inline_text(tok)))
        elif t == "tr_open" and table is not None:
            table.append([])
        elif t == "table_open":
            table = []
        elif t == "table_close" and table is not None:
            text = markdown_table(table)
            if text:
                blocks.append(Block("table", text, meta={"table_header": table_header_lines(text)}))
            table = None
        elif t == "inline":
            text = clean_inline(_inline_text(tok))
            if text and item_open:
                meta = {"depth": len(lists) - 1, "ordered": lists[-1] if lists else False}
                blocks.append(Block("list_item", text, meta=meta))
                item_open = False
            elif text:
                blocks.append(Block("paragraph", text, meta={"quote": True} if quote_depth else {}))
        elif t in ("fence", "code_block"):
            code = tok.content.rstrip("\n")
            lang = tok.info.split()[0] if tok.info.strip() else None
            if code.strip():
                blocks.append(Block("code", code, meta={"language": lang} if lang else {}))
            item_open = False
        elif t == "html_block" and not tok.content.lstrip().startswith("<!--"):
            blocks.extend(_html_fragment(tok.content))
        i += 1
    return blocks


# A table row shorter than its header is padded to the header's width by the parser: a header of
# 10,000 columns over 10,000 one-cell rows (80 KB) laid out 100 M cells and was killed for memory.
_DELIMITER_ROW = re.compile(r" {0,3}\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")
MAX_TABLE_PADDING = 10  # cells laid out per cell written, beyond ...
TABLE_PADDING_SLACK = 200_000  # ... this many


def table_padding(body: str) -> tuple[int, int]:
    """(cells the tables would be laid out in, cells they are written with), from each delimiter
    row's width times the rows up to the next blank line: one pass, no parse."""
    if "|" not in body or "-" not in body:
        return 0, 0
    lines = body.split("\n")
    laid = written = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "|" not in line or "-" not in line or not _DELIMITER_ROW.fullmatch(line):
            continue
        width = len(re.findall(r"-+", line))
        rows = 1  # the header
        written += width
        while i < len(lines) and lines[i].strip():  # the table's rows, up to a blank line
            written += lines[i].count("|") + 1
            rows += 1
            i += 1
        laid += width * rows
    return laid, written


# The parser's tree takes about 2 KB per table cell (a 1 MB table of 500,000 cells: 1.1 GB), so
# tables of more cells than this, laid out, are read as text (a fuzzing pass).
MAX_TABLE_CELLS = 200_000

# Emphasis delimiters (`*` runs, and `_` runs not inside a word) are matched per paragraph in time
# that grows with the square of their number ("*a _b* c_" x 20,000, 200 KB: 4.4 s; 840 KB: 49 s;
# balanced markup less steeply), inside native code no signal interrupts. A document whose
# paragraphs' squared run counts add up past MAX_EMPHASIS_RUNS squared is read as text: one
# paragraph of 40,000 interleaved runs parses in about 1 s.
MAX_EMPHASIS_RUNS = 40_000
_EMPHASIS_RUN = re.compile(r"\*+|(?<![^\W_])_+|_+(?![^\W_])")


def emphasis_runs(body: str) -> tuple[int, int]:
    """(the sum over blocks of non-blank lines of their delimiter runs squared, the most runs in
    one block). One pass, no parse."""
    if "*" not in body and "_" not in body:
        return 0, 0
    cost = most = runs = 0
    for line in [*body.split("\n"), ""]:
        if not line.strip():
            cost, most, runs = cost + runs * runs, max(most, runs), 0
        elif "*" in line or "_" in line:
            runs += len(_EMPHASIS_RUN.findall(line))
    return cost, most


# A link reference definition makes the parser read the rest of its block to find where it ends,
# again for each definition: a block of n definitions costs n x n line reads (30,000 one-line
# definitions, 1 MB: 27 s). Counted per run of non-blank lines as (definitions x lines); ordinary
# documents stay far below (500 references at the end of a README: 250,000).
_DEFINITION_START = re.compile(r"[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?\[[^\]\n]{0,999}\]:")
MAX_DEFINITION_SCAN = 20_000_000  # line reads, about 0.6 s of the parser's time


def definition_scan(body: str) -> int:
    """The line reads the parser's link reference definitions would make: per block of non-blank
    lines, its definitions (lines that open one) times its lines. One pass, no parse."""
    if "]:" not in body:
        return 0
    total = defs = lines = 0
    for line in body.split("\n"):
        if not line.strip():
            total += defs * lines
            defs = lines = 0
            continue
        lines += 1
        if "]:" in line and _DEFINITION_START.match(line):
            defs += 1
    return total + defs * lines


def _beyond_the_parser(body: str) -> str | None:
    """Why the parser must not read `body` (it would crash, or take minutes or gigabytes), or
    None: each limit is checked by a scan of its own, without a parse."""
    if (depth := nesting(body)) > MAX_NESTING:
        return f"block quotes or lists nested {depth:,} levels deep (more than {MAX_NESTING})"
    depth, excess = inline_nesting(body)
    if depth > MAX_INLINE_NESTING:
        return (f"links, images or emphasis nested {depth:,} levels deep in one paragraph "
                f"(more than {MAX_INLINE_NESTING})")
    if excess > MAX_INLINE_EXCESS:
        return (f"links, images or emphasis nested {excess:,} levels past {_USUAL_DEPTH} over its paragraphs "
                f"(more than {MAX_INLINE_EXCESS:,})")
    laid, written = table_padding(body)
    if laid > MAX_TABLE_PADDING * written + TABLE_PADDING_SLACK:
        return (f"tables whose rows would be padded to {laid:,} cells from {written:,} "
                f"(more than {MAX_TABLE_PADDING} times, plus {TABLE_PADDING_SLACK:,})")
    if laid > MAX_TABLE_CELLS:
        return f"tables of {laid:,} cells (more than {MAX_TABLE_CELLS:,})"
    cost, most = emphasis_runs(body)
    if cost > MAX_EMPHASIS_RUNS * MAX_EMPHASIS_RUNS:
        return (f"emphasis marks the parser would match in about {cost:,} steps (the most in one paragraph: "
                f"{most:,}; more than {MAX_EMPHASIS_RUNS:,} squared)")
    if (reads := definition_scan(body)) > MAX_DEFINITION_SCAN:
        return (f"link reference definitions in runs the parser would re-read {reads:,} lines for "
                f"(more than {MAX_DEFINITION_SCAN:,})")
    if (steps := html_opener_scan(body)) > MAX_HTML_OPENER_SCAN:
        return (f"HTML processing instructions or declarations (`<?`, `<!X`) the parser would scan "
                f"{steps:,} characters for (more than {MAX_HTML_OPENER_SCAN:,})")
    return None


# The Rust parser looks for the end of each inline `<?` or `<!X` to the end of its paragraph, in
# one native call the parse time limit cannot stop: 80 KB of "<?/" took 1.8 s, 800 KB would take
# minutes (found while checking a review's hostile lines). What it scans is counted per
# paragraph, openers times length, outside code (a PHP cookbook's 259 `<?php` examples are
# code, and cheap).
_HTML_OPENERS = re.compile(r"<\?|<![A-Za-z]")
MAX_HTML_OPENER_SCAN = 20_000_000


def html_opener_scan(body: str) -> int:
    """Characters the parser would scan for the ends of inline `<?` and `<!X` openers: per
    paragraph outside fenced code and code spans, its openers times its length."""
    total = opened = size = 0
    fence: str | None = None
    for line in body.split("\n"):
        fence, code = markdown_ext.in_fence(fence, line)
        if code:
            continue
        if not line.strip():
            total, opened, size = total + opened * size, 0, 0
            continue
        if "<" in line:
            opened += len(_HTML_OPENERS.findall(markdown_ext.without_code_spans(line) if "`" in line else line))
        size += len(line) + 1
    return total + opened * size


def parse_markdown(text: str, *, front_matter: bool = True) -> ParseResult:
    """Parse Markdown text (already decoded) into typed blocks; one the parser must not read
    (nested too deep, tables padded too far: `_beyond_the_parser`) is read as plain text
    instead, with a warning saying why. `front_matter=False` (a notebook's Markdown cell) reads
    a YAML block or meta-data lines at the top as the text they render as."""
    front: dict[str, Any] = {}
    body, warning = text, None
    if front_matter:
        front, body, warning = split_front_matter(text)
        if not front:
            front, body = markdown_ext.split_meta(body)
    body = markdown_ext.rewrite(body)
    if (why := _beyond_the_parser(body)) is not None:
        return _as_plain_text(body, why)
    try:
        blocks = _blocks(_tokens(body))
    except _TooDeep:
        return _as_plain_text(body, "lists or inline markup nested too deep to read")
    h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    # a heading that opens the document names it; a later one names only its section
    first = blocks[0].text if blocks and blocks[0].kind == "heading" else None
    fm_title = front.get("title")
    title = clean_inline(str(fm_title)) if fm_title else (h1 or first)
    metadata: dict[str, Any] = {"front_matter": front} if front else {}
    return ParseResult(
        blocks=blocks,
        title=title,
        format="markdown",
        metadata=metadata,
        warnings=[warning] if warning else [],
    )
