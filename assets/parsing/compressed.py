"""Single compressed files (.gz, .bz2, .xz): the document inside is parsed, named without the
suffix (`ls.1.gz` is the manual page `ls.1`).

Manual pages ship gzip-compressed, and so do many exported logs and dumps. The bytes decide
(the magic number), as for every other format; the decompressed size is bounded by the same
limit as a plain file (`max_file_mb`), read incrementally, so a small bomb never fills memory.
A second layer (`x.gz.gz`) is not opened: it is reported as the archive it is.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Callable
from pathlib import PurePosixPath

from connectors.errors import CorruptDocument, TooLarge, size_text

__all__ = ["DEFAULT_MAX_BYTES", "SUFFIXES", "compression_of", "decompress"]

DEFAULT_MAX_BYTES = 256 * 1024 * 1024  # when the caller sets no limit
_Opener = Callable[[io.BytesIO], io.BufferedIOBase]
_KINDS: tuple[tuple[bytes, str, tuple[str, ...], _Opener], ...] = (  # magic, label, suffixes, reader
    (b"\x1f\x8b", "gzip", (".gz", ".z", ".tgz"), lambda f: gzip.GzipFile(fileobj=f)),
    (b"BZh", "bzip2", (".bz2", ".tbz2"), bz2.BZ2File),
    (b"\xfd7zXZ\x00", "xz", (".xz", ".txz"), lzma.LZMAFile),
)
_BZIP2_BLOCK = (b"1AY&SY", b"\x17rE8P\x90")  # the first block's magic (pi), or the empty stream's end
_TAR_SUFFIX = {".tgz": ".tar", ".tbz2": ".tar", ".txz": ".tar"}
# a single file's compression suffixes (`.gz`), without the dot: a tarball's are archives
SUFFIXES = {s.lstrip(".") for _, _, suffixes, _ in _KINDS for s in suffixes if s not in _TAR_SUFFIX}


def compression_of(data: bytes) -> tuple[str, tuple[str, ...], _Opener] | None:
    """(label, suffixes, reader) of the compression `data` starts with, else None ("BZh9 is..."
    is text: a real bzip2 stream has a block or end marker next)."""
    for magic, label, suffixes, opener in _KINDS:
        if data.startswith(magic) and (label != "bzip2" or (data[3:4] in b"123456789" and data[4:10] in _BZIP2_BLOCK)):
            return label, suffixes, opener
    return None


def decompress(data: bytes, filename: str, max_bytes: int | None) -> tuple[bytes, str, str] | None:
    """(the inner bytes, the inner file name, the compression) for a compressed file, else None.

    Raises CorruptDocument for damaged or truncated data and TooLarge when the content passes
    `max_bytes` (default DEFAULT_MAX_BYTES)."""
    kind = compression_of(data)
    if kind is None:
        return None
    label, suffixes, opener = kind
    name = PurePosixPath(filename).name or filename
    suffix = PurePosixPath(name).suffix.lower()
    inner = name[: -len(suffix)] + _TAR_SUFFIX.get(suffix, "") if suffix in suffixes else name
    limit = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    try:
        with opener(io.BytesIO(data)) as f:
            content = _read_bounded(f, limit)
    except TooLarge:
        raise TooLarge(f"{name}: its {label} content is over the {size_text(limit)} limit") from None
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as e:
        raise CorruptDocument(f"{name}: damaged {label} data: {e}") from None
    return content, inner, label


def _read_bounded(f: io.BufferedIOBase, limit: int) -> bytes:
    out = bytearray()
    while True:
        piece = f.read(1 << 20)
        if not piece:
            return bytes(out)
        out += piece
        if len(out) > limit:
            raise TooLarge()
