"""The parsing stage: bytes + file name → typed blocks in reading order, with quality metrics.

    from assets.parsing import parse_document
    result = parse_document(data, "reports/q3.pdf", ParseConfig())

`parse_document` sniffs the real format from the bytes (see `sniff.py` for how a mismatch with
the extension is resolved), dispatches to one parser per format, cleans the blocks and fills
`ParseResult.metrics` / `page_metrics`. Images (PNG, JPEG, TIFF, GIF) are read as scanned pages,
through OCR (`image.py`). Every failure is a specific `connectors.errors.ParseError`
subclass with a human message (encrypted, corrupt, empty, needs-OCR, unsupported, mismatch, too
large). Pure: no I/O, no global state beyond lazily initialised libraries.

Formats: PDF (text, layout, OCR routes), HTML, Markdown, plain text, email/mbox, docx, and
(parsers added after the first real-corpus run) CSV/TSV, JSON/JSONL, Jupyter notebooks, XML, reStructuredText,
pptx, xlsx, OpenDocument (odt/ods/odp), EPUB, RTF, manual pages (roff: man and mdoc) and Perl's
POD. A
single gzip/bzip2/xz-compressed file is parsed as the document inside it (`compressed.py`).
Legacy binary Office files with no native parser (.msg, .doc, .xls, .ppt) go to
unstructured's `partition` as a last resort (`fallback.py`); an unexpected exception inside
any parser becomes a `ParseError` naming the parser, so one odd file never surfaces as an
anonymous crash. A documentation build's own files (Sphinx's `_sources` copies and search index,
theme assets: `site_files.py`) are told by their path and not read at all.

Block kinds emitted: heading (level 1–6), paragraph, list_item (meta depth/ordered), table
(GitHub Markdown with header row; meta["table_header"] holds the header lines), code (verbatim,
meta language when known) and caption. Headings are always `heading` with a level; the document
title goes to `ParseResult.title`. PDF blocks carry 1-based `page` and meta["route"].
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from assets.parsing.compressed import decompress
from assets.parsing.package import check_package
from assets.parsing.site_files import site_file_role
from assets.parsing.sniff import as_utf8, decode_text, detect_format
from assets.parsing.textutil import TextBudget, without_surrogates
from connectors.config import ParseConfig
from connectors.documents import Block, ParseResult
from connectors.errors import EmptyDocument, ParseError, TooLarge, UnsupportedFormat, size_text
from quality.metrics import document_metrics

if TYPE_CHECKING:
    from assets.parsing.asciidoc import IncludeReader

__all__ = ["Block", "ParseResult", "document_title", "parse_document"]

# The parser's code version lives with every other stage version in
# connectors.identity.STAGE_CODE_VERSIONS["parse"]: bump it there when parsing output changes.

_Parser = Callable[[bytes, ParseConfig, str], ParseResult]


def _pdf(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.pdf import parse_pdf

    return parse_pdf(data, config)


def _docx(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.docx import parse_docx

    return parse_docx(data)


def _html(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.html import parse_html

    return parse_html(data, name)


def _markdown(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.markdown import parse_markdown

    text, encoding = decode_text(data)
    result = parse_markdown(text)
    result.metadata["encoding"] = encoding
    return result


def _text(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.text import parse_text

    return parse_text(data)


def _csv(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.tabular import parse_delimited

    return parse_delimited(data, name)


def _json(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.jsondoc import parse_json

    return parse_json(data)


def _notebook(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.notebook import parse_notebook

    return parse_notebook(data)


def _jsonl(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.jsondoc import parse_jsonl

    return parse_jsonl(data)


def _xml(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.xmldoc import parse_xml

    return parse_xml(data)


def _rst(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.rst import parse_rst

    return parse_rst(data)


def _asciidoc(data: bytes, config: ParseConfig, name: str, include: IncludeReader | None = None,
              max_bytes: int | None = None) -> ParseResult:
    from assets.parsing.asciidoc import parse_asciidoc

    return parse_asciidoc(data, name, include, max_bytes)


def _man(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.man import parse_man

    return parse_man(data)


def _pod(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.pod import parse_pod

    return parse_pod(data)


def _info(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.info import parse_info

    return parse_info(data)


def _pptx(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.pptx import parse_pptx

    return parse_pptx(data)


def _xlsx(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.xlsx import parse_xlsx

    return parse_xlsx(data)


def _odf(fmt: str) -> _Parser:
    def parse(data: bytes, config: ParseConfig, name: str) -> ParseResult:
        from assets.parsing.odf import parse_odf

        return parse_odf(data, fmt)

    return parse


def _epub(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.epub import parse_epub

    return parse_epub(data)


def _rtf(data: bytes, config: ParseConfig, name: str) -> ParseResult:
    from assets.parsing.rtf import parse_rtf

    return parse_rtf(data)


def _attachment_parser(config: ParseConfig, depth: int, max_bytes: int | None,
                       ) -> Callable[[bytes, str], ParseResult]:
    def parse(data: bytes, filename: str) -> ParseResult:
        if depth >= 3:
            raise UnsupportedFormat(f"{filename}: attachments nested more than 3 levels deep")
        return _parse(data, filename, config, depth + 1, max_bytes)

    return parse


def _email(data: bytes, config: ParseConfig, name: str, depth: int = 0, max_bytes: int | None = None,
           ) -> ParseResult:
    from assets.parsing.email import parse_email

    return parse_email(data, _attachment_parser(config, depth, max_bytes))


def _mbox(data: bytes, config: ParseConfig, name: str, depth: int = 0, max_bytes: int | None = None,
          ) -> ParseResult:
    from assets.parsing.email import parse_mbox

    return parse_mbox(data, _attachment_parser(config, depth, max_bytes))


_PARSERS: dict[str, _Parser] = {
    "pdf": _pdf,
    "docx": _docx,
    "html": _html,
    "markdown": _markdown,
    "text": _text,
    "email": _email,
    "mbox": _mbox,
    "csv": _csv,
    "json": _json,
    "jsonl": _jsonl,
    "notebook": _notebook,
    "xml": _xml,
    "rst": _rst,
    "asciidoc": _asciidoc,
    "man": _man,
    "pod": _pod,
    "info": _info,
    "pptx": _pptx,
    "xlsx": _xlsx,
    "odt": _odf("odt"),
    "ods": _odf("ods"),
    "odp": _odf("odp"),
    "epub": _epub,
    "rtf": _rtf,
}


# ZIP packages: one part, unpacked, may hold no more than the source's max_file_mb (package.py)
_PACKAGES = frozenset({"docx", "pptx", "xlsx", "odt", "ods", "odp", "epub"})


def _parse(data: bytes, filename: str, config: ParseConfig, depth: int, max_bytes: int | None = None,
           include: IncludeReader | None = None) -> ParseResult:
    name = PurePosixPath(filename).name or filename
    detected = detect_format(data, filename)
    if max_bytes is not None and detected.format in _PACKAGES:
        check_package(data, detected.format, max_bytes, parts=False)  # the format's parser reads its parts
    try:
        if detected.format in ("email", "mbox"):
            parser = _email if detected.format == "email" else _mbox
            result = parser(as_utf8(data), config, name, depth, max_bytes)
        elif detected.format == "asciidoc":  # its includes resolve against its path, not its name
            result = _asciidoc(data, config, filename, include, max_bytes)
        elif detected.format == "fallback":
            from assets.parsing.fallback import parse_fallback

            result = parse_fallback(data, name, detected.label)
        elif detected.format == "image":
            if depth > 0:  # an attachment's logo or badge would be noise in every message
                raise UnsupportedFormat(f"{name}: an attached {detected.label} is not read (images are OCR'd "
                                        "only as files of their own)")
            from assets.parsing.image import parse_image

            result = parse_image(data, config, name, detected.label)
        else:
            result = _PARSERS[detected.format](data, config, name)
    except (ParseError, MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:  # a parser bug or a library choking on odd bytes: say which
        raise ParseError(
            f"{name}: the {detected.format} parser failed: {type(e).__name__}: {e}"
        ) from e
    result.format = detected.format
    result.warnings = without_surrogates(detected.warnings + result.warnings)
    result.blocks = [b for b in result.blocks if b.text.strip()]
    _replace_surrogates(result)
    # text an AsciiDoc page includes counts as its own bytes
    n_bytes = len(data) + int(result.metadata.get("included_bytes") or 0)
    TextBudget(n_bytes, detected.format).spend(sum(len(b.text) for b in result.blocks))
    if not result.blocks and "redirect" not in result.metadata:  # a redirect page may say nothing
        raise EmptyDocument(f"{name}: no text could be extracted ({detected.format})")
    if not result.title:  # a heading that opens the document (its file name is not a parse's: see document_title)
        opening = result.blocks[0] if result.blocks else None
        result.title = opening.text if opening and opening.kind == "heading" else None
    result.metrics = document_metrics(result, len(data))
    return result


def _replace_surrogates(result: ParseResult) -> None:
    """Every string a parse stores made encodable (`textutil.without_surrogates`)."""
    result.title = without_surrogates(result.title)
    result.metadata = without_surrogates(result.metadata)
    for b in result.blocks:
        b.text = without_surrogates(b.text)
        if b.meta:
            b.meta = without_surrogates(b.meta)


def document_title(parse_title: str | None, external_id: str) -> str | None:
    """A document's title: its parse's, else its own file name as words. The name is applied per
    document and never stored in a parse: a parse is cached by bytes and shared by every file
    holding them, so one file's name would title another (a private file's name on a public copy
    of its text)."""
    name = PurePosixPath(external_id).name
    if PurePosixPath(name).suffix.lower() in _COMPRESSED:  # NEWS.txt.gz is titled as NEWS.txt is
        name = PurePosixPath(name).stem
    return parse_title or file_title(name)


_COMPRESSED = frozenset({".gz", ".bz2", ".xz", ".z", ".zst", ".lzma"})


def file_title(name: str) -> str | None:
    """A title from a file name ("acl-setuser.md" -> "acl setuser"), for documents that state
    none: a command page or a note usually says what it is only in its name."""
    return re.sub(r"[-_.\s]+", " ", PurePosixPath(name).stem).strip() or None


def parse_document(
    data: bytes, filename: str, config: ParseConfig | None = None, *, max_bytes: int | None = None,
    include: IncludeReader | None = None,
) -> ParseResult:
    """Parse one document's bytes; `filename` supplies the extension to check against.

    Raises a `connectors.errors.ParseError` subclass (EncryptedDocument, CorruptDocument,
    EmptyDocument, NeedsOCR, UnsupportedFormat, FormatMismatch, TooLarge) with a specific
    message. `max_bytes` (e.g. the source's max_file_mb) rejects oversized input up front.
    `include` reads the files an AsciiDoc document includes (`assets.includes.include_reader`:
    only those the document may show; `filename` is then its path in the source).
    """
    config = config or ParseConfig()
    if role := site_file_role(filename):  # a build's own file, not a page: never read (site_files.py)
        result = ParseResult(blocks=[], format="site-file", metadata={"site_file": role})
        result.metrics = document_metrics(result, len(data))
        return result
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(
            f"{PurePosixPath(filename).name}: {size_text(len(data), max_bytes)} is over the "
            f"{size_text(max_bytes)} limit"
        )
    unpacked = decompress(data, filename, max_bytes)
    if unpacked is None:
        return _parse(data, filename, config, 0, max_bytes, include)
    inner, inner_name, packing = unpacked
    try:
        result = _parse(inner, inner_name, config, 0, max_bytes, include)
    except ParseError as e:  # name the file the user has, not the one inside it
        outer = PurePosixPath(filename).name or filename
        raise type(e)(f"{outer}: inside the {packing} file, {e}") from e
    result.metadata["compressed"] = packing
    return result
