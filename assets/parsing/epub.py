"""EPUB e-books: the package's XHTML chapters in spine order, through the HTML parser.

META-INF/container.xml names the package document (OPF); its manifest maps ids to files and
its spine gives the reading order. Each spine item (XHTML) is parsed with `html_blocks`, so
headings, lists, tables and code come out as for any web page; blocks carry meta
{"chapter": spine position, "href": file}. The navigation document (EPUB 3 `nav`) and NCX are
skipped: they only repeat the headings. Title: the OPF `dc:title`.

DRM: a META-INF/encryption.xml that encrypts anything other than fonts (font obfuscation is
harmless) means the text is unreadable → EncryptedDocument. A package without a container,
OPF or any readable chapter is CorruptDocument.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from typing import Any, cast
from urllib.parse import unquote

from lxml import etree

from assets.parsing.html import html_blocks
from assets.parsing.odf import read_member
from assets.parsing.package import check_package
from assets.parsing.sniff import decode_text, html_declared_charset
from assets.parsing.textutil import TextBudget, clean_inline
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument, EmptyDocument, EncryptedDocument, ParseError

__all__ = ["parse_epub"]

_FONT_OBFUSCATION = {
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
}
_HTML_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True, recover=True)


def _local(el: etree._Element) -> str:
    return etree.QName(el.tag).localname if isinstance(el.tag, str) else ""


def _check_drm(zf: zipfile.ZipFile) -> None:
    try:
        raw = read_member(zf, "META-INF/encryption.xml")
    except KeyError:
        return
    root = etree.fromstring(raw, parser=_parser())
    if root is None:
        return
    encrypted = []
    for method in root.iter():
        if _local(method) == "EncryptionMethod":
            algorithm = method.get("Algorithm", "")
            if algorithm not in _FONT_OBFUSCATION:
                encrypted.append(algorithm)
    if encrypted:
        raise EncryptedDocument(
            f"EPUB content is encrypted (DRM, {encrypted[0] or 'unknown algorithm'}); "
            "it cannot be read without the rights holder's key"
        )


def _opf_path(zf: zipfile.ZipFile) -> str:
    try:
        container = etree.fromstring(read_member(zf, "META-INF/container.xml"), parser=_parser())
    except KeyError:
        container = None
    if container is not None:
        for el in container.iter():
            if _local(el) == "rootfile" and el.get("full-path"):
                return cast(str, el.get("full-path", ""))
    opfs = [n for n in zf.namelist() if n.lower().endswith(".opf")]
    if opfs:
        return opfs[0]
    raise CorruptDocument("EPUB has no META-INF/container.xml and no .opf package document")


def _spine(zf: zipfile.ZipFile, opf_path: str) -> tuple[list[str], str | None, dict[str, Any]]:
    try:
        opf = etree.fromstring(read_member(zf, opf_path), parser=_parser())
    except KeyError:
        raise CorruptDocument(f"EPUB package document {opf_path} is missing") from None
    if opf is None:
        raise CorruptDocument(f"EPUB package document {opf_path} is not XML")
    base = posixpath.dirname(opf_path)
    manifest: dict[str, tuple[str, str, str]] = {}
    title = None
    metadata: dict[str, Any] = {}
    for el in opf.iter():
        name = _local(el)
        if name == "item":
            raw = unquote(el.get("href", "")).split("#", 1)[0]  # "ch1.xhtml#sec" → the file
            href = posixpath.normpath(posixpath.join(base, raw))
            manifest[el.get("id", "")] = (href, el.get("media-type", ""), el.get("properties", ""))
        elif name == "title" and title is None and el.text:
            title = clean_inline(el.text)
        elif name in ("creator", "language", "publisher", "date") and el.text:
            metadata.setdefault(name if name != "creator" else "author", clean_inline(el.text))
    spine: list[str] = []
    for el in opf.iter():
        if _local(el) == "itemref":
            item = manifest.get(el.get("idref", ""))
            if item and (item[1] in _HTML_TYPES or not item[1]) and "nav" not in item[2].split():
                spine.append(item[0])
    if not spine:  # no spine: fall back to every XHTML file in manifest order
        spine = [h for h, t, p in manifest.values() if t in _HTML_TYPES and "nav" not in p.split()]
    # Several spine entries can point into one file (fragments): read each file once.
    return list(dict.fromkeys(spine)), title, metadata


def parse_epub(data: bytes) -> ParseResult:
    """Parse an EPUB's chapters in spine order into blocks."""
    check_package(data, "EPUB")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise CorruptDocument(f"EPUB is not a readable zip archive: {e}") from None
    blocks: list[Block] = []
    warnings: list[str] = []
    with zf:
        _check_drm(zf)
        opf_path = _opf_path(zf)
        spine, title, metadata = _spine(zf, opf_path)
        names = set(zf.namelist())
        budget = TextBudget(len(data), "epub")  # spent chapter by chapter, not once the book is read
        for n, href in enumerate(spine, 1):
            if href not in names:
                warnings.append(f"spine item {href} is missing from the package")
                continue
            raw = read_member(zf, href)
            text = decode_text(raw, html_declared_charset(raw))[0]
            try:
                chapter, _ = html_blocks(text)
            except ParseError as e:
                warnings.append(f"chapter {href} could not be parsed: {e}")
                continue
            budget.spend(sum(len(b.text) for b in chapter))  # 8 chapters of 4 MB, 48 KB: 37 s, 1.5 GB
            for b in chapter:
                b.meta.update(chapter=n, href=href)
            blocks.extend(chapter)
    if not spine:
        raise CorruptDocument("EPUB spine lists no XHTML chapters")
    if not blocks:
        raise EmptyDocument(f"EPUB has {len(spine)} chapter(s) but no text (image-only book?)")
    metadata["chapters"] = len(spine)
    first = next((b.text for b in blocks if b.kind == "heading"), None)
    return ParseResult(blocks=blocks, title=title or first, format="epub", metadata=metadata, warnings=warnings)
