"""Decide what a document really is from its bytes, and reconcile that with its file name.

Extensions lie (an HTML error page saved as `report.pdf`, a PDF uploaded as `scan.txt`), so the
bytes decide. The rules, in short:

* the bytes prove a format on their own (PDF header, an OOXML/ODF/EPUB zip with its marker
  member or `mimetype`, `{\\rtf`) → parse them as such; a different extension only adds a
  warning ("mislabelled but recoverable");
* a damaged zip named as an Office/ODF/EPUB package → `CorruptDocument`; a plain zip → mismatch;
* an XML declaration → XML unless the root element is `<html>` (XHTML); an HTML page saved
  as .json/.csv → `FormatMismatch`;
* legacy OLE files (.doc/.xls/.ppt/.msg) → the unstructured fallback ("fallback");
* the name promises text (.txt/.md/.html/.eml) but the bytes are binary → `FormatMismatch`;
* the name promises a PDF/docx but the bytes are text or another binary type → `FormatMismatch`
  (an HTML error page indexed as the report would poison retrieval), or `CorruptDocument` when
  the bytes are unrecognisable;
* a full HTML document or an RFC 822 message named .txt → parsed as HTML/email with a warning;
* anything else binary → `UnsupportedFormat`; nothing but whitespace → `EmptyDocument`.
"""

from __future__ import annotations

import codecs
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from assets.parsing import compressed
from connectors.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    FormatMismatch,
    UnsupportedFormat,
)

__all__ = ["DEBIAN_CHANGELOG", "Detected", "Sniffed", "as_utf8", "decode_text", "detect_format",
           "html_declared_charset",
           "looks_like_asciidoc", "looks_like_info", "looks_like_markdown",
           "looks_like_pod", "looks_like_roff", "looks_like_rst",
           "sniff"]

EXTENSIONS: dict[str, str] = {
    "pdf": "pdf",
    "docx": "docx",
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "shtml": "html",
    "md": "markdown",
    "markdown": "markdown",
    "mdown": "markdown",
    "mkd": "markdown",
    "mkdn": "markdown",
    "eml": "email",
    "mbox": "mbox",
    "txt": "text",
    "text": "text",
    "rst": "rst",
    "rest": "rst",
    "adoc": "asciidoc",
    "asciidoc": "asciidoc",
    "log": "text",
    "csv": "csv",
    "tsv": "csv",
    "tab": "csv",
    "json": "json",
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "ipynb": "notebook",
    "yaml": "text",
    "yml": "text",
    "toml": "text",
    "ini": "text",
    "cfg": "text",
    "xml": "xml",
    "svg": "xml",
    "py": "text",
    "sql": "text",
    "sh": "text",
    "js": "text",
    "ts": "text",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "xlsm": "xlsx",
    "odt": "odt",
    "ods": "ods",
    "odp": "odp",
    "epub": "epub",
    "rtf": "rtf",
    "man": "man",
    "mdoc": "man",
    "roff": "man",
    "pod": "pod",
    "info": "info",
}
TEXT_FORMATS = {"html", "markdown", "email", "mbox", "text", "csv", "json", "jsonl", "xml", "rst", "asciidoc",
                "man", "pod", "info", "notebook"}
# Formats the bytes prove on their own (magic numbers, zip members): they win over the name.
BINARY_FORMATS = {"pdf", "docx", "pptx", "xlsx", "odt", "ods", "odp", "epub", "rtf"}
# Legacy and other formats no native parser reads; unstructured's partition is tried for them.
FALLBACK_EXTENSIONS = frozenset({"doc", "xls", "ppt", "msg"})
_ZIP_FORMATS = {"docx", "pptx", "xlsx", "odt", "ods", "odp", "epub"}
_LEGACY = {
    "docx": ".doc",
    "xlsx": ".xls",
    "pptx": ".ppt",
    "odt": ".doc?",
    "ods": ".xls?",
    "odp": ".ppt?",
    "epub": "?",
}

# (magic prefix, human label) for binary types we recognise but do not parse.
_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"\x1f\x8b", "gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"Rar!\x1a\x07", "RAR archive"),
    (b"\x7fELF", "ELF executable"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"RIFF", "RIFF media file"),
    (b"ID3", "MP3 audio"),
    (b"OggS", "Ogg media file"),
]
IMAGE_LABELS = frozenset({"PNG image", "JPEG image", "GIF image", "TIFF image"})
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]
_SAMPLE = 64 * 1024
_MAIL_HEADERS = {
    "from",
    "to",
    "cc",
    "subject",
    "date",
    "message-id",
    "mime-version",
    "received",
    "return-path",
    "reply-to",
    "in-reply-to",
    "references",
    "content-type",
    "delivered-to",
    "x-mailer",
    "sender",
}
_MAIL_STRONG = {"from", "message-id", "mime-version", "received", "return-path", "delivered-to"}
_HEADER_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*):(?:[ \t]|$)")
_MBOX_FROM = re.compile(rb"^From \S+")
_HTML_MARK = re.compile(r"<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>])", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_XML_DECL = re.compile(r"^\s*<\?xml[\s?]")
# An SVG drawing often omits the XML declaration: its root (after comments, a doctype) says it
_SVG_ROOT = re.compile(r"(?:<!--.*?-->\s*)*(?:<!doctype\s+svg[\s>]|<svg[\s>/])", re.IGNORECASE | re.DOTALL)
_XML_ROOT = re.compile(r"<(?!\?|!)([A-Za-z_][\w.:-]*)")
_ODF_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": ("odt", "OpenDocument text (.odt)"),
    "application/vnd.oasis.opendocument.spreadsheet": ("ods", "OpenDocument spreadsheet (.ods)"),
    "application/vnd.oasis.opendocument.presentation": ("odp", "OpenDocument presentation"),
    "application/epub+zip": ("epub", "EPUB e-book"),
}
_MD_HEADING = re.compile(r"^#{1,6} \S", re.MULTILINE)
_MD_FENCE = re.compile(r"^ {0,3}(?:```|~~~)", re.MULTILINE)
_MD_INLINE = re.compile(r"\[[^\]\n]{1,200}\]\([^)\s]{1,500}\)|\*\*\S[^*\n]{0,200}\*\*|`[^`\n]{1,200}`")
# a Debian changelog's first line, "package (version) distribution; urgency=...": its format is
# its own, and the "# Older entries have been removed" comment Debian appends read as a heading
DEBIAN_CHANGELOG = re.compile(r"\A[a-z0-9][a-z0-9+.-]* \([^()\s]+\) [^;\n]+; *urgency=", re.IGNORECASE)


@dataclass
class Sniffed:
    """What the bytes look like. `kind` is a parser format or 'binary'; `label` is for humans."""

    kind: str
    label: str
    evidence: str = ""


@dataclass
class Detected:
    """The format to parse with, plus warnings about the file name."""

    format: str
    warnings: list[str] = field(default_factory=list)
    label: str = ""  # what the bytes look like, for formats without a native parser


def _bom_encoding(data: bytes) -> str | None:
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc
    return None


def _bomless_utf16(sample: bytes) -> str | None:
    """'utf-16-le' or 'utf-16-be' for UTF-16 text written without a byte-order mark, else None.

    Mostly-ASCII UTF-16 has a NUL in every other byte, on one side only: the high byte, which
    comes second in little-endian and first in big-endian. Windows tools (and some exporters)
    write it without a BOM; read as UTF-8 it still decodes (NUL is valid UTF-8), so without this
    a mail, page or manual in UTF-16 was sniffed as plain text with NULs between its letters.
    """
    if len(sample) < 4 or _bom_encoding(sample):
        return None
    even, odd = sample[0::2].count(b"\x00"), sample[1::2].count(b"\x00")
    half = len(sample) / 2
    if max(even, odd) > 0.4 * half and min(even, odd) < 0.05 * half:
        return "utf-16-le" if odd > even else "utf-16-be"
    return None


def _wide_encoding(data: bytes) -> str | None:
    """The UTF-16/32 encoding of text bytes (by BOM, or BOM-less UTF-16), else None."""
    bom = _bom_encoding(data)
    if bom:
        return None if bom == "utf-8-sig" else bom
    return _bomless_utf16(data[:_SAMPLE])


def as_utf8(data: bytes) -> bytes:
    """Text bytes in a wide encoding (UTF-16/32, with or without a BOM) or with a UTF-8 BOM,
    re-encoded as plain UTF-8; other bytes unchanged. For parsers that read bytes themselves
    (e-mail headers are ASCII byte patterns)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8):]
    enc = _wide_encoding(data)
    return data.decode(enc, errors="replace").lstrip("\ufeff").encode("utf-8") if enc else data


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    return len(_CONTROL.findall(text)) / len(text)


_WESTERN = ("latin_1", "iso8859_15", "cp1252")  # read as cp1252: a superset of Latin-1's printable range
MOSTLY_UTF8 = 2  # valid non-ASCII UTF-8 characters per invalid byte, for text read as UTF-8 anyway


def decode_text(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """Decode text bytes: BOM, then a declared charset, then UTF-8, then a detector.

    The detector (charset-normalizer) is only trusted when it recognises a language; short
    Western texts otherwise come back as cp1250/cp1006 mojibake, so the fallback is cp1252
    (a superset of Latin-1's printable range), which gets French/German/Spanish accents right.
    Returns (text, encoding used).
    """
    bom = _bom_encoding(data) or _bomless_utf16(data[:_SAMPLE])
    if bom:
        return data.decode(bom, errors="replace"), bom
    if declared:
        try:
            return data.decode(declared), declared.lower()
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    if (text := _mostly_utf8(data)) is not None:
        return text, "utf-8"
    from charset_normalizer import from_bytes  # lazy: only legacy encodings need it

    matches = from_bytes(data[: 4 * _SAMPLE])
    best = matches.best()
    if best is not None and best.coherence >= 0.2 and best.encoding not in ("utf_8", "ascii"):
        enc = best.encoding
        # On a short text several single-byte code pages tie, and the detector's pick among
        # them is arbitrary: French read as cp1250 ("forêt" -> "foręt"). Western European text
        # is the likelier one, so cp1252 wins any tie it is part of.
        western = [m for m in matches if m.encoding in _WESTERN]
        if enc in _WESTERN or (western and western[0].coherence >= best.coherence - 0.02):
            enc = "cp1252"
        try:
            return data.decode(enc, errors="replace"), enc
        except LookupError:
            pass
    return data.decode("cp1252", errors="replace"), "cp1252"


def _mostly_utf8(data: bytes) -> str | None:
    """`data` as UTF-8 with its few invalid bytes replaced (U+FFFD), when it is UTF-8 but for
    them: at least MOSTLY_UTF8 valid non-ASCII characters per invalid byte. One stray Latin-1
    byte in 300 KB of Russian sent the whole text to cp1252 (mojibake, not one Cyrillic letter
    left, no warning), and one in a short French note sent it to Mac Roman ("rûˋunion"); text
    in a legacy code page (or binary) forms a valid sequence about once per ten invalid bytes
    (at most 0.14 in the 562 non-UTF-8 files of the dev corpora) and keeps going there."""
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count("\ufffd".encode())
    if invalid <= 0:
        return None
    valid = len(text) - len(text.encode("ascii", "ignore")) - text.count("\ufffd")
    return text if valid >= MOSTLY_UTF8 * invalid else None


def html_declared_charset(data: bytes) -> str | None:
    """The charset named by a `<meta charset>` / http-equiv tag in the first 4 KB, if any."""
    m = _META_CHARSET.search(data[:4096])
    return m.group(1).decode("ascii", "replace") if m else None


def _looks_binary(sample: bytes) -> str | None:
    """Evidence that `sample` is not text, or None if it plausibly is."""
    if _bom_encoding(sample):
        return None
    nul = sample.count(b"\x00")
    if nul:
        if _bomless_utf16(sample):
            return None
        # A few stray NULs in otherwise clean text (seen in real mail archives).
        if nul <= max(2, len(sample) // 5000) and _looks_binary(sample.replace(b"\x00", b"")) is None:
            return None
        return f"{nul} NUL bytes ({nul / len(sample):.2%})"
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start >= len(sample) - 3 and len(sample) >= _SAMPLE:  # a character cut by the sample
            text = sample[: e.start].decode("utf-8", errors="replace")
        elif (mostly := _mostly_utf8(sample)) is not None:
            text = mostly
        else:
            text = sample.decode("latin-1")
            share = _control_share(text)
            if share > 0.01:
                return f"{share:.1%} control bytes and invalid UTF-8"
            if _looks_like_email(text.lstrip("\ufeff \t\r\n")):
                # RFC 822 headers open it: a message, whose 8-bit body its MIME parts' charsets
                # decode (`email._text_content`). Guessing the encoding of the whole file was a
                # tenth of the parse time of a legacy mail archive (one message in ten is 8-bit)
                return None
            undecodable = _invalid_utf8_share(sample)
            from charset_normalizer import from_bytes

            if from_bytes(sample).best() is None:
                return f"{undecodable:.0%} bytes invalid as UTF-8 and no text encoding fits"
            return None
    share = _control_share(text)
    return f"{share:.1%} control characters" if share > 0.02 else None


def _invalid_utf8_share(sample: bytes) -> float:
    decoded = sample.decode("utf-8", errors="replace")
    return decoded.count("\ufffd") / max(1, len(decoded))


def _looks_like_email(text: str) -> str | None:
    """'email' or 'mbox' when the text starts with RFC 822 headers, else None."""
    lines = text.lstrip("\r\n").splitlines()[:60]
    kind = "email"
    if lines and lines[0].startswith("From ") and not _HEADER_LINE.match(lines[0]):
        kind, lines = "mbox", lines[1:]
    names: list[str] = []
    for line in lines:
        if not line.strip():
            break
        if line[:1] in (" ", "\t"):
            continue  # folded continuation
        if line.startswith("From ") and names:
            # an envelope line under annotations a mail client prepended (MH's "Replied:"
            # and "Forwarded:" lines); Python's parser skips it too, as a MisplacedEnvelopeHeaderDefect
            continue
        m = _HEADER_LINE.match(line)
        if not m:
            return None
        names.append(m.group(1).lower())
    known = _MAIL_HEADERS.intersection(names)
    if len(names) >= 2 and len(known) >= 2 and _MAIL_STRONG & known:
        return kind
    return None


def _ascii_view(sample: bytes) -> str:
    """Text good enough to look for ASCII markers (headers, tags) whatever the encoding."""
    enc = _bom_encoding(sample) or _bomless_utf16(sample)
    if enc == "utf-8-sig":
        return sample[3:].decode("latin-1")
    if enc:
        return sample.decode(enc, errors="replace")
    return sample.decode("latin-1")


_ROFF_LINE = re.compile(r"^(?:[.'][ \t]*(?:[A-Za-z\\]|$)|\\\")", re.M)  # a request, macro, comment
_TITLE_MACRO = re.compile(r"^[.'][ \t]*(?:TH|Dd|Dt)(?:[ \t]|$)", re.M)
_SO_ALIAS = re.compile(r"^[.']\s*so\s+[\w.+-]*/?[\w.+-]*\.\w+\s*$")


_INFO_BANNER = re.compile(r"\AThis is [^\n]+, produced by (?:makeinfo|texi2any)", re.IGNORECASE)


def looks_like_info(text: str) -> bool:
    """Whether decoded text is a makeinfo-written info file: its banner (a split manual's later
    parts open with it too), or a node separator and node header near the start."""
    return bool(_INFO_BANNER.match(text)) or "\x1f\nFile: " in text[:4096]


# AsciiDoc's telltale constructs, each with its weight; a preprocessor directive is AsciiDoc's
# own syntax and counts twice (an included fragment may have little else)
_ASCIIDOC_SIGNS = [(re.compile(p, re.M), weight) for p, weight in (
    (r"^(?:include|ifdef|ifndef|endif|ifeval)::[^\s\[]{0,500}\[[^\n]{0,500}\]$", 2),
    # a description list term over its description ("--all::"; reStructuredText's "Example::"
    # has a blank line under it, its directives start "..")
    (r"^(?!\.\. )[^\s/:][^\n]{0,200}?[^:\s](?::{2,4}|;;)\n[ \t]*\S", 1),
    # a fenced listing or literal block after a blank line or a `[source]`/`ifdef::…[]` line
    # (under a text line it underlines a title)
    (r"(?:\A|(?<=\n\n)|(?<=\]\n))(-{4,}|\.{4,})\n(?:.*\n){0,200}?\1$", 1),
    (r"^\[(?:verse|source|listing|literal|quote|horizontal|NOTE|TIP|WARNING|IMPORTANT|CAUTION|cols=|"
     r"options=|\[[\w-]{1,100}\]\])", 1),
    (r"\blinkgit:[\w.-]{1,100}\[\d", 2),  # Git's own macro
    (r"\b(?:link|xref|image):[^\s\[]{1,500}\[|<<[\w-]{1,100}(?:,[^<>\n]{1,200})?>>", 1),
    (r"^:[\w][\w-]{0,100}:(?: |$)", 1),  # attribute entries
)]
_ASCIIDOC_TITLE = re.compile(r"\A(?:= \S[^\n]*|([^\n]+)\n([=]+))\n")


def looks_like_asciidoc(text: str) -> bool:
    """Whether a `.txt` file is AsciiDoc source: three signs of it, or a document title and
    two (a `term::` over its description, a `----` fence after a blank line closed by the same
    line, `[verse]`, `link:`; an `include::` or `ifdef::` line or Git's `linkgit:` counts
    twice). Plain text rarely has one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    signs = sum(weight for sign, weight in _ASCIIDOC_SIGNS if sign.search(text))
    m = _ASCIIDOC_TITLE.match(text)
    titled = m is not None and (not m.group(2) or abs(len(m.group(1).rstrip()) - len(m.group(2))) <= 3)
    return signs >= 3 or (titled and signs >= 2)


def looks_like_markdown(text: str) -> bool:
    """Whether a text without a telling name is Markdown: it opens with an ATX heading, or has a
    fenced block, or two headings and inline markup (a link, bold, code). A lone "# ls -l" line
    is a root prompt in a FAQ (xterm's), and a "#" comment no heading."""
    first = text.lstrip("\ufeff \t\r\n")
    if _MD_HEADING.match(first):
        return True
    if len(_MD_FENCE.findall(text)) >= 2:
        return True
    return len(_MD_HEADING.findall(text)) >= 2 and _MD_INLINE.search(text) is not None


_RST_SIGNS = [(re.compile(sign, re.MULTILINE), weight) for sign, weight in (
    (r"^\.\. [A-Za-z][\w:-]{0,60}::(?: |$)", 2),  # a directive
    (r"^\.\. _[^:\n`]{1,200}:(?: |$)", 2),  # a hyperlink target
    (r"\A\s*([=\-~*#^\"+])\1{2,}\n[^\n]{1,200}\n\1{3,}[ \t]*$", 2),  # an overlined title
    (r":[a-z][\w:-]{0,40}:`[^`\n]{1,200}`", 1),  # a role
    (r"`[^`\n]{1,200}`__?(?:\W|$)", 1),  # a reference
    (r"^\.\. \[[\w#*-]{1,40}\] ", 1),  # a footnote or citation
)]


def looks_like_rst(text: str) -> bool:
    """Whether a `.txt` file is reStructuredText (docutils' own documentation is): three signs of
    it, where a directive, a target or an overlined title counts twice. Plain text underlines
    its titles too, so an underline is no sign."""
    return sum(weight for sign, weight in _RST_SIGNS if sign.search(text)) >= 3


def looks_like_roff(text: str) -> bool:
    """Whether text is roff manual-page source: it opens with a roff request, macro or comment
    line and names the page with `.TH` (man) or `.Dd`/`.Dt` (mdoc) — or is an `.so` alias of
    another page file (`.so man1/ls.1`), comments around it allowed."""
    head = text.lstrip("\ufeff \t\r\n")
    if not _ROFF_LINE.match(head):
        return False
    lines = [ln for ln in head[:4096].splitlines() if ln.strip() and not re.match(r"^(?:[.']\s*)?\\\"", ln)]
    if len(lines) == 1 and _SO_ALIAS.match(lines[0].strip()):
        return True
    return _TITLE_MACRO.search(head[:65536]) is not None


_POD_OPENING = re.compile(r"\A=(?:pod|head[1-6]|encoding)(?:[ \t][^\n]*)?\r?$", re.M)
_POD_WEAK_OPENING = re.compile(r"\A=(?:begin|for|over)(?:[ \t][^\n]*)?\r?$", re.M)
_POD_COMMAND = re.compile(r"^=(?:head[1-6]|item|back|cut|end)\b", re.M)


def looks_like_pod(text: str) -> bool:
    """Whether text (leading blanks removed) is Perl's POD: its first line is a `=pod`, `=headN`
    or `=encoding` command, or a `=begin`/`=for`/`=over` one with another command line after."""
    if _POD_OPENING.match(text):
        return True
    return bool(_POD_WEAK_OPENING.match(text)) and _POD_COMMAND.search(text, 1) is not None


def sniff(data: bytes) -> Sniffed:
    """Classify bytes as pdf, docx, html, email, mbox, text, or a labelled binary."""
    head = data[:1024]
    if b"%PDF-" in head:
        return Sniffed("pdf", "PDF document")
    if data.startswith(b"PK\x03\x04"):
        try:
            names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            return Sniffed("binary", "damaged zip archive", str(e))
        if "word/document.xml" in names:
            return Sniffed("docx", "Word document")
        if "xl/workbook.xml" in names:
            return Sniffed("xlsx", "Excel workbook (.xlsx)")
        if "ppt/presentation.xml" in names:
            return Sniffed("pptx", "PowerPoint presentation (.pptx)")
        if "mimetype" in names:
            mimetype = _zip_mimetype(data)
            if mimetype in _ODF_MIMETYPES:
                kind, label = _ODF_MIMETYPES[mimetype]
                return Sniffed(kind, label)
            return Sniffed("binary", f"OpenDocument/EPUB package of type {mimetype or '?'}")
        return Sniffed("binary", "zip archive")
    if data.startswith(_OLE):
        if "EncryptedPackage".encode("utf-16-le") in data[: 1 << 20]:
            return Sniffed("encrypted-office", "password-protected Office document")
        return Sniffed("binary", "legacy Office (OLE) file such as .doc/.xls/.ppt")
    for magic, label in _MAGIC:
        if data.startswith(magic):
            return Sniffed("binary", label)
    if data[257:262] == b"ustar":
        return Sniffed("binary", "tar archive")
    if data.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"{\\rtf":
        return Sniffed("rtf", "RTF document")
    evidence = _looks_binary(data[:_SAMPLE])
    if evidence:
        return Sniffed("binary", "binary data", evidence)
    return _text_kind(_ascii_view(data[:_SAMPLE]).lstrip("\ufeff \t\r\n"))


def _text_kind(stripped: str) -> Sniffed:
    """Which text format the opening of a text file (leading blanks removed) is written in."""
    mail = _looks_like_email(stripped)
    if mail:
        return Sniffed(mail, "email message" if mail == "email" else "mbox mailbox")
    if stripped[:1] in (".", "'", "\\") and looks_like_roff(stripped):
        return Sniffed("man", "manual page (roff)")
    if looks_like_info(stripped):
        return Sniffed("info", "GNU info manual")
    if stripped[:1] == "=" and looks_like_pod(stripped):
        return Sniffed("pod", "POD document")
    if (_XML_DECL.match(stripped) or _SVG_ROOT.match(stripped)) and not _xhtml_root(stripped):
        return Sniffed("xml", "XML document")
    if _HTML_MARK.search(stripped[:2048]):
        return Sniffed("html", "HTML document")
    return Sniffed("text", "text")


def _a(label: str) -> str:
    """`label` with its article: an HTML document, a manual page (roff)."""
    vowel = label[:1] in tuple("AEIOUaeiou") or label.startswith(("HTML", "XML", "RTF", "SVG"))
    return f"{'an' if vowel else 'a'} {label}"


def _xhtml_root(text: str) -> bool:
    """Whether the first element of an XML text is <html> (XHTML), skipping the prolog."""
    body = re.sub(r"<!--.*?-->|<!DOCTYPE[^>]*>|<\?.*?\?>", "", text[:8192], flags=re.S)
    m = _XML_ROOT.search(body)
    return m is not None and m.group(1).split(":")[-1].lower() == "html"


def _zip_mimetype(data: bytes) -> str:
    """The `mimetype` member of an OpenDocument/EPUB package (stored first, uncompressed)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return zf.read("mimetype")[:200].decode("ascii", "replace").strip()
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, RuntimeError):
        return ""


def _is_blank(data: bytes) -> bool:
    if len(data) > 4 * _SAMPLE:
        return not data[:_SAMPLE].strip() and not data.strip()
    enc = _bom_encoding(data) or _bomless_utf16(data)
    if enc:
        return not data.decode(enc, errors="replace").lstrip("\ufeff").strip()
    return not data.strip(b" \t\r\n\f\v\x00")


def detect_format(data: bytes, filename: str) -> Detected:
    """The parser format for `data` named `filename`, or a specific ParseError. A file named as
    compressed whose bytes are not (`ls.1.gz` stored plain) is judged by the name under the
    suffix, with a warning: it was read as text, whatever that name said."""
    name = PurePosixPath(filename).name or filename
    ext = PurePosixPath(name).suffix.lower().lstrip(".")
    # a compression suffix on bytes that are not compressed (`assets.parsing.compressed` opens
    # those that are): the name under it says what the file is
    if ext not in compressed.SUFFIXES or compressed.compression_of(data) is not None:
        return _detect(data, name, ext)
    detected = _detect(data, name, PurePosixPath(name[: -len(ext) - 1]).suffix.lower().lstrip("."))
    note = f"{name} is named .{ext} but is not compressed; read as it is"
    return Detected(detected.format, [note, *detected.warnings], detected.label)


# not yet split (issue 13): the sniffing rules run in a fixed precedence order, one branch each
def _detect(data: bytes, name: str, ext: str) -> Detected:  # noqa: C901  # length: ordered rule chain
    by_ext = EXTENSIONS.get(ext)
    if _is_blank(data):
        raise EmptyDocument(f"{name}: the file is empty ({len(data)} bytes, whitespace only)")
    s = sniff(data)
    shown = f".{ext}" if ext else "no extension"

    if s.kind in BINARY_FORMATS:
        if by_ext is None or by_ext == s.kind:
            return Detected(s.kind)
        return Detected(s.kind, [f"{name} is named {shown} but is a {s.label}; parsed as {s.kind}"])
    if s.kind == "encrypted-office":
        raise EncryptedDocument(f"{name} is a {s.label}; remove the password to index it")
    if s.kind == "binary":
        detail = f"{s.label}" + (f" ({s.evidence})" if s.evidence else "")
        if by_ext == "pdf" and s.label in IMAGE_LABELS:  # a scan saved under a PDF's name, as a PDF
            # named .png is read as the PDF it is: the magic number proves either
            return Detected("image", [f"{name} is named .pdf but is a {s.label}; read as one"], s.label)
        if by_ext == "pdf":
            if s.label == "binary data":
                raise CorruptDocument(f"{name} is not a readable PDF: no %PDF- header, {detail}")
            raise FormatMismatch(f"{name} is named .pdf but is a {detail}")
        if by_ext in _ZIP_FORMATS:
            if s.label.startswith("damaged"):
                raise CorruptDocument(f"{name} is not a readable {shown} package: {detail}")
            if "OLE" in s.label:
                raise UnsupportedFormat(
                    f"{name} is a legacy binary Office file ({_LEGACY[by_ext]}) renamed "
                    f"{shown}; convert it to {shown}"
                )
            if "zip" in s.label or "package" in s.label:
                raise FormatMismatch(f"{name} is named {shown} but is a {detail}")
            raise CorruptDocument(f"{name} is not a readable {shown} (not a zip archive): {detail}")
        if by_ext == "rtf":
            raise CorruptDocument(f"{name} is not a readable RTF (no {{\\rtf header): {detail}")
        if by_ext in TEXT_FORMATS:
            raise FormatMismatch(f"{name} is named {shown} but looks binary: {detail}")
        if s.label in IMAGE_LABELS:  # a scan, read by OCR (assets.parsing.image)
            return Detected("image", label=s.label)
        if "OLE" in s.label or ext in FALLBACK_EXTENSIONS:
            # No native parser: unstructured's partition is the last resort (.msg, .doc, ...).
            return Detected("fallback", [f"{name}: no native parser; read by unstructured"], detail)
        raise UnsupportedFormat(f"{name}: {detail} is not a supported document format")

    # The bytes are text.
    if by_ext in BINARY_FORMATS:
        label = "plain" if s.kind == "text" else s.label
        raise FormatMismatch(
            f"{name} is named {shown} but contains {label} text, not a {by_ext.upper()} "
            "(an error page or export saved under the wrong name?)"
        )
    if by_ext is None:
        text = _ascii_view(data[:_SAMPLE])
        if s.kind == "text" and looks_like_markdown(text) and not DEBIAN_CHANGELOG.match(text.lstrip("\ufeff")):
            return Detected("markdown")
        return Detected(s.kind)
    if by_ext == s.kind:
        if ext in ("txt", "text") and looks_like_asciidoc(_ascii_view(data[:_SAMPLE])):
            return Detected("asciidoc")  # Git's and many projects' manual sources are .txt
        if ext in ("txt", "text") and looks_like_rst(_ascii_view(data[:_SAMPLE])):
            return Detected("rst")  # so are docutils' and many Python projects'
        return Detected(by_ext)
    if by_ext == "html":
        return Detected("html")  # fragments without <html> markers are still HTML
    if by_ext in ("csv", "json", "jsonl") and s.kind in ("html", "xml"):
        if _ascii_view(data[:_SAMPLE]).lstrip("\ufeff \t\r\n").startswith("<"):
            raise FormatMismatch(
                f"{name} is named {shown} but contains an {s.label} (an error page or export "
                "saved under the wrong name?)"
            )
        return Detected(by_ext)
    if by_ext == "xml" and s.kind == "html" and _xhtml_root(_ascii_view(data[:_SAMPLE])):
        return Detected("html", [f"{name} is named .xml but is an XHTML page; parsed as HTML"])
    if ext in ("txt", "text") and s.kind == "html" and looks_like_asciidoc(_ascii_view(data[:_SAMPLE])):
        return Detected("asciidoc")  # AsciiDoc that writes `<head>` in its text is no HTML page
    if by_ext == "text" and s.kind in ("html", "email", "mbox", "man", "info"):
        return Detected(s.kind, [f"{name} is named {shown} but is an {s.label}; parsed as such"])
    if by_ext == "text" and s.kind == "pod":  # a perlfaq or README saved as .txt
        return Detected("pod", [f"{name} is named {shown} but is {_a(s.label)}; parsed as such"])
    if by_ext == "markdown":
        if s.kind == "html" and re.match(r"\s*<(!doctype|html)", _ascii_view(data[:4096]), re.I):
            return Detected("html", [f"{name} is named {shown} but is an HTML document"])
        return Detected("markdown")
    if by_ext == "mbox" and s.kind == "email":
        return Detected("email", [f"{name} is named .mbox but holds a single message"])
    if by_ext in ("email", "mbox") and s.kind == "mbox":
        return Detected("mbox")
    if by_ext in ("email", "mbox") and s.kind != "text":  # an HTML page saved as .eml kept its tags
        return Detected(s.kind, [f"{name} is named {shown} but has no RFC 822 headers: it is {_a(s.label)}; "
                                 "parsed as such"])
    if by_ext in ("email", "mbox"):
        return Detected(
            "text", [f"{name} is named {shown} but has no RFC 822 headers; parsed as plain text"]
        )
    if by_ext == "info":  # a Drupal module's .info, notes: the name is common, the format is makeinfo's
        return Detected(s.kind, [f"{name} is named {shown} but is no GNU info manual; parsed as {s.label}"])
    return Detected(by_ext)
