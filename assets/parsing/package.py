"""ZIP packages (OOXML .docx/.pptx/.xlsx, ODF, EPUB): the limits that keep a zip bomb out.

python-docx and python-pptx read every part of a package into memory, and openpyxl and lxml parse
its XML there, so a small file whose parts unpack to gigabytes exhausts the worker's memory and
kills the run (a 1.5 MB .docx whose document part unpacks to 1.5 GB took 3.1 GB before lxml gave
up). The sizes a ZIP's directory declares bound what Python's `zipfile` will ever return for a
part, so they are checked before the format's library opens the package: a refusal is a
`too-large` dead letter naming the part, and the run goes on. One part, unpacked, may also hold
no more than the source's `max_file_mb`, as the content of a .gz file may not (`compressed.py`):
a 187 KB .docx whose document part unpacked to 50 MB of paragraphs was parsed for minutes. An
XML part with an element of thousands of attributes is refused too (`assets.parsing.markup`)."""

from __future__ import annotations

import io
import zipfile

from assets.parsing.markup import refuse_attribute_flood
from connectors.errors import TooLarge, size_text

__all__ = ["MAX_MEMBER_BYTES", "MAX_PACKAGE_BYTES", "check_package"]

MAX_MEMBER_BYTES = 256 * 1024 * 1024  # one part, unpacked
MAX_PACKAGE_BYTES = 1024 * 1024 * 1024  # all parts together, unpacked


def check_package(data: bytes, kind: str, max_part: int | None = None, *, parts: bool = True) -> None:
    """Refuse a package whose parts unpack beyond the limits (TooLarge): one part beyond
    MAX_MEMBER_BYTES or `max_part` (the source's max_file_mb, when given), all parts beyond
    MAX_PACKAGE_BYTES. A file that is no readable ZIP at all is left to the format's parser,
    which says why it is corrupt."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    biggest = max(infos, key=lambda i: i.file_size, default=None)
    if max_part is not None and max_part < MAX_MEMBER_BYTES and biggest is not None and biggest.file_size > max_part:
        raise TooLarge(f"{kind} part {biggest.filename} unpacks to {size_text(biggest.file_size, max_part)}, over the "
                       f"{size_text(max_part)} limit (the source's max_file_mb, which holds for each part "
                       "once unpacked as for a whole file)")
    if biggest is not None and biggest.file_size > MAX_MEMBER_BYTES:
        raise TooLarge(f"{kind} part {biggest.filename} unpacks to {biggest.file_size / 1e6:,.0f} MB, over the "
                       f"limit of {MAX_MEMBER_BYTES >> 20} MB per part (a zip bomb, or a part too large to read)")
    total = sum(i.file_size for i in infos)
    if total > MAX_PACKAGE_BYTES:
        raise TooLarge(f"{kind} unpacks to {total / 1e6:,.0f} MB in all, over the limit of "
                       f"{MAX_PACKAGE_BYTES >> 20} MB (a zip bomb, or a package too large to read)")
    if parts:  # off where the format's parser checks the package again (`assets.parsing._parse`)
        _refuse_flooded_parts(data, kind, infos)


_MARKUP_PARTS = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx", ".svg")


def _refuse_flooded_parts(data: bytes, kind: str, infos: list[zipfile.ZipInfo]) -> None:
    """CorruptDocument naming the XML part that holds an element libxml2 would take hours over
    (`assets.parsing.markup`). Each part is unpacked once more, within the limits just checked."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in infos:
            if info.filename.lower().endswith(_MARKUP_PARTS) and not info.is_dir():
                try:
                    part = zf.read(info)
                except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
                    continue  # the format's parser says why the package is corrupt
                refuse_attribute_flood(part, f"{kind} part {info.filename}")
