"""Email and mbox parsing: metadata, quoted replies, HTML fallback, attachments."""

from __future__ import annotations

import pytest

from assets.parsing import parse_document
from assets.parsing.email import split_quoted
from connectors.config import ParseConfig
from tests.fixtures import docgen

CFG = ParseConfig()


def test_alternative_prefers_plain_and_fills_metadata() -> None:
    r = parse_document(docgen.eml_alternative_with_quote(), "reply.eml", CFG)
    assert r.format == "email" and r.title == "Re: Budget meeting"
    text = "\n".join(b.text for b in r.blocks)
    assert "PLAINBODY" in text and "HTMLBODY" not in text
    m = r.metadata
    assert m["subject"] == "Re: Budget meeting"
    assert m["from"] == "Alice Smith <alice@example.com>"
    assert m["to"] == "Bob Jones <bob@example.com>"
    assert m["date"] == "2024-03-05T10:15:00+01:00"
    assert m["message_id"] == "<msg2@example.com>"
    assert m["in_reply_to"] == "<msg1@example.com>"
    assert m["references"] == ["<msg0@example.com>", "<msg1@example.com>"]
    assert m["thread_id"] == "<msg0@example.com>"


def test_quoted_reply_is_one_separate_block() -> None:
    r = parse_document(docgen.eml_alternative_with_quote(), "reply.eml", CFG)
    quoted = [b for b in r.blocks if b.meta.get("quoted")]
    assert len(quoted) == 1
    assert "QUOTEDTEXT" in quoted[0].text and "wrote:" in quoted[0].text
    assert not any(line.startswith(">") for line in quoted[0].text.split("\n"))
    main = "\n".join(b.text for b in r.blocks if not b.meta.get("quoted"))
    assert "QUOTEDTEXT" not in main and "wrote:" not in main


def test_html_only_email_goes_through_html_parser() -> None:
    r = parse_document(docgen.eml_html_only(), "news.eml", CFG)
    assert r.blocks[0].kind == "heading" and r.blocks[0].text == "March news"
    assert any("HTMLONLYBODY" in b.text for b in r.blocks if not b.meta.get("quoted"))
    quoted = [b for b in r.blocks if b.meta.get("quoted")]
    assert len(quoted) == 1 and "QUOTEDHTML" in quoted[0].text
    assert r.metadata["thread_id"] == "<news1@example.com>"


def test_attachments_parsed_recursively_and_listed() -> None:
    r = parse_document(docgen.eml_with_attachments(), "report.eml", CFG)
    headings = [b for b in r.blocks if b.kind == "heading" and b.text.startswith("Attachment:")]
    assert [h.text for h in headings] == ["Attachment: report.pdf", "Attachment: notes.txt"]
    assert all(h.meta["attachment"] == h.text.split(": ")[1] for h in headings)
    pdf_blocks = [b for b in r.blocks if b.meta.get("attachment") == "report.pdf"]
    assert any("ATTACHEDPDFTEXT" in b.text and b.page == 1 for b in pdf_blocks)
    assert any("ATTACHEDTXT" in b.text for b in r.blocks if b.meta.get("attachment") == "notes.txt")
    # Attachment headings nest under the attachment heading.
    inner = next(b for b in pdf_blocks if b.kind == "heading" and b.text == "Report")
    assert inner.level == 2
    listed = {a["filename"]: a for a in r.metadata["attachments"]}
    assert set(listed) == {"report.pdf", "notes.txt", "logo.png"}
    assert listed["report.pdf"]["parsed"] and not listed["logo.png"]["parsed"]
    assert r.blocks[0].text == "Please find the report attached. MAINBODY"


def test_mbox_messages_become_sections() -> None:
    r = parse_document(docgen.mbox_two_messages(), "archive.mbox", CFG)
    assert r.format == "mbox" and r.metadata["message_count"] == 2
    headings = [(b.text, b.level) for b in r.blocks if b.kind == "heading"]
    assert headings == [("First message", 1), ("Second message", 1)]
    text = "\n".join(b.text for b in r.blocks)
    assert "From here on we escape." in text and ">From" not in text
    assert r.title == "First message"


def test_split_quoted_variants() -> None:
    main, quoted = split_quoted(
        "Thanks!\n\nOn Tue, Mar 5, 2024 at 10:00 AM Bob Jones <\nbob@example.com> wrote:\n> old\n"
    )
    assert main.strip() == "Thanks!"
    assert "old" in quoted and "bob@example.com> wrote:" in quoted
    main, quoted = split_quoted(
        "New text\n\n-----Original Message-----\nFrom: Bob\nSent: Monday\nSubject: x\n\nOld text"
    )
    assert main.strip() == "New text" and "Old text" in quoted
    main, quoted = split_quoted(
        "New\n\nFrom: Bob <b@x.com>\nSent: Monday, 4 March 2024\nTo: Alice\n\nOld body"
    )
    assert main.strip() == "New" and "Old body" in quoted


def test_the_header_cache_reads_what_the_standard_message_reads_and_follows_changes() -> None:
    """assets.parsing.email parses each header once (a speed-up), and each distinct raw header
    line once per process (an archive repeats its From and To lines); every value must be the one
    the standard `EmailMessage` gives, and a changed header must not be served stale."""
    from email import policy
    from email.parser import BytesParser

    from assets.parsing.email import _PARSER

    raw = (
        b"From: =?utf-8?q?Ana_L=C3=B3pez?= <ana@example.org>\r\nTo: ops@example.org, b@example.org\r\n"
        b"Subject: =?utf-8?q?R=C3=A9union?= of the dock team\r\nMessage-ID: <m1@example.org>\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nThe dock opens at six.\r\n--XX\r\n"
        b"Content-Type: text/plain; name=a.txt\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\n"
        b"attached\r\n--XX--\r\n")
    ours, std = _PARSER.parsebytes(raw), BytesParser(policy=policy.default).parsebytes(raw)
    for name in ("from", "to", "subject", "message-id", "content-type", "date", "x-missing"):
        assert ours.get(name) == std.get(name) and ours.get(name, "d") == std.get(name, "d"), name
    assert [p.get_filename() for p in ours.iter_attachments()] == [p.get_filename() for p in std.iter_attachments()]
    body, std_body = ours.get_body(("plain",)), std.get_body(("plain",))
    assert body is not None and std_body is not None and body.get_content() == std_body.get_content()
    again = _PARSER.parsebytes(raw)  # a second message with the same lines: parsed once per process
    assert again.get("from") is ours.get("from") and again.get("to") == std.get("to")
    ours.replace_header("subject", "Changed")
    assert ours.get("subject") == "Changed"
    del ours["to"]
    assert ours.get("to") is None
    ours["X-New"] = "1"
    assert ours.get("x-new") == "1"


def test_a_multipart_that_declares_no_boundary_keeps_its_text() -> None:
    """`Content-Type: multipart/alternative` with no boundary parameter: the standard library
    sees no parts, and the message was an "empty" dead letter although it has text. The boundary
    its body uses is found and the parts are read, with a warning saying so."""
    raw = (b"From: a@example.org\nSubject: matrix\nMIME-Version: 1.0\nContent-Type: multipart/alternative\n\n"
           b"--abc\nContent-Type: text/plain\n\nThe plumbobvector escalation matrix.\n"
           b"--abc\nContent-Type: text/html\n\n<p>The plumbobvector escalation matrix.</p>\n--abc--\n")
    r = parse_document(raw, "m.eml", CFG)
    assert [b.text for b in r.blocks] == ["The plumbobvector escalation matrix."]
    assert "email: multipart declares no boundary; parts split on 'abc' instead" in r.warnings


@pytest.mark.parametrize("content_type", [b'multipart/mixed; boundary="NEVERUSED"', b"multipart/mixed"])
def test_a_multipart_without_any_part_keeps_its_text(content_type: bytes) -> None:
    """A multipart whose body never has a boundary line: its text was an "empty" dead letter
    (no text could be extracted) although the message has three lines of it."""
    raw = (b"From: a@example.org\nSubject: hi\nMIME-Version: 1.0\nContent-Type: " + content_type + b"\n\n"
           b"The plumbobvector escalation matrix is due.\nSecond line of real text.\n")
    r = parse_document(raw, "m.eml", CFG)
    assert " ".join(b.text for b in r.blocks) == "The plumbobvector escalation matrix is due. Second line of real text."
    assert any("its body read as plain text" in w for w in r.warnings), r.warnings


def test_a_message_under_a_mail_clients_annotations_is_read_as_email() -> None:
    """MH's `repl -annotate` prepends "Replied:" lines above the envelope "From " line (18 of
    the SpamAssassin corpus's ham messages, with "Forwarded:"): the file is still one e-mail, with its subject and
    thread links, and its headers are not text to index."""
    data = (
        b"Replied: Tue, 17 Sep 2002 17:50:28 +0100\n"
        b"Replied: fork@example.com\n"
        b"From fork-admin@xent.com  Tue Sep 17 17:22:15 2002\n"
        b"Return-Path: <fork-admin@xent.com>\n"
        b"From: Gary <garym@example.com>\n"
        b"Subject: Re: Slaughter\n"
        b"Message-ID: <m2f@maya>\n"
        b"In-Reply-To: <0046@jmhall>\n\n"
        b"Rastafari.\n"
    )
    result = parse_document(data, "0654.eml", ParseConfig())
    assert result.format == "email"
    assert result.title == "Re: Slaughter"
    assert result.metadata["in_reply_to"] == "<0046@jmhall>"
    assert "Return-Path" not in " ".join(b.text for b in result.blocks)
