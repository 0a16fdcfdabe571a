"""Email (.eml) and mailbox (.mbox) parsing with the standard library's `email` package.

* Metadata: subject, from, to, cc, date (ISO 8601 when parseable), message_id, in_reply_to,
  references and thread_id (first of References, else In-Reply-To, else Message-ID) so that the
  messages of one thread can be grouped.
* Body: text/plain is preferred in multipart/alternative (it is what the sender wrote; the
  HTML twin adds markup and tracking), HTML is the fallback and goes through the HTML parser.
* Quoted history ("> " lines, "On … wrote:" blocks, Outlook "Original Message" tails, HTML
  blockquotes) is cut from the body and kept as ONE block with meta {"quoted": True}: it
  duplicates earlier messages, so retrieval should be able to down-weight or drop it.
* Attachments in a parseable format are parsed recursively and appended under a heading
  "Attachment: <name>" (meta {"attachment": name}); every attachment is listed in
  metadata["attachments"] as {"filename", "content_type", "size", "parsed"[, "error"]}.
* An mbox is split into messages; each becomes a level-1 heading section (its subject).
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable
from email import errors as email_errors
from email import policy
from email.headerregistry import BaseHeader, HeaderRegistry
from email.message import EmailMessage, Message, MIMEPart
from email.parser import BytesParser
from email.utils import parsedate_to_datetime
from pathlib import PurePosixPath
from typing import Any

from assets.parsing.html import html_blocks
from assets.parsing.sniff import EXTENSIONS, decode_text
from assets.parsing.text import text_blocks
from assets.parsing.textutil import clean_inline, normalize_text
from connectors import message_text
from connectors.documents import Block, ParseResult
from connectors.errors import CorruptDocument, ParseError
from connectors.message_text import strip_message_noise

__all__ = ["parse_email", "parse_mbox", "split_mbox", "split_quoted", "split_side", "strip_message_noise"]

AttachmentParser = Callable[[bytes, str], ParseResult]

PARSEABLE_ATTACHMENTS = {
    "pdf", "docx", "text", "markdown", "html", "email", "csv", "json", "jsonl", "xml", "rst",
    "asciidoc", "pptx", "xlsx", "odt", "ods", "odp", "epub", "rtf",
}
_MSG_ID = re.compile(r"<[^<>\s]+>")
_MBOX_FROM_LINE = re.compile(rb"(?:\A|\n)From ")  # where a separator line may start
_SENDER = re.compile(rb"\S+ ")
_CLOCK = re.compile(rb"\d\d:\d\d")
_MBOX_ESCAPED = re.compile(rb"^>(>*From )", re.MULTILINE)
_MISSING = object()


class _ParsedMessage(EmailMessage):
    """An `EmailMessage` that parses each header once.

    The standard policy re-parses a header on every read, and reading a message reads
    Content-Type and Content-Disposition over and over (`get_body`, `walk`, `get_filename`,
    `is_attachment`): about half of a mail's parse time went to that. The parser fills the
    headers through `set_raw`; every change clears the cache, so the values are those the
    standard class returns."""

    def get(self, name: str, failobj: Any = None) -> Any:
        cache: dict[str, Any] = self.__dict__.setdefault("_parsed", {})
        key = name.lower()
        if key not in cache:
            cache[key] = self._fetch(key)
        value = cache[key]
        return failobj if value is _MISSING else value

    def _fetch(self, key: str) -> Any:
        """`EmailMessage.get`, through a parse cache shared by the messages of this process; a
        field is parsed at most `MAX_HEADER_FIELD` characters long, in a MIME part as at the top
        (`_capped_headers` cuts only the top's, before the parser runs)."""
        for k, v in self.raw_items():
            if k.lower() == key:
                if isinstance(v, str) and len(v) > MAX_HEADER_FIELD:
                    v = v[:MAX_HEADER_FIELD].rstrip()
                    self.__dict__["_headers_cut"] = True
                if self.policy is _POLICY and isinstance(v, str) and len(v) <= _CACHED_RAW_CHARS:
                    return _fetch_parse(k, v)
                return self.policy.header_fetch_parse(k, v)
        return _MISSING

    def _changed(self) -> None:
        self.__dict__.pop("_parsed", None)

    def set_raw(self, name: str, value: Any) -> None:
        self._changed()
        super().set_raw(name, value)

    def __setitem__(self, name: str, val: Any) -> None:
        self._changed()
        super().__setitem__(name, val)

    def __delitem__(self, name: str) -> None:
        self._changed()
        super().__delitem__(name)

    def replace_header(self, _name: str, _value: Any) -> None:
        self._changed()
        super().replace_header(_name, _value)

    def set_boundary(self, boundary: str) -> None:  # edits the header list in place
        self._changed()
        super().set_boundary(boundary)


class _Headers(HeaderRegistry):
    """The standard header registry, minus building a new class for every header it makes."""

    @functools.cache  # noqa: B019 - one registry per process, never collected
    def __getitem__(self, name: str) -> type[BaseHeader]:
        return super().__getitem__(name)


_POLICY = policy.default.clone(message_factory=_ParsedMessage, header_factory=_Headers())
_PARSER = BytesParser(policy=_POLICY)


# A parsed header holds a token tree hundreds of times its raw size (a 180-character To list,
# 80 KB): only short values, the repeated From, To and Content-Type lines, are cached, and few
# of them, so the cache stays near 30 MB whatever the archive.
_CACHED_RAW_CHARS = 256


@functools.lru_cache(maxsize=256)
def _fetch_parse(name: str, raw: str) -> Any:
    """A header's parsed value, once per distinct raw value: the messages of an archive repeat
    the same From, To and Content-Type lines (a list's address in every To), and parsing an
    address list is the costliest step of reading a short mail. Header objects are immutable."""
    return _POLICY.header_fetch_parse(name, raw)


def split_quoted(text: str) -> tuple[str, str]:
    """(the new text of a plain-text message, its quoted history, normalised)."""
    main, quoted = message_text.split_quoted(text)
    return main, normalize_text(quoted)


def split_side(text: str) -> tuple[str, str]:
    """(a message's own words, its side text, normalised): see `connectors.message_text`."""
    main, side = message_text.split_side(text)
    return main, normalize_text(side)


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # malformed headers must not sink the message
        return ""
    return clean_inline(str(value)) if value is not None else ""


def _metadata(msg: Message) -> dict[str, Any]:
    refs = _MSG_ID.findall(_header(msg, "references"))
    in_reply = _MSG_ID.findall(_header(msg, "in-reply-to"))
    message_id = (_MSG_ID.findall(_header(msg, "message-id")) or [""])[0]
    raw_date = _header(msg, "date")
    try:
        date = parsedate_to_datetime(raw_date).isoformat() if raw_date else None
    except (TypeError, ValueError, IndexError):
        date = raw_date or None
    return {
        "subject": _header(msg, "subject"),
        "from": _header(msg, "from"),
        "to": _header(msg, "to"),
        "cc": _header(msg, "cc"),
        "date": date,
        "message_id": message_id or None,
        "in_reply_to": in_reply[0] if in_reply else None,
        "references": refs,
        "thread_id": (refs[0] if refs else in_reply[0] if in_reply else message_id) or None,
    }


def _text_content(part: MIMEPart) -> str:
    if part.get_content_charset() in (None, "us-ascii", "ascii"):
        # Undeclared 8-bit text (common in old archives): the standard library reads it as
        # ASCII and turns every accented letter into U+FFFD. Read it as UTF-8, else as the
        # legacy encoding that fits, as a plain text file would be.
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes) and not payload.isascii():
            return decode_text(payload)[0]
    try:
        return str(part.get_content())
    except (LookupError, UnicodeError, KeyError):  # unknown or lying charset
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""


def _body_part(msg: EmailMessage) -> tuple[MIMEPart | None, str]:
    """The part holding the message text, and its content.

    text/plain is preferred, but a blank plain part (some mailers add an empty one after the
    real HTML body) falls back to the HTML part, then to any inline text part.
    """
    tried: list[MIMEPart] = []
    for prefs in (("plain", "html"), ("html",)):
        part = msg.get_body(preferencelist=prefs)
        if part is None or any(part is t for t in tried):
            continue
        tried.append(part)
        content = _text_content(part)
        if content.strip():
            return part, content
    for part in msg.walk():
        if (
            part.get_content_type() in ("text/plain", "text/html")
            and not part.is_attachment()
            and not any(part is t for t in tried)
        ):
            content = _text_content(part)
            if content.strip():
                return part, content
    return None, ""


def _body_blocks(msg: EmailMessage) -> tuple[list[Block], str]:
    body, content = _body_part(msg)
    if body is None:
        return [], ""
    if body.get_content_subtype() == "html":
        quotes: list[str] = []
        try:
            blocks, _ = html_blocks(content, quotes=quotes)
        except ParseError:  # markup without any content
            return [], ""
        return blocks, normalize_text("\n\n".join(quotes))
    main, quoted = split_quoted(content)
    main, side = split_side(main)
    blocks = text_blocks(main)
    if side:
        blocks.append(Block("paragraph", side, meta={"side": "footer"}))
    return blocks, quoted


def _shift(blocks: list[Block], by: int) -> list[Block]:
    for b in blocks:
        if b.kind == "heading" and b.level:
            b.level = min(6, b.level + by)
    return blocks


def _attachment_bytes(part: EmailMessage) -> bytes:
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        inner = inner[0] if isinstance(inner, list) and inner else inner
        return inner.as_bytes() if isinstance(inner, Message) else b""
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _attachments(
    msg: EmailMessage, level: int, parse_attachment: AttachmentParser, warnings: list[str]
) -> tuple[list[Block], list[dict[str, Any]]]:
    blocks: list[Block] = []
    listed: list[dict[str, Any]] = []
    for part in msg.iter_attachments():
        ctype = part.get_content_type()
        name = part.get_filename() or ("forwarded.eml" if ctype == "message/rfc822" else "")
        if not name:
            continue  # inline parts without a name: signatures, tracking pixels
        entry: dict[str, Any] = {"filename": name, "content_type": ctype, "size": None, "parsed": False}
        listed.append(entry)
        try:
            data = _attachment_bytes(part)
        except RecursionError:  # the stdlib writes a message out recursively: a forward ~150 levels deep
            entry["error"] = "forwarded messages nested too deep to read"
            warnings.append(f"attachment {name!r} not parsed: {entry['error']}")
            continue
        entry["size"] = len(data)
        fmt = EXTENSIONS.get(PurePosixPath(name).suffix.lower().lstrip("."))
        if fmt not in PARSEABLE_ATTACHMENTS:
            continue
        try:
            sub = parse_attachment(data, name)
        except ParseError as e:
            entry["error"] = f"{e.reason}: {e}"
            warnings.append(f"attachment {name!r} not parsed ({e.reason}): {e}")
            continue
        entry["parsed"] = True
        heading = Block(
            "heading", f"Attachment: {name}", level=min(6, level), meta={"attachment": name}
        )
        blocks.append(heading)
        for b in _shift(sub.blocks, level):
            b.meta["attachment"] = name
            blocks.append(b)
        warnings.extend(f"attachment {name!r}: {w}" for w in sub.warnings)
    return blocks, listed


def _message(
    msg: EmailMessage, base: int, parse_attachment: AttachmentParser, warnings: list[str]
) -> tuple[list[Block], dict[str, Any]]:
    meta = _metadata(msg)
    body, quoted = _body_blocks(msg)
    blocks = _shift(body, base)
    if quoted.strip():
        blocks.append(Block("paragraph", quoted, meta={"quoted": True}))
    extra, listed = _attachments(msg, base + 1, parse_attachment, warnings)
    meta["attachments"] = listed
    if cut := sum(1 for part in msg.walk() if part.__dict__.get("_headers_cut")):
        warnings.append(f"header fields of {cut} MIME part(s) over {MAX_HEADER_FIELD:,} bytes read to that length")
    return blocks + extra, meta


_BOUNDARY_LINE = re.compile(rb"^--([!-~]{1,70})\r?$", re.MULTILINE)
_MULTIPART_TYPE = re.compile(rb"^content-type:[ \t]*multipart/[!-~]+?(?=;|\s|$)", re.IGNORECASE | re.MULTILINE)


# bytes of one header field (folded lines included) that are parsed: the standard library's
# header parser is quadratic in a field's length (4 KB of '"' parse in 0.1 s, 16 KB in 2-3 s,
# 200 KB in 100 s); no real field but a long To, Cc or References comes near it, and those keep
# their first 4 KB (a thread's root is the first id of References)
MAX_HEADER_FIELD = 4_096


def _capped_headers(raw: bytes, warnings: list[str]) -> bytes:
    """`raw` with each header field cut to `MAX_HEADER_FIELD` bytes. The standard library's
    header parser keeps the rest of the field on every encoded word it reads (CPython
    gh-136063): memory grows with the square of a field's length, and a 224 KB Subject of
    encoded words took 1.8 GB. No real field comes near the bound."""
    end = re.search(rb"\r?\n\r?\n", raw)
    head_end = end.start() if end else len(raw)
    if head_end <= MAX_HEADER_FIELD:
        return raw  # no field can be over the bound
    fields: list[bytes] = []
    for line in raw[:head_end].splitlines(keepends=True):
        if fields and line[:1] in (b" ", b"\t"):
            fields[-1] += line
        else:
            fields.append(line)
    cut = [f for f in fields if len(f) > MAX_HEADER_FIELD]
    if not cut:
        return raw
    warnings.append(f"{len(cut)} header field(s) over {MAX_HEADER_FIELD:,} bytes cut to that length")
    newline = b"\r\n" if fields[0].endswith(b"\r\n") else b"\n"
    fields = [f if len(f) <= MAX_HEADER_FIELD else f[:MAX_HEADER_FIELD].rstrip() + newline for f in fields]
    return b"".join(fields) + raw[head_end:]


def _parse_message(raw: bytes, warnings: list[str]) -> EmailMessage:
    """Parse one message, repairing a multipart whose boundary is missing or never used.

    Some mailers (and spam kits) declare one boundary and separate the parts with another, or
    declare `multipart/...` with no boundary at all; the stdlib then sees no parts and the body
    would be lost (an "empty" dead letter of a message that has text). The boundary actually
    used is the first "--token" line of the body.
    """
    raw = _capped_headers(raw, warnings)
    try:
        msg: EmailMessage = _PARSER.parsebytes(raw)
    except RecursionError:  # the stdlib's parser descends once per level of parts
        raise CorruptDocument("MIME parts (forwarded messages, multiparts) nested too deep for the e-mail "
                              "parser to read: hundreds of levels") from None
    if msg.get_content_maintype() != "multipart":
        return msg
    missing = any(isinstance(d, email_errors.NoBoundaryInMultipartDefect) for d in msg.defects)
    if not missing and not any(isinstance(d, email_errors.StartBoundaryNotFoundDefect) for d in msg.defects):
        return msg
    declared = msg.get_boundary()
    split = re.search(rb"\r?\n\r?\n", raw)
    if not (declared or missing) or not split:
        return msg
    head, body = raw[: split.end()], raw[split.end() :]
    m = _BOUNDARY_LINE.search(body)
    if not m:
        return _without_parts(msg, declared, warnings)
    if declared and m.group(1).decode("ascii", "replace") == declared:
        return msg
    used = m.group(1).removesuffix(b"--")
    if declared:
        fixed = head.replace(declared.encode("ascii", "replace"), used)
    else:  # the top-level Content-Type is the first one in the head
        fixed = _MULTIPART_TYPE.sub(lambda t: t.group(0) + b'; boundary="' + used + b'"', head, count=1)
    repaired: EmailMessage = _PARSER.parsebytes(fixed + body)
    if repaired.is_multipart() and list(repaired.iter_parts()):
        what = f"multipart boundary {declared!r} is never used" if declared else "multipart declares no boundary"
        warnings.append(f"email: {what}; parts split on {used.decode('ascii', 'replace')!r} instead")
        return repaired
    return msg


def _without_parts(msg: EmailMessage, declared: str | None, warnings: list[str]) -> EmailMessage:
    """A multipart whose body has no boundary line at all: its text, if any, is read as the
    plain body it is. It was an "empty" dead letter, the text lost under a misleading reason
    (a robustness pass)."""
    payload = msg.get_payload()
    if not isinstance(payload, str) or not payload.strip():
        return msg
    msg.set_type("text/plain")
    msg.del_param("boundary")
    what = f"boundary {declared!r} is never used" if declared else "no boundary is declared"
    warnings.append(f"email: multipart with no parts ({what}); its body read as plain text")
    return msg


def parse_email(data: bytes, parse_attachment: AttachmentParser) -> ParseResult:
    """Parse one RFC 822 message; `parse_attachment(bytes, filename)` parses attachments."""
    warnings: list[str] = []
    msg = _parse_message(data.removeprefix(codecs.BOM_UTF8), warnings)
    warnings += [f"email: {d.__class__.__name__}" for d in msg.defects[:3]]
    blocks, meta = _message(msg, 0, parse_attachment, warnings)
    return ParseResult(
        blocks=blocks,
        title=meta["subject"] or None,
        format="email",
        metadata=meta,
        warnings=warnings,
    )


def split_mbox(data: bytes) -> list[bytes]:
    """Messages of an mbox (mboxo/mboxrd), split on "From " separator lines, unescaped.

    A separator is a whole line `From <sender> <...hh:mm...>` (the line break before it belongs
    to it). It was one pattern, `(?:\\A|\\n)From \\S+ +[^\\n]*\\d\\d:\\d\\d[^\\n]*\\n`, whose runs of spaces
    and of any character backtracked into each other: a 16 KB line took 91 s (cubic). Each line
    that opens with "From " is now tested by parts, in one pass over it."""
    parts: list[bytes] = []
    start = consumed = 0  # where the current message starts; the end of the last separator
    for m in _MBOX_FROM_LINE.finditer(data):
        line = m.end() - 5
        end = data.find(b"\n", line)
        if end < 0 or m.start() < consumed:  # the last line (no break), or its break was a separator's
            continue
        sender = _SENDER.match(data, line + 5, end)
        if sender is None or _CLOCK.search(data, sender.end(), end) is None:
            continue
        parts.append(data[start:m.start()])
        start = consumed = end + 1
    parts.append(data[start:])
    return [_MBOX_ESCAPED.sub(rb"\1", p) for p in parts if p.strip()]


def parse_mbox(data: bytes, parse_attachment: AttachmentParser) -> ParseResult:
    """Parse a mailbox: every message becomes a level-1 section headed by its subject."""
    blocks: list[Block] = []
    messages: list[dict[str, Any]] = []
    warnings: list[str] = []
    for n, raw in enumerate(split_mbox(data.removeprefix(codecs.BOM_UTF8)), 1):
        try:
            msg = _parse_message(raw, warnings)
        except CorruptDocument as e:  # one message the parser cannot read; the mailbox's others are read
            warnings.append(f"message {n} not read: {e}")
            continue
        body, meta = _message(msg, 1, parse_attachment, warnings)
        heading_meta = {k: meta[k] for k in ("message_id", "from", "date", "thread_id")}
        blocks.append(
            Block("heading", meta["subject"] or "(no subject)", level=1, meta=heading_meta)
        )
        blocks.extend(body)
        messages.append(meta)
    attachments = [a for m in messages for a in m["attachments"]]
    title = next((m["subject"] for m in messages if m["subject"]), None)
    return ParseResult(
        blocks=blocks,
        title=title,
        format="mbox",
        metadata={"message_count": len(messages), "messages": messages, "attachments": attachments},
        warnings=warnings,
    )
