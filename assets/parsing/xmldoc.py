"""Generic XML: text content element by element, headings from title-like elements.

XML has no fixed vocabulary, so the walk reads the shape of the tree:

* a title-like element (`title`, `head`, `heading`, `h1`–`h6`, DocBook `bridgehead`) is a
  heading; its level is the number of enclosing elements that carry a title of their own
  (sections nest), capped at 6; a DocBook FAQ's `qandaentry/question` heads its answer, one
  level deeper;
* an element with text of its own (mixed content) is one paragraph with all its inline text;
  list items (`li`, `item`, `listitem`), code (`programlisting`, `screen`, `code`, `pre`,
  `codeblock`, `literallayout`) and table-like elements (`table` with `row`/`tr` and
  `entry`/`td`/`th`) keep their kinds;
* a record — an element whose children are all short text leaves (`<book><author>…</author>
  <price>…</price></book>`) — becomes one paragraph of "name: value" lines (attributes too), so
  data files keep their field names;
* container elements are walked. Comments, processing instructions, DTDs are ignored, and
  the parser never loads external entities or DTDs (no XXE, no network).

Malformed XML is recovered as far as lxml can (with a warning); nothing recoverable is
CorruptDocument, and so is XML nested past libxml2's 2,048 levels (the rest would be lost).
"""

from __future__ import annotations

from typing import Any, cast

from lxml import etree

from assets.parsing.markup import refuse_attribute_flood
from assets.parsing.textutil import (
    TextBudget,
    clean_inline,
    markdown_table,
    table_header_lines,
    table_row_groups,
)
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument

__all__ = ["parse_xml"]

_TITLE = frozenset({"title", "head", "heading", "bridgehead", "h1", "h2", "h3", "h4", "h5", "h6"})
_ITEM = frozenset({"li", "item", "listitem", "list-item"})
_CODE = frozenset({"programlisting", "screen", "code", "pre", "codeblock", "literallayout", "computeroutput"})
_TABLE = frozenset({"table", "informaltable", "simpletable"})
_ROW = frozenset({"row", "tr", "strow"})
_CELL = frozenset({"entry", "td", "th", "stentry", "cell"})
_SKIP = frozenset({"script", "style", "indexterm", "remark"})
_PROSE = frozenset({"p", "para", "simpara", "formalpara", "l", "line", "s", "lg", "note"})
MAX_COLUMNS = 20  # sibling records with more distinct fields stay paragraphs
_LEAF_CHARS = 120  # a leaf this short (and without sentences) is a field value
_MAX_DEPTH = 200


def _local(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    return cast(str, etree.QName(tag).localname).lower()


def _text(el: etree._Element, budget: TextBudget | None = None) -> str:
    """All text below `el` (tails of the element itself excluded); the elements read are spent
    from `budget`, when given."""
    parts: list[str] = []
    read = 0
    for node in el.iter():
        read += 1
        if node is not el and _local(node) in _SKIP:
            continue
        if isinstance(node.tag, str) and node.text:
            parts.append(node.text)
        if node is not el and node.tail:
            parts.append(node.tail)
    if budget is not None:
        budget.spend(read, elements=True)
    return "".join(parts)


def _children(el: etree._Element) -> list[etree._Element]:
    return [c for c in el if isinstance(c.tag, str)]


def _own_text(el: etree._Element) -> bool:
    if el.text and el.text.strip():
        return True
    return any(c.tail and c.tail.strip() for c in el)


def _is_record(el: etree._Element) -> bool:
    kids = _children(el)
    if len(kids) < 2 or _own_text(el):
        return False
    if len({c.tag for c in kids}) < 0.5 * len(kids) or not any((c.text or "").strip() for c in kids):
        return False  # repeated names: a list of items, not the fields of one record
    for c in kids:
        if _children(c) or _local(c) in _PROSE or _local(c) in _ITEM:
            return False
        text = clean_inline(c.text or "")
        if len(text) > _LEAF_CHARS or text.count(". ") >= 1:
            return False
    return True


def _record_fields(el: etree._Element) -> dict[str, str] | None:
    """Field name → value for a data record (attributes and short leaf children), else None.

    Records are elements like `<entry code="AF" name="Afghanistan"/>` (attributes only) or
    `<book id="1"><author>…</author><price>…</price></book>`.
    """
    kids = _children(el)
    if kids and not _is_record(el):
        return None
    if not kids and (_own_text(el) or not el.attrib):
        return None
    fields = {etree.QName(k).localname: clean_inline(v) for k, v in el.attrib.items()}
    for c in kids:
        value = clean_inline(c.text or "")
        if value:
            fields.setdefault(_local(c), value)
    return {k: v for k, v in fields.items() if v} or None


def _record_run(run: list[etree._Element]) -> tuple[int, list[Block]]:
    """A run of same-named siblings: where its records start, and their table (in row groups).

    The records are the siblings from the first k from which every one to the end is a record
    and their fields fit `MAX_COLUMNS`, at least two of them; with none, k is the run's length
    and the table empty (each sibling is walked). Each sibling's fields are read once: retrying
    every shorter run took n² steps for n siblings (27 s for an 80 KB file, found by an audit).
    """
    rows = [_record_fields(el) for el in run]
    first = max((k + 1 for k, r in enumerate(rows) if r is None), default=0)
    columns: dict[str, None] = {}
    fits = [False] * len(rows)
    for k in range(len(rows) - 1, first - 1, -1):  # the columns of each suffix, right to left
        columns.update(dict.fromkeys(rows[k] or {}))
        fits[k] = len(columns) <= MAX_COLUMNS
    start = next((k for k in range(first, len(rows) - 1) if fits[k]), None)
    if start is None:
        return len(run), []
    records = [r or {} for r in rows[start:]]
    ordered: dict[str, None] = {}  # columns in first-seen order
    for r in records:
        ordered.update(dict.fromkeys(r))
    body = [[r.get(c, "") for c in ordered] for r in records]
    return start, table_row_groups(list(ordered), body, meta={"element": _local(run[start])})


class _Walker:
    def __init__(self, budget: TextBudget) -> None:
        self.budget = budget  # a table's cells hold the text of the tables nested in them
        self.blocks: list[Block] = []
        self._titled: dict[etree._Element, bool] = {}  # element -> has a title-like child

    def emit(self, kind: Any, text: str, level: int = 0, meta: dict[str, Any] | None = None) -> None:
        if text.strip():
            self.blocks.append(Block(kind, text, level=level, meta=meta or {}))

    def level(self, el: etree._Element) -> int:
        """Sections enclosing a title element: ancestors that have a title-like child."""
        depth = 0
        for anc in el.iterancestors():
            titled = self._titled.get(anc)
            if titled is None:  # once per element: siblings' titles asked it n times (n²)
                titled = self._titled[anc] = any(_local(c) in _TITLE for c in _children(anc))
            depth += titled
        return max(1, min(6, depth))

    def walk(self, el: etree._Element, depth: int = 0) -> None:
        name = _local(el)
        if not name or name in _SKIP:
            return
        if depth > _MAX_DEPTH:
            self.emit("paragraph", clean_inline(_text(el)))
        elif name in _TITLE:
            level = int(name[1]) if name[0] == "h" and name[1:].isdigit() else self.level(el)
            self.emit("heading", clean_inline(_text(el)), level=level)
        elif name == "question" and _local(el.getparent()) == "qandaentry":
            # a DocBook FAQ entry: its question heads the answer, one level below its division; a
            # code sample the question quotes stays code, after it (as the HTML rendering reads)
            code = [c for c in el.iter() if c is not el and _local(c) in _CODE]
            words = [c for c in _children(el) if c not in code]
            self.emit("heading", clean_inline(" ".join(_text(c) for c in words) if words else _text(el)),
                      level=min(6, self.level(el) + 1))
            for c in code:
                self.emit("code", _text(c).strip("\n"))
        elif name in _CODE:
            self.emit("code", _text(el).strip("\n"))
        elif name in _TABLE and self.table(el):
            return
        elif name in _ITEM:
            if any(
                _local(c) in _ITEM or (_children(c) and _local(c) in ("list", "itemizedlist")) for c in _children(el)
            ):
                self.container(el, depth)
            else:
                self.emit("list_item", clean_inline(_text(el)))
        elif _own_text(el):
            self.emit("paragraph", clean_inline(_text(el)))
        elif not _children(el) and el.attrib:  # a lone attribute-only record
            attrs = _record_fields(el) or {}
            lines = [f"{k}: {v}" for k, v in attrs.items()]
            self.emit("paragraph", "\n".join(lines), meta={"element": name})
        elif _is_record(el):
            fields = [c for c in _children(el) if clean_inline(c.text or "")]
            for c in fields:
                if _local(c) in _TITLE:
                    self.emit("heading", clean_inline(c.text or ""), level=self.level(c))
            lines = [f"{etree.QName(k).localname}: {clean_inline(v)}" for k, v in el.attrib.items() if clean_inline(v)]
            lines += [f"{_local(c)}: {clean_inline(c.text or '')}" for c in fields if _local(c) not in _TITLE]
            self.emit("paragraph", "\n".join(lines), meta={"element": name})
        else:
            self.container(el, depth)

    def container(self, el: etree._Element, depth: int) -> None:
        kids = _children(el)
        i = 0
        while i < len(kids):
            j = i
            while j < len(kids) and kids[j].tag == kids[i].tag:
                j += 1
            start, table = _record_run(kids[i:j])
            for kid in kids[i:i + start]:  # those before the records, one by one
                self.walk(kid, depth + 1)
            self.blocks.extend(table)
            i = j

    def table(self, el: etree._Element) -> bool:
        rows: list[list[str]] = []
        for row in el.iter():
            if _local(row) in _ROW:
                # a table nested in a cell is read again with every table around it: 300 one-cell
                # tables over 1,000 empty elements (14 KB) took 43 s
                cells = [clean_inline(_text(c, self.budget)) for c in _children(row) if _local(c) in _CELL]
                self.budget.spend(sum(map(len, cells)))  # 650 nested tables: 520 M characters, 1.5 GB
                if any(cells):
                    rows.append(cells)
        if not rows or max(len(r) for r in rows) < 2:
            return False
        for child in _children(el):
            if _local(child) in _TITLE or _local(child) == "caption":
                self.emit("caption", clean_inline(_text(child)))
        text = markdown_table(rows)
        self.emit("table", text, meta={"table_header": table_header_lines(text)})
        return True


def _too_deep(parser: etree.XMLParser) -> None:
    """CorruptDocument when libxml2 stopped at its depth limit: it builds no tree past 2,048
    levels even with huge_tree, and recovery keeps only what came before, so everything after
    the deep part (the closing paragraphs too) would be lost without a word."""
    if any("Excessive depth" in e.message for e in parser.error_log):
        raise CorruptDocument("XML nests elements more than 2,048 levels deep: what lies deeper and after "
                              "cannot be read, so the document is not indexed in part")


def parse_xml(data: bytes) -> ParseResult:
    """Parse an XML document into headings, paragraphs, records, lists, code and tables."""
    warnings: list[str] = []
    refuse_attribute_flood(data, "XML")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True, recover=False)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as e:
        _too_deep(parser)
        recovering = etree.XMLParser(
            resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True, recover=True
        )
        try:
            root = etree.fromstring(data, parser=recovering)
        except etree.XMLSyntaxError:
            root = None
        _too_deep(recovering)  # malformed before it nests too deep
        if root is None:
            raise CorruptDocument(f"XML is not well-formed and cannot be recovered: {e}") from None
        warnings.append(f"XML is not well-formed ({e}); parsed what could be recovered")
    walker = _Walker(TextBudget(len(data), "xml"))
    walker.walk(root)
    title = next((b.text for b in walker.blocks if b.kind == "heading"), None)
    metadata = {"root": _local(root)}
    return ParseResult(blocks=walker.blocks, title=title, format="xml", metadata=metadata, warnings=warnings)
