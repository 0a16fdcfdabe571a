"""The mail (.eml): a ticket, a customer report and its quoted reply, multipart messages.

MIME boundaries are fixed (_finish) so the bytes are reproducible; the quotation message
carries a PDF built here (pdf_quote_attachment) and a small text attachment.
"""

from __future__ import annotations

import io
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path
from textwrap import dedent, fill

from .pdf_layout import A4, MARGIN_X, PDF_DATE, FlowPdf


def pdf_quote_attachment() -> bytes:
    p = FlowPdf(
        "Northwind Robotics - Quotation Q-2024-0917",
        "Northwind Robotics B.V.",
        "Quotation Q-2024-0917",
    )
    p.title_block("Quotation Q-2024-0917", "Customer: Pohjola Parts Oy, Helsinki")
    p.table(
        ["Item", "Qty", "Unit price (EUR)", "Total (EUR)"],
        [
            ["XR-5200 robot", "6", "52,750", "316,500"],
            ["CD-2 charging dock", "2", "6,400", "12,800"],
            ["Volume discount 8%", "", "", "-26,344"],
        ],
        [170, 50, 120, 120],
    )
    p.para("Quotation valid until 31 December 2024. Prices exclude VAT and delivery.")
    buf = io.BytesIO()
    p.doc.set_metadata(
        {
            "title": "Quotation Q-2024-0917",
            "author": "Northwind Robotics",
            "creationDate": PDF_DATE,
            "modDate": PDF_DATE,
        }
    )
    n = len(p.doc)
    for i in range(1, n + 1):
        page = p.doc[i - 1]
        page.insert_text((MARGIN_X, A4.height - 36), f"Page {i} of {n}", fontname="helv", fontsize=8)
    p.doc.save(buf, garbage=3, deflate=True, no_new_id=True)
    return buf.getvalue()


def _body(text: str) -> str:
    """Dedent and re-wrap paragraphs to 72 columns; keep quoted ('>') and indented lines."""
    out: list[str] = []
    for block in dedent(text).strip("\n").split("\n\n"):
        lines = block.splitlines()
        prose = any(len(ln) > 60 for ln in lines)  # short lines (greetings, signatures) stay
        if prose and all(not ln.startswith((">", " ", "-")) for ln in lines):
            out.append(fill(" ".join(" ".join(lines).split()), width=72))
        else:
            out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def _finish(msg: EmailMessage, path: Path, boundaries: list[str]) -> None:
    multiparts = [p for p in msg.walk() if p.is_multipart()]
    for part, b in zip(multiparts, boundaries, strict=True):
        part.set_boundary(b)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msg.as_bytes(policy=SMTP))


def _headers(msg: EmailMessage, **h: str) -> None:
    for key in ("From", "To", "Cc", "Date", "Subject", "Message-ID", "In-Reply-To", "References"):
        val = h.get("from_" if key == "From" else key.lower().replace("-", "_"))
        if val:
            msg[key] = val
    msg["MIME-Version"] = "1.0"


def emails(out: Path) -> None:
    # 1. simple text/plain support ticket reply
    m = EmailMessage()
    _headers(
        m,
        from_="Dana Whitfield <dana.whitfield@northwind.example>",
        to="Oliver Grant <o.grant@brightwell-logistics.example>",
        cc="support@northwind.example",
        date="Tue, 17 Sep 2024 10:42:05 +0200",
        subject="[Ticket #7731] Repeated ERR-0x2A at dock D3",
        message_id="<ticket-7731-r1@support.northwind.example>",
    )
    m.set_content(
        _body("""
        Hello Oliver,

        Thank you for the logs and the photos of dock D3 at your Leeds site. Here is what we
        found and what we recommend.

        What we see in the logs

        Over the past week, three different robots reported ERR-0x2A at D3, always on the first
        approach after a charge elsewhere. Each time the dock answered the handshake late, and
        the robot gave up after three attempts. The photos show a grey film on the lower half of
        the contact plate, which matches this pattern.

        Recommendation

        Please set dock_retry_limit to 5 and clean the contact plate with a dry cloth and
        isopropyl alcohol. The retry change gives the dock more time while the plate is being
        cleaned regularly; we do not recommend going above 5. You can change the key in the fleet
        manager under Site settings, or ask us and we will do it remotely.

        If the errors continue after a week, we will send a field engineer to replace the contact
        plate. The part number is NW-CP-220 and it is covered by your Standard service plan.

        Next steps

        - You: clean the plate and confirm when the retry limit has been changed.
        - Us: review the dock logs again on 24 September and update this ticket.

        Kind regards,
        Dana Whitfield
        Support Engineering, Northwind Robotics
        +31 10 555 0142
    """)
    )
    _finish(m, out / "mail/ticket-7731-dock-d3.eml", [])

    # 2. customer report (simple) that the reply below quotes
    original = _body("""
        Hello Northwind support,

        All of our robots in the Tilburg DC stopped at around 07:00 this morning. The screens show
        ERR-0x1F on every unit. 14 robots are stuck in the aisles and we are picking by hand. We
        restarted two of them, but they stopped again within a minute.

        This is the start of our busiest week. Please call me as soon as possible on
        +31 13 555 0199.

        Hendrik de Vries
        Operations Manager, Kestrel Foods Tilburg
    """)
    m = EmailMessage()
    _headers(
        m,
        from_="Hendrik de Vries <h.devries@kestrelfoods.example>",
        to="support@northwind.example",
        date="Tue, 03 Sep 2024 07:11:48 +0200",
        subject="URGENT: all robots stopped in Tilburg",
        message_id="<a3f9c2e1-0903@mail.kestrelfoods.example>",
    )
    m.set_content(original)
    _finish(m, out / "mail/kestrel-robots-stopped.eml", [])

    # 3. the reply, quoting the original with "> " lines
    quoted = "\n".join(("> " + ln) if ln else ">" for ln in original.rstrip("\n").splitlines())
    m = EmailMessage()
    _headers(
        m,
        from_="Priya Raman <priya.raman@northwind.example>",
        to="Hendrik de Vries <h.devries@kestrelfoods.example>",
        cc="customer-success@northwind.example",
        date="Mon, 09 Sep 2024 16:05:12 +0200",
        subject="Re: URGENT: all robots stopped in Tilburg",
        message_id="<inc2041-followup-1@northwind.example>",
        in_reply_to="<a3f9c2e1-0903@mail.kestrelfoods.example>",
        references="<a3f9c2e1-0903@mail.kestrelfoods.example>",
    )
    m.set_content(
        _body("""
        Dear Hendrik,

        As promised on the phone, here is our follow-up on last Tuesday's outage, which we track
        internally as INC-2041. The full postmortem is attached to your customer portal.

        What happened: a firewall change on your server network blocked time synchronisation for
        the fleet manager two days before the outage. Its clock drifted, and a stricter check in
        NWOS v2.14.2 treated every lidar heartbeat as too old, so all robots stopped safely.

        What we are doing: NWOS v2.14.3 no longer depends on the fleet manager clock for this
        check. We will install it on two of your robots tomorrow and on the rest of the fleet on
        10 September if the canary is clean. We have also added an alert for lost time
        synchronisation.

        To recognise the impact on your operation, we will apply a credit of 12 percent of the
        monthly service fee to your October invoice. Your account manager will confirm this in
        writing.

        I am sorry for the disruption during your busiest week.

        Best regards,
        Priya Raman
        SRE Lead, Northwind Robotics
    """)
        + "\nOn Tue, 3 Sep 2024 at 07:11, Hendrik de Vries wrote:\n"
        + quoted
        + "\n"
    )
    _finish(m, out / "mail/re-kestrel-robots-stopped.eml", [])

    # 4. multipart/alternative release announcement
    text = _body("""
        Hello everyone,

        NWOS v2.15.0 is released today. The highlights for customers are battery-aware
        dispatching, zone speed profiles and faster arm homing on the XR-6010.

        Rollout plan

        The staged rollout starts on 14 October 2024 with the internal test fleets and three
        pilot customers. All other customer sites follow in weekly waves until 15 November,
        unless a customer has asked to stay on v2.14.

        What support needs to know

        - dock_retry_count is deprecated; use dock_retry_limit in new profiles.
        - XR-3300 revision A robots stay on the v2.14 line.
        - The default charge threshold is 22 percent.

        Questions go to the release channel or to me directly.

        Tomasz Kowalczyk
        NWOS release manager
    """)
    html = dedent("""\
        <html><body>
        <p>Hello everyone,</p>
        <p><b>NWOS v2.15.0</b> is released today. The highlights for customers are battery-aware
        dispatching, zone speed profiles and faster arm homing on the XR-6010.</p>
        <h3>Rollout plan</h3>
        <p>The staged rollout starts on 14 October 2024 with the internal test fleets and three
        pilot customers. All other customer sites follow in weekly waves until 15 November,
        unless a customer has asked to stay on v2.14.</p>
        <h3>What support needs to know</h3>
        <ul>
        <li><code>dock_retry_count</code> is deprecated; use <code>dock_retry_limit</code> in new
        profiles.</li>
        <li>XR-3300 revision A robots stay on the v2.14 line.</li>
        <li>The default charge threshold is 22 percent.</li>
        </ul>
        <p>Questions go to the release channel or to me directly.</p>
        <p>Tomasz Kowalczyk<br>NWOS release manager</p>
        </body></html>
        """)
    m = EmailMessage()
    _headers(
        m,
        from_="Tomasz Kowalczyk <tomasz.kowalczyk@northwind.example>",
        to="all-engineering@northwind.example, support@northwind.example",
        date="Mon, 07 Oct 2024 11:30:00 +0200",
        subject="NWOS v2.15.0 released - rollout plan",
        message_id="<nwos-2.15.0-announce@northwind.example>",
    )
    m.set_content(text)
    m.add_alternative(html, subtype="html")
    _finish(m, out / "mail/nwos-v2.15.0-announcement.eml", ["=_nw_alt_2150_0001"])

    # 5. multipart/mixed with a PDF and a small text attachment
    m = EmailMessage()
    _headers(
        m,
        from_="Jonas Virtanen <jonas.virtanen@northwind.example>",
        to="Aino Laaksonen <aino.laaksonen@pohjolaparts.example>",
        date="Thu, 26 Sep 2024 09:15:33 +0300",
        subject="Quotation Q-2024-0917: extension of your XR-5200 fleet",
        message_id="<q-2024-0917@sales.northwind.example>",
    )
    m.set_content(
        _body("""
        Dear Aino,

        Thank you for the good pilot review last week. As discussed, please find attached our
        quotation Q-2024-0917 for extending your fleet in Vantaa with six more XR-5200 robots and
        two CD-2 charging docks.

        Because this order brings your fleet to twelve robots, we have applied a volume discount
        of 8 percent on the robots. The quotation is valid until 31 December 2024, so the prices
        are not affected by our 2025 price list.

        Delivery would take about six weeks from the order. Our field team can commission the new
        robots in two days, without stopping the existing fleet.

        I have also attached the short summary of the pilot figures that your management asked
        for.

        Best regards,
        Jonas Virtanen
        Sales Engineering Nordics, Northwind Robotics
    """)
    )
    m.add_attachment(pdf_quote_attachment(), maintype="application", subtype="pdf", filename="Q-2024-0917.pdf")
    m.add_attachment(
        dedent("""\
        Pilot summary, Pohjola Parts, Vantaa
        Duration: 2 July - 15 July 2024
        Fleet: 6 x XR-5200
        Peak throughput: 142 picks per hour
        Availability: 98.9 percent
        """),
        subtype="plain",
        filename="pilot-summary.txt",
    )
    _finish(m, out / "mail/quotation-q-2024-0917.eml", ["=_nw_mixed_0917_0001"])
