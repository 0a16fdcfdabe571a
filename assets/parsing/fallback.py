"""Last resort: unstructured's `partition` for formats no native parser reads.

Used only when sniffing finds no native parser (legacy OLE files: Outlook .msg, .doc, .xls,
.ppt). unstructured is imported lazily, once per process, with the offline fixes from the
stack notes: telemetry off, and its spaCy loader pointed at a blank English pipeline with a
sentencizer (the default tries to download `en_core_web_sm`).

Elements map onto our blocks: Title → heading (only when short and unpunctuated: offline,
unstructured labels most short lines Title), NarrativeText/Text/UncategorizedText/Address/
EmailAddress/Formula → paragraph, ListItem → list_item, Table → Markdown table (from its HTML
when present), CodeSnippet → code, FigureCaption → caption; headers, footers, page breaks,
page numbers and images are dropped. `page` comes from the element's page number.
Any failure inside unstructured (a missing converter such as LibreOffice for .doc, an
unrecognised file) is UnsupportedFormat with unstructured's own reason.
"""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from assets.parsing.textutil import clean_inline, normalize_text, table_header_lines
from connectors.documents import Block, ParseResult
from connectors.errors import UnsupportedFormat

__all__ = ["elements_to_blocks", "parse_fallback"]

MAX_TITLE_WORDS = 12
_DROP = {"Header", "Footer", "PageBreak", "PageNumber", "Image"}
_PARAGRAPH = {
    "NarrativeText",
    "Text",
    "UncategorizedText",
    "Address",
    "EmailAddress",
    "Formula",
    "CompositeElement",
}
_lock = threading.Lock()
_partition: Callable[..., list[Any]] | None = None
_local = threading.local()


class _Collector(logging.Handler):
    """unstructured's log warnings ("Skipping attachment ...") → the document's warnings."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = getattr(_local, "sink", None)
        if sink is not None and record.levelno >= logging.WARNING and len(sink) < 20:
            sink.append(f"unstructured: {record.getMessage()[:300]}")


_collector = _Collector()


def _load() -> Callable[..., list[Any]]:
    """unstructured's auto partition, with the offline spaCy fix applied once."""
    global _partition
    with _lock:
        if _partition is None:
            os.environ.setdefault("DO_NOT_TRACK", "1")
            os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")
            import spacy
            import unstructured.nlp.tokenize as tokenize

            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            tokenize._get_nlp = lambda: nlp  # type: ignore[assignment]  # swapping the cached loader for ours
            from unstructured.partition.auto import partition

            logging.getLogger("unstructured").addHandler(_collector)
            _partition = partition
    return _partition


def _is_heading(text: str) -> bool:
    return 0 < len(text.split()) <= MAX_TITLE_WORDS and not text.rstrip().endswith((".", ",", ";", ":", "!", "?"))


def _table_text(element: Any) -> str:
    html = getattr(getattr(element, "metadata", None), "text_as_html", None)
    if html:
        from assets.parsing.html import html_blocks

        try:
            tables = [b for b in html_blocks(html)[0] if b.kind == "table"]
        except Exception:
            tables = []
        if tables:
            return tables[0].text
    return ""


def elements_to_blocks(elements: Iterable[Any]) -> list[Block]:
    """unstructured elements → our blocks (see the module docstring for the mapping)."""
    blocks: list[Block] = []
    for el in elements:
        category = type(el).__name__
        if category in _DROP:
            continue
        meta_obj = getattr(el, "metadata", None)
        page = getattr(meta_obj, "page_number", None)
        meta: dict[str, Any] = {"route": "unstructured", "element": category}
        text = str(getattr(el, "text", "") or "")
        if category == "Table":
            table = _table_text(el)
            if table:
                meta["table_header"] = table_header_lines(table)
                blocks.append(Block("table", table, page=page, meta=meta))
                continue
            blocks.append(Block("paragraph", normalize_text(text), page=page, meta=meta))
        elif category == "Title":
            line = clean_inline(text)
            if _is_heading(line):
                depth = getattr(meta_obj, "category_depth", None) or 0
                level = max(1, min(6, int(depth) + 1))
                blocks.append(Block("heading", line, level=level, page=page, meta=meta))
            else:
                blocks.append(Block("paragraph", line, page=page, meta=meta))
        elif category == "ListItem":
            blocks.append(Block("list_item", clean_inline(text), page=page, meta=meta))
        elif category == "CodeSnippet":
            blocks.append(Block("code", text.strip("\n"), page=page, meta=meta))
        elif category == "FigureCaption":
            blocks.append(Block("caption", clean_inline(text), page=page, meta=meta))
        else:
            blocks.append(Block("paragraph", normalize_text(text), page=page, meta=meta))
    return [b for b in blocks if b.text.strip()]


def parse_fallback(data: bytes, name: str, label: str) -> ParseResult:
    """Parse bytes no native parser reads with unstructured; `label` says what they look like."""
    try:
        partition = _load()
    except Exception as e:  # unstructured missing or broken in this environment
        raise UnsupportedFormat(
            f"{name}: {label} has no native parser and unstructured is unavailable ({type(e).__name__}: {e})"
        ) from None
    _local.sink = []
    try:
        elements = partition(file=io.BytesIO(data), metadata_filename=name)
    except Exception as e:  # missing converters (LibreOffice, pandoc), unknown types, bad bytes
        reason = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
        raise UnsupportedFormat(
            f"{name}: {label} has no native parser and unstructured could not read it: {type(e).__name__}: {reason}"
        ) from None
    finally:
        logged, _local.sink = _local.sink, None
    blocks = elements_to_blocks(elements)
    metadata: dict[str, Any] = {"parser": "unstructured", "elements": len(elements)}
    first = getattr(elements[0], "metadata", None) if elements else None
    for key in ("subject", "sent_from", "sent_to", "email_message_id"):
        value = getattr(first, key, None)
        if value:
            metadata[key] = value
    subject = metadata.get("subject")
    title = subject if isinstance(subject, str) and subject.strip() else None
    title = title or next((b.text for b in blocks if b.kind == "heading"), None)
    return ParseResult(blocks=blocks, title=title, format="fallback", metadata=metadata, warnings=logged)
