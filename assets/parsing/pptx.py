"""PowerPoint .pptx decks with python-pptx, slide by slide.

Per slide (page = slide number, meta {"slide": n}): a level-1 heading "Slide N: <title>"
("Slide N" when the slide has no title), then its shapes in reading order (top to bottom,
then left to right; groups are opened): text frames as paragraphs — list items with their
indent depth in body placeholders and for indented paragraphs —, tables as Markdown with the
first row as header, chart data as a table (categories × series), picture alt text as a
caption. Speaker notes follow as one paragraph with meta {"notes": True}. Slides without any
text are left out (and counted in metadata); a deck with no text at all is EmptyDocument.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from assets.parsing.package import check_package
from assets.parsing.textutil import clean_inline, markdown_table, normalize_text, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument, EmptyDocument

__all__ = ["parse_pptx"]

_BODY_PLACEHOLDERS = {"BODY", "OBJECT", "VERTICAL_BODY", "VERTICAL_OBJECT"}
_TITLE_PLACEHOLDERS = {"TITLE", "CENTER_TITLE", "VERTICAL_TITLE"}
_SKIP_PLACEHOLDERS = {"SLIDE_NUMBER", "FOOTER", "DATE", "HEADER"}


def _placeholder_type(shape: Any) -> str | None:
    if not getattr(shape, "is_placeholder", False):
        return None
    try:
        kind = shape.placeholder_format.type
    except (ValueError, AttributeError):
        return None
    return getattr(kind, "name", None) if kind is not None else None


def _position(shape: Any, layout: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(top, left) as python-pptx reads them; a slide placeholder without its own position takes
    its layout placeholder's, from `layout` (idx -> position, `_layout_positions`, once per deck):
    python-pptx searches the layout's shapes for every such placeholder, twice (a slide of 1,000
    unplaced placeholders over a layout of 1,000: 106 s)."""
    try:
        top, left = shape._element.y, shape._element.x
        if (top is None or left is None) and getattr(shape, "is_placeholder", False):
            base_top, base_left = layout.get(shape._element.ph_idx, (0, 0))
            top, left = base_top if top is None else top, base_left if left is None else left
        return (top or 0, left or 0)
    except (ValueError, AttributeError):  # inherited positions can fail to resolve
        return (0, 0)


def _layout_positions(slide: Any) -> dict[int, tuple[int, int]]:
    """The slide layout's placeholders' positions by idx (the first of an idx, as python-pptx's
    lookup finds it). One without a position of its own takes the master's placeholder of its
    type, looked up once per type (python-pptx searches the master for each)."""
    positions: dict[int, tuple[int, int]] = {}
    masters: dict[Any, tuple[int | None, int | None]] = {}  # placeholder type -> the master's (top, left)
    try:
        for ph in slide.slide_layout.placeholders:
            el = ph._element
            if el.ph_idx in positions:
                continue
            top, left = el.y, el.x
            if top is None or left is None:
                if el.ph_type not in masters:
                    base = ph._base_placeholder
                    masters[el.ph_type] = (base.top, base.left) if base is not None else (None, None)
                base_top, base_left = masters[el.ph_type]
                top, left = base_top if top is None else top, base_left if left is None else left
            positions[el.ph_idx] = (top or 0, left or 0)
    except (ValueError, AttributeError, KeyError):
        pass
    return positions


def _flatten(shapes: Any, layout: dict[int, tuple[int, int]]) -> list[Any]:
    out: list[Any] = []
    for shape in sorted(shapes, key=lambda s: _position(s, layout)):
        if getattr(shape, "shape_type", None) is not None and shape.shape_type == 6:  # GROUP
            out.extend(_flatten(shape.shapes, layout))
        else:
            out.append(shape)
    return out


def _table_block(shape: Any, meta: dict[str, Any], page: int) -> Block | None:
    rows: list[list[str]] = []
    for row in shape.table.rows:
        cells = []
        for cell in row.cells:
            cells.append("" if cell.is_spanned else normalize_text(cell.text))
        if any(cells):
            rows.append(cells)
    if not rows:
        return None
    text = markdown_table(rows)
    return Block("table", text, page=page, meta={**meta, "table_header": table_header_lines(text)})


def _chart_block(shape: Any, meta: dict[str, Any], page: int) -> list[Block]:
    try:
        chart = shape.chart
        title = ""
        if chart.has_title and chart.chart_title.has_text_frame:
            title = clean_inline(chart.chart_title.text_frame.text)
        plot = chart.plots[0]
        categories = [clean_inline(str(c)) for c in plot.categories]
        series = list(plot.series)
        header = ["", *[clean_inline(s.name or f"series {i + 1}") for i, s in enumerate(series)]]
        columns = [list(s.values) for s in series]
        rows = [[cat, *[_num(col[i]) if i < len(col) else "" for col in columns]] for i, cat in enumerate(categories)]
    except Exception:  # charts come in many shapes; their data is a bonus
        return []
    blocks: list[Block] = []
    if title:
        blocks.append(Block("caption", f"Chart: {title}", page=page, meta=dict(meta)))
    if rows:
        text = markdown_table(rows, header=header)
        m = {**meta, "table_header": table_header_lines(text), "chart": True}
        blocks.append(Block("table", text, page=page, meta=m))
    return blocks


def _num(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _text_blocks(shape: Any, kind: str | None, meta: dict[str, Any], page: int) -> list[Block]:
    blocks: list[Block] = []
    body = kind in _BODY_PLACEHOLDERS
    for para in shape.text_frame.paragraphs:
        text = clean_inline("".join(r.text for r in para.runs) or para.text)
        if not text:
            continue
        level = para.level or 0
        if body or level > 0:
            blocks.append(Block("list_item", text, page=page, meta={**meta, "depth": level, "ordered": False}))
        else:
            blocks.append(Block("paragraph", text, page=page, meta=dict(meta)))
    return blocks


def _alt_text(shape: Any) -> str:
    try:
        props = shape._element.xpath("./*[1]/p:cNvPr")  # nvPicPr/nvSpPr → cNvPr
    except Exception:
        return ""
    if not props:
        return ""
    return clean_inline(props[0].get("descr") or "")


def _slide_blocks(slide: Any, n: int, layouts: dict[Any, dict[int, tuple[int, int]]]) -> tuple[str, list[Block]]:
    meta: dict[str, Any] = {"slide": n}
    if slide._element.get("show") == "0":
        meta["hidden"] = True
    title = ""
    blocks: list[Block] = []
    layout = slide.slide_layout  # its placeholders are placed once per deck (300 slides x 1,000: 32 s)
    if layout.part not in layouts:
        layouts[layout.part] = _layout_positions(slide)
    for shape in _flatten(slide.shapes, layouts[layout.part]):
        kind = _placeholder_type(shape)
        if kind in _SKIP_PLACEHOLDERS:
            continue
        if kind in _TITLE_PLACEHOLDERS and shape.has_text_frame and not title:
            title = clean_inline(shape.text_frame.text)
            if title:
                continue
        if getattr(shape, "has_table", False) and shape.has_table:
            table = _table_block(shape, meta, n)
            if table:
                blocks.append(table)
        elif getattr(shape, "has_chart", False) and shape.has_chart:
            blocks.extend(_chart_block(shape, meta, n))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            blocks.extend(_text_blocks(shape, kind, meta, n))
        elif shape.shape_type == 13:  # PICTURE
            alt = _alt_text(shape)
            if alt and not alt.lower().startswith(("picture ", "image ")):
                blocks.append(Block("caption", alt, page=n, meta={**meta, "alt_text": True}))
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = normalize_text(frame.text) if frame is not None else ""
        if notes:
            blocks.append(Block("paragraph", notes, page=n, meta={**meta, "notes": True}))
    return title, blocks


def parse_pptx(data: bytes) -> ParseResult:
    """Parse a .pptx deck: a heading per slide, its text, tables and speaker notes."""
    from pptx import Presentation  # lazy: python-pptx is only needed for decks
    from pptx.exc import PackageNotFoundError

    check_package(data, "presentation")
    try:
        prs = Presentation(io.BytesIO(data))
        slides = list(prs.slides)
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError) as e:
        raise CorruptDocument(f"presentation cannot be opened: {type(e).__name__}: {e}") from None
    except Exception as e:  # malformed parts inside the package
        raise CorruptDocument(f"presentation is damaged: {type(e).__name__}: {e}") from None
    blocks: list[Block] = []
    warnings: list[str] = []
    textless: list[int] = []
    first_title = None
    layouts: dict[Any, dict[int, tuple[int, int]]] = {}  # layout part -> its placeholders' positions
    for n, slide in enumerate(slides, 1):
        try:
            title, body = _slide_blocks(slide, n, layouts)
        except Exception as e:  # one damaged slide must not hide the others
            warnings.append(f"slide {n} could not be read: {type(e).__name__}: {e}")
            continue
        if not title and not body:
            textless.append(n)
            continue
        first_title = first_title or title or None
        heading = f"Slide {n}: {title}" if title else f"Slide {n}"
        blocks.append(Block("heading", heading, level=1, page=n, meta={"slide": n}))
        blocks.extend(body)
    if not blocks:
        raise EmptyDocument(
            f"presentation has {len(slides)} slide(s) and none holds text"
            + (" (image-only slides are not OCRed)" if slides else "")
        )
    if textless:
        warnings.append(f"{len(textless)} slide(s) without any text: {textless[:20]}")
    props = prs.core_properties
    title = clean_inline(props.title or "") or first_title or ""
    metadata: dict[str, Any] = {"slides": len(slides), "slides_without_text": textless}
    if props.author:
        metadata["author"] = props.author
    return ParseResult(blocks=blocks, title=title or None, format="pptx", metadata=metadata, warnings=warnings)
