"""Word .docx parsing with python-docx, in document order.

Paragraph styles carry the structure: "Heading N" (or a custom style based on it) → heading
level N, "Title" → level-1 heading and document title, list styles or numbering → list items,
"Caption" → caption, code-like styles → code. Tables become Markdown with the first row as
header; horizontally merged cells are written once.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from assets.parsing.package import check_package
from assets.parsing.textutil import TextBudget, clean_inline, markdown_table, normalize_text, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument

__all__ = ["parse_docx"]

_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_CODE_STYLE = re.compile(r"code|preformatted|source|verbatim|macro", re.IGNORECASE)


class _Styles:
    """Each paragraph's style chain (its name, then the names it is based on), resolved as
    python-docx's `paragraph.style` resolves it, through a dict of the styles built once per
    document. `paragraph.style` scans every `w:style` element per paragraph (for the default
    style, and by XPath for the id), so parse time grew with styles x paragraphs: a 426 KB file
    with 50,000 styles and 50,000 paragraphs would have taken hours."""

    def __init__(self, document: Any) -> None:
        from docx.enum.style import WD_STYLE_TYPE
        from docx.oxml.ns import qn

        self._by_id: dict[str, Any] = {}  # the first w:style with an id, as python-docx's lookup
        self._default: Any = None  # the last default paragraph style, as the spec calls for
        self._chains: dict[str | None, list[str]] = {}
        for element in document.styles.element.iterchildren(qn("w:style")):
            try:
                if element.styleId:
                    self._by_id.setdefault(element.styleId, element)
                if element.type == WD_STYLE_TYPE.PARAGRAPH and element.default:
                    self._default = element
            except (KeyError, ValueError, AttributeError):  # a value the schema does not allow
                continue

    def chain(self, paragraph: Any) -> list[str]:
        """The paragraph's style name and up to three it is based on ([] if it has none)."""
        try:
            pid = paragraph._p.style  # the w:pStyle id, None when the paragraph names none
            if pid not in self._chains:
                self._chains[pid] = self._resolve(pid)
        except (KeyError, ValueError, AttributeError):
            return []
        return self._chains[pid]

    def _resolve(self, style_id: str | None) -> list[str]:
        from docx.enum.style import WD_STYLE_TYPE
        from docx.styles import BabelFish

        style = self._by_id.get(style_id) if style_id else None
        if style is None or style.type != WD_STYLE_TYPE.PARAGRAPH:
            style = self._default  # an unknown id, or a style of another type: the default
        names: list[str] = []
        for _ in range(4):
            if style is None:
                break
            name = style.name_val
            names.append((BabelFish.internal2ui(name) if name is not None else None) or "")
            style = self._by_id.get(style.basedOn_val or "")
        return names


def _has_numbering(paragraph: Any) -> bool:
    ppr = paragraph._p.pPr  # python-docx exposes numbering only via XML
    return ppr is not None and ppr.numPr is not None


def _paragraph_block(paragraph: Any, styles: list[str]) -> Block | None:
    first = styles[0].lower() if styles else ""
    if first in ("toc heading",) or first.startswith("toc "):
        return None  # a generated table of contents repeats the headings
    raw = paragraph.text
    if any(_CODE_STYLE.search(s) for s in styles[:1]):
        return Block("code", raw.rstrip()) if raw.strip() else None
    text = clean_inline(raw)
    if not text:
        return None
    if first == "title":
        return Block("heading", text, level=1, meta={"style": "Title"})
    for name in styles:
        m = _HEADING.match(name.strip())
        if m:
            return Block("heading", text, level=max(1, min(6, int(m.group(1)))))
    if first == "caption":
        return Block("caption", text)
    if first.startswith("list") or _has_numbering(paragraph):
        return Block("list_item", text)
    return Block("paragraph", text)


def _cell_text(tc: Any, table: Any) -> str:
    """A cell's paragraphs, and those of the tables nested in it: python-docx's `_Cell.text` reads
    the cell's own paragraphs only, and a nested table's text was lost without a word."""
    from docx.oxml.ns import qn
    from docx.table import _Cell
    from docx.text.paragraph import Paragraph

    cell = _Cell(tc, table)
    return "\n".join(Paragraph(p, cell).text for p in tc.iter(qn("w:p")))


def _table_rows(table: Any, budget: TextBudget) -> Iterator[list[str]]:
    """Each row's cell texts, a cell merged across columns once, a cell merged down the rows in
    each of them: what python-docx's `row.cells` gives, in one pass. `row.cells` lists a merged
    cell once per column it spans (a `gridSpan` of 250 million in a 36 KB file: 2.2 GB) and finds
    a cell merged down by walking up through every row above, recursively (500 rows: 47 s; 1,200:
    a RecursionError that refused the document)."""
    texts: dict[Any, str] = {}  # a cell merged down shows in every row: read once, counted each time
    above: dict[int, Any] = {}  # grid column -> the cell whose content shows there, in the row above
    for tr in table._tbl.tr_lst:
        here: dict[int, Any] = {}
        cells: list[str] = []
        offset = tr.grid_before
        last = None
        for tc in tr.tc_lst:
            # a continued cell shows the cell above it (python-docx: ValueError where none starts there)
            shown = above.get(offset, tc) if tc.vMerge == "continue" else tc
            here.setdefault(offset, shown)  # the first cell starting there, as python-docx finds it
            offset += tc.grid_span
            if shown is not last and shown.grid_span > 0:  # a cell spanning columns is one cell
                last = shown
                if shown not in texts:
                    texts[shown] = normalize_text(_cell_text(shown, table))
                budget.spend(len(texts[shown]))  # 1 MB merged down 500 rows: 1.5 GB before the refusal
                cells.append(texts[shown])
        above = here
        yield cells


def _table_block(table: Any, budget: TextBudget) -> Block | None:
    rows = [cells for cells in _table_rows(table, budget) if any(cells)]
    if not rows:
        return None
    text = markdown_table(rows)
    return Block("table", text, meta={"table_header": table_header_lines(text)})


def parse_docx(data: bytes) -> ParseResult:
    """Parse .docx bytes into headings, paragraphs, list items and tables in order."""
    import docx  # python-docx; imported lazily (lxml-heavy, only needed for .docx)
    from docx.table import Table

    check_package(data, "docx")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as e:  # python-docx raises many types on bad packages
        raise CorruptDocument(f"docx cannot be opened: {type(e).__name__}: {e}") from None
    styles = _Styles(document)
    budget = TextBudget(len(data), "docx")  # spent by tables, whose merged cells repeat their text
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        block = _table_block(item, budget) if isinstance(item, Table) else _paragraph_block(item, styles.chain(item))
        if block is not None:
            blocks.append(block)
    props = document.core_properties
    styled_title = next((b.text for b in blocks if b.meta.get("style") == "Title"), None)
    h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    title = clean_inline(props.title or "") or styled_title or h1
    metadata: dict[str, Any] = {}
    for key in ("author", "subject", "keywords", "category"):
        value = getattr(props, key, None)
        if value:
            metadata[key] = value
    if props.modified:
        metadata["modified"] = props.modified.isoformat()
    return ParseResult(blocks=blocks, title=title or None, format="docx", metadata=metadata)
