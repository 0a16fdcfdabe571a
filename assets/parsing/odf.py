"""OpenDocument (.odt text, .ods spreadsheets, .odp presentations) from its zip + XML.

`content.xml` is walked in document order:

* text: `text:h` → heading (its `text:outline-level`), `text:p` → paragraph (a paragraph whose
  style is, or derives from, "Title"/"Heading N" becomes a heading), `text:list-item` → list
  item with nesting depth, `table:table` → Markdown table with the first row as header,
  sections, frames and text boxes are walked; footnote bodies are cut out of the running
  text and follow their paragraph (meta {"footnote": True}); tracked deletions, annotations
  and the table of contents (which only repeats headings) are skipped;
* spreadsheets: one heading per sheet, then `tabular.sheet_blocks` (row groups with the header);
* presentations: one heading per page ("Slide N: <name>"), its frames, and speaker notes as a
  paragraph with meta {"notes": True}; page = slide number.

Title: `dc:title` from meta.xml, else the first heading. A password-protected package
(encryption data in the manifest) is EncryptedDocument; a package without a readable
content.xml is CorruptDocument.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from typing import Any

from lxml import etree

from assets.parsing import package
from assets.parsing.package import check_package
from assets.parsing.tabular import sheet_blocks
from assets.parsing.textutil import TextBudget, clean_inline, markdown_table, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, EncryptedDocument, TooLarge

__all__ = ["parse_odf", "read_member"]

NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "manifest": "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0",
}
MAX_REPEAT = 1000  # "number-columns-repeated" of trailing empty cells can claim 16384
_HEADING_STYLE = re.compile(r"^(?:heading[ _]?(\d)|title)$", re.IGNORECASE)
_SKIP = {
    "tracked-changes",
    "annotation",
    "table-of-content",
    "alphabetical-index",
    "illustration-index",
    "bibliography",
    "sequence-decls",
    "variable-decls",
    "user-field-decls",
    "bookmark-ref",
    "note-citation",
    "soft-page-break",
}


def _q(prefix: str, name: str) -> str:
    return f"{{{NS[prefix]}}}{name}"


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)


def read_member(zf: zipfile.ZipFile, name: str) -> bytes:
    """One package member, refusing zip bombs (a member unpacking beyond MAX_MEMBER_BYTES)."""
    info = zf.getinfo(name)
    if info.file_size > package.MAX_MEMBER_BYTES:  # read now: a copy taken at import outlived a test's limit
        raise TooLarge(f"package member {name} unpacks to {info.file_size / 1e6:.0f} MB")
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError) as e:
        raise CorruptDocument(f"package member {name} is damaged: {e}") from None


def _open(data: bytes, kind: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise CorruptDocument(f"{kind} package is not a readable zip archive: {e}") from None


def _xml(zf: zipfile.ZipFile, name: str, kind: str) -> etree._Element:
    try:
        raw = read_member(zf, name)
    except KeyError:
        raise CorruptDocument(f"{kind} package has no {name}") from None
    try:
        return etree.fromstring(raw, parser=_parser())
    except etree.XMLSyntaxError as e:
        raise CorruptDocument(f"{kind} {name} is not well-formed XML: {e}") from None


def _text(el: etree._Element, notes: list[str] | None = None) -> str:
    """Text of a paragraph-like element: spaces, tabs and line breaks expanded."""
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            tag = child.tag if isinstance(child.tag, str) else ""
            local = tag.rsplit("}", 1)[-1]
            if tag == _q("text", "s"):
                parts.append(" " * int(child.get(_q("text", "c"), "1") or 1))
            elif tag == _q("text", "tab"):
                parts.append("\t")
            elif tag == _q("text", "line-break"):
                parts.append("\n")
            elif tag == _q("text", "note"):
                body = child.find(_q("text", "note-body"))
                if notes is not None and body is not None:
                    notes.append(clean_inline(" ".join(_text(p) for p in body.iter(_q("text", "p")))))
            elif local in _SKIP or tag == _q("office", "annotation"):
                pass
            elif tag:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(el)
    return "".join(parts)


def _styles(root: etree._Element, styles_root: etree._Element | None) -> dict[str, str]:
    """style name → the name of the heading/title style it is or derives from ('' if none)."""
    parents: dict[str, str] = {}
    for r in (styles_root, root):
        if r is None:
            continue
        for st in r.iter(_q("style", "style")):
            name = st.get(_q("style", "name")) or ""
            parents[name] = st.get(_q("style", "parent-style-name")) or ""
            display = st.get(_q("style", "display-name"))
            if display and display != name:
                parents.setdefault(display, parents[name])
    # Each style's chain is walked once, what it resolves to kept for the styles below it: walked
    # from every style, a chain of 20,000 styles each deriving from the next took 50 s.
    resolved: dict[str, str] = {}  # style -> heading style it is or derives from, "" for none
    for name in parents:
        chain: dict[str, None] = {}  # the styles walked from `name`, in order (a cycle ends it)
        cur = name
        while cur and cur not in resolved and cur not in chain:
            label = cur.replace("_20_", " ")
            if _HEADING_STYLE.match(label):
                resolved[cur] = label
                break
            chain[cur] = None
            cur = parents.get(cur, "")
        resolved.update(dict.fromkeys(chain, resolved.get(cur, "")))
    return {name: label for name, label in resolved.items() if label and name in parents}


def _table_rows(table: etree._Element, budget: TextBudget) -> list[list[str]]:
    """Cell texts row by row; repeated rows/cells expanded (capped), trailing empties cut.

    A row is read as runs of (text, repeat) and its expanded text spent from the file's budget
    before it is expanded: a thousand repeated rows of a thousand repeated cells took 4.4 GB from
    a few KB before the finished text could be refused."""
    rows: list[list[str]] = []
    cell_tags = (_q("table", "table-cell"), _q("table", "covered-table-cell"))
    for row in table.iter(_q("table", "table-row")):
        repeat = min(int(row.get(_q("table", "number-rows-repeated"), "1") or 1), MAX_REPEAT)
        runs: list[tuple[str, int]] = []
        for cell in row:
            if cell.tag not in cell_tags:
                continue
            n = min(int(cell.get(_q("table", "number-columns-repeated"), "1") or 1), MAX_REPEAT)
            paragraphs = list(cell.iter(_q("text", "p")))  # a nested table's too: walked again per level
            budget.spend(len(paragraphs), elements=True)  # 680 levels over 40,000 empty ones, 2.7 KB: 76 s
            runs.append((clean_inline(" ".join(_text(p) for p in paragraphs)), n))
        while runs and not runs[-1][0]:
            runs.pop()
        if not runs:
            rows.append([])
            continue
        budget.spend(repeat * sum((len(text) + 1) * n for text, n in runs))  # + 1: a separator
        cells = [text for text, n in runs for _ in range(n)]
        rows.extend([cells] * repeat)
    return rows


class _Walker:
    def __init__(self, styles: dict[str, str], budget: TextBudget) -> None:
        self.styles = styles
        self.budget = budget
        self.blocks: list[Block] = []
        self.list_depth = -1

    def emit(self, kind: Any, text: str, level: int = 0, page: int | None = None, **meta: Any) -> None:
        text = text if kind in ("table", "code") else clean_inline(text)
        if text.strip():
            self.blocks.append(Block(kind, text, level=level, page=page, meta=meta))

    def paragraph(self, el: etree._Element, page: int | None, meta: dict[str, Any]) -> None:
        notes: list[str] = []
        text = _text(el, notes)
        style = self.styles.get(el.get(_q("text", "style-name")) or "", "")
        if el.tag == _q("text", "h"):
            level = int(el.get(_q("text", "outline-level"), "1") or 1)
            self.emit("heading", text, level=max(1, min(6, level)), page=page, **meta)
        elif style:
            m = _HEADING_STYLE.match(style)
            level = int(m.group(1)) if m and m.group(1) else 1
            self.emit("heading", text, level=level, page=page, **meta)
        elif self.list_depth >= 0:
            self.emit("list_item", text, page=page, depth=self.list_depth, **meta)
        else:
            self.emit("paragraph", text, page=page, **meta)
        for note in notes:
            self.emit("paragraph", note, page=page, footnote=True, **meta)

    def walk(self, el: etree._Element, page: int | None = None, **meta: Any) -> None:
        for child in el:
            tag = child.tag if isinstance(child.tag, str) else ""
            local = tag.rsplit("}", 1)[-1]
            if not tag or local in _SKIP:
                continue
            if tag in (_q("text", "p"), _q("text", "h")):
                self.paragraph(child, page, meta)
            elif tag == _q("text", "list"):
                self.list_depth += 1
                self.walk(child, page, **meta)
                self.list_depth -= 1
            elif tag == _q("table", "table"):
                rows = [r for r in _table_rows(child, self.budget) if any(r)]
                if rows and max(len(r) for r in rows) >= 2:
                    text = markdown_table(rows)
                    self.emit("table", text, page=page, table_header=table_header_lines(text), **meta)
                else:
                    for r in rows:
                        self.emit("paragraph", " ".join(r), page=page, **meta)
            elif tag == _q("presentation", "notes"):
                continue  # read separately, after the slide
            else:
                self.walk(child, page, **meta)


_LENGTH = re.compile(r"^(-?[\d.]+)\s*(cm|mm|in|pt|pc|px)?$")
_UNITS = {"cm": 28.35, "mm": 2.835, "in": 72.0, "pt": 1.0, "pc": 12.0, "px": 0.75, None: 1.0}


def _length(value: str | None) -> float:
    m = _LENGTH.match((value or "").strip())
    return float(m.group(1)) * _UNITS[m.group(2)] if m else 0.0


def _sort_frames(page: etree._Element) -> None:
    """Put a slide's shapes in reading order (top to bottom, left to right), not z-order."""
    svg = "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
    kids = list(page)
    if len(kids) < 2:
        return

    def key(el: etree._Element) -> tuple[float, float]:
        return (round(_length(el.get(f"{{{svg}}}y")) / 10), _length(el.get(f"{{{svg}}}x")))

    notes = [k for k in kids if k.tag == _q("presentation", "notes")]
    shapes = sorted((k for k in kids if k.tag != _q("presentation", "notes")), key=key)
    for k in kids:
        page.remove(k)
    for k in [*shapes, *notes]:
        page.append(k)


def _check_encryption(zf: zipfile.ZipFile, kind: str) -> None:
    try:
        manifest = read_member(zf, "META-INF/manifest.xml")
    except KeyError:
        return
    if b"encryption-data" in manifest:
        raise EncryptedDocument(f"{kind} is password-protected; remove the password to index it")


def _title(zf: zipfile.ZipFile) -> str | None:
    try:
        meta = etree.fromstring(read_member(zf, "meta.xml"), parser=_parser())
    except (KeyError, etree.XMLSyntaxError, CorruptDocument):
        return None
    el = meta.find(f".//{_q('dc', 'title')}")
    return clean_inline(el.text or "") or None if el is not None else None


def parse_odf(data: bytes, fmt: str) -> ParseResult:
    """Parse an OpenDocument package; `fmt` is "odt", "ods" or "odp"."""
    kind = {"odt": "OpenDocument text", "ods": "OpenDocument spreadsheet"}.get(fmt, "OpenDocument presentation")
    check_package(data, kind)
    zf = _open(data, kind)
    with zf:
        _check_encryption(zf, kind)
        root = _xml(zf, "content.xml", kind)
        try:
            styles_root = etree.fromstring(read_member(zf, "styles.xml"), parser=_parser())
        except (KeyError, etree.XMLSyntaxError, CorruptDocument):
            styles_root = None
        title = _title(zf)
    body = root.find(_q("office", "body"))
    if body is None:
        raise CorruptDocument(f"{kind} content.xml has no office:body")
    walker = _Walker(_styles(root, styles_root), TextBudget(len(data), fmt))
    warnings: list[str] = []
    sheet = body.find(_q("office", "spreadsheet"))
    pres = body.find(_q("office", "presentation"))
    if sheet is not None:
        for table in sheet.iter(_q("table", "table")):
            name = table.get(_q("table", "name")) or "Sheet"
            blocks = sheet_blocks(_table_rows(table, walker.budget), {"sheet": name})
            if blocks:
                walker.blocks.append(Block("heading", f"Sheet: {name}", level=1, meta={"sheet": name}))
                walker.blocks.extend(blocks)
    elif pres is not None:
        pages = pres.findall(_q("draw", "page"))
        textless = []
        for n, page in enumerate(pages, 1):
            before = len(walker.blocks)
            _sort_frames(page)
            walker.walk(page, n, slide=n)
            notes_el = page.find(_q("presentation", "notes"))
            if notes_el is not None:
                notes = clean_inline(" ".join(_text(p) for p in notes_el.iter(_q("text", "p"))))
                if notes:
                    walker.emit("paragraph", notes, page=n, slide=n, notes=True)
            if len(walker.blocks) == before:
                textless.append(n)
                continue
            name = page.get(_q("draw", "name")) or ""
            label = f"Slide {n}: {name}" if name and not re.match(r"^page\d+$", name, re.I) else f"Slide {n}"
            walker.blocks.insert(before, Block("heading", label, level=1, page=n, meta={"slide": n}))
        if textless:
            warnings.append(f"{len(textless)} slide(s) without any text: {textless[:20]}")
    else:
        text_body = body.find(_q("office", "text"))
        walker.walk(text_body if text_body is not None else body)
    if not walker.blocks:
        raise EmptyDocument(f"{kind} holds no text")
    first = next((b.text for b in walker.blocks if b.kind == "heading"), None)
    return ParseResult(blocks=walker.blocks, title=title or first, format=fmt, metadata={}, warnings=warnings)
