"""Word .docx parsing with python-docx, in document order.

Paragraph styles carry the structure: "Heading N" (or a custom style based on it) → heading
level N, "Title" → level-1 heading and document title, list styles or numbering → list items,
"Caption" → caption, code-like styles → code. Tables become Markdown with the first row as
header; horizontally merged cells are written once.
"""

from __future__ import annotations

import io
import re
from typing import Any

from assets.parsing.package import check_package
from assets.parsing.textutil import clean_inline, markdown_table, normalize_text, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument

__all__ = ["parse_docx"]

_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_CODE_STYLE = re.compile(r"code|preformatted|source|verbatim|macro", re.IGNORECASE)


def _style_chain(paragraph: Any) -> list[str]:
    names: list[str] = []
    try:
        style = paragraph.style
    except (KeyError, ValueError, AttributeError):
        return names
    for _ in range(4):
        if style is None:
            break
        names.append(style.name or "")
        style = style.base_style
    return names


def _has_numbering(paragraph: Any) -> bool:
    ppr = paragraph._p.pPr  # python-docx exposes numbering only via XML
    return ppr is not None and ppr.numPr is not None


def _paragraph_block(paragraph: Any) -> Block | None:
    styles = _style_chain(paragraph)
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


def _table_block(table: Any) -> Block | None:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        last = None
        for cell in row.cells:
            if cell._tc is last:  # a merged cell repeats the same element
                continue
            last = cell._tc
            cells.append(normalize_text(cell.text))
        if any(cells):
            rows.append(cells)
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
    blocks: list[Block] = []
    for item in document.iter_inner_content():
        block = _table_block(item) if isinstance(item, Table) else _paragraph_block(item)
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
