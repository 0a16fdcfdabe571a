"""HTML parsing with lxml: main content only, with its structure.

Why lxml and not unstructured's partition_html: on a 20 KB page lxml parses and walks in a few
milliseconds (partition_html is one to two orders of magnitude slower) and gives direct control
over what is chrome and what is content; tables become Markdown with their header row, which
partition_html does not produce.

Steps: pick the content root (`<main>`, `role=main`, a single `<article>`, Sphinx `div.body`,
`#content`), drop chrome inside it (nav, aside, header, footer, forms, scripts, and elements whose
class/id/role say navigation, sidebar, breadcrumb, cookie, menu, ...), then walk the tree emitting
headings (h1–h6 → levels), paragraphs, list items, tables (Markdown), code (`<pre>`, verbatim)
and captions. Sphinx output comes out clean: headerlink ¶ anchors, sidebars and "related" bars
are removed and API signatures (`dt.sig`) become headings under their section.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import lxml.html
from lxml import etree

from assets.parsing import doxygen
from assets.parsing.markup import refuse_attribute_flood
from assets.parsing.sniff import decode_text, html_declared_charset
from assets.parsing.textutil import clean_inline, markdown_table, table_header_lines
from connectors.documents import Block, BlockKind, ParseResult
from connectors.errors import CorruptDocument, EmptyDocument

__all__ = ["html_blocks", "parse_html"]

_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "canvas",
        "iframe",
        "object",
        "embed",
        "form",
        "button",
        "select",
        "input",
        "textarea",
        "nav",
        "aside",
        "dialog",
        "head",
        "link",
        "meta",
        "footer",
        "map",
        "audio",
        "video",
    }
)
_DROP_ROLES = frozenset(
    {
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "search",
        "menu",
        "menubar",
        "dialog",
        "alertdialog",
        "toolbar",
        "tablist",
        "doc-toc",
    }
)
_CHROME = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|navigation|menu|menubar|sidebar|sphinxsidebar\w*|breadcrumbs?|"
    r"cookies?|consent|gdpr|related|skip|skiplink|share|sharing|social|advert\w*|ads?|promo|"
    r"newsletter|popup|modal|subscribe|toc|masthead|footer|headerlink|linenos|copybutton|"
    # DocBook XSL's page navigation: tables naming the previous and next chapters
    r"navheader|navfooter)"
    r"(?:$|[\s_-])",
    re.IGNORECASE,
)
# Texinfo's node header, "Next: <a>…</a>, Previous: <a>…</a>, Up: <a>…</a> [Contents][Index]", in
# a <div class="header"> (a class that elsewhere holds a page's real title): known by its labels
_NAV_LABEL = re.compile(r"\s*(?:Next|Previous|Prev|Up|Forward|Back)\s*:", re.IGNORECASE)
_NAV_LABELS = re.compile(r"\b(?:Next|Previous|Prev|Up|Forward|Back|Contents|Index|Top|Home)\s*:?", re.IGNORECASE)
_ONLY_PUNCT = re.compile(r"[\W_]*")
_NAV_TAGS = frozenset({"p", "div", "td"})
_NAV_MAX_CHARS = 500
_NAV_MAX_ELEMENTS = 200  # a navigation line is a label and a few links, not hundreds of elements
# A footnote reference: a fragment link or superscript holding only a number ("8", "[3]", "(12)")
_FOOTNOTE_MARK = re.compile(r"\s*[\[(]?\d{1,3}[\])]?\s*")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_QUOTE_CLASS = re.compile(r"gmail_quote|yahoo_quoted|moz-cite-prefix|OutlookMessageHeader", re.I)
_QUOTE_ID = re.compile(r"divRplyFwdMsg|appendonsend|reply-intro", re.I)
_KEEP = frozenset({"html", "body", "main", "article"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "pre",
        "table",
        "blockquote",
        "figure",
        "figcaption",
        "hr",
        "address",
        "details",
        "summary",
        "center",
        "fieldset",
        "caption",
        "body",
        "tbody",
        "thead",
        "tr",
        "td",
        "th",
        "legend",
        "hgroup",
        "menu",
    }
)
_LIST_NESTED = frozenset({"ul", "ol", "pre", "table", "dl", "blockquote"})
_ROOT_XPATHS = (
    "//main",
    "//*[@role='main']",
    "//article",
    "//div[contains(concat(' ', normalize-space(@class), ' '), ' body ')]",
    "//*[@id='content' or @id='main-content' or @id='main']",
)
_LANG_CLASS = re.compile(r"(?:language|lang|highlight|sourceCode)-([A-Za-z0-9_+#.-]+)")
# (?<!\s): the match starts at the first space of a run, never inside it (a run of spaces
# before a non-anchor was retried from every position: quadratic)
_TRAILING_ANCHOR = re.compile(r"(?<!\s)\s*[¶#§]\s*$")
_MAX_DEPTH = 150


# A chrome marker is a short class or id ("nav", "sidebar-toc", "skip-link"). A longer id is a
# slug of the content's own words (texinfo names every node's div after its title: "How do I
# skip as many chars as possible?" becomes an id holding "skip"), never a marker.
_MAX_MARKER_WORDS = 3
_WORD_SPLIT = re.compile(r"[\s_-]+")


_NON_WORD = re.compile(r"[\W_]+")


def _attrs(el: etree._Element) -> str:
    """The element's class names and its id, the id only when it can be a marker: short, and not
    the slug of a heading (a heading's own id, or a section's named after its first heading:
    rustdoc's `<h2 id="related-macros">` and a `<section id="related-work">` were dropped as
    "related" links, with all they held; a pass over rustdoc, Doxygen and Javadoc pages)."""
    ident = el.get("id", "")
    words = [w for w in _WORD_SPLIT.split(ident) if w]
    if len(words) > _MAX_MARKER_WORDS or (words and _is_slug(el, words)):
        ident = ""
    return f"{el.get('class', '')} {ident}"


_SLUG_LOOKAHEAD = 16  # elements into a section its heading may open it at


def _is_slug(el: etree._Element, words: list[str]) -> bool:
    """Whether an id of `words` is the slug of the heading that `el` is, or of the heading that
    opens it and names it in two words or more: a one-word id over a heading of its own word is
    the widget it names (`div#newsletter` "Newsletter"), and over a heading that says more
    ("Related posts") it is a marker all the same. The heading is looked for among the section's
    first elements only: nested elements each searching their whole subtree was quadratic."""
    if not _CHROME.search(" ".join(words)):
        return False  # no marker either way: not worth a look at the headings
    if el.tag in _HEADINGS:
        return True
    if len(words) < 2:
        return False
    head = next((h for h in itertools.islice(el.iter(), _SLUG_LOOKAHEAD) if h.tag in _HEADINGS), None)
    if head is None:
        return False
    said = [w for w in _NON_WORD.split(head.text_content()[:200].lower()) if w]
    return said == [w.lower() for w in words]


# Chrome known by a whole class name only (a word of a longer one is content: rustdoc's
# `<section class="method has-srclink">` holds the method): rustdoc's "source" links, "Run"
# buttons, "Expand description" toggles and version notes; Sphinx viewcode's "[source]" links,
# pydata-sphinx-theme's previous/next footer, furo's "Back to top" and "View this page"; RDoc's
# "click to toggle source"
_CHROME_CLASSES = frozenset({"srclink", "test-arrow", "hideme", "rightside", "out-of-band", "viewcode-link",
                             "prev-next-area", "back-to-top", "view-this-page", "method-click-advice"})
_MORE = re.compile(r"\s*(?:Read more|More\.\.\.|More…|\[more\])\s*", re.IGNORECASE)


def _is_chrome(el: etree._Element, keep_headers: bool) -> bool:
    tag = el.tag
    if tag in _KEEP:
        return False
    if tag in _DROP_TAGS:
        return True
    if tag == "header":
        # a section's own <header> (RDoc's "Public Instance Methods") heads it: not the page's banner
        if any(a.tag in ("section", "article") for a in el.iterancestors()):
            return not any(el.find(f".//{h}") is not None for h in _HEADINGS)
        return not keep_headers or (el.find(".//h1") is None and el.find(".//h2") is None)
    role = el.get("role")
    if role and role.lower() in _DROP_ROLES:
        return True
    if (el.get("hidden") is not None or (el.get("aria-hidden") == "true" and tag != "span")) \
            and (role or "").lower() != "tabpanel":
        return True  # a tab panel is hidden until chosen (sphinx-tabs' Windows commands): content
    style = el.get("style")
    if style and _HIDDEN_STYLE.search(style):
        return True
    attrs = _attrs(el)
    if attrs.strip() and _CHROME.search(attrs):
        return True
    if not _CHROME_CLASSES.isdisjoint(el.get("class", "").split()):
        return True
    if tag == "a" and _MORE.fullmatch(el.text_content()) and el.getnext() is None \
            and _ONLY_PUNCT.fullmatch(el.tail or ""):
        return True  # "Read more" / "More...": a link ending every summary (rustdoc, Doxygen), not a sentence's words
    return tag in _NAV_TAGS and bool(el.text) and _NAV_LABEL.match(el.text) is not None and _is_nav_line(el)


def _is_nav_line(el: etree._Element) -> bool:
    """A short element opening with a navigation label that holds nothing but labels, links
    and punctuation ("Next: <a>…</a>, Up: <a>…</a> [<a>Contents</a>]"); a sentence that opens
    with "Next:" and links a command or two is prose."""
    inner = list(itertools.islice(el.iterdescendants(), _NAV_MAX_ELEMENTS + 1))
    if len(inner) > _NAV_MAX_ELEMENTS:  # read before its text: at every level of 2,000 nested
        return False                    # "Next:" divs over 10,000 links, 102 KB took 55 s
    text = el.text_content()
    links = [a for a in inner if a.tag == "a"]
    if len(text) > _NAV_MAX_CHARS or not links:
        return False
    rest = text
    for a in links:
        rest = rest.replace(a.text_content(), " ", 1)
    return _ONLY_PUNCT.fullmatch(_NAV_LABELS.sub(" ", rest)) is not None


def _mark_footnote(el: etree._Element) -> None:
    """A footnote reference glued to its word ("m4<sup>8</sup>" read "m48") gets a space."""
    linked = el.tag == "a" and el.get("href", "").startswith("#")
    if (el.tag == "sup" or linked) and _FOOTNOTE_MARK.fullmatch(el.text_content()):
        el.text = " " + (el.text or "")


def _content_root(doc: etree._Element) -> tuple[etree._Element, bool]:
    """The element holding the main content, and whether it is more specific than <body>."""
    body = doc.find("body")
    body = body if body is not None else doc
    for xpath in _ROOT_XPATHS:
        found = doc.xpath(xpath)
        if not found or (xpath == "//article" and len(found) > 1):
            continue
        root = found[0]
        inner = len(root.text_content().strip())
        if inner >= 200 or inner >= 0.2 * len(body.text_content().strip()):
            return root, True
    return body, False


def _clean(root: etree._Element, keep_headers: bool, quotes: list[str] | None) -> None:
    """Drop chrome below `root` (in place); collect quoted email history into `quotes`."""
    doomed: list[etree._Element] = []
    stack = list(reversed(root))
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            doomed.append(el)  # comments, processing instructions
            continue
        if el.tag == "br":
            el.tail = "\n" + (el.tail or "")
            continue
        if el.tag in ("sup", "a"):
            _mark_footnote(el)
        elif el.tag == "span" and "classifier" in el.get("class", "").split():
            el.text = " : " + (el.text or "")  # numpydoc's "chunks : int, tuple": the theme's CSS writes the colon
        if quotes is not None and (
            el.tag == "blockquote"
            or _QUOTE_CLASS.search(el.get("class", ""))
            or _QUOTE_ID.search(el.get("id", ""))
        ):
            doomed.append(el)
            quotes.append(el.text_content())
            continue
        if _is_chrome(el, keep_headers):
            doomed.append(el)
            continue
        if el.tag in _HEADINGS:
            # Inside a heading only permalink anchors are chrome: Sphinx wraps the heading text
            # itself in <a class="toc-backref">, which the class heuristics would otherwise drop.
            doomed.extend(a for a in el.iter("a") if "headerlink" in a.get("class", ""))
            for br in el.iter("br"):  # a heading is one line: its breaks part words ("Uses of Class<br>X")
                br.tail = " " + (br.tail or "")
            continue
        stack.extend(reversed(el))  # only descend into what is kept
    for el in doomed:
        el.drop_tree()  # keeps the tail text


def _code_language(el: etree._Element) -> str | None:
    node: etree._Element | None = el
    for _ in range(4):
        if node is None:
            break
        m = _LANG_CLASS.search(node.get("class", ""))
        if m and m.group(1).lower() not in ("default", "notranslate"):
            return m.group(1).lower()
        code = node.find("code")
        if code is not None and (m := _LANG_CLASS.search(code.get("class", ""))):
            return m.group(1).lower()
        node = node.getparent()
    return None


def _text_without(el: etree._Element, skip: frozenset[str]) -> str:
    """The text of `el` and its descendants, leaving out those tagged `skip` (their tails kept).
    Without recursion, as `_outermost`: a list item inside 1,500 unclosed `<font>` tags (a legacy
    page, 27 KB) was a RecursionError that refused the page."""
    parts: list[str] = []
    todo: list[etree._Element | str] = [el]  # elements to read, and tails to write after them
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        parts.append(item.text or "")
        for child in reversed(item):
            todo.append(child.tail or "")
            if isinstance(child.tag, str) and child.tag not in skip:
                todo.append(child)
            elif isinstance(child.tag, str):
                todo.append(" ")  # what was left out parted the words around it ("Areas:<ul>…</ul>Note")
    return "".join(parts)


def _outermost(el: etree._Element, tags: frozenset[str]) -> list[etree._Element]:
    """Descendants of `el` with a tag in `tags` that are not inside another such descendant."""
    found: list[etree._Element] = []
    todo = [c for c in reversed(el) if isinstance(c.tag, str)]
    while todo:
        child = todo.pop()
        if child.tag in tags:
            found.append(child)
        else:
            todo.extend(c for c in reversed(child) if isinstance(c.tag, str))
    return found


# the admonitions DocBook XSL (and the HTML of other toolchains) wraps in a <div> of that class
_ADMONITIONS = frozenset({"note", "tip", "important", "caution", "warning", "danger", "attention", "hint"})


def _classes(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def _drop_qanda_toc(root: etree._Element) -> None:
    """Drop the question list DocBook XSL puts at the top of a rendered FAQ (`div.qandaset`'s
    `<dl>` of links to its own entries): it repeats every question word for word, so a query
    found the list before the entry that answers it."""
    for qandaset in root.iterdescendants("div"):
        if "qandaset" not in _classes(qandaset):
            continue
        if not any("question" in _classes(tr) for tr in qandaset.iterdescendants("tr")):
            continue  # the list is all there is of the entries: keep it
        for dl in [c for c in qandaset if c.tag == "dl"]:
            links = list(dl.iterdescendants("a"))
            if links and all("#" in (a.get("href") or "") for a in links):
                dl.drop_tree()


def _cells(tr: etree._Element) -> list[str]:
    cells: list[str] = []
    for cell in tr:
        if cell.tag not in ("td", "th"):
            continue
        cells.append(clean_inline(cell.text_content()))
        try:
            span = int(cell.get("colspan", "1"))
        except ValueError:
            span = 1
        cells.extend([""] * (min(span, 50) - 1))
    return cells


@dataclass
class _Walker:
    """Depth-first walk that turns content elements into Blocks."""

    blocks: list[Block] = field(default_factory=list)
    level: int = 0  # level of the last heading seen (signatures nest below it)
    label: str = ""  # an admonition title waiting to prefix the next paragraph
    handlers: dict[str, Callable[[etree._Element, int], None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.handlers = {
            **dict.fromkeys(_HEADINGS, self.heading),
            "p": self.paragraph,
            "ul": self.list_,
            "ol": self.list_,
            "pre": self.pre,
            "table": self.table,
            "figcaption": self.caption,
            "caption": self.caption,
            "dt": self.term,
            "hr": lambda el, depth: None,
        }

    def emit(
        self, kind: BlockKind, text: str, level: int = 0, meta: dict[str, Any] | None = None
    ) -> None:
        text = text if kind in ("code", "table") else clean_inline(text)
        if self.label and kind == "paragraph" and text:
            text, self.label = f"{self.label}: {text}", ""
        if text.strip():
            self.blocks.append(Block(kind, text, level=level, meta=meta or {}))

    def walk(self, el: etree._Element, depth: int = 0) -> None:
        tag = el.tag
        if not isinstance(tag, str):
            return
        handler = self.handlers.get(tag)
        if depth > _MAX_DEPTH:
            self.emit("paragraph", el.text_content())
        elif handler:
            handler(el, depth)
        else:
            self.container(el, depth)

    def container(self, el: etree._Element, depth: int) -> None:
        """Walk block children; loose inline text between them becomes paragraphs."""
        buf: list[str] = [el.text or ""]
        for child in el:
            if isinstance(child.tag, str) and child.tag in _BLOCK_TAGS:
                self.emit("paragraph", "".join(buf))
                buf = []
                self.walk(child, depth + 1)
            elif isinstance(child.tag, str):
                buf.append(child.text_content())
            buf.append(child.tail or "")
        self.emit("paragraph", "".join(buf))

    def heading(self, el: etree._Element, depth: int) -> None:
        parent = el.getparent()
        if parent is not None and _ADMONITIONS.intersection(_classes(parent)):
            # DocBook XSL's `<div class="tip"><h3 class="title">Tip</h3>`: a label, as Sphinx's
            # admonition-title paragraph is; read as a heading it filed the rest of its section
            # under "Tip" (PostgreSQL's CREATE DATABASE parameters, 81 chunks in 21 of its
            # command pages: an unseen-corpus pass)
            self.label = clean_inline(el.text_content())
            return
        self.label = ""  # a label whose admonition held no paragraph labels nothing past it
        self.level = _HEADINGS[el.tag]
        self.emit("heading", _TRAILING_ANCHOR.sub("", el.text_content()), level=self.level)

    def paragraph(self, el: etree._Element, depth: int) -> None:
        if any(isinstance(c.tag, str) and c.tag in ("pre", "table", "ul", "ol") for c in el):
            self.container(el, depth)  # malformed nesting: keep the structure inside
        elif "admonition-title" in el.get("class", ""):
            self.label = clean_inline(el.text_content())  # Sphinx "Note" / "Warning" label
        else:
            self.emit("paragraph", el.text_content())

    def list_(self, el: etree._Element, depth: int) -> None:
        ordered = el.tag == "ol"
        # lxml filters the ancestors in C: a Python test of each one, for each of 40,000 lists deep
        # under a page's unclosed <font> tags, took 22 s
        nesting = sum(1 for _ in el.iterancestors("ul", "ol"))
        for li in el:
            if not isinstance(li.tag, str):
                continue
            if li.tag != "li":
                self.walk(li, depth + 1)
                continue
            if next(li.iter(*_HEADINGS), None) is not None:
                # a list used for layout (Javadoc's `ul.blockList`: a class, each member under its
                # <h4>): an item holding headings is a section, not an item of one line, or every
                # member's name was glued to its description and 3,274 of 3,575 headings were lost
                self.container(li, depth)
                continue
            meta = {"depth": nesting, "ordered": ordered}
            self.emit("list_item", _text_without(li, _LIST_NESTED), meta=meta)
            for child in _outermost(li, _LIST_NESTED):
                self.walk(child, depth + 1)

    def pre(self, el: etree._Element, depth: int) -> None:
        text = el.text_content().strip("\n")
        lang = _code_language(el)
        self.emit("code", text, meta={"language": lang} if lang else None)

    def table(self, el: etree._Element, depth: int) -> None:
        rows_el = el.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
        if any("question" in _classes(tr) for tr in rows_el):
            self.qandaset(rows_el, depth)
            return
        rows = [_cells(tr) for tr in rows_el]
        rows = [r for r in rows if any(r)]
        # a table holding another, or a heading (gtk-doc sets every page's title and one-line
        # summary in a two-cell table), lays out a page: it is no table of data
        layout = el.find(".//table") is not None or any(True for _ in el.iterdescendants(*_HEADINGS))
        if layout or not rows or max(len(r) for r in rows) < 2:
            self.container(el, depth)  # a layout table: read it as ordinary content
            return
        caption = el.find("caption")
        if caption is not None:
            self.caption(caption, depth)
        text = markdown_table(rows)
        self.emit("table", text, meta={"table_header": table_header_lines(text)})

    def qandaset(self, rows: list[etree._Element], depth: int) -> None:
        """A DocBook FAQ as DocBook XSL renders it: a table whose rows are a division's title
        (`tr.qandadiv`), a question (`tr.question`: a "1.1." label cell, the question cell) or its
        answer (`tr.answer`). Each question becomes a heading one level below its division and
        its answer the section under it, so an entry is a unit of its own as a reader sees it;
        read as a table, a division's entries were one Markdown table, cut wherever it filled a
        chunk, with no question as a heading."""
        base = self.level
        for tr in rows:
            cells = [c for c in tr if c.tag in ("td", "th")]
            if not cells:
                continue
            kind, body = _classes(tr), cells[-1]
            if "qandadiv" in kind:
                self.container(body, depth + 1)  # its <hN class="title"> sets the division's level
                base = self.level
            elif "question" in kind:
                self.level = min(6, base + 1)
                self.emit("heading", _text_without(body, _LIST_NESTED), level=self.level)
                for child in _outermost(body, _LIST_NESTED):  # a code sample the question quotes
                    self.walk(child, depth + 1)
            elif "answer" in kind:
                self.container(body, depth + 1)

    def caption(self, el: etree._Element, depth: int) -> None:
        self.emit("caption", el.text_content())

    def term(self, el: etree._Element, depth: int) -> None:
        text = _TRAILING_ANCHOR.sub("", el.text_content())
        if "sig" in el.get("class", "").split():  # Sphinx API signature
            # Methods sit in a <dd> of their class: nest them one level deeper per <dd>.
            nesting = sum(1 for _ in el.iterancestors("dd"))
            level = min(6, self.level + 1 + nesting)
            self.emit("heading", text, level=level, meta={"signature": True})
        else:
            self.emit("paragraph", text, meta={"term": True})


# A doctype's internal subset (`<!DOCTYPE html [ <!ENTITY ...> ]>`, XHTML an XML tool wrote): the
# HTML parser ends the doctype at the first ">" and left "]>" as the page's first words
_INTERNAL_SUBSET = re.compile(r"^(\s*<!DOCTYPE[^\[>]*)\[[^\]]*\]\s*>", re.IGNORECASE)


def _parse_tree(html_text: str) -> etree._Element:
    html_text = re.sub(r"^\s*<\?xml[^>]*\?>", "", html_text)  # lxml rejects str + encoding decl
    html_text = _INTERNAL_SUBSET.sub(r"\1>", html_text, count=1)
    # huge_tree: past 256 levels libxml2 stops building the tree and the rest of the page is lost
    # without a word (a legacy page of unclosed <font> tags nests one level per paragraph); the
    # walker bounds its own recursion (_MAX_DEPTH)
    refuse_attribute_flood(html_text, "HTML")
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)
    try:
        doc = lxml.html.document_fromstring(html_text, parser=parser)
    except (etree.ParserError, ValueError) as e:
        raise EmptyDocument(f"HTML has no parsable content: {e}") from None
    if any("Excessive depth" in e.message for e in parser.error_log):  # even huge_tree stops at 2,048
        raise CorruptDocument("HTML nests elements more than 2,048 levels deep: what lies deeper cannot "
                              "be read, so the page is not indexed in part")
    return doc


def html_blocks(
    html_text: str, *, quotes: list[str] | None = None
) -> tuple[list[Block], str | None]:
    """Blocks of the main content of an HTML document, and its <title>.

    With `quotes` (a list), quoted email history (`<blockquote>`, Gmail/Outlook quote
    containers) is cut out and its text appended to `quotes` instead.
    """
    doc = _parse_tree(html_text)
    title_el = doc.find(".//title")
    page_title = clean_inline(title_el.text_content()) if title_el is not None else None
    doxygen_root = doxygen.content_root(doc)
    root, specific = (doxygen_root, True) if doxygen_root is not None else _content_root(doc)
    walker = _Walker()
    if specific and page_title and (lead := _page_heading(root, page_title)) is not None:
        _clean(lead, keep_headers=True, quotes=quotes)
        walker.walk(lead)
    _clean(root, keep_headers=specific, quotes=quotes)
    _drop_qanda_toc(root)
    walker.walk(root)
    return walker.blocks, page_title or None


_LEAD_MAX_CHARS = 1500  # a page heading with a line or two under it, not a second content area


def _page_heading(root: etree._Element, title: str) -> etree._Element | None:
    """The page's own heading block, when the content root leaves it out: the nearest earlier
    sibling of the root holding an <h1> that names the page, i.e. its text and the <title>'s
    begin alike (asciidoc's `div#header` beside `div#content`: "git-daemon(1) Manual Page" for
    the title "git-daemon(1)", with the manual page's NAME line, "git-daemon - A really simple
    server for Git repositories": the one sentence that says what the page is). A site's banner
    ("My Blog" on "A post - My Blog") or a hero ("Welcome to Acme") names the site, not the page,
    and stays out; so does chrome, and a block too long to be a heading block."""
    parent = root.getparent()
    if parent is None or root.find(".//h1") is not None:
        return None
    siblings = list(parent)
    for el in reversed(siblings[: siblings.index(root)]):
        if not isinstance(el.tag, str) or el.tag in ("header", "nav", "aside"):
            continue
        h1 = el if el.tag == "h1" else el.find(".//h1")
        if h1 is None:
            continue
        named, page = _norm_heading(h1.text_content()), _norm_heading(title)
        if (named and page and (named.startswith(page) or page.startswith(named))
                and not _is_chrome(el, keep_headers=True) and len(el.text_content().strip()) <= _LEAD_MAX_CHARS):
            return el
        return None  # the nearest heading block is not the page's: nothing further up is
    return None


def _norm_heading(text: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


_META = re.compile(r"<meta\s[^>]*>", re.IGNORECASE)
_BODY = re.compile(r"<body[\s>]", re.IGNORECASE)
_REFRESH = re.compile(r"""http-equiv\s*=\s*["']?refresh\b""", re.IGNORECASE)
# the spaces around `=` and the quote are taken possessively: two `\s*` splitting one run of
# spaces made a 60 KB `content=` 33 s of backtracking (a fuzzing pass)
_REFRESH_TO = re.compile(
    r"""content\s*+=\s*+["']?+\s*+(\d+(?:\.\d*)?)\s*[;,]\s*(?:url\s*=\s*)?["']?([^"'>\s]+)""", re.IGNORECASE)
_REDIRECT_MAX_WAIT = 2  # seconds: a page that moves on at once (0 or 1 s), not one that refreshes itself
_REDIRECT_MAX_CHARS = 500  # ...and that says no more than "this page has moved to X"
_HEAD_MAX_CHARS = 65536


def redirect_target(html_text: str, blocks: list[Block], name: str = "") -> str | None:
    """Where a redirect page sends its reader, or None for a page with content of its own.

    Generated manuals and documentation sites leave a stub page behind for every moved or
    aliased page (Texinfo writes one per index entry and node alias: 49 of the flex manual's
    215 files; Sphinx and MkDocs redirect plugins do the same): a meta refresh with no delay and
    one line of text. Such a page is no answer to anything, and in a result list it took the
    place of the page it points to. Hugo aliases and Sphinx redirect extensions write no text at
    all. A page that refreshes itself (`name`, its file name) is a page."""
    if sum(len(b.text) for b in blocks) > _REDIRECT_MAX_CHARS:
        return None
    head = html_text[:_HEAD_MAX_CHARS]
    if body := _BODY.search(head):
        head = head[: body.start()]
    for tag in _META.findall(_without_comments(head)):
        if _REFRESH.search(tag) and (m := _REFRESH_TO.search(tag)) and float(m.group(1)) <= _REDIRECT_MAX_WAIT:
            target = m.group(2)
            return None if name and _same_page(name, target) else target
    return None


def _same_page(name: str, target: str) -> bool:
    """Whether `target`, read relative to the page `name`, is that page: rustdoc's re-export
    stubs point to a file of the same name in another folder (`../../../alloc/ffi/
    struct.CString.html`), and were taken for pages refreshing themselves."""
    path = target.split("#")[0].split("?")[0]
    if "://" in path or path.startswith("/"):  # where this page is served is unknown: by its name
        return PurePosixPath(path).name == PurePosixPath(name).name
    here = PurePosixPath(name)
    return posixpath.normpath(str(here.parent / path)) == posixpath.normpath(str(here))


def _without_comments(text: str) -> str:
    """`text` without its `<!-- ... -->` comments (an unclosed one runs to the end), in one pass:
    a lazy pattern retried from every `<!--` of an unclosed run was quadratic."""
    out: list[str] = []
    i = 0
    while (start := text.find("<!--", i)) >= 0:
        out.append(text[i:start])
        end = text.find("-->", start + 4)
        if end < 0:
            return "".join(out) + text[start:]  # unclosed: kept, as the pattern left it
        i = end + 3
    out.append(text[i:])
    return "".join(out)


# The markup of a generated index: Sphinx's general and module indexes, Texinfo's @printindex
# (`index-cp` tables, newer `cp-entries-printindex`), Javadoc's index-all (`<dl class="index">`).
# A tag is read to at most 2,000 characters and its class apart: one pattern for both, with two
# open runs, took 28 s on 5,000 unclosed "<table class='a " (a hostile-input check).
_LIST_TAG = re.compile(r"<(?:table|dl)\b[^<>]{0,2000}>", re.I)
_CLASS_ATTR = re.compile(r"""\bclass\s*=\s*["']?([^"'>]*)""", re.I)
_INDEX_CLASS = re.compile(r"genindextable|modindextable|index|index-[a-z]{2}|[a-z]{2}-entries-printindex", re.I)


def _index_markup(html_text: str) -> bool:
    if "index" not in html_text.lower():
        return False
    for tag in _LIST_TAG.finditer(html_text):
        if (m := _CLASS_ATTR.search(tag.group())) and any(_INDEX_CLASS.fullmatch(c) for c in m.group(1).split()):
            return True
    return False


def is_index_page(html_text: str, blocks: list[Block]) -> bool:
    """Whether the page is a generated index (a list of terms linking to the pages that explain
    them) rather than content. Kept, never chunked: indexed, it held every term of a manual in a
    few chunks and took the first place from the page a term is explained on (flex's concept
    index: index-term questions' MRR 0.75 -> 0.61). Told by its markup, on a page with few
    headings beside its letters (a content page that embeds a small index table keeps its
    text)."""
    if not _index_markup(html_text):
        return False
    headings = sum(b.kind == "heading" and len(b.text.strip()) > 2 for b in blocks)  # not "A", "B", ...
    return headings <= 3 or headings <= 0.05 * len(blocks)


def parse_html(data: bytes | str, name: str = "") -> ParseResult:
    """Parse an HTML page (bytes are decoded via BOM, <meta charset>, UTF-8, detection); `name`,
    the file name, tells a page that refreshes itself from a redirect."""
    text = data if isinstance(data, str) else decode_text(data, html_declared_charset(data))[0]
    blocks, page_title = html_blocks(text)
    h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    first = next((b.text for b in blocks if b.kind == "heading"), None)
    metadata: dict[str, Any] = {"html_title": page_title} if page_title else {}
    if target := redirect_target(text, blocks, name):
        metadata["redirect"] = target  # parsed and kept, never chunked (assets/chunk_stage.py)
    elif is_index_page(text, blocks):
        metadata["index_page"] = True  # ... and so is a generated index
    return ParseResult(
        blocks=blocks, title=h1 or _without_site_name(page_title, first) or first, format="html", metadata=metadata
    )


_TITLE_PARTS = re.compile(r"\s+(?:[-|\u2013\u2014\u00b7:]{1,2})\s+")


def _without_site_name(page_title: str | None, first: str | None) -> str | None:
    """The <title> less the site's name, where a page without an <h1> opens with a heading that
    is one side of it ("How to Write Tests - The Rust Programming Language" over the heading "How
    to Write Tests": mdBook, 80 of the Rust book's 102 pages, an unseen-corpus pass; the name led
    every chunk's heading path on those pages and not on the others). Else the <title> as is."""
    if not page_title or not first:
        return page_title
    parts = _TITLE_PARTS.split(page_title)
    if len(parts) > 1:
        heading = _norm_heading(first)
        for part in (parts[0], parts[-1]):
            if _norm_heading(part) == heading:
                return part.strip()
    return page_title
