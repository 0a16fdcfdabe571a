"""Doxygen's HTML, rewritten into the plain structure the HTML walker reads.

Doxygen writes API references for C, C++ and many other languages in a layout of its own, and
read as generic HTML a reference lost most of its structure (a pass over libsigc++'s 277 pages,
Doxygen 1.9.4): the page title is a `div.title` (no page had a heading for its class), the
content sits in `div.contents` (so the banner and link bars were indexed on every page), code
examples are `div.fragment` of `div.line` (each line a paragraph, their hover tooltips as
text), member titles read "◆ connect() [1/2]" at the level of their section, signatures came
out as Markdown tables, and the summary tables split a return type from its member.

`content_root` turns a Doxygen page (known by its generator tag) into headings, code and paragraphs in
place, before the walker sees it: the title an `<h1>` first in the content, member titles one
level below their section, each signature and each code example a `<pre>`, each summary row a
paragraph. Nothing else is read differently.
"""

from __future__ import annotations

import re

from lxml import etree

__all__ = ["content_root", "is_doxygen"]

_TIGHT_OPEN, _TIGHT_CLOSE = re.compile(r"\(\s+"), re.compile(r"\s+\)")
_TOOLTIPS = ("ttc",)  # a code example's hover tooltips ("Definition: signal.h:2803")
_DIAGRAMS = ("dynheader", "dyncontent")  # "Inheritance diagram for ...", its image and "[legend]"


def is_doxygen(doc: etree._Element) -> bool:
    return any((m.get("content") or "").startswith("Doxygen") for m in doc.iter("meta")
               if (m.get("name") or "").lower() == "generator")


def _classed(doc: etree._Element, tag: str, cls: str) -> list[etree._Element]:
    return list(doc.xpath(f".//{tag}[contains(concat(' ', normalize-space(@class), ' '), ' {cls} ')]"))


def _words(el: etree._Element) -> str:
    return " ".join(el.text_content().split())


def _replace(old: etree._Element, tag: str, text: str) -> etree._Element:
    new = etree.Element(tag)
    new.text = text
    new.tail = old.tail
    parent = old.getparent()
    if parent is not None:
        parent.replace(old, new)
    return new


def content_root(doc: etree._Element) -> etree._Element | None:
    """The content of a Doxygen page, rewritten (module docstring); None for any other page."""
    if not is_doxygen(doc):
        return None
    root = next(iter(_classed(doc, "div", "contents")), None)
    if root is None:
        return None
    for el in [e for cls in (*_TOOLTIPS, *_DIAGRAMS) for e in _classed(root, "div", cls)]:
        if el.getparent() is not None:
            el.drop_tree()  # its tail, text outside it, stays
    for a in [a for a in root.iter("a") if _words(a) in ("More...", "More…")]:  # on every summary row
        a.drop_tree()
    for label in _classed(root, "span", "mlabel"):  # "inline", "explicit": labels, apart
        label.tail = " " + (label.tail or "")
    for frag in _classed(root, "div", "fragment"):
        lines = _classed(frag, "div", "line")
        _replace(frag, "pre", "\n".join(line.text_content() for line in lines) if lines else frag.text_content())
    for proto in _classed(root, "div", "memproto"):  # a signature laid out as a table, one cell a part
        parts = [_words(el) for el in proto.iter("div", "td") if _signature_part(el)] or [_words(proto)]
        _replace(proto, "pre", _TIGHT_CLOSE.sub(")", _TIGHT_OPEN.sub("(", " ".join(c for c in parts if c))))
    for span in [*_classed(root, "span", "permalink"), *_classed(root, "span", "overload")]:
        span.drop_tree()
    for title in _classed(root, "h2", "memtitle"):
        title.tag = "h3"  # a member, under its section's h2 ("Member Function Documentation")
    for table in _classed(root, "table", "memberdecls"):
        _summary_rows(table)
    heading = next(iter(_classed(doc, "div", "title")), None)
    for groups in _classed(heading, "div", "ingroups") if heading is not None else []:
        groups.getparent().remove(groups)  # "Signals": the module the class is in, not its title
    if heading is not None:  # also over empty contents: the class or directory exists, by its name
        h1 = etree.Element("h1")
        h1.text = _words(heading)
        root.insert(0, h1)
    return root


def _signature_part(el: etree._Element) -> bool:
    """A piece of a member's signature, read once: its `template<...>` line (outside the table)
    and each innermost cell (a labelled member nests its signature's table in a cell beside the
    labels: read whole, every part came twice; a review counted 4,938 such members)."""
    if el.tag == "div":
        return "memtemplate" in (el.get("class") or "").split()
    return next(el.iterdescendants("td"), None) is None


def _summary_rows(table: etree._Element) -> None:
    """A member summary table as what it says: its section headings, then one paragraph per
    member ("iterator connect (const slot_type &slot_)") and one per description."""
    parent = table.getparent()
    if parent is None:
        return
    at = parent.index(table)
    made: list[etree._Element] = []
    for tr in table.iter("tr"):
        head = next(tr.iter("h2", "h3"), None)
        text = _words(head) if head is not None else _words(tr)
        if not text:
            continue
        el = etree.Element(head.tag if head is not None else "p")
        el.text = text
        made.append(el)
    for n, el in enumerate(made):
        parent.insert(at + n, el)
    parent.remove(table)
